//! Everything on one instance: the bounds and the six algorithms, each schedule validated —
//! the JSON document `esim moldable` prints, so that another implementation can be compared
//! with this one task by task.

use serde::{Deserialize, Serialize};

use crate::moldable::baselines::{gang, list_mrt, list_saf, list_wlptf, seq_lptf};
use crate::moldable::bounds::{bounds, LpError};
use esched_bicriteria::bicrit::{bicrit, BiCritParams, Kept};
use esched_bicriteria::instance::{Instance, InstanceError, Task};
use esched_bicriteria::makespan::Makespan;
use esched_bicriteria::schedule::{InvalidSchedule, Schedule, Slot};

/// The input document: `{"m": M, "tasks": [{"w": W, "p": [p(1), …, p(M)]}, …]}`, seconds.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Input {
    /// Processors.
    pub m: usize,
    /// Tasks.
    pub tasks: Vec<Task>,
}

impl Input {
    /// The checked instance.
    pub fn instance(self) -> Result<Instance, InstanceError> {
        Instance::new(self.m, self.tasks)
    }
}

/// BiCrit's output: the schedule returned (the fields of every algorithm) and both schedules
/// it chose from.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BiCritOut {
    /// The schedule returned.
    #[serde(flatten)]
    pub kept_schedule: AlgoOut,
    /// Which one was returned: `"batch"` or `"compacted"` (the compacted one only when it is
    /// no worse than the batch schedule on both criteria).
    pub kept: Kept,
    /// The batch schedule of §3.2 (every batch's items at its start).
    pub batch: AlgoOut,
    /// The best list compaction by ΣωC over the batch orders tried.
    pub compacted: AlgoOut,
}

/// The bounds of the output.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct BoundsOut {
    /// Makespan lower bound (λ* of the dual approximation).
    pub cmax_lb: f64,
    /// ΣωC lower bound: the corrected LP relaxation.
    pub minsum_lb: f64,
    /// The LP relaxation as printed in §3.3 — not always a lower bound (see docs/moldable.md).
    pub minsum_lb_paper: f64,
}

/// One algorithm's schedule and criteria.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AlgoOut {
    /// Makespan.
    pub cmax: f64,
    /// Weighted sum of completion times.
    pub sum_wc: f64,
    /// One slot per task, in input order.
    pub tasks: Vec<Slot>,
}

impl AlgoOut {
    fn new(inst: &Instance, s: Schedule) -> Self {
        AlgoOut {
            cmax: s.cmax(inst),
            sum_wc: s.sum_wc(inst),
            tasks: s.tasks,
        }
    }
}

/// The six algorithms, in the paper's order.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Algorithms {
    /// Dutot & Eyraud's algorithm.
    #[serde(rename = "BiCrit")]
    pub bicrit: BiCritOut,
    /// Gang scheduling.
    #[serde(rename = "Gang")]
    pub gang: AlgoOut,
    /// Sequential LPTF.
    #[serde(rename = "Seq-LPTF")]
    pub seq_lptf: AlgoOut,
    /// List scheduling in the makespan algorithm's order.
    #[serde(rename = "List-MRT")]
    pub list_mrt: AlgoOut,
    /// List scheduling by weighted LPTF.
    #[serde(rename = "List-wLPTF")]
    pub list_wlptf: AlgoOut,
    /// List scheduling by smallest area first.
    #[serde(rename = "List-SAF")]
    pub list_saf: AlgoOut,
}

impl Algorithms {
    /// `(name, result)` in the paper's order.
    pub fn iter(&self) -> [(&'static str, &AlgoOut); 6] {
        [
            (ALGORITHMS[0], &self.bicrit.kept_schedule),
            (ALGORITHMS[1], &self.gang),
            (ALGORITHMS[2], &self.seq_lptf),
            (ALGORITHMS[3], &self.list_mrt),
            (ALGORITHMS[4], &self.list_wlptf),
            (ALGORITHMS[5], &self.list_saf),
        ]
    }
}

/// The algorithms' names, as in the output.
pub const ALGORITHMS: [&str; 6] = [
    "BiCrit",
    "Gang",
    "Seq-LPTF",
    "List-MRT",
    "List-wLPTF",
    "List-SAF",
];

/// The output document.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Output {
    /// The makespan algorithm of C*max, the Cmax bound and the list baselines' allotment.
    pub makespan: Makespan,
    /// Lower bounds.
    pub bounds: BoundsOut,
    /// Each algorithm's schedule.
    pub algorithms: Algorithms,
}

/// What can go wrong solving an instance.
#[derive(Debug, thiserror::Error)]
pub enum SolveError {
    /// The LP bound failed.
    #[error(transparent)]
    Lp(#[from] LpError),
    /// An algorithm produced an invalid schedule (a bug: reported rather than printed).
    #[error("{algorithm} produced an invalid schedule: {source}")]
    Invalid {
        /// Which.
        algorithm: &'static str,
        /// Why.
        source: InvalidSchedule,
    },
}

/// The six schedules of `inst`, each validated.
pub fn schedules(
    inst: &Instance,
    params: BiCritParams,
) -> Result<[(&'static str, Schedule); 6], SolveError> {
    let dual = params.makespan.run(inst);
    let all = [
        (ALGORITHMS[0], bicrit(inst, params).schedule),
        (ALGORITHMS[1], gang(inst)),
        (ALGORITHMS[2], seq_lptf(inst)),
        (ALGORITHMS[3], list_mrt(inst, &dual)),
        (ALGORITHMS[4], list_wlptf(inst, &dual)),
        (ALGORITHMS[5], list_saf(inst, &dual)),
    ];
    for (name, s) in &all {
        s.validate(inst).map_err(|source| SolveError::Invalid {
            algorithm: name,
            source,
        })?;
    }
    Ok(all)
}

/// Bounds and all six algorithms on `inst`.
pub fn solve(inst: &Instance, params: BiCritParams) -> Result<Output, SolveError> {
    let b = bounds(inst, params.makespan)?;
    let [_, ga, sq, mr, wl, sa] = schedules(inst, params)?.map(|(_, s)| AlgoOut::new(inst, s));
    let run = bicrit(inst, params);
    for s in [&run.batch, &run.compacted] {
        s.validate(inst).map_err(|source| SolveError::Invalid {
            algorithm: ALGORITHMS[0],
            source,
        })?;
    }
    let bi = BiCritOut {
        kept_schedule: AlgoOut::new(inst, run.schedule),
        kept: run.kept,
        batch: AlgoOut::new(inst, run.batch),
        compacted: AlgoOut::new(inst, run.compacted),
    };
    Ok(Output {
        makespan: params.makespan,
        bounds: BoundsOut {
            cmax_lb: b.cmax_lb,
            minsum_lb: b.minsum_lb,
            minsum_lb_paper: b.minsum_lb_paper,
        },
        algorithms: Algorithms {
            bicrit: bi,
            gang: ga,
            seq_lptf: sq,
            list_mrt: mr,
            list_wlptf: wl,
            list_saf: sa,
        },
    })
}

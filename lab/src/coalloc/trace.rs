//! The input of `esim coalloc`: a co-allocation trace (docs/coalloc.md's format, seconds as
//! reals).

use serde::{Deserialize, Serialize};

use sched_core::time::Time;

/// A job's name in the output: the input's `"id"` when given, else its index in `jobs`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(untagged)]
pub enum TraceId {
    /// A numeric id, or the job's index when the input gives none.
    Num(u64),
    /// A textual id.
    Text(String),
}

/// GP or LP, as the trace spells it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum PriorityName {
    /// Global priority: local jobs killed at a global job's deadline (the paper's default).
    #[default]
    #[serde(rename = "GP", alias = "gp")]
    Gp,
    /// Local priority: the global job fails instead.
    #[serde(rename = "LP", alias = "lp")]
    Lp,
}

impl PriorityName {
    /// The spelling of the rpp policy's `priority` parameter.
    pub fn as_str(self) -> &'static str {
        match self {
            PriorityName::Gp => "GP",
            PriorityName::Lp => "LP",
        }
    }
}

/// GP's choice of local jobs to kill at a deadline, as the trace spells it (the rpp policy's
/// `victims` parameter).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum VictimsName {
    /// The fewest kills, then the least work lost.
    #[default]
    Fewest,
    /// Pools by Worst Fit on idle plus killable processors, youngest jobs first.
    Youngest,
}

impl VictimsName {
    /// The spelling of the rpp policy's `victims` parameter.
    pub fn as_str(self) -> &'static str {
        match self {
            VictimsName::Fewest => "fewest",
            VictimsName::Youngest => "youngest",
        }
    }
}

/// The trace's `params`; missing ones take the paper's defaults (§3.1, §3.3).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CoallocParams {
    /// C, the number of clusters (pools), numbered from 0.
    pub clusters: u32,
    /// N, processors per cluster.
    pub procs: u32,
    /// L_p in (0, 1].
    pub lp: f64,
    /// I of Wait-X in seconds; `null` (or absent) is ∞: pure RPP.
    pub wait: Option<f64>,
    /// GP or LP.
    pub priority: PriorityName,
    /// M_p; `null` (or absent): tries until the deadline at millisecond resolution.
    pub max_tries: Option<u32>,
    /// GP's victims: `fewest` (default) or `youngest`.
    pub victims: VictimsName,
}

impl Default for CoallocParams {
    fn default() -> Self {
        CoallocParams {
            clusters: 4,
            procs: 32,
            lp: 0.7,
            wait: None,
            priority: PriorityName::Gp,
            max_tries: None,
            victims: VictimsName::Fewest,
        }
    }
}

impl CoallocParams {
    /// The rpp policy's parameters for these settings.
    pub fn policy_params(&self) -> sched_core::Params {
        let mut p = sched_core::Params::new();
        p.set("lp", self.lp.to_string());
        p.set(
            "wait",
            self.wait
                .map_or_else(|| "inf".to_string(), |w| w.to_string()),
        );
        p.set("priority", self.priority.as_str());
        p.set("victims", self.victims.as_str());
        if let Some(m) = self.max_tries {
            p.set("max_tries", m.to_string());
        }
        p
    }
}

/// One job of the trace.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase", deny_unknown_fields)]
pub enum TraceJob {
    /// A single-component job of one cluster's FCFS queue.
    Local {
        /// Optional id.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        id: Option<TraceId>,
        /// Its cluster, from 0.
        cluster: u32,
        /// Submission, in seconds.
        submit: f64,
        /// Processors.
        size: u32,
        /// Run time, in seconds.
        runtime: f64,
    },
    /// A co-allocated job: `components` components of `size` processors, to start together at
    /// `deadline`.
    Global {
        /// Optional id.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        id: Option<TraceId>,
        /// Submission, in seconds.
        submit: f64,
        /// Number of components.
        components: u32,
        /// Processors of each component.
        size: u32,
        /// Run time, in seconds.
        runtime: f64,
        /// Absolute start deadline, in seconds.
        deadline: f64,
    },
}

impl TraceJob {
    /// Its submission time, in seconds.
    pub fn submit(&self) -> f64 {
        match self {
            TraceJob::Local { submit, .. } | TraceJob::Global { submit, .. } => *submit,
        }
    }

    /// Its optional id.
    pub fn id(&self) -> Option<&TraceId> {
        match self {
            TraceJob::Local { id, .. } | TraceJob::Global { id, .. } => id.as_ref(),
        }
    }
}

/// A whole trace.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CoallocTrace {
    /// Settings; every one has a default.
    #[serde(default)]
    pub params: CoallocParams,
    /// The jobs, in any order; the output keeps this order.
    pub jobs: Vec<TraceJob>,
}

/// A trace that cannot be replayed.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum TraceError {
    /// A parameter out of range.
    #[error("params.{key}: {why}")]
    Param {
        /// Which.
        key: &'static str,
        /// What is wrong.
        why: String,
    },
    /// A job that makes no sense.
    #[error("job {index}: {why}")]
    Job {
        /// Its index in `jobs`.
        index: usize,
        /// What is wrong.
        why: String,
    },
}

/// `s` seconds in milliseconds, rounded to the nearest: a time of the trace must be a finite
/// number ≥ 0.
pub fn secs_to_ms(s: f64) -> Option<Time> {
    (s.is_finite() && s >= 0.0 && s * 1000.0 < u64::MAX as f64)
        .then(|| (s * 1000.0).round() as Time)
}

impl CoallocTrace {
    /// Checks everything the replay relies on; the first problem found.
    pub fn check(&self) -> Result<(), TraceError> {
        let p = &self.params;
        let param = |key, why: &str| TraceError::Param {
            key,
            why: why.to_string(),
        };
        if p.clusters == 0 {
            return Err(param("clusters", "at least one cluster"));
        }
        if p.procs == 0 {
            return Err(param("procs", "at least one processor per cluster"));
        }
        if !(p.lp > 0.0 && p.lp <= 1.0) {
            return Err(param("lp", "L_p must be in (0, 1]"));
        }
        if let Some(w) = p.wait {
            if secs_to_ms(w).is_none() {
                return Err(param("wait", "seconds ≥ 0, or null for ∞"));
            }
        }
        let mut ids = std::collections::HashSet::new();
        for (index, j) in self.jobs.iter().enumerate() {
            let bad = |why: String| TraceError::Job { index, why };
            if let Some(id) = j.id() {
                if !ids.insert(id.clone()) {
                    return Err(bad(format!("id {id:?} appears twice")));
                }
            }
            let time = |name: &str, v: f64| {
                secs_to_ms(v)
                    .map(|_| ())
                    .ok_or_else(|| bad(format!("{name} must be a finite number of seconds ≥ 0")))
            };
            time("submit", j.submit())?;
            match j {
                TraceJob::Local {
                    cluster,
                    size,
                    runtime,
                    ..
                } => {
                    time("runtime", *runtime)?;
                    if *cluster >= p.clusters {
                        return Err(bad(format!(
                            "cluster {cluster} does not exist (clusters are 0..{})",
                            p.clusters - 1
                        )));
                    }
                    if *size == 0 || *size > p.procs {
                        return Err(bad(format!("size {size} not in 1..={}", p.procs)));
                    }
                }
                TraceJob::Global {
                    components,
                    size,
                    runtime,
                    deadline,
                    ..
                } => {
                    time("runtime", *runtime)?;
                    time("deadline", *deadline)?;
                    if *components == 0 {
                        return Err(bad("a global job needs at least one component".into()));
                    }
                    if *size == 0 || *size > p.procs {
                        return Err(bad(format!("component size {size} not in 1..={}", p.procs)));
                    }
                }
            }
        }
        Ok(())
    }
}

//! Workloads W0–W3 of §IV-A built from packs of consecutive jobs of an SWF trace.
//!
//! Choices the paper leaves open (also in docs/coorm.md):
//! - a pack is 200 consecutive kept jobs of the trace; they arrive one per second in trace
//!   order (§IV-A: "the job arrival rate is set to 1 application per second"); the trace's own
//!   submit times are not used;
//! - the trace's run times and requested times are for pool 1 (speed 1): on pool i both are
//!   divided by its speed ("subject to the speed-up of our resource model");
//! - **a job wider than a pool** (more processors than n_H) keeps its area: n_H hosts for
//!   `run × procs / n_H` (and the same factor on its requested time);
//! - 20 % simple-moldable: every fifth job of a pack (index ≡ 4 mod 5), deterministic;
//!   Amdahl's law with serial fraction [`SERIAL`], calibrated so that its trace host count
//!   gives its trace run time; it may run on 1 … n_H − 1 hosts of any one pool, which is the
//!   n_C × (n_H − 1) configurations of §IV-A; its requested time keeps the trace's
//!   requested/run ratio;
//! - W1 = W0 plus one CEM instance inserted after the first half of the pack, of work
//!   [`W1_CEM_WORK`]; W2 = W0 with every second job (odd index) replaced by a CEM instance;
//!   W3 = every job a CEM instance; a CEM instance that replaces a job has that job's area
//!   (`procs × run`, host-seconds at speed 1) as its work, and knows its run time exactly.

use sched_core::{Duration, Time};

use sched_sim::swf::SwfJob;

/// Serial fraction of the simple-moldable jobs' Amdahl model (not given by the paper).
pub const SERIAL: f64 = 0.05;
/// Work of W1's CEM instance: one hour of a whole 128-host pool of speed 1.
pub const W1_CEM_WORK: f64 = 128.0 * 3600.0;
/// Jobs per pack (§IV-A).
pub const PACK: usize = 200;

/// An application of a workload. Serialisable because `esim coorm-validation` hands each
/// application to a launcher process as JSON.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// Fixed host count on any one pool; times at speed 1, in seconds.
    Rigid {
        /// Hosts.
        hosts: u32,
        /// Actual run time.
        run: f64,
        /// Requested time (≥ run).
        req: f64,
    },
    /// Simple-moldable, Amdahl: `T(k) = work · (SERIAL + (1 − SERIAL) / k)` at speed 1.
    Moldable {
        /// Run time on one host at speed 1, in seconds.
        work: f64,
        /// Requested time / run time (≥ 1).
        ratio: f64,
    },
    /// The CEM application of [`super::cem`].
    Cem {
        /// Host-seconds at speed 1.
        work: f64,
    },
}

/// One application: its kind and arrival.
#[derive(Clone, Debug, PartialEq)]
pub struct App {
    /// Identifier (1-based position in the workload).
    pub id: u64,
    /// Arrival (subscribe) time, ms.
    pub submit: Time,
    /// What it is.
    pub kind: Kind,
}

impl App {
    /// Amdahl's run time on `k` hosts at speed 1, in seconds.
    pub fn amdahl(work: f64, k: u32) -> f64 {
        work * (SERIAL + (1.0 - SERIAL) / f64::from(k.max(1)))
    }

    /// Actual run time over requested time, for a configuration of this application.
    pub fn run_factor(&self) -> f64 {
        match &self.kind {
            Kind::Rigid { run, req, .. } => {
                if *req > 0.0 {
                    (run / req).min(1.0)
                } else {
                    1.0
                }
            }
            Kind::Moldable { ratio, .. } => 1.0 / ratio.max(1.0),
            Kind::Cem { .. } => 1.0,
        }
    }
}

/// The four workloads of §IV-A.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum WorkloadKind {
    /// Rigid and simple-moldable only.
    W0,
    /// W0 plus one CEM instance.
    W1,
    /// Half CEM.
    W2,
    /// All CEM.
    W3,
}

impl WorkloadKind {
    /// All four.
    pub const ALL: [WorkloadKind; 4] = [
        WorkloadKind::W0,
        WorkloadKind::W1,
        WorkloadKind::W2,
        WorkloadKind::W3,
    ];

    /// `W0`…`W3`.
    pub fn name(self) -> &'static str {
        match self {
            WorkloadKind::W0 => "W0",
            WorkloadKind::W1 => "W1",
            WorkloadKind::W2 => "W2",
            WorkloadKind::W3 => "W3",
        }
    }
}

/// Seconds of a trace duration in ms.
fn secs(d: Duration) -> f64 {
    d as f64 / 1000.0
}

/// The applications of workload `kind` built from `pack` (consecutive trace jobs) for pools of
/// `n_h` hosts.
pub fn build(pack: &[SwfJob], kind: WorkloadKind, n_h: u32) -> Vec<App> {
    let mut kinds = kinds_of(pack, n_h, |j| match kind {
        WorkloadKind::W0 | WorkloadKind::W1 => false,
        WorkloadKind::W2 => j % 2 == 1,
        WorkloadKind::W3 => true,
    });
    if kind == WorkloadKind::W1 {
        kinds.insert(kinds.len() / 2, Kind::Cem { work: W1_CEM_WORK });
    }
    numbered(kinds)
}

/// §IV-D's workloads: W0 built from `pack` with `percent` % of its jobs replaced by CEM
/// instances (of the replaced job's area, as in W2 and W3), spread evenly: job `j` is replaced
/// when `⌊(j + 1) · percent / 100⌋ > ⌊j · percent / 100⌋`, so 50 % is exactly W2's choice
/// (every odd job) and 100 % is W3.
pub fn build_cem_share(pack: &[SwfJob], percent: u32, n_h: u32) -> Vec<App> {
    let p = u64::from(percent.min(100));
    numbered(kinds_of(pack, n_h, |j| {
        let j = j as u64;
        (j + 1) * p / 100 > j * p / 100
    }))
}

fn numbered(kinds: Vec<Kind>) -> Vec<App> {
    kinds
        .into_iter()
        .enumerate()
        .map(|(i, kind)| App {
            id: i as u64 + 1,
            submit: i as Time * 1000,
            kind,
        })
        .collect()
}

/// Each job of `pack` as an application, a CEM instance where `cem(j)` says so.
fn kinds_of(pack: &[SwfJob], n_h: u32, cem: impl Fn(usize) -> bool) -> Vec<Kind> {
    let mut kinds: Vec<Kind> = Vec::with_capacity(pack.len() + 1);
    for (j, job) in pack.iter().enumerate() {
        let procs = job.nodes.max(1);
        let run = secs(job.runtime).max(1.0);
        let req = secs(job.walltime).max(run);
        // Wider than a pool: same area on a whole pool.
        let (hosts, stretch) = if procs > n_h {
            (n_h, f64::from(procs) / f64::from(n_h))
        } else {
            (procs, 1.0)
        };
        let (run, req) = (run * stretch, req * stretch);
        kinds.push(if cem(j) {
            Kind::Cem {
                work: f64::from(hosts) * run,
            }
        } else if j % 5 == 4 {
            // T(hosts) = run.
            let work = run / (SERIAL + (1.0 - SERIAL) / f64::from(hosts));
            Kind::Moldable {
                work,
                ratio: req / run,
            }
        } else {
            Kind::Rigid { hosts, run, req }
        });
    }
    kinds
}

/// The position in a W1 workload of its CEM instance.
pub fn w1_cem_index(pack_len: usize) -> usize {
    pack_len / 2
}

#[cfg(test)]
mod tests {
    use super::*;
    use sched_core::JobId;

    fn job(i: u64, nodes: u32, run: u64, req: u64) -> SwfJob {
        SwfJob {
            id: JobId(i),
            submit: i * 7000,
            nodes,
            runtime: run * 1000,
            walltime: req * 1000,
            user: 0,
            line: i as usize,
        }
    }

    #[test]
    fn w0_is_one_moldable_in_five_and_wide_jobs_keep_their_area() {
        let pack: Vec<SwfJob> = (0..10).map(|i| job(i, 4, 100, 200)).collect();
        let w = build(&pack, WorkloadKind::W0, 128);
        assert_eq!(w.len(), 10);
        let moldable = w
            .iter()
            .filter(|a| matches!(a.kind, Kind::Moldable { .. }))
            .count();
        assert_eq!(moldable, 2);
        assert_eq!(w[3].submit, 3000);
        let Kind::Moldable { work, ratio } = w[4].kind else {
            panic!()
        };
        assert!((App::amdahl(work, 4) - 100.0).abs() < 1e-9);
        assert!((ratio - 2.0).abs() < 1e-12);
        let wide = build(&[job(0, 256, 100, 100)], WorkloadKind::W0, 128);
        assert_eq!(
            wide[0].kind,
            Kind::Rigid {
                hosts: 128,
                run: 200.0,
                req: 200.0
            }
        );
    }

    #[test]
    fn cem_shares_follow_the_workload() {
        let pack: Vec<SwfJob> = (0..10).map(|i| job(i, 4, 100, 200)).collect();
        let count = |k| {
            build(&pack, k, 128)
                .iter()
                .filter(|a| matches!(a.kind, Kind::Cem { .. }))
                .count()
        };
        assert_eq!(count(WorkloadKind::W0), 0);
        assert_eq!(count(WorkloadKind::W1), 1);
        assert_eq!(count(WorkloadKind::W2), 5);
        assert_eq!(count(WorkloadKind::W3), 10);
        let share = |p| {
            build_cem_share(&pack, p, 128)
                .iter()
                .filter(|a| matches!(a.kind, Kind::Cem { .. }))
                .count()
        };
        assert_eq!(share(0), 0);
        assert_eq!(share(25), 2);
        assert_eq!(share(100), 10);
        assert_eq!(
            build_cem_share(&pack, 50, 128),
            build(&pack, WorkloadKind::W2, 128)
        );
        let w1 = build(&pack, WorkloadKind::W1, 128);
        assert_eq!(w1.len(), 11);
        assert!(matches!(w1[w1_cem_index(10)].kind, Kind::Cem { .. }));
    }
}

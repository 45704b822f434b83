//! What bounds the steps of an evolving profile and the node counts of a moldable job
//! (batch-proto's `MAX_STEPS` and `MAX_MOLDABLE_CHOICES`): the time of one `plan()` by a
//! fresh linked policy, against the steps per job and against the width of the node range, for
//! a queue of such jobs on the default 8-node pool and on a 1,000-node pool.
//!
//! `cargo bench -p esim --bench bounds` prints the tables docs/batchd.md ("Limits of a job")
//! quotes; `-- steps` or `-- moldable` runs one of the two. Each figure is the median of 3
//! plans; a case slower than 10 s is measured once and the larger ones of its row skipped.

use std::time::{Duration, Instant};

use esched_bicriteria::bicrit::BiCritParams;
use esched_bicriteria::BiCriteria;
use sched_core::{
    rvec, JobId, Moldable, Params, Pending, Policy, Pool, PoolId, PoolSteps, Request, Running,
    Shape, Snapshot, SpeedupModel, Step,
};

/// A small deterministic generator (xorshift64*): the same workload on every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next() % (hi - lo + 1)
    }
}

/// Two running jobs, holding half the pool for an hour and a quarter of it for half an hour:
/// the queue is planned around them.
fn running(nodes: u32) -> Vec<Running> {
    let hold = |id: u64, n: u32, d: u64| Running {
        id: JobId(id),
        user: 0,
        request: Request::rigid(n, d),
        shape: Shape::Rigid {
            pool: PoolId(0),
            nodes: n,
            walltime: d,
        },
        start: 0,
        holds: rvec![PoolSteps {
            pool: PoolId(0),
            start: 0,
            steps: rvec![Step::new(d, n)],
        }],
        killable: false,
    };
    vec![
        hold(1, (nodes / 2).max(1), 3_600_000),
        hold(2, (nodes / 4).max(1), 1_800_000),
    ]
}

fn pending(id: usize, request: Request) -> Pending {
    Pending {
        wants_view: false,
        claimed: Default::default(),
        id: JobId(10 + id as u64),
        user: 0,
        submit: 0,
        earliest_start: 0,
        priority: 0,
        request,
    }
}

/// `jobs` evolving jobs of `steps` steps each, node counts uniform on 1..=`nodes`, durations
/// on 1–10 min.
fn evolving_queue(nodes: u32, jobs: usize, steps: usize) -> Vec<Pending> {
    let mut rng = Rng(7);
    (0..jobs)
        .map(|i| {
            let steps = (0..steps)
                .map(|_| {
                    let d = rng.range(60_000, 600_000);
                    Step::new(d, rng.range(1, u64::from(nodes)) as u32)
                })
                .collect();
            pending(i, Request::evolving(steps))
        })
        .collect()
}

/// The fit's worst case found: a first job alternating 2 and 1 nodes for 3 × `steps` steps of
/// 1 s (its 1-node steps are holes a step of `nodes − 1` nodes fits in), then `jobs − 1` jobs
/// of `steps` 1-node steps but the first and the last, of `nodes − 1` nodes, `steps − 1`
/// steps apart: an odd distance when `steps` is even, so the two never fit holes together.
/// The base fit slides each such job over the holes one at a time, refitting its steps at
/// every try: a cost of about steps² per job (the naive string search's worst case).
fn adversarial_queue(nodes: u32, jobs: usize, steps: usize) -> Vec<Pending> {
    let holes = (0..3 * steps)
        .map(|k| Step::new(1000, if k % 2 == 0 { 2 } else { 1 }))
        .collect();
    let sliding: Vec<Step> = (0..steps)
        .map(|k| {
            Step::new(
                1000,
                if k == 0 || k + 1 == steps {
                    nodes - 1
                } else {
                    1
                },
            )
        })
        .collect();
    std::iter::once(Request::evolving(holes))
        .chain((1..jobs).map(|_| Request::evolving(sliding.clone())))
        .enumerate()
        .map(|(i, r)| pending(i, r))
        .collect()
}

/// `jobs` moldable jobs, Amdahl's model over `--nodes-range 1-width` (work 10–60 min on one
/// node, serial fraction 1–10 %), as `esubmit --moldable-model amdahl:… --nodes-range` sends.
fn moldable_queue(jobs: usize, width: u32) -> Vec<Pending> {
    let mut rng = Rng(11);
    (0..jobs)
        .map(|i| {
            let model = SpeedupModel::Amdahl {
                work: rng.range(600_000, 3_600_000),
                serial: rng.range(1, 10) as f64 / 100.0,
            };
            let request = Request::Moldable(Moldable {
                pool: sched_core::RNone,
                configs: Default::default(),
                model: sched_core::RSome(model),
                min_nodes: 1,
                max_nodes: width,
                weight: 1.0,
            });
            pending(i, request)
        })
        .collect()
}

fn policy(name: &str, params: &[(&str, &str)]) -> Box<dyn Policy + Send> {
    if name == "bicriteria" {
        return Box::new(BiCriteria::new(BiCritParams::default()));
    }
    esim::policies::builtin(name, &Params::from_pairs(params.iter().copied()))
        .unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn plan_time(
    name: &str,
    params: &[(&str, &str)],
    nodes: u32,
    running: &[Running],
    pending: &[Pending],
) -> Duration {
    let pools = [Pool {
        id: PoolId(0),
        name: "batch".into(),
        nodes,
    }];
    let snap = Snapshot {
        now: 0,
        pools: &pools,
        running,
        pending,
    };
    let mut times = Vec::new();
    for _ in 0..3 {
        let mut p = policy(name, params);
        let began = Instant::now();
        let plan = p.plan(&snap);
        times.push(began.elapsed());
        sched_core::validate(&snap, &plan).unwrap_or_else(|e| panic!("{name}: {e}"));
        if times[0] > Duration::from_secs(10) {
            break;
        }
    }
    times.sort();
    times[times.len() / 2]
}

fn row(label: String, cases: &[u64], mut time: impl FnMut(u64) -> Duration) {
    let mut line = format!("{label:<40}");
    for &c in cases {
        let t = time(c);
        line += &format!(" {c}:{:.3}", t.as_secs_f64());
        if t > Duration::from_secs(10) {
            line += " (larger skipped)";
            break;
        }
    }
    println!("{line}");
}

fn steps() {
    println!("evolving: plan() seconds by steps per job (median of 3)");
    let variants: [(&str, &[(&str, &str)]); 3] = [
        ("noX", &[]),
        ("2X+c", &[("expand_limit", "2"), ("compact", "true")]),
        ("infX+c", &[("expand_limit", "inf"), ("compact", "true")]),
    ];
    for (nodes, jobs) in [(8, 1), (8, 100), (1000, 1), (1000, 100)] {
        for (variant, params) in variants {
            let run = running(nodes);
            row(
                format!("{nodes} nodes, {jobs} random jobs, {variant}"),
                &[10, 25, 50, 100, 200, 400, 700],
                |s| {
                    let q = evolving_queue(nodes, jobs, s as usize);
                    plan_time("evolving", params, nodes, &run, &q)
                },
            );
        }
    }
    for (nodes, jobs) in [(8, 2), (8, 100), (1000, 100)] {
        for (variant, params) in variants {
            row(
                format!("{nodes} nodes, {jobs} sliding jobs, {variant}"),
                &[10, 26, 50, 100, 200, 400, 700],
                |s| {
                    let q = adversarial_queue(nodes, jobs, s as usize);
                    plan_time("evolving", params, nodes, &[], &q)
                },
            );
        }
    }
}

fn moldable() {
    println!("moldable: plan() seconds by width of --nodes-range 1-W (median of 3)");
    for (nodes, jobs) in [(8, 8), (8, 100), (1000, 8), (1000, 100)] {
        for name in ["cbf", "easy", "fcfs", "bicriteria", "evolving", "coorm"] {
            let run = running(nodes);
            row(
                format!("{nodes} nodes, {jobs} jobs, {name}"),
                &[8, 64, 256, 1000, 4096, 65_536],
                |w| {
                    let q = moldable_queue(jobs, w as u32);
                    plan_time(name, &[], nodes, &run, &q)
                },
            );
        }
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let only = |what: &str| {
        !args.iter().any(|a| a == "steps" || a == "moldable") || args.iter().any(|a| a == what)
    };
    if only("steps") {
        steps();
    }
    if only("moldable") {
        moldable();
    }
}

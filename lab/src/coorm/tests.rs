use std::io::Cursor;
use std::path::Path;

use super::driver::{run, Mode, RunParams};
use super::platform::Platform;
use super::workload::{build, App, Kind, WorkloadKind};
use sched_sim::swf::{read, ReadOptions};

/// 40 jobs, one line each: id submit wait run procs cpu mem reqprocs reqtime …
fn tiny_trace() -> Vec<sched_sim::swf::SwfJob> {
    let mut text = String::from("; MaxProcs: 64\n");
    for i in 1..=40u64 {
        let procs = 1 + (i * 7) % 23;
        let run = 30 + (i * 97) % 900;
        let req = run + (i * 31) % 600;
        text.push_str(&format!(
            "{i} {} 0 {run} {procs} -1 -1 {procs} {req} -1 1 1 1 -1 -1 -1 -1 -1\n",
            i * 10
        ));
    }
    let opts = ReadOptions {
        nodes: Some(u32::MAX),
        limit: None,
    };
    read(Cursor::new(text), Path::new("inline.swf"), &opts)
        .expect("inline trace")
        .jobs
}

#[test]
fn w0_coorm_and_the_oar_baseline_start_every_job_at_the_same_time() {
    let apps = build(&tiny_trace(), WorkloadKind::W0, 16);
    for n_c in [1, 2, 3] {
        let p = Platform::paper(n_c, 16);
        let c = run(&p, &apps, &RunParams::paper(Mode::Coorm)).expect("coorm");
        let o = run(&p, &apps, &RunParams::paper(Mode::Oar)).expect("oar");
        assert_eq!(c.results.len(), apps.len());
        for (a, b) in c.results.iter().zip(&o.results) {
            assert_eq!(
                (a.id, a.start, &a.parts),
                (b.id, b.start, &b.parts),
                "n_c = {n_c}"
            );
        }
        // The jobs had to wait for each other (else the test shows nothing).
        assert!(c.results.iter().any(|r| r.start > r.submit + 5000));
        assert!(
            c.computed_configs < o.computed_configs,
            "{} < {}",
            c.computed_configs,
            o.computed_configs
        );
        assert!(c.bytes.json > 0 && c.bytes.cdr > 0 && o.bytes.cdr > 0);
        // Counted once each, the baseline's configurations are what the applications
        // submitted; CooRM's selections are counted once either way.
        let submitted: u64 = apps
            .iter()
            .map(|a| super::driver::configs(&p, a).map_or(0, |c| c.len() as u64))
            .sum();
        assert_eq!(o.submitted_configs, submitted, "n_c = {n_c}");
        assert!(o.submitted_configs < o.computed_configs);
        assert_eq!(c.submitted_configs, c.computed_configs);
    }
}

#[test]
fn no_pool_is_ever_over_committed_and_every_job_runs() {
    for kind in WorkloadKind::ALL {
        let apps = build(&tiny_trace(), kind, 16);
        let p = Platform::paper(2, 16);
        let r = run(&p, &apps, &RunParams::paper(Mode::Coorm)).expect("run");
        for x in &r.results {
            assert!(x.start >= x.submit && x.end > x.start, "{x:?}");
        }
        // Sweep the starts and ends: per pool, never more hosts than it has.
        let mut ev: Vec<(u64, i64, u32)> = Vec::new();
        for x in &r.results {
            for &(pool, n) in &x.parts {
                ev.push((x.start, i64::from(n), pool));
                ev.push((x.end, -i64::from(n), pool));
            }
        }
        ev.sort_by_key(|e| (e.0, e.1));
        let mut used = [0i64; 2];
        for (_, d, pool) in ev {
            used[pool as usize] += d;
            assert!(used[pool as usize] <= 16);
        }
    }
}

#[test]
fn oar_refuses_cem_workloads() {
    let apps = build(&tiny_trace(), WorkloadKind::W1, 16);
    assert!(run(&Platform::paper(2, 16), &apps, &RunParams::paper(Mode::Oar)).is_err());
}

/// Fig. 5 of the paper: a CEM launcher (priority) whose view improves when a job ends early
/// keeps its advantage while its adaptation delay is below the fair-start delay, and is
/// overtaken by a quicker rigid launcher above it.
#[test]
fn fair_start_protects_a_slow_launcher_below_its_delay_only() {
    let p = Platform::paper(2, 4);
    let rigid = |id: u64, submit: u64, run: f64, req: f64| App {
        id,
        submit,
        kind: Kind::Rigid { hosts: 4, run, req },
    };
    let apps = vec![
        rigid(1, 0, 1000.0, 1000.0),
        rigid(2, 0, 100.0, 1000.0),
        App {
            id: 3,
            submit: 1000,
            kind: Kind::Cem { work: 400.0 },
        },
        rigid(4, 2000, 50.0, 50.0),
    ];
    let end_with = |delay_s: u64| {
        let params = RunParams {
            cem_delay: delay_s * 1000,
            ..RunParams::paper(Mode::Coorm)
        };
        let r = run(&p, &apps, &params).expect("run");
        (r.results[2].end, r.results[3].start)
    };
    let (instant, _) = end_with(0);
    let (below, other_below) = end_with(2);
    let (above, other_above) = end_with(10);
    assert_eq!(below, instant, "delay 2 s < fair-start 5 s: no loss");
    assert!(
        above > instant + 30_000,
        "delay 10 s > fair-start: {above} vs {instant}"
    );
    // Above, the rigid launcher took the freed pool first.
    assert!(other_above < other_below);
}

//! The SVG of what-if plans, one above the other on one time axis (`esim whatif --svg`), drawn
//! by the plotting module as Gantt charts ([`plot::stacked_gantts`]).
//!
//! Each plan: time from the snapshot across, the pools' nodes up (pool after pool). Policies
//! choose node counts, not nodes, so each job is drawn on the lowest-numbered nodes of each of
//! its pools free at its start ([`nodes::place`]), at the most it holds there; an evolving job
//! whose most would overlap another job is drawn on the nodes that were free. The jobs running
//! at the snapshot are grey, the pending ones pale with a dashed outline, each in the colour of
//! its id, the same in every plan.

use esched_report::nodes::{self, IntervalSet, Span};
use esched_report::plot::{self, Gantt, GanttJob, JobKind, PlotError, TimeAxis};
use sched_sim::whatif::{JobPlan, Replay, SnapshotFile};

/// The SVG of `plans` (a label and a replay each) from `snap`, replayed with the run-time
/// model `runtime` (for the caption).
pub fn plans(
    snap: &SnapshotFile,
    plans: &[(String, &Replay)],
    runtime: &str,
) -> Result<String, PlotError> {
    let horizon = plans
        .iter()
        .flat_map(|(_, r)| r.running.iter().chain(&r.pending))
        .filter_map(|j| j.end)
        .max()
        .unwrap_or(snap.now)
        .max(snap.now + 1000);
    let secs = |t: u64| t.saturating_sub(snap.now) as f64 / 1000.0;
    let mut groups = Vec::new();
    let mut first = 0u32;
    for p in &snap.pools {
        groups.push((p.pool.name.to_string(), first, p.pool.nodes));
        first += p.pool.nodes;
    }
    let charts: Vec<Gantt> = plans
        .iter()
        .map(|(label, replay)| {
            let sm = &replay.summary;
            // Waits and slowdowns of no started job are no figures (as in the table).
            let title = if sm.started == 0 {
                format!(
                    "{label}: no pending job starts, utilisation {:.1} %",
                    sm.utilisation * 100.0
                )
            } else {
                format!(
                    "{label}: mean wait {:.0} s, p95 {:.0} s, bounded slowdown {:.2}, \
                     utilisation {:.1} %",
                    sm.wait.mean,
                    sm.wait.p95,
                    sm.bounded_slowdown.mean,
                    sm.utilisation * 100.0
                )
            };
            Gantt {
                title,
                key: Some(label.clone()),
                nodes: first,
                groups: groups.clone(),
                jobs: gantt_jobs(snap, replay, &groups, &secs),
                window: Some((0.0, secs(horizon))),
                time: TimeAxis::Since("the snapshot"),
                gantt_height: Some(280),
                ..Gantt::default()
            }
        })
        .collect();
    let labels: Vec<&str> = plans.iter().map(|(l, _)| l.as_str()).collect();
    let caption = format!(
        "What-if replay of a snapshot of {} nodes ({}) with no new arrivals, run times by \
         model {runtime}, under {}. Grey: jobs running at the snapshot; pale with a dashed \
         outline: pending jobs where each plan starts them, a job in the same colour in every \
         plan. Nodes are drawn lowest free first, at the most a job holds of each pool.",
        first,
        groups
            .iter()
            .map(|(n, _, c)| format!("{n} {c}"))
            .collect::<Vec<_>>()
            .join(", "),
        labels.join(" and "),
    );
    plot::stacked_gantts("", &caption, &charts)
}

/// The jobs of one plan that start within it, on nodes.
fn gantt_jobs(
    snap: &SnapshotFile,
    replay: &Replay,
    groups: &[(String, u32, u32)],
    secs: &dyn Fn(u64) -> f64,
) -> Vec<GanttJob> {
    let jobs: Vec<(&JobPlan, bool)> = replay
        .running
        .iter()
        .map(|j| (j, true))
        .chain(replay.pending.iter().map(|j| (j, false)))
        .filter(|(j, _)| j.start.is_some() && j.end.is_some())
        .collect();
    let span = |j: &JobPlan, n: u32| Span {
        start: j.start.unwrap_or(snap.now).max(snap.now),
        end: j.end.unwrap_or(snap.now).max(snap.now),
        nodes: n,
    };
    let mut sets: Vec<Vec<std::ops::Range<u32>>> = vec![Vec::new(); jobs.len()];
    for (pool, (_, base, total)) in groups.iter().enumerate() {
        let members: Vec<(usize, Span)> = jobs
            .iter()
            .enumerate()
            .filter_map(|(k, (j, _))| {
                j.parts
                    .iter()
                    .find(|(p, _)| *p as usize == pool)
                    .map(|&(_, n)| (k, span(j, n)))
            })
            .collect();
        let mut spans: Vec<Span> = members.iter().map(|m| m.1).collect();
        for ((k, _), set) in members.iter().zip(place_within(&mut spans, *total)) {
            sets[*k].extend(set.ranges().iter().map(|r| r.start + base..r.end + base));
        }
    }
    jobs.iter()
        .zip(sets)
        .map(|((j, was_running), ranges)| GanttJob {
            id: j.id.to_string(),
            label: format!("{} ({})", j.name, j.user),
            start: secs(j.start.unwrap_or(snap.now)),
            end: secs(j.end.unwrap_or(snap.now)),
            nodes: IntervalSet::new(ranges),
            kind: if *was_running {
                JobKind::Earlier
            } else {
                JobKind::Expected
            },
        })
        .collect()
}

/// [`nodes::place`], with a job that would over-commit the pool (an evolving job drawn at its
/// most nodes) given only the nodes free at its start.
fn place_within(spans: &mut [Span], total: u32) -> Vec<IntervalSet> {
    // Each round lowers one job's count, so this ends after at most `spans.len()` rounds.
    for _ in 0..=spans.len() {
        match nodes::place(spans, total) {
            Ok(sets) => return sets,
            Err(o) => spans[o.job].nodes = o.free,
        }
    }
    vec![IntervalSet::default(); spans.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_job_that_would_overlap_another_gets_the_nodes_that_are_free() {
        let mut spans = [
            Span {
                start: 0,
                end: 10,
                nodes: 3,
            },
            Span {
                start: 0,
                end: 10,
                nodes: 2,
            },
        ];
        let sets = place_within(&mut spans, 4);
        assert_eq!(sets[0].len() + sets[1].len(), 4);
        assert_eq!(sets[0].to_string(), "0-2");
        assert_eq!(sets[1].to_string(), "3");
    }
}

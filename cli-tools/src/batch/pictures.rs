//! Standard outputs and pictures of batchd's jobs: `eacct --swf` (the jobs that really ran, as
//! an SWF trace), `eacct --svg` and `einfo --svg` (Gantt charts of jobs on the pools' nodes),
//! drawn by esched-report's plotting module.

use std::collections::HashMap;
use std::io::Write;
use std::path::Path;

use batch_proto::{ClusterInfo, JobInfo, JobState};
use esched_report::nodes::{self, IntervalSet, Span};
use esched_report::plot::{self, Gantt, GanttJob, JobKind, TimeAxis};
use esched_report::swf;

use super::time::Zone;

/// Whether `j` ran and is over: it has a start and an end.
fn ran(j: &JobInfo) -> Option<(u64, u64)> {
    match (j.start_time, j.end_time) {
        (Some(s), Some(e)) if e >= s && !matches!(j.state, JobState::Pending) => Some((s, e)),
        _ => None,
    }
}

/// The SWF status of a finished job (the SWF definition's codes).
fn status(state: JobState) -> swf::Status {
    match state {
        JobState::Completed => swf::Status::Completed,
        JobState::Cancelled | JobState::Preempted | JobState::Deadline => swf::Status::Cancelled,
        _ => swf::Status::Failed,
    }
}

/// Writes the jobs of `jobs` that really ran as an SWF trace: times in seconds from the first
/// submission among them (`UnixStartTime` in the header), the nodes a job held as its
/// processors, its time limit as the requested time, the machine the pools' nodes.
pub fn write_swf<W: Write>(
    w: W,
    jobs: &[JobInfo],
    info: Option<&ClusterInfo>,
    socket: &str,
) -> std::io::Result<usize> {
    let mut done: Vec<&JobInfo> = jobs.iter().filter(|j| ran(j).is_some()).collect();
    done.sort_by_key(|j| (j.submit_time, j.id));
    let origin = done.first().map_or(0, |j| j.submit_time / 1000 * 1000);
    let records: Vec<swf::Record> = done
        .iter()
        .map(|j| {
            let (start, end) = ran(j).unwrap_or_default();
            let submit = swf::secs(j.submit_time - origin);
            let start_s = swf::secs(start.saturating_sub(origin)).max(submit);
            swf::Record {
                id: j.id,
                submit,
                wait: start_s - submit,
                run: swf::secs(end - start),
                allocated: j.nodes,
                requested: j.nodes,
                requested_time: (j.time_limit > 0).then(|| swf::secs(j.time_limit)),
                status: status(j.state),
                user: Some(j.uid),
            }
        })
        .collect();
    let total = info.map(|i| i.pools.iter().map(|p| p.total).sum::<u32>());
    let header = swf::Header {
        computer: format!("batchd (esched {}), eacct --swf", env!("CARGO_PKG_VERSION")),
        notes: vec![
            format!(
                "the jobs that ran on the batchd of {socket}{}; times in seconds from the first \
                 submission (UnixStartTime)",
                info.map_or(String::new(), |i| format!(", policy {}", i.policy))
            ),
            "field 4 is the wall-clock run time; status 1 completed, 0 failed or timed out, \
             5 cancelled or preempted"
                .to_string(),
        ],
        unix_start: Some((origin / 1000) as i64),
        max_nodes: total,
        jobs: records.len(),
    };
    swf::write(w, &header, &records)?;
    Ok(records.len())
}

/// The node axis of a picture: each pool's nodes in turn, by name.
struct NodeAxis {
    index: HashMap<String, u32>,
    groups: Vec<(String, u32, u32)>,
    total: u32,
}

impl NodeAxis {
    fn new(info: &ClusterInfo) -> Self {
        let mut index = HashMap::new();
        let mut groups = Vec::new();
        let mut next = 0u32;
        for p in &info.pools {
            let first = next;
            for n in &p.nodes {
                index.insert(n.name.clone(), next);
                next += 1;
            }
            // A pool that lists no node names still takes its size on the axis.
            next = next.max(first + p.total);
            groups.push((p.name.clone(), first, next - first));
        }
        NodeAxis {
            index,
            groups,
            total: next,
        }
    }

    /// The indices of a job's nodes, when its node list names known nodes.
    fn of(&self, j: &JobInfo) -> Option<IntervalSet> {
        let list = j.node_list.as_deref()?;
        let names = super::cli::node_names(list).ok()?;
        let idx: Option<Vec<u32>> = names.iter().map(|n| self.index.get(n).copied()).collect();
        Some(IntervalSet::new(
            idx?.into_iter().map(|k| k..k + 1).collect(),
        ))
    }

    /// The pool of a job, for placing a job of unknown nodes: its own, else (a pending job
    /// the plan has not given one yet) the first pool large enough.
    fn group_of(&self, j: &JobInfo) -> Option<usize> {
        match j.pool.as_deref() {
            Some(pool) => self.groups.iter().position(|g| g.0 == pool),
            None => self.groups.iter().position(|g| g.2 >= j.nodes),
        }
    }
}

/// The Gantt chart of `jobs` on the pools of `info`: jobs that ran or run on their own nodes,
/// jobs the plan expects (pending with an expected start) placed on the lowest-numbered nodes
/// of their pool free then; utilisation and queue length beneath. Times in epoch ms; the window
/// in epoch ms.
pub fn gantt(
    info: &ClusterInfo,
    jobs: &[JobInfo],
    now: u64,
    window: (u64, u64),
    zone: &Zone,
    title: String,
    what: &str,
) -> Gantt {
    let axis = NodeAxis::new(info);
    // Per pool: the jobs with their spans and (known) nodes, pool-relative.
    let mut per_pool: Vec<Vec<(usize, Span, Option<IntervalSet>)>> =
        vec![Vec::new(); axis.groups.len()];
    let mut drawn: Vec<(usize, JobKind, u64, u64)> = Vec::new();
    for (k, j) in jobs.iter().enumerate() {
        let (start, end, kind) = match (j.start_time, j.end_time, j.expected_start) {
            (Some(s), Some(e), _) => (s, e, JobKind::Ran),
            (Some(s), None, _) => (s, (s + j.time_limit).max(now), JobKind::Ran),
            (None, None, Some(x)) if j.state == JobState::Pending => {
                (x, x + j.time_limit.max(1000), JobKind::Expected)
            }
            _ => continue,
        };
        let Some(g) = axis.group_of(j) else { continue };
        let first = axis.groups[g].1;
        let known = axis.of(j).map(|set| {
            IntervalSet::new(
                set.ranges()
                    .iter()
                    .map(|r| r.start.saturating_sub(first)..r.end.saturating_sub(first))
                    .collect(),
            )
        });
        let span = Span {
            start,
            end,
            nodes: j.nodes,
        };
        per_pool[g].push((k, span, if kind == JobKind::Ran { known } else { None }));
        drawn.push((k, kind, start, end));
    }
    let mut nodes_of: HashMap<usize, IntervalSet> = HashMap::new();
    for (g, list) in per_pool.iter().enumerate() {
        let input: Vec<(Span, Option<IntervalSet>)> =
            list.iter().map(|(_, s, n)| (*s, n.clone())).collect();
        let placed = nodes::place_around(&input, axis.groups[g].2).unwrap_or_else(|e| {
            warn(&format!("pool {}: {e}", axis.groups[g].0));
            input
                .iter()
                .map(|(_, n)| n.clone().unwrap_or_default())
                .collect()
        });
        let first = axis.groups[g].1;
        for ((k, _, _), set) in list.iter().zip(placed) {
            let shifted = IntervalSet::new(
                set.ranges()
                    .iter()
                    .map(|r| r.start + first..r.end + first)
                    .collect(),
            );
            nodes_of.insert(*k, shifted);
        }
    }
    let secs = |ms: u64| ms as f64 / 1000.0;
    let gantt_jobs: Vec<GanttJob> = drawn
        .iter()
        .map(|&(k, kind, s, e)| {
            let j = &jobs[k];
            GanttJob {
                id: j.id.to_string(),
                label: format!(
                    "{} ({}, {}{})",
                    j.name,
                    j.user,
                    j.state.code(),
                    j.node_list
                        .as_deref()
                        .map_or(String::new(), |l| format!(", {l}"))
                ),
                start: secs(s),
                end: secs(e),
                nodes: nodes_of.remove(&k).unwrap_or_default(),
                kind,
            }
        })
        .collect();
    let timeline: Vec<(f64, f64, f64, u32)> = drawn
        .iter()
        .filter(|d| d.1 == JobKind::Ran)
        .map(|&(k, _, s, e)| {
            (
                secs(jobs[k].submit_time.min(s)),
                secs(s),
                secs(e),
                jobs[k].nodes,
            )
        })
        .collect();
    let panels = plot::load_panels(&timeline, axis.total);
    let offset = i64::from(
        zone.to_offset(jiff::Timestamp::from_millisecond(now as i64).unwrap_or_default())
            .seconds(),
    );
    let mut node_names = vec![String::new(); axis.total as usize];
    for (name, &k) in &axis.index {
        if let Some(slot) = node_names.get_mut(k as usize) {
            slot.clone_from(name);
        }
    }
    let mut g = Gantt {
        title,
        caption: String::new(),
        node_names,
        nodes: axis.total,
        groups: axis.groups.clone(),
        jobs: gantt_jobs,
        window: Some((secs(window.0), secs(window.1))),
        time: TimeAxis::Clock { utc_offset: offset },
        now: Some(secs(now)),
        panels,
        ..Gantt::default()
    };
    let fmt = plot::time_formatter(g.time, secs(window.1 - window.0));
    g.caption = format!(
        "{what} Policy {}, pools {}; {}..{}, {} jobs drawn, the red dashed line is now. Jobs \
         that ran or run are drawn on their nodes (a running one until its time limit); jobs \
         the plan expects are pale with a dashed outline, on the nodes of their pool free then. \
         Beneath: share of nodes busy, jobs waiting (utilisation and queue count only jobs \
         that started).",
        info.policy,
        info.pools
            .iter()
            .map(|p| format!("{} ({} nodes)", p.name, p.total))
            .collect::<Vec<_>>()
            .join(", "),
        fmt(secs(window.0)),
        fmt(secs(window.1)),
        g.visible().count(),
    );
    g
}

/// Writes chart `g` to `svg` as SVG and to `png` as PNG, when given.
pub fn write_picture(g: &Gantt, svg: Option<&Path>, png: Option<&Path>) -> anyhow::Result<()> {
    if svg.is_none() && png.is_none() {
        return Ok(());
    }
    let text = g.svg()?;
    if let Some(path) = svg {
        std::fs::write(path, &text).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
    }
    if let Some(path) = png {
        let bytes = esched_report::png::from_svg(&text, 1.0)?;
        std::fs::write(path, bytes).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
    }
    Ok(())
}

/// The terminal's width in columns: `COLUMNS` when set (as `ls` reads it), else the
/// terminal's, else 100.
pub fn terminal_width() -> usize {
    std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.trim().parse::<usize>().ok())
        .filter(|c| *c > 0)
        .or_else(|| terminal_size::terminal_size().map(|(w, _)| usize::from(w.0)))
        .unwrap_or(100)
}

/// A warning on stderr (the tools log nothing else).
fn warn(msg: &str) {
    eprintln!("warning: {msg}; jobs of unknown nodes are left out of the picture");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn swf_statuses_follow_the_definition() {
        assert_eq!(status(JobState::Completed).code(), 1);
        assert_eq!(status(JobState::Timeout).code(), 0);
        assert_eq!(status(JobState::Failed).code(), 0);
        assert_eq!(status(JobState::Cancelled).code(), 5);
    }
}

//! The SVG of what-if plans, one above the other on one time axis (`esim whatif --svg`).
//!
//! Self-contained on purpose (plain text, no drawing crate), so that it can move onto a shared
//! plotting module as it is. Each plan is a Gantt chart: time from the snapshot to the last end
//! of any plan across, the pools' nodes down (pool after pool); each job is drawn as boxes on
//! the nodes it is given here (the lowest free ones at its start: policies choose node counts,
//! not nodes), at the most nodes it holds of each pool. The jobs running at the snapshot are
//! grey, the pending ones coloured by id, the same colour in every plan.

use std::fmt::Write;

use sched_sim::whatif::{JobPlan, Replay, SnapshotFile};

const WIDTH: f64 = 960.0;
const LEFT: f64 = 70.0;
const RIGHT: f64 = 20.0;
const PANEL: f64 = 220.0;
const TITLE: f64 = 28.0;
const AXIS: f64 = 30.0;

/// The SVG of `plans` (a label and a replay each) from `snap`.
pub fn plans(snap: &SnapshotFile, plans: &[(String, &Replay)]) -> String {
    let horizon = plans
        .iter()
        .flat_map(|(_, r)| r.running.iter().chain(&r.pending))
        .filter_map(|j| j.end)
        .max()
        .unwrap_or(snap.now)
        .max(snap.now + 1);
    let span = (horizon - snap.now) as f64;
    let offsets: Vec<u32> = snap
        .pools
        .iter()
        .scan(0u32, |at, p| {
            let o = *at;
            *at += p.pool.nodes;
            Some(o)
        })
        .collect();
    let nodes = snap.nodes().max(1) as f64;
    let height = plans.len() as f64 * (PANEL + TITLE + AXIS) + 10.0;
    let plot_w = WIDTH - LEFT - RIGHT;
    let x = |t: u64| LEFT + (t.saturating_sub(snap.now)) as f64 / span * plot_w;
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" viewBox="0 0 {WIDTH} {height}" font-family="sans-serif" font-size="11">"#
    );
    let _ = writeln!(s, r#"<rect width="100%" height="100%" fill="white"/>"#);
    for (k, (label, replay)) in plans.iter().enumerate() {
        let top = k as f64 * (PANEL + TITLE + AXIS) + TITLE;
        let y = |node: u32| top + f64::from(node) / nodes * PANEL;
        let sm = &replay.summary;
        let _ = writeln!(
            s,
            r#"<text class="title" x="{LEFT}" y="{:.1}" font-size="13" font-weight="bold">{}</text>"#,
            top - 8.0,
            escape(&format!(
                "{label}: mean wait {:.0} s, p95 {:.0} s, bounded slowdown {:.2}, utilisation {:.1} %",
                sm.wait.mean,
                sm.wait.p95,
                sm.bounded_slowdown.mean,
                sm.utilisation * 100.0
            ))
        );
        let _ = writeln!(
            s,
            r##"<g class="plan" data-policy="{}"><rect x="{LEFT}" y="{top:.1}" width="{plot_w:.1}" height="{PANEL:.1}" fill="#f6f6f6" stroke="#999"/>"##,
            escape(label)
        );
        // Nodes are given per pool, lowest free first, jobs in order of start.
        let mut jobs: Vec<(&JobPlan, bool)> = replay
            .running
            .iter()
            .map(|j| (j, true))
            .chain(replay.pending.iter().map(|j| (j, false)))
            .filter(|(j, _)| j.start.is_some() && j.end.is_some())
            .collect();
        jobs.sort_by_key(|(j, _)| (j.start, j.id));
        let mut busy: Vec<Vec<u64>> = snap
            .pools
            .iter()
            .map(|p| vec![0; p.pool.nodes as usize])
            .collect();
        for (j, was_running) in jobs {
            let (Some(start), Some(end)) = (j.start, j.end) else {
                continue;
            };
            let from = start.max(snap.now);
            for &(pool, n) in &j.parts {
                let Some(slots) = busy.get_mut(pool as usize) else {
                    continue;
                };
                // The free nodes first, then those freed soonest (a plan that holds more
                // nodes later than at its start, an evolving one, may overlap here).
                let mut order: Vec<usize> = (0..slots.len()).collect();
                order.sort_by_key(|&i| {
                    let busy = slots[i] > from;
                    (busy, if busy { slots[i] } else { 0 }, i)
                });
                let mut mine: Vec<u32> = order
                    .into_iter()
                    .take(n as usize)
                    .map(|i| i as u32)
                    .collect();
                mine.sort_unstable();
                for &i in &mine {
                    slots[i as usize] = end;
                }
                let base = offsets.get(pool as usize).copied().unwrap_or(0);
                let fill = if was_running {
                    "#b0b0b0".to_string()
                } else {
                    colour(j.id)
                };
                for (lo, hi) in runs(&mine) {
                    let (y0, y1) = (y(base + lo), y(base + hi + 1));
                    let _ = writeln!(
                        s,
                        r##"<rect class="job" data-job="{}" x="{:.2}" y="{y0:.2}" width="{:.2}" height="{:.2}" fill="{fill}" stroke="#333" stroke-width="0.4"><title>{}</title></rect>"##,
                        j.id,
                        x(from),
                        (x(end) - x(from)).max(0.5),
                        (y1 - y0).max(0.5),
                        escape(&format!("job {} {} ({} nodes)", j.id, j.name, n))
                    );
                }
            }
        }
        // Pool boundaries and names.
        for (p, &o) in snap.pools.iter().zip(&offsets) {
            let _ = writeln!(
                s,
                r##"<line x1="{LEFT}" x2="{:.1}" y1="{:.1}" y2="{:.1}" stroke="#555"/><text x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"##,
                LEFT + plot_w,
                y(o),
                y(o),
                LEFT - 4.0,
                y(o) + 12.0,
                escape(&p.pool.name)
            );
        }
        // The time axis, in hours:minutes from the snapshot.
        let bottom = top + PANEL;
        for i in 0..=6 {
            let t = snap.now + (span * f64::from(i) / 6.0) as u64;
            let _ = writeln!(
                s,
                r##"<line x1="{0:.1}" x2="{0:.1}" y1="{bottom:.1}" y2="{1:.1}" stroke="#555"/><text x="{0:.1}" y="{2:.1}" text-anchor="middle">+{3}</text>"##,
                x(t),
                bottom + 4.0,
                bottom + 16.0,
                hm(t - snap.now)
            );
        }
        let _ = writeln!(s, "</g>");
    }
    let _ = writeln!(s, "</svg>");
    s
}

/// Consecutive runs of sorted node indices, as `(first, last)`.
fn runs(nodes: &[u32]) -> Vec<(u32, u32)> {
    let mut out: Vec<(u32, u32)> = Vec::new();
    for &n in nodes {
        match out.last_mut() {
            Some((_, hi)) if *hi + 1 == n => *hi = n,
            _ => out.push((n, n)),
        }
    }
    out
}

/// A colour per job id, the same in every plan.
fn colour(id: u64) -> String {
    let h = (id.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 40) % 360;
    format!("hsl({h},55%,62%)")
}

/// `H:MM` of a duration in ms.
fn hm(ms: u64) -> String {
    let m = ms / 60_000;
    format!("{}:{:02}", m / 60, m % 60)
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_split_where_nodes_are_not_consecutive() {
        assert_eq!(runs(&[0, 1, 2, 5, 7, 8]), vec![(0, 2), (5, 5), (7, 8)]);
        assert_eq!(runs(&[]), vec![]);
    }

    #[test]
    fn text_is_escaped() {
        assert_eq!(escape("a<b & \"c\">"), "a&lt;b &amp; &quot;c&quot;&gt;");
    }
}

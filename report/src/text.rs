//! A Gantt chart as text, for a terminal (`einfo --plot`): one row per node (or per a few
//! nodes on a large pool), one column per slice of time, each job a letter of its own.
//!
//! The same [`Gantt`] the SVG is drawn from, so the two pictures cannot disagree: jobs that ran
//! or run are capital letters (and digits), jobs a plan expects small letters, idle nodes `.`;
//! a legend under the chart names each letter's job. A letter names one job only: the jobs
//! past the alphabets (in order of start) are drawn `#` and counted in the legend. No line is
//! wider than asked.

use std::fmt::Write as _;

use crate::plot::{time_formatter, Gantt, GanttJob, JobKind};

/// The most rows a pool's nodes take; a larger pool shows several nodes a row, each cell the
/// job that holds most of the row's nodes at that time.
const MAX_ROWS: u32 = 32;

const RAN: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
const EXPECTED: &[u8] = b"abcdefghijklmnopqrstuvwxyz";

/// The symbol of the jobs past the alphabets.
const OTHERS: char = '#';

/// The chart as text, `width` columns wide (at least 40).
pub fn gantt(g: &Gantt, width: usize) -> String {
    let width = width.max(40);
    let (t0, t1) = g.window();
    let fmt = time_formatter(g.time, t1 - t0);
    let groups: Vec<(String, u32, u32)> = if g.groups.is_empty() {
        vec![(String::new(), 0, g.nodes)]
    } else {
        g.groups.clone()
    };
    // Jobs in order of start, each its symbol.
    let mut jobs: Vec<&GanttJob> = g.visible().collect();
    jobs.sort_by(|a, b| a.start.total_cmp(&b.start).then_with(|| a.id.cmp(&b.id)));
    let (mut ran, mut expected) = (0usize, 0usize);
    let symbols: Vec<char> = jobs
        .iter()
        .map(|j| {
            let (set, k) = match j.kind {
                JobKind::Expected => (EXPECTED, &mut expected),
                JobKind::Ran | JobKind::Earlier => (RAN, &mut ran),
            };
            *k += 1;
            set.get(*k - 1).map_or(OTHERS, |&b| char::from(b))
        })
        .collect();
    // Row labels: a node's name (or index), or the first and last of a row of several.
    let name = |k: u32| {
        g.node_names
            .get(k as usize)
            .filter(|n| !n.is_empty())
            .cloned()
            .unwrap_or_else(|| k.to_string())
    };
    // Per group, its rows: the nodes `lo..hi` and their label.
    let rows: Vec<Vec<(u32, u32, String)>> = groups
        .iter()
        .map(|(_, first, count)| {
            let per_row = count.div_ceil(MAX_ROWS).max(1);
            let end = first + count;
            (*first..end)
                .step_by(per_row as usize)
                .map(|lo| {
                    let hi = (lo + per_row).min(end);
                    let label = if hi - lo == 1 {
                        name(lo)
                    } else {
                        span_label(&name(lo), &name(hi - 1))
                    };
                    (lo, hi, label)
                })
                .collect()
        })
        .collect();
    // As wide as the longest label, 9 to 20 characters, and at least 30 columns of time.
    let label_w = rows
        .iter()
        .flatten()
        .map(|r| r.2.chars().count())
        .max()
        .unwrap_or(0)
        .clamp(9, 20)
        .min(width - 31);
    let cols = width - label_w - 1;
    let at = |c: usize| t0 + (c as f64 + 0.5) * (t1 - t0) / cols as f64;
    let mut out = String::new();
    if !g.title.is_empty() {
        let _ = writeln!(out, "{}", cut(&g.title, width));
    }
    for ((name, _, count), rows) in groups.iter().zip(&rows) {
        if !name.is_empty() {
            let head = cut(&format!("── {name} ({count} nodes) "), width);
            let fill = width.saturating_sub(head.chars().count());
            let _ = writeln!(out, "{head}{}", "─".repeat(fill));
        }
        for &(lo, hi, ref label) in rows {
            let _ = write!(out, "{:>w$} ", cut(label, label_w), w = label_w);
            for c in 0..cols {
                let t = at(c);
                let best = jobs
                    .iter()
                    .zip(&symbols)
                    .filter(|(j, _)| j.start <= t && t < j.end)
                    .map(|(j, s)| {
                        let held: u32 = j
                            .nodes
                            .ranges()
                            .iter()
                            .map(|r| r.end.min(hi).saturating_sub(r.start.max(lo)))
                            .sum();
                        (held, *s)
                    })
                    .filter(|(held, _)| *held > 0)
                    .max_by_key(|(held, _)| *held);
                out.push(best.map_or('.', |(_, s)| s));
            }
            out.push('\n');
        }
    }
    // The time axis: ticks with their labels, and now.
    let mut axis: Vec<char> = vec!['─'; cols];
    let mut labels: Vec<char> = vec![' '; cols];
    let ticks = (cols / 22).max(2);
    // Where the last label written ends: a label that would touch it is left out.
    let mut free_from = 0usize;
    for k in 0..=ticks {
        let c = (k * (cols - 1)) / ticks;
        axis[c] = '┴';
        // The instant the cell under the tick shows.
        let text: Vec<char> = fmt(at(c)).chars().collect();
        let start = if k == ticks {
            (c + 1).saturating_sub(text.len())
        } else {
            c
        };
        if start < free_from || start + text.len() > cols {
            continue;
        }
        labels[start..start + text.len()].copy_from_slice(&text);
        free_from = start + text.len() + 1;
    }
    if let Some(now) = g.now.filter(|n| *n >= t0 && *n <= t1) {
        let c = (((now - t0) / (t1 - t0)) * cols as f64) as usize;
        axis[c.min(cols - 1)] = '▲';
    }
    let _ = writeln!(
        out,
        "{:>w$} {}",
        "",
        axis.iter().collect::<String>(),
        w = label_w
    );
    let _ = writeln!(
        out,
        "{:>w$} {}",
        "",
        labels.iter().collect::<String>().trim_end(),
        w = label_w
    );
    if g.now.is_some_and(|n| n >= t0 && n <= t1) {
        let _ = writeln!(out, "▲ now");
    }
    if jobs.is_empty() {
        let _ = writeln!(out, "no job in the window");
    }
    for (j, s) in jobs.iter().zip(&symbols).filter(|(_, s)| **s != OTHERS) {
        let line = format!(
            "{s} job {}{}{}: {} – {}{}",
            j.id,
            if j.label.is_empty() { "" } else { " " },
            j.label,
            fmt(j.start),
            fmt(j.end),
            if j.kind == JobKind::Expected {
                " (expected)"
            } else {
                ""
            }
        );
        let _ = writeln!(out, "{}", cut(&line, width));
    }
    let others = symbols.iter().filter(|s| **s == OTHERS).count();
    if others > 0 {
        let line = format!("{OTHERS} {others} more job(s), past the letters");
        let _ = writeln!(out, "{}", cut(&line, width));
    }
    out
}

/// The label of a row from node `a` to node `b`: in Slurm's host-list form when the names are
/// a common prefix and numbers (`debug[001-032]`), else `a-b` (indices: `0-3`).
fn span_label(a: &str, b: &str) -> String {
    let mut p = a
        .char_indices()
        .zip(b.chars())
        .find(|((_, x), y)| x != y)
        .map_or(a.len().min(b.len()), |((i, _), _)| i);
    // The prefix stops before the number starts (`debug0` of debug001 and debug032 is `debug`).
    while p > 0 && a.as_bytes()[p - 1].is_ascii_digit() {
        p -= 1;
    }
    let (x, y) = (&a[p..], &b[p..]);
    let digits = |t: &str| !t.is_empty() && t.bytes().all(|c| c.is_ascii_digit());
    if p > 0 && digits(x) && digits(y) {
        format!("{}[{x}-{y}]", &a[..p])
    } else {
        format!("{a}-{b}")
    }
}

/// `text` cut to `width` characters, the last one `…` when something was cut.
fn cut(text: &str, width: usize) -> String {
    if text.chars().count() <= width {
        return text.to_string();
    }
    let mut s: String = text.chars().take(width.saturating_sub(1)).collect();
    s.push('…');
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nodes::IntervalSet;

    fn job(id: &str, start: f64, end: f64, nodes: std::ops::Range<u32>, kind: JobKind) -> GanttJob {
        GanttJob {
            id: id.into(),
            label: String::new(),
            start,
            end,
            nodes: IntervalSet::from(nodes),
            kind,
        }
    }

    #[test]
    fn each_node_row_shows_its_jobs_in_time() {
        let g = Gantt {
            nodes: 4,
            groups: vec![("debug".into(), 0, 4)],
            jobs: vec![
                job("7", 0.0, 50.0, 0..2, JobKind::Ran),
                job("8", 50.0, 100.0, 1..4, JobKind::Expected),
            ],
            window: Some((0.0, 100.0)),
            now: Some(50.0),
            ..Gantt::default()
        };
        let text = gantt(&g, 50);
        let rows: Vec<&str> = text.lines().collect();
        assert!(rows[0].starts_with("── debug (4 nodes) "), "{text}");
        // 40 columns of time: node 0 runs job 7 the first half, then idles; node 3 idles,
        // then job 8 is expected there.
        let cells = |r: &str| r[10..].to_string();
        assert_eq!(
            cells(rows[1]),
            format!("{}{}", "A".repeat(20), ".".repeat(20))
        );
        assert_eq!(
            cells(rows[2]),
            format!("{}{}", "A".repeat(20), "a".repeat(20))
        );
        assert_eq!(
            cells(rows[4]),
            format!("{}{}", ".".repeat(20), "a".repeat(20))
        );
        assert!(rows[5].contains('▲'), "{text}");
        assert!(text.contains("A job 7: "), "{text}");
        assert!(
            text.contains("a job 8: ") && text.contains("(expected)"),
            "{text}"
        );
    }

    #[test]
    fn jobs_past_the_letters_are_hashes_and_no_line_is_too_wide() {
        let jobs: Vec<GanttJob> = (0..40)
            .map(|k| {
                let mut j = job(&k.to_string(), f64::from(k), 100.0, k..k + 1, JobKind::Ran);
                j.label = "a rather long job name that would not fit in the width".into();
                j
            })
            .collect();
        let g = Gantt {
            title: format!("einfo: the plan of the batchd of /{}", "very/".repeat(30)),
            nodes: 40,
            groups: vec![("a pool with a long name".repeat(4), 0, 40)],
            jobs,
            window: Some((0.0, 100.0)),
            ..Gantt::default()
        };
        let text = gantt(&g, 60);
        assert!(text.lines().all(|l| l.chars().count() <= 60), "{text}");
        // 36 letters and digits, then four jobs drawn `#`, counted once.
        assert!(text.contains("9 job 35 "), "{text}");
        assert!(!text.contains("job 36 "), "{text}");
        assert!(text.contains("# 4 more job(s)"), "{text}");
        assert_eq!(
            text.lines().filter(|l| l.contains('#')).count(),
            3,
            "{text}"
        );
        // Labels do not overrun each other.
        let labels = text.lines().rev().find(|l| l.contains(" s")).unwrap();
        assert!(
            labels
                .split_whitespace()
                .all(|w| w == "s" || w.parse::<f64>().is_ok()),
            "{labels}"
        );
    }

    #[test]
    fn rows_are_labelled_with_node_names_where_known() {
        let g = Gantt {
            nodes: 3,
            node_names: vec!["gpu-node-0001".into(), String::new(), "n3".into()],
            jobs: vec![job("1", 0.0, 10.0, 0..1, JobKind::Ran)],
            window: Some((0.0, 10.0)),
            ..Gantt::default()
        };
        let text = gantt(&g, 60);
        let labels: Vec<&str> = text
            .lines()
            .take(3)
            .map(|l| l.split_whitespace().next().unwrap())
            .collect();
        assert_eq!(labels, ["gpu-node-0001", "1", "n3"], "{text}");
        assert!(text.lines().all(|l| l.chars().count() <= 60), "{text}");
    }

    #[test]
    fn a_row_of_several_nodes_is_labelled_as_a_host_list() {
        assert_eq!(span_label("debug001", "debug032"), "debug[001-032]");
        assert_eq!(span_label("n9", "n12"), "n[9-12]");
        assert_eq!(span_label("7", "12"), "7-12");
        assert_eq!(span_label("alpha", "beta"), "alpha-beta");
        assert_eq!(span_label("gpu-a", "gpu-b"), "gpu-a-gpu-b");
    }

    #[test]
    fn a_large_pool_shows_several_nodes_a_row() {
        let g = Gantt {
            nodes: 128,
            jobs: vec![job("1", 0.0, 10.0, 0..64, JobKind::Ran)],
            window: Some((0.0, 10.0)),
            ..Gantt::default()
        };
        let text = gantt(&g, 60);
        let rows: Vec<&str> = text
            .lines()
            .filter(|l| l.contains('A') || l.contains('.'))
            .collect();
        assert!(rows[0].trim_start().starts_with("0-3 "), "{text}");
        assert_eq!(
            text.lines()
                .filter(|l| l.ends_with(&"A".repeat(10)))
                .count(),
            16,
            "{text}"
        );
    }
}

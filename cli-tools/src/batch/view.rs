//! eview: a waiting job's view (CooRM's Cluster Availability Profiles, Klein & Pérez HPCC 2011
//! §III-A and Fig. 2): per pool, the nodes expected free over time after the jobs ahead of it.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use batch_proto::{CapStep, ClientError, Request, Response, ViewReply, ViewRequest};
use clap::Parser;

use super::args::SocketArg;
use super::cli::{connect, print_out};
use super::time::{format_timestamp, local_zone, Zone};

/// `eview`'s command line.
#[derive(Parser, Debug)]
#[command(
    name = "eview",
    version,
    about = "Show a waiting job's view: per pool, the nodes expected free over time (CooRM's CAPs)"
)]
pub struct ViewCli {
    /// The job.
    #[arg(value_name = "JOBID")]
    pub job: u64,
    /// JSON: {"job", "now", "pools": [{"pool", "steps": [{"from", "to", "free"}]}]}, times in ms
    /// since the epoch as the other tools' --json, `to` null for the open-ended last step.
    #[arg(long, conflicts_with = "plot")]
    pub json: bool,
    /// A step chart per pool in the terminal instead of the table.
    #[arg(long)]
    pub plot: bool,
    /// Also write the chart as SVG to FILE (like the paper's Fig. 2).
    #[arg(long, value_name = "FILE")]
    pub svg: Option<PathBuf>,
    /// The daemon's socket.
    #[command(flatten)]
    pub socket: SocketArg,
}

/// The table: one line per step, `POOL FROM TO FREE`.
pub fn table(v: &ViewReply, zone: &Zone) -> String {
    let mut rows = vec![["POOL", "FROM", "TO", "FREE"].map(String::from).to_vec()];
    for p in &v.pools {
        for s in &p.steps {
            rows.push(vec![
                super::escape::shown(&p.pool).into_owned(),
                format_timestamp(s.from, zone),
                s.to.map_or_else(|| "infinite".into(), |t| format_timestamp(t, zone)),
                s.free.to_string(),
            ]);
        }
    }
    let widths: Vec<usize> = (0..4)
        .map(|c| rows.iter().map(|r| r[c].len()).max().unwrap_or(0))
        .collect();
    let mut out = String::new();
    for r in rows {
        let line = format!(
            "{:<w0$} {:<w1$} {:<w2$} {:>w3$}",
            r[0],
            r[1],
            r[2],
            r[3],
            w0 = widths[0],
            w1 = widths[1],
            w2 = widths[2],
            w3 = widths[3]
        );
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// The horizon of a chart: the last finite change, plus a fifth (at least a minute past now).
fn horizon(v: &ViewReply) -> u64 {
    let last = v
        .pools
        .iter()
        .flat_map(|p| p.steps.iter())
        .flat_map(|s| [Some(s.from), s.to])
        .flatten()
        .max()
        .unwrap_or(v.now)
        .max(v.now);
    let span = (last - v.now).max(60_000);
    v.now + span + span / 5
}

fn free_at(steps: &[CapStep], t: u64) -> u32 {
    steps
        .iter()
        .find(|s| s.from <= t && s.to.is_none_or(|to| t < to))
        .map_or(0, |s| s.free)
}

/// A terminal step chart per pool: `WIDTH` columns from now to the horizon, at most 8 rows.
pub fn plot(v: &ViewReply) -> String {
    const WIDTH: u64 = 64;
    let end = horizon(v);
    let mut out = String::new();
    for p in &v.pools {
        let top = p.steps.iter().map(|s| s.free).max().unwrap_or(0).max(1);
        let rows = top.min(8);
        let cols: Vec<u32> = (0..WIDTH)
            .map(|c| free_at(&p.steps, v.now + (end - v.now) * c / WIDTH))
            .collect();
        let _ = writeln!(out, "{} (free nodes, max {top})", p.pool);
        for r in (1..=rows).rev() {
            // Row r is filled where free ≥ its level (levels spread over 1..=top).
            let level = (u64::from(top) * u64::from(r)).div_ceil(u64::from(rows)) as u32;
            let line: String = cols
                .iter()
                .map(|&f| if f >= level { '█' } else { ' ' })
                .collect();
            let _ = writeln!(out, "{level:>5} |{line}");
        }
        let _ = writeln!(out, "      +{}", "-".repeat(WIDTH as usize));
        let _ = writeln!(
            out,
            "       now{:>w$}",
            format!("+{}s", (end - v.now) / 1000),
            w = WIDTH as usize - 3
        );
    }
    out
}

/// The chart as SVG: one panel per pool, the CAP (free nodes) as a step function over time
/// (seconds from now), like the paper's Fig. 2; drawn by esched-report's plotting module.
pub fn svg(v: &ViewReply) -> Result<String, esched_report::plot::PlotError> {
    use esched_report::plot::{stacked, LineChart, Series};
    let end = horizon(v);
    let secs = |t: u64| t.saturating_sub(v.now) as f64 / 1000.0;
    let charts: Vec<LineChart> = v
        .pools
        .iter()
        .map(|p| {
            let top = p.steps.iter().map(|s| s.free).max().unwrap_or(0).max(1);
            LineChart {
                title: format!("pool {}", p.pool),
                x_label: "seconds from now".into(),
                y_label: "free nodes (CAP)".into(),
                x_range: Some((0.0, secs(end).max(1.0))),
                y_range: Some((0.0, f64::from(top) * 1.1)),
                series: vec![Series {
                    name: "free nodes".into(),
                    points: p
                        .steps
                        .iter()
                        .filter(|st| st.to.is_none_or(|to| to > v.now))
                        .map(|st| (secs(st.from.max(v.now)), f64::from(st.free)))
                        .collect(),
                    steps: true,
                    ..Series::default()
                }],
                size: Some((640, 240)),
                ..LineChart::default()
            }
        })
        .collect();
    stacked(
        &format!("View of job {} (CAP per pool)", v.job),
        "The nodes each pool can give the application from now on (its CAP), as batchd's view \
         answered it; the last step holds for ever.",
        &charts,
    )
}

/// eview.
pub fn run(cli: ViewCli) -> anyhow::Result<ExitCode> {
    let mut client = connect(cli.socket.path())?;
    let v = match client.request(&Request::View(ViewRequest { job: cli.job }))? {
        Response::View(v) => v,
        other => return Err(ClientError::unexpected("view", &other).into()),
    };
    if let Some(path) = &cli.svg {
        std::fs::write(path, svg(&v)?)
            .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", path.display()))?;
    }
    if cli.json {
        print_out(&(serde_json::to_string_pretty(&v)? + "\n"))?;
    } else if cli.plot {
        print_out(&plot(&v))?;
    } else {
        print_out(&table(&v, &local_zone()))?;
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;
    use batch_proto::PoolView;

    fn reply() -> ViewReply {
        ViewReply {
            job: 7,
            now: 1_000_000,
            pools: vec![PoolView {
                pool: "a".into(),
                steps: vec![
                    CapStep {
                        from: 1_000_000,
                        to: Some(1_060_000),
                        free: 2,
                    },
                    CapStep {
                        from: 1_060_000,
                        to: None,
                        free: 8,
                    },
                ],
            }],
        }
    }

    #[test]
    fn json_has_exactly_the_documented_shape() {
        let j = serde_json::to_value(reply()).unwrap();
        assert_eq!(
            j,
            serde_json::json!({"job": 7, "now": 1_000_000, "pools": [{"pool": "a", "steps": [
                {"from": 1_000_000, "to": 1_060_000, "free": 2},
                {"from": 1_060_000, "to": null, "free": 8}]}]})
        );
    }

    #[test]
    fn the_table_has_a_line_per_step_and_an_open_end() {
        let t = table(&reply(), &super::super::time::fixed_zone(0));
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines.len(), 3);
        assert!(lines[0].starts_with("POOL"));
        assert!(lines[1].contains("1970-01-01T00:16:40") && lines[1].ends_with(" 2"));
        assert!(lines[2].contains("infinite") && lines[2].ends_with(" 8"));
    }

    #[test]
    fn the_plot_rises_where_nodes_free_up() {
        let p = plot(&reply());
        let top = p.lines().nth(1).unwrap();
        // The top row (8 nodes) is empty before the change and filled after it.
        let bar = top.split('|').nth(1).unwrap();
        assert!(bar.starts_with(' ') && bar.ends_with('█'));
        let s = svg(&reply()).unwrap();
        let doc = roxmltree::Document::parse(&s).expect("well-formed SVG");
        let texts: Vec<&str> = doc
            .descendants()
            .filter_map(|n| n.text())
            .map(str::trim)
            .collect();
        for want in ["pool a", "free nodes (CAP)", "View of job 7 (CAP per pool)"] {
            assert!(texts.contains(&want), "no {want} in {texts:?}");
        }
    }
}

//! The progress bar of long replays: on stderr, and only when someone watches a terminal.

use std::io::IsTerminal;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressState, ProgressStyle};
use sched_sim::{JobResult, Observer};

/// Updates a bar as jobs end; invisible when stderr is not a terminal or when quiet.
pub struct Progress {
    bar: Option<ProgressBar>,
}

impl Progress {
    /// A bar for `total` jobs.
    pub fn new(total: usize, quiet: bool) -> Self {
        let show = !quiet && std::io::stderr().is_terminal();
        let bar = show.then(|| {
            let bar =
                ProgressBar::with_draw_target(Some(total as u64), ProgressDrawTarget::stderr());
            if let Ok(style) = ProgressStyle::with_template(
                "{spinner} {elapsed_precise} [{bar:40}] {pos}/{len} jobs ({rate}, eta {eta})",
            ) {
                bar.set_style(style.progress_chars("=> ").with_key(
                    "rate",
                    |s: &ProgressState, w: &mut dyn std::fmt::Write| {
                        let _ = w.write_str(&rate(s.per_sec()));
                    },
                ));
            }
            bar
        });
        Progress { bar }
    }

    /// Clears the bar.
    pub fn finish(&self) {
        if let Some(b) = &self.bar {
            b.finish_and_clear();
        }
    }
}

/// Jobs per second as a person reads a rate: whole jobs, no thousands separator mixed with a
/// decimal point (indicatif's `{per_sec}` prints `21,275.247/s`), a decimal only below ten.
fn rate(per_sec: f64) -> String {
    if !per_sec.is_finite() {
        return "- jobs/s".to_string();
    }
    if per_sec < 10.0 {
        format!("{per_sec:.1} jobs/s")
    } else {
        format!("{per_sec:.0} jobs/s")
    }
}

impl Observer for Progress {
    fn on_job_end(&mut self, _result: &JobResult, ended: usize, _total: usize) {
        // Every 512 jobs: the bar throttles drawing itself, but not the atomic updates.
        if let Some(b) = &self.bar {
            if ended % 512 == 0 {
                b.set_position(ended as u64);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_rate_is_whole_jobs_per_second() {
        assert_eq!(super::rate(21_275.247), "21275 jobs/s");
        assert_eq!(super::rate(2.46), "2.5 jobs/s");
        assert_eq!(super::rate(f64::INFINITY), "- jobs/s");
    }
}

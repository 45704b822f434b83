//! The progress bar of long replays: on stderr, and only when someone watches a terminal.

use std::io::IsTerminal;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
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
                "{spinner} {elapsed_precise} [{bar:40}] {pos}/{len} jobs ({per_sec}, eta {eta})",
            ) {
                bar.set_style(style.progress_chars("=> "));
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

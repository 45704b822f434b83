//! The files a running job reads in its directory, as `core` knows them: its node file (every
//! job) and, for an evolving job, its step file and the progress kept for a restart. Built
//! here, written by the I/O layer (`crate::launch::write_job_files`).

use batch_proto::{hostlist, StepPhase, StepStatus};
use sched_core::JobId;

use super::Core;
use crate::evorun::Progress;

/// The files a job reads: its nodes and, for an evolving job, its step.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JobFiles {
    /// Host names, in the order the job got them.
    pub nodes: Vec<String>,
    /// The step file's text.
    pub step: Option<String>,
    /// The progress to keep for a restart.
    pub progress: Option<Progress>,
}

/// The step file: shell assignments a job script can source (`. "$ESCHED_STEPFILE"`).
fn step_text(id: u64, st: &StepStatus, nodelist: &str, default_release: &str) -> String {
    let releasing = st.phase == StepPhase::Releasing;
    let release_count = match (releasing, st.next_nodes) {
        (true, Some(n)) => st.nodes.saturating_sub(n),
        _ => 0,
    };
    format!(
        "# esched step file of job {id}: sh assignments, rewritten whole at every change, after\n\
         # which the job's process is signalled. See docs/evolving.md.\n\
         ESCHED_STEP={}\n\
         ESCHED_STEPS={}\n\
         ESCHED_STEP_STATE={}\n\
         ESCHED_STEP_NODES={}\n\
         ESCHED_STEP_END_MS={}\n\
         ESCHED_NEXT_STEP_NODES={}\n\
         ESCHED_RELEASE_COUNT={release_count}\n\
         ESCHED_RELEASE_DEFAULT={}\n\
         ESCHED_RELEASE_CHOSEN={}\n\
         ESCHED_STEP_NODELIST={nodelist}\n",
        st.index,
        st.count,
        st.phase,
        st.nodes,
        st.ends,
        st.next_nodes.unwrap_or(0),
        if releasing { default_release } else { "" },
        st.chosen_release.as_deref().unwrap_or(""),
    )
}

impl Core {
    /// The files of running job `id` as they are: its node file, and for an
    /// evolving job its step file.
    pub fn job_files(&self, id: u64) -> Option<JobFiles> {
        let a = self.jobs.get(&id)?;
        let run = a.run.as_ref()?;
        let p = self.pools.get(run.pool)?;
        let held = self.nodes_of(id);
        let nodes = p.names(held);
        let step = self.step_status(id).map(|st| {
            let default = st
                .next_nodes
                .and_then(|n| p.map.default_release(JobId(id), n as usize).ok())
                .map(|d| hostlist::compress(&p.names(&d)))
                .unwrap_or_default();
            step_text(id, &st, &hostlist::compress(&nodes), &default)
        });
        Some(JobFiles {
            nodes,
            step,
            progress: self.progress(id),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_step_file_is_sh_assignments_with_every_key() {
        let st = StepStatus {
            index: 2,
            count: 3,
            nodes: 4,
            phase: StepPhase::Releasing,
            ends: 77,
            next_nodes: Some(1),
            chosen_release: None,
        };
        let t = step_text(7, &st, "debug[001-004]", "debug[002-004]");
        assert!(t.contains("\nESCHED_STEP=2\n"));
        assert!(t.contains("\nESCHED_STEP_STATE=releasing\n"));
        assert!(t.contains("\nESCHED_RELEASE_COUNT=3\n"));
        assert!(t.contains("\nESCHED_RELEASE_DEFAULT=debug[002-004]\n"));
        assert!(t.contains("\nESCHED_RELEASE_CHOSEN=\n"));
        for line in t.lines().filter(|l| !l.starts_with('#')) {
            let (k, v) = line.split_once('=').unwrap();
            assert!(k.chars().all(|c| c.is_ascii_uppercase() || c == '_'), "{k}");
            assert!(!v.contains(char::is_whitespace), "{v}");
        }
    }
}

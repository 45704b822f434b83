//! The columns of Batsim's jobs CSV (`out_jobs.csv`), as evalys' `JobSet.from_csv` reads it:
//! times in seconds, `allocated_resources` an interval set (`0-3 7`), `final_state` one of
//! Batsim's job states.

use crate::nodes::IntervalSet;

/// Batsim's column names, in Batsim's order.
pub const COLUMNS: [&str; 13] = [
    "job_id",
    "submission_time",
    "requested_number_of_resources",
    "requested_time",
    "success",
    "final_state",
    "starting_time",
    "execution_time",
    "finish_time",
    "waiting_time",
    "turnaround_time",
    "stretch",
    "allocated_resources",
];

/// How a job ended, in Batsim's words.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FinalState {
    /// It ran to its end.
    CompletedSuccessfully,
    /// It ended with an error.
    CompletedFailed,
    /// It was killed at its requested time.
    CompletedWalltimeReached,
    /// It was killed (by the policy or a user).
    CompletedKilled,
    /// It was rejected and never ran.
    Rejected,
}

impl FinalState {
    /// Batsim's name.
    pub fn as_str(self) -> &'static str {
        match self {
            FinalState::CompletedSuccessfully => "COMPLETED_SUCCESSFULLY",
            FinalState::CompletedFailed => "COMPLETED_FAILED",
            FinalState::CompletedWalltimeReached => "COMPLETED_WALLTIME_REACHED",
            FinalState::CompletedKilled => "COMPLETED_KILLED",
            FinalState::Rejected => "REJECTED",
        }
    }
}

/// One job. Times in milliseconds (written as seconds).
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    /// Job id.
    pub id: String,
    /// Submission.
    pub submit: u64,
    /// Nodes requested.
    pub requested_nodes: u32,
    /// Requested time, when known.
    pub requested_time: Option<u64>,
    /// How it ended.
    pub state: FinalState,
    /// Start.
    pub start: u64,
    /// End.
    pub end: u64,
    /// The nodes it held.
    pub allocated: IntervalSet,
}

impl Row {
    /// The row's fields, in [`COLUMNS`]' order. Unknown requested time is `-1`; the stretch is
    /// turnaround over execution time (empty for a zero execution time, as there is none).
    pub fn fields(&self) -> [String; 13] {
        let s = |ms: u64| secs(ms);
        let exec = self.end.saturating_sub(self.start);
        let wait = self.start.saturating_sub(self.submit);
        let turnaround = self.end.saturating_sub(self.submit);
        let stretch = if exec > 0 {
            format!("{}", turnaround as f64 / exec as f64)
        } else {
            String::new()
        };
        [
            self.id.clone(),
            s(self.submit),
            self.requested_nodes.to_string(),
            self.requested_time.map_or("-1".to_string(), s),
            u8::from(self.state == FinalState::CompletedSuccessfully).to_string(),
            self.state.as_str().to_string(),
            s(self.start),
            s(exec),
            s(self.end),
            s(wait),
            s(turnaround),
            stretch,
            self.allocated.to_string(),
        ]
    }
}

/// Milliseconds as seconds, without trailing zeros (`1500` → `1.5`, `2000` → `2`).
pub fn secs(ms: u64) -> String {
    if ms % 1000 == 0 {
        (ms / 1000).to_string()
    } else {
        let s = format!("{}.{:03}", ms / 1000, ms % 1000);
        s.trim_end_matches('0').to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_row_is_in_seconds_with_batsim_names() {
        let r = Row {
            id: "4".into(),
            submit: 1000,
            requested_nodes: 2,
            requested_time: Some(60_000),
            state: FinalState::CompletedWalltimeReached,
            start: 3500,
            end: 63_500,
            allocated: IntervalSet::from(0..2),
        };
        let f = r.fields();
        assert_eq!(f[1], "1");
        assert_eq!(f[3], "60");
        assert_eq!(
            (f[4].as_str(), f[5].as_str()),
            ("0", "COMPLETED_WALLTIME_REACHED")
        );
        assert_eq!(
            (f[6].as_str(), f[7].as_str(), f[9].as_str()),
            ("3.5", "60", "2.5")
        );
        assert_eq!(f[12], "0-1");
        assert_eq!(COLUMNS.len(), f.len());
    }
}

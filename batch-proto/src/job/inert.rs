//! Slurm options a submission may carry that change nothing here: [`InertOptions`].
//!
//! sbatch users and the tools that drive sbatch (submitit, dask-jobqueue) pass them as a matter
//! of habit. batchd accepts them, stores them with the job and shows them (`econtrol show job`,
//! `--json`), so a script written for Slurm runs unchanged; none of them is read by the
//! scheduler, the validator or the supervisor, so the schedule is what it would be without them.

use serde::{Deserialize, Serialize};

use super::limits::{MAX_PATH, MAX_WORD};
use super::spec::SpecError;

/// Slurm's `--mail-type` values (22.05), any case, comma-separated.
pub const MAIL_TYPES: [&str; 13] = [
    "NONE",
    "BEGIN",
    "END",
    "FAIL",
    "REQUEUE",
    "ALL",
    "INVALID_DEPEND",
    "STAGE_OUT",
    "TIME_LIMIT",
    "TIME_LIMIT_90",
    "TIME_LIMIT_80",
    "TIME_LIMIT_50",
    "ARRAY_TASKS",
];

/// Slurm's `--profile` values (22.05's acct_gather_profile types), any case, comma-separated.
pub const PROFILE_TYPES: [&str; 6] = ["all", "none", "energy", "task", "lustre", "network"];

/// Slurm's `--hint` values.
pub const HINTS: [&str; 4] = [
    "compute_bound",
    "memory_bound",
    "multithread",
    "nomultithread",
];

/// The largest `--nice` adjustment in either direction (Slurm's `NICE_OFFSET - 3`).
pub const MAX_NICE: i64 = 2_147_483_645;

/// Options stored and shown that have no effect here, each as sbatch spells it. Every field is
/// optional; an empty set is not sent.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct InertOptions {
    /// `--wckey`: Slurm's workload characterization key (accounting only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wckey: Option<String>,
    /// `--comment`: free text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comment: Option<String>,
    /// `--nice[=N]`: Slurm lowers the job's priority by N (100 without a value); here the
    /// priority is not changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nice: Option<i64>,
    /// `--time-min`: the shortest limit Slurm's backfill may cut the job to, in ms; here the job
    /// keeps its `-t`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_min: Option<u64>,
    /// `-k/--no-kill`: Slurm keeps the job when one of its nodes fails; batchd's nodes do not
    /// fail.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub no_kill: bool,
    /// `--tmp`: the temporary disk a node needs, in MiB; nodes here declare none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tmp_mb: Option<u64>,
    /// `--hint`: how tasks are laid on cores; nodes here are whole.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
    /// `-m/--distribution`: how tasks are laid on nodes, as given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub distribution: Option<String>,
    /// `--mail-type`, upper case as Slurm shows it (`END,FAIL`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mail_type: Option<String>,
    /// `--mail-user`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mail_user: Option<String>,
    /// `--profile` in Slurm's sense (the acct_gather profile), lower case (`energy,task`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<String>,
}

/// `Err` with `reason` about `field`.
fn bad<T>(field: &'static str, reason: impl Into<String>) -> Result<T, SpecError> {
    Err(SpecError::Field {
        field,
        reason: reason.into(),
    })
}

/// `list` (comma-separated, any case) with every item in `known`, normalised by `norm`.
fn word_list(
    field: &'static str,
    list: &str,
    known: &[&str],
    norm: fn(&str) -> String,
) -> Result<String, SpecError> {
    let mut out = Vec::new();
    for item in list.split(',') {
        let item = norm(item.trim());
        if !known.iter().any(|k| norm(k) == item) {
            return bad(
                field,
                format!("'{item}' is not one of {}", known.join(", ")),
            );
        }
        out.push(item);
    }
    Ok(out.join(","))
}

impl InertOptions {
    /// Nothing given.
    pub fn is_empty(&self) -> bool {
        *self == InertOptions::default()
    }

    /// Parses `--mail-type`'s list as sbatch does (Slurm's words, any case): the upper-case
    /// list Slurm shows.
    pub fn parse_mail_type(list: &str) -> Result<String, SpecError> {
        word_list("mail_type", list, &MAIL_TYPES, str::to_ascii_uppercase)
    }

    /// Parses Slurm's `--profile` list: the lower-case list, or `Err` for a value that is not
    /// Slurm's (see [`PROFILE_TYPES`]).
    pub fn parse_profile(list: &str) -> Result<String, SpecError> {
        word_list("profile", list, &PROFILE_TYPES, str::to_ascii_lowercase)
    }

    /// Parses `--hint` (one of [`HINTS`], any case).
    pub fn parse_hint(v: &str) -> Result<String, SpecError> {
        let h = v.trim().to_ascii_lowercase();
        if HINTS.contains(&h.as_str()) {
            Ok(h)
        } else {
            bad("hint", format!("'{v}' is not one of {}", HINTS.join(", ")))
        }
    }

    /// Checks what a submission may carry: words without control characters and of bounded
    /// length, values in their ranges and lists.
    pub fn validate(&self) -> Result<(), SpecError> {
        let texts = [
            ("wckey", &self.wckey, MAX_WORD),
            ("comment", &self.comment, MAX_PATH),
            ("hint", &self.hint, MAX_WORD),
            ("distribution", &self.distribution, MAX_WORD),
            ("mail_type", &self.mail_type, MAX_WORD),
            ("mail_user", &self.mail_user, MAX_WORD),
            ("profile", &self.profile, MAX_WORD),
        ];
        for (field, v, max) in texts {
            let Some(v) = v else { continue };
            if v.len() > max {
                return bad(
                    field,
                    format!("{} bytes long; at most {max} are accepted", v.len()),
                );
            }
            if v.chars().any(char::is_control) {
                return bad(field, "contains a control character");
            }
        }
        if let Some(n) = self.nice {
            if !(-MAX_NICE..=MAX_NICE).contains(&n) {
                return bad("nice", format!("{n} is outside -{MAX_NICE}..={MAX_NICE}"));
            }
        }
        if let Some(t) = &self.mail_type {
            Self::parse_mail_type(t)?;
        }
        // The recipient ends up on a mail program's command line: an address, never an
        // option.
        if let Some(u) = &self.mail_user {
            let plain = u
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "@._+-".contains(c));
            if u.is_empty() || u.starts_with('-') || !plain {
                return bad("mail_user", "is not a mail address");
            }
        }
        if let Some(p) = &self.profile {
            Self::parse_profile(p)?;
        }
        if let Some(h) = &self.hint {
            Self::parse_hint(h)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slurm_lists_are_normalised_and_others_refused() {
        assert_eq!(
            InertOptions::parse_mail_type("end,Fail").unwrap(),
            "END,FAIL"
        );
        assert_eq!(InertOptions::parse_mail_type("none").unwrap(), "NONE");
        assert!(InertOptions::parse_mail_type("END,sometimes").is_err());
        assert_eq!(
            InertOptions::parse_profile("Energy,task").unwrap(),
            "energy,task"
        );
        // An evolving job's steps are not Slurm's profile.
        assert!(InertOptions::parse_profile("500:5").is_err());
        assert_eq!(
            InertOptions::parse_hint("NoMultiThread").unwrap(),
            "nomultithread"
        );
        assert!(InertOptions::parse_hint("fast").is_err());
    }

    #[test]
    fn validate_bounds() {
        let ok = InertOptions {
            nice: Some(100),
            mail_type: Some("END".into()),
            ..Default::default()
        };
        assert!(ok.validate().is_ok());
        let far = InertOptions {
            nice: Some(MAX_NICE + 1),
            ..Default::default()
        };
        assert!(far.validate().is_err());
        let ctl = InertOptions {
            comment: Some("a\nb".into()),
            ..Default::default()
        };
        assert!(ctl.validate().is_err());
        assert!(InertOptions::default().is_empty());
    }
}

//! The protocol's validation of requests: every list and string a client sends has a bound,
//! checked in one place, [`Request::check`], by batchd on every request it decodes and by
//! [`crate::Client`] before it sends one, so a tool and a raw client meet the same one-line
//! message. The bounds are documented in docs/batchd.md, "Limits of a request" and "Limits of a
//! job".
//!
//! What depends on the daemon's state (pools, other jobs, the time) is checked by batchd
//! after this: [`crate::JobSpec::check`].

use crate::job::{SpecError, MAX_NAME, MAX_WORD};
use crate::message::{ActionReport, ErrorKind, ErrorReply, JobFailure, JobFilter, Request};

/// Most job ids and array tasks (`ID_N`) one filter may name, together; and most ids one
/// `Hold`, `Release` or `Requeue` may name. A command line cannot carry many more (Linux's
/// default `ARG_MAX`, 2 MiB, holds about 130,000 seven-digit ids with their pointers), and at
/// this bound the largest answer, every id failing, still fits in one frame
/// ([`MAX_FAILURE_MESSAGE`]).
pub const MAX_FILTER_IDS: usize = 100_000;

/// Most users, names, pools or states one filter may name (each list on its own).
pub const MAX_FILTER_WORDS: usize = 1000;

/// Longest host list an `erelease` may send, in bytes (its expansion is bounded by
/// [`MAX_RELEASE_NODES`]).
pub const MAX_HOSTLIST: usize = 1024 * 1024;

/// Most node names the host list of an `erelease` may expand to.
pub const MAX_RELEASE_NODES: usize = 1 << 20;

/// Longest message of one [`JobFailure`] as encoded (JSON escapes counted), in bytes: longer
/// ones are cut ([`JobFailure::new`]). With [`MAX_FILTER_IDS`] failures of the largest id and
/// the longest kind, an `Acted` answer stays under [`crate::MAX_FRAME`].
pub const MAX_FAILURE_MESSAGE: usize = 96;

/// Encoded bytes of one [`JobFailure`] at most, its separating comma included: the id at
/// `u64::MAX`, the longest kind, a message of [`MAX_FAILURE_MESSAGE`].
pub const MAX_FAILURE_BYTES: usize =
    r#"{"id":18446744073709551615,"kind":"permission_denied","message":""},"#.len()
        + MAX_FAILURE_MESSAGE;

/// Encoded bytes of an `Acted` answer besides its entries.
const ACTED_FRAME_OVERHEAD: usize =
    crate::frame::HEADER_LEN + r#"{"Acted":{"done":[],"failed":[]}}"#.len();

/// A request over one of the bounds.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RequestError {
    /// A submission's or a launcher session's content.
    #[error(transparent)]
    Spec(#[from] SpecError),
    /// A list longer than its bound.
    #[error("too many {what}: {count}; at most {max} are accepted in one request")]
    TooMany {
        /// What the list holds (`job ids and array tasks in the filter`).
        what: &'static str,
        /// Its length.
        count: usize,
        /// The bound.
        max: usize,
    },
    /// A string longer than its bound.
    #[error("{what} of {len} bytes; at most {max} are accepted")]
    TooLong {
        /// What the string is (`a user name in the filter`).
        what: &'static str,
        /// Its length.
        len: usize,
        /// The bound.
        max: usize,
    },
}

impl RequestError {
    /// The kind of the daemon's answer: a submission's content is `invalid_spec`, anything
    /// else `bad_request`.
    pub fn kind(&self) -> ErrorKind {
        match self {
            RequestError::Spec(_) => ErrorKind::InvalidSpec,
            _ => ErrorKind::BadRequest,
        }
    }

    /// The error as the daemon answers it (and as [`crate::Client`] reports it).
    pub fn reply(&self) -> ErrorReply {
        ErrorReply::new(self.kind(), self.to_string())
    }
}

fn count(what: &'static str, n: usize, max: usize) -> Result<(), RequestError> {
    if n > max {
        return Err(RequestError::TooMany {
            what,
            count: n,
            max,
        });
    }
    Ok(())
}

fn longest(v: &[String]) -> usize {
    v.iter().map(String::len).max().unwrap_or(0)
}

fn length(what: &'static str, len: usize, max: usize) -> Result<(), RequestError> {
    if len > max {
        return Err(RequestError::TooLong { what, len, max });
    }
    Ok(())
}

impl JobFilter {
    /// The filter's bounds: [`MAX_FILTER_IDS`] ids and tasks together, [`MAX_FILTER_WORDS`]
    /// users, names, pools and states each, names of at most [`MAX_NAME`] bytes, users and
    /// pools of at most [`MAX_WORD`].
    pub fn check(&self) -> Result<(), RequestError> {
        count(
            "job ids and array tasks in the filter",
            self.ids.len().saturating_add(self.tasks.len()),
            MAX_FILTER_IDS,
        )?;
        count("users in the filter", self.users.len(), MAX_FILTER_WORDS)?;
        count("names in the filter", self.names.len(), MAX_FILTER_WORDS)?;
        count("pools in the filter", self.pools.len(), MAX_FILTER_WORDS)?;
        count("states in the filter", self.states.len(), MAX_FILTER_WORDS)?;
        length("a user in the filter", longest(&self.users), MAX_WORD)?;
        length("a job name in the filter", longest(&self.names), MAX_NAME)?;
        length("a pool in the filter", longest(&self.pools), MAX_WORD)
    }
}

fn ids(n: usize) -> Result<(), RequestError> {
    count("job ids", n, MAX_FILTER_IDS)
}

impl Request {
    /// Checks every list and string the request carries against its bound, and a
    /// submission's content ([`crate::JobSpec::validate_submission`]). batchd runs it on
    /// every request it decodes, [`crate::Client`] before it sends one.
    pub fn check(&self) -> Result<(), RequestError> {
        match self {
            Request::Hello(h) => length("a software version", h.software_version.len(), MAX_WORD),
            Request::Submit(s) => Ok(s.spec.validate_submission()?),
            Request::Snapshot(s) => match &s.with_job {
                Some(spec) => Ok(spec.validate_submission()?),
                None => Ok(()),
            },
            Request::List(r) => r.filter.check(),
            Request::Cancel(r) => r.filter.check(),
            Request::Acct(r) => r.filter.check(),
            Request::Hold(r) => ids(r.ids.len()),
            Request::Unhold(r) => ids(r.ids.len()),
            Request::Requeue(r) => ids(r.ids.len()),
            Request::Update(r) => {
                if let Some(n) = &r.name {
                    length("a job name", n.len(), MAX_NAME)?;
                }
                if let Some(p) = &r.pool {
                    length("a pool name", p.len(), MAX_WORD)?;
                }
                r.dependencies.as_ref().map_or(Ok(()), |d| {
                    count("dependencies", d.len(), crate::job::MAX_DEPENDENCIES)
                })
            }
            Request::ReleaseNodes(r) => length("a host list", r.nodes.len(), MAX_HOSTLIST),
            Request::StepPart(r) => {
                length("a node name", r.node.len(), MAX_WORD)?;
                count("arguments", r.args.len(), 4096)?;
                count("environment variables", r.env.len(), 16_384)?;
                length("a program path", r.program.len().max(r.cwd.len()), 4096)
            }
            Request::StepPartSignal(_) => Ok(()),
            Request::UpdateNodes(r) => {
                length("a host list", r.nodes.len(), MAX_HOSTLIST)?;
                r.reason
                    .as_ref()
                    .map_or(Ok(()), |m| length("a reason", m.len(), MAX_NAME))
            }
            Request::Subscribe(s) => {
                let f = &s.filter;
                count("pools in the filter", f.pools.len(), MAX_FILTER_WORDS)?;
                length("a pool in the filter", longest(&f.pools), MAX_WORD)?;
                s.name
                    .as_ref()
                    .map_or(Ok(()), |n| length("a job name", n.len(), MAX_NAME))
            }
            Request::Request(r) => {
                count("pools in the request", r.pools.len(), crate::MAX_COMPONENTS)?;
                Ok(crate::JobShape::Session {
                    pools: r.pools.clone(),
                    time_limit: r.duration_ms,
                }
                .validate()?)
            }
            Request::StepStart(r) => {
                length("a step name", r.name.len(), MAX_NAME)?;
                count("nodes of a step", r.node_names.len(), MAX_FILTER_WORDS)?;
                count(
                    "excluded nodes of a step",
                    r.exclude.len(),
                    MAX_FILTER_WORDS,
                )?;
                length(
                    "a node name",
                    longest(&r.node_names).max(longest(&r.exclude)),
                    MAX_WORD,
                )
            }
            Request::Version(_)
            | Request::StepEnd(_)
            | Request::ShowJob(_)
            | Request::Info(_)
            | Request::Reconfigure(_)
            | Request::ListClustersInfo(_)
            | Request::ListInterClusterInfo(_)
            | Request::Done(_)
            | Request::View(_)
            | Request::Stats(_) => Ok(()),
        }
    }
}

impl JobFailure {
    /// A failure whose message is cut to [`MAX_FAILURE_MESSAGE`] encoded bytes (ending `…`),
    /// so that every answer of [`MAX_FILTER_IDS`] failures fits in one frame.
    pub fn new(id: u64, kind: ErrorKind, message: impl Into<String>) -> JobFailure {
        let mut message = message.into();
        if json_len(&message) > MAX_FAILURE_MESSAGE {
            let mut used = 0;
            let keep = message
                .char_indices()
                .take_while(|&(_, c)| {
                    used += json_char_len(c);
                    used <= MAX_FAILURE_MESSAGE - '…'.len_utf8()
                })
                .last()
                .map_or(0, |(i, c)| i + c.len_utf8());
            message.truncate(keep);
            message.push('…');
        }
        JobFailure { id, kind, message }
    }
}

/// Bytes `c` takes inside a JSON string as serde_json writes it.
fn json_char_len(c: char) -> usize {
    match c {
        '"' | '\\' | '\n' | '\r' | '\t' | '\u{8}' | '\u{c}' => 2,
        c if (c as u32) < 0x20 => 6,
        c => c.len_utf8(),
    }
}

fn json_len(s: &str) -> usize {
    s.chars().map(json_char_len).sum()
}

impl ActionReport {
    /// An upper bound of the encoded frame of an `Acted` answer reporting `done` as done and
    /// up to `failures` jobs as failed, each failure made by [`JobFailure::new`]: what batchd
    /// computes before acting, so that an answer that could not be sent is refused before
    /// anything is done.
    pub fn frame_bound(done: impl IntoIterator<Item = u64>, failures: usize) -> usize {
        let digits = |id: u64| id.checked_ilog10().unwrap_or(0) as usize + 1;
        ACTED_FRAME_OVERHEAD
            + done.into_iter().map(|id| digits(id) + 1).sum::<usize>()
            + failures.saturating_mul(MAX_FAILURE_BYTES)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::{CancelRequest, HoldRequest, ListRequest};
    use crate::{frame, JobState, Response, MAX_FRAME};
    use proptest::prelude::*;

    fn list(filter: JobFilter) -> Request {
        Request::List(ListRequest {
            filter,
            ..Default::default()
        })
    }

    #[test]
    fn filters_over_their_bounds_are_refused_naming_the_bound() {
        let over = JobFilter {
            ids: (0..MAX_FILTER_IDS as u64).collect(),
            tasks: vec![(1, 1)],
            ..Default::default()
        };
        let e = list(over).check().unwrap_err();
        assert_eq!(
            e.to_string(),
            "too many job ids and array tasks in the filter: 100001; at most 100000 are \
             accepted in one request"
        );
        assert_eq!(e.kind(), ErrorKind::BadRequest);
        let at = JobFilter {
            ids: (0..MAX_FILTER_IDS as u64 - 1).collect(),
            tasks: vec![(1, 1)],
            users: vec!["u".repeat(MAX_WORD); MAX_FILTER_WORDS],
            names: vec!["n".repeat(MAX_NAME); 2],
            states: vec![JobState::Pending; MAX_FILTER_WORDS],
            pools: vec!["debug".into()],
        };
        list(at.clone()).check().unwrap();
        let mut f = at.clone();
        f.users.push("x".into());
        assert!(list(f).check().unwrap_err().to_string().contains("users"));
        let mut f = at.clone();
        f.names[0].push('x');
        assert_eq!(
            list(f).check().unwrap_err().to_string(),
            "a job name in the filter of 1025 bytes; at most 1024 are accepted"
        );
        let mut f = at;
        f.states.push(JobState::Running);
        assert!(Request::Cancel(CancelRequest {
            filter: f,
            signal: None,
            scope: Default::default(),
        })
        .check()
        .is_err());
        let hold = Request::Hold(HoldRequest {
            ids: vec![1; MAX_FILTER_IDS + 1],
        });
        assert!(hold.check().unwrap_err().to_string().contains("job ids"));
    }

    /// The largest `Acted` answer the bounds allow, every id failing with a message cut to
    /// its bound (of characters JSON escapes the most), encodes within one frame; and
    /// `frame_bound` is an upper bound of what it encodes to.
    #[test]
    fn the_largest_acted_answer_fits_in_a_frame() {
        let worst = "\u{1}".repeat(1000);
        let f = JobFailure::new(u64::MAX, ErrorKind::PermissionDenied, worst);
        assert!(json_len(&f.message) <= MAX_FAILURE_MESSAGE, "{}", f.message);
        let plain = JobFailure::new(u64::MAX, ErrorKind::PermissionDenied, "é".repeat(1000));
        assert!(json_len(&plain.message) <= MAX_FAILURE_MESSAGE);
        assert!(json_len(&plain.message) > MAX_FAILURE_MESSAGE - 4);
        let one = serde_json::to_vec(&plain).unwrap().len() + 1;
        assert!(one <= MAX_FAILURE_BYTES, "{one}");
        let report = ActionReport {
            done: vec![],
            failed: vec![plain; MAX_FILTER_IDS],
        };
        let bytes = frame::encode(&Response::Acted(report)).unwrap();
        assert!(bytes.len() <= MAX_FRAME, "{}", bytes.len());
        assert!(bytes.len() <= ActionReport::frame_bound([], MAX_FILTER_IDS));
        assert!(ActionReport::frame_bound([], MAX_FILTER_IDS) <= MAX_FRAME);
        let done = ActionReport {
            done: vec![u64::MAX, 0, 7, 1_000_000],
            failed: vec![],
        };
        let bytes = frame::encode(&Response::Acted(done.clone())).unwrap();
        // Exact but for the last entry's comma, which the bound counts.
        assert_eq!(bytes.len() + 1, ActionReport::frame_bound(done.done, 0));
    }

    #[test]
    fn short_messages_are_kept_whole() {
        let f = JobFailure::new(3, ErrorKind::InvalidJobId, "Invalid job id specified: 3");
        assert_eq!(f.message, "Invalid job id specified: 3");
        let exact = "x".repeat(MAX_FAILURE_MESSAGE);
        assert_eq!(
            JobFailure::new(3, ErrorKind::Internal, exact.clone()).message,
            exact
        );
    }

    proptest! {
        #[test]
        fn cut_messages_stay_within_their_bound(m in ".{0,300}") {
            let f = JobFailure::new(1, ErrorKind::Internal, m.clone());
            prop_assert!(json_len(&f.message) <= MAX_FAILURE_MESSAGE);
            if json_len(&m) <= MAX_FAILURE_MESSAGE {
                prop_assert_eq!(f.message, m);
            }
        }
    }
}

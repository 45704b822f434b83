//! erelease: a running evolving job names the nodes it frees at the end of its current step
//! (Klein & Pérez's condition C4). Slurm has no counterpart: `scontrol update NumNodes=` shrinks
//! a job by hand, keeping whichever nodes Slurm likes.

use std::process::ExitCode;

use batch_proto::hostlist;
use batch_proto::{Client, ClientError, ReleaseNodesReply, ReleaseNodesRequest, Request, Response};
use clap::Parser;

use super::args::SocketArg;
use super::cli::{connect, print_out};
use super::time::{format_timestamp, local_zone, Zone};

/// The variable batchd sets in every job's environment; `-j` defaults to it so that a job can
/// call `erelease NODES` about itself.
pub const JOB_ID_VAR: &str = "ESCHED_JOB_ID";

/// `erelease`'s command line.
#[derive(Parser, Debug)]
#[command(
    name = "erelease",
    version,
    about = "Choose the nodes a running evolving job frees when its current step ends",
    after_help = "Use it when the job's step file says ESCHED_STEP_STATE=releasing: the next \
                  step holds fewer nodes, and the job must free ESCHED_RELEASE_COUNT of its own \
                  nodes. Without erelease batchd frees ESCHED_RELEASE_DEFAULT: the nodes the \
                  job got last, never its first one (where the driver runs).\n\
                  Give exactly ESCHED_RELEASE_COUNT nodes, e.g. `erelease debug[002-003]`. A \
                  second call replaces the first. It works only until the step ends: from then \
                  on the nodes that leave are decided."
)]
pub struct ReleaseCli {
    /// The evolving job (default: $ESCHED_JOB_ID, i.e. the job erelease runs in).
    #[arg(short = 'j', long = "job", value_name = "JOBID")]
    pub job: Option<String>,
    /// The nodes to free, in host-list syntax (`debug[002-003]`, `debug002,debug004`); several
    /// arguments are joined with commas.
    #[arg(value_name = "NODELIST", required = true)]
    pub nodes: Vec<String>,
    /// The daemon's socket.
    #[command(flatten)]
    pub socket: SocketArg,
}

fn job_id(text: &str, origin: &str) -> anyhow::Result<u64> {
    text.trim()
        .parse::<u64>()
        .ok()
        .filter(|n| *n > 0)
        .ok_or_else(|| anyhow::anyhow!("Invalid job id specified: {text}{origin}"))
}

/// The node list the arguments name, checked: every piece expands and no node is named twice.
/// Returns the list as sent (the arguments joined with commas) and its node count.
pub fn node_list(args: &[String]) -> anyhow::Result<(String, usize)> {
    let joined = args
        .iter()
        .map(|a| a.trim())
        .filter(|a| !a.is_empty())
        .collect::<Vec<_>>()
        .join(",");
    let names = hostlist::expand(&joined)?;
    if names.is_empty() {
        anyhow::bail!("No nodes given");
    }
    let mut seen = std::collections::HashSet::with_capacity(names.len());
    for n in &names {
        if !seen.insert(n.as_str()) {
            anyhow::bail!("Node {n} is named twice in {joined}");
        }
    }
    Ok((joined, names.len()))
}

impl ReleaseCli {
    /// The request this command line makes; `env_job` is `$ESCHED_JOB_ID` (an argument so
    /// that tests do not depend on the environment they run in).
    pub fn request(&self, env_job: Option<&str>) -> anyhow::Result<ReleaseNodesRequest> {
        let job = match (&self.job, env_job) {
            (Some(j), _) => job_id(j, "")?,
            (None, Some(e)) => job_id(e, &format!(" (from {JOB_ID_VAR})"))?,
            (None, None) => anyhow::bail!(
                "No job given: use -j JOBID, or run erelease inside the job ({JOB_ID_VAR})"
            ),
        };
        let (nodes, _) = node_list(&self.nodes)?;
        Ok(ReleaseNodesRequest { job, nodes })
    }
}

/// What erelease prints once batchd recorded the choice.
pub fn released_line(r: &ReleaseNodesReply, zone: &Zone) -> String {
    // The daemon's list is compressed; one node reads "leaves", several "leave".
    let one = hostlist::expand(&r.nodes).is_ok_and(|v| v.len() == 1);
    format!(
        "erelease: job {}: {} {} the job at {} (start of step {})\n",
        r.job,
        r.nodes,
        if one { "leaves" } else { "leave" },
        format_timestamp(r.at, zone),
        r.next_step
    )
}

/// Sends `req`; the daemon's refusal (`Response::Error`) comes back as the error.
pub fn release(
    client: &mut Client,
    req: ReleaseNodesRequest,
) -> Result<ReleaseNodesReply, ClientError> {
    match client.request(&Request::ReleaseNodes(req))? {
        Response::NodesReleased(r) => Ok(r),
        other => Err(ClientError::unexpected("release-nodes", &other)),
    }
}

/// erelease.
pub fn run(cli: ReleaseCli) -> anyhow::Result<ExitCode> {
    let env_job = std::env::var(JOB_ID_VAR).ok();
    let req = cli.request(env_job.as_deref())?;
    let mut client = connect(cli.socket.path())?;
    let reply = release(&mut client, req)?;
    print_out(&released_line(&reply, &local_zone()))?;
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::super::time::fixed_zone;
    use super::*;
    use batch_proto::{ErrorKind, ErrorReply};
    use clap::CommandFactory;

    fn cli(args: &[&str]) -> ReleaseCli {
        ReleaseCli::try_parse_from(std::iter::once("erelease").chain(args.iter().copied())).unwrap()
    }

    #[test]
    fn job_from_option_else_environment() {
        let r = cli(&["-j", "7", "debug[002-003]"])
            .request(Some("9"))
            .unwrap();
        assert_eq!(
            r,
            ReleaseNodesRequest {
                job: 7,
                nodes: "debug[002-003]".into()
            }
        );
        assert_eq!(cli(&["debug002"]).request(Some("9")).unwrap().job, 9);
        assert_eq!(
            cli(&["--job=12", "debug002"]).request(None).unwrap().job,
            12
        );
        let e = cli(&["debug002"]).request(None).unwrap_err().to_string();
        assert!(
            e.starts_with("No job given") && e.contains("ESCHED_JOB_ID"),
            "{e}"
        );
        let e = cli(&["debug002"])
            .request(Some("x1"))
            .unwrap_err()
            .to_string();
        assert_eq!(e, "Invalid job id specified: x1 (from ESCHED_JOB_ID)");
        let e = cli(&["-j", "0", "debug002"]).request(None).unwrap_err();
        assert_eq!(e.to_string(), "Invalid job id specified: 0");
    }

    #[test]
    fn node_arguments_are_joined_and_checked() {
        let r = cli(&["-j", "3", "debug002", "debug[004-005]"])
            .request(None)
            .unwrap();
        assert_eq!(r.nodes, "debug002,debug[004-005]");
        assert_eq!(
            node_list(&["a[1-3]".into(), "b7".into()]).unwrap(),
            ("a[1-3],b7".into(), 4)
        );
        let e = cli(&["-j", "3", "debug[002-"]).request(None).unwrap_err();
        assert!(e.to_string().contains("invalid host list"), "{e}");
        let e = cli(&["-j", "3", "debug[002-003]", "debug003"])
            .request(None)
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            "Node debug003 is named twice in debug[002-003],debug003"
        );
        let e = cli(&["-j", "3", " ", ""]).request(None).unwrap_err();
        assert_eq!(e.to_string(), "No nodes given");
        assert!(ReleaseCli::try_parse_from(["erelease", "-j", "3"]).is_err());
    }

    #[test]
    fn success_line() {
        let r = ReleaseNodesReply {
            job: 7,
            nodes: "debug[002-003]".into(),
            at: 1_000_000,
            next_step: 3,
        };
        assert_eq!(
            released_line(&r, &fixed_zone(3600)),
            "erelease: job 7: debug[002-003] leave the job at 1970-01-01T01:16:40 (start of \
             step 3)\n"
        );
        let r = ReleaseNodesReply {
            nodes: "debug004".into(),
            ..r
        };
        assert!(released_line(&r, &fixed_zone(0)).contains(" debug004 leaves the job at "));
    }

    /// A daemon on the other end of a socket pair: answers the hello, then `reply` to the one
    /// request, which it hands back.
    fn fake_daemon(reply: Response) -> (Client, std::thread::JoinHandle<Request>) {
        use batch_proto::frame::{read_frame, write_frame};
        use batch_proto::Hello;
        let (a, mut b) = std::os::unix::net::UnixStream::pair().unwrap();
        let daemon = std::thread::spawn(move || {
            let _: Request = read_frame(&mut b).unwrap();
            write_frame(&mut b, &Response::Hello(Hello::current())).unwrap();
            let req: Request = read_frame(&mut b).unwrap();
            write_frame(&mut b, &reply).unwrap();
            req
        });
        (Client::handshake(a).unwrap(), daemon)
    }

    #[test]
    fn daemon_answers() {
        let req = ReleaseNodesRequest {
            job: 7,
            nodes: "debug002,debug003".into(),
        };
        let ok = ReleaseNodesReply {
            job: 7,
            nodes: "debug[002-003]".into(),
            at: 5_000,
            next_step: 3,
        };
        let (mut c, daemon) = fake_daemon(Response::NodesReleased(ok.clone()));
        assert_eq!(release(&mut c, req.clone()).unwrap(), ok);
        assert_eq!(daemon.join().unwrap(), Request::ReleaseNodes(req.clone()));

        let refusal = ErrorReply::new(
            ErrorKind::InvalidState,
            "job 7 is not releasing nodes (step 2/3 is running)",
        );
        let (mut c, _) = fake_daemon(Response::Error(refusal));
        let e = release(&mut c, req.clone()).unwrap_err();
        assert_eq!(
            e.to_string(),
            "job 7 is not releasing nodes (step 2/3 is running)"
        );

        let (mut c, _) = fake_daemon(Response::Jobs(vec![]));
        assert!(matches!(
            release(&mut c, req),
            Err(ClientError::Unexpected {
                request: "release-nodes",
                ..
            })
        ));
    }

    #[test]
    fn help_says_when_to_use_it() {
        let help = ReleaseCli::command().render_help().to_string();
        for word in [
            "ESCHED_STEP_STATE=releasing",
            "ESCHED_RELEASE_COUNT",
            "ESCHED_RELEASE_DEFAULT",
            "second call replaces",
            "until the step ends",
        ] {
            assert!(help.contains(word), "{word} missing from:\n{help}");
        }
    }
}

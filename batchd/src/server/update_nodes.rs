//! `UpdateNodes` (`econtrol update NodeName=… State=… Reason=…`, scontrol's node update): root
//! or batchd's user takes nodes out of service (DOWN, DRAIN) or back (RESUME, UNDRAIN).

use std::sync::Arc;

use batch_proto::{ErrorKind, ErrorReply, NodeAdminState, Response, UpdateNodesRequest};

use super::{Caller, Reply};
use crate::daemon::Daemon;
use crate::nodes::Change;

pub async fn handle(d: &Arc<Daemon>, caller: &Caller, req: UpdateNodesRequest) -> Reply {
    if caller.uid != 0 && caller.uid != d.euid {
        return ErrorReply::new(
            ErrorKind::PermissionDenied,
            "Access/permission denied: only root or batchd's user may change a node's state",
        )
        .into();
    }
    let names = match batch_proto::hostlist::expand_at_most(&req.nodes, 100_000) {
        Ok(n) if !n.is_empty() => n,
        Ok(_) => return ErrorReply::new(ErrorKind::InvalidSpec, "no node named").into(),
        Err(e) => return ErrorReply::new(ErrorKind::InvalidSpec, format!("NodeName: {e}")).into(),
    };
    let reason = req.reason.filter(|r| !r.trim().is_empty());
    let change = match (req.state, reason) {
        (NodeAdminState::Down | NodeAdminState::Drain, None) => {
            // scontrol's own refusal.
            return ErrorReply::new(
                ErrorKind::InvalidSpec,
                "You must specify a reason when DOWNING or DRAINING a node. Request denied",
            )
            .into();
        }
        (NodeAdminState::Down | NodeAdminState::Drain, Some(reason)) => Change::Out {
            down: req.state == NodeAdminState::Down,
            reason,
            user: caller.user.clone(),
        },
        (NodeAdminState::Resume, _) => Change::Resume,
        (NodeAdminState::Undrain, _) => Change::Undrain,
    };
    match crate::nodes::set(d, &names, change).await {
        Ok(stop) => {
            tracing::info!(nodes = %req.nodes, state = ?req.state, by = %caller.user, "node state set");
            for id in stop {
                crate::hosts::stop_job(d, id).await;
            }
            Response::NodesUpdated(names).into()
        }
        Err(e) => ErrorReply::new(ErrorKind::InvalidSpec, e).into(),
    }
}

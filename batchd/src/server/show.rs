//! `ShowJob`: one job, active or finished.

use std::sync::Arc;

use batch_proto::ErrorReply;

use super::{internal, Reply};
use crate::daemon::Daemon;
use crate::launch::now_ms;

pub async fn handle(d: &Arc<Daemon>, id: u64) -> Reply {
    let active = {
        let core = d.core();
        core.job(id).map(|a| {
            let reason = core.reason_of(now_ms(), id);
            crate::view::active_info(&core, &a.rec, reason)
        })
    };
    if let Some(mut info) = active {
        info.slurm_allocations = d.slurm_allocations_text(id);
        return Reply::Jobs(vec![info]);
    }
    match d.store.read(move |c| crate::store::job_by_id(c, id)).await {
        Ok(Some(r)) => Reply::Jobs(vec![crate::view::record_info(&r)]),
        Ok(None) => ErrorReply::invalid_job(id).into(),
        Err(e) => internal(e),
    }
}

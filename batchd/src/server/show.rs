//! `ShowJob`: one job, active or finished.

use std::sync::Arc;

use batch_proto::ErrorReply;

use super::{internal, Reply};
use crate::daemon::Daemon;
use crate::launch::now_ms;

pub async fn handle(d: &Arc<Daemon>, id: u64) -> Reply {
    {
        let core = d.core();
        if let Some(a) = core.job(id) {
            let reason = core.reason_of(now_ms(), id);
            return Reply::Jobs(vec![crate::view::active_info(&core, &a.rec, reason)]);
        }
    }
    match d.store.read(move |c| crate::store::job_by_id(c, id)).await {
        Ok(Some(r)) => Reply::Jobs(vec![crate::view::record_info(&r)]),
        Ok(None) => ErrorReply::invalid_job(id).into(),
        Err(e) => internal(e),
    }
}

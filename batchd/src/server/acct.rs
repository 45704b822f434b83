//! `Acct`: finished jobs from the database, by end time.

use std::sync::Arc;

use batch_proto::AcctRequest;

use super::{internal, Reply};
use crate::daemon::Daemon;

pub async fn handle(d: &Arc<Daemon>, req: AcctRequest) -> Reply {
    let (since, until) = (req.since, req.until);
    let span = req.filter.prepare().id_span();
    match d
        .store
        .read(move |c| crate::store::finished_between(c, since, until, span))
        .await
    {
        Ok(done) => {
            let filter = req.filter.prepare();
            Reply::Jobs(
                done.iter()
                    .filter(|r| filter.selects(r.filter_key()))
                    .map(crate::view::record_info)
                    .collect(),
            )
        }
        Err(e) => internal(e),
    }
}

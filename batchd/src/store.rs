//! Durable state in SQLite (WAL), owned by one writer thread.
//!
//! Every change goes through the writer thread's queue; whatever has queued up while the
//! previous transaction committed goes into the next one (group commit), so many concurrent
//! submissions share one fsync. A submission is acknowledged only after its transaction has
//! committed. Reads run on the same thread, after the writes queued before them.

use std::collections::HashMap;
use std::path::Path;
use std::sync::mpsc;
use std::thread::JoinHandle;

use batch_proto::JobState;
use rusqlite::{params, Connection, OptionalExtension, Row};
use tokio::sync::oneshot;

use crate::config::Sync;
use crate::convert::StoredShape;
use crate::record::JobRecord;

/// Schema version kept in SQLite's `user_version`; a newer file is refused, an older one
/// migrated.
///
/// - 1: the `jobs` table.
/// - 2 (co-allocated jobs): same columns; rows may hold the state `PREEMPTED` and
///   specs with a `coallocated` shape, a `deadline` and `requeue`, which a version-1 batchd
///   cannot read, hence the bump: such a batchd refuses the file as a whole instead of
///   failing row by row. Migrating 1 → 2 changes no row: a version-1 spec reads as a job
///   without deadline that is not requeued (the new fields' defaults).
/// - 3 (job steps): a column `extra`, JSON of [`crate::record::Extra`] (the job's steps and
///   restart count), NULL when empty; added by the migration, so older rows read as jobs
///   without steps.
pub const SCHEMA_VERSION: i64 = 3;

/// Largest number of queued operations folded into one transaction.
const MAX_BATCH: usize = 4096;

/// A store failure.
#[derive(Clone, Debug, thiserror::Error)]
pub enum StoreError {
    /// SQLite said no.
    #[error("database error: {0}")]
    Db(String),
    /// A row that does not decode.
    #[error("job {id} in the database cannot be read: {reason}")]
    Corrupt {
        /// The row.
        id: u64,
        /// Why.
        reason: String,
    },
    /// The writer thread is gone.
    #[error("the database writer has stopped")]
    Closed,
    /// A database written by a newer batchd.
    #[error("database schema version {found} is newer than this batchd's {SCHEMA_VERSION}")]
    TooNew {
        /// The file's version.
        found: i64,
    },
}

impl From<rusqlite::Error> for StoreError {
    fn from(e: rusqlite::Error) -> Self {
        StoreError::Db(e.to_string())
    }
}

/// What the store held at start-up.
#[derive(Debug, Default)]
pub struct Loaded {
    /// Pending, running and completing jobs, by id.
    pub active: Vec<JobRecord>,
    /// The final state of every finished job (dependencies need them).
    pub finished: HashMap<u64, JobState>,
    /// The next job id: one more than any id ever stored.
    pub next_id: u64,
    /// Rows that could not be read; left in the database untouched.
    pub unreadable: Vec<StoreError>,
}

type Reply = oneshot::Sender<Result<(), StoreError>>;

enum Op {
    Put(Box<JobRecord>, Option<Reply>),
    Read(Box<dyn FnOnce(&Connection) + Send>),
}

/// Handle on the writer thread; cheap to clone.
#[derive(Clone)]
pub struct Store {
    tx: mpsc::Sender<Op>,
    /// The writer's transactions, timed from `BEGIN` to `COMMIT` (`econtrol show stats`).
    commits: std::sync::Arc<crate::stats::Timings>,
}

/// Joins the writer thread when the last handle is dropped and the queue has drained.
pub struct StoreThread(Option<JoinHandle<()>>);

impl StoreThread {
    /// Waits for the writer to finish the queued work (all `Store` handles must be gone).
    pub fn join(mut self) {
        if let Some(h) = self.0.take() {
            let _ = h.join();
        }
    }
}

const COLUMNS: &str = "id, uid, gid, user, name, spec, submit, state, held, start, end_, \
    exit_code, signal, pool, node_list, nodes, shape, detail, stdout, stderr, extra";

fn open_connection(path: &Path, sync: Sync) -> Result<Connection, StoreError> {
    let conn = Connection::open(path)?;
    conn.pragma_update(None, "journal_mode", "WAL")?;
    conn.pragma_update(
        None,
        "synchronous",
        match sync {
            Sync::Full => "FULL",
            Sync::Normal => "NORMAL",
        },
    )?;
    conn.busy_timeout(std::time::Duration::from_secs(5))?;
    let version: i64 = conn.pragma_query_value(None, "user_version", |r| r.get(0))?;
    if version > SCHEMA_VERSION {
        return Err(StoreError::TooNew { found: version });
    }
    conn.execute_batch(
        "CREATE TABLE IF NOT EXISTS jobs (
            id INTEGER PRIMARY KEY,
            uid INTEGER NOT NULL, gid INTEGER NOT NULL, user TEXT NOT NULL,
            name TEXT NOT NULL, spec TEXT NOT NULL, submit INTEGER NOT NULL,
            state TEXT NOT NULL, held INTEGER NOT NULL,
            start INTEGER, end_ INTEGER, exit_code INTEGER, signal INTEGER,
            pool TEXT, node_list TEXT, nodes INTEGER NOT NULL, shape TEXT, detail TEXT,
            stdout TEXT NOT NULL, stderr TEXT NOT NULL, extra TEXT);
         CREATE INDEX IF NOT EXISTS jobs_active ON jobs(id)
            WHERE state IN ('PENDING', 'RUNNING', 'COMPLETING');
         CREATE INDEX IF NOT EXISTS jobs_end ON jobs(end_);",
    )?;
    let has_extra = conn
        .prepare("SELECT 1 FROM pragma_table_info('jobs') WHERE name = 'extra'")?
        .exists([])?;
    if !has_extra {
        conn.execute_batch("ALTER TABLE jobs ADD COLUMN extra TEXT")?;
    }
    conn.pragma_update(None, "user_version", SCHEMA_VERSION)?;
    Ok(conn)
}

fn state_text(s: JobState) -> &'static str {
    s.name()
}

fn put(conn: &Connection, r: &JobRecord) -> Result<(), StoreError> {
    let spec = serde_json::to_string(&r.spec).map_err(|e| StoreError::Db(e.to_string()))?;
    let shape = match &r.shape {
        Some(s) => Some(
            serde_json::to_string(&StoredShape::from(s))
                .map_err(|e| StoreError::Db(e.to_string()))?,
        ),
        None => None,
    };
    let extra = crate::record::Extra {
        steps: r.steps.clone(),
        restarts: r.restarts,
    };
    let extra = if extra.is_empty() {
        None
    } else {
        Some(serde_json::to_string(&extra).map_err(|e| StoreError::Db(e.to_string()))?)
    };
    let mut stmt = conn.prepare_cached(&format!(
        "INSERT OR REPLACE INTO jobs ({COLUMNS}) VALUES \
         (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21)"
    ))?;
    stmt.execute(params![
        r.id as i64,
        r.uid,
        r.gid,
        r.user,
        r.spec.name,
        spec,
        r.submit as i64,
        state_text(r.state),
        r.held,
        r.start.map(|t| t as i64),
        r.end.map(|t| t as i64),
        r.exit_code,
        r.signal,
        r.pool,
        r.node_list,
        r.nodes,
        shape,
        r.detail,
        r.stdout,
        r.stderr,
        extra,
    ])?;
    Ok(())
}

fn read_row(row: &Row<'_>) -> Result<Result<JobRecord, StoreError>, rusqlite::Error> {
    let id = row.get::<_, i64>(0)? as u64;
    let bad = |reason: String| StoreError::Corrupt { id, reason };
    let spec: String = row.get(5)?;
    let state: String = row.get(7)?;
    let shape: Option<String> = row.get(16)?;
    let spec = match serde_json::from_str(&spec) {
        Ok(s) => s,
        Err(e) => return Ok(Err(bad(format!("spec: {e}")))),
    };
    let state = match state.parse::<JobState>() {
        Ok(s) => s,
        Err(e) => return Ok(Err(bad(e.to_string()))),
    };
    let shape = match shape
        .map(|s| serde_json::from_str::<StoredShape>(&s))
        .transpose()
    {
        Ok(s) => s.map(sched_core::Shape::from),
        Err(e) => return Ok(Err(bad(format!("shape: {e}")))),
    };
    let extra: Option<String> = row.get(20)?;
    let extra = match extra
        .map(|s| serde_json::from_str::<crate::record::Extra>(&s))
        .transpose()
    {
        Ok(e) => e.unwrap_or_default(),
        Err(e) => return Ok(Err(bad(format!("extra: {e}")))),
    };
    Ok(Ok(JobRecord {
        id,
        uid: row.get(1)?,
        gid: row.get(2)?,
        user: row.get(3)?,
        spec,
        submit: row.get::<_, i64>(6)? as u64,
        state,
        held: row.get(8)?,
        start: row.get::<_, Option<i64>>(9)?.map(|t| t as u64),
        end: row.get::<_, Option<i64>>(10)?.map(|t| t as u64),
        exit_code: row.get(11)?,
        signal: row.get(12)?,
        pool: row.get(13)?,
        node_list: row.get(14)?,
        nodes: row.get(15)?,
        shape,
        detail: row.get(17)?,
        stdout: row.get(18)?,
        stderr: row.get(19)?,
        steps: extra.steps,
        restarts: extra.restarts,
    }))
}

fn load(conn: &Connection) -> Result<Loaded, StoreError> {
    let mut out = Loaded::default();
    let mut stmt = conn.prepare(&format!(
        "SELECT {COLUMNS} FROM jobs WHERE state IN ('PENDING', 'RUNNING', 'COMPLETING') ORDER BY id"
    ))?;
    let rows = stmt.query_map([], read_row)?;
    for r in rows {
        match r? {
            Ok(rec) => out.active.push(rec),
            Err(e) => out.unreadable.push(e),
        }
    }
    let mut stmt = conn.prepare(
        "SELECT id, state FROM jobs WHERE state NOT IN ('PENDING', 'RUNNING', 'COMPLETING')",
    )?;
    let rows = stmt.query_map([], |r| {
        Ok((r.get::<_, i64>(0)? as u64, r.get::<_, String>(1)?))
    })?;
    for r in rows {
        let (id, st) = r?;
        if let Ok(st) = st.parse() {
            out.finished.insert(id, st);
        }
    }
    let max: Option<i64> = conn
        .query_row("SELECT max(id) FROM jobs", [], |r| r.get(0))
        .optional()?
        .flatten();
    out.next_id = max.map_or(1, |m| m as u64 + 1);
    Ok(out)
}

/// Finished jobs that ended in `[since, until)`, by end time; with `ids`, only those whose id
/// is in that span (inclusive): a query by job id reads its span, not the whole history.
pub fn finished_between(
    conn: &Connection,
    since: Option<u64>,
    until: Option<u64>,
    ids: Option<(u64, u64)>,
) -> Result<Vec<JobRecord>, StoreError> {
    // With an id span, `+end_` keeps SQLite off the end-time index (which would walk the whole
    // history in end order): the span is read by rowid and the few rows sorted after.
    let by_end = if ids.is_some() { "+end_" } else { "end_" };
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM jobs WHERE state NOT IN ('PENDING', 'RUNNING', 'COMPLETING') \
         AND {by_end} >= ?1 AND {by_end} < ?2 AND id >= ?3 AND id <= ?4 ORDER BY end_, id"
    ))?;
    let clip = |t: u64| t.min(i64::MAX as u64) as i64;
    let lo = clip(since.unwrap_or(0));
    let hi = clip(until.unwrap_or(u64::MAX));
    let (first, last) = ids.unwrap_or((0, u64::MAX));
    let rows = stmt.query_map(params![lo, hi, clip(first), clip(last)], read_row)?;
    let mut out = Vec::new();
    for r in rows {
        match r? {
            Ok(rec) => out.push(rec),
            Err(e) => tracing::warn!("{e}"),
        }
    }
    Ok(out)
}

/// One job by id, whatever its state.
pub fn job_by_id(conn: &Connection, id: u64) -> Result<Option<JobRecord>, StoreError> {
    let mut stmt = conn.prepare_cached(&format!("SELECT {COLUMNS} FROM jobs WHERE id = ?1"))?;
    match stmt.query_row(params![id as i64], read_row).optional()? {
        None => Ok(None),
        Some(r) => r.map(Some),
    }
}

impl Store {
    /// Opens (or creates) the database at `path`, loads what is active and starts the writer.
    pub fn open(path: &Path, sync: Sync) -> Result<(Store, StoreThread, Loaded), StoreError> {
        let conn = open_connection(path, sync)?;
        let loaded = load(&conn)?;
        let (tx, rx) = mpsc::channel::<Op>();
        let commits = std::sync::Arc::new(crate::stats::Timings::default());
        let timed = std::sync::Arc::clone(&commits);
        let handle = std::thread::Builder::new()
            .name("batchd-store".into())
            .spawn(move || writer(conn, rx, &timed))
            .map_err(|e| StoreError::Db(format!("cannot start the writer thread: {e}")))?;
        Ok((Store { tx, commits }, StoreThread(Some(handle)), loaded))
    }

    /// The writer's transactions so far and how long they took.
    pub fn commit_times(&self) -> batch_proto::Timing {
        self.commits.summary()
    }

    /// Stores `rec` and waits until it is committed.
    pub async fn commit(&self, rec: JobRecord) -> Result<(), StoreError> {
        let (tx, rx) = oneshot::channel();
        self.tx
            .send(Op::Put(Box::new(rec), Some(tx)))
            .map_err(|_| StoreError::Closed)?;
        rx.await.map_err(|_| StoreError::Closed)?
    }

    /// Stores `recs` in order and waits until each is committed: many jobs changed by one
    /// request share the group commit instead of waiting for one transaction each.
    pub async fn commit_all(
        &self,
        recs: impl IntoIterator<Item = JobRecord>,
    ) -> Result<(), StoreError> {
        let mut waits = Vec::new();
        for rec in recs {
            let (tx, rx) = oneshot::channel();
            self.tx
                .send(Op::Put(Box::new(rec), Some(tx)))
                .map_err(|_| StoreError::Closed)?;
            waits.push(rx);
        }
        for rx in waits {
            rx.await.map_err(|_| StoreError::Closed)??;
        }
        Ok(())
    }

    /// Queues `rec` at once and returns the wait for its commit: a change made under the core
    /// lock is queued under it too, so that no later change of the job (its end, say) is
    /// stored before it and overwritten by it.
    pub fn enqueue(
        &self,
        rec: JobRecord,
    ) -> impl std::future::Future<Output = Result<(), StoreError>> {
        let (tx, rx) = oneshot::channel();
        let sent = self.tx.send(Op::Put(Box::new(rec), Some(tx)));
        async move {
            sent.map_err(|_| StoreError::Closed)?;
            rx.await.map_err(|_| StoreError::Closed)?
        }
    }

    /// Stores `rec` without waiting; a failure is logged.
    pub fn write(&self, rec: JobRecord) {
        if self.tx.send(Op::Put(Box::new(rec), None)).is_err() {
            tracing::error!("database writer has stopped; a job update is lost");
        }
    }

    /// Runs `f` on the database thread after every write queued before it.
    pub async fn read<T: Send + 'static>(
        &self,
        f: impl FnOnce(&Connection) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, StoreError> {
        let (tx, rx) = oneshot::channel();
        let op = Op::Read(Box::new(move |c| {
            let _ = tx.send(f(c));
        }));
        self.tx.send(op).map_err(|_| StoreError::Closed)?;
        rx.await.map_err(|_| StoreError::Closed)?
    }
}

fn writer(conn: Connection, rx: mpsc::Receiver<Op>, commits: &crate::stats::Timings) {
    let mut pending: Vec<Op> = Vec::new();
    while let Ok(first) = rx.recv() {
        pending.push(first);
        while pending.len() < MAX_BATCH {
            match rx.try_recv() {
                Ok(op) => pending.push(op),
                Err(_) => break,
            }
        }
        let mut writes: Vec<(Box<JobRecord>, Option<Reply>)> = Vec::new();
        for op in pending.drain(..) {
            match op {
                Op::Put(r, reply) => writes.push((r, reply)),
                Op::Read(f) => {
                    flush(&conn, &mut writes, commits);
                    f(&conn);
                }
            }
        }
        flush(&conn, &mut writes, commits);
    }
    // Every handle is gone: the queue is drained, so everything acknowledged is committed.
    if let Err(e) = conn.pragma_update(None, "wal_checkpoint", "TRUNCATE") {
        tracing::debug!("checkpoint at close: {e}");
    }
}

/// Commits `writes` in one transaction and answers every waiter.
fn flush(
    conn: &Connection,
    writes: &mut Vec<(Box<JobRecord>, Option<Reply>)>,
    commits: &crate::stats::Timings,
) {
    if writes.is_empty() {
        return;
    }
    let began = std::time::Instant::now();
    let result = (|| -> Result<(), StoreError> {
        conn.execute_batch("BEGIN IMMEDIATE")?;
        for (r, _) in writes.iter() {
            if let Err(e) = put(conn, r) {
                let _ = conn.execute_batch("ROLLBACK");
                return Err(e);
            }
        }
        if let Err(e) = conn.execute_batch("COMMIT") {
            let _ = conn.execute_batch("ROLLBACK");
            return Err(e.into());
        }
        Ok(())
    })();
    commits.record(began.elapsed());
    if let Err(e) = &result {
        tracing::error!(jobs = writes.len(), "database commit failed: {e}");
    }
    for (_, reply) in writes.drain(..) {
        if let Some(reply) = reply {
            let _ = reply.send(result.clone());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use batch_proto::JobSpec;

    pub(crate) fn record(id: u64, state: JobState) -> JobRecord {
        JobRecord {
            id,
            uid: 1000,
            gid: 1000,
            user: "u".into(),
            spec: JobSpec::new("#!/bin/sh\ntrue\n", "/tmp", 1, 60_000),
            submit: id * 10,
            state,
            held: false,
            start: None,
            end: if state.is_finished() {
                Some(id * 10 + 5)
            } else {
                None
            },
            exit_code: None,
            signal: None,
            pool: None,
            node_list: None,
            nodes: 0,
            shape: None,
            detail: None,
            stdout: "/tmp/o".into(),
            stderr: "/tmp/o".into(),
            steps: Vec::new(),
            restarts: 0,
        }
    }

    #[tokio::test]
    async fn committed_jobs_come_back_after_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db.sqlite");
        {
            let (store, thread, loaded) = Store::open(&path, Sync::Full).unwrap();
            assert_eq!(loaded.next_id, 1);
            let mut futs = Vec::new();
            for id in 1..=50 {
                let st = if id % 5 == 0 {
                    JobState::Completed
                } else {
                    JobState::Pending
                };
                futs.push(store.commit(record(id, st)));
            }
            for f in futs {
                f.await.unwrap();
            }
            let mut r = record(3, JobState::Running);
            r.shape = Some(sched_core::Shape::rigid(sched_core::PoolId(0), 1, 5));
            store.commit(r).await.unwrap();
            let got = store.read(|c| job_by_id(c, 3)).await.unwrap().unwrap();
            assert_eq!(got.state, JobState::Running);
            let acct = store
                .read(|c| finished_between(c, None, None, None))
                .await
                .unwrap();
            assert_eq!(acct.len(), 10);
            drop(store);
            thread.join();
        }
        let (_s, _t, loaded) = Store::open(&path, Sync::Normal).unwrap();
        assert_eq!(loaded.next_id, 51);
        assert_eq!(loaded.active.len(), 40);
        assert!(loaded.active.windows(2).all(|w| w[0].id < w[1].id));
        assert_eq!(loaded.finished.len(), 10);
        assert_eq!(
            loaded.active.iter().find(|r| r.id == 3).unwrap().state,
            JobState::Running
        );
    }

    #[tokio::test]
    async fn a_version_1_database_opens_and_keeps_its_jobs() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db.sqlite");
        {
            let (store, thread, _) = Store::open(&path, Sync::Full).unwrap();
            store.commit(record(1, JobState::Pending)).await.unwrap();
            store.commit(record(2, JobState::Completed)).await.unwrap();
            drop(store);
            thread.join();
        }
        // As version 1 wrote it: user_version 1 and a spec without the new fields.
        let c = Connection::open(&path).unwrap();
        let spec: String = c
            .query_row("SELECT spec FROM jobs WHERE id = 1", [], |r| r.get(0))
            .unwrap();
        let mut v: serde_json::Value = serde_json::from_str(&spec).unwrap();
        let o = v.as_object_mut().unwrap();
        o.remove("deadline");
        o.remove("requeue");
        c.execute(
            "UPDATE jobs SET spec = ?1 WHERE id = 1",
            [serde_json::to_string(&v).unwrap()],
        )
        .unwrap();
        c.execute_batch("ALTER TABLE jobs DROP COLUMN extra")
            .unwrap();
        c.pragma_update(None, "user_version", 1).unwrap();
        drop(c);
        let (_s, _t, loaded) = Store::open(&path, Sync::Full).unwrap();
        assert_eq!(loaded.active.len(), 1);
        assert!(loaded.unreadable.is_empty());
        let r = &loaded.active[0];
        assert_eq!((r.spec.deadline, r.spec.requeue), (None, false));
        assert!(r.steps.is_empty());
        assert_eq!(loaded.finished.get(&2), Some(&JobState::Completed));
        let c = Connection::open(&path).unwrap();
        let v: i64 = c
            .pragma_query_value(None, "user_version", |r| r.get(0))
            .unwrap();
        assert_eq!(v, SCHEMA_VERSION);
    }

    #[tokio::test]
    async fn steps_and_restarts_are_stored() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db.sqlite");
        let mut r = record(1, JobState::Running);
        r.restarts = 2;
        r.steps.push(batch_proto::JobStep {
            id: batch_proto::StepId::Number(0),
            name: "hostname".into(),
            state: JobState::Completed,
            start: 5,
            end: Some(9),
            node_list: "n[1-2]".into(),
            nodes: 2,
            tasks: 4,
            cpus_per_task: 1,
            exit_code: Some(0),
            signal: Some(0),
            usage: Some(batch_proto::Usage {
                max_rss_kib: 1024,
                user_ms: 20,
                system_ms: 3,
            }),
        });
        {
            let (store, thread, _) = Store::open(&path, Sync::Full).unwrap();
            store.commit(r.clone()).await.unwrap();
            drop(store);
            thread.join();
        }
        let (_s, _t, loaded) = Store::open(&path, Sync::Full).unwrap();
        assert_eq!(loaded.active, vec![r]);
    }

    #[tokio::test]
    async fn preempted_and_coallocated_jobs_are_stored() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db.sqlite");
        {
            let (store, thread, _) = Store::open(&path, Sync::Full).unwrap();
            let mut r = record(1, JobState::Pending);
            r.spec.shape = batch_proto::JobShape::CoAllocated {
                components: vec![2, 3],
                time_limit: 60_000,
            };
            r.spec.deadline = Some(123_456);
            store.commit(r).await.unwrap();
            let mut r = record(2, JobState::Preempted);
            r.spec.requeue = true;
            r.detail = Some("preempted".into());
            store.commit(r).await.unwrap();
            drop(store);
            thread.join();
        }
        let (store, _t, loaded) = Store::open(&path, Sync::Full).unwrap();
        assert_eq!(loaded.active[0].spec.deadline, Some(123_456));
        assert_eq!(loaded.finished.get(&2), Some(&JobState::Preempted));
        let got = store.read(|c| job_by_id(c, 2)).await.unwrap().unwrap();
        assert!(got.spec.requeue);
    }

    #[test]
    fn newer_schema_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db.sqlite");
        let c = Connection::open(&path).unwrap();
        c.pragma_update(None, "user_version", SCHEMA_VERSION + 1)
            .unwrap();
        drop(c);
        assert!(matches!(
            Store::open(&path, Sync::Full),
            Err(StoreError::TooNew { .. })
        ));
    }
}

//! The discrete-event run of one workload under CooRM or the OAR-like baseline (§IV-A).
//!
//! Events at one instant are handled in this order: arrivals (subscribe + first request),
//! ends (`done`), fair-start releases, launcher timers; then, if the policy is due at that
//! instant, one pass. The policy is due at the first instant ≥ the triggering event and ≥ the
//! previous run + the re-policy interval (§III-C: "run at most once every re-policy
//! interval"; the triggers are the paper's `request` and `done`, plus the fair-start releases
//! and the plan's `wake_at`, at which reservations start).
//!
//! **CooRM**: every application has a launcher that subscribes at its arrival; at each pass
//! the launchers get their views in priority (subscribe) order; a launcher is notified only
//! when its view changed (a CAP that is the previous one cut at `now` is no change), once per
//! changed pool (`changeNotify`). An instant launcher answers inside the pass (§IV-A: "the
//! simulation time is not advanced"); a launcher with an adaptation delay answers `delay`
//! later, from the latest view it got by then, and its new request triggers the policy.
//! Memoisation: a launcher computes a selection only for a view it has not seen; every
//! selection is counted as one **computed configuration**.
//!
//! **OAR-like**: each application submits every configuration it can run with (rigid: its
//! host count on each pool; simple-moldable: 1 … n_H − 1 hosts on each pool) and the RMS picks
//! the earliest-completing one at each pass (`esched_coorm::Ask::Configs`); every
//! configuration enumerated by the RMS at every pass is a computed configuration. CEM
//! applications cannot be enumerated (§IV-A: (n_H + 1)^n_C − 1 configurations): the baseline
//! refuses workloads that contain them.
//!
//! The fair-start delay is the driver's (docs/coorm.md): an ended job's hosts stay held until
//! `end + fair_start`, as a running hold in the snapshot, for both systems.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};

use esched_coorm::pass::{pass, Ask, Config, Entry, Planned};
use esched_coorm::select;
use sched_core::{
    CoAllocated, Component, Duration, JobId, PoolId, PoolSteps, RNone, RSome, Request, Running,
    Shape, Snapshot, Time, View, FOREVER,
};

use super::cem;
use super::messages::{self, Size};
use super::platform::Platform;
use super::workload::{App, Kind};

/// Which RMS.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// CooRM with launchers.
    Coorm,
    /// The OAR-like baseline.
    Oar,
}

/// The parameters of a run.
#[derive(Clone, Debug, PartialEq)]
pub struct RunParams {
    /// Which RMS.
    pub mode: Mode,
    /// Re-policy interval, ms (§IV-A: 1 s).
    pub repolicy: Duration,
    /// Fair-start delay, ms (§IV-A: 5 s).
    pub fair_start: Duration,
    /// Adaptation delay of the CEM launchers, ms (0: instant; §IV-C).
    pub cem_delay: Duration,
}

impl RunParams {
    /// §IV-A's settings for `mode`: re-policy 1 s, fair-start 5 s, instant launchers.
    pub fn paper(mode: Mode) -> Self {
        RunParams {
            mode,
            repolicy: 1000,
            fair_start: 5000,
            cem_delay: 0,
        }
    }
}

/// One application's outcome.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AppResult {
    /// The application's id.
    pub id: u64,
    /// Arrival, ms.
    pub submit: Time,
    /// Start, ms.
    pub start: Time,
    /// End, ms.
    pub end: Time,
    /// `(pool id, hosts)` it ran on.
    pub parts: Vec<(u32, u32)>,
}

/// What a run measured.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RunStats {
    /// Per application, in id order.
    pub results: Vec<AppResult>,
    /// Computed configurations (see the module docs): for the baseline, every configuration
    /// the RMS evaluated, once per pass that evaluated it.
    pub computed_configs: u64,
    /// Computed configurations, each counted once: for the baseline the configurations the
    /// applications submitted (whatever the passes that evaluated them); for CooRM the same as
    /// `computed_configs`, since a launcher's selection is computed once per view and the RMS
    /// evaluates nothing.
    pub submitted_configs: u64,
    /// Policy passes.
    pub passes: u64,
    /// Views sent (launchers notified).
    pub notifications: u64,
    /// Messages exchanged.
    pub messages: u64,
    /// Their total size.
    pub bytes: Size,
    /// Simulated time at the last end, ms.
    pub makespan: Time,
}

/// Why a run could not be done.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum CoormSimError {
    /// The baseline cannot enumerate CEM configurations.
    #[error("the OAR-like baseline cannot run CEM applications (their configurations cannot be enumerated, §IV-A); use W0")]
    CemUnderOar,
    /// An application can never run on this platform.
    #[error("application {0} can never start on this platform (its request exceeds every pool)")]
    NeverStarts(u64),
    /// The policy started more hosts than a pool has: a bug.
    #[error("pool {pool} over-committed at {at} ms: {used} hosts of {size}")]
    OverCommit {
        /// Pool id.
        pool: u32,
        /// When.
        at: Time,
        /// Hosts in use.
        used: u32,
        /// Pool size.
        size: u32,
    },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Ev {
    Arrive(usize),
    End(usize),
    Release(usize),
    Timer(usize),
    Tick,
}

/// When a job started, on what `(pool index, hosts)`, for how long (its walltime).
type Started = (Time, Vec<(usize, u32)>, Duration);

/// Per application state.
#[derive(Clone, Debug, Default)]
struct St {
    ask: Option<Ask>,
    last_view: Option<View>,
    /// Memo of the selection per view seen (hash of the CAPs).
    memo: HashMap<u64, (Ask, Option<Time>)>,
    /// The start the launcher's last selection expected.
    planned: Option<Time>,
    timer: bool,
    started: Option<Started>,
    end: Option<Time>,
}

fn hash_view(v: &View) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    for c in &v.available {
        c.pool.0.hash(&mut h);
        c.start.hash(&mut h);
        c.steps.hash(&mut h);
    }
    h.finish()
}

/// The configurations an application offers the baseline, and a launcher's list for
/// rigid and simple-moldable applications (`None` for CEM).
pub fn configs(p: &Platform, app: &App) -> Option<Vec<Config>> {
    let ms = |s: f64| (s * 1000.0).ceil().max(1.0) as Duration;
    match &app.kind {
        Kind::Rigid { hosts, req, .. } => Some(
            p.pools
                .iter()
                .zip(&p.speed)
                .filter(|(q, _)| *hosts <= q.nodes)
                .map(|(q, sp)| Config {
                    pool: q.id,
                    nodes: *hosts,
                    walltime: ms(req / sp),
                })
                .collect(),
        ),
        Kind::Moldable { work, ratio } => Some(
            p.pools
                .iter()
                .zip(&p.speed)
                .flat_map(|(q, sp)| {
                    (1..q.nodes.max(2)).map(move |k| Config {
                        pool: q.id,
                        nodes: k,
                        walltime: ms(App::amdahl(*work, k) * ratio / sp),
                    })
                })
                .collect(),
        ),
        Kind::Cem { .. } => None,
    }
}

/// The cut of `cap` at `t` (for `t ≥ cap.start`): the same function on `[t, ∞)`.
pub fn cap_from(cap: &PoolSteps, t: Time) -> PoolSteps {
    let mut steps = Vec::new();
    let mut a = cap.start;
    for s in &cap.steps {
        let b = if s.duration == FOREVER {
            Time::MAX
        } else {
            a.saturating_add(s.duration)
        };
        if b > t {
            let d = if s.duration == FOREVER {
                FOREVER
            } else {
                b - a.max(t)
            };
            match steps.last_mut() {
                Some(sched_core::Step { nodes, duration })
                    if *nodes == s.nodes && *duration != FOREVER =>
                {
                    *duration = if d == FOREVER { FOREVER } else { *duration + d };
                }
                _ => steps.push(sched_core::Step::new(d, s.nodes)),
            }
        }
        a = b;
    }
    PoolSteps {
        pool: cap.pool,
        start: t.max(cap.start),
        steps: steps.into(),
    }
}

/// How the driver puts a waiting application in the policy loop: its arrival as its
/// earliest start, its launcher's latest request (none yet: a view only), a view wanted under
/// CooRM.
fn entry(job: JobId, submit: Time, ask: Option<Ask>, coorm: bool) -> Entry {
    Entry {
        job,
        earliest: submit,
        wants_view: coorm,
        ask: ask.unwrap_or(Ask::ViewOnly),
    }
}

/// A waiting application as [`launcher_views`] takes it: its id, arrival and latest request.
#[derive(Clone, Debug, PartialEq)]
pub struct Waiting {
    /// The application's job.
    pub job: JobId,
    /// Its arrival (subscribe), ms.
    pub submit: Time,
    /// Its launcher's latest request; `None` before the first.
    pub ask: Option<Ask>,
}

/// The views the launchers of `waiting` (in priority order) get in one CooRM pass of the
/// driver on `snapshot` (whose `pending` is not read: the driver passes its own entries), when
/// no launcher answers inside the pass. With instant launchers the driver's later views also
/// reflect the earlier launchers' answers within the same pass (§IV-A); batchd's launchers
/// answer between passes (docs/coorm.md).
pub fn launcher_views(snapshot: &Snapshot<'_>, waiting: &[Waiting]) -> Vec<View> {
    let entries: Vec<Entry> = waiting
        .iter()
        .map(|w| entry(w.job, w.submit, w.ask.clone(), true))
        .collect();
    let mut views = Vec::with_capacity(waiting.len());
    pass(snapshot, &entries, |_, v| {
        views.push(v.clone());
        None
    });
    views
}

struct Sim<'a> {
    p: &'a Platform,
    apps: &'a [App],
    params: &'a RunParams,
    st: Vec<St>,
    waiting: Vec<usize>,
    running: Vec<usize>,
    ghosts: Vec<(usize, Time)>,
    events: BinaryHeap<Reverse<(Time, Ev)>>,
    next_run: Option<Time>,
    last_run: Option<Time>,
    used: Vec<u32>,
    stats: RunStats,
}

impl Sim<'_> {
    fn msg(&mut self, s: Size) {
        self.stats.messages += 1;
        self.stats.bytes.add(s);
    }

    fn due(&mut self, t: Time) {
        let t = self
            .last_run
            .map_or(t, |l| t.max(l.saturating_add(self.params.repolicy)));
        if self.next_run.is_none_or(|n| t < n) {
            self.next_run = Some(t);
            self.events.push(Reverse((t, Ev::Tick)));
        }
    }

    fn parts_idx(&self, parts: &[(PoolId, u32)]) -> Vec<(usize, u32)> {
        parts.iter().map(|&(p, n)| (p.0 as usize, n)).collect()
    }

    /// A launcher's selection on `view` (memoised), as a request, and the start it expects.
    fn select(&mut self, a: usize, view: &View, now: Time) -> (Ask, Option<Time>) {
        let key = hash_view(view);
        if let Some(done) = self.st[a].memo.get(&key) {
            return done.clone();
        }
        self.stats.computed_configs += 1;
        self.stats.submitted_configs += 1;
        let app = &self.apps[a];
        let done = match &app.kind {
            Kind::Cem { work } => match cem::select(self.p, *work, view, now) {
                Some((parts, d)) => {
                    let start = select::earliest_all_in_view(view, &parts, d, now);
                    (
                        Ask::Fixed {
                            components: parts,
                            walltime: d,
                        },
                        start,
                    )
                }
                None => (Ask::ViewOnly, None),
            },
            _ => {
                let cfgs = configs(self.p, app).unwrap_or_default();
                match select::earliest_completion(view, &cfgs, now) {
                    Some((k, start)) => (
                        Ask::Fixed {
                            components: vec![(cfgs[k].pool, cfgs[k].nodes)],
                            walltime: cfgs[k].walltime,
                        },
                        Some(start),
                    ),
                    None => (Ask::ViewOnly, None),
                }
            }
        };
        self.st[a].memo.insert(key, done.clone());
        done
    }

    fn send_request(&mut self, a: usize, ask: &Ask) {
        if let Ask::Fixed {
            components,
            walltime,
        } = ask
        {
            let parts = self.parts_idx(components);
            self.msg(messages::request(self.p, &parts, *walltime));
        }
        self.st[a].ask = Some(ask.clone());
    }

    /// The launcher of `a` receives `view` at `now`: notifications, and an instant answer.
    fn on_view(&mut self, a: usize, view: &View, now: Time) -> Option<Ask> {
        let changed: Vec<usize> = match &self.st[a].last_view {
            None => (0..view.available.len()).collect(),
            Some(old) => (0..view.available.len())
                .filter(|&i| cap_from(&old.available[i], now) != view.available[i])
                .collect(),
        };
        // A launcher whose expected start has passed without a start knows its choice is stale
        // even when its view did not change (the policy ran later than that start, held back
        // by the re-policy interval): it chooses again, as the baseline's RMS does at every
        // pass, without any message.
        let stale = self.st[a].planned.is_some_and(|t| t < now);
        if changed.is_empty() && !stale {
            return None;
        }
        if !changed.is_empty() {
            self.stats.notifications += 1;
        }
        for &i in &changed {
            let s = messages::change_notify(self.p, &view.available[i]);
            self.msg(s);
        }
        self.st[a].last_view = Some(view.clone());
        let delayed = matches!(self.apps[a].kind, Kind::Cem { .. }) && self.params.cem_delay > 0;
        if delayed {
            if !self.st[a].timer {
                self.st[a].timer = true;
                self.events
                    .push(Reverse((now + self.params.cem_delay, Ev::Timer(a))));
            }
            return None;
        }
        let (ask, planned) = self.select(a, view, now);
        self.st[a].planned = planned;
        if self.st[a].ask.as_ref() != Some(&ask) {
            self.send_request(a, &ask);
            return Some(ask);
        }
        None
    }

    fn snapshot_running(&self, now: Time) -> Vec<Running> {
        let hold = |a: usize, until: Time| -> Running {
            let (start, parts, _) = self.st[a].started.clone().unwrap_or_default();
            let comps: Vec<Component> = parts
                .iter()
                .map(|&(i, n)| Component {
                    nodes: n,
                    pool: RSome(self.p.pools[i].id),
                })
                .collect();
            Running {
                id: JobId(self.apps[a].id),
                user: 0,
                request: Request::CoAllocated(CoAllocated {
                    components: comps.into(),
                    walltime: until.saturating_sub(start),
                    deadline: RNone,
                }),
                shape: Shape::CoAllocated {
                    pools: parts.iter().map(|&(i, _)| self.p.pools[i].id).collect(),
                },
                start,
                holds: parts
                    .iter()
                    .map(|&(i, n)| PoolSteps::flat(self.p.pools[i].id, now, until.max(now), n))
                    .collect(),
                killable: false,
            }
        };
        let mut out: Vec<Running> = self
            .running
            .iter()
            .map(|&a| {
                let (start, _, est) = self.st[a].started.clone().unwrap_or_default();
                hold(a, start.saturating_add(est))
            })
            .collect();
        out.extend(self.ghosts.iter().map(|&(a, until)| hold(a, until)));
        out
    }

    fn run_pass(&mut self, now: Time) -> Result<(), CoormSimError> {
        self.last_run = Some(now);
        self.next_run = None;
        self.stats.passes += 1;
        let running = self.snapshot_running(now);
        let platform = self.p;
        let snap = Snapshot {
            now,
            pools: &platform.pools,
            running: &running,
            pending: &[],
        };
        let coorm = self.params.mode == Mode::Coorm;
        let entries: Vec<Entry> = self
            .waiting
            .iter()
            .map(|&a| {
                entry(
                    JobId(self.apps[a].id),
                    self.apps[a].submit,
                    self.st[a].ask.clone(),
                    coorm,
                )
            })
            .collect();
        let waiting = self.waiting.clone();
        let out = pass(&snap, &entries, |k, view| {
            if coorm {
                self.on_view(waiting[k], view, now)
            } else {
                None
            }
        });
        self.stats.computed_configs += out.counters.configs;
        let mut still = Vec::with_capacity(waiting.len());
        for (k, planned) in out.planned.iter().enumerate() {
            let a = waiting[k];
            match planned {
                Planned::Placed {
                    start,
                    components,
                    walltime,
                    ..
                } if *start <= now => {
                    let parts = self.parts_idx(components);
                    for &(i, n) in &parts {
                        self.used[i] += n;
                        if self.used[i] > self.p.hosts(i) {
                            return Err(CoormSimError::OverCommit {
                                pool: i as u32,
                                at: now,
                                used: self.used[i],
                                size: self.p.hosts(i),
                            });
                        }
                    }
                    let actual =
                        ((*walltime as f64) * self.apps[a].run_factor()).ceil() as Duration;
                    let actual = actual.min(*walltime);
                    self.msg(messages::start_notify(self.p, &parts));
                    self.st[a].started = Some((now, parts, *walltime));
                    self.events.push(Reverse((now + actual, Ev::End(a))));
                    self.running.push(a);
                }
                _ => still.push(a),
            }
        }
        self.waiting = still;
        if let RSome(w) = out.plan.wake_at {
            self.due(w);
        }
        Ok(())
    }

    fn handle(&mut self, now: Time, ev: Ev) {
        match ev {
            Ev::Arrive(a) => {
                self.waiting.push(a);
                match self.params.mode {
                    Mode::Coorm => {
                        self.msg(messages::subscribe());
                        self.msg(messages::clusters_info(self.p));
                        self.msg(messages::inter_info(self.p));
                    }
                    Mode::Oar => {
                        let cfgs = configs(self.p, &self.apps[a]).unwrap_or_default();
                        self.stats.submitted_configs += cfgs.len() as u64;
                        self.msg(messages::submit_configs(self.p, &cfgs));
                        self.st[a].ask = Some(Ask::Configs(cfgs));
                    }
                }
                self.due(now);
            }
            Ev::End(a) => {
                self.running.retain(|&r| r != a);
                self.st[a].end = Some(now);
                self.msg(messages::done());
                let parts = self.st[a].started.clone().map(|s| s.1).unwrap_or_default();
                if self.params.fair_start > 0 {
                    let until = now + self.params.fair_start;
                    self.ghosts.push((a, until));
                    self.events.push(Reverse((until, Ev::Release(a))));
                } else {
                    for (i, n) in parts {
                        self.used[i] -= n;
                    }
                }
                self.stats.makespan = self.stats.makespan.max(now);
                self.due(now);
            }
            Ev::Release(a) => {
                self.ghosts.retain(|g| g.0 != a);
                let parts = self.st[a].started.clone().map(|s| s.1).unwrap_or_default();
                for (i, n) in parts {
                    self.used[i] -= n;
                }
                self.due(now);
            }
            Ev::Timer(a) => {
                self.st[a].timer = false;
                if self.st[a].started.is_some() {
                    return;
                }
                if let Some(view) = self.st[a].last_view.clone() {
                    let (ask, planned) = self.select(a, &view, now);
                    self.st[a].planned = planned;
                    if self.st[a].ask.as_ref() != Some(&ask) {
                        self.send_request(a, &ask);
                        self.due(now);
                    }
                }
            }
            Ev::Tick => {}
        }
    }
}

/// Runs `apps` (sorted by arrival) on `platform` under `params`.
pub fn run(
    platform: &Platform,
    apps: &[App],
    params: &RunParams,
) -> Result<RunStats, CoormSimError> {
    if params.mode == Mode::Oar && apps.iter().any(|a| matches!(a.kind, Kind::Cem { .. })) {
        return Err(CoormSimError::CemUnderOar);
    }
    let mut sim = Sim {
        p: platform,
        apps,
        params,
        st: vec![St::default(); apps.len()],
        waiting: Vec::new(),
        running: Vec::new(),
        ghosts: Vec::new(),
        events: BinaryHeap::new(),
        next_run: None,
        last_run: None,
        used: vec![0; platform.len()],
        stats: RunStats::default(),
    };
    for (a, app) in apps.iter().enumerate() {
        sim.events.push(Reverse((app.submit, Ev::Arrive(a))));
    }
    while let Some(Reverse((now, _))) = sim.events.peek().copied() {
        while let Some(Reverse((t, ev))) = sim.events.peek().copied() {
            if t != now {
                break;
            }
            sim.events.pop();
            sim.handle(now, ev);
        }
        if sim.next_run == Some(now) {
            sim.run_pass(now)?;
        }
        if sim.events.is_empty() && !sim.waiting.is_empty() {
            return Err(CoormSimError::NeverStarts(apps[sim.waiting[0]].id));
        }
    }
    sim.stats.results = apps
        .iter()
        .zip(&sim.st)
        .map(|(app, st)| {
            let (start, parts, _) = st.started.clone().unwrap_or_default();
            AppResult {
                id: app.id,
                submit: app.submit,
                start,
                end: st.end.unwrap_or(start),
                parts: parts.iter().map(|&(i, n)| (i as u32, n)).collect(),
            }
        })
        .collect();
    Ok(sim.stats)
}

//! sched-abi through its public surface, against real shared libraries built from the test
//! fixtures (`sched-abi/fixtures/test-*`) and the stock policies: every load error with its
//! message, several libraries in one process, and the containment of a panicking and of a
//! cheating policy.
//!
//! The libraries are this crate's dev-dependencies: cargo builds each one's cdylib beside this
//! test, in `target/<profile>/deps/`, before it runs.

mod common {
    use std::path::{Path, PathBuf};

    /// `target/<profile>`: this test runs from `target/<profile>/deps`.
    pub fn profile_dir() -> PathBuf {
        let exe = std::env::current_exe().expect("test executable path");
        exe.parent()
            .and_then(Path::parent)
            .expect("target/<profile>/deps/<test>")
            .to_path_buf()
    }

    /// The built library of plugin `name` (`test-panic` → `deps/libesched_test_panic.so`).
    pub fn plugin(name: &str) -> PathBuf {
        let path = profile_dir()
            .join("deps")
            .join(sched_abi::loader::library_file_name(name));
        assert!(
            path.is_file(),
            "{} not built: is esched-{name} a dev-dependency of sched-abi?",
            path.display()
        );
        path
    }

    pub fn plugin_str(name: &str) -> String {
        plugin(name).to_string_lossy().into_owned()
    }

    /// The one pool most tests run on: `batch`, 4 nodes (the over-commit message names it).
    pub fn batch_pool() -> Vec<sched_core::Pool> {
        vec![sched_core::Pool {
            id: sched_core::PoolId(0),
            name: "batch".into(),
            nodes: 4,
        }]
    }

    /// Runs `f` with the `tracing` output of this thread captured, and returns it.
    pub fn capture_logs<T>(f: impl FnOnce() -> T) -> (T, String) {
        use std::io::Write;
        use std::sync::{Arc, Mutex};

        #[derive(Clone, Default)]
        struct Buf(Arc<Mutex<Vec<u8>>>);
        impl Write for Buf {
            fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
                self.0.lock().unwrap().extend_from_slice(b);
                Ok(b.len())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let buf = Buf::default();
        let writer = buf.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_writer(move || writer.clone())
            .with_ansi(false)
            .with_max_level(tracing::Level::WARN)
            .finish();
        let out = tracing::subscriber::with_default(subscriber, f);
        let text = String::from_utf8_lossy(&buf.0.lock().unwrap()).into_owned();
        (out, text)
    }
}

mod load_errors {
    use super::common::{plugin, plugin_str, profile_dir};
    use sched_abi::{load, LoadError};
    use sched_core::Params;

    fn err(spec: &str, dir: Option<&std::path::Path>, params: &Params) -> LoadError {
        load(spec, dir, params).expect_err("load should fail")
    }

    #[test]
    fn missing_file_names_the_path() {
        let e = err(
            "/nonexistent/dir/libesched_nothing.so",
            None,
            &Params::new(),
        );
        assert!(matches!(e, LoadError::NotFound { .. }), "{e:?}");
        assert_eq!(
            e.to_string(),
            "policy `/nonexistent/dir/libesched_nothing.so` not found: tried /nonexistent/dir/libesched_nothing.so"
        );
    }

    #[test]
    fn missing_name_lists_every_path_tried() {
        let dir = tempfile::tempdir().unwrap();
        let e = err("nosuch", Some(dir.path()), &Params::new());
        let want = dir.path().join("libesched_nosuch.so");
        assert_eq!(
            e.to_string(),
            format!("policy `nosuch` not found: tried {}", want.display())
        );
        // Without a directory: next to the executable, its deps/, and (for a test) above.
        let e = err("nosuch", None, &Params::new());
        let LoadError::NotFound { tried, .. } = &e else {
            panic!("{e:?}")
        };
        assert!(
            tried.contains(&profile_dir().join("libesched_nosuch.so")),
            "{tried:?}"
        );
    }

    #[test]
    fn text_file_named_so_is_not_a_shared_library() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("libesched_fake.so");
        std::fs::write(&path, "this is text, not ELF\n").unwrap();
        let e = err(path.to_str().unwrap(), None, &Params::new());
        assert!(matches!(e, LoadError::NotSharedLibrary { .. }), "{e:?}");
        let msg = e.to_string();
        assert!(
            msg.starts_with(&format!("{}: not a shared library: ", path.display())),
            "{msg}"
        );
        // A directory is not one either.
        let e = err(&format!("{}/", dir.path().display()), None, &Params::new());
        assert!(matches!(e, LoadError::NotSharedLibrary { .. }), "{e:?}");
    }

    #[test]
    fn shared_library_without_root_module_is_not_a_policy() {
        let path = plugin("test-notpolicy");
        let e = err(path.to_str().unwrap(), None, &Params::new());
        assert!(matches!(e, LoadError::NotAPolicy { .. }), "{e:?}");
        let msg = e.to_string();
        assert!(
            msg.starts_with(&format!(
                "{}: a shared library, but not an esched policy: it exports no plugin root module \
                 (looked for esched_policy_root_esched_test_notpolicy, ",
                path.display()
            )),
            "{msg}"
        );
        assert!(
            msg.ends_with("a policy crate ends with `sched_abi::export_policy!(TypeName);`)"),
            "{msg}"
        );
    }

    #[test]
    fn a_library_changed_since_it_was_loaded_needs_a_restart() {
        use std::io::Write;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("libesched_test_panic.so");
        std::fs::copy(plugin("test-panic"), &path).unwrap();
        let spec = path.to_str().unwrap();
        load(spec, None, &Params::new()).expect("first load");
        load(spec, None, &Params::new()).expect("same file again: the mapped copy is reused");
        // A "rebuild": the file's size changes (appending leaves the mapped pages untouched).
        std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap()
            .write_all(b"rebuilt")
            .unwrap();
        let e = err(spec, None, &Params::new());
        assert!(matches!(e, LoadError::Rebuilt { .. }), "{e:?}");
        assert!(
            e.to_string().ends_with(
                "the library changed on disk since this process loaded it; a loaded library is never \
                 unloaded, so the new build is used only after a restart"
            ),
            "{e}"
        );
    }

    #[test]
    fn a_renamed_policy_library_is_still_found() {
        let dir = tempfile::tempdir().unwrap();
        let renamed = dir.path().join("site-greedy.so");
        std::fs::copy(plugin("test-panic"), &renamed).unwrap();
        let p =
            load(renamed.to_str().unwrap(), None, &Params::new()).expect("renamed library loads");
        assert_eq!(p.name(), "test-panic");
    }

    #[test]
    fn abi_version_mismatch_names_both_versions() {
        let path = plugin("test-oldabi");
        let e = err(path.to_str().unwrap(), None, &Params::new());
        assert!(matches!(e, LoadError::AbiMismatch { .. }), "{e:?}");
        let msg = e.to_string();
        assert!(
            msg.starts_with(&format!(
                "{}: ABI mismatch: this host speaks esched policy ABI {}, the plugin speaks 0.9; rebuild",
                path.display(),
                sched_abi::ABI_VERSION
            )),
            "{msg}"
        );
        assert!(
            msg.contains("stays loaded until the process restarts"),
            "{msg}"
        );
    }

    #[test]
    fn layout_mismatch_is_an_abi_mismatch_with_the_difference() {
        let path = plugin("test-badlayout");
        let e = err(path.to_str().unwrap(), None, &Params::new());
        let LoadError::AbiMismatch {
            host,
            plugin,
            detail,
            ..
        } = &e
        else {
            panic!("{e:?}")
        };
        assert_eq!(host, &sched_abi::ABI_VERSION.to_string());
        assert_eq!(plugin, &format!("claims {}.0", sched_abi::ABI_VERSION));
        // The gist of abi_stable's report: where the layouts differ and how.
        assert!(
            detail.starts_with("at ") && detail.contains("expected `"),
            "{detail}"
        );
        assert!(e.to_string().contains("(layouts differ: "), "{e}");
    }

    #[test]
    fn constructor_refusing_a_key_names_it() {
        let params = Params::from_pairs([("colour", "red")]);
        let e = err(&plugin_str("test-panic"), None, &params);
        let LoadError::Params { policy, key, .. } = &e else {
            panic!("{e:?}")
        };
        assert_eq!((policy.as_str(), key.as_str()), ("test-panic", "colour"));
        assert!(
            e.to_string().ends_with(
                ": unknown parameter `colour` (known: panic_in_new, panic_on_call, panic_on_job)"
            ),
            "{e}"
        );

        let params = Params::from_pairs([("panic_on_job", "soon")]);
        let e = err(&plugin_str("test-panic"), None, &params);
        let LoadError::Params { key, .. } = &e else {
            panic!("{e:?}")
        };
        assert_eq!(key, "panic_on_job");
        assert!(
            e.to_string()
                .contains("bad value `soon` for parameter `panic_on_job`"),
            "{e}"
        );
    }

    #[test]
    fn constructor_panic_is_an_error_not_an_abort() {
        let params = Params::from_pairs([("panic_in_new", "true")]);
        let e = err(&plugin_str("test-panic"), None, &params);
        assert!(matches!(e, LoadError::ConstructorPanicked { .. }), "{e:?}");
        assert!(
            e.to_string()
                .contains("constructor panicked: told to panic in the constructor"),
            "{e}"
        );
    }

    #[test]
    fn names_resolve_next_to_the_executable() {
        plugin("test-panic");
        let p = load("test-panic", None, &Params::new()).expect("found by name");
        assert_eq!(p.name(), "test-panic");
        assert_eq!(p.library().abi_version(), sched_abi::ABI_VERSION);
    }
}

mod loading {
    use super::common::{batch_pool, plugin_str};
    use sched_abi::{load, PolicyLibrary};
    use sched_core::{JobId, Params, Pending, Pool, PoolId, RNone, RSome, Request, Snapshot};

    fn snapshot_parts() -> (Vec<Pool>, Vec<Pending>) {
        let pools = batch_pool();
        let pending = (1..=3)
            .map(|i| Pending {
                wants_view: false,
                claimed: Default::default(),
                id: JobId(i),
                user: 0,
                submit: 0,
                earliest_start: 0,
                priority: 0,
                request: Request::rigid(3, 100),
            })
            .collect();
        (pools, pending)
    }

    #[test]
    fn two_policy_libraries_in_one_process() {
        let mut greedy = load(&plugin_str("test-panic"), None, &Params::new()).unwrap();
        let mut cheat = load(&plugin_str("test-overcommit"), None, &Params::new()).unwrap();
        assert_eq!(
            (greedy.name(), cheat.name()),
            ("test-panic", "test-overcommit")
        );
        let (pools, pending) = snapshot_parts();
        let snap = Snapshot {
            now: 10,
            pools: &pools,
            running: &[],
            pending: &pending,
        };
        // Each library answers with its own logic: one job fits, the cheat starts all three.
        assert_eq!(greedy.try_plan(&snap).unwrap().placements.len(), 1);
        assert_eq!(cheat.try_plan(&snap).unwrap().placements.len(), 3);
        // Opening the first again reuses the mapped library and gives an independent instance.
        let lib = PolicyLibrary::open(&plugin_str("test-panic"), None).unwrap();
        let mut again = lib.instantiate(&Params::new()).unwrap();
        assert_eq!(
            again.try_plan(&snap).unwrap(),
            greedy.try_plan(&snap).unwrap()
        );
    }

    #[test]
    fn every_request_kind_crosses_the_boundary() {
        use sched_core::{CoAllocated, Component, MoldConfig, Moldable, Step};
        let mut cheat = load(&plugin_str("test-overcommit"), None, &Params::new()).unwrap();
        let pools = vec![Pool {
            id: PoolId(0),
            name: "a".into(),
            nodes: 64,
        }];
        let reqs = [
            Request::rigid(2, 10),
            Request::Moldable(Moldable {
                pool: RNone,
                configs: sched_core::rvec![MoldConfig {
                    nodes: 4,
                    walltime: 7,
                }],
                model: RNone,
                min_nodes: 1,
                max_nodes: 4,
                weight: 1.0,
            }),
            Request::evolving(vec![Step::new(5, 1), Step::new(5, 3)]),
            Request::CoAllocated(CoAllocated {
                components: sched_core::rvec![
                    Component {
                        nodes: 1,
                        pool: RNone,
                    },
                    Component {
                        nodes: 2,
                        pool: RNone,
                    },
                ],
                walltime: 9,
                deadline: RSome(100),
            }),
        ];
        let pending: Vec<Pending> = reqs
            .iter()
            .enumerate()
            .map(|(i, r)| Pending {
                wants_view: false,
                claimed: Default::default(),
                id: JobId(i as u64),
                user: 1,
                submit: 0,
                earliest_start: 0,
                priority: 0,
                request: r.clone(),
            })
            .collect();
        let snap = Snapshot {
            now: 0,
            pools: &pools,
            running: &[],
            pending: &pending,
        };
        let plan = cheat.try_plan(&snap).unwrap();
        // The plugin saw each request as its rigid form: proof the request arrived intact.
        let got: Vec<_> = plan
            .placements
            .iter()
            .map(|p| match p.shape {
                sched_core::Shape::Rigid {
                    nodes, walltime, ..
                } => (nodes, walltime),
                ref s => panic!("{s:?}"),
            })
            .collect();
        assert_eq!(got, vec![(2, 10), (4, 7), (3, 10), (3, 9)]);
        assert_eq!(sched_core::validate(&snap, &plan), Ok(()));
    }
}

mod containment {
    use super::common::{batch_pool, capture_logs, plugin_str};
    use sched_abi::{load, HostStats, PluginError, PolicyHost};
    use sched_core::{validate, JobId, Params, Pending, Request, Snapshot};

    fn job(id: u64, nodes: u32) -> Pending {
        Pending {
            wants_view: false,
            claimed: Default::default(),
            id: JobId(id),
            user: 0,
            submit: 0,
            earliest_start: 0,
            priority: 0,
            request: Request::rigid(nodes, 100),
        }
    }

    #[test]
    fn a_panic_is_an_error_and_the_instance_is_rebuilt() {
        let params = Params::from_pairs([("panic_on_job", "3")]);
        let mut p = load(&plugin_str("test-panic"), None, &params).unwrap();
        let pools = batch_pool();
        let bad = vec![job(3, 1)];
        let e = p
            .try_plan(&Snapshot {
                now: 0,
                pools: &pools,
                running: &[],
                pending: &bad,
            })
            .unwrap_err();
        let PluginError::Panicked { policy, message } = &e else {
            panic!("{e:?}")
        };
        assert_eq!(policy, "test-panic");
        assert!(
            message.starts_with("job 3 is pending and this policy was told to panic on it (at "),
            "{message}"
        );
        assert!(message.contains("lib.rs"), "{message}");
        let good = vec![job(1, 1)];
        let plan = p
            .try_plan(&Snapshot {
                now: 0,
                pools: &pools,
                running: &[],
                pending: &good,
            })
            .unwrap();
        assert_eq!(plan.placements.len(), 1);
    }

    #[test]
    fn host_keeps_last_valid_plan_after_a_panic_and_goes_on() {
        let params = Params::from_pairs([("panic_on_job", "3")]);
        let mut host = PolicyHost::new(load(&plugin_str("test-panic"), None, &params).unwrap());
        let pools = batch_pool();

        let q1 = vec![job(1, 2), job(2, 4)];
        let s1 = Snapshot {
            now: 0,
            pools: &pools,
            running: &[],
            pending: &q1,
        };
        let p1 = host.plan(&s1);
        assert_eq!(
            p1.placements.iter().map(|p| p.job).collect::<Vec<_>>(),
            vec![JobId(1)]
        );

        // Job 3 arrives and the plugin panics: the host logs it and answers with the last valid
        // plan, moved to now.
        let q2 = vec![job(1, 2), job(2, 4), job(3, 1)];
        let s2 = Snapshot {
            now: 5,
            pools: &pools,
            running: &[],
            pending: &q2,
        };
        let (p2, logs) = capture_logs(|| host.plan(&s2));
        assert_eq!(
            p2.placements
                .iter()
                .map(|p| (p.job, p.start))
                .collect::<Vec<_>>(),
            vec![(JobId(1), 5)]
        );
        assert_eq!(validate(&s2, &p2), Ok(()));
        assert!(logs.contains("ERROR"), "{logs}");
        assert!(
            logs.contains("policy `test-panic` panicked: job 3 is pending and this policy was told to panic on it"),
            "{logs}"
        );
        assert!(logs.contains("keeping its last valid plan"), "{logs}");
        assert_eq!(
            host.stats(),
            HostStats {
                calls: 2,
                panics: 1,
                errors: 0,
                refusals: 0,
                timeouts: 0
            }
        );

        // Job 3 is cancelled: the plugin works again (a fresh instance) and the host goes on.
        let q3 = vec![job(1, 2), job(2, 4)];
        let s3 = Snapshot {
            now: 6,
            pools: &pools,
            running: &[],
            pending: &q3,
        };
        let p3 = host.plan(&s3);
        assert_eq!(
            p3.placements
                .iter()
                .map(|p| (p.job, p.start))
                .collect::<Vec<_>>(),
            vec![(JobId(1), 6)]
        );
        assert_eq!(
            host.stats(),
            HostStats {
                calls: 3,
                panics: 1,
                errors: 0,
                refusals: 0,
                timeouts: 0
            }
        );
    }

    #[test]
    fn host_refuses_an_over_committing_plan_naming_plugin_and_violation() {
        let mut host =
            PolicyHost::new(load(&plugin_str("test-overcommit"), None, &Params::new()).unwrap());
        let pools = batch_pool();
        let fits = vec![job(1, 3)];
        let s1 = Snapshot {
            now: 0,
            pools: &pools,
            running: &[],
            pending: &fits,
        };
        assert_eq!(host.plan(&s1).placements.len(), 1);

        let q = vec![job(1, 3), job(2, 3)];
        let s2 = Snapshot {
            now: 7,
            pools: &pools,
            running: &[],
            pending: &q,
        };
        let (plan, logs) = capture_logs(|| host.plan(&s2));
        assert!(
            logs.contains(
                "policy `test-overcommit`: plan refused: pool batch over-committed at 7 ms: 6 nodes in use of 4"
            ),
            "{logs}"
        );
        assert_eq!(
            host.stats(),
            HostStats {
                calls: 2,
                panics: 0,
                errors: 0,
                refusals: 1,
                timeouts: 0
            }
        );
        assert_eq!(
            host.last_failure().map(|m| m.contains("over-committed")),
            Some(true)
        );
        // The fallback is the last valid plan (job 1 now) and it fits.
        assert_eq!(
            plan.placements
                .iter()
                .map(|p| (p.job, p.start))
                .collect::<Vec<_>>(),
            vec![(JobId(1), 7)]
        );
        assert_eq!(validate(&s2, &plan), Ok(()));
    }
}

/// Borrowed snapshots: whatever the sequence of snapshots, the plugin plans on
/// exactly the host's, and plans through the plugin, told the driver's accounts of what
/// changed, are the linked policy's told the same.
mod borrowed {
    use super::common::plugin_str;
    use proptest::prelude::*;
    use sched_abi::{load, LoadedPolicy, PluginError};
    use sched_core::{
        Changes, CoAllocated, Component, JobId, ListChanges, MoldConfig, Moldable, NamedPolicy,
        Params, Pending, Plan, Policy, Pool, PoolId, PoolSteps, RNone, RSome, Request, Running,
        Shape, Snapshot, SpeedupModel, Step,
    };

    /// What the echo plugin saw of `s`, told `lent` with the call when given: the reasons of its
    /// two rejects (the snapshot, the account).
    fn echo(
        p: &mut LoadedPolicy,
        s: &Snapshot<'_>,
        starts: bool,
        lent: Option<&Changes>,
    ) -> Result<(String, String), PluginError> {
        let plan = match (lent, starts) {
            (Some(_), _) => p.try_call_lent(s, lent, starts)?,
            (None, true) => p.try_plan_starts(s)?,
            (None, false) => p.try_plan(s)?,
        };
        let reason = |k: usize| {
            plan.rejects
                .get(k)
                .map(|r| r.reason.to_string())
                .unwrap_or_default()
        };
        Ok((reason(0), reason(1)))
    }

    fn request(kind: u8, a: u32, b: u64) -> Request {
        let nodes = 1 + a % 8;
        let wall = 1 + b % 100;
        match kind % 4 {
            0 => Request::rigid(nodes, wall),
            1 => Request::Moldable(Moldable {
                pool: (a % 3 == 0).then_some(PoolId(0)).into(),
                configs: (1..=nodes)
                    .map(|n| MoldConfig {
                        nodes: n,
                        walltime: wall * u64::from(n),
                    })
                    .collect(),
                model: (a % 2 == 0)
                    .then_some(SpeedupModel::Amdahl {
                        work: wall,
                        serial: f64::from(a % 10) / 10.0,
                    })
                    .into(),
                min_nodes: 1,
                max_nodes: nodes,
                weight: f64::from(a) / 7.0,
            }),
            2 => Request::evolving(vec![Step::new(wall, nodes), Step::new(b % 7 + 1, a % 3)]),
            _ => Request::CoAllocated(CoAllocated {
                components: sched_core::rvec![
                    Component { nodes, pool: RNone },
                    Component {
                        nodes: 1,
                        pool: RSome(PoolId(1)),
                    },
                ],
                walltime: wall,
                deadline: (b % 2 == 0).then_some(b).into(),
            }),
        }
    }

    /// One change to the host's snapshot; `a`, `b`, `c` pick what and where.
    #[derive(Clone, Debug)]
    struct Op {
        kind: u8,
        a: u32,
        b: u64,
        c: u8,
    }

    fn ops() -> impl Strategy<Value = Vec<Op>> {
        proptest::collection::vec(
            (0u8..12, any::<u32>(), any::<u64>(), any::<u8>()).prop_map(|(kind, a, b, c)| Op {
                kind,
                a,
                b,
                c,
            }),
            1..40,
        )
    }

    struct State {
        now: u64,
        pools: Vec<Pool>,
        running: Vec<Running>,
        pending: Vec<Pending>,
        next_id: u64,
        /// Behaves as esim's engine: no job edited in place, running holds clipped as
        /// `Running::clip_holds` clips them.
        stable: bool,
    }

    impl State {
        fn new() -> Self {
            State {
                now: 0,
                pools: vec![
                    Pool {
                        id: PoolId(0),
                        name: "a".into(),
                        nodes: 16,
                    },
                    Pool {
                        id: PoolId(1),
                        name: "b".into(),
                        nodes: 8,
                    },
                ],
                running: Vec::new(),
                pending: Vec::new(),
                next_id: 1,
                stable: false,
            }
        }

        fn snapshot(&self) -> Snapshot<'_> {
            Snapshot {
                now: self.now,
                pools: &self.pools,
                running: &self.running,
                pending: &self.pending,
            }
        }

        fn pending_job(&mut self, op: &Op) -> Pending {
            self.next_id += 1;
            Pending {
                id: JobId(self.next_id),
                user: op.a % 5,
                submit: self.now,
                earliest_start: self.now + u64::from(op.c % 3),
                priority: i64::from(op.c % 4) - 1,
                request: request(op.c, op.a, op.b),
                wants_view: op.b % 3 == 0,
                claimed: Default::default(),
            }
        }

        /// Applies `op`: arrivals (at the end or anywhere), starts, ends, a request or a
        /// priority changed, a reordering, pools resized, renamed, added or removed, time.
        fn apply(&mut self, op: &Op) {
            let at = |len: usize| if len == 0 { 0 } else { op.a as usize % len };
            // A request changed in place, a hold added to a running job: not with stable jobs.
            let kind = match op.kind {
                6 if self.stable && op.c % 2 == 0 => 11,
                9 if self.stable => 11,
                k => k,
            };
            match kind {
                0 | 1 => {
                    for _ in 0..=op.c % 3 {
                        let p = self.pending_job(op);
                        self.pending.push(p);
                    }
                }
                2 => {
                    let p = self.pending_job(op);
                    let i = at(self.pending.len() + 1);
                    self.pending.insert(i, p);
                }
                3 | 4 if !self.pending.is_empty() => {
                    // Starts a run of jobs (as a backfill or a job end does).
                    let i = at(self.pending.len());
                    let n = (1 + op.c as usize % 40).min(self.pending.len() - i);
                    for p in self.pending.drain(i..i + n).collect::<Vec<_>>() {
                        let nodes = p.request.as_rigid().map_or(1, |r| r.nodes);
                        let shape = Shape::rigid(PoolId(0), nodes, 1 + op.b % 50);
                        let holds = shape.holds(&p.request, self.now);
                        self.running.push(Running {
                            id: p.id,
                            user: p.user,
                            request: p.request,
                            shape,
                            start: self.now,
                            holds: holds.into(),
                            killable: op.c % 2 == 0,
                        });
                    }
                }
                5 if !self.running.is_empty() => {
                    // An end: esim's swap_remove, or batchd's ordered removal.
                    let i = at(self.running.len());
                    if op.c % 2 == 0 {
                        self.running.swap_remove(i);
                    } else {
                        self.running.remove(i);
                    }
                }
                6 if !self.pending.is_empty() => {
                    let i = at(self.pending.len());
                    if op.c % 2 == 0 {
                        self.pending[i].request = request(op.c / 2, op.a / 3, op.b / 5);
                    } else {
                        self.pending[i].priority += 1;
                        self.pending.remove(i);
                    }
                }
                7 if self.pending.len() > 1 => {
                    let (i, j) = (at(self.pending.len()), op.b as usize % self.pending.len());
                    self.pending.swap(i, j);
                    if op.c % 5 == 0 {
                        self.pending.reverse();
                    }
                }
                8 => match op.c % 4 {
                    0 => self.pools[0].nodes = 8 + op.a % 32,
                    1 => self.pools[0].name = format!("p{}", op.a % 3).into(),
                    2 if self.pools.len() < 3 => self.pools.push(Pool {
                        id: PoolId(2),
                        name: "c".into(),
                        nodes: 4,
                    }),
                    _ if self.pools.len() > 2 => {
                        self.pools.pop();
                    }
                    _ => {}
                },
                9 if !self.running.is_empty() => {
                    let i = at(self.running.len());
                    self.running[i].holds.push(PoolSteps::flat(
                        PoolId(1),
                        self.now,
                        self.now + 5,
                        1,
                    ));
                }
                _ => {}
            }
            self.now += op.b % 4;
            self.clip();
        }

        /// Running jobs' holds start at now, as both drivers send them.
        fn clip(&mut self) {
            if self.stable {
                for r in &mut self.running {
                    r.clip_holds(self.now);
                }
                return;
            }
            for r in &mut self.running {
                for h in &mut r.holds {
                    if h.start < self.now {
                        let cut = self.now - h.start;
                        if let Some(first) = h.steps.first_mut() {
                            first.duration = first.duration.saturating_sub(cut);
                        }
                        h.start = self.now;
                    }
                }
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

        /// At every call the plugin plans on exactly the snapshot the host has and is told
        /// exactly the account the driver gave for that call (nothing when the driver told
        /// nothing), and after a panic (every 7th call of an instance) the rebuilt instance
        /// goes on planning on the host's snapshot, not told the account of the call that
        /// follows the panic (it never saw the snapshot the account starts from).
        #[test]
        fn the_plugin_sees_exactly_the_hosts_snapshot(
            ops in ops(),
            panics in any::<bool>(),
            stable in any::<bool>(),
        ) {
            let mut params = Params::new();
            if panics {
                params.set("panic_every", "7");
            }
            let mut p = load(&plugin_str("test-echo"), None, &params).unwrap();
            let mut s = State::new();
            s.stable = stable;
            let (mut panicked, mut fresh) = (0u64, false);
            for (k, op) in ops.iter().enumerate() {
                s.apply(op);
                // The echo does not check that an account fits: any will do.
                let list = |on: bool, n: u32| {
                    on.then(|| ListChanges {
                        left: (0..n as usize % 4).map(|i| i * 3 + op.c as usize % 3).collect(),
                        arrived: (op.b % 5) as usize,
                    })
                };
                let changes = Changes {
                    running: list(op.b % 3 != 0, op.a),
                    pending: list(op.b % 2 == 0, op.a / 4),
                };
                // Not told, told ahead of the call (kept), or lent with it.
                let tell = op.c % 4 != 0;
                let lend = op.c % 4 == 3;
                if tell && !lend {
                    p.expect_changes(&changes);
                }
                let told = tell && !fresh && (changes.running.is_some() || changes.pending.is_some());
                let snap = s.snapshot();
                match echo(&mut p, &snap, k % 3 == 0, lend.then_some(&changes)) {
                    Ok((seen, heard)) => {
                        prop_assert_eq!(seen, format!("{snap:?}"), "call {}", k + 1);
                        let want = if told { format!("{:?}", Some(&changes)) } else { "None".into() };
                        prop_assert_eq!(heard, want, "call {}", k + 1);
                        fresh = false;
                    }
                    Err(PluginError::Panicked { .. }) => {
                        panicked += 1;
                        fresh = true;
                    }
                    Err(e) => return Err(TestCaseError::fail(e.to_string())),
                }
            }
            prop_assert_eq!(panicked > 0, panics && ops.len() >= 7);
        }
    }

    /// A driver of rigid jobs (as esim): arrivals, the plan's starts carried out, jobs ending
    /// at or before their walltime, now and then a pool resized or a queue reordered; both
    /// policies are told the same account of each call's changes when one describes them.
    fn replay_both(
        linked: &mut dyn Policy,
        plugin: &mut LoadedPolicy,
        steps: &[(u8, u32, u64)],
    ) -> Result<(), TestCaseError> {
        let mut s = State::new();
        s.pools.truncate(1);
        // Like esim's engine, this driver never edits a job in place.
        s.stable = true;
        let mut ends: Vec<(u64, JobId)> = Vec::new();
        let ids = |l: &[Running]| l.iter().map(|r| r.id).collect::<Vec<_>>();
        let qids = |l: &[Pending]| l.iter().map(|p| p.id).collect::<Vec<_>>();
        let (mut prev_running, mut prev_pending) = (Vec::new(), Vec::new());
        let mut told = 0;
        for (k, &(c, a, b)) in steps.iter().enumerate() {
            for n in 0..c % 4 {
                s.next_id += 1;
                s.pending.push(Pending {
                    id: JobId(s.next_id),
                    user: a % 3,
                    submit: s.now,
                    earliest_start: s.now,
                    priority: 0,
                    request: Request::rigid(1 + (a >> n) % 12, 5 + (b >> n) % 60),
                    wants_view: false,
                    claimed: Default::default(),
                });
            }
            if c % 11 == 0 {
                s.pools[0].nodes = 16 + a % 8;
            }
            if c % 13 == 0 && s.pending.len() > 2 {
                s.pending.swap(0, 2);
            }
            if k > 0 {
                let changes = Changes {
                    running: sched_core::testkit::account(&prev_running, &ids(&s.running)),
                    pending: sched_core::testkit::account(&prev_pending, &qids(&s.pending)),
                };
                told += usize::from(changes.running.is_some() && changes.pending.is_some());
                linked.expect_changes(&changes);
                plugin.expect_changes(&changes);
            }
            (prev_running, prev_pending) = (ids(&s.running), qids(&s.pending));
            let snap = s.snapshot();
            let starts = k % 4 != 0;
            let (want, got): (Plan, Plan) = if starts {
                (
                    linked.plan_starts(&snap),
                    plugin.try_plan_starts(&snap).unwrap(),
                )
            } else {
                (linked.plan(&snap), plugin.try_plan(&snap).unwrap())
            };
            prop_assert_eq!(&got, &want, "call {}", k + 1);
            for p in want.placements.iter().filter(|p| p.start <= s.now) {
                let Some(i) = s.pending.iter().position(|q| q.id == p.job) else {
                    continue;
                };
                let job = s.pending.remove(i);
                let holds = p.shape.holds(&job.request, s.now);
                let wall = holds.iter().map(PoolSteps::end).max().unwrap_or(s.now);
                let end = (s.now + 1 + (b + job.id.0) % 40).min(wall);
                ends.push((end, job.id));
                s.running.push(Running {
                    id: job.id,
                    user: job.user,
                    request: job.request,
                    shape: p.shape.clone(),
                    start: s.now,
                    holds: holds.into(),
                    killable: false,
                });
            }
            s.now += 1 + b % 7;
            ends.retain(|&(t, id)| {
                if t <= s.now {
                    if let Some(i) = s.running.iter().position(|r| r.id == id) {
                        // Now and then as esim's engine once did, which no account describes.
                        if (t + id.0) % 5 == 0 {
                            s.running.swap_remove(i);
                        } else {
                            s.running.remove(i);
                        }
                    }
                    false
                } else {
                    true
                }
            });
            s.clip();
        }
        prop_assert!(steps.len() < 8 || told > 0, "no call was told its changes");
        Ok(())
    }

    fn steps() -> impl Strategy<Value = Vec<(u8, u32, u64)>> {
        proptest::collection::vec((any::<u8>(), any::<u32>(), any::<u64>()), 1..60)
    }

    fn compare<P: NamedPolicy>(name: &str, steps: &[(u8, u32, u64)]) -> Result<(), TestCaseError> {
        let mut linked = P::from_params(&Params::new()).unwrap();
        let mut plugin = load(&plugin_str(name), None, &Params::new()).unwrap();
        replay_both(&mut linked, &mut plugin, steps)
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

        #[test]
        fn cbf_through_the_plugin_plans_as_linked(steps in steps()) {
            compare::<esched_cbf::Cbf>("cbf", &steps)?;
        }

        #[test]
        fn easy_through_the_plugin_plans_as_linked(steps in steps()) {
            compare::<esched_easy::Easy>("easy", &steps)?;
        }

        #[test]
        fn fcfs_through_the_plugin_plans_as_linked(steps in steps()) {
            compare::<esched_fcfs::Fcfs>("fcfs", &steps)?;
        }
    }
}

/// A shared host (`PolicyHost::share`): what a driver that runs the calls on another thread
/// sees while one is slow, abandons it at its budget, and goes on with the host's fallback.
mod shared {
    use super::common::{batch_pool, capture_logs};
    use proptest::prelude::*;
    use sched_abi::{HostShare, Linked, PolicyHost};
    use sched_core::{
        validate, JobId, Pending, Placement, Plan, Policy, PoolId, PoolSteps, RNone, Request,
        Running, Shape, Snapshot,
    };
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::{Arc, Mutex};
    use std::time::Duration;

    /// Places every pending job of one node 10 ms from now, one after the other when the pool
    /// (4 nodes) is full; while `hold` is set, waits in `plan` (having set `entered`).
    struct Gate {
        hold: Arc<AtomicBool>,
        entered: Arc<AtomicBool>,
    }

    impl Policy for Gate {
        fn plan(&mut self, s: &Snapshot<'_>) -> Plan {
            self.entered.store(true, Ordering::SeqCst);
            while self.hold.load(Ordering::SeqCst) {
                std::thread::sleep(Duration::from_millis(1));
            }
            Plan {
                placements: s
                    .pending
                    .iter()
                    .enumerate()
                    .map(|(k, p)| Placement {
                        job: p.id,
                        start: s.now + 10 + 100 * (k as u64 / 4),
                        shape: Shape::rigid(PoolId(0), 1, 100),
                        claim_from: RNone,
                    })
                    .collect(),
                ..Plan::default()
            }
        }
    }

    fn job(id: u64) -> Pending {
        Pending {
            wants_view: false,
            claimed: Default::default(),
            id: JobId(id),
            user: 0,
            submit: 0,
            earliest_start: 0,
            priority: 0,
            request: Request::rigid(1, 100),
        }
    }

    fn jobs(ids: &[u64]) -> Vec<Pending> {
        ids.iter().map(|&i| job(i)).collect()
    }

    fn placed(plan: &Plan) -> Vec<(u64, u64)> {
        plan.placements.iter().map(|p| (p.job.0, p.start)).collect()
    }

    type Flags = (Arc<AtomicBool>, Arc<AtomicBool>);

    fn gated() -> (PolicyHost, HostShare, Flags) {
        let (hold, entered) = (Arc::default(), Arc::default());
        let gate = Gate {
            hold: Arc::clone(&hold),
            entered: Arc::clone(&entered),
        };
        let mut host = PolicyHost::boxed(Box::new(Linked::new("gated", Box::new(gate))));
        let share = host.share();
        (host, share, (hold, entered))
    }

    #[test]
    fn an_abandoned_call_is_counted_logged_and_answered_with_the_last_valid_plan() {
        let (mut host, share, (hold, entered)) = gated();
        let pools = batch_pool();
        let q1 = jobs(&[1, 2]);
        let s1 = Snapshot {
            now: 0,
            pools: &pools,
            running: &[],
            pending: &q1,
        };
        assert_eq!(placed(&host.plan(&s1)), vec![(1, 10), (2, 10)]);
        assert_eq!((share.stats().calls, share.stats().timeouts), (1, 0));
        assert!(share.call_times().last.is_some() && share.in_flight().is_none());

        // Job 3 arrives and the call hangs on another thread, as a driver runs it.
        hold.store(true, Ordering::SeqCst);
        entered.store(false, Ordering::SeqCst);
        assert!(share.dispatch());
        let host = Arc::new(Mutex::new(host));
        let worker = {
            let host = Arc::clone(&host);
            std::thread::spawn(move || {
                let pools = batch_pool();
                let q = jobs(&[1, 2, 3]);
                capture_logs(|| {
                    let s = Snapshot {
                        now: 5,
                        pools: &pools,
                        running: &[],
                        pending: &q,
                    };
                    placed(&host.lock().unwrap().plan(&s))
                })
            })
        };
        while !entered.load(Ordering::SeqCst) {
            std::thread::sleep(Duration::from_millis(1));
        }
        // At most one call in flight.
        assert!(!share.dispatch());

        // The driver gives up at its budget: the last valid plan, reduced to the jobs still
        // pending, moved to now, validated against this snapshot; job 3 is not in it.
        let q3 = jobs(&[2, 3]);
        let s3 = Snapshot {
            now: 20,
            pools: &pools,
            running: &[],
            pending: &q3,
        };
        let (fallback, logs) = capture_logs(|| share.abandon(&s3, Duration::from_millis(300)));
        let fallback = fallback.expect("a call is in flight");
        assert_eq!(placed(&fallback), vec![(2, 20)]);
        assert_eq!(validate(&s3, &fallback), Ok(()));
        assert!(
            logs.contains("ERROR")
                && logs.contains("policy `gated`: no plan within its time budget of 300 ms")
                && logs.contains("keeping its last valid plan"),
            "{logs}"
        );
        // Counted once, however often the driver asks.
        assert_eq!(
            share.abandon(&s3, Duration::from_millis(300)),
            Some(fallback.clone())
        );
        assert_eq!(share.fallback(&s3), fallback);
        assert_eq!(share.stats().timeouts, 1);
        let flight = share.in_flight().expect("still running");
        assert_eq!(flight.abandoned, Some(Duration::from_millis(300)));

        // The call returns: its plan is dropped, not kept as the last valid one.
        hold.store(false, Ordering::SeqCst);
        let (_, logs) = worker.join().unwrap();
        assert!(
            logs.contains(
                "policy `gated`: the call abandoned at its time budget of 300 ms returned after"
            ) && logs.contains("its plan is dropped"),
            "{logs}"
        );
        assert!(share.in_flight().is_none());
        assert_eq!(share.fallback(&s3), fallback);
        let stats = host.lock().unwrap().stats();
        assert_eq!(
            (stats.calls, stats.timeouts, stats.refusals, stats.panics),
            (2, 1, 0, 0)
        );
        assert!(
            share.call_times().longest >= Some(Duration::from_millis(1)),
            "{:?}",
            share.call_times()
        );

        // The next call is the policy's again.
        assert!(share.dispatch());
        let plan = host.lock().unwrap().plan_shared(&s3);
        assert_eq!(placed(&plan), vec![(2, 30), (3, 30)]);
        assert_eq!(placed(&share.fallback(&s3)), vec![(2, 30), (3, 30)]);
        assert!(share.in_flight().is_none());
    }

    #[test]
    fn without_a_call_in_flight_there_is_nothing_to_abandon() {
        let (mut host, share, _) = gated();
        let pools = batch_pool();
        let q = jobs(&[1]);
        let s = Snapshot {
            now: 0,
            pools: &pools,
            running: &[],
            pending: &q,
        };
        host.plan(&s);
        assert_eq!(share.abandon(&s, Duration::from_millis(1)), None);
        assert_eq!(share.stats().timeouts, 0);
    }

    /// One node held by a running job from 0 to `end` on the 4-node pool, `nodes` wide.
    fn running(id: u64, nodes: u32, end: u64) -> Running {
        Running {
            id: JobId(id),
            user: 0,
            request: Request::rigid(nodes, end),
            shape: Shape::rigid(PoolId(0), nodes, end),
            start: 0,
            holds: sched_core::rvec![PoolSteps::flat(PoolId(0), 0, end, nodes)],
            killable: false,
        }
    }

    proptest! {
        /// Whatever calls a driver abandons (here before they reach the host, which a single
        /// thread can do) and whatever the cluster does meanwhile, what the share hands out
        /// validates against the snapshot it was given, holds only pending jobs, and every
        /// abandon is counted once.
        #[test]
        fn the_share_hands_out_only_valid_plans(
            steps in prop::collection::vec((any::<bool>(), 0u64..6, 0u32..5, 0u64..400), 1..20)
        ) {
            let (mut host, share, _) = gated();
            let pools = batch_pool();
            let mut abandons = 0;
            for (k, &(abandon, first, busy, end)) in steps.iter().enumerate() {
                let now = 100 * k as u64;
                let q = jobs(&(first..first + 5).collect::<Vec<_>>());
                let run = (busy > 0).then(|| running(100 + k as u64, busy, now + end + 1));
                let running = run.into_iter().collect::<Vec<_>>();
                let s = Snapshot { now, pools: &pools, running: &running, pending: &q };
                let before = share.fallback(&s);
                prop_assert!(share.dispatch());
                if abandon {
                    let plan = share.abandon(&s, Duration::from_millis(5)).unwrap();
                    prop_assert_eq!(validate(&s, &plan), Ok(()));
                    prop_assert!(plan.placements.iter().all(|p| q.iter().any(|j| j.id == p.job)));
                    prop_assert_eq!(&plan, &before);
                    abandons += 1;
                }
                let answer = host.plan_shared(&s);
                prop_assert_eq!(validate(&s, &answer), Ok(()));
                if !abandon {
                    // Valid, the answer is the share's copy (its fallback against the same
                    // snapshot is the plan itself: starts ahead, no kills or rejects); refused,
                    // the host's fallback and the share's are one.
                    prop_assert_eq!(&*answer, &share.fallback(&s));
                }
                prop_assert!(share.in_flight().is_none());
                let fallback = share.fallback(&s);
                prop_assert_eq!(validate(&s, &fallback), Ok(()));
                if abandon {
                    // The abandoned call's plan was dropped: the fallback did not move.
                    prop_assert_eq!(&fallback, &before);
                }
            }
            prop_assert_eq!(share.stats().timeouts, abandons);
            prop_assert_eq!(host.stats().timeouts, abandons);
            prop_assert_eq!(share.stats().calls, steps.len() as u64);
        }
    }
}

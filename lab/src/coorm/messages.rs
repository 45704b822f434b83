//! The messages of the launcher–RMS protocol (§III-B, Fig. 3) and the OAR-like baseline's, with
//! their sizes as JSON (what esched's socket would carry) and as a CDR-like binary estimate (the
//! encoding the paper measured, CORBA's: 4-byte integers and lengths, 8-byte times and
//! doubles, strings with a length and a terminating NUL, a 12-byte GIOP header per message;
//! alignment padding is left out).

use sched_core::{PoolSteps, FOREVER};
use serde_json::json;

use super::platform::Platform;

/// Bytes of one message in both encodings.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Size {
    /// JSON text, without framing.
    pub json: u64,
    /// CDR-like estimate.
    pub cdr: u64,
}

impl Size {
    fn of(v: &serde_json::Value, cdr: u64) -> Size {
        Size {
            json: v.to_string().len() as u64,
            cdr: HEADER + cdr,
        }
    }

    /// `self + o`.
    pub fn add(&mut self, o: Size) {
        self.json += o.json;
        self.cdr += o.cdr;
    }
}

const HEADER: u64 = 12;

fn cdr_str(s: &str) -> u64 {
    4 + s.len() as u64 + 1
}

/// A host's name: `c<pool>-<index>` (the RIDs of startNotify).
fn host_len(pool: usize) -> u64 {
    format!("c{}-000", pool + 1).len() as u64
}

/// `subscribe(filter)` with a minimum-hosts filter, and its (empty) answer.
pub fn subscribe() -> Size {
    let mut s = Size::of(&json!({"subscribe": {"filter": {"min_hosts": 1}}}), 4);
    s.add(Size::of(&json!({"ok": true}), 1));
    s
}

/// `listClustersInfo` and its answer: per pool its name, hosts and relative speed.
pub fn clusters_info(p: &Platform) -> Size {
    let mut s = Size::of(&json!({"listClustersInfo": {}}), 0);
    let list: Vec<_> = p
        .pools
        .iter()
        .zip(&p.speed)
        .map(|(q, sp)| json!({"cid": q.name, "hosts": q.nodes, "speed": sp}))
        .collect();
    let cdr: u64 = 4 + p
        .pools
        .iter()
        .map(|q| cdr_str(&q.name) + 4 + 8)
        .sum::<u64>();
    s.add(Size::of(&json!(list), cdr));
    s
}

/// `listInterClusterInfo` and its answer: latency and bandwidth per pair of pools.
pub fn inter_info(p: &Platform) -> Size {
    let mut s = Size::of(&json!({"listInterClusterInfo": {}}), 0);
    let mut list = Vec::new();
    let mut cdr = 4;
    for (a, qa) in p.pools.iter().enumerate() {
        for (b, qb) in p.pools.iter().enumerate().skip(a + 1) {
            list.push(
                json!({"a": qa.name, "b": qb.name, "latency": p.latency(a, b), "bandwidth": 1e9}),
            );
            cdr += cdr_str(&qa.name) + cdr_str(&qb.name) + 16;
        }
    }
    s.add(Size::of(&json!(list), cdr));
    s
}

/// `changeNotify {cid, type: availability, cap}`: one per pool whose CAP changed. The hot
/// message (every launcher behind a change gets one), so its JSON is written directly into a
/// reused buffer instead of through a `serde_json::Value`; times in seconds as `{}` prints
/// them (the same text serde_json would give, less a trailing `.0` on whole seconds).
pub fn change_notify(p: &Platform, cap: &PoolSteps) -> Size {
    let name = &p.pools[cap.pool.0 as usize].name;
    let cdr = cdr_str(name) + 4 + 4 + cap.steps.len() as u64 * (8 + 8 + 4);
    Size {
        json: change_notify_json(p, cap).len() as u64,
        cdr: HEADER + cdr,
    }
}

/// The JSON text of [`change_notify`].
pub fn change_notify_json(p: &Platform, cap: &PoolSteps) -> String {
    use std::fmt::Write as _;
    let name = &p.pools[cap.pool.0 as usize].name;
    let mut o = String::with_capacity(64 + 40 * cap.steps.len());
    let _ = write!(
        o,
        r#"{{"changeNotify":{{"cid":"{name}","type":"availability","cap":["#
    );
    let mut t = cap.start;
    for (k, s) in cap.steps.iter().enumerate() {
        if k > 0 {
            o.push(',');
        }
        let _ = write!(o, r#"{{"from":{},"to":"#, t as f64 / 1000.0);
        if s.duration == FOREVER {
            o.push_str("null");
        } else {
            t = t.saturating_add(s.duration);
            let _ = write!(o, "{}", t as f64 / 1000.0);
        }
        let _ = write!(o, r#","free":{}}}"#, s.nodes);
    }
    o.push_str("]}}");
    o
}

/// `request {nodes per pool, duration}`.
pub fn request(p: &Platform, parts: &[(usize, u32)], duration_ms: u64) -> Size {
    let nodes: Vec<_> = parts
        .iter()
        .map(|&(i, n)| json!({"cid": p.pools[i].name, "n": n}))
        .collect();
    let cdr = 4
        + parts
            .iter()
            .map(|&(i, _)| cdr_str(&p.pools[i].name) + 4)
            .sum::<u64>()
        + 8;
    Size::of(
        &json!({"request": {"nodes": nodes, "duration": duration_ms as f64 / 1000.0}}),
        cdr,
    )
}

/// `startNotify` with the host names of each pool.
pub fn start_notify(p: &Platform, parts: &[(usize, u32)]) -> Size {
    let mut rids = Vec::new();
    let mut cdr = 4;
    for &(i, n) in parts {
        let hosts: Vec<String> = (0..n).map(|k| format!("c{}-{k:03}", i + 1)).collect();
        cdr += cdr_str(&p.pools[i].name) + 4 + u64::from(n) * (4 + host_len(i) + 1);
        rids.push(json!({"cid": p.pools[i].name, "hosts": hosts}));
    }
    Size::of(&json!({"startNotify": {"rids": rids}}), cdr)
}

/// `done`.
pub fn done() -> Size {
    Size::of(&json!({"done": {}}), 0)
}

/// The baseline's submission: every configuration `(pool, hosts, walltime)`.
pub fn submit_configs(p: &Platform, configs: &[esched_coorm::Config]) -> Size {
    let list: Vec<_> = configs
        .iter()
        .map(|c| json!({"cid": p.pools[c.pool.0 as usize].name, "n": c.nodes, "walltime": c.walltime as f64 / 1000.0}))
        .collect();
    let cdr = 4 + configs
        .iter()
        .map(|c| cdr_str(&p.pools[c.pool.0 as usize].name) + 4 + 8)
        .sum::<u64>();
    Size::of(&json!({"submit": {"configs": list}}), cdr)
}

#[cfg(test)]
mod tests {
    use super::*;
    use sched_core::{PoolId, Step};

    #[test]
    fn sizes_grow_with_content() {
        let p = Platform::paper(2, 128);
        let small = change_notify(
            &p,
            &PoolSteps {
                pool: PoolId(0),
                start: 0,
                steps: sched_core::rvec![Step::new(FOREVER, 128)],
            },
        );
        let big = change_notify(
            &p,
            &PoolSteps {
                pool: PoolId(0),
                start: 0,
                steps: sched_core::rvec![Step::new(1000, 3), Step::new(FOREVER, 128)],
            },
        );
        assert!(big.json > small.json && big.cdr == small.cdr + 20);
        // The hand-written JSON parses, with `null` for the open end.
        let cap = PoolSteps {
            pool: PoolId(1),
            start: 1500,
            steps: sched_core::rvec![Step::new(1000, 3), Step::new(FOREVER, 128)],
        };
        let v: serde_json::Value = serde_json::from_str(&change_notify_json(&p, &cap)).unwrap();
        let steps = &v["changeNotify"]["cap"];
        assert_eq!(steps[0]["from"], 1.5);
        assert_eq!(steps[0]["to"], 2.5);
        assert!(steps[1]["to"].is_null());
        assert_eq!(v["changeNotify"]["cid"], "c2");
        let s = start_notify(&p, &[(0, 2)]);
        // Two host names "c1-000", "c1-001" of 6 bytes each, with length and NUL.
        assert_eq!(s.cdr, HEADER + 4 + cdr_str("c1") + 4 + 2 * (4 + 6 + 1));
        assert!(s.json > 0 && done().cdr == HEADER);
    }
}

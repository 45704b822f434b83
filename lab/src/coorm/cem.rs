//! A CEM-like application (§II): a multi-pool finite-element code whose launcher picks pools and
//! host counts from its view to minimise its completion time.
//!
//! The paper's CEM model (its reference [10]) is not given; ours keeps its shape: compute time
//! shrinks with the hosts and their pool's speed, communication grows with the pools used and
//! the latency between them, so that spanning pools pays only for large enough problems.

use sched_core::{Duration, PoolId, PoolSteps, Time, View, FOREVER};

use super::platform::Platform;

/// Iterations of the solver (each one exchanges halos and reduces a residual).
pub const ITERATIONS: f64 = 1000.0;
/// Cost of one reduction step per doubling of the process count, in seconds.
pub const REDUCE_STEP: f64 = 1e-4;
/// How many start times the selection tries: `now`, the first change points of the view, and
/// always the last (where every pool is free).
pub const MAX_CANDIDATES: usize = 48;

/// Run time in seconds of a CEM run of `work` (host-seconds at speed 1) on `parts`
/// (`(pool index, hosts)`): `work / Σ hosts·speed + ITERATIONS · (max latency between the pools
/// used + REDUCE_STEP · log2(total hosts))`.
pub fn runtime(platform: &Platform, work: f64, parts: &[(usize, u32)]) -> f64 {
    let capacity: f64 = parts
        .iter()
        .map(|&(i, n)| f64::from(n) * platform.speed[i])
        .sum();
    if capacity <= 0.0 {
        return f64::INFINITY;
    }
    let mut lat = 0.0f64;
    for &(a, _) in parts {
        for &(b, _) in parts {
            lat = lat.max(platform.latency(a, b));
        }
    }
    let hosts: u32 = parts.iter().map(|p| p.1).sum();
    work / capacity + ITERATIONS * (lat + REDUCE_STEP * f64::from(hosts.max(1)).log2())
}

/// [`runtime`] in whole milliseconds (rounded up).
pub fn runtime_ms(platform: &Platform, work: f64, parts: &[(usize, u32)]) -> Duration {
    (runtime(platform, work, parts) * 1000.0).ceil() as Duration
}

/// The least free count of `cap` on `[t0, t1)`.
fn cap_min(cap: &PoolSteps, t0: Time, t1: Time) -> u32 {
    let mut a = cap.start;
    let mut m = u32::MAX;
    for s in &cap.steps {
        let b = if s.duration == FOREVER {
            Time::MAX
        } else {
            a.saturating_add(s.duration)
        };
        if b > t0 && a < t1 {
            m = m.min(s.nodes);
        }
        if b >= t1 {
            break;
        }
        a = b;
    }
    if m == u32::MAX {
        0
    } else {
        m
    }
}

/// The CEM launcher's selection on `view` from `from` (§II): for each candidate start (now and
/// the times the view changes), take the pools in decreasing order of free capacity
/// (free hosts × speed) and, for 1, 2, … of them, all their free hosts; shrink a pool's count
/// to what stays free over the run if the run would outlast a step; keep the earliest
/// completion (ties: fewer hosts). Returns the `(pool, hosts)` parts in pool order and the
/// duration, or `None` if nothing fits (a view with no free host ever).
pub fn select(
    platform: &Platform,
    work: f64,
    view: &View,
    from: Time,
) -> Option<(Vec<(PoolId, u32)>, Duration)> {
    let caps: Vec<&PoolSteps> = platform
        .pools
        .iter()
        .map(|p| view.available.iter().find(|c| c.pool == p.id))
        .collect::<Option<_>>()?;
    let mut times: Vec<Time> = vec![from];
    let mut last = from;
    for c in &caps {
        let mut t = c.start;
        for s in &c.steps {
            if s.duration == FOREVER {
                break;
            }
            t = t.saturating_add(s.duration);
            if t > from {
                times.push(t);
                last = last.max(t);
            }
        }
    }
    times.sort_unstable();
    times.dedup();
    times.truncate(MAX_CANDIDATES);
    if times.last() != Some(&last) {
        times.push(last);
    }
    // (end, hosts, parts, duration) of the best choice so far.
    type Choice = (Time, u32, Vec<(usize, u32)>, Duration);
    let mut best: Option<Choice> = None;
    for &t in &times {
        let free: Vec<u32> = caps
            .iter()
            .map(|c| sched_core::cap_value_at(c, t).unwrap_or(0))
            .collect();
        let mut order: Vec<usize> = (0..caps.len()).filter(|&i| free[i] > 0).collect();
        order.sort_by(|&a, &b| {
            let ca = f64::from(free[a]) * platform.speed[a];
            let cb = f64::from(free[b]) * platform.speed[b];
            cb.total_cmp(&ca).then(a.cmp(&b))
        });
        for m in 1..=order.len() {
            let mut parts: Vec<(usize, u32)> = order[..m].iter().map(|&i| (i, free[i])).collect();
            let mut fit = None;
            for _ in 0..4 {
                let d = runtime_ms(platform, work, &parts);
                let end = t.saturating_add(d);
                let mut ok = true;
                for p in &mut parts {
                    let w = cap_min(caps[p.0], t, end);
                    if w < p.1 {
                        ok = false;
                        p.1 = w;
                    }
                }
                if ok {
                    fit = Some(d);
                    break;
                }
                if parts.iter().any(|p| p.1 == 0) {
                    break;
                }
            }
            let Some(d) = fit else { continue };
            let end = t.saturating_add(d);
            let hosts: u32 = parts.iter().map(|p| p.1).sum();
            if best
                .as_ref()
                .is_none_or(|(e, h, _, _)| end < *e || (end == *e && hosts < *h))
            {
                let mut sorted = parts.clone();
                sorted.sort_unstable();
                best = Some((end, hosts, sorted, d));
            }
        }
    }
    best.map(|(_, _, parts, d)| {
        (
            parts
                .into_iter()
                .map(|(i, n)| (platform.pools[i].id, n))
                .collect(),
            d,
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use sched_core::{JobId, Step};

    fn flat_view(p: &Platform, free: &[u32]) -> View {
        View {
            job: JobId(1),
            available: p
                .pools
                .iter()
                .zip(free)
                .map(|(q, &f)| PoolSteps {
                    pool: q.id,
                    start: 0,
                    steps: if f == q.nodes {
                        sched_core::rvec![Step::new(FOREVER, f)]
                    } else {
                        sched_core::rvec![Step::new(1_000_000, f), Step::new(FOREVER, q.nodes)]
                    },
                })
                .collect(),
        }
    }

    #[test]
    fn spanning_pools_pays_for_large_work_only() {
        let p = Platform::paper(2, 128);
        let one = runtime(&p, 128.0 * 3600.0, &[(1, 128)]);
        let two = runtime(&p, 128.0 * 3600.0, &[(0, 128), (1, 128)]);
        assert!(two < one, "{two} < {one}");
        let one = runtime(&p, 60.0, &[(1, 128)]);
        let two = runtime(&p, 60.0, &[(0, 128), (1, 128)]);
        assert!(two > one, "{two} > {one}");
    }

    #[test]
    fn selection_takes_every_free_pool_for_a_large_run() {
        let p = Platform::paper(2, 128);
        let v = flat_view(&p, &[128, 128]);
        let (parts, d) = select(&p, 128.0 * 3600.0, &v, 0).unwrap();
        assert_eq!(parts, vec![(PoolId(0), 128), (PoolId(1), 128)]);
        assert_eq!(d, runtime_ms(&p, 128.0 * 3600.0, &[(0, 128), (1, 128)]));
    }

    #[test]
    fn selection_waits_when_waiting_completes_earlier() {
        // Pool 0 has 1 free host until 1000 s, then 128; pool 1 is absent-free (0 until 1000 s).
        let p = Platform::paper(2, 128);
        let v = flat_view(&p, &[1, 0]);
        let (parts, _) = select(&p, 128.0 * 3600.0, &v, 0).unwrap();
        // Running on 1 host from now would take 128 hours: it waits for both pools.
        assert_eq!(parts, vec![(PoolId(0), 128), (PoolId(1), 128)]);
    }

    #[test]
    fn selection_fits_its_view() {
        let p = Platform::paper(3, 16);
        let v = flat_view(&p, &[4, 16, 0]);
        let (parts, d) = select(&p, 16.0 * 100.0, &v, 0).unwrap();
        let start = esched_coorm::select::earliest_all_in_view(&v, &parts, d, 0).unwrap();
        // It was chosen to start at a candidate where it fits; the search confirms a start.
        assert!(start <= 1_000_000);
    }
}

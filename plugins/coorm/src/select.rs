//! Selections a launcher runs on its view: the same fit arithmetic as the policy's, read off
//! the CAPs instead of the profiles (a CAP is `pool size − nodes used`, clamped at 0).

use sched_core::{Duration, PoolId, PoolSteps, Time, View, FOREVER};

use crate::pass::Config;

/// The earliest `t ≥ from` at which `cap` shows at least `nodes` free nodes on all of
/// `[t, t + duration)`; `None` if never. A zero duration fits at `from`.
pub fn earliest_in_cap(
    cap: &PoolSteps,
    from: Time,
    nodes: u32,
    duration: Duration,
) -> Option<Time> {
    if duration == 0 {
        return Some(from);
    }
    let mut a = cap.start;
    let mut cand: Option<Time> = None;
    for s in &cap.steps {
        let b = if s.duration == FOREVER {
            Time::MAX
        } else {
            a.saturating_add(s.duration)
        };
        if b > from {
            if s.nodes >= nodes {
                let c = *cand.get_or_insert(a.max(from));
                if b == Time::MAX || b - c >= duration {
                    return Some(c);
                }
            } else {
                cand = None;
            }
        }
        a = b;
    }
    None
}

/// The earliest `t ≥ from` at which every `(pool, nodes)` of `needs` fits in `view` for
/// `duration`, all at once; `None` if some part never does (or names a pool not in the view).
pub fn earliest_all_in_view(
    view: &View,
    needs: &[(PoolId, u32)],
    duration: Duration,
    from: Time,
) -> Option<Time> {
    // Two components on one pool need their sum there.
    let mut summed: Vec<(PoolId, u32)> = Vec::new();
    for &(p, n) in needs {
        match summed.iter_mut().find(|(q, _)| *q == p) {
            Some((_, m)) => *m = m.saturating_add(n),
            None => summed.push((p, n)),
        }
    }
    let caps: Vec<(&PoolSteps, u32)> = summed
        .iter()
        .filter(|(_, n)| *n > 0)
        .map(|&(p, n)| view.available.iter().find(|c| c.pool == p).map(|c| (c, n)))
        .collect::<Option<_>>()?;
    let mut t = from;
    loop {
        let mut moved = false;
        for &(c, n) in &caps {
            let s = earliest_in_cap(c, t, n, duration)?;
            if s > t {
                t = s;
                moved = true;
            }
        }
        if !moved {
            return Some(t);
        }
    }
}

/// The earliest-completing configuration in `view` from `from`: its index and start; ties on
/// the end go to the first in the list, as the policy's
/// [`crate::pass::earliest_completion`] (that is what makes CooRM's simple-moldable launchers
/// and the OAR-like baseline start every job at the same time, §IV-A).
pub fn earliest_completion(view: &View, configs: &[Config], from: Time) -> Option<(usize, Time)> {
    let mut best: Option<(usize, Time, Time)> = None;
    for (k, c) in configs.iter().enumerate() {
        let Some(s) = earliest_all_in_view(view, &[(c.pool, c.nodes)], c.walltime, from) else {
            continue;
        };
        let end = s.saturating_add(c.walltime);
        if best.is_none_or(|(_, _, e)| end < e) {
            best = Some((k, s, end));
        }
    }
    best.map(|(k, s, _)| (k, s))
}

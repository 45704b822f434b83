//! List scheduling (Klein & Pérez, Euro-Par 2011 Algorithm 1; RR-7205 Algorithm 2).

use sched_core::{Profile, Step, Time};

use crate::fit::{fit, ExpandLimit, Fitted};

/// One pool's resource EP `epr` and the fit parameters: Algorithm 1 is
/// `for each app in order: (ts, epx) ← fit(ep, epr); epr ← epr + delay(epx, ts)`, that is
/// [`ListScheduler::place`] once per application in queue order.
#[derive(Clone, Debug)]
pub struct ListScheduler {
    nnodes: u32,
    limit: ExpandLimit,
    compact: bool,
    resources: Profile,
}

impl ListScheduler {
    /// An empty pool of `nnodes` nodes (EP Alg. 1 l. 1: `epr ← empty EP`).
    pub fn new(nnodes: u32, limit: ExpandLimit, compact: bool) -> Self {
        ListScheduler {
            nnodes,
            limit,
            compact,
            resources: Profile::new(),
        }
    }

    /// Nodes in the pool.
    pub fn nodes(&self) -> u32 {
        self.nnodes
    }

    /// The resource EP so far.
    pub fn resources(&self) -> &Profile {
        &self.resources
    }

    /// Adds a fixed hold (a running job's remaining scheduled EP) to the resource EP.
    ///
    /// Interpretation: the papers are offline (everything starts at 0 on an empty machine);
    /// online, the running jobs' EPs are part of `epr` before the first pending job is fitted.
    pub fn hold(&mut self, start: Time, steps: &[Step]) {
        self.resources.add_steps(start, steps, 1);
    }

    /// The fit of `requested` at or after `from`, without adding it (EP Alg. 1 l. 3).
    pub fn try_fit(&self, requested: &[Step], from: Time) -> Option<Fitted> {
        fit(
            requested,
            &self.resources,
            self.nnodes,
            self.limit,
            self.compact,
            from,
        )
    }

    /// Adds a scheduled EP to the resource EP (EP Alg. 1 l. 4–5).
    pub fn commit(&mut self, fitted: &Fitted) {
        self.resources.add_steps(fitted.start, &fitted.steps, 1);
    }

    /// Fits and commits: one iteration of EP Alg. 1. `None` when the EP can never fit.
    pub fn place(&mut self, requested: &[Step], from: Time) -> Option<Fitted> {
        let f = self.try_fit(requested, from)?;
        self.commit(&f);
        Some(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn later_apps_never_disturb_earlier_ones() {
        // RR §4.2: "a scheduled application is not delayed nor stretched by any application
        // submitted after it": the second app backfills around the first.
        let mut s = ListScheduler::new(10, ExpandLimit::NONE, false);
        let a = s.place(&[Step::new(100, 8)], 0).unwrap();
        let b = s.place(&[Step::new(50, 5), Step::new(50, 2)], 0).unwrap();
        let c = s.place(&[Step::new(100, 2)], 0).unwrap();
        assert_eq!((a.start, b.start, c.start), (0, 100, 0));
        assert!(s.resources().max_over(0, 1000) <= 10);
    }
}

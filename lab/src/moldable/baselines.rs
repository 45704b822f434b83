//! The comparison algorithms of Dutot & Eyraud §4.1: Gang, Sequential LPTF, and Graham list
//! scheduling with the makespan algorithm's allotment in three orders.

use esched_bicriteria::instance::Instance;
use esched_bicriteria::makespan::DualApprox;
use esched_bicriteria::schedule::{list_to_schedule, rigid_list, Schedule, Slot};

/// Gang: every task on all m processors, one after the other, by decreasing ω / p(m) (§4.1:
/// "sorted using the ratio of the weight over the execution time" — Smith's rule, which is
/// what makes it "optimal for instances with linear speedup").
pub fn gang(inst: &Instance) -> Schedule {
    let m = inst.m();
    let mut order: Vec<usize> = (0..inst.n()).collect();
    order.sort_by(|&a, &b| {
        (inst.w(b) / inst.p(b, m))
            .total_cmp(&(inst.w(a) / inst.p(a, m)))
            .then(a.cmp(&b))
    });
    let mut tasks = vec![
        Slot {
            start: 0.0,
            procs: m
        };
        inst.n()
    ];
    let mut t = 0.0;
    for i in order {
        tasks[i].start = t;
        t += inst.p(i, m);
    }
    Schedule { tasks }
}

/// Sequential: every task on one processor, Graham's list by largest p(1) first (LPTF).
pub fn seq_lptf(inst: &Instance) -> Schedule {
    let allot = vec![1; inst.n()];
    let mut order: Vec<usize> = (0..inst.n()).collect();
    order.sort_by(|&a, &b| inst.p(b, 1).total_cmp(&inst.p(a, 1)).then(a.cmp(&b)));
    list_to_schedule(inst, &rigid_list(inst, &order, &allot))
}

/// List-MRT: Graham's list with the makespan algorithm's allotment in its own order. §4.1:
/// "keep the order of [7], listing first task of the large shelf then the tasks of small shelf
/// then the small tasks" — with the two-shelf algorithm ([`esched_bicriteria::mrt`]) that is
/// S0 and S1, then S2, then the small tasks; the canonical algorithm has no shelves and lists
/// the largest allotment first.
pub fn list_mrt(inst: &Instance, dual: &DualApprox) -> Schedule {
    list_to_schedule(inst, &rigid_list(inst, &dual.order, &dual.allot))
}

/// List-wLPTF: the makespan algorithm's allotment, by decreasing p/ω. §4.1 calls it "weighted
/// largest processing time first ... sorted using the ratio between weight and their execution
/// time"; we take the direction that keeps it an LPTF — the largest execution time per unit of
/// weight first (increasing ω/p) — since the paper credits it with LPTF's "very good behaviour
/// for Cmax" and shows its ΣωC ratio growing with n, which the opposite (Smith) direction would
/// not do.
pub fn list_wlptf(inst: &Instance, dual: &DualApprox) -> Schedule {
    let a = &dual.allot;
    let mut order: Vec<usize> = (0..inst.n()).collect();
    order.sort_by(|&x, &y| {
        (inst.p(y, a[y]) / inst.w(y))
            .total_cmp(&(inst.p(x, a[x]) / inst.w(x)))
            .then(x.cmp(&y))
    });
    list_to_schedule(inst, &rigid_list(inst, &order, a))
}

/// List-SAF: the makespan algorithm's allotment, smallest area k·p(k) first.
pub fn list_saf(inst: &Instance, dual: &DualApprox) -> Schedule {
    let a = &dual.allot;
    let area = |i: usize| a[i] as f64 * inst.p(i, a[i]);
    let mut order: Vec<usize> = (0..inst.n()).collect();
    order.sort_by(|&x, &y| area(x).total_cmp(&area(y)).then(x.cmp(&y)));
    list_to_schedule(inst, &rigid_list(inst, &order, a))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::moldable::testkit::weighted;
    use esched_bicriteria::makespan::dual_approx;

    #[test]
    fn gang_is_smith_order_on_all_processors() {
        // ω/p(2): task 0: 1/2, task 1: 4/1 → task 1 first.
        let i = weighted(2, &[(1.0, &[3.0, 2.0]), (4.0, &[2.0, 1.0])]);
        let g = gang(&i);
        assert_eq!(g.tasks[1].start, 0.0);
        assert_eq!(g.tasks[0].start, 1.0);
        assert_eq!(g.sum_wc(&i), 4.0 + 3.0);
        let s = seq_lptf(&i);
        assert_eq!((s.tasks[0].start, s.tasks[1].start), (0.0, 0.0));
        let d = dual_approx(&i);
        for s in [list_mrt(&i, &d), list_wlptf(&i, &d), list_saf(&i, &d)] {
            s.validate(&i).unwrap();
        }
    }
}

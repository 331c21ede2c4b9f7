//! vCPU ready time from the scheduler: each vCPU thread's schedstat (time on a CPU, time
//! runnable on a run queue; read by `virtlens_guest::procfs`, Documentation/scheduler/
//! sched-stats.rst). The waiting share of an interval is the vCPU's ready % (CPU steal from
//! the guest's point of view, over-commit from the host's).

use std::collections::BTreeMap;

use virtlens_guest::SchedStat;

use crate::discovery::Vmm;

/// The schedstat of every vCPU thread (named by its VMM) of `vmms`, by (pid, vcpu).
pub(crate) fn sample(vmms: &[Vmm]) -> BTreeMap<(u32, u32), SchedStat> {
    let mut out = BTreeMap::new();
    for v in vmms {
        for t in v.vcpu_threads() {
            let path = format!("/proc/{}/task/{}/schedstat", v.pid, t.tid);
            if let (Some(vcpu), Some(s)) = (t.vcpu, SchedStat::read(path)) {
                out.insert((v.pid, vcpu), s);
            }
        }
    }
    out
}

/// The share of `wall_ns` a thread spent waiting between two samples (`None` when the
/// thread's counters went back: it is another thread now).
pub(crate) fn ready_ratio(before: &SchedStat, after: &SchedStat, wall_ns: u64) -> Option<f64> {
    (wall_ns > 0 && after.wait_ns >= before.wait_ns)
        .then(|| (after.since(before).wait_ns as f64 / wall_ns as f64).clamp(0.0, 1.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ready_share_of_an_interval() {
        let s = |wait_ns| SchedStat {
            run_ns: 0,
            wait_ns,
            slices: 0,
        };
        assert_eq!(ready_ratio(&s(100), &s(600), 1000), Some(0.5));
        assert_eq!(ready_ratio(&s(600), &s(100), 1000), None);
        assert_eq!(ready_ratio(&s(0), &s(5000), 1000), Some(1.0));
    }
}

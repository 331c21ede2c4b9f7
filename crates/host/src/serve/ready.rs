//! vCPU ready time from the scheduler: `/proc/PID/task/TID/schedstat` holds three numbers, the
//! ns the thread ran on a CPU, the ns it waited on a run queue while runnable, and its time
//! slices (Documentation/scheduler/sched-stats.rst). The waiting share of an interval is the
//! vCPU's ready % (CPU steal from the guest's point of view, over-commit from the host's).

use std::collections::BTreeMap;
use std::path::Path;

use crate::discovery::Vmm;

/// One thread's schedstat: (run ns, wait ns).
pub fn read(pid: u32, tid: u32) -> Option<(u64, u64)> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/schedstat")).ok()?;
    parse(&text)
}

/// `run wait slices`.
pub fn parse(text: &str) -> Option<(u64, u64)> {
    let mut f = text.split_whitespace().map(|w| w.parse::<u64>().ok());
    Some((f.next()??, f.next()??))
}

/// The run/wait ns of every vCPU thread (named by its VMM) of `vmms`, by (pid, vcpu).
pub fn sample(vmms: &[Vmm]) -> BTreeMap<(u32, u32), (u64, u64)> {
    let mut out = BTreeMap::new();
    for v in vmms {
        for t in v.vcpu_threads() {
            if let (Some(vcpu), Some(s)) = (t.vcpu, read(v.pid, t.tid)) {
                out.insert((v.pid, vcpu), s);
            }
        }
    }
    out
}

/// Whether this kernel keeps schedstat (CONFIG_SCHED_INFO).
pub fn available() -> bool {
    Path::new("/proc/self/schedstat").exists()
}

/// The share of `wall_ns` a thread spent waiting, from two samples.
pub fn ready_ratio(before: (u64, u64), after: (u64, u64), wall_ns: u64) -> Option<f64> {
    (wall_ns > 0 && after.1 >= before.1)
        .then(|| ((after.1 - before.1) as f64 / wall_ns as f64).clamp(0.0, 1.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schedstat_lines_and_ratios() {
        assert_eq!(parse("123 456 7\n"), Some((123, 456)));
        assert_eq!(parse("x"), None);
        assert_eq!(ready_ratio((0, 100), (0, 600), 1000), Some(0.5));
        assert_eq!(ready_ratio((0, 600), (0, 100), 1000), None);
        if available() {
            let me = std::process::id();
            assert!(read(me, me).is_some());
        }
    }
}

//! The kernel files the guest side reads: /proc/stat (CPU time and steal), schedstat (run
//! and run-queue wait per thread), the clocksource in sysfs, /proc/self/smaps (huge pages a
//! mapping got), and the facts of the fingerprint (CPU model and flags, kernel, memory, THP).
//! Every reader returns `None` (or an empty value) when its file is missing or unreadable;
//! none of them prints.

use std::path::Path;

fn read(path: impl AsRef<Path>) -> Option<String> {
    std::fs::read_to_string(path).ok()
}

/// The aggregate `cpu` line of /proc/stat, in clock ticks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CpuTicks {
    pub busy: u64,
    pub idle: u64,
    pub steal: u64,
}

impl CpuTicks {
    /// This machine's counters now.
    pub fn now() -> Option<CpuTicks> {
        CpuTicks::parse(&read("/proc/stat")?)
    }

    /// Parses the `cpu ` line: user nice system idle iowait irq softirq steal (guest time is
    /// already inside user and nice).
    pub fn parse(stat: &str) -> Option<CpuTicks> {
        let line = stat.lines().find(|l| l.starts_with("cpu "))?;
        let v: Vec<u64> = line
            .split_whitespace()
            .skip(1)
            .map_while(|f| f.parse().ok())
            .collect();
        let at = |i: usize| v.get(i).copied().unwrap_or(0);
        Some(CpuTicks {
            busy: at(0) + at(1) + at(2) + at(5) + at(6),
            idle: at(3) + at(4),
            steal: at(7),
        })
    }

    /// Steal over all ticks between `self` (earlier) and `later`, in percent.
    pub fn steal_pct_until(&self, later: &CpuTicks) -> Option<f64> {
        let d = |a: u64, b: u64| b.saturating_sub(a);
        let total =
            d(self.busy, later.busy) + d(self.idle, later.idle) + d(self.steal, later.steal);
        (total > 0).then(|| 100.0 * d(self.steal, later.steal) as f64 / total as f64)
    }

    /// Busy (not idle, not stolen) over all ticks between `self` and `later`, in percent.
    pub fn busy_pct_until(&self, later: &CpuTicks) -> Option<f64> {
        let d = |a: u64, b: u64| b.saturating_sub(a);
        let total =
            d(self.busy, later.busy) + d(self.idle, later.idle) + d(self.steal, later.steal);
        (total > 0).then(|| 100.0 * d(self.busy, later.busy) as f64 / total as f64)
    }

    /// Steal since boot, in percent.
    pub fn steal_pct(&self) -> Option<f64> {
        CpuTicks::default().steal_pct_until(self)
    }
}

/// Threads running or runnable right now, over all CPUs (`procs_running` of /proc/stat; the
/// reader itself is one of them).
pub fn procs_running() -> Option<u64> {
    procs_running_in(&read("/proc/stat")?)
}

/// [`procs_running`] on the text of /proc/stat.
pub fn procs_running_in(stat: &str) -> Option<u64> {
    stat.lines()
        .find_map(|l| l.strip_prefix("procs_running "))
        .and_then(|v| v.trim().parse().ok())
}

/// One thread's (or task's) schedstat: time on a CPU, time runnable on a run queue, and the
/// number of times it was scheduled in.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SchedStat {
    pub run_ns: u64,
    pub wait_ns: u64,
    pub slices: u64,
}

impl SchedStat {
    /// Reads a `schedstat` file (`/proc/PID/task/TID/schedstat`, `/proc/thread-self/schedstat`).
    pub fn read(path: impl AsRef<Path>) -> Option<SchedStat> {
        SchedStat::parse(&read(path)?)
    }

    /// The calling thread's.
    pub fn this_thread() -> Option<SchedStat> {
        SchedStat::read("/proc/thread-self/schedstat")
    }

    /// Parses `run_ns wait_ns slices`.
    pub fn parse(text: &str) -> Option<SchedStat> {
        let mut f = text.split_whitespace().map(|w| w.parse::<u64>().ok());
        Some(SchedStat {
            run_ns: f.next()??,
            wait_ns: f.next()??,
            slices: f.next().flatten().unwrap_or(0),
        })
    }

    /// What moved since `earlier`.
    pub fn since(&self, earlier: &SchedStat) -> SchedStat {
        SchedStat {
            run_ns: self.run_ns.saturating_sub(earlier.run_ns),
            wait_ns: self.wait_ns.saturating_sub(earlier.wait_ns),
            slices: self.slices.saturating_sub(earlier.slices),
        }
    }
}

const CLOCKSOURCE: &str = "/sys/devices/system/clocksource/clocksource0";

/// The current clocksource.
pub(crate) fn clocksource() -> Option<String> {
    read(format!("{CLOCKSOURCE}/current_clocksource")).map(|s| s.trim().to_string())
}

/// The clocksources the kernel offers.
pub(crate) fn clocksources_available() -> Vec<String> {
    read(format!("{CLOCKSOURCE}/available_clocksource"))
        .map(|s| s.split_whitespace().map(str::to_string).collect())
        .unwrap_or_default()
}

/// The kB of a mapping starting at `addr` that are backed by transparent huge pages, from
/// /proc/self/smaps.
pub fn anon_huge_kb(addr: usize) -> Option<u64> {
    anon_huge_kb_in(&read("/proc/self/smaps")?, addr)
}

/// [`anon_huge_kb`] on the text of an smaps file.
pub fn anon_huge_kb_in(smaps: &str, addr: usize) -> Option<u64> {
    let mut inside = false;
    for line in smaps.lines() {
        if let Some((range, _)) = line.split_once(' ')
            && let Some((lo, hi)) = range.split_once('-')
            && let (Ok(lo), Ok(hi)) = (usize::from_str_radix(lo, 16), usize::from_str_radix(hi, 16))
        {
            inside = (lo..hi).contains(&addr);
            continue;
        }
        if inside && let Some(v) = line.strip_prefix("AnonHugePages:") {
            return v.trim().trim_end_matches("kB").trim().parse().ok();
        }
    }
    None
}

/// The first `model name` of /proc/cpuinfo.
pub(crate) fn cpu_model() -> Option<String> {
    cpuinfo_field("model name")
}

/// The CPU flags of the first processor in /proc/cpuinfo.
pub(crate) fn cpu_flags() -> Vec<String> {
    cpuinfo_field("flags")
        .map(|f| f.split_whitespace().map(str::to_string).collect())
        .unwrap_or_default()
}

fn cpuinfo_field(name: &str) -> Option<String> {
    read("/proc/cpuinfo")?.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        (k.trim() == name).then(|| v.trim().to_string())
    })
}

/// The kernel release.
pub(crate) fn kernel() -> Option<String> {
    read("/proc/sys/kernel/osrelease").map(|s| s.trim().to_string())
}

/// MemTotal in MiB.
pub(crate) fn memory_mb() -> Option<u64> {
    let info = read("/proc/meminfo")?;
    let kb: u64 = info
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    Some(kb / 1024)
}

/// The transparent-huge-page mode (the bracketed word of its sysfs file).
pub(crate) fn thp_mode() -> Option<String> {
    let s = read("/sys/kernel/mm/transparent_hugepage/enabled")?;
    let start = s.find('[')?;
    let end = s[start..].find(']')?;
    Some(s[start + 1..start + end].to_string())
}

/// Online CPUs, from /sys/devices/system/cpu/online (`0-3,6`), else what std sees.
pub fn online_cpus() -> usize {
    read("/sys/devices/system/cpu/online")
        .and_then(|s| count_cpu_list(s.trim()))
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// The number of CPUs in a kernel CPU list (`0-3,6`).
pub fn count_cpu_list(list: &str) -> Option<usize> {
    let mut n = 0;
    for part in list.split(',').filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => {
                n += b
                    .parse::<usize>()
                    .ok()?
                    .checked_sub(a.parse::<usize>().ok()?)?
                    + 1
            }
            None => {
                part.parse::<usize>().ok()?;
                n += 1;
            }
        }
    }
    (n > 0).then_some(n)
}

/// Whether a kernel module (or built-in driver) is present.
pub(crate) fn module_present(name: &str) -> bool {
    Path::new("/sys/module").join(name).exists()
}

/// A kernel module parameter's value.
pub(crate) fn module_param(module: &str, param: &str) -> Option<String> {
    read(format!("/sys/module/{module}/parameters/{param}")).map(|s| s.trim().to_string())
}

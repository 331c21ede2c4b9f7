//! Scheduler samples of the VMs' vCPU threads, taken on the host: how long each vCPU thread ran
//! and how long it waited runnable on a run queue (its `schedstat`: Linux
//! Documentation/scheduler/sched-stats.rst), how many vCPU threads were runnable (state `R`)
//! each time the threads were looked at, and the host's own CPU time from /proc/stat — steal
//! included, since the host may itself be a guest. Raw nanoseconds, ticks and counts only:
//! shares are computed by `analysis::sched`. Stored with the profile, so a capture file
//! carries them and `report`/`diagnose` of the file see them.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// A window holds at most this many intervals; beyond, neighbours are merged in pairs (a
/// day-long capture keeps a bounded series).
pub(crate) const MAX_INTERVALS: usize = 1024;

/// Everything sampled over one window.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SchedSamples {
    /// The host's online CPUs.
    pub online_cpus: u32,
    /// The wall time the samples cover.
    pub window_ns: u64,
    /// How many times the vCPU threads' states were read.
    pub state_samples: u64,
    /// VM names by VMM process id.
    pub vm_names: BTreeMap<u32, String>,
    /// Every vCPU thread watched, over the window.
    pub vcpus: Vec<VcpuSched>,
    /// The host's CPU time over the window.
    pub host: HostTicks,
    /// The window cut in intervals, in time order.
    pub intervals: Vec<SchedInterval>,
}

/// One vCPU thread over the window.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct VcpuSched {
    /// The VMM process.
    pub pid: u32,
    pub tid: u32,
    /// The vCPU index, when the thread's name says.
    pub vcpu: Option<u32>,
    pub comm: String,
    /// The wall time it was watched: from its first reading to its last.
    pub wall_ns: u64,
    /// Time on a CPU.
    pub run_ns: u64,
    /// Time runnable, waiting on a run queue.
    pub wait_ns: u64,
    /// Times it was put on a CPU (schedstat's third field).
    pub dispatches: u64,
    /// State readings that saw the thread, and those that saw it runnable (`R`).
    pub samples: u64,
    pub runnable_samples: u64,
}

/// The host's CPU time from the `cpu` line of /proc/stat, in clock ticks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostTicks {
    /// user + nice + system + irq + softirq (guest time is inside user and nice).
    pub busy: u64,
    /// idle + iowait.
    pub idle: u64,
    /// Time the host's own hypervisor ran something else while this host wanted to run.
    pub steal: u64,
    /// Ticks per second (USER_HZ).
    pub hz: u32,
}

impl HostTicks {
    /// Both counts added (for merging intervals).
    pub fn add(&mut self, other: &HostTicks) {
        self.busy = self.busy.saturating_add(other.busy);
        self.idle = self.idle.saturating_add(other.idle);
        self.steal = self.steal.saturating_add(other.steal);
        if self.hz == 0 {
            self.hz = other.hz;
        }
    }

    /// All ticks counted.
    pub fn total(&self) -> u64 {
        self.busy
            .saturating_add(self.idle)
            .saturating_add(self.steal)
    }
}

/// One interval of the window.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SchedInterval {
    /// Its start, from the window's start.
    pub start_ns: u64,
    pub duration_ns: u64,
    /// State readings taken in it.
    pub state_samples: u64,
    /// The vCPU threads seen runnable, summed over its readings.
    pub runnable: u64,
    /// vCPU threads watched in it.
    pub vcpus: u32,
    /// Run and wait time of all its vCPU threads.
    pub run_ns: u64,
    pub wait_ns: u64,
    pub host: HostTicks,
}

impl SchedInterval {
    /// `later` folded into this one (they are neighbours).
    pub fn absorb(&mut self, later: &SchedInterval) {
        self.duration_ns = later
            .start_ns
            .saturating_add(later.duration_ns)
            .saturating_sub(self.start_ns);
        self.state_samples = self.state_samples.saturating_add(later.state_samples);
        self.runnable = self.runnable.saturating_add(later.runnable);
        self.vcpus = self.vcpus.max(later.vcpus);
        self.run_ns = self.run_ns.saturating_add(later.run_ns);
        self.wait_ns = self.wait_ns.saturating_add(later.wait_ns);
        self.host.add(&later.host);
    }
}

impl SchedSamples {
    /// Appends `iv`, merging neighbours in pairs once `MAX_INTERVALS` are held.
    pub fn push_interval(&mut self, iv: SchedInterval) {
        if self.intervals.len() >= MAX_INTERVALS {
            let old = std::mem::take(&mut self.intervals);
            for pair in old.chunks(2) {
                let mut first = pair[0].clone();
                if let Some(second) = pair.get(1) {
                    first.absorb(second);
                }
                self.intervals.push(first);
            }
        }
        self.intervals.push(iv);
    }

    /// True when nothing was watched.
    pub fn is_empty(&self) -> bool {
        self.vcpus.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intervals_stay_bounded_and_cover_the_window() {
        let mut s = SchedSamples::default();
        for i in 0..(MAX_INTERVALS as u64 * 3) {
            s.push_interval(SchedInterval {
                start_ns: i * 10,
                duration_ns: 10,
                state_samples: 1,
                runnable: 2,
                ..SchedInterval::default()
            });
        }
        assert!(s.intervals.len() <= MAX_INTERVALS);
        let samples: u64 = s.intervals.iter().map(|i| i.state_samples).sum();
        assert_eq!(samples, MAX_INTERVALS as u64 * 3);
        let last = s.intervals.last().map(|i| i.start_ns + i.duration_ns);
        assert_eq!(last, Some(MAX_INTERVALS as u64 * 30));
        assert_eq!(s.intervals[0].start_ns, 0);
    }
}

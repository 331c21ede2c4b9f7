//! Exits over time: per VM and vCPU (a lane), the exits of each reason in equal time buckets,
//! and, where the input traced the host's scheduler, how the lane's vCPU thread spent each
//! bucket (running, runnable but waiting, sleeping). Built by the events builder
//! (`events::timeline`), bounded whatever the input's length: a fixed number of buckets whose
//! width doubles as the trace grows, the top reasons and lanes with the rest folded.

use serde::{Deserialize, Serialize};

/// The name of the series that folds the reasons beyond the top ones.
pub const OTHER_REASONS: &str = "other";

/// Exits per reason over time, per lane.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Timeline {
    /// The trace-clock time where the first bucket starts, in ns.
    pub start_ns: u64,
    /// The width of every bucket, in ns.
    pub bucket_ns: u64,
    /// How many buckets each series has.
    pub buckets: usize,
    /// The first and last exit's trace-clock time, in ns.
    pub first_ns: u64,
    pub last_ns: u64,
    /// The reasons drawn, most exits first; [`OTHER_REASONS`] last when reasons were folded.
    pub reasons: Vec<String>,
    /// The lanes, most exits first; a lane with `folded > 0` holds the rest.
    pub lanes: Vec<TimelineLane>,
}

/// One VM's vCPU (or the lanes folded together) over the timeline.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TimelineLane {
    /// The VMM process, when known.
    pub pid: Option<u32>,
    /// The VM's name, when the input names it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vm: Option<String>,
    /// The vCPU, when known.
    pub vcpu: Option<u32>,
    /// How many lanes are folded into this one (0: a lane of its own).
    #[serde(default)]
    pub folded: u32,
    /// Its exits with a timestamp (the sum of its series).
    pub exits: u64,
    /// The exits per bucket of each reason that has any, in the order of `reasons`.
    pub series: Vec<TimelineSeries>,
    /// How the vCPU thread spent each bucket, when the input traced the scheduler.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sched: Option<LaneSched>,
}

/// One reason's exits per bucket in one lane.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TimelineSeries {
    /// Index into [`Timeline::reasons`].
    pub reason: usize,
    pub counts: Vec<u64>,
}

/// A vCPU thread's time per bucket, in ns, as the scheduler's switches and wakeups show it;
/// a bucket's three may add up to less than its width where the thread's state was unknown.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LaneSched {
    /// On a CPU.
    pub running_ns: Vec<u64>,
    /// Runnable, waiting for a CPU (preempted or woken, not yet run).
    pub ready_ns: Vec<u64>,
    /// Blocked (sleeping, waiting for an event).
    pub sleeping_ns: Vec<u64>,
}

impl Timeline {
    /// Every exit on the timeline.
    pub fn exits(&self) -> u64 {
        self.lanes.iter().map(|l| l.exits).sum()
    }

    /// Where bucket `i` starts, in trace-clock ns.
    pub fn bucket_start(&self, i: usize) -> u64 {
        self.start_ns
            .saturating_add(self.bucket_ns.saturating_mul(i as u64))
    }
}

//! The scheduler samples of a window as shares: per vCPU thread its run share and its **ready
//! share** (runnable but not running, over wall time — the KVM counterpart of VMware's %RDY
//! per vCPU) and its wait per dispatch (the counterpart of Hyper-V's CPU Wait Time Per
//! Dispatch); per VM the mean over its vCPUs; for the host its busy CPUs, its own steal, the
//! load that is not the vCPUs', and the runnable vCPU threads per online CPU (mean of the
//! readings, and the share of intervals above one). `top`, `report` and `diagnose` read this.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::profile::sched::{HostTicks, SchedInterval, SchedSamples, VcpuSched};

/// What a window's samples say.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct SchedSummary {
    pub window_ns: u64,
    pub online_cpus: u32,
    pub state_samples: u64,
    pub host: HostCpu,
    /// vCPU threads runnable per online CPU, mean of the readings.
    pub runnable_per_cpu: Option<f64>,
    /// The most runnable vCPU threads per CPU of any interval (mean of its readings).
    pub runnable_per_cpu_peak: Option<f64>,
    /// The share of intervals (with readings) whose vCPU threads outnumbered the CPUs.
    pub intervals_over_one: Option<f64>,
    pub intervals: usize,
    /// Mean over the watched vCPU threads of their runnable share (run + wait over wall): what
    /// each wants of a CPU.
    pub demand: Option<f64>,
    /// Mean ready share over every watched vCPU thread.
    pub ready_share: Option<f64>,
    /// VMs, the most waiting first.
    pub vms: Vec<VmSched>,
}

/// The host's CPU over the window.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct HostCpu {
    /// CPUs' worth of busy time (all host work, the vCPUs' included).
    pub busy_cpus: Option<f64>,
    /// Busy over all ticks.
    pub busy_share: Option<f64>,
    /// Steal over all ticks: time the host's own hypervisor gave its CPUs to others.
    pub steal_share: Option<f64>,
    /// CPUs' worth of busy time that is not the watched vCPU threads' running.
    pub other_load_cpus: Option<f64>,
}

/// One VM (VMM process).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct VmSched {
    pub pid: u32,
    pub name: Option<String>,
    /// Mean over its vCPU threads.
    pub ready_share: f64,
    pub run_share: f64,
    pub max_ready_share: f64,
    /// Its vCPUs, by vCPU index (then thread id).
    pub vcpus: Vec<VcpuShare>,
}

/// One vCPU thread: what was sampled, and its shares.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct VcpuShare {
    #[serde(flatten)]
    pub sampled: VcpuSched,
    pub run_share: f64,
    /// Wait over wall time.
    pub ready_share: f64,
    /// Mean wait before each dispatch, when it was dispatched.
    pub wait_per_dispatch_ns: Option<f64>,
    /// Readings that saw it runnable, over those that saw it.
    pub runnable_share: Option<f64>,
}

fn share(part: u64, whole: u64) -> Option<f64> {
    (whole > 0).then(|| (part as f64 / whole as f64).min(1.0))
}

fn vcpu_share(v: &VcpuSched) -> VcpuShare {
    VcpuShare {
        sampled: v.clone(),
        run_share: share(v.run_ns, v.wall_ns).unwrap_or(0.0),
        ready_share: share(v.wait_ns, v.wall_ns).unwrap_or(0.0),
        wait_per_dispatch_ns: (v.dispatches > 0).then(|| v.wait_ns as f64 / v.dispatches as f64),
        runnable_share: share(v.runnable_samples, v.samples),
    }
}

fn host(t: &HostTicks, window_ns: u64, cpus: u32, vcpu_run_ns: u64) -> HostCpu {
    let total = t.total();
    let busy_share = share(t.busy, total);
    // CPUs' worth: each tick of every CPU counted once, so busy / all ticks × CPUs.
    let busy_cpus = busy_share.map(|b| b * f64::from(cpus));
    let window_s = window_ns as f64 / 1e9;
    let other = busy_cpus
        .filter(|_| window_s > 0.0)
        .map(|b| (b - vcpu_run_ns as f64 / 1e9 / window_s).max(0.0));
    HostCpu {
        busy_cpus,
        busy_share,
        steal_share: share(t.steal, total),
        other_load_cpus: other,
    }
}

fn runnable_per_cpu(iv: &SchedInterval, cpus: u32) -> Option<f64> {
    (iv.state_samples > 0 && cpus > 0)
        .then(|| iv.runnable as f64 / iv.state_samples as f64 / f64::from(cpus))
}

fn mean(xs: impl Iterator<Item = f64>) -> Option<f64> {
    let (n, sum) = xs.fold((0usize, 0.0), |(n, s), x| (n + 1, s + x));
    (n > 0).then(|| sum / n as f64)
}

/// The summary of `s`.
pub fn summarize(s: &SchedSamples) -> SchedSummary {
    let cpus = s.online_cpus;
    let shares: Vec<(u32, VcpuShare)> = s.vcpus.iter().map(|v| (v.pid, vcpu_share(v))).collect();
    let mut by_vm: BTreeMap<u32, Vec<VcpuShare>> = BTreeMap::new();
    for (pid, v) in &shares {
        by_vm.entry(*pid).or_default().push(v.clone());
    }
    let mut vms: Vec<VmSched> = by_vm
        .into_iter()
        .map(|(pid, mut vcpus)| {
            vcpus.sort_by_key(|v| (v.sampled.vcpu, v.sampled.tid));
            VmSched {
                pid,
                name: s.vm_names.get(&pid).cloned(),
                ready_share: mean(vcpus.iter().map(|v| v.ready_share)).unwrap_or(0.0),
                run_share: mean(vcpus.iter().map(|v| v.run_share)).unwrap_or(0.0),
                max_ready_share: vcpus.iter().map(|v| v.ready_share).fold(0.0, f64::max),
                vcpus,
            }
        })
        .collect();
    vms.sort_by(|a, b| {
        b.ready_share
            .total_cmp(&a.ready_share)
            .then(a.pid.cmp(&b.pid))
    });
    let runnable: u64 = s.vcpus.iter().map(|v| v.runnable_samples).sum();
    let per_interval: Vec<f64> = s
        .intervals
        .iter()
        .filter_map(|iv| runnable_per_cpu(iv, cpus))
        .collect();
    let vcpu_run_ns = s
        .vcpus
        .iter()
        .map(|v| v.run_ns)
        .fold(0u64, u64::saturating_add);
    SchedSummary {
        window_ns: s.window_ns,
        online_cpus: cpus,
        state_samples: s.state_samples,
        host: host(&s.host, s.window_ns, cpus, vcpu_run_ns),
        runnable_per_cpu: (s.state_samples > 0 && cpus > 0)
            .then(|| runnable as f64 / s.state_samples as f64 / f64::from(cpus)),
        runnable_per_cpu_peak: per_interval.iter().copied().reduce(f64::max),
        intervals_over_one: (!per_interval.is_empty()).then(|| {
            per_interval.iter().filter(|&&r| r > 1.0).count() as f64 / per_interval.len() as f64
        }),
        intervals: s.intervals.len(),
        demand: mean(
            shares
                .iter()
                .map(|(_, v)| (v.run_share + v.ready_share).min(1.0)),
        ),
        ready_share: mean(shares.iter().map(|(_, v)| v.ready_share)),
        vms,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vcpu(pid: u32, tid: u32, run_ms: u64, wait_ms: u64) -> VcpuSched {
        VcpuSched {
            pid,
            tid,
            vcpu: Some(tid % 10),
            comm: format!("vcpu{}", tid % 10),
            wall_ns: 1_000_000_000,
            run_ns: run_ms * 1_000_000,
            wait_ns: wait_ms * 1_000_000,
            dispatches: 100,
            samples: 20,
            runnable_samples: 20,
        }
    }

    #[test]
    fn shares_per_vcpu_vm_and_host() {
        let mut s = SchedSamples {
            online_cpus: 2,
            window_ns: 1_000_000_000,
            state_samples: 20,
            vcpus: vec![
                vcpu(7, 71, 330, 660),
                vcpu(7, 72, 340, 650),
                vcpu(9, 91, 900, 10),
            ],
            host: HostTicks {
                busy: 180,
                idle: 0,
                steal: 20,
                hz: 100,
            },
            ..SchedSamples::default()
        };
        s.vm_names.insert(7, "crowded".into());
        s.push_interval(SchedInterval {
            duration_ns: 1_000_000_000,
            state_samples: 20,
            runnable: 60,
            ..SchedInterval::default()
        });
        let m = summarize(&s);
        assert_eq!(m.vms[0].pid, 7, "the most waiting VM first");
        assert_eq!(m.vms[0].name.as_deref(), Some("crowded"));
        assert!((m.vms[0].ready_share - 0.655).abs() < 1e-9);
        assert!((m.vms[0].max_ready_share - 0.66).abs() < 1e-9);
        assert_eq!(m.vms[0].vcpus[0].wait_per_dispatch_ns, Some(6_600_000.0));
        // 60 runnable over 20 readings on 2 CPUs.
        assert_eq!(m.runnable_per_cpu, Some(1.5));
        assert_eq!(m.intervals_over_one, Some(1.0));
        assert_eq!(m.host.steal_share, Some(0.1));
        // 1.8 CPUs busy, 1.57 of them the vCPUs running.
        assert!((m.host.other_load_cpus.unwrap_or(0.0) - 0.23).abs() < 1e-9);
        assert!(m.demand.is_some_and(|d| d > 0.9));
    }

    #[test]
    fn nothing_sampled_says_nothing() {
        let m = summarize(&SchedSamples::default());
        assert!(m.vms.is_empty());
        assert_eq!(m.runnable_per_cpu, None);
        assert_eq!(m.ready_share, None);
        assert_eq!(m.host.busy_share, None);
    }
}

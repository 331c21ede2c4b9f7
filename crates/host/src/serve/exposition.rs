//! The exporter's [`State`] as Prometheus metrics, encoded by the official client
//! (`prometheus-client`) in the OpenMetrics text format, and the same text in the classic
//! Prometheus text format (0.0.4) for clients that do not ask for OpenMetrics (curl,
//! `promtool check metrics`): there a counter's family is named with its `_total`, and
//! there is no `# EOF`.
//!
//! Names follow the Prometheus conventions: counters end in `_total`, durations are in
//! seconds, ratios are 0..1. Every per-VM series has the label `vm` (its name; a VM named only
//! by its process title also by its pid) and `uuid` when the VMM was given one (libvirt
//! passes the domain's), so series survive a VM's restart; `virtlens_vm_info` adds the VMM's
//! `pid`, its kind and where the name came from.

use std::fmt::Write as _;
use std::sync::{Arc, Mutex};

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric, NoLabelSet};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::registry::Registry;

use super::families::text;
use super::state::{Family, State, VmState};
use crate::bpf::Pair;
use crate::bpf::maps::Hist;

/// The OpenMetrics content type.
pub(crate) const OPENMETRICS: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";
/// The classic text format's content type.
pub(crate) const TEXT: &str = "text/plain; version=0.0.4; charset=utf-8";

/// Histogram bounds: 2^k ns for k in this range (256 ns .. about 17 s), then +Inf.
const BOUNDS_LOG2_NS: std::ops::RangeInclusive<u32> = 8..=34;

type Labels = Vec<(&'static str, String)>;

/// Encodes the shared state at each call.
#[derive(Debug)]
struct Exposition(Arc<Mutex<State>>);

/// The registry whose only collector reads `state`.
pub fn registry(state: Arc<Mutex<State>>) -> Registry {
    let mut r = Registry::default();
    r.register_collector(Box::new(Exposition(state)));
    r
}

/// The state in the OpenMetrics text format.
pub fn encode(registry: &Registry) -> Result<String, std::fmt::Error> {
    let mut out = String::new();
    prometheus_client::encoding::text::encode(&mut out, registry)?;
    Ok(out)
}

/// OpenMetrics text → the classic text format (see the module doc).
pub fn classic(openmetrics: &str) -> String {
    let mut out = String::with_capacity(openmetrics.len());
    let mut help: Option<&str> = None;
    for line in openmetrics.lines() {
        if line.starts_with("# HELP ") {
            help = Some(line);
            continue;
        }
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, kind) = rest.split_once(' ').unwrap_or((rest, ""));
            let (family, kind) = match kind {
                "counter" => (format!("{name}_total"), kind),
                "info" => (format!("{name}_info"), "gauge"),
                _ => (name.to_string(), kind),
            };
            if let Some(h) = help.take() {
                let text = h.strip_prefix("# HELP ").and_then(|t| t.split_once(' '));
                let _ = writeln!(out, "# HELP {family} {}", text.map_or("", |t| t.1));
            }
            let _ = writeln!(out, "# TYPE {family} {kind}");
            continue;
        }
        if line == "# EOF" || line.starts_with("# UNIT ") {
            continue;
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

impl Collector for Exposition {
    fn encode(&self, mut enc: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let Ok(state) = self.0.lock() else {
            return Ok(());
        };
        host(&state, &mut enc)?;
        let vms: Vec<(Labels, &VmState)> = state.vms.values().map(|vm| (vm.labels(), vm)).collect();
        let mut info = enc.encode_descriptor(
            "virtlens_vm",
            "Each VM virtlens watches: its VMM process, the VMM's kind and where its name came from (value 1).",
            None,
            MetricType::Info,
        )?;
        for (&pid, vm) in &state.vms {
            let mut l = vm.labels();
            l.push(("pid", pid.to_string()));
            l.push(("vmm", vm.vmm.clone()));
            l.push(("name_source", vm.name_source.clone()));
            info.encode_info(&l)?;
        }
        for family in Family::ALL {
            counters(&vms, family, &mut enc)?;
        }
        histograms(&vms, &mut enc)?;
        sched(&vms, &mut enc)?;
        let mut m = enc.encode_descriptor(
            "virtlens_kvm_stat",
            "KVM binary statistics (cumulative counters of the VM and its vCPUs, summed), \
             increments since the exporter started.",
            None,
            MetricType::Counter,
        )?;
        for (l, vm) in &vms {
            for (stat, n) in &vm.kvm_stats {
                let mut l = l.clone();
                l.push(("stat", stat.clone()));
                ConstCounter::new(*n).encode(m.encode_family(&l)?)?;
            }
        }
        let mut m = enc.encode_descriptor(
            "virtlens_finding",
            "Findings of the diagnosis over the sliding window, now (value 1).",
            None,
            MetricType::Gauge,
        )?;
        for (l, vm) in &vms {
            for (id, severity) in &vm.findings {
                let mut l = l.clone();
                l.push(("id", id.clone()));
                l.push(("severity", severity.clone()));
                ConstGauge::new(1i64).encode(m.encode_family(&l)?)?;
            }
        }
        Ok(())
    }
}

fn host(state: &State, enc: &mut DescriptorEncoder) -> Result<(), std::fmt::Error> {
    let h = &state.host;
    let mut m = enc.encode_descriptor(
        "virtlens_exporter",
        "The exporter: where its counts come from (bpf: in-kernel aggregation; tracefs: \
         the trace buffer), its version, the host's KVM backend and what exit times there are \
         (hardware; nested: inside another hypervisor; emulated-cpu: a CPU software emulates, \
         times about 100x hardware; pvm) (value 1).",
        None,
        MetricType::Info,
    )?;
    m.encode_info(&vec![
        ("source", h.source.clone()),
        ("version", virtlens_core::VERSION.to_string()),
        ("backend", h.backend.clone()),
        ("timing", h.timing.clone()),
    ])?;
    let gauge = |enc: &mut DescriptorEncoder, name, help, v: f64| {
        ConstGauge::new(v).encode(enc.encode_descriptor(name, help, None, MetricType::Gauge)?)
    };
    gauge(enc, "virtlens_vms", "VMs exported.", state.vms.len() as f64)?;
    gauge(
        enc,
        "virtlens_vms_not_exported",
        "VMs left out because --max-vms were exported.",
        h.vms_over_limit as f64,
    )?;
    gauge(
        enc,
        "virtlens_collect_duration_seconds",
        "How long the last collection took.",
        h.collect_seconds,
    )?;
    let counter = |enc: &mut DescriptorEncoder, name, help, v: u64| {
        ConstCounter::new(v).encode(enc.encode_descriptor(name, help, None, MetricType::Counter)?)
    };
    counter(enc, "virtlens_collects", "Collections made.", h.collects)?;
    counter(
        enc,
        "virtlens_lost_events",
        "Events the tracefs capture lost (its ring buffer was full).",
        h.lost,
    )?;
    counter(
        enc,
        "virtlens_dropped_latency_samples",
        "Latency samples dropped because the in-kernel histogram map was full, or two threads \
         shared a start slot.",
        h.dropped_latencies,
    )?;
    let mut m = enc.encode_descriptor(
        "virtlens_bpf_program_run_seconds",
        "Time the kernel spent in the aggregation's program of each tracepoint (counted only \
         while sysctl kernel.bpf_stats_enabled is 1).",
        None,
        MetricType::Counter,
    )?;
    for p in &h.programs {
        ConstCounter::new(p.run_ns as f64 / 1e9)
            .encode(m.encode_family(&vec![("event", p.event.clone())])?)?;
    }
    let mut m = enc.encode_descriptor(
        "virtlens_bpf_program_runs",
        "Runs of the aggregation's program of each tracepoint (counted only while sysctl \
         kernel.bpf_stats_enabled is 1).",
        None,
        MetricType::Counter,
    )?;
    for p in &h.programs {
        ConstCounter::new(p.runs).encode(m.encode_family(&vec![("event", p.event.clone())])?)?;
    }
    let mut m = enc.encode_descriptor(
        "virtlens_bpf_program_misses",
        "Events of each tracepoint not counted: the kernel skipped the aggregation's program \
         because another BPF program was running on that CPU (recursion_misses).",
        None,
        MetricType::Counter,
    )?;
    for p in &h.programs {
        ConstCounter::new(p.misses).encode(m.encode_family(&vec![("event", p.event.clone())])?)?;
    }
    let mut m = enc.encode_descriptor(
        "virtlens_unkeyed_events",
        "Events counted without their VM and key because the in-kernel count map was full.",
        None,
        MetricType::Counter,
    )?;
    for (event, n) in &h.unkeyed {
        ConstCounter::new(*n).encode(m.encode_family(&vec![("event", event.clone())])?)?;
    }
    Ok(())
}

fn counters(
    vms: &[(Labels, &VmState)],
    family: Family,
    enc: &mut DescriptorEncoder,
) -> Result<(), std::fmt::Error> {
    let t = text(family);
    let series = |l: &Labels, k: &super::state::SeriesKey| {
        let mut l = l.clone();
        l.push((t.labels.0, k.key.clone()));
        if let Some(n) = t.labels.1 {
            l.push((
                n,
                if k.name.is_empty() {
                    "unknown".into()
                } else {
                    k.name.clone()
                },
            ));
        }
        if let Some(a) = t.labels.2 {
            l.push((a, k.access.clone()));
        }
        l
    };
    let mut m = enc.encode_descriptor(t.name, t.help, None, MetricType::Counter)?;
    for (l, vm) in vms {
        if let Some(b) = vm.families.get(&family) {
            for (k, s) in b.all() {
                ConstCounter::new(s.count).encode(m.encode_family(&series(l, &k))?)?;
            }
        }
    }
    if let Some((name, help)) = t.time {
        let mut m = enc.encode_descriptor(name, help, None, MetricType::Counter)?;
        for (l, vm) in vms {
            if let Some(b) = vm.families.get(&family) {
                for (k, s) in b.all() {
                    if let Some(ns) = s.time_ns {
                        ConstCounter::new(ns as f64 / 1e9)
                            .encode(m.encode_family(&series(l, &k))?)?;
                    }
                }
            }
        }
    }
    Ok(())
}

fn histograms(
    vms: &[(Labels, &VmState)],
    enc: &mut DescriptorEncoder,
) -> Result<(), std::fmt::Error> {
    let mut m = enc.encode_descriptor(
        "virtlens_exit_latency_seconds",
        "Exit handling latency: path kernel is VM exit to VM entry (kvm_exit/kvm_entry), path \
         vmm is KVM_RUN returning to the VMM until it is entered again.",
        None,
        MetricType::Histogram,
    )?;
    for (l, vm) in vms {
        for (pair, path) in [(Pair::Exit, "kernel"), (Pair::Vmm, "vmm")] {
            if let Some(h) = vm.hists.get(&pair) {
                let mut l = l.clone();
                l.push(("path", path.to_string()));
                encode_hist(h, m.encode_family(&l)?)?;
            }
        }
    }
    let mut m = enc.encode_descriptor(
        "virtlens_halt_duration_seconds",
        "Time a vCPU polled or waited in halt before it woke (kvm_vcpu_wakeup).",
        None,
        MetricType::Histogram,
    )?;
    for (l, vm) in vms {
        if let Some(h) = vm.hists.get(&Pair::Halt) {
            encode_hist(h, m.encode_family(l)?)?;
        }
    }
    Ok(())
}

fn encode_hist(
    h: &Hist,
    mut m: prometheus_client::encoding::MetricEncoder<'_>,
) -> Result<(), std::fmt::Error> {
    // The client adds the buckets up: hand it each bound's own count. Log2 bucket b holds
    // [2^b, 2^(b+1)) ns, so bound 2^k ns takes bucket k-1 (the first bound every bucket
    // below it), and +Inf the rest.
    let first = *BOUNDS_LOG2_NS.start() as usize;
    let last = *BOUNDS_LOG2_NS.end() as usize;
    let mut buckets = vec![(
        (1u64 << first) as f64 / 1e9,
        h.buckets[..first].iter().sum::<u64>(),
    )];
    for k in first + 1..=last {
        buckets.push(((1u64 << k) as f64 / 1e9, h.buckets[k - 1]));
    }
    let count = h.count();
    buckets.push((f64::INFINITY, h.buckets[last..].iter().sum()));
    m.encode_histogram::<NoLabelSet>(h.sum_ns as f64 / 1e9, count, &buckets, None)
}

fn sched(vms: &[(Labels, &VmState)], enc: &mut DescriptorEncoder) -> Result<(), std::fmt::Error> {
    let each = |enc: &mut DescriptorEncoder,
                name: &'static str,
                help: &'static str,
                kind: MetricType,
                value: &dyn Fn(&super::state::Sched) -> Option<f64>| {
        let mut m = enc.encode_descriptor(name, help, None, kind)?;
        for (l, vm) in vms {
            for (vcpu, s) in &vm.vcpus {
                let Some(v) = value(s) else { continue };
                let mut l = l.clone();
                l.push(("vcpu", vcpu.to_string()));
                match kind {
                    MetricType::Counter => ConstCounter::new(v).encode(m.encode_family(&l)?)?,
                    _ => ConstGauge::new(v).encode(m.encode_family(&l)?)?,
                }
            }
        }
        Ok::<(), std::fmt::Error>(())
    };
    each(
        enc,
        "virtlens_vcpu_run_seconds",
        "Time the vCPU thread ran on a host CPU (schedstat).",
        MetricType::Counter,
        &|s| Some(s.run_ns as f64 / 1e9),
    )?;
    each(
        enc,
        "virtlens_vcpu_wait_seconds",
        "Time the vCPU thread was runnable but waited for a host CPU (schedstat): ready time.",
        MetricType::Counter,
        &|s| Some(s.wait_ns as f64 / 1e9),
    )?;
    each(
        enc,
        "virtlens_vcpu_ready_ratio",
        "Share of the last interval the vCPU thread waited for a host CPU (0..1).",
        MetricType::Gauge,
        &|s| s.ready,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_are_named_with_total_in_the_classic_format() {
        let om = "# HELP a_exits Exits.\n# TYPE a_exits counter\na_exits_total{vm=\"x\"} 5\n\
                  # HELP a_lat_seconds Lat.\n# TYPE a_lat_seconds histogram\n\
                  a_lat_seconds_count 0\n# EOF\n";
        let text = classic(om);
        assert!(text.starts_with("# HELP a_exits_total Exits.\n# TYPE a_exits_total counter\n"));
        assert!(text.contains("# TYPE a_lat_seconds histogram\n"));
        assert!(!text.contains("# EOF"));
    }

    fn sample() -> String {
        use crate::bpf::maps::HIST_BUCKETS;
        let mut st = State::new(5, 10, std::time::Duration::ZERO, "bpf");
        let mut vm = VmState::new("win \"10\"", "qemu", "libvirt");
        let mut buckets = [0u64; HIST_BUCKETS];
        buckets[3] = 2; // under the first bound
        buckets[12] = 5; // 4-8 µs
        buckets[40] = 1; // beyond the last bound
        vm.hists.insert(
            Pair::Vmm,
            Hist {
                buckets,
                sum_ns: 50_000,
            },
        );
        vm.findings.push(("timer.rtc-port".into(), "high".into()));
        st.vms.insert(42, vm);
        let reg = registry(Arc::new(Mutex::new(st)));
        encode(&reg).unwrap()
    }

    #[test]
    fn histograms_are_cumulative_and_end_at_their_count() {
        let om = sample();
        let bucket = |le: &str| -> u64 {
            om.lines()
                .find(|l| {
                    l.starts_with("virtlens_exit_latency_seconds_bucket")
                        && l.contains(&format!("le=\"{le}\""))
                })
                .and_then(|l| l.rsplit(' ').next())
                .and_then(|v| v.parse().ok())
                .unwrap_or_else(|| panic!("no bucket {le} in {om}"))
        };
        assert_eq!(bucket("2.56e-7"), 2);
        assert_eq!(bucket("0.000008192"), 7);
        assert_eq!(bucket("+Inf"), 8);
        assert!(
            om.contains(
                "virtlens_exit_latency_seconds_count{vm=\"win \\\"10\\\"\",path=\"vmm\"} 8"
            ),
            "{om}"
        );
        assert!(
            om.contains("virtlens_vm_info{vm=\"win \\\"10\\\"\",pid=\"42\",vmm=\"qemu\""),
            "{om}"
        );
        assert!(om.contains("virtlens_finding{vm="));
        assert!(om.ends_with("# EOF\n"));
    }
}

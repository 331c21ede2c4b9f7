//! What the hypervisor counters say, per VM: the per-VP numbers (run time in the guest and in
//! the hypervisor, intercepts and the interrupt-related ones among them, CPU wait per
//! dispatch), esxtop's ready / co-stop / max-limited per VM, and the `hv.*` findings they
//! support, each with the numbers it rests on. Every threshold is a ratio or a published
//! alarm level, never a number from one sample; with an IO rate (`--iops`), intercepts and
//! VP time are also given per IO, and the IOPS ceiling that VP time implies.

use std::collections::BTreeMap;

use serde::Serialize;

use super::names::*;
use crate::diagnose::hypotheses::HvRule;
use crate::diagnose::hypotheses::sched::{DISPATCH_WAIT_NS, READY};
use crate::profile::{CounterLog, Series};

/// The per-VP counters of one VM (or of `_Total`), rates summed over its VPs and
/// percentages and per-dispatch times averaged.
#[derive(Debug, Clone, Default, Serialize)]
pub struct VpMetrics {
    /// The VM name, or `_Total`.
    pub subject: String,
    /// VP instances summed (0 for `_Total`, whose VP count the counters do not say).
    pub vps: usize,
    pub guest_run_pct: Option<f64>,
    pub hv_run_pct: Option<f64>,
    pub intercepts_per_s: Option<f64>,
    pub external_interrupts_per_s: Option<f64>,
    pub virtual_interrupts_per_s: Option<f64>,
    pub ipis_sent_per_s: Option<f64>,
    pub eoi_per_s: Option<f64>,
    pub hypercalls_per_s: Option<f64>,
    pub io_instructions_per_s: Option<f64>,
    pub msr_per_s: Option<f64>,
    pub nested_page_faults_per_s: Option<f64>,
    pub posted_notifications_per_s: Option<f64>,
    pub cpu_wait_ns: Option<f64>,
}

/// esxtop's CPU scheduling numbers of one VM.
#[derive(Debug, Clone, Default, Serialize)]
pub struct EsxVm {
    pub vm: String,
    /// vCPU worlds seen (`Vcpu` instances); 0 when only the group is logged.
    pub vcpus: usize,
    /// `% Ready` per vCPU (the group's value divided by its vCPUs when they are known).
    pub ready_pct: Option<f64>,
    pub costop_pct: Option<f64>,
    pub max_limited_pct: Option<f64>,
}

/// How much a finding matters: the one scale diagnose and lint grade on too (counters never
/// rate a finding critical).
pub use crate::severity::Severity as Level;

/// A named number a finding rests on.
#[derive(Debug, Clone, Serialize)]
pub struct Fact {
    pub name: &'static str,
    pub value: f64,
    /// `%`, `/s`, `ns`, `per IO`, `IOPS`, `ratio`, `count`.
    pub unit: &'static str,
}

/// One `hv.*` finding.
#[derive(Debug, Clone, Serialize)]
pub struct HvFinding {
    pub id: HvRule,
    pub level: Level,
    pub subject: String,
    pub facts: Vec<Fact>,
}

/// esxtop %CSTP per vCPU from which co-stop alone is a (low) over-commit finding.
pub(crate) const COSTOP_PCT: f64 = 3.0;

fn mean(s: &Series) -> Option<f64> {
    s.stats.map(|s| s.mean)
}

/// The per-VM VP metrics of `log` (VMs in name order, `_Total` last).
pub fn vp_metrics(log: &CounterLog) -> Vec<VpMetrics> {
    let mut by: BTreeMap<String, (Vec<&Series>, std::collections::BTreeSet<String>)> =
        BTreeMap::new();
    for s in log
        .series
        .iter()
        .filter(|s| s.path.object.eq_ignore_ascii_case(VP))
    {
        let inst = s.path.instance.as_deref().unwrap_or("_Total");
        let subject = if s.path.is_total() {
            "_Total".to_string()
        } else {
            vm_of_vp(inst).unwrap_or(inst).to_string()
        };
        let e = by.entry(subject).or_default();
        e.0.push(s);
        if !s.path.is_total() {
            e.1.insert(inst.to_ascii_lowercase());
        }
    }
    let mut out: Vec<VpMetrics> = by
        .into_iter()
        .map(|(subject, (series, vps))| {
            let pick = |counter: &str| -> Vec<f64> {
                series
                    .iter()
                    .filter(|s| s.path.counter.eq_ignore_ascii_case(counter))
                    .filter_map(|s| mean(s))
                    .collect()
            };
            let sum = |c: &str| {
                Some(pick(c))
                    .filter(|v| !v.is_empty())
                    .map(|v| v.iter().sum())
            };
            let avg = |c: &str| {
                let v = pick(c);
                (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
            };
            VpMetrics {
                vps: vps.len(),
                guest_run_pct: avg(GUEST_RUN),
                hv_run_pct: avg(HV_RUN),
                intercepts_per_s: sum(INTERCEPTS),
                external_interrupts_per_s: sum(EXTERNAL_INTERRUPTS),
                virtual_interrupts_per_s: sum(VIRTUAL_INTERRUPTS),
                ipis_sent_per_s: sum(IPIS_SENT),
                eoi_per_s: sum(EOI),
                hypercalls_per_s: sum(HYPERCALLS),
                io_instructions_per_s: sum(IO_INSTRUCTIONS),
                msr_per_s: sum(MSR_ACCESSES),
                nested_page_faults_per_s: sum(NESTED_PAGE_FAULTS),
                posted_notifications_per_s: sum(POSTED_NOTIFICATIONS),
                cpu_wait_ns: avg(CPU_WAIT),
                subject,
            }
        })
        .collect();
    out.sort_by_key(|m| m.subject == "_Total");
    out
}

/// esxtop's per-VM scheduling numbers.
pub(crate) fn esx_vms(log: &CounterLog) -> Vec<EsxVm> {
    let mut vms: BTreeMap<String, EsxVm> = BTreeMap::new();
    for s in &log.series {
        let Some(inst) = s.path.instance.as_deref() else {
            continue;
        };
        if s.path.object.eq_ignore_ascii_case(ESX_VCPU)
            && s.path.counter.eq_ignore_ascii_case(ESX_READY)
        {
            let vm = vm_of_esx(inst).to_string();
            vms.entry(vm.clone())
                .or_insert_with(|| EsxVm {
                    vm,
                    ..EsxVm::default()
                })
                .vcpus += 1;
        }
    }
    for s in log
        .series
        .iter()
        .filter(|s| s.path.object.eq_ignore_ascii_case(ESX_GROUP))
    {
        let Some(inst) = s.path.instance.as_deref() else {
            continue;
        };
        let vm = vm_of_esx(inst).to_string();
        let e = vms.entry(vm.clone()).or_insert_with(|| EsxVm {
            vm,
            ..EsxVm::default()
        });
        let per = e.vcpus.max(1) as f64;
        let c = &s.path.counter;
        if c.eq_ignore_ascii_case(ESX_READY) {
            e.ready_pct = mean(s).map(|v| v / per);
        } else if c.eq_ignore_ascii_case(ESX_COSTOP) {
            e.costop_pct = mean(s).map(|v| v / per);
        } else if c.eq_ignore_ascii_case(ESX_MAX_LIMITED) {
            e.max_limited_pct = mean(s).map(|v| v / per);
        }
    }
    vms.into_values()
        .filter(|v| v.ready_pct.is_some() || v.costop_pct.is_some() || v.max_limited_pct.is_some())
        .collect()
}

/// The share of VP run time spent in the hypervisor, when both run times are known.
fn hv_share(m: &VpMetrics) -> Option<(f64, f64, f64)> {
    let (g, h) = (m.guest_run_pct?, m.hv_run_pct?);
    (g + h > 0.0).then(|| (g, h, h / (g + h)))
}

/// The `hv.*` findings of `log`; `iops` is the IO rate of the workload, when given.
pub(crate) fn findings(log: &CounterLog, iops: Option<f64>) -> Vec<HvFinding> {
    let mut out = Vec::new();
    let vps = vp_metrics(log);
    // Per VM where VMs are named; `_Total` only when it is all there is.
    let named = vps.iter().any(|m| m.subject != "_Total");
    for m in vps.iter().filter(|m| !named || m.subject != "_Total") {
        hypervisor_time(m, iops, &mut out);
        interrupt_delivery(m, iops, &mut out);
        cpu_wait(m, &mut out);
    }
    for v in esx_vms(log) {
        esx(&v, &mut out);
    }
    // Causes before the symptoms they explain, at the same level.
    let rank = |id: HvRule| match id {
        HvRule::HypervisorTime => 1,
        HvRule::InterruptDelivery | HvRule::Overcommit | HvRule::CpuLimit => 0,
    };
    out.sort_by(|a, b| b.level.cmp(&a.level).then(rank(a.id).cmp(&rank(b.id))));
    out
}

fn fact(name: &'static str, value: f64, unit: &'static str) -> Fact {
    Fact { name, value, unit }
}

fn hypervisor_time(m: &VpMetrics, iops: Option<f64>, out: &mut Vec<HvFinding>) {
    let Some((g, h, share)) = hv_share(m) else {
        return;
    };
    let level = match share {
        s if s >= 0.33 => Level::High,
        s if s >= 0.15 => Level::Medium,
        s if s >= 0.05 && h >= 5.0 => Level::Low,
        _ => return,
    };
    let mut facts = vec![
        fact("guest run time", g, "%"),
        fact("hypervisor run time", h, "%"),
        fact("share of VP run time in the hypervisor", share * 100.0, "%"),
    ];
    if let Some(iops) = iops.filter(|i| *i > 0.0) {
        // VP time per IO is (g + h)% of the VPs over iops; the VP count cancels in the ceiling.
        facts.push(fact("IOPS", iops, "IOPS"));
        facts.push(fact(
            "IOPS ceiling at this cost (VPs 100% busy)",
            iops * 100.0 / (g + h),
            "IOPS",
        ));
        facts.push(fact(
            "IOPS ceiling without the hypervisor time",
            iops * 100.0 / g,
            "IOPS",
        ));
        if m.vps > 0 {
            facts.push(fact(
                "hypervisor time per IO",
                h / 100.0 * m.vps as f64 * 1e9 / iops,
                "ns",
            ));
        }
    }
    out.push(HvFinding {
        id: HvRule::HypervisorTime,
        level,
        subject: m.subject.clone(),
        facts,
    });
}

fn interrupt_delivery(m: &VpMetrics, iops: Option<f64>, out: &mut Vec<HvFinding>) {
    let Some(total) = m.intercepts_per_s.filter(|t| *t > 0.0) else {
        return;
    };
    let ext = m.external_interrupts_per_s.unwrap_or(0.0);
    let eoi = m.eoi_per_s.unwrap_or(0.0);
    let ipi = m.ipis_sent_per_s.unwrap_or(0.0);
    let irq = ext + eoi + ipi;
    let share = irq / total;
    let hv = hv_share(m).map(|(_, _, s)| s);
    if share < 0.4 || total < 1_000.0 {
        return;
    }
    let level = match hv {
        Some(s) if s >= 0.33 => Level::High,
        Some(s) if s >= 0.15 => Level::Medium,
        Some(_) => Level::Low,
        None => Level::Medium,
    };
    let mut facts = vec![
        fact("total intercepts", total, "/s"),
        fact("external interrupts", ext, "/s"),
        fact("APIC EOI accesses", eoi, "/s"),
        fact("APIC IPIs sent", ipi, "/s"),
        fact("interrupt-related share of intercepts", share * 100.0, "%"),
    ];
    if let Some(v) = m.virtual_interrupts_per_s {
        facts.push(fact("virtual interrupts", v, "/s"));
    }
    if let Some(p) = m.posted_notifications_per_s {
        facts.push(fact("posted interrupt notifications", p, "/s"));
    }
    if let Some(iops) = iops.filter(|i| *i > 0.0) {
        facts.push(fact("IOPS", iops, "IOPS"));
        facts.push(fact("intercepts per IO", total / iops, "per IO"));
        facts.push(fact("external interrupts per IO", ext / iops, "per IO"));
        facts.push(fact("EOI accesses per IO", eoi / iops, "per IO"));
        facts.push(fact("IPIs sent per IO", ipi / iops, "per IO"));
        if let Some(v) = m.virtual_interrupts_per_s {
            facts.push(fact("virtual interrupts per IO", v / iops, "per IO"));
        }
    }
    out.push(HvFinding {
        id: HvRule::InterruptDelivery,
        level,
        subject: m.subject.clone(),
        facts,
    });
}

/// The level a ready share per vCPU reaches on the thresholds of the KVM ready-time findings
/// (`sched.*`: 5% low, 10% medium, 20% high), so that %RDY, CPU wait and schedstat read alike.
fn ready_level(share: f64) -> Option<Level> {
    match share {
        s if s >= READY[2] => Some(Level::High),
        s if s >= READY[1] => Some(Level::Medium),
        s if s >= READY[0] => Some(Level::Low),
        _ => None,
    }
}

/// The level a mean wait per dispatch reaches alone, as in `sched.*`: low from 60 µs, medium
/// from 100 µs (a monitoring product's alarm levels), never high without a ready share.
pub(crate) fn dispatch_wait_level(wait_ns: f64) -> Option<Level> {
    match wait_ns {
        w if w >= DISPATCH_WAIT_NS[1] => Some(Level::Medium),
        w if w >= DISPATCH_WAIT_NS[0] => Some(Level::Low),
        _ => None,
    }
}

/// Hyper-V's CPU Wait Time Per Dispatch: VPs ready to run that wait for a logical processor.
fn cpu_wait(m: &VpMetrics, out: &mut Vec<HvFinding>) {
    let Some(w) = m.cpu_wait_ns else { return };
    let Some(level) = dispatch_wait_level(w) else {
        return;
    };
    out.push(HvFinding {
        id: HvRule::Overcommit,
        level,
        subject: m.subject.clone(),
        facts: vec![fact("CPU wait time per dispatch", w, "ns")],
    });
}

/// esxtop's %RDY / %CSTP per vCPU and %MLMTD of one VM.
fn esx(v: &EsxVm, out: &mut Vec<HvFinding>) {
    let ready = v.ready_pct.unwrap_or(0.0);
    let costop = v.costop_pct.unwrap_or(0.0);
    // Co-stop above 3% per vCPU (VMware KB 2002181) is worth a look whatever the ready time.
    let level = ready_level(ready / 100.0).max((costop >= COSTOP_PCT).then_some(Level::Low));
    if let Some(level) = level {
        out.push(HvFinding {
            id: HvRule::Overcommit,
            level,
            subject: v.vm.clone(),
            facts: vec![
                fact("ready (%RDY)", ready, "%"),
                fact("co-stop (%CSTP)", costop, "%"),
                fact("vCPUs seen", v.vcpus as f64, "count"),
            ],
        });
    }
    if let Some(m) = v.max_limited_pct.filter(|m| *m >= 1.0) {
        out.push(HvFinding {
            id: HvRule::CpuLimit,
            level: if m >= 5.0 { Level::High } else { Level::Medium },
            subject: v.vm.clone(),
            facts: vec![fact("max limited (%MLMTD)", m, "%")],
        });
    }
}

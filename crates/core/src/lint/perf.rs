//! `HV-PERF-*`: configurations that run, but slowly — Windows without the timer and clock
//! enlightenments, SynIC/vAPIC steering a guest away from APICv/AVIC, PIT reinjection on AMD
//! AVIC, missing PV TLB flush/IPI, spinlocks, direct stimers for nested guests, hv-time on a
//! host whose TSC page is invalid, and eVMCS for Windows 11 on Intel.

use super::context::Ctx;
use super::{Finding, Fix, Severity, fix};
use crate::config::{HvFlag, PitPolicy, WinGen};

/// The core Windows set, for a guest that has none.
const WINDOWS_SET: [HvFlag; 11] = [
    HvFlag::Relaxed,
    HvFlag::Vapic,
    HvFlag::Spinlocks,
    HvFlag::Vpindex,
    HvFlag::Runtime,
    HvFlag::Synic,
    HvFlag::Stimer,
    HvFlag::Frequencies,
    HvFlag::Time,
    HvFlag::Tlbflush,
    HvFlag::Ipi,
];

pub(super) fn check(ctx: &Ctx<'_>, out: &mut Vec<Finding>) {
    let win = ctx.windows();
    let none = win && !ctx.e.any_enlightenment();
    if none {
        out.push(ctx.finding(
            "HV-PERF-001",
            Severity::High,
            "Windows guest without any Hyper-V enlightenment: its timer and clock fall back to the \
             emulated HPET, RTC or ACPI PM timer — high idle CPU and slow time reads"
                .to_string(),
            ctx.anchor(),
            fix::add(
                "apply the recommended set (virtlens lint --recommend windows-general)",
                &WINDOWS_SET,
            ),
        ));
    }
    let old = matches!(ctx.guest.windows, Some(WinGen::PreVista | WinGen::Vista));
    if win && !old && !ctx.on(HvFlag::Stimer) {
        out.push(ctx.finding(
            "HV-PERF-002",
            Severity::High,
            "no hv-stimer: Windows 7/2008 R2 and later fall back to the HPET (or the RTC) as system \
             timer; 30–50% idle CPU per vCPU has been observed"
                .to_string(),
            ctx.origin(HvFlag::Stimer),
            fix::add("turn on the synthetic timers and what they need", &timer_set(ctx)),
        ));
    }
    if win
        && !ctx.on(HvFlag::Stimer)
        && let Some(h) = ctx.c.timers.hpet.as_ref().filter(|h| !h.value)
    {
        let mut f = fix::add(
            "turn on hv-stimer (preferred), or re-enable the HPET (<timer name='hpet' present='yes'/> / -machine hpet=on)",
            &timer_set(ctx),
        );
        f.summary.push_str(" — without either Windows uses the RTC");
        out.push(ctx.finding(
            "HV-PERF-003",
            Severity::High,
            "no hv-stimer and the HPET is disabled: Windows ends up with the RTC as system timer, \
             the worst case (a flood of RTC interrupts and IO port exits even when idle)"
                .to_string(),
            h.origin.clone(),
            f,
        ));
    }
    // With hv-stimer on and hv-time off, HV-DEP-002 already reports it (same fix).
    if win && !ctx.on(HvFlag::Time) && !ctx.on(HvFlag::Stimer) {
        out.push(ctx.finding(
            "HV-PERF-004",
            Severity::High,
            "no hv-time: Windows reads time (QPC) from the ACPI PM timer (IO 0x608/0xb008) or the HPET, \
             each read an exit to QEMU (~3.6 µs) instead of a TSC-page memory read"
                .to_string(),
            ctx.origin(HvFlag::Time),
            fix::add("turn on hv-time", &[HvFlag::Time]),
        ));
    }
    apic(ctx, out);
    if let Some(f) = pit(ctx) {
        out.push(f);
    }
    super::avic::check(ctx, out);
    if win && !none && !ctx.on(HvFlag::Frequencies) {
        out.push(ctx.finding(
            "HV-PERF-008",
            Severity::Low,
            "no hv-frequencies: the guest calibrates the TSC and APIC timer at boot instead of \
             reading their frequencies"
                .to_string(),
            ctx.origin(HvFlag::Frequencies),
            fix::add("turn on hv-frequencies", &[HvFlag::Frequencies]),
        ));
    }
    scaling(ctx, out, win, none);
    host_dependent(ctx, out);
}

/// hv-stimer and what it needs that is not on yet.
fn timer_set(ctx: &Ctx<'_>) -> Vec<HvFlag> {
    [HvFlag::Vpindex, HvFlag::Synic, HvFlag::Stimer, HvFlag::Time]
        .into_iter()
        .filter(|f| !ctx.on(*f))
        .collect()
}

/// HV-PERF-005/006: SynIC AutoEOI and the APIC-access recommendation on an APICv/AVIC host.
fn apic(ctx: &Ctx<'_>, out: &mut Vec<Finding>) {
    if ctx.apic_virt() != Some(true) || ctx.on(HvFlag::Avic) {
        return;
    }
    let avic_fix = || {
        fix::add(
            "turn on hv-avic (QEMU ≥ 6.2, libvirt ≥ 8.10)",
            &[HvFlag::Avic],
        )
    };
    if ctx.on(HvFlag::Synic) {
        let many = ctx.vcpus().is_some_and(|n| n >= 8);
        let severity = if ctx.opts.ipi_heavy || many {
            Severity::High
        } else {
            Severity::Medium
        };
        let mut f = avic_fix();
        f.summary.push_str(
            "; verify with the kvm_apicv_inhibit_changed tracepoint (reason HYPERV) that the inhibit is gone",
        );
        out.push(ctx.finding(
            "HV-PERF-005",
            severity,
            "hv-synic without hv-avic on a host with APICv/AVIC: Windows uses SynIC AutoEOI, so KVM \
             inhibits APICv/AVIC for the whole VM and every IPI, EOI and timer interrupt goes through \
             the emulated LAPIC (kernels before 2021 inhibit as soon as SynIC is on)"
                .to_string(),
            ctx.origin(HvFlag::Synic),
            f,
        ));
    }
    if ctx.on(HvFlag::Vapic) {
        out.push(ctx.finding(
            "HV-PERF-006",
            Severity::Medium,
            "hv-vapic without hv-avic on a host with APICv/AVIC: QEMU sets HV_APIC_ACCESS_RECOMMENDED, \
             so Windows writes EOI/ICR/TPR through synthetic MSRs (an exit each) instead of the \
             accelerated APIC"
                .to_string(),
            ctx.origin(HvFlag::Vapic),
            avic_fix(),
        ));
    }
}

/// HV-PERF-007: in-kernel PIT reinjection inhibits AVIC on AMD.
fn pit(ctx: &Ctx<'_>) -> Option<Finding> {
    if !ctx.amd() || ctx.apic_virt() != Some(true) {
        return None;
    }
    let t = &ctx.c.timers;
    let in_kernel = t.kernel_irqchip.as_ref().is_none_or(|k| k.value == "on");
    let present = t.pit_present.as_ref().is_none_or(|p| p.value);
    let reinject = t.pit.as_ref().is_none_or(|p| p.value != PitPolicy::Discard);
    if !(in_kernel && present && reinject) {
        return None;
    }
    let (element, how) = match &t.pit {
        Some(p) => (
            p.origin.clone(),
            "the PIT's lost-tick policy is delay (reinjection on)",
        ),
        None => (
            ctx.clock_anchor(),
            "no PIT policy is set, and KVM creates the PIT with reinjection on",
        ),
    };
    Some(ctx.finding(
        "HV-PERF-007",
        Severity::High,
        format!("AMD host with AVIC: {how}, so KVM inhibits AVIC for the VM (reason PIT_REINJ)"),
        element,
        Fix::new(
            "set the PIT to discard lost ticks",
            "<timer name='pit' tickpolicy='discard'/>",
            "-global kvm-pit.lost_tick_policy=discard",
        ),
    ))
}

/// HV-PERF-009/010: PV TLB flush, IPIs and spinlocks where vCPUs are many or contended.
fn scaling(ctx: &Ctx<'_>, out: &mut Vec<Finding>, win: bool, none: bool) {
    if !win || none {
        return;
    }
    let many = ctx.vcpus().is_some_and(|n| n >= 8);
    let missing: Vec<HvFlag> = [HvFlag::Vpindex, HvFlag::Tlbflush, HvFlag::Ipi]
        .into_iter()
        .filter(|f| !ctx.on(*f))
        .collect();
    let pv_missing = missing.iter().any(|f| *f != HvFlag::Vpindex);
    if pv_missing && (many || ctx.opts.overcommitted) {
        let why = match (many, ctx.vcpus_text()) {
            (true, Some(n)) => n,
            _ => "an overcommitted host".to_string(),
        };
        let first = missing
            .iter()
            .copied()
            .find(|f| *f != HvFlag::Vpindex)
            .unwrap_or(HvFlag::Tlbflush);
        out.push(ctx.finding(
            "HV-PERF-009",
            Severity::Medium,
            format!(
                "no {} with {why}: TLB shootdowns and IPIs go through APIC exits one vCPU at a time, \
                 and wait for preempted vCPUs; the PV hypercalls skip them",
                missing
                    .iter()
                    .filter(|f| **f != HvFlag::Vpindex)
                    .map(|f| f.qemu())
                    .collect::<Vec<_>>()
                    .join(" and ")
            ),
            ctx.origin(first),
            fix::add("turn on hv-tlbflush and hv-ipi (+ tlbflush extended on QEMU ≥ 7.1)", &missing),
        ));
    }
    if ctx.opts.overcommitted && !ctx.on(HvFlag::Spinlocks) {
        out.push(ctx.finding(
            "HV-PERF-010",
            Severity::Medium,
            "spinlocks never notify on an overcommitted host: a vCPU spinning on a lock held by a \
             preempted vCPU burns its time slice instead of telling the hypervisor"
                .to_string(),
            ctx.origin(HvFlag::Spinlocks),
            fix::add("set spinlock retries to 4095–8191", &[HvFlag::Spinlocks]),
        ));
    }
}

/// HV-PERF-011/012/013: nested workloads, the host clocksource, Windows 11 on Intel.
fn host_dependent(ctx: &Ctx<'_>, out: &mut Vec<Finding>) {
    if ctx.opts.nested_workload && ctx.on(HvFlag::Stimer) && !ctx.on(HvFlag::StimerDirect) {
        out.push(ctx.finding(
            "HV-PERF-011",
            Severity::High,
            "nested workload with hv-stimer in message mode: Hyper-V inside the guest uses only \
             direct-mode synthetic timers (a SynIC message costs ≥ 1500 cycles per expiry vs 300–400)"
                .to_string(),
            ctx.origin(HvFlag::Stimer),
            fix::add("turn on stimer direct mode", &[HvFlag::StimerDirect]),
        ));
    }
    if ctx.on(HvFlag::Time)
        && let Some(cs) = ctx.opts.host.clocksource.as_deref().filter(|c| *c != "tsc")
    {
        out.push(ctx.finding(
            "HV-PERF-012",
            Severity::High,
            format!(
                "hv-time is on but the host clocksource is {cs}, not tsc: KVM publishes no valid TSC \
                 page, so every guest time read is an RDMSR 0x40000020 exit"
            ),
            ctx.origin(HvFlag::Time),
            Fix::words(
                "make the host clocksource tsc (echo tsc > /sys/devices/system/clocksource/clocksource0/\
                 current_clocksource; check why the kernel marked the TSC unstable)",
            ),
        ));
    }
    if ctx.guest.windows == Some(WinGen::Win11) && ctx.intel() && !ctx.on(HvFlag::Evmcs) {
        let mut need = vec![HvFlag::Evmcs];
        if !ctx.on(HvFlag::Vapic) {
            need.insert(0, HvFlag::Vapic);
        }
        out.push(ctx.finding(
            "HV-PERF-013",
            Severity::Medium,
            "Windows 11/2022/2025 on an Intel host without hv-evmcs: with VBS/MBEC these guests \
             have frozen or spun at 100% CPU on some Intel CPUs; hv-evmcs avoids the path"
                .to_string(),
            ctx.origin(HvFlag::Evmcs),
            fix::add("turn on hv-evmcs (Intel hosts only; needs hv-vapic)", &need),
        ));
    }
}

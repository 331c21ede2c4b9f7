//! `HV-OPS-*`: operational traps — passthrough (migration blocker, host-dependent set),
//! reenlightenment on migrated VMs, hv-crash eating Windows crash dumps, debug-only flags,
//! core-sharing claims without pinning, flags that do nothing, bad spinlock counts, duplicates,
//! hidden hypervisors and guests that ignore the enlightenments.

use super::context::Ctx;
use super::{Finding, Fix, Severity, fix};
use crate::config::effective::parse_number;
use crate::config::{Format, GuestFamily, GuestSource, HvFlag, WinGen};

pub(super) fn check(ctx: &Ctx<'_>, out: &mut Vec<Finding>) {
    passthrough(ctx, out);
    if ctx.opts.migratable
        && ctx.c.timers.tsc_frequency.is_none()
        && let Some(s) = ctx.explicit_on(HvFlag::Reenlightenment)
    {
        out.push(ctx.finding(
            "HV-OPS-002",
            Severity::High,
            "hv-reenlightenment on a VM that is migrated, without a fixed TSC frequency: KVM does not \
             fully support the notifications and migration to a host with another TSC rate fails"
                .to_string(),
            s.origin.clone(),
            fix::remove(
                "drop hv-reenlightenment, or pin the TSC frequency (<timer name='tsc' frequency='…'/> / -cpu …,tsc-frequency=…) on TSC-scaling hosts",
                HvFlag::Reenlightenment,
            ),
        ));
    }
    crash(ctx, out);
    if let Some(s) = ctx.explicit_on(HvFlag::Syndbg) {
        let bridge = if ctx.c.panic.vmbus_bridge.is_none() {
            " and there is no -device vmbus-bridge, without which some Windows guests do not boot"
        } else {
            ""
        };
        out.push(ctx.finding(
            "HV-OPS-004",
            Severity::Medium,
            format!("hv-syndbg (synthetic debugger) is a debugging feature{bridge}"),
            s.origin.clone(),
            fix::remove("remove hv-syndbg in production", HvFlag::Syndbg),
        ));
    }
    coresharing(ctx, out);
    if let Some(s) = ctx.explicit_on(HvFlag::EnforceCpuid) {
        out.push(ctx.finding(
            "HV-OPS-006",
            Severity::Info,
            "hv-enforce-cpuid is a debugging feature: KVM then refuses every enlightenment not in CPUID"
                .to_string(),
            s.origin.clone(),
            fix::remove("remove hv-enforce-cpuid", HvFlag::EnforceCpuid),
        ));
    }
    if let Some(s) = ctx.explicit_on(HvFlag::Reset) {
        out.push(ctx.finding(
            "HV-OPS-007",
            Severity::Info,
            "hv-reset is not used by modern Windows (virt-install leaves it out)".to_string(),
            s.origin.clone(),
            fix::remove("may be dropped", HvFlag::Reset),
        ));
    }
    if let Some(s) = ctx.explicit_on(HvFlag::VendorId)
        && !ctx.e.any_enlightenment()
    {
        out.push(ctx.finding(
            "HV-OPS-008",
            Severity::Info,
            "a Hyper-V vendor id without any enlightenment does nothing: it is not an enlightenment \
             and does not turn on the Hyper-V interface by itself"
                .to_string(),
            s.origin.clone(),
            Fix::words("add the enlightenments it was meant to go with, or drop it"),
        ));
    }
    spinlocks_and_duplicates(ctx, out);
    guest(ctx, out);
}

fn passthrough(ctx: &Ctx<'_>, out: &mut Vec<Finding>) {
    let Some(origin) = &ctx.c.hyperv.passthrough else {
        return;
    };
    let (severity, migr) = if ctx.opts.migratable {
        (Severity::High, "this VM is migrated, and ")
    } else {
        (Severity::Medium, "")
    };
    out.push(ctx.finding(
        "HV-OPS-001",
        severity,
        format!(
            "Hyper-V passthrough: {migr}QEMU blocks migration of such a VM; the flag set is whatever \
             this host's KVM offers (hv-avic even without APICv/AVIC, hv-evmcs on Intel), so it \
             differs between hosts"
        ),
        origin.clone(),
        Fix::new(
            "list the flags explicitly (virtlens lint --recommend windows-general)",
            "<hyperv mode='custom'> with the flags listed",
            "-cpu …,hv-relaxed=on,hv-vapic=on,… instead of hv-passthrough",
        ),
    ));
    let ignored: Vec<_> = ctx
        .c
        .hyperv
        .flags
        .iter()
        .filter(|(f, s)| !s.on && f.in_passthrough())
        .collect();
    if let Some((_, first)) = ignored.first() {
        let names: Vec<&str> = ignored.iter().map(|(f, _)| f.qemu()).collect();
        out.push(ctx.finding(
            "HV-OPS-009",
            Severity::Medium,
            format!(
                "Hyper-V passthrough with {} turned off: passthrough overrides the other hv settings, \
                 so the disable may be ignored",
                names.join(", ")
            ),
            first.origin.clone(),
            Fix::new(
                "use an explicit flag list without them",
                "<hyperv mode='custom'> listing only the wanted flags",
                "-cpu …,hv-relaxed=on,… without hv-passthrough",
            ),
        ));
    }
}

/// HV-OPS-003: hv-crash stops the VM at a guest panic before Windows writes its dump.
fn crash(ctx: &Ctx<'_>, out: &mut Vec<Finding>) {
    let Some(s) = ctx.explicit_on(HvFlag::Crash) else {
        return;
    };
    let action = ctx.c.panic.action.as_ref().map(|a| a.value.as_str());
    if matches!(action, Some("pause" | "none" | "preserve")) {
        return;
    }
    let what = action.map_or_else(
        || "the default panic action (shutdown/destroy)".to_string(),
        |a| format!("panic action {a}"),
    );
    out.push(ctx.finding(
        "HV-OPS-003",
        Severity::Medium,
        format!(
            "hv-crash with {what}: Windows reports the crash through the crash MSRs and the VM is \
             stopped before it writes a memory dump"
        ),
        s.origin.clone(),
        Fix::new(
            "drop hv-crash, or set the panic action to pause/none and consume the GUEST_PANICKED event",
            "<on_crash>preserve</on_crash> (or remove <panic model='hyperv'/>)",
            "-action panic=pause (or drop hv-crash)",
        ),
    ));
}

/// HV-OPS-005: claiming no core sharing without pinning, or `auto` (migration blocker).
fn coresharing(ctx: &Ctx<'_>, out: &mut Vec<Finding>) {
    let Some(s) = ctx.explicit_on(HvFlag::NoNonarchCoresharing) else {
        return;
    };
    let (severity, message) = match s.value.as_deref() {
        Some("auto") => (
            Severity::Medium,
            "hv-no-nonarch-coresharing=auto copies KVM's value and blocks migration".to_string(),
        ),
        _ if ctx.c.pinned.is_none() => (
            Severity::High,
            "hv-no-nonarch-coresharing=on tells Windows that vCPUs never share a core unless they are \
             SMT siblings, but the vCPUs are not pinned: the guest may skip SMT side-channel \
             mitigations it needs"
                .to_string(),
        ),
        _ => return,
    };
    out.push(ctx.finding(
        "HV-OPS-005",
        severity,
        message,
        s.origin.clone(),
        Fix::words(
            "pin the vCPUs with an SMT-correct topology (<cputune><vcpupin …/>), or use \
             hv-no-nonarch-coresharing=off",
        ),
    ));
}

/// HV-OPS-010/011.
fn spinlocks_and_duplicates(ctx: &Ctx<'_>, out: &mut Vec<Finding>) {
    if let Some(s) = ctx.c.hyperv.flags.get(&HvFlag::Spinlocks).filter(|s| s.on)
        && let Some(n) = s.value.as_deref().and_then(parse_number)
        && n < 0xfff
    {
        let who = if ctx.c.format == Format::Libvirt {
            "libvirt rejects retries below 4095"
        } else {
            "libvirt and older QEMU reject fewer than 4095 (0xfff) retries"
        };
        out.push(ctx.finding(
            "HV-OPS-010",
            Severity::Critical,
            format!("spinlock retries {n} is below the minimum: {who}"),
            s.origin.clone(),
            fix::add("raise the retries to 4095–8191", &[HvFlag::Spinlocks]),
        ));
    }
    for d in &ctx.c.hyperv.duplicates {
        let name = &d.what;
        let mut f = ctx.finding(
            "HV-OPS-011",
            Severity::Low,
            format!("{name} is set more than once: the configuration is ambiguous (the last setting wins)"),
            d.origin.clone(),
            Fix::words(format!("keep one {name} setting")),
        );
        f.count = d.count;
        out.push(f);
    }
}

/// HV-OPS-012/013/014: whether the guest can use the enlightenments at all.
fn guest(ctx: &Ctx<'_>, out: &mut Vec<Finding>) {
    let any = ctx.e.any_enlightenment();
    let known_linux =
        ctx.guest.family == GuestFamily::Linux && ctx.guest.source != GuestSource::Heuristic;
    if known_linux && any && ctx.c.cpu.kvm_hidden.is_none() {
        out.push(ctx.finding(
            "HV-OPS-012",
            Severity::Info,
            "Linux guest with Hyper-V enlightenments and KVM not hidden: Linux stays on the KVM \
             platform (kvmclock, KVM PV features) and ignores the hv-* flags"
                .to_string(),
            ctx.anchor(),
            Fix::words("drop the hv-* flags (harmless), or hide KVM if Hyper-V features are wanted"),
        ));
    }
    if ctx.windows() {
        let hidden = ctx
            .c
            .cpu
            .hypervisor_hidden
            .as_ref()
            .map(|o| (o, "the hypervisor CPUID bit is hidden"))
            .or_else(|| {
                ctx.c
                    .cpu
                    .kvm_hidden
                    .as_ref()
                    .map(|o| (o, "the KVM signature is hidden"))
            });
        if let Some((origin, what)) = hidden {
            out.push(ctx.finding(
                "HV-OPS-013",
                Severity::Info,
                format!(
                    "{what}: this changes Windows' timer and clock choice; hiding the hypervisor bit \
                     makes Windows ignore every enlightenment"
                ),
                origin.clone(),
                Fix::words(
                    "prefer hv-time and hv-stimer; keep hiding only where needed (anti-detection, old NVIDIA drivers)",
                ),
            ));
        }
    }
    if ctx.guest.windows == Some(WinGen::PreVista) && any {
        out.push(ctx.finding(
            "HV-OPS-014",
            Severity::Info,
            "Windows XP/2003 (NT 5.x) does not use the Hyper-V enlightenments (Proxmox sets none below \
             NT 6.0)"
                .to_string(),
            ctx.anchor(),
            Fix::words("drop the hv-* flags (harmless)"),
        ));
    }
}

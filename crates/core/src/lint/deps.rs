//! `HV-DEP-*`: the hard dependencies QEMU enforces on KVM (a VM that breaks one does not start:
//! `kvm_hyperv_properties[].dependencies` and `hv_feature_check_deps` in
//! qemu/qemu@00001a22d183:target/i386/kvm/kvm.c), and settings QEMU or libvirt reject
//! (`HV-DEP-009`): names they do not know, libvirt's `state` other than on/off, and flags newer
//! than the QEMU/libvirt the configuration targets.

use super::context::Ctx;
use super::{Finding, Severity, fix};
use crate::config::{Format, HvFlag, Version};

/// (rule, flag, what it needs): the dependencies QEMU's `hyperv.c` enforces, one rule per
/// edge group.
const EDGES: [(&str, HvFlag, &[HvFlag]); 9] = [
    ("HV-DEP-001", HvFlag::Stimer, &[HvFlag::Synic]),
    ("HV-DEP-002", HvFlag::Stimer, &[HvFlag::Time]),
    ("HV-DEP-003", HvFlag::Synic, &[HvFlag::Vpindex]),
    ("HV-DEP-004", HvFlag::StimerDirect, &[HvFlag::Stimer]),
    ("HV-DEP-005", HvFlag::Tlbflush, &[HvFlag::Vpindex]),
    ("HV-DEP-005", HvFlag::Ipi, &[HvFlag::Vpindex]),
    ("HV-DEP-006", HvFlag::TlbflushExt, &[HvFlag::Tlbflush]),
    ("HV-DEP-007", HvFlag::Evmcs, &[HvFlag::Vapic]),
    (
        "HV-DEP-008",
        HvFlag::Syndbg,
        &[HvFlag::Synic, HvFlag::Relaxed],
    ),
];

/// `HV-DEP-007` also covers tlbflush-direct.
const EXTRA: [(&str, HvFlag, &[HvFlag]); 1] =
    [("HV-DEP-007", HvFlag::TlbflushDirect, &[HvFlag::Vapic])];

pub(super) fn check(ctx: &Ctx<'_>, out: &mut Vec<Finding>) {
    for (rule, flag, needs) in EDGES.iter().chain(EXTRA.iter()) {
        if !ctx.on(*flag) {
            continue;
        }
        let missing: Vec<HvFlag> = needs.iter().copied().filter(|n| !ctx.on(*n)).collect();
        if missing.is_empty() {
            continue;
        }
        let names: Vec<String> = missing
            .iter()
            .map(|m| format!("Hyper-V {} ({})", m.what(), m.qemu()))
            .collect();
        let mut message = format!(
            "Hyper-V {} ({}) requires {}: QEMU refuses to start the VM on KVM{}",
            flag.what(),
            flag.qemu(),
            names.join(" and "),
            ctx.tcg_remark()
        );
        if missing.contains(&HvFlag::Time) && ctx.c.format == Format::Libvirt {
            message.push_str(
                "; libvirt emits hv-time only for <timer name='hypervclock' present='yes'/> in <clock>, \
                 never for <stimer/> alone",
            );
            if let Some(t) = ctx.c.hyperv.flags.get(&HvFlag::Time) {
                message.push_str(&format!(
                    " (the hypervclock timer at {} lacks present='yes')",
                    t.origin
                ));
            }
        }
        if *flag == HvFlag::Syndbg {
            message.push_str("; see also HV-OPS-004");
        }
        let summary = format!(
            "turn on {}",
            missing
                .iter()
                .map(|m| m.qemu())
                .collect::<Vec<_>>()
                .join(" and ")
        );
        out.push(ctx.finding(
            rule,
            Severity::Critical,
            message,
            ctx.origin(*flag),
            fix::add(summary, &missing),
        ));
    }
    rejected(ctx, out);
    versions(ctx, out);
}

/// `HV-DEP-009` without a target version: names QEMU/libvirt do not know and libvirt's
/// malformed switches — libvirt rejects the domain (`virDomainFeaturesHyperVDefParse`,
/// "unsupported HyperV Enlightenment feature"), QEMU refuses an unknown `-cpu` property.
fn rejected(ctx: &Ctx<'_>, out: &mut Vec<Finding>) {
    for u in &ctx.c.hyperv.unknown {
        let (message, fix) = if ctx.c.format == Format::Libvirt {
            (
                format!(
                    "<{}> is not a Hyper-V enlightenment libvirt knows: libvirt rejects the domain \
                     (unsupported HyperV Enlightenment feature)",
                    u.value
                ),
                "remove it, or correct its name (libvirt's formatdomain lists the <hyperv> children)",
            )
        } else {
            (
                format!(
                    "`{}` is not a Hyper-V property QEMU knows: QEMU refuses to start \
                     (property not found)",
                    u.value
                ),
                "remove it, or correct its name (QEMU's docs/system/i386/hyperv.rst lists them)",
            )
        };
        out.push(ctx.finding(
            "HV-DEP-009",
            Severity::Critical,
            message,
            u.origin.clone(),
            fix::Fix::words(fix),
        ));
    }
    for i in &ctx.c.hyperv.invalid {
        let mut f = ctx.finding(
            "HV-DEP-009",
            Severity::Critical,
            format!("{}: libvirt rejects the domain", i.what),
            i.origin.clone(),
            fix::Fix::words("write state='on' or state='off' (and mode='custom' or 'passthrough')"),
        );
        f.count = i.count;
        out.push(f);
    }
}

/// `HV-DEP-009`: only with a target version given.
fn versions(ctx: &Ctx<'_>, out: &mut Vec<Finding>) {
    let qemu = ctx.opts.qemu_version;
    let libvirt = ctx
        .opts
        .libvirt_version
        .filter(|_| ctx.c.format == Format::Libvirt);
    if qemu.is_none() && libvirt.is_none() {
        return;
    }
    let too_new = |need_q: Option<Version>, need_l: Option<Version>| -> Vec<String> {
        let mut why = Vec::new();
        if let (Some(have), Some(need)) = (qemu, need_q)
            && have < need
        {
            why.push(format!("QEMU {need} (target: {have})"));
        }
        if let (Some(have), Some(need)) = (libvirt, need_l)
            && have < need
        {
            why.push(format!("libvirt {need} (target: {have})"));
        }
        why
    };
    if let Some(origin) = &ctx.c.hyperv.passthrough {
        let why = too_new(Some(Version(4, 1)), Some(Version(8, 0)));
        if !why.is_empty() {
            out.push(ctx.finding(
                "HV-DEP-009",
                Severity::Critical,
                format!(
                    "hv-passthrough needs {}: unknown property or schema error",
                    why.join(" and ")
                ),
                origin.clone(),
                fix::Fix::words("list the flags explicitly, or upgrade"),
            ));
        }
    }
    for (&flag, s) in &ctx.c.hyperv.flags {
        if !s.on {
            continue;
        }
        let why = too_new(flag.qemu_since(), flag.libvirt_since());
        if why.is_empty() {
            continue;
        }
        out.push(ctx.finding(
            "HV-DEP-009",
            Severity::Critical,
            format!(
                "{} ({}) needs {}: the target rejects it as an unknown property or a schema error",
                flag.what(),
                flag.qemu(),
                why.join(" and ")
            ),
            s.origin.clone(),
            fix::remove(format!("drop {} or upgrade", flag.qemu()), flag),
        ));
    }
}

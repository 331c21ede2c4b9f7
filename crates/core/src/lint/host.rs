//! `HV-HOST-*`: flags that do not fit the host — hv-evmcs where there is no Intel VMX, hv-avic
//! where the host has no APICv/AVIC. Both need host facts and stay silent without them.

use super::context::Ctx;
use super::{Finding, Severity, fix};
use crate::config::HvFlag;

pub(super) fn check(ctx: &Ctx<'_>, out: &mut Vec<Finding>) {
    if let Some(s) = ctx.explicit_on(HvFlag::Evmcs) {
        let why = if ctx.vendor_known_not_intel() {
            let vendor = match &ctx.opts.host.vendor {
                Some(crate::facts::Vendor::Amd) => "AMD".to_string(),
                Some(crate::facts::Vendor::Hygon) => "Hygon".to_string(),
                Some(v) => format!("{v:?}"),
                None => "unknown".to_string(),
            };
            Some(format!(
                "hv-evmcs (enlightened VMCS) is Intel-only but the host CPU is {vendor}: \
                 KVM does not offer it and the VM does not start"
            ))
        } else if ctx.c.cpu.nested_virt.as_ref().is_some_and(|n| !n.value) {
            Some(
                "hv-evmcs is on but VMX is removed from the guest CPU: the guest cannot use an \
                 enlightened VMCS, and some hosts refuse the eVMCS version range"
                    .to_string(),
            )
        } else {
            None
        };
        if let Some(message) = why {
            out.push(ctx.finding(
                "HV-HOST-001",
                Severity::Critical,
                message,
                s.origin.clone(),
                fix::remove(
                    "drop hv-evmcs on AMD hosts (enable it only on Intel)",
                    HvFlag::Evmcs,
                ),
            ));
        }
    }
    let avic = ctx
        .explicit_on(HvFlag::Avic)
        .map(|s| s.origin.clone())
        .or_else(|| ctx.c.hyperv.passthrough.clone());
    if let (Some(origin), Some(false)) = (avic, ctx.apic_virt()) {
        let via = if ctx.passthrough() {
            " (hv-passthrough turns it on: KVM always offers it)"
        } else {
            ""
        };
        let mut f = fix::remove(
            "drop hv-avic, or turn on APIC virtualization on the host (kvm_intel enable_apicv=1 / kvm_amd avic=1)",
            HvFlag::Avic,
        );
        if ctx.passthrough() {
            f.summary =
                "list the flags explicitly without hv-avic, or turn on APICv/AVIC on the host \
                         (kvm_intel enable_apicv=1 / kvm_amd avic=1)"
                    .to_string();
        }
        out.push(ctx.finding(
            "HV-HOST-002",
            Severity::Medium,
            format!(
                "hv-avic is on{via} but the host has no APICv/AVIC: QEMU documents a negative effect \
                 on guest performance without hardware APIC virtualization"
            ),
            origin,
            f,
        ));
    }
}

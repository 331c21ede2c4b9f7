//! `HV-PERF-014/015`: what else inhibits AVIC on an AMD host with AVIC on, beside the PIT
//! (`HV-PERF-007`) and SynIC without hv-avic (`HV-PERF-005`): SVM exposed to the guest (the
//! NESTED inhibit), and x2APIC where the host kernel has no x2AVIC or the vCPUs' APIC IDs are
//! beyond what AVIC addresses (X2APIC, PHYSICAL_ID_TOO_BIG). All need the host facts
//! (`--host-vendor amd --host-apicv on`, or `--host-facts`) and stay silent without them.

use super::context::Ctx;
use super::{Finding, Fix, Severity};
use crate::config::Version;

/// Linux 5.19 (f44509f849fe): AVIC inhibited only on vCPUs running a nested guest, not on
/// the whole VM as soon as SVM is exposed.
const KERNEL_NESTED_AVIC: Version = Version(5, 19);
/// Linux 6.0: x2AVIC and hybrid AVIC; before, an x2APIC guest inhibits AVIC (X2APIC).
const KERNEL_X2AVIC: Version = Version(6, 0);
/// The APIC IDs x2AVIC addresses (0..=511); AVIC inhibits beyond (PHYSICAL_ID_TOO_BIG).
const X2AVIC_IDS: u32 = 512;

pub(super) fn check(ctx: &Ctx<'_>, out: &mut Vec<Finding>) {
    if !ctx.amd() || ctx.apic_virt() != Some(true) {
        return;
    }
    let kernel = ctx.opts.host.kernel.as_deref().and_then(Version::parse);
    if let Some(svm) = ctx.c.cpu.svm.as_ref().filter(|s| s.value) {
        let (severity, scope) = match kernel {
            Some(k) if k < KERNEL_NESTED_AVIC => (
                Severity::High,
                "this host kernel (before 5.19) inhibits AVIC for the whole VM as soon as SVM is \
                 exposed",
            ),
            Some(_) => (
                Severity::Low,
                "from Linux 5.19 only the vCPUs running a nested guest lose AVIC",
            ),
            None => (
                Severity::Medium,
                "before Linux 5.19 the whole VM loses AVIC as soon as SVM is exposed; from 5.19 \
                 only the vCPUs running a nested guest",
            ),
        };
        out.push(ctx.finding(
            "HV-PERF-014",
            severity,
            format!(
                "SVM is exposed to the guest on an AMD host with AVIC: a vCPU running a nested \
                 guest inhibits AVIC (reason NESTED); {scope}"
            ),
            svm.origin.clone(),
            Fix::new(
                "remove SVM from guests that run no VMs of their own (or kvm_amd nested=0)",
                "<cpu …><feature policy='disable' name='svm'/></cpu>",
                "-cpu …,-svm",
            ),
        ));
    }
    let x2apic_off = ctx.c.cpu.x2apic.as_ref().is_some_and(|s| !s.value);
    let origin = || {
        ctx.c
            .cpu
            .x2apic
            .as_ref()
            .map_or_else(|| ctx.anchor(), |s| s.origin.clone())
    };
    if let Some(k) = kernel.filter(|&k| k < KERNEL_X2AVIC)
        && !x2apic_off
    {
        let few = ctx.vcpus().is_none_or(|n| n <= 255);
        out.push(ctx.finding(
            "HV-PERF-015",
            Severity::High,
            format!(
                "the guest has x2APIC and this host kernel ({}.{}) predates x2AVIC (Linux 6.0): \
                 KVM inhibits AVIC for the VM (reason X2APIC)",
                k.0, k.1
            ),
            origin(),
            if few {
                Fix::new(
                    "hide x2APIC from the guest (≤ 255 vCPUs), or run Linux ≥ 6.0 on the host",
                    "<cpu …><feature policy='disable' name='x2apic'/></cpu>",
                    "-cpu …,-x2apic",
                )
            } else {
                Fix::words(
                    "run Linux ≥ 6.0 on the host (x2AVIC on Zen 4, hybrid AVIC before): more than \
                     255 vCPUs need x2APIC",
                )
            },
        ));
    }
    if let Some(n) = ctx.vcpus().filter(|&n| n > X2AVIC_IDS) {
        out.push(ctx.finding(
            "HV-PERF-015",
            Severity::Medium,
            format!(
                "{n} vCPUs on an AMD host with AVIC: APIC IDs beyond {} are out of AVIC's reach, \
                 and KVM inhibits AVIC for the VM (reason PHYSICAL_ID_TOO_BIG; older kernels \
                 refuse the vCPU)",
                X2AVIC_IDS - 1
            ),
            ctx.c
                .max_vcpus
                .as_ref()
                .or(ctx.c.vcpus.as_ref())
                .map_or_else(|| ctx.anchor(), |s| s.origin.clone()),
            Fix::new(
                format!("at most {X2AVIC_IDS} vCPUs per VM on AVIC hosts"),
                format!("<vcpu>{X2AVIC_IDS}</vcpu>"),
                format!("-smp {X2AVIC_IDS}"),
            ),
        ));
    }
}

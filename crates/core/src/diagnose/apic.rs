//! `apic.*`: interrupts and IPIs that exit because APIC virtualization is off, absent or
//! inhibited — SynIC AutoEOI inhibiting APICv on a Windows guest (the talk's trap), xAPIC page
//! accesses trapped and emulated, AVIC off or inhibited on AMD, IPIs through the x2APIC ICR,
//! and the APIC writes APICv still lets through (normal).
//! Reference: exit-tools §4 (Windows MSR_WRITE + EXTERNAL_INTERRUPT; AMD interrupt/vintr; Linux
//! ICR 0x830), hyperv-enlightenments §3.3, §5 T1/T2/T8, §7.

use super::context::{Ctx, Graded, is_hyperv_msr};
use super::finding::{Confidence, Evidence, Finding, Fix, Severity};
use super::view::{Part, VRow};
use super::words;
use crate::config::{HvFlag, Version};
use crate::decode::mmio;
use crate::profile::{Access, Key};

const SRC_SYNIC: &str = "exit-tools §4 (Liang Li, kvm@ 2021-05-19, \
     CA+2MQi-_06J1cmLhKAmV1vkPEnvDx6+bOnK06OciYmdymaNruw@mail.gmail.com; Vitaly Kuznetsov \
     87y2c8iia0.fsf@vitty.brq.redhat.com); hyperv-enlightenments §3.3, §5 T1/T2, §7 (HV-PERF-005/006); \
     KVM 0f250a646382; QEMU e1f9a8e8c90a; ANCHOR seed tables 2 and 4";
const SRC_ACCESS: &str = "hyperv-enlightenments §3.3 (APICv/AVIC inhibit sources), §7 (APIC access exits on \
     0xFEE00300/0xFEE00310 → IPIs/EOIs not accelerated, HV-PERF-005); exit-tools sample 09 (APIC_ACCESS \
     66.6% of exits, 2012)";
const SRC_AVIC: &str = "exit-tools §4 (AMD + Windows: interrupt/vintr/AVIC exits; r/VFIO \"IOMMU AVIC in Linux \
     Kernel 5.6\"); hyperv-enlightenments §3.3 (PIT_REINJ), §5 T8, §7 (HV-PERF-007)";
const SRC_X2APIC: &str = "exit-tools §4 (Linux guest: MSR_WRITE to ICR 0x830 and TMICT 0x838 under network \
     load); hyperv-enlightenments §3.5 (KVM PV IPI: ~70% fewer MSR exits, Wanpeng Li, kvm@ 2018)";
const SRC_WRITE: &str = "testdata/seed-kvm-hyperv-traps README (config 4, healthy, still has APIC_WRITE 56.6% \
     of exits); hyperv-enlightenments §7";

/// Versions that fix the trap: hv-avic in QEMU 6.2; KVM's AutoEOI-only inhibit in 2021 (≈5.14).
const QEMU_AVIC: Version = Version(6, 2);
const KERNEL_AEOI: Version = Version(5, 14);

pub fn check(ctx: &Ctx<'_>, out: &mut Vec<Finding>) {
    synic(ctx, out);
    access(ctx, out);
    avic(ctx, out);
    x2apic_ipi(ctx, out);
    writes(ctx, out);
}

fn msr_rows<'p>(ctx: &Ctx<'_>, m: &'p Part, pred: fn(u64) -> bool) -> Vec<&'p VRow> {
    ctx.free_rows(
        m.rows
            .iter()
            .filter(|r| {
                matches!(r.key, Key::Msr { index, access } if pred(index) && access != Some(Access::Read))
            })
            .collect(),
    )
}

/// HV EOI/ICR/TPR and x2APIC ICR/EOI: what a guest writes per interrupt without APICv.
fn apic_msr(index: u64) -> bool {
    matches!(index, 0x4000_0070..=0x4000_0072 | 0x830 | 0x80b)
}

/// `apic.apicv-inhibited-synic` (or `apic.apicv-off` when the host has APICv off).
fn synic(ctx: &Ctx<'_>, out: &mut Vec<Finding>) {
    if !ctx.windows() || ctx.flag(HvFlag::Synic) == Some(false) {
        return;
    }
    let context = |ctx: &Ctx<'_>| -> Vec<Evidence> {
        let mut v = Vec::new();
        if let Some(ex) = ctx.exits() {
            v.extend(
                ex.named(&["EXTERNAL_INTERRUPT", "interrupt"])
                    .into_iter()
                    .map(|r| {
                        ex.evidence(r)
                            .context()
                            .note("the receiving side: IPIs kick the target vCPU out")
                    }),
            );
        }
        v.extend(ctx.hv_signs());
        if let Some(&n) = ctx.view.events.get("kvm_apicv_inhibit_changed") {
            v.push(Evidence {
                key: "kvm_apicv_inhibit_changed".into(),
                table: crate::profile::TableKind::Event("events".into()),
                access: None,
                name: None,
                count: n,
                count_share: None,
                time_ns: None,
                time_share: None,
                mean_ns: None,
                per_second: None,
                explains: false,
                note: Some("APICv inhibit changes were traced (reasons not kept)".into()),
                id: None,
            });
        }
        v
    };
    if let Some(m) = &ctx.view.msrs {
        let rows = msr_rows(ctx, m, apic_msr);
        let synic_on = ctx.flag(HvFlag::Synic) == Some(true)
            || m.rows
                .iter()
                .any(|r| matches!(r.key, Key::Msr { index, .. } if is_hyperv_msr(index)));
        if synic_on && let Some(g) = ctx.graded(m, &rows, Severity::High) {
            let mut f = synic_finding(ctx, m, &rows, g);
            f.evidence.extend(context(ctx));
            out.push(f);
            return;
        }
    }
    let Some(ex) = ctx.exits() else {
        return;
    };
    if ctx.enlightened() != Some(true) {
        return;
    }
    let writes = ctx.free_rows(ex.named(&["MSR_WRITE", "msr"]));
    if ctx.graded(ex, &writes, Severity::High).is_none() {
        return;
    }
    let window = ctx.free_rows(ex.named(&["TPR_BELOW_THRESHOLD", "INTERRUPT_WINDOW", "vintr"]));
    let confidence = if window.iter().any(|r| r.count > 0) {
        Confidence::Likely
    } else {
        Confidence::Possible
    };
    let mut rows = writes.clone();
    rows.extend(window.iter().copied());
    let Some(g) = ctx.graded(ex, &rows, Severity::High) else {
        return;
    };
    let mut f = synic_finding(ctx, ex, &rows, g);
    f.cause = format!(
        "Without MSR detail this is the likeliest reading: on a Windows guest using Hyper-V \
         enlightenments (hypercall exits), MSR writes at this share are EOI/ICR writes{}. {}",
        if confidence == Confidence::Likely {
            ", and TPR_BELOW_THRESHOLD/INTERRUPT_WINDOW exits appear, which APICv's virtual interrupt \
             delivery avoids"
        } else {
            ""
        },
        f.cause
    );
    f.evidence.extend(context(ctx));
    out.push(f.unconfirmed(
        confidence,
        "`perf kvm stat report --event=msr` should show writes to 0x40000070/0x40000071 (HV EOI/ICR) or \
         0x830 (x2APIC ICR); `trace-cmd record -e kvm:kvm_apicv_inhibit_changed` shows reason HYPERV",
    ));
}

fn synic_finding(ctx: &Ctx<'_>, part: &Part, rows: &[&VRow], g: Graded) -> Finding {
    let evidence = rows.iter().map(|r| part.evidence(r)).collect();
    if ctx.apic_virt() == Some(false) {
        return Finding::new(
            "apic.apicv-off",
            g.severity,
            "APIC virtualization is off on the host: every EOI and IPI exits",
        )
        .why(g.why)
        .share(Some(g.share))
        .evidence(evidence)
        .cause(format!(
            "{}. The host has APICv/AVIC off, so EOI, ICR and TPR accesses exit whatever the guest \
             uses; hv-avic would not help and would hurt (QEMU docs).",
            words::rows(part, rows)
        ))
        .fix(Fix::words("turn on APIC virtualization on the host").host(
            "kvm_intel enable_apicv=1 (Intel) or kvm_amd avic=1 (AMD), e.g. in /etc/modprobe.d, then \
             reload the module",
        ))
        .effect("EOIs and interrupt injection stop exiting; IPIs to running vCPUs are posted")
        .source(SRC_SYNIC);
    }
    let mut host =
        "a host kernel with the 2021 AutoEOI-deprecation series (KVM 0f250a646382, ≈5.14) \
                    and APICv/AVIC on (kvm_intel enable_apicv=1 / kvm_amd avic=1)"
            .to_string();
    if let Some(k) = ctx.host.kernel.as_deref().and_then(Version::parse)
        && k < KERNEL_AEOI
    {
        host.push_str(&format!(
            "; this host runs {k}, which inhibits APICv as soon as SynIC is on: upgrade"
        ));
    }
    let mut summary = "turn on hv-avic (QEMU ≥ 6.2, libvirt ≥ 8.10): it tells Windows not to use AutoEOI \
                       (HV_DEPRECATING_AEOI_RECOMMENDED) and stops steering it to the synthetic APIC \
                       MSRs (clears HV_APIC_ACCESS_RECOMMENDED)"
        .to_string();
    if let Some(q) = ctx.qemu_version.filter(|q| *q < QEMU_AVIC) {
        summary.push_str(&format!("; QEMU {q} predates hv-avic: upgrade QEMU first"));
    }
    if ctx.apic_virt().is_none() {
        summary
            .push_str("; only on a host with APICv/AVIC — without it hv-avic hurts (HV-HOST-002)");
    }
    let avic_on = if ctx.flag(HvFlag::Avic) == Some(true) {
        " This configuration already has hv-avic: the inhibit then comes from a host kernel without \
         the AutoEOI series, a QEMU that ignores the flag, or a guest older than Windows 8/2012 that \
         does not honour the recommendation."
    } else {
        ""
    };
    Finding::new(
        "apic.apicv-inhibited-synic",
        g.severity,
        "SynIC's AutoEOI keeps APICv off: IPIs and EOIs exit through MSR writes",
    )
    .why(g.why)
    .share(Some(g.share))
    .evidence(evidence)
    .cause(format!(
        "{}. A Windows guest with hv-synic (which hv-stimer needs) uses AutoEOI for its synthetic \
         interrupts unless told not to; KVM cannot combine AutoEOI with APICv/AVIC and inhibits APIC \
         virtualization for the whole VM (kernels before 2021 as soon as SynIC is on). With hv-vapic and \
         without hv-avic, QEMU also sets HV_APIC_ACCESS_RECOMMENDED, steering Windows to the synthetic \
         EOI/ICR/TPR MSRs — an exit each. Every IPI then costs at least two exits: the sender's ICR \
         write and the receiver's kick (EXTERNAL_INTERRUPT), plus TPR/interrupt-window exits to inject.{avic_on}",
        words::rows(part, rows)
    ))
    .fix(Fix {
        summary,
        qemu: Some("-cpu …,hv-avic=on".into()),
        libvirt: Some("<avic state='on'/>".into()),
        host: Some(host),
        guest: Some("Windows Server 2012 / 8 or later honour the recommendation".into()),
    })
    .effect(
        "the talk's config 4 (the fix): MSR_WRITE 176,410 → 120 exits, TPR_BELOW_THRESHOLD and \
         INTERRUPT_WINDOW gone, handled time 1.30 s → 0.68 s (−48%)",
    )
    .source(SRC_SYNIC)
}

/// `apic.apic-access-mmio`: xAPIC page accesses trapped (LAPIC MMIO rows, APIC_ACCESS exits).
fn access(ctx: &Ctx<'_>, out: &mut Vec<Finding>) {
    let keyed = ctx.view.mmio.as_ref().map(|m| {
        let rows = ctx.free_rows(
            m.rows
                .iter()
                .filter(|r| matches!(r.key, Key::Mmio { gpa, .. } if mmio::is_lapic(gpa)))
                .collect(),
        );
        (m, rows)
    });
    let (part, rows, confirmed) = match keyed {
        Some((m, rows)) if !rows.is_empty() => (m, rows, true),
        _ => match ctx.exits() {
            Some(ex) => (ex, ctx.free_rows(ex.named(&["APIC_ACCESS"])), false),
            None => return,
        },
    };
    let Some(g) = ctx.graded(part, &rows, Severity::Medium) else {
        return;
    };
    let mut f = Finding::new(
        "apic.apic-access-mmio",
        g.severity,
        "local APIC page accesses are trapped and emulated: APIC virtualization is off",
    )
    .why(g.why)
    .share(Some(g.share))
    .evidence(rows.iter().map(|r| part.evidence(r)).collect())
    .cause(format!(
        "{}. Accesses to the xAPIC page (0xfee00000: TPR +0x80, EOI +0xb0, ICR +0x300/+0x310) exit and are \
         decoded and emulated one instruction at a time when APICv/AVIC is off, absent (CPUs before APICv) \
         or inhibited (SynIC AutoEOI, PIT reinjection on AMD, …); with APICv they are virtualized without \
         exits.",
        words::rows(part, &rows)
    ))
    .fix(
        Fix::vm(
            "turn on APIC virtualization; give the guest x2APIC so what still exits is a cheap MSR \
             write; for Windows with SynIC add hv-avic",
            "-cpu …,+x2apic,hv-avic=on (hv-avic only for Windows with hv-synic)",
            "<cpu …><feature policy='require' name='x2apic'/></cpu>\n<avic state='on'/> (in <hyperv>, \
             Windows with SynIC)",
        )
        .host(
            "check /sys/module/kvm_intel/parameters/enable_apicv (or kvm_amd/parameters/avic); set \
             kvm_intel enable_apicv=1 / kvm_amd avic=1",
        ),
    )
    .effect("APIC_ACCESS exits mostly disappear with APICv; without it, x2APIC MSR exits are cheaper than \
             emulating an MMIO instruction")
    .source(SRC_ACCESS);
    if !confirmed {
        f = f.unconfirmed(
            Confidence::Likely,
            "`perf kvm stat report --event=mmio` shows which 0xfee00xxx registers; `trace-cmd record -e \
             kvm:kvm_apicv_inhibit_changed` shows why APICv is inhibited",
        );
    }
    out.push(f);
}

/// `apic.avic-inhibited`: AMD `vintr` exits, which KVM needs only while AVIC is off.
fn avic(ctx: &Ctx<'_>, out: &mut Vec<Finding>) {
    let Some(ex) = ctx.exits() else {
        return;
    };
    let rows = ctx.free_rows(ex.named(&["vintr"]));
    let Some(g) = ctx.graded(ex, &rows, Severity::Medium) else {
        return;
    };
    let mut context: Vec<Evidence> = ex
        .named(&["interrupt"])
        .into_iter()
        .map(|r| ex.evidence(r).context())
        .collect();
    let mut f = Finding::new(
        "apic.avic-inhibited",
        g.severity,
        "AMD AVIC is off or inhibited: interrupts are injected through interrupt-window exits",
    )
    .why(g.why)
    .share(Some(g.share))
    .cause(format!(
        "{}. `vintr` exits are KVM asking for an interrupt window with a virtual interrupt — what it does \
         when AVIC is off or inhibited; with AVIC active, interrupts reach the guest without them. Usual \
         inhibitors on AMD: in-kernel PIT reinjection (libvirt's default pit tickpolicy='delay'), SynIC \
         AutoEOI without hv-avic, x2APIC on CPUs/kernels without x2AVIC, nested guests.",
        words::rows(ex, &rows)
    ))
    .fix(
        Fix::vm(
            "turn AVIC on and remove what inhibits it: PIT reinjection off; hv-avic for Windows with SynIC",
            "-global kvm-pit.lost_tick_policy=discard (and -cpu …,hv-avic=on with hv-synic)",
            "<timer name='pit' tickpolicy='discard'/>\n<avic state='on'/> (in <hyperv>, with SynIC)",
        )
        .host("kvm_amd avic=1 npt=1"),
    )
    .effect("vintr and most interrupt exits disappear once AVIC stays active")
    .source(SRC_AVIC)
    .unconfirmed(
        Confidence::Likely,
        "`trace-cmd record -e kvm:kvm_apicv_inhibit_changed` names the inhibit reason (PIT_REINJ, HYPERV, …)",
    );
    f.evidence = rows.iter().map(|r| ex.evidence(r)).collect();
    f.evidence.append(&mut context);
    out.push(f);
}

/// `apic.x2apic-ipi-msr`: IPIs through the x2APIC ICR (not the Windows SynIC case).
fn x2apic_ipi(ctx: &Ctx<'_>, out: &mut Vec<Finding>) {
    let Some(m) = &ctx.view.msrs else {
        return;
    };
    let rows = msr_rows(ctx, m, |i| i == 0x830);
    let Some(g) = ctx.graded(m, &rows, Severity::Low) else {
        return;
    };
    out.push(
        Finding::new(
            "apic.x2apic-ipi-msr",
            g.severity,
            "IPIs are sent through the x2APIC ICR: one exit each",
        )
        .why(g.why)
        .share(Some(g.share))
        .evidence(rows.iter().map(|r| m.evidence(r)).collect())
        .cause(format!(
            "{}. WRMSR 0x830 is the x2APIC interrupt command register: every IPI (wake-ups, TLB \
             shootdowns, reschedules) is an exit, one per destination without paravirtual IPIs.",
            words::rows(m, &rows)
        ))
        .fix(
            Fix::vm(
                "let the guest batch IPIs with a hypercall (KVM PV IPIs for Linux, hv-ipi for Windows)",
                "-cpu …,kvm-pv-ipi=on (Linux) / -cpu …,hv-vpindex=on,hv-ipi=on (Windows)",
                "<ipi state='on'/> (in <hyperv>, Windows)",
            )
            .host("on CPUs with IPI virtualization (Intel Sapphire Rapids and later), kvm_intel enable_ipiv=1"),
        )
        .effect("KVM PV IPIs measured ~70% fewer MSR exits and ~14% on ebizzy with 64 vCPUs (Wanpeng Li, kvm@ 2018)")
        .source(SRC_X2APIC),
    );
}

/// `apic.apic-write`: APIC writes APICv still traps (ICR, timer count, LVT) — normal.
fn writes(ctx: &Ctx<'_>, out: &mut Vec<Finding>) {
    let Some(ex) = ctx.exits() else {
        return;
    };
    let rows = ctx.free_rows(ex.named(&["APIC_WRITE"]));
    if ex.share_of(&rows) < super::grade::MAIN {
        return;
    }
    let Some(g) = ctx.graded(ex, &rows, Severity::Info) else {
        return;
    };
    out.push(
        Finding::new(
            "apic.apic-write",
            Severity::Info,
            "APIC writes that APICv still traps: IPIs and timer programming",
        )
        .why(format!(
            "info: APIC_WRITE is {} of the {}, normal for an interrupt-heavy guest with APICv",
            super::words::pct(g.value),
            g.share.of
        ))
        .share(Some(g.share))
        .evidence(rows.iter().map(|r| ex.evidence(r)).collect())
        .cause(format!(
            "{}. APIC_WRITE is a trap-like exit after a write APICv does not virtualize by itself: the ICR \
             (IPIs) on CPUs without IPI virtualization, the timer's initial count and LVT registers. The \
             healthy seed configuration still spends a third of its exit time here.",
            words::rows(ex, &rows)
        ))
        .fix(
            Fix::vm(
                "nothing required; to trim IPIs use PV IPIs (hv-ipi on Windows)",
                "-cpu …,hv-vpindex=on,hv-ipi=on",
                "<vpindex state='on'/>\n<ipi state='on'/>",
            )
            .host("on CPUs with IPI virtualization, kvm_intel enable_ipiv=1"),
        )
        .effect("fewer ICR writes with PV IPIs or IPI virtualization")
        .source(SRC_WRITE),
    );
}

//! `timer.*`: the guest's clock and timer on emulated hardware — ACPI PM timer port reads,
//! HPET MMIO, RTC ports, the Hyper-V reference-counter MSR when the TSC page is unusable,
//! synthetic timers in message mode, and (from exit reasons alone) Windows on the HPET or, with
//! the hypervisor bit hidden, on the LAPIC timer with every enlightenment lost.
//! Reference: hyperv-enlightenments §3.2 (how Windows picks its clock and timer), §5 T3–T5/T17,
//! §7 (signature → fix), exit-tools §4.

use super::context::{Ctx, Graded};
use super::finding::{Confidence, Finding, Fix, Severity};
use super::view::{Part, VRow};
use super::words;
use crate::config::HvFlag;
use crate::decode::{ioport, mmio};
use crate::lint::fix;
use crate::profile::{Access, Key};

const SRC_PM: &str = "hyperv-enlightenments §3.2, §5 T4, §7 (HV-PERF-004); vfio-users 2016-10 (acpi_pm read \
                      3,605 ns vs TSC 12.52 ns); ANCHOR: KVM Forum 2021 \"The traps of using Hyper V features \
                      in KVM environment\" (2008 R2 port 0x608 case); MicrosoftDocs/Virtualization-Documentation \
                      #1885; exit-tools §4 (ACPI idle dummy read: Yin Fengwei, linux-acpi 2019-10)";
const SRC_HPET: &str = "hyperv-enlightenments §3.2, §5 T3, §7 (HV-PERF-002); QEMU docs/system/i386/hyperv.rst \
                        (without hv-stimer Windows reverts to the HPET or RTC); ANCHOR seed tables 1 and 2; \
                        OpenNebula/addon-storpool #79";
const SRC_RTC: &str = "hyperv-enlightenments §3.2, §5 T3, §7 (HV-PERF-003); MicrosoftDocs/Virtualization-\
                       Documentation #1885; virt-manager #205";
const SRC_REF: &str = "hyperv-enlightenments §3.2 (reference TSC page validity), §5 T5, §7 (HV-PERF-012); \
                       KVM arch/x86/kvm/hyperv.c compute_tsc_page_parameters";
const SRC_STIMER: &str = "hyperv-enlightenments §7 (stimer MSR writes, nested → stimer direct, HV-PERF-011); \
                          §3.5 (KVM commit \"direct mode for synthetic timers\": ≥1500 → 300–400 cycles)";
const SRC_LAPIC: &str = "hyperv-enlightenments §3.2 (ANCHOR timer order: hypervisor bit hidden → LAPIC > HPET > \
                         RTC), §5 T17; ANCHOR seed tables 3 and 4 (testdata/seed-kvm-hyperv-traps)";

/// The enlightenments Windows' timer and clock need (hv-stimer requires synic, vpindex, time).
const TIMER_SET: [HvFlag; 4] = [HvFlag::Vpindex, HvFlag::Synic, HvFlag::Stimer, HvFlag::Time];

pub fn check(ctx: &Ctx<'_>, out: &mut Vec<Finding>) {
    if let Some(p) = &ctx.view.ports {
        // The PM timer is read-only: the signature is reads (or rows whose direction is unknown).
        let pm = free_ports(ctx, p, ioport::is_acpi_pm_timer, true);
        if let Some(g) = ctx.graded(p, &pm, Severity::High) {
            out.push(acpi_pm(ctx, p, &pm, g, None));
        }
        let rtc = free_ports(ctx, p, ioport::is_rtc, false);
        if let Some(g) = ctx.graded(p, &rtc, Severity::High) {
            out.push(rtc_finding(ctx, p, &rtc, g));
        }
    }
    if let Some(m) = &ctx.view.mmio {
        let rows: Vec<&VRow> = ctx.free_rows(
            m.rows
                .iter()
                .filter(|r| matches!(r.key, Key::Mmio { gpa, .. } if mmio::is_hpet(gpa)))
                .collect(),
        );
        if let Some(g) = ctx.graded(m, &rows, Severity::High) {
            out.push(hpet(ctx, m, &rows, g, None));
        }
    }
    if let Some(m) = &ctx.view.msrs {
        let refc = msr_rows(ctx, m, |i, a| i == 0x4000_0020 && a != Some(Access::Write));
        if let Some(g) = ctx.graded(m, &refc, Severity::High) {
            out.push(ref_count(ctx, m, &refc, g));
        }
        let stimer = msr_rows(ctx, m, |i, a| {
            (0x4000_00b0..=0x4000_00b7).contains(&i) && a != Some(Access::Read)
        });
        let base = if ctx.flag(HvFlag::StimerDirect) == Some(false) {
            Severity::Medium
        } else {
            Severity::Low
        };
        if let Some(g) = ctx.graded(m, &stimer, base) {
            out.push(stimer_message(m, &stimer, g));
        }
    }
    aggregate(ctx, out);
}

/// Unclaimed rows of ports `pred` accepts; with `reads_only`, port writes are left out.
fn free_ports<'p>(
    ctx: &Ctx<'_>,
    p: &'p Part,
    pred: fn(u16) -> bool,
    reads_only: bool,
) -> Vec<&'p VRow> {
    ctx.free_rows(
        p.rows
            .iter()
            .filter(|r| match r.key {
                Key::Port { port, access } => {
                    u16::try_from(port).is_ok_and(pred)
                        && !(reads_only && access == Some(Access::Out))
                }
                _ => false,
            })
            .collect(),
    )
}

fn msr_rows<'p>(
    ctx: &Ctx<'_>,
    m: &'p Part,
    pred: impl Fn(u64, Option<Access>) -> bool,
) -> Vec<&'p VRow> {
    ctx.free_rows(
        m.rows
            .iter()
            .filter(|r| matches!(r.key, Key::Msr { index, access } if pred(index, access)))
            .collect(),
    )
}

fn flags_fix(ctx: &Ctx<'_>, summary: &str, flags: &[HvFlag]) -> Fix {
    let missing: Vec<HvFlag> = flags
        .iter()
        .copied()
        .filter(|f| ctx.flag(*f) != Some(true))
        .collect();
    let use_flags = if missing.is_empty() { flags } else { &missing };
    Fix::from_lint(&fix::add(summary, use_flags))
}

/// `timer.acpi-pm-port`, from port rows or (with `aggregate`) from IO exits.
pub fn acpi_pm(
    ctx: &Ctx<'_>,
    part: &Part,
    rows: &[&VRow],
    g: Graded,
    aggregate: Option<(Confidence, String)>,
) -> Finding {
    let what = if ctx.linux() {
        "the guest's clock source is the ACPI PM timer (the TSC was judged unstable or kvm-clock is \
         not offered), or the guest idles through acpi_idle, whose C-state entry does a dummy PM-timer \
         read — a trap in a VM"
            .to_string()
    } else {
        let why = if ctx.flag(HvFlag::Time) == Some(true) {
            "although hv-time is on — so the guest does not use the TSC page: the hypervisor CPUID bit may \
             be hidden, or the Windows version predates the reference TSC page"
        } else if ctx.windows() {
            "because it has no Hyper-V reference TSC page (hv-time off)"
        } else {
            "(Windows: without hv-time; Linux: clocksource acpi_pm, or acpi_idle's dummy PM-timer read \
             on each C-state entry)"
        };
        format!("the guest reads its clock (QueryPerformanceCounter) from the ACPI PM timer {why}")
    };
    let mut f = Finding::new(
        "timer.acpi-pm-port",
        g.severity,
        "clock reads go to the emulated ACPI PM timer: every read is an exit to QEMU",
    )
    .why(g.why)
    .share(Some(g.share))
    .evidence(rows.iter().map(|r| part.evidence(r)).collect())
    .cause(format!(
        "{}. The ACPI PM timer is port PMBASE+8 (0x608 on q35 and pc with SeaBIOS, 0xb008 on pc with \
         OVMF); {what}. Each read leaves the guest and is answered by QEMU: ~3.6 µs against ~12 ns for \
         a TSC read (vfio-users 2016-10).",
        words::rows(part, rows)
    ))
    .source(SRC_PM);
    f = if ctx.linux() {
        f.fix(
            Fix::words("give the guest a cheap clock source and idle path")
                .guest(
                    "check /sys/devices/system/clocksource/clocksource0/current_clocksource; boot with \
                     clocksource=kvm-clock (or tsc); for acpi_idle, use idle=halt or the cpuidle-haltpoll \
                     driver",
                )
                .host("keep the host TSC stable (host clocksource tsc) so kvm-clock stays usable"),
        )
        .effect("the PM-timer exits disappear; a clock read becomes a kvm-clock/TSC read without an exit")
    } else {
        let mut fx = flags_fix(
            ctx,
            "turn on hv-time: Windows then reads the Hyper-V reference TSC page",
            &[HvFlag::Time],
        );
        fx.host = Some("the TSC page needs a stable host TSC: host clocksource tsc".to_string());
        f.fix(fx).effect(
            "the port exits disappear: QPC becomes a memory read of the reference TSC page (3,605 ns → \
             ~12 ns per read, vfio-users 2016-10); the talk's 2008 R2 case was fixed by hv-time",
        )
    };
    if let Some((c, reasoning)) = aggregate {
        f = f.unconfirmed(
            c,
            "record the ports: `perf kvm stat record -a sleep 10` then `perf kvm stat report --event=ioport` \
             (reads of 0x608 or 0xb008), or `virtlens record`",
        );
        f.cause = format!("{} {}", reasoning, f.cause);
    }
    f
}

fn rtc_finding(ctx: &Ctx<'_>, part: &Part, rows: &[&VRow], g: Graded) -> Finding {
    let hpet_off = ctx
        .config
        .as_ref()
        .is_some_and(|c| c.effective.hpet == Some(false));
    let hpet = if hpet_off {
        "; the configuration turns the HPET off, which leaves the RTC as Windows' last resort"
    } else {
        ""
    };
    Finding::new(
        "timer.rtc-port",
        g.severity,
        "the guest drives the emulated RTC (ports 0x70/0x71) as its timer",
    )
    .why(g.why)
    .share(Some(g.share))
    .evidence(rows.iter().map(|r| part.evidence(r)).collect())
    .cause(format!(
        "{}. Ports 0x70/0x71 are the CMOS RTC index and data registers; each periodic RTC interrupt \
         costs index and data accesses (register C must be read to re-arm it), each an exit to QEMU. \
         Windows falls back to the RTC as its system timer when it has neither Hyper-V synthetic timers \
         (hv-stimer) nor an HPET{hpet}.",
        words::rows(part, rows)
    ))
    .fix(flags_fix(
        ctx,
        "turn on hv-stimer and what it needs (preferred), or turn the HPET back on (<timer name='hpet' \
         present='yes'/> / -machine hpet=on)",
        &TIMER_SET,
    ))
    .effect(
        "the RTC exits fall to a few per second (MicrosoftDocs #1885: with hv-stimer and hv-synic the RTC \
         interrupts \"decrease significantly\"; virt-manager #205: host load \"off the roof\" until the HPET \
         or stimer came back)",
    )
    .source(SRC_RTC)
}

/// `timer.hpet-mmio`, from HPET MMIO rows or (with `aggregate`) from EPT_MISCONFIG exits.
fn hpet(
    ctx: &Ctx<'_>,
    part: &Part,
    rows: &[&VRow],
    g: Graded,
    aggregate: Option<(Confidence, String)>,
) -> Finding {
    let use_ = if ctx.linux() {
        "A Linux guest uses it when its clocksource is hpet (TSC unstable, kvm-clock missing)."
    } else {
        "Windows takes it as its system timer when it has no Hyper-V synthetic timers (hv-stimer), and \
         as its clock (QPC) without hv-time: the talk's config 1 (no enlightenments) spent 88% of its exit \
         time there."
    };
    let mut f = Finding::new(
        "timer.hpet-mmio",
        g.severity,
        "the guest's timer runs on the emulated HPET: every access is an MMIO exit to QEMU",
    )
    .why(g.why)
    .share(Some(g.share))
    .evidence(rows.iter().map(|r| part.evidence(r)).collect())
    .cause(format!(
        "{}. The HPET (0xfed00000) is emulated in QEMU: each register access traps (EPT_MISCONFIG on \
         Intel) and goes to userspace. {use_}",
        words::rows(part, rows)
    ))
    .source(SRC_HPET);
    f = if ctx.linux() {
        f.fix(
            Fix::words("use kvm-clock or the TSC instead of the HPET")
                .guest("boot with clocksource=kvm-clock (check current_clocksource)")
                .host("keep the host TSC stable (host clocksource tsc)"),
        )
        .effect("the HPET exits disappear")
    } else {
        let mut fx = flags_fix(
            ctx,
            "turn on the Hyper-V synthetic timers and reference clock (hv-stimer needs hv-synic, hv-vpindex \
             and hv-time); on an APICv/AVIC host add hv-avic too, or SynIC's AutoEOI turns APICv off",
            &TIMER_SET,
        );
        if ctx.apic_virt() != Some(false) && ctx.flag(HvFlag::Avic) != Some(true) {
            fx.qemu = fx.qemu.map(|q| format!("{q},hv-avic=on"));
            fx.libvirt = fx.libvirt.map(|x| format!("{x}\n<avic state='on'/>"));
        }
        f.fix(fx).effect(
            "the timer moves into KVM: the talk's handled time fell 5× (6.56 s → 1.30 s, EPT_MISCONFIG gone); \
             idle host CPU 30–40% → 1–3% after adding synic+stimer (OpenNebula/addon-storpool #79)",
        )
    };
    if let Some((c, reasoning)) = aggregate {
        f = f.unconfirmed(
            c,
            "record the addresses: `perf kvm stat record -a sleep 10` then `perf kvm stat report --event=mmio` \
             (HPET is 0xfed00000–0xfed003ff), or `virtlens record`",
        );
        f.cause = format!("{reasoning} {}", f.cause);
    }
    f
}

fn ref_count(ctx: &Ctx<'_>, part: &Part, rows: &[&VRow], g: Graded) -> Finding {
    let cs = match ctx.host.clocksource.as_deref() {
        Some(c) if c != "tsc" => format!(" This host's clocksource is {c}, not tsc: that is why."),
        _ => String::new(),
    };
    Finding::new(
        "timer.hv-ref-count-msr",
        g.severity,
        "Windows reads time through the reference-counter MSR: the TSC page is unusable",
    )
    .why(g.why)
    .share(Some(g.share))
    .evidence(rows.iter().map(|r| part.evidence(r)).collect())
    .cause(format!(
        "{}. HV_X64_MSR_TIME_REF_COUNT (0x40000020) is what Windows reads when the reference TSC page is \
         not valid; KVM publishes a valid page only while the kvmclock master clock is stable \
         (PVCLOCK_TSC_STABLE_BIT), so with an unstable or non-TSC host clock every QPC becomes an RDMSR \
         exit.{cs}",
        words::rows(part, rows)
    ))
    .fix(
        Fix::words("make the host clocksource tsc so KVM can publish the TSC page").host(
            "echo tsc > /sys/devices/system/clocksource/clocksource0/current_clocksource; check why the \
             kernel marked the TSC unstable (dmesg | grep -i tsc)",
        ),
    )
    .effect("the 0x40000020 reads disappear: QPC becomes an exit-free read of the TSC page")
    .source(SRC_REF)
}

fn stimer_message(part: &Part, rows: &[&VRow], g: Graded) -> Finding {
    Finding::new(
        "timer.stimer-message-nested",
        g.severity,
        "synthetic timers are programmed in message mode",
    )
    .why(g.why)
    .share(Some(g.share))
    .evidence(rows.iter().map(|r| part.evidence(r)).collect())
    .cause(format!(
        "{}. Writes to HV_X64_MSR_STIMERn_CONFIG/COUNT program the Hyper-V synthetic timers; in message \
         mode each expiry is delivered as a SynIC message (≥ 1500 cycles) instead of a direct interrupt \
         (300–400). A guest running Hyper-V itself (Hyper-V role, WSL2, VBS) uses only direct-mode timers.",
        words::rows(part, rows)
    ))
    .fix(Fix::from_lint(&fix::add(
        "turn on stimer direct mode (QEMU ≥ 4.1, libvirt ≥ 5.7)",
        &[HvFlag::StimerDirect],
    )))
    .effect("timer expiries cost 300–400 cycles instead of ≥ 1500 (KVM commit \"direct mode for synthetic timers\")")
    .source(SRC_STIMER)
}

/// From exit reasons alone: Windows on the HPET (EPT_MISCONFIG) or on the LAPIC timer.
fn aggregate(ctx: &Ctx<'_>, out: &mut Vec<Finding>) {
    let Some(ex) = ctx.exits().filter(|_| ctx.windows()) else {
        return;
    };
    let misconfig = ctx.free_rows(ex.named(&["EPT_MISCONFIG"]));
    let enlightened = ctx.enlightened();
    let stimer = ctx.flag(HvFlag::Stimer);
    if enlightened != Some(true)
        && stimer != Some(true)
        && let Some(g) = ctx.graded(ex, &misconfig, Severity::High)
    {
        let signs = absent_hv(ctx, ex);
        let confidence = if enlightened == Some(false) {
            Confidence::Likely
        } else {
            Confidence::Possible
        };
        let reasoning = format!(
            "EPT_MISCONFIG is how VMX reports an access to emulated MMIO (KVM marks those pages with a \
             reserved-bit EPT entry). On a Windows guest {} the device it hammers is almost always the \
             HPET: Windows picks stimer > HPET > RTC and has no stimer here.",
            if enlightened == Some(false) {
                "with no Hyper-V enlightenment in use (no hypercall and no MSR-write exits)"
            } else {
                "without hv-stimer"
            }
        );
        let mut f = hpet(ctx, ex, &misconfig, g, Some((confidence, reasoning)));
        f.evidence.extend(signs);
        out.push(f);
        return;
    }
    // Hypervisor bit hidden: no enlightenment in use, no HPET, the cost in APIC writes.
    let hidden = ctx.config.as_ref().map(|c| c.effective.hypervisor_hidden);
    let apic_write = ctx.free_rows(ex.named(&["APIC_WRITE"]));
    let misconfig_share = ex.share_of(&misconfig);
    if enlightened == Some(false)
        && hidden != Some(false)
        && misconfig_share < super::grade::MINOR
        && ex.share_of(&apic_write) >= super::grade::MAIN
    {
        let (value, share) = ctx.view.share_against(ex, &apic_write);
        let mut f = Finding::new(
            "timer.lapic-hypervisor-hidden",
            Severity::Low,
            "Windows runs on the LAPIC timer with no enlightenment in use: cheap, but every Hyper-V \
             enlightenment is lost",
        )
        .why(format!(
            "low: the LAPIC timer is as cheap as stimer (APIC_WRITE explains {} of the {}); what is lost \
             is the other enlightenments",
            words::pct(value),
            share.of
        ))
        .share(Some(share))
        .evidence(
            apic_write
                .iter()
                .map(|r| ex.evidence(r))
                .chain(absent_hv(ctx, ex))
                .collect(),
        )
        .cause(format!(
            "{}. There are no hypercall and no MSR-write exits, so Windows uses no Hyper-V enlightenment, \
             and no EPT_MISCONFIG, so no HPET: with the hypervisor CPUID bit hidden, Windows ignores the \
             Hyper-V interface and takes the LAPIC timer (LAPIC > HPET > RTC), whose programming shows as \
             APIC_WRITE. The talk measured this as the cheapest of its first three configurations, but \
             hv-tlbflush, hv-ipi, hv-spinlocks and hv-time do nothing.",
            words::rows(ex, &apic_write)
        ))
        .fix(flags_fix(
            ctx,
            "expose the hypervisor bit again (remove <feature policy='disable' name='hypervisor'/> / \
             -cpu …,-hypervisor) and use the full set with hv-avic, so the enlightenments work without \
             SynIC turning APICv off",
            &[
                HvFlag::Relaxed,
                HvFlag::Vapic,
                HvFlag::Spinlocks,
                HvFlag::Vpindex,
                HvFlag::Synic,
                HvFlag::Stimer,
                HvFlag::Time,
                HvFlag::Tlbflush,
                HvFlag::Ipi,
                HvFlag::Avic,
            ],
        ))
        .effect(
            "the talk's config 4 (all enlightenments + the AutoEOI fix) handled ~5% less time than this \
             (683 ms vs 719 ms) and keeps PV TLB flush, IPIs and spinlocks",
        )
        .source(SRC_LAPIC);
        if hidden != Some(true) {
            f = f.unconfirmed(
                Confidence::Likely,
                "check the domain for <feature policy='disable' name='hypervisor'/> or -cpu …,-hypervisor \
                 (pass it with --config)",
            );
        }
        out.push(f);
    }
}

/// Context rows saying no Hyper-V enlightenment shows in the exits.
fn absent_hv(ctx: &Ctx<'_>, ex: &Part) -> Vec<super::finding::Evidence> {
    if ctx.enlightened() != Some(false) || ctx.config.is_some() {
        return Vec::new();
    }
    vec![
        ex.absent("VMCALL", "absent: no Hyper-V hypercalls"),
        ex.absent("MSR_WRITE", "absent: no synthetic-MSR or x2APIC writes"),
    ]
}

//! The words of `timer.*`: platform timers (ACPI PM timer, RTC, HPET, PIT), the Hyper-V
//! reference counter and synthetic timers, Windows on the LAPIC timer with the hypervisor bit
//! hidden, timer re-arms through TSC_DEADLINE and tick storms — for Windows and Linux guests.

use super::fixes::{F, hv_fix};
use super::sources::*;
use super::{Description, W, Words};
use crate::config::HvFlag;
use crate::diagnose::hypotheses::Hint;
use crate::diagnose::model::{Fix, ForGuest};

/// The enlightenments Windows' timer and clock need (hv-stimer requires synic, vpindex, time).
const TIMER_SET: [HvFlag; 4] = [HvFlag::Vpindex, HvFlag::Synic, HvFlag::Stimer, HvFlag::Time];
use crate::diagnose::hypotheses::{IoRule, RuleId, TimerRule};
pub(super) fn describe(id: TimerRule) -> Description {
    match id {
        TimerRule::AcpiPmPort => Description {
            title: "clock reads go to the emulated ACPI PM timer: every read is an exit to QEMU",
            meaning: "The guest reads the ACPI PM timer port (PMBASE+8: 0x608 on q35 and pc with SeaBIOS, \
                      0xb008 on pc with OVMF). Windows does so for QueryPerformanceCounter without the \
                      Hyper-V reference TSC page (hv-time); Linux when its clocksource is acpi_pm.",
            sources: &[VFIO_USERS_2016, QEMU_HYPERV, MSDOCS_1885, KVM_TIMEKEEPING],
        },
        TimerRule::RtcPort => Description {
            title: "the guest drives the emulated RTC (ports 0x70/0x71): every access is an exit to QEMU",
            meaning: "CMOS RTC index/data port accesses at a timer's rate: Windows without Hyper-V synthetic \
                      timers (hv-stimer) and without an HPET takes the RTC as its periodic timer.",
            sources: &[MSDOCS_1885, VIRT_MANAGER_205, QEMU_HYPERV, LIBVIRT_TIME],
        },
        TimerRule::HpetMmio => Description {
            title: "the guest's timer runs on the emulated HPET: every access is an MMIO exit to QEMU",
            meaning: "HPET register accesses (0xfed00000): Windows takes the HPET as its timer without \
                      hv-stimer (and as its clock without hv-time); Linux when its clocksource is hpet.",
            sources: &[KVM_FORUM_2021, QEMU_HYPERV, OPENNEBULA_79, TRUENAS_9247],
        },
        TimerRule::PitPort => Description {
            title: "the guest programs the emulated i8254 PIT (ports 0x40–0x43)",
            meaning: "PIT port accesses at a timer's rate: a guest without a better timer (old Windows \
                      without hv-stimer and HPET; Linux whose clockevent or calibration uses the PIT).",
            sources: &[KVM_TIMEKEEPING, QEMU_HYPERV, LIBVIRT_TIME],
        },
        TimerRule::HvRefCountMsr => Description {
            title: "Windows reads time through the reference-counter MSR: the TSC page is unusable",
            meaning: "RDMSR of HV_X64_MSR_TIME_REF_COUNT (0x40000020): what Windows does when the reference \
                      TSC page is not valid, which KVM allows only while the host clock is a stable TSC.",
            sources: &[KVM_HYPERV_TSC_PAGE, QEMU_HYPERV],
        },
        TimerRule::StimerMessageNested => Description {
            title: "synthetic timers are programmed in message mode",
            meaning: "Writes to HV_X64_MSR_STIMERn_CONFIG/COUNT: each expiry is delivered as a SynIC message \
                      instead of a direct interrupt, which costs more (and which a Hyper-V L1 cannot use).",
            sources: &[QEMU_HYPERV, LIBVIRT_HYPERV],
        },
        TimerRule::LapicHypervisorHidden => Description {
            title: "Windows runs on the LAPIC timer with no enlightenment in use: cheap, but every Hyper-V \
                    enlightenment is lost",
            meaning: "No hypercall, no MSR write and no HPET exits, APIC writes leading: the hypervisor CPUID \
                      bit is hidden, so Windows ignores the Hyper-V interface and takes the LAPIC timer.",
            sources: &[KVM_FORUM_2021, VFIO_USERS_2016, QEMU_HYPERV],
        },
        TimerRule::TscDeadlineRearm => Description {
            title: "the guest re-arms its timer through TSC_DEADLINE writes, one exit each",
            meaning: "WRMSR IA32_TSC_DEADLINE (0x6e0) or the x2APIC timer count (0x838): the guest programs \
                      its next timer interrupt around every idle entry and exit; a periodic tick (Linux \
                      nohz=off, a high timer frequency) makes that thousands of times per second per vCPU.",
            sources: &[MARTINS3_NOHZ, KVM_TIMEKEEPING, PERF_KVM],
        },
        TimerRule::TickStorm => Description {
            title: "a timer-interrupt storm: one MSR write, one injected interrupt and one EOI per tick",
            meaning: "kvm_stat's counters alone show it: kvm_msr (timer re-arm), kvm_inj_virq (the tick's \
                      interrupt) and kvm_eoi rise together at thousands to tens of thousands per second.",
            sources: &[MARTINS3_NOHZ, KVM_TRACE_H, KVM_TIMEKEEPING],
        },
    }
}

pub(super) fn write(w: &W<'_>, id: TimerRule) -> Words {
    match id {
        TimerRule::AcpiPmPort => acpi_pm(w),
        TimerRule::RtcPort => rtc(w),
        TimerRule::HpetMmio => hpet(w),
        TimerRule::PitPort => pit(w),
        TimerRule::HvRefCountMsr => Words {
            cause: format!(
                "HV_X64_MSR_TIME_REF_COUNT (0x40000020) is what Windows reads when the reference TSC page \
                 is not valid; KVM publishes a valid page only while the kvmclock master clock is stable, \
                 so with an unstable or non-TSC host clock every QueryPerformanceCounter is an RDMSR exit.{}",
                if w.has(Hint::ClocksourceNotTsc) {
                    " This host's clocksource is not tsc: that is why."
                } else {
                    ""
                }
            ),
            fixes: vec![
                F::new(ForGuest::Any, "make the host clocksource tsc so KVM can publish the TSC page")
                    .host(
                        "echo tsc > /sys/devices/system/clocksource/clocksource0/current_clocksource; check \
                         why the kernel marked the TSC unstable (dmesg | grep -i tsc)",
                    )
                    .advice(&["advice.host-clocksource"])
                    .done(),
            ],
            effect: "the reference-counter reads disappear: QueryPerformanceCounter becomes an exit-free \
                     read of the TSC page"
                .into(),
            ..Words::default()
        },
        TimerRule::StimerMessageNested => Words {
            cause: "Writes to the synthetic timer MSRs program the Hyper-V timers; in message mode each \
                    expiry is a SynIC message (≥ 1,500 cycles) instead of a direct interrupt (300–400 \
                    cycles, per QEMU's documentation of hv-stimer-direct). A guest running Hyper-V itself \
                    (Hyper-V role, WSL2, VBS) uses only direct-mode timers."
                .into(),
            fixes: vec![hv_fix(
                w.ev,
                "turn on stimer direct mode (QEMU ≥ 4.1, libvirt ≥ 5.7)",
                &[HvFlag::StimerDirect],
                &["advice.stimer-direct"],
            )],
            effect: "timer expiries are delivered as direct interrupts, several times cheaper".into(),
            ..Words::default()
        },
        TimerRule::LapicHypervisorHidden => Words {
            cause: "There are no hypercall and no MSR-write exits, so Windows uses no Hyper-V \
                    enlightenment, and no EPT_MISCONFIG, so no HPET: with the hypervisor CPUID bit hidden, \
                    Windows ignores the Hyper-V interface and takes the LAPIC timer (LAPIC > HPET > RTC), \
                    whose programming shows as APIC_WRITE. That is cheap — but hv-tlbflush, hv-ipi, \
                    hv-spinlocks and hv-time do nothing."
                .into(),
            fixes: vec![{
                let mut f = hv_fix(
                    w.ev,
                    "expose the hypervisor bit again (remove <feature policy='disable' name='hypervisor'/> / \
                     -cpu …,-hypervisor) and use the full set with hv-avic, so the enlightenments work \
                     without SynIC turning APICv off",
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
                    &["advice.expose-hypervisor"],
                );
                f.summary = f.summary.replace('\n', " ");
                f
            }],
            effect: "about the same exit cost (the LAPIC timer is as cheap as stimer), plus PV TLB flush, \
                     IPIs and spinlocks"
                .into(),
            confirm: (!w.has(Hint::HypervisorHidden)).then(|| {
                "check the domain for <feature policy='disable' name='hypervisor'/> or -cpu …,-hypervisor \
                 (pass it with --config)"
                    .to_string()
            }),
            ..Words::default()
        },
        TimerRule::TscDeadlineRearm => rearm(w),
        TimerRule::TickStorm => tick(w),
    }
}

fn aggregate_prefix(w: &W<'_>) -> &'static str {
    match (w.has(Hint::Aggregate), w.has(Hint::Idle)) {
        (true, true) => {
            "Without port detail this is a reading, not a certainty: the guest is halted most of \
             the time, so its port IO comes between halts at a timer's pace — a tick, not clock reads \
             under load. "
        }
        (true, false) => "Without port or address detail this is a reading, not a certainty. ",
        _ => "",
    }
}

fn acpi_pm(w: &W<'_>) -> Words {
    let cause = w.by_guest(|g| match g {
        ForGuest::Windows if w.has(Hint::HvTimeOn) => {
            "Windows reads its clock (QueryPerformanceCounter) from the ACPI PM timer although hv-time is \
             on: it does not use the reference TSC page — the hypervisor CPUID bit may be hidden, or the \
             Windows version predates the TSC page."
                .into()
        }
        ForGuest::Windows => "Windows reads its clock (QueryPerformanceCounter) from the ACPI PM timer \
                              because it has no Hyper-V reference TSC page (hv-time off)."
            .into(),
        _ => "the clocksource is acpi_pm (the TSC was judged unstable, kvm-clock is not offered), or \
              acpi_idle's C-state entry ends with a dummy PM-timer read."
            .into(),
    });
    Words {
        cause: format!(
            "{}{cause} Each read leaves the guest and is answered by QEMU: microseconds against \
             nanoseconds for a TSC read.",
            aggregate_prefix(w)
        ),
        fixes: w.fixes_by_guest(|g| match g {
            ForGuest::Windows if w.has(Hint::HvTimeOn) => vec![
                F::new(
                    ForGuest::Windows,
                    "hv-time is already on: let Windows see the hypervisor (do not hide the hypervisor CPUID \
                     bit) and keep the host clocksource tsc so the TSC page is valid",
                )
                .host("host clocksource tsc")
                .advice(&["advice.expose-hypervisor"])
                .done(),
            ],
            ForGuest::Windows => {
                let mut f = hv_fix(
                    w.ev,
                    "turn on hv-time: Windows then reads the Hyper-V reference TSC page",
                    &[HvFlag::Time],
                    &["advice.hv-time"],
                );
                f.host = Some("the TSC page needs a stable host TSC: host clocksource tsc".into());
                vec![f]
            }
            _ => vec![
                F::new(ForGuest::Linux, "give the guest a cheap clock source and idle path")
                    .guest(
                        "check /sys/devices/system/clocksource/clocksource0/current_clocksource; boot with \
                         clocksource=kvm-clock (or tsc); for acpi_idle, use the cpuidle-haltpoll driver or \
                         idle=halt",
                    )
                    .host("keep the host TSC stable (host clocksource tsc) so kvm-clock stays usable")
                    .advice(&["advice.clocksource"])
                    .done(),
            ],
        }),
        effect: "the PM-timer exits disappear: a clock read becomes a memory read (TSC page, kvm-clock) \
                 without an exit"
            .into(),
        check: w
            .h
            .rivals
            .iter()
            .any(|r| r.0 == RuleId::Io(IoRule::AcpiIdlePort))
            .then(|| {
                "in the guest: `cat /sys/devices/system/clocksource/clocksource0/current_clocksource` \
                 (acpi_pm: the clock) and `cat /sys/devices/system/cpu/cpuidle/current_driver` (acpi_idle: \
                 the idle path)"
                    .to_string()
            }),
        ..Words::default()
    }
}

fn rtc(w: &W<'_>) -> Words {
    let cause = w.by_guest(|g| match g {
        ForGuest::Windows if w.has(Hint::StimerOn) => {
            "Windows programs the RTC although hv-stimer is on: an old Windows, or one that does not see \
             the synthetic timers (hypervisor bit hidden)."
                .into()
        }
        ForGuest::Windows => format!(
            "Windows takes the RTC as its periodic timer when it has neither Hyper-V synthetic timers \
             (hv-stimer) nor an HPET{}; each tick costs an index and a data access (register C is read to \
             re-arm it), each an exit to QEMU.",
            if w.has(Hint::HpetOff) {
                " — this configuration turns the HPET off, which leaves the RTC"
            } else {
                ""
            }
        ),
        _ => "Linux does not tick on the RTC: a program reads it (hwclock, an NTP RTC sync) or uses \
              /dev/rtc's periodic interrupt."
            .into(),
    });
    Words {
        cause: format!("{}{cause}", aggregate_prefix(w)),
        fixes: w.fixes_by_guest(|g| match g {
            ForGuest::Windows => vec![hv_fix(
                w.ev,
                "turn on hv-stimer and what it needs (preferred; on an APICv/AVIC host with hv-avic), or turn \
                 the HPET back on (<timer name='hpet' present='yes'/> / -machine hpet=on)",
                &TIMER_SET,
                &["advice.hv-stimer"],
            )],
            _ => vec![
                F::new(ForGuest::Linux, "find what in the guest reads the RTC")
                    .guest("look for hwclock/NTP RTC sync or /dev/rtc users (`lsof /dev/rtc0`)")
                    .done(),
            ],
        }),
        effect: "the RTC exits fall to a few per second".into(),
        ..Words::default()
    }
}

fn hpet(w: &W<'_>) -> Words {
    let cause = w.by_guest(|g| match g {
        ForGuest::Windows => {
            "Windows takes the HPET as its timer when it has no Hyper-V synthetic timers (hv-stimer), and \
             as its clock without hv-time."
                .into()
        }
        _ => "a Linux guest uses it when its clocksource is hpet (TSC unstable, kvm-clock missing).".into(),
    });
    let absent = if w.has(Hint::NoEnlightenment) {
        " No hypercall and no MSR-write exits: the guest uses no Hyper-V enlightenment."
    } else {
        ""
    };
    Words {
        cause: format!(
            "{}The HPET (0xfed00000) is emulated in QEMU: each register access traps (EPT_MISCONFIG on \
             Intel) and goes to userspace. {cause}{absent}",
            if w.has(Hint::Aggregate) {
                "EPT_MISCONFIG is how VMX reports an access to emulated MMIO; without addresses, the HPET \
                 is the likeliest device on a guest without synthetic timers. "
            } else {
                ""
            }
        ),
        fixes: w.fixes_by_guest(|g| match g {
            ForGuest::Windows => {
                let mut f = hv_fix(
                    w.ev,
                    "turn on the Hyper-V synthetic timers and reference clock (hv-stimer needs hv-synic, \
                     hv-vpindex and hv-time); on an APICv/AVIC host add hv-avic too, or SynIC's AutoEOI \
                     turns APICv off",
                    &TIMER_SET,
                    &["advice.hv-stimer"],
                );
                if w.ev.host.apic_virt() != Some(false) && w.ev.flag(HvFlag::Avic) != Some(true) {
                    f.qemu = f.qemu.map(|q| format!("{q},hv-avic=on"));
                    f.libvirt = f.libvirt.map(|x| format!("{x}\n<avic state='on'/>"));
                    f.advice.push("advice.hv-avic");
                }
                vec![f]
            }
            _ => vec![
                F::new(ForGuest::Linux, "use kvm-clock or the TSC instead of the HPET")
                    .guest("boot with clocksource=kvm-clock (check current_clocksource)")
                    .host("keep the host TSC stable (host clocksource tsc)")
                    .advice(&["advice.clocksource"])
                    .done(),
            ],
        }),
        effect: "the timer moves into KVM and the HPET exits disappear".into(),
        ..Words::default()
    }
}

fn pit(w: &W<'_>) -> Words {
    Words {
        cause: w.by_guest(|g| match g {
            ForGuest::Windows => "Windows programs the PIT when it has no better timer: no hv-stimer and no \
                                  HPET (an old Windows, or the hypervisor bit hidden)."
                .into(),
            _ => "Linux uses the PIT for calibration at boot and as a clockevent only when the LAPIC timer is \
                  unusable; at a steady rate it is the guest's timer."
                .into(),
        }),
        fixes: w.fixes_by_guest(|g| match g {
            ForGuest::Windows => vec![hv_fix(
                w.ev,
                "turn on hv-stimer and what it needs",
                &TIMER_SET,
                &["advice.hv-stimer"],
            )],
            _ => vec![
                F::new(ForGuest::Linux, "let the guest use the LAPIC timer (TSC deadline)")
                    .guest("check /sys/devices/system/clockevents/*/current_device; do not boot with noapic/nolapic")
                    .advice(&["advice.clocksource"])
                    .done(),
            ],
        }),
        effect: "the PIT exits fall to what boot needs".into(),
        ..Words::default()
    }
}

fn rearm(w: &W<'_>) -> Words {
    let reading = if w.has(Hint::Aggregate) {
        format!(
            "Without MSR detail this is a reading: MSR_WRITE leads the exits{}, and the MSR a guest writes \
             most is IA32_TSC_DEADLINE, re-armed around every wake-up; the competing reading is IPIs \
             through the x2APIC ICR. ",
            if w.has(Hint::HaltsPaired) {
                " with a halt for about every write"
            } else {
                ""
            }
        )
    } else {
        String::new()
    };
    let cause = w.by_guest(|g| match g {
        ForGuest::Windows => "Windows programs the LAPIC timer in deadline mode when it has no Hyper-V \
                              synthetic timers (hv-stimer off, or the hypervisor bit hidden)."
            .into(),
        _ => "a Linux guest re-arms the deadline whenever its next timer event changes; booted with \
              nohz=off (or a high HZ with a periodic tick) every tick wakes the vCPU and re-arms the timer."
            .into(),
    });
    Words {
        cause: format!(
            "{reading}Each write to IA32_TSC_DEADLINE (0x6e0; 0x838 is the x2APIC timer's count) programs \
             the next timer interrupt and exits to KVM. {cause}"
        ),
        fixes: w.fixes_by_guest(|g| match g {
            ForGuest::Windows => vec![hv_fix(
                w.ev,
                "give Windows the Hyper-V synthetic timers (in direct mode)",
                &[HvFlag::Vpindex, HvFlag::Synic, HvFlag::Stimer, HvFlag::StimerDirect],
                &["advice.hv-stimer"],
            )],
            _ => vec![
                F::new(ForGuest::Linux, "let the guest's tick stop when idle")
                    .guest(
                        "remove nohz=off from the guest kernel command line (check /proc/cmdline) and use a \
                         tickless kernel (CONFIG_NO_HZ_IDLE); lower timer-heavy polling in the workload",
                    )
                    .host(
                        "on Intel, KVM emulates the deadline with the VMX preemption timer (kvm_intel \
                         preemption_timer=1, the default) — keep it on",
                    )
                    .advice(&["advice.remove-nohz-off"])
                    .done(),
            ],
        }),
        effect: "the TSC_DEADLINE writes fall to the guest's real timer events".into(),
        ..Words::default()
    }
}

fn tick(w: &W<'_>) -> Words {
    let eoi = if w.has(Hint::ApicvOff) {
        " EOIs exit too (kvm_eoi keeps pace): APIC virtualization is not handling them."
    } else {
        ""
    };
    Words {
        cause: format!(
            "kvm_stat's counters rise together: a timer MSR write (kvm_msr), an injected interrupt \
             (kvm_inj_virq) and an EOI per tick — the guest's timer fires thousands of times per second.{eoi} {}",
            w.by_guest(|g| match g {
                ForGuest::Windows => "On Windows: a process raised the timer resolution (timeBeginPeriod), \
                                      or the guest has no synthetic timers."
                    .to_string(),
                _ => "On Linux: nohz=off or a high HZ with a periodic tick, or a workload arming hrtimers \
                      in a loop."
                    .to_string(),
            })
        ),
        fixes: w.fixes_by_guest(|g| -> Vec<Fix> {
            match g {
                ForGuest::Windows => vec![hv_fix(
                    w.ev,
                    "give Windows the Hyper-V synthetic timers; find the process holding a 1 ms timer \
                     resolution (powercfg /energy)",
                    &[HvFlag::Vpindex, HvFlag::Synic, HvFlag::Stimer, HvFlag::StimerDirect],
                    &["advice.hv-stimer"],
                )],
                _ => vec![
                    F::new(ForGuest::Linux, "let the guest's tick stop when idle")
                        .guest("remove nohz=off from the kernel command line (check /proc/cmdline)")
                        .advice(&["advice.remove-nohz-off"])
                        .done(),
                ],
            }
        }),
        effect: "the tick's exits fall to the guest's real timer events".into(),
        confirm: Some(
            "record which MSR is written: `perf kvm stat record -a sleep 10` then `perf kvm stat report \
             --event=msr` (0x6e0: timer re-arm)"
                .into(),
        ),
        ..Words::default()
    }
}

//! APICv/AVIC inhibit reasons read from `kvm_apicv_inhibit_changed` (and the older
//! `kvm_apicv_update_request`) in every era's text: each reason gives its own cause and fix in
//! the main finding, with the name printed or only the number; sticky reasons are told from
//! toggling ones; the time a reason stayed set comes from the timestamps.

use virtlens_core::decode::Decoder;
use virtlens_core::diagnose::{self, Diagnosis, Finding, Options, Role};
use virtlens_core::profile::{Profile, TableKind};
use virtlens_core::sources::{self, Format};
use virtlens_core::testing::{APICV_ERAS as ERAS, Inhibit, candidates};

fn read(text: &str) -> Profile {
    sources::read_bytes(text.as_bytes(), "trace", Some(Format::TraceText))
        .unwrap_or_else(|e| panic!("{e}\n{text}"))
}

fn diagnose(text: &str) -> Diagnosis {
    diagnose::diagnose(
        &[read(text)],
        None,
        &Decoder::builtin(),
        &Options::default(),
    )
}

fn main_finding(d: &Diagnosis) -> &Finding {
    d.findings
        .iter()
        .find(|f| f.role == Role::Main)
        .unwrap_or_else(|| {
            panic!(
                "no main finding: {:?}",
                d.findings.iter().map(|f| &f.id).collect::<Vec<_>>()
            )
        })
}

/// One trace-cmd line at `t` seconds.
fn line(t: f64, event: &str, text: &str) -> String {
    format!("       CPU 0/KVM-4242  [003] .....  {t:.6}: {event}: {text}\n")
}

/// What the main finding must say for `r`: a piece of one of its fixes, or of its cause when
/// nothing in the configuration lifts it.
fn marker(r: Inhibit) -> &'static str {
    match r {
        Inhibit::PitReinj => "lost_tick_policy=discard",
        Inhibit::Hyperv => "hv-avic",
        Inhibit::ApicIdModified | Inhibit::ApicBaseModified => "d471bd853d38",
        Inhibit::PhysicalIdAliased | Inhibit::LogicalIdAliased => "at their defaults",
        Inhibit::PhysicalIdTooBig => "-smp N",
        Inhibit::Nested => "-svm",
        Inhibit::X2apic => "-x2apic",
        Inhibit::Sev => "AVIC does not support SEV",
        Inhibit::Disabled => "enable_apicv=1",
        Inhibit::Absent => "kernel-irqchip=on",
        Inhibit::Irqwin => "by design",
        Inhibit::Blockirq => "KVM_GUESTDBG_BLOCKIRQ",
    }
}

fn says(f: &Finding, what: &str) -> bool {
    f.cause.contains(what)
        || f.fixes.iter().any(|x| {
            [&x.qemu, &x.libvirt, &x.host, &x.in_guest]
                .into_iter()
                .flatten()
                .any(|s| s.contains(what))
                || x.summary.contains(what)
        })
}

fn benign(r: Inhibit) -> bool {
    matches!(r, Inhibit::Irqwin | Inhibit::Blockirq)
}

/// The reason's fix (or, when benign, the toggling context) in what `text` diagnoses.
fn assert_reason(r: Inhibit, text: &str, era: &str) {
    let d = diagnose(text);
    if benign(r) {
        let f = d
            .findings
            .iter()
            .find(|f| f.id == "apic.apicv-inhibit-toggling")
            .unwrap_or_else(|| panic!("{era} {r:?}: no toggling context: {text}"));
        assert!(f.fixes.is_empty(), "{era} {r:?}");
        assert!(says(f, marker(r)), "{era} {r:?}: {}", f.cause);
        return;
    }
    let f = main_finding(&d);
    assert!(
        says(f, marker(r)),
        "{era} {r:?}: the main finding ({}) lacks `{}`: {}\n{:#?}",
        f.id,
        marker(r),
        f.cause,
        f.fixes
    );
    assert!(f.cause.contains(r.name()), "{era} {r:?}: {}", f.cause);
}

#[test]
fn every_reason_gives_its_fix_when_the_name_is_printed() {
    // 6.11 and later: `set reason=%u, inhibits=0x%lx %s` with the mask's names.
    let newest = ERAS[ERAS.len() - 1].reasons;
    for (n, &r) in newest.iter().enumerate() {
        let mask = 1u64 << n;
        let text = [line(
            1.0,
            "kvm_apicv_inhibit_changed",
            &format!("set reason={n}, inhibits={mask:#x} {}", r.name()),
        )]
        .concat();
        assert_reason(r, &text, "names");
        // Set beside another inhibit: the name is still the one at the reason's bit.
        let other = if n == 0 { 1 } else { 0 };
        let both = mask | 1u64 << other;
        let names: Vec<&str> = newest
            .iter()
            .enumerate()
            .filter(|(i, _)| both & (1u64 << i) != 0)
            .map(|(_, r)| r.name())
            .collect();
        let text = line(
            1.0,
            "kvm_apicv_inhibit_changed",
            &format!("set reason={n}, inhibits={both:#x} {}", names.join("|")),
        );
        let p = read(&text);
        let t = p
            .tables
            .iter()
            .find(|t| t.kind == TableKind::ApicvInhibit)
            .unwrap();
        let set = format!("set reason={n} ({})", r.name());
        assert!(
            t.rows.iter().any(|row| row.key.key_text() == set),
            "{set}: {:?}",
            t.rows.iter().map(|r| r.key.key_text()).collect::<Vec<_>>()
        );
        // Both inhibits are still set at the end: each has a `held` row with its name.
        let held_other = format!("held reason={other} ({})", newest[other].name());
        assert!(
            t.rows.iter().any(|row| row.key.key_text() == held_other),
            "{held_other}"
        );
    }
}

#[test]
fn every_reason_of_the_old_event_gives_its_fix() {
    // 5.6–5.17: `kvm_apicv_update_request: %s reason=%u`, deactivate = inhibit set; the
    // numbering of that era is certain.
    for (n, &r) in ERAS[0].reasons.iter().enumerate() {
        let text = line(
            1.0,
            "kvm_apicv_update_request",
            &format!("deactivate reason={n}"),
        );
        assert_reason(r, &text, "5.6–5.17");
    }
}

#[test]
fn a_number_alone_names_every_reason_it_can_be_and_each_fix() {
    // 5.18–6.10: `set reason=%u, inhibits=0x%lx`, no names: every era's reason of that
    // number is a candidate, and each candidate's fix is given (labelled).
    for era in &ERAS[1..] {
        for (n, &r) in era.reasons.iter().enumerate() {
            let cands = candidates(n as u32, false);
            assert!(cands.contains(&r));
            if cands.iter().all(|&c| benign(c)) {
                continue;
            }
            let text = line(
                1.0,
                "kvm_apicv_inhibit_changed",
                &format!("set reason={n}, inhibits={:#x}", 1u64 << n),
            );
            let d = diagnose(&text);
            let f = main_finding(&d);
            if benign(r) {
                continue;
            }
            if cands.len() == 1 {
                assert_reason(r, &text, era.kernels);
            } else {
                assert!(f.cause.contains("by kernel version") || f.cause.contains("numbering"));
                for c in &cands {
                    assert!(
                        f.cause.contains(c.name()),
                        "{} {n}: {}",
                        era.kernels,
                        f.cause
                    );
                }
                if r != Inhibit::Sev {
                    assert!(
                        says(f, marker(r)),
                        "{} {r:?} (n={n}): no `{}` in {:#?}",
                        era.kernels,
                        marker(r),
                        f.fixes
                    );
                }
            }
        }
    }
}

#[test]
fn a_clear_takes_the_name_its_set_showed_and_times_it() {
    let text = [
        line(
            1.0,
            "kvm_apicv_inhibit_changed",
            "set reason=9, inhibits=0x200 PIT_REINJ",
        ),
        line(
            3.5,
            "kvm_apicv_inhibit_changed",
            "cleared reason=9, inhibits=0x0",
        ),
        line(
            4.0,
            "kvm_apicv_inhibit_changed",
            "set reason=9, inhibits=0x200 PIT_REINJ",
        ),
    ]
    .concat();
    let p = read(&text);
    let t = p
        .tables
        .iter()
        .find(|t| t.kind == TableKind::ApicvInhibit)
        .unwrap();
    let cleared = t
        .rows
        .iter()
        .find(|r| r.key.key_text() == "cleared reason=9 (PIT_REINJ)")
        .unwrap();
    assert_eq!(cleared.time.total_ns, Some(2_500_000_000));
    let d = diagnose(&text);
    let f = main_finding(&d);
    assert_eq!(f.id, "apic.apicv-inhibited");
    assert!(f.cause.contains("it stuck"), "{}", f.cause);
    assert!(f.title.contains("PIT_REINJ"), "{}", f.title);
    assert!(
        f.evidence
            .iter()
            .any(|e| e.note.as_deref().is_some_and(|n| n.contains("2.5 s"))),
        "{:#?}",
        f.evidence
    );
}

#[test]
fn toggling_irqwin_is_benign_and_a_sticky_reason_beside_it_leads() {
    let mut toggles = String::new();
    for i in 0..20 {
        let t = 1.0 + f64::from(i) * 0.01;
        toggles += &line(
            t,
            "kvm_apicv_inhibit_changed",
            "set reason=8, inhibits=0x100 IRQWIN",
        );
        toggles += &line(
            t + 0.0001,
            "kvm_apicv_inhibit_changed",
            "cleared reason=8, inhibits=0x0",
        );
    }
    let d = diagnose(&toggles);
    assert!(
        d.findings
            .iter()
            .any(|f| f.id == "apic.apicv-inhibit-toggling"),
        "{:?}",
        d.findings
            .iter()
            .map(|f| (&f.id, f.role))
            .collect::<Vec<_>>()
    );
    assert!(
        d.findings
            .iter()
            .all(|f| f.role != Role::Main || f.id != "apic.apicv-inhibited"),
        "IRQWIN alone is no problem"
    );
    let sticky = line(
        0.5,
        "kvm_apicv_inhibit_changed",
        "set reason=1, inhibits=0x2 HYPERV",
    );
    let d = diagnose(&(sticky + &toggles));
    let f = main_finding(&d);
    assert!(f.title.contains("HYPERV"), "{}", f.title);
    assert!(
        f.cause.contains("IRQWIN (20 set, 20 cleared)"),
        "{}",
        f.cause
    );
    assert!(says(f, "hv-avic"));
}

fn sample(name: &str) -> Diagnosis {
    let path = virtlens_testkit::testdata("exit-reports").join(name);
    let p = sources::read_path(&path, None).unwrap_or_else(|e| panic!("{e}"));
    diagnose::diagnose(&[p], None, &Decoder::builtin(), &Options::default())
}

/// Sample 40 (Alejandro Jimenez, kvm@ 2024-02-14, the patch that prints the names): a VM's
/// ABSENT set and cleared at creation, then another VM's IRQWIN set and cleared while
/// PIT_REINJ stays set. The reason AVIC stays off is PIT_REINJ: its fix leads.
#[test]
fn sample_40_names_printed_pit_reinj_stays_set() {
    let d = sample("40-trace-apicv-inhibit-names-pit-reinj.txt");
    let f = main_finding(&d);
    assert_eq!(f.id, "apic.apicv-inhibited");
    assert!(f.title.contains("PIT_REINJ"), "{}", f.title);
    assert!(f.cause.contains("it stuck"), "{}", f.cause);
    assert!(says(f, "lost_tick_policy=discard"));
    assert!(
        f.cause.contains("IRQWIN") && f.cause.contains("ABSENT"),
        "{}",
        f.cause
    );
}

/// Sample 41 (Alejandro Jimenez, linux-kernel@ 2022-09-28, testing Sean Christopherson's APIC
/// series on 6.0-rc6): after the first reboot APIC_ID_MODIFIED stays set for the VM's life
/// (bit 5 of every mask) while IRQWIN (reason 8) comes and goes — "IRQWIN is OK" (Maxim
/// Levitsky's reply). Numbers only: reason 5 is named with every name it has had, the
/// APIC ID fix (d471bd853d38, which made the inhibit clearable) among the fixes.
#[test]
fn sample_41_apic_id_modified_sticks_after_a_reboot() {
    let d = sample("41-trace-apicv-inhibit-apic-id-after-reboot.txt");
    let f = main_finding(&d);
    assert_eq!(f.id, "apic.apicv-inhibited");
    assert!(f.title.contains("reason 5"), "{}", f.title);
    assert!(f.cause.contains("APIC_ID_MODIFIED"), "{}", f.cause);
    assert!(f.cause.contains("it stuck"), "{}", f.cause);
    assert!(says(f, "d471bd853d38"), "{:#?}", f.fixes);
    assert!(f.cause.contains("reason 8"), "{}", f.cause);
}

/// The effect comes from the input: the window exits the inhibit costs (saved by the fix), and
/// the x2APIC EOI/ICR writes APIC virtualization would also absorb, counted from the trace.
#[test]
fn the_effect_counts_this_inputs_window_exits_and_apic_writes() {
    let mut text = line(
        0.5,
        "kvm_apicv_inhibit_changed",
        "set reason=9, inhibits=0x200 PIT_REINJ",
    );
    let mut t = 1.0;
    for i in 0..40 {
        let (reason, msr) = if i % 4 == 0 {
            ("vintr", None)
        } else {
            ("msr", Some("80b"))
        };
        text += &line(
            t,
            "kvm_exit",
            &format!(
                "vcpu 0 reason {reason} rip 0xffffffff81000000 info1 0x0 info2 0x0 intr_info 0x0 error_code 0x0"
            ),
        );
        if let Some(m) = msr {
            text += &line(t + 0.000001, "kvm_msr", &format!("msr_write {m} = 0x0"));
        }
        text += &line(t + 0.000002, "kvm_entry", "vcpu 0, rip 0xffffffff81000002");
        t += 0.001;
    }
    let d = diagnose(&text);
    // The EOI writes are their own finding (more of them); the inhibit explains the windows.
    let f = d
        .findings
        .iter()
        .find(|f| f.id == "apic.apicv-inhibited")
        .unwrap();
    assert!(f.title.contains("PIT_REINJ"), "{}", f.title);
    assert_eq!(
        f.cost.as_ref().map(|c| c.exits),
        Some(10),
        "the vintr exits"
    );
    assert_eq!(f.effect.exits_saved, Some(9), "90% of them");
    assert!(
        f.effect.text.contains("30 x2APIC EOI/ICR writes"),
        "{}",
        f.effect.text
    );
}

//! `diagnose --guest windows` on the four tables of the KVM Forum 2021 talk explains each as the
//! talk did (testdata/seed-kvm-hyperv-traps/README.md), says whether each change helped and why,
//! and joins exit evidence with the lint findings of real configurations (testdata/configs)
//! into one finding that names both.

use virtlens_core::config::{self, GuestFamily, ReadOptions, VmConfig};
use virtlens_core::decode::Decoder;
use virtlens_core::diagnose::{
    self, Confidence, Diagnosis, Finding, Options, Role, Severity, Verdict,
};
use virtlens_core::diagnose::{GuestBasis, Strength};
use virtlens_core::profile::Profile;
use virtlens_core::sources;
use virtlens_core::{HostFacts, Vendor};
use virtlens_testkit::testdata;

fn seed(n: u8) -> Profile {
    let name = match n {
        1 => "1-no-hyperv-features.txt",
        2 => "2-all-hyperv-features.txt",
        3 => "3-hypervisor-cpuid-hidden.txt",
        _ => "4-all-hyperv-features-stimer-optimized.txt",
    };
    sources::read_path(&testdata(&format!("seed-kvm-hyperv-traps/{name}")), None).unwrap()
}

fn config(name: &str) -> VmConfig {
    config::read_path(
        &testdata(&format!("configs/{name}")),
        &ReadOptions::default(),
    )
    .unwrap()
    .remove(0)
}

fn windows(profiles: &[Profile], config: Option<&VmConfig>, host: HostFacts) -> Diagnosis {
    diagnose::diagnose(
        profiles,
        config,
        &Decoder::builtin(),
        &Options {
            guest: Some(GuestFamily::Windows),
            host,
            ..Options::default()
        },
    )
}

/// The main problem of input `n`.
fn top(d: &Diagnosis, n: usize) -> &Finding {
    d.main_of(n)
        .unwrap_or_else(|| panic!("input {n} has no main problem"))
}

#[test]
fn seed1_ept_misconfig_is_the_emulated_hpet() {
    let d = windows(&[seed(1)], None, HostFacts::default());
    let f = top(&d, 1);
    assert_eq!(f.id, "timer.hpet-mmio");
    assert_eq!(f.rank, 1);
    assert_eq!(f.severity, Severity::High);
    assert_eq!(f.confidence, Confidence::Likely);
    assert!(f.share_value() > 0.88);
    assert!(f.confirm.as_deref().unwrap().contains("--event=mmio"));
    assert!(f.competing.iter().any(|r| r.id == "mmio.emulated-device"));
    let qemu = f.fixes[0].qemu.as_deref().unwrap();
    for flag in ["hv-stimer=on", "hv-synic=on", "hv-vpindex=on", "hv-time=on"] {
        assert!(qemu.contains(flag), "{qemu}");
    }
    assert!(
        f.fixes[0]
            .libvirt
            .as_deref()
            .unwrap()
            .contains("<stimer state='on'/>")
    );
    assert!(f.advice.contains(&"advice.hv-stimer"));
    // The reasoning rests on what is absent.
    assert!(f.evidence.iter().any(|e| e.key == "VMCALL" && e.count == 0));
}

#[test]
fn seed2_synic_autoeoi_inhibits_apicv() {
    let d = windows(&[seed(2)], None, HostFacts::default());
    let f = top(&d, 1);
    assert_eq!(f.id, "apic.apicv-inhibited-synic");
    assert_eq!(f.severity, Severity::High);
    assert!(f.cause.contains("AutoEOI"));
    assert!(f.fixes[0].qemu.as_deref().unwrap().contains("hv-avic=on"));
    assert!(f.fixes[0].host.as_deref().unwrap().contains("0f250a646382"));
    let keys: Vec<&str> = f.evidence.iter().map(|e| e.key.as_str()).collect();
    for k in [
        "MSR_WRITE",
        "TPR_BELOW_THRESHOLD",
        "INTERRUPT_WINDOW",
        "EXTERNAL_INTERRUPT",
    ] {
        assert!(keys.contains(&k), "{keys:?}");
    }
    assert_eq!(d.inputs[0].main, Some(f.rank));
    assert_eq!(d.inputs[0].verdict, Verdict::Problem);
}

#[test]
fn seed2_on_an_apicv_off_host_says_turn_apicv_on() {
    let host = HostFacts {
        vendor: Some(Vendor::Intel),
        apicv: Some(false),
        ..HostFacts::default()
    };
    let d = windows(&[seed(2)], None, host);
    let f = top(&d, 1);
    assert_eq!(f.id, "apic.apicv-off");
    assert!(
        f.fixes[0]
            .host
            .as_deref()
            .unwrap()
            .contains("enable_apicv=1")
    );
}

#[test]
fn seed3_lapic_timer_with_enlightenments_lost() {
    let d = windows(&[seed(3)], None, HostFacts::default());
    assert!(d.worst() <= Some(Severity::Low), "low overhead");
    let f = d
        .findings
        .iter()
        .find(|f| f.id == "timer.lapic-hypervisor-hidden")
        .unwrap();
    assert!(f.cause.contains("hypervisor CPUID bit hidden"));
    assert_eq!(top(&d, 1).id, "timer.lapic-hypervisor-hidden");
}

#[test]
fn seed4_fixed_is_healthy() {
    let d = windows(&[seed(4)], None, HostFacts::default());
    assert!(d.worst() <= Some(Severity::Low));
    assert_eq!(d.inputs[0].verdict, Verdict::NothingAlarming);
    assert!(d.main_of(1).is_none());
}

#[test]
fn comparing_the_seeds_says_what_helped_and_why() {
    let d = windows(
        &[seed(1), seed(2), seed(3), seed(4)],
        None,
        HostFacts::default(),
    );
    let c = d.comparison.as_ref().unwrap();
    assert_eq!(c.ranking, vec![4, 3, 2, 1]);
    let two = &c.changes[0];
    assert_eq!(two.verdict, "helped");
    assert!(two.resolved.contains(&"timer.hpet-mmio".to_string()));
    assert!(two.new.iter().any(|n| n == "apic.apicv-inhibited-synic"));
    // The fix of config 4 against config 2.
    let d = windows(&[seed(2), seed(4)], None, HostFacts::default());
    let ch = &d.comparison.as_ref().unwrap().changes[0];
    assert_eq!(ch.verdict, "helped");
    assert_eq!(ch.resolved, vec!["apic.apicv-inhibited-synic".to_string()]);
    let c = d.comparison.as_ref().unwrap();
    let text = virtlens_core::testing::diagnose_change(c, ch);
    assert!(text.contains("MSR_WRITE 176,410 → 120"), "{text}");
}

#[test]
fn seed1_joined_with_a_config_without_enlightenments() {
    let c = config("04-libvirt-test-hyperv-off.xml");
    let d = windows(&[seed(1)], Some(&c), HostFacts::default());
    let f = top(&d, 1);
    assert_eq!(f.id, "timer.hpet-mmio");
    let rules: Vec<&str> = f.config.iter().map(|x| x.rule).collect();
    assert!(rules.contains(&"HV-PERF-002"), "{rules:?}");
    assert!(f.cause.contains("HV-PERF-002"));
    assert!(f.config[0].element.path.starts_with("/domain/"));
    // Joined, not repeated as configuration-only findings.
    for r in rules {
        let id = format!("config.{}", r.to_ascii_lowercase());
        assert!(d.findings.iter().all(|x| x.id != id), "{id} twice");
    }
    assert!(d.config.is_some());
}

#[test]
fn acpi_pm_reads_and_no_hv_time_are_one_finding() {
    let text = "Analyze events for all VMs, all VCPUs:\n\n\
      IO Port Access    Samples  Samples%     Time%    Min Time    Max Time         Avg time\n\n\
         0x608:PIN        90000    90.00%    96.00%      2.10us     40.00us      3.60us ( +-   1.00% )\n\
         0x70:POUT        10000    10.00%     4.00%      0.80us      9.00us      1.35us ( +-   1.00% )\n\n\
Total Samples:100000, Total events handled time:337500.00us.\n";
    let p = sources::read_bytes(text.as_bytes(), "pm.txt", None).unwrap();
    let c = config("04-libvirt-test-hyperv-off.xml");
    let d = windows(&[p], Some(&c), HostFacts::default());
    let f = top(&d, 1);
    assert_eq!(f.id, "timer.acpi-pm-port");
    assert_eq!(f.confidence, Confidence::Confirmed);
    assert_eq!(f.config[0].rule, "HV-PERF-004");
    assert_eq!(f.config[0].element.path, "/domain/clock");
    assert!(f.cause.contains("HV-PERF-004"));
    assert!(f.fixes.iter().any(|x| {
        x.libvirt
            .as_deref()
            .is_some_and(|l| l.contains("hypervclock"))
    }));
    assert!(d.findings.iter().all(|x| x.id != "config.hv-perf-004"));
}

#[test]
fn config_findings_without_exit_evidence_stand_alone() {
    // Seed 4 is healthy; the stimer-without-hypervclock config is broken regardless.
    let c = config("01-libvirt-test-hyperv.xml");
    let d = windows(&[seed(4)], Some(&c), HostFacts::default());
    let f = d
        .findings
        .iter()
        .find(|f| f.id == "config.hv-dep-002")
        .unwrap();
    assert_eq!(f.severity, Severity::Critical);
    assert_eq!(f.role, Role::Config);
    assert!(f.cost.is_none());
    assert!(f.fixes[0].libvirt.is_some());
}

#[test]
fn guest_comes_from_the_config_or_the_profile() {
    let c = config("30-virt-install-win11-default.xml");
    let d = diagnose::diagnose(
        &[seed(2)],
        Some(&c),
        &Decoder::builtin(),
        &Options::default(),
    );
    let g = &d.inputs[0].evidence.guest;
    assert_eq!(g.family, GuestFamily::Windows);
    assert_eq!(g.basis, GuestBasis::ConfigOs);
    // Without a configuration, the hypercall exits say Windows — weakly: the words give the
    // Linux reading too, labelled.
    let d = diagnose::diagnose(&[seed(2)], None, &Decoder::builtin(), &Options::default());
    let g = &d.inputs[0].evidence.guest;
    assert_eq!(g.family, GuestFamily::Windows);
    assert_eq!(g.basis, GuestBasis::Hypercalls);
    assert_eq!(g.strength, Strength::Weak);
    assert!(!g.signs.is_empty());
}

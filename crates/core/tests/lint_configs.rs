//! Every configuration in testdata/configs gets the verdict testdata/configs/INDEX.md gives it:
//! the exact rule ids and severities, with each conditional finding run both ways (with and
//! without the host fact or assumption it needs). The libvirt `.xml`/`.args` pairs are libvirt's
//! own golden XML → QEMU argv mappings, and Proxmox's `.conf`/`.args` pairs its config → argv
//! mappings: the effective configuration read from each side must be the same.

use std::path::PathBuf;

use virtlens_core::config::{self, Effective, GuestFamily, ReadOptions, VmConfig};
use virtlens_core::lint::{self, Options, Severity};
use virtlens_core::{HostFacts, Vendor};

fn path(name: &str) -> PathBuf {
    virtlens_testkit::testdata("configs").join(name)
}

fn read_with(name: &str, vendor: Option<Vendor>) -> Vec<VmConfig> {
    let opts = ReadOptions {
        format: None,
        host_vendor: vendor,
    };
    config::read_path(&path(name), &opts).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn read(name: &str) -> Vec<VmConfig> {
    read_with(name, None)
}

fn host(vendor: Option<Vendor>, apic: Option<bool>) -> HostFacts {
    let mut h = HostFacts {
        vendor,
        ..HostFacts::default()
    };
    match h.vendor {
        Some(Vendor::Amd) => h.avic = apic,
        _ => h.apicv = apic,
    }
    h
}

fn intel(apicv: Option<bool>) -> Options {
    Options {
        host: host(Some(Vendor::Intel), apicv),
        ..Options::default()
    }
}

fn amd_avic() -> Options {
    Options {
        host: host(Some(Vendor::Amd), Some(true)),
        ..Options::default()
    }
}

/// The distinct (rule, severity) pairs of linting `name` under `opts`.
fn verdict(name: &str, opts: &Options) -> Vec<(String, Severity)> {
    let configs = read_with(name, opts.host.vendor.clone());
    let report = lint::lint(&configs, opts);
    let mut v: Vec<(String, Severity)> = report
        .findings
        .iter()
        .map(|f| (f.rule.to_string(), f.severity))
        .collect();
    v.sort();
    v.dedup();
    v
}

fn expect(name: &str, opts: &Options, want: &[(&str, Severity)]) {
    let mut want: Vec<(String, Severity)> = want.iter().map(|(r, s)| (r.to_string(), *s)).collect();
    want.sort();
    assert_eq!(verdict(name, opts), want, "{name} with {:?}", opts.host);
}

use Severity::{Critical as Error, High, Info, Low, Medium};

const NONE: Options = Options {
    host: HostFacts {
        vendor: None,
        cpu_model: None,
        kernel: None,
        backend: None,
        hardware_virtualization: None,
        nested: None,
        apicv: None,
        avic: None,
        clocksource: None,
        kvm_device: None,
        ring0_emulated: None,
        cpu_emulator: None,
    },
    guest: None,
    migratable: false,
    overcommitted: false,
    nested_workload: false,
    ipi_heavy: false,
    qemu_version: None,
    libvirt_version: None,
};

#[test]
fn libvirt_01_every_child_stimer_without_hypervclock() {
    for f in ["01-libvirt-test-hyperv.xml", "01-libvirt-test-hyperv.args"] {
        let base = [("HV-DEP-002", Error), ("HV-OPS-007", Info)];
        expect(f, &NONE, &base);
        // evmcs on AMD; AMD with AVIC also gets the PIT (no pit element → reinjection on).
        let amd = Options {
            host: host(Some(Vendor::Amd), None),
            ..Options::default()
        };
        expect(
            f,
            &amd,
            &[
                ("HV-DEP-002", Error),
                ("HV-HOST-001", Error),
                ("HV-OPS-007", Info),
            ],
        );
        expect(
            f,
            &amd_avic(),
            &[
                ("HV-DEP-002", Error),
                ("HV-HOST-001", Error),
                ("HV-OPS-007", Info),
                ("HV-PERF-007", High),
            ],
        );
        expect(f, &intel(Some(true)), &base);
        // hv-avic without APICv.
        expect(
            f,
            &intel(Some(false)),
            &[
                ("HV-DEP-002", Error),
                ("HV-HOST-002", Medium),
                ("HV-OPS-007", Info),
            ],
        );
        let migr = Options {
            migratable: true,
            ..Options::default()
        };
        expect(
            f,
            &migr,
            &[
                ("HV-DEP-002", Error),
                ("HV-OPS-002", High),
                ("HV-OPS-007", Info),
            ],
        );
    }
}

#[test]
fn libvirt_01_findings_point_at_the_element() {
    let r = lint::lint(&read("01-libvirt-test-hyperv.xml"), &NONE);
    let dep = r.findings.iter().find(|f| f.rule == "HV-DEP-002").unwrap();
    assert_eq!(dep.element.path, "/domain/features/hyperv/stimer");
    assert_eq!(dep.element.line, Some(20));
    assert_eq!(
        dep.fix.libvirt.as_deref(),
        Some("<timer name='hypervclock' present='yes'/>")
    );
    assert_eq!(dep.fix.qemu.as_deref(), Some("-cpu …,hv-time=on"));
    assert!(dep.source.contains("QEMU target/i386/kvm/kvm.c"));
    let r = lint::lint(&read("01-libvirt-test-hyperv.args"), &NONE);
    let dep = r.findings.iter().find(|f| f.rule == "HV-DEP-002").unwrap();
    assert_eq!(dep.element.path, "-cpu hv-stimer=on");
    assert_eq!(dep.element.line, Some(15));
}

#[test]
fn libvirt_04_all_off() {
    for f in [
        "04-libvirt-test-hyperv-off.xml",
        "04-libvirt-test-hyperv-off.args",
    ] {
        // Nothing says Windows and no hv flag is set: Windows-only rules stay silent.
        expect(f, &NONE, &[]);
        let win = Options {
            guest: Some(GuestFamily::Windows),
            ..Options::default()
        };
        expect(
            f,
            &win,
            &[
                ("HV-PERF-001", High),
                ("HV-PERF-002", High),
                ("HV-PERF-004", High),
            ],
        );
    }
}

#[test]
fn libvirt_05_minimal_timer_set() {
    for f in [
        "05-libvirt-test-hyperv-stimer-direct.xml",
        "05-libvirt-test-hyperv-stimer-direct.args",
    ] {
        expect(f, &NONE, &[("HV-PERF-008", Low)]);
        expect(
            f,
            &intel(Some(true)),
            &[("HV-PERF-005", Medium), ("HV-PERF-008", Low)],
        );
        expect(f, &intel(Some(false)), &[("HV-PERF-008", Low)]);
        let busy = Options {
            overcommitted: true,
            ..Options::default()
        };
        expect(
            f,
            &busy,
            &[
                ("HV-PERF-008", Low),
                ("HV-PERF-009", Medium),
                ("HV-PERF-010", Medium),
            ],
        );
        let ipi = Options {
            ipi_heavy: true,
            ..intel(Some(true))
        };
        expect(f, &ipi, &[("HV-PERF-005", High), ("HV-PERF-008", Low)]);
    }
}

#[test]
fn libvirt_06_passthrough() {
    for f in [
        "06-libvirt-test-hyperv-passthrough.xml",
        "06-libvirt-test-hyperv-passthrough.args",
    ] {
        expect(f, &NONE, &[("HV-OPS-001", Medium)]);
        let migr = Options {
            migratable: true,
            ..Options::default()
        };
        expect(f, &migr, &[("HV-OPS-001", High)]);
        // Passthrough turns hv-avic on even without APICv.
        expect(
            f,
            &intel(Some(false)),
            &[("HV-HOST-002", Medium), ("HV-OPS-001", Medium)],
        );
        expect(f, &intel(Some(true)), &[("HV-OPS-001", Medium)]);
    }
}

#[test]
fn libvirt_08_hypervclock_only() {
    for f in [
        "08-libvirt-test-clock-timer-hyperv-rtc.xml",
        "08-libvirt-test-clock-timer-hyperv-rtc.args",
    ] {
        expect(f, &NONE, &[("HV-PERF-002", High), ("HV-PERF-008", Low)]);
        let linux = Options {
            guest: Some(GuestFamily::Linux),
            ..Options::default()
        };
        expect(f, &linux, &[("HV-OPS-012", Info)]);
    }
}

#[test]
fn proxmox_10_win11_intel() {
    let f = "10-proxmox-win11-intel-host.args";
    let base = [("HV-OPS-007", Info), ("HV-PERF-008", Low)];
    expect(f, &NONE, &base);
    expect(f, &intel(Some(false)), &base);
    expect(
        f,
        &intel(Some(true)),
        &[
            ("HV-OPS-007", Info),
            ("HV-PERF-005", Medium),
            ("HV-PERF-006", Medium),
            ("HV-PERF-008", Low),
        ],
    );
    let amd = Options {
        host: host(Some(Vendor::Amd), Some(false)),
        ..Options::default()
    };
    expect(
        f,
        &amd,
        &[
            ("HV-HOST-001", Error),
            ("HV-OPS-007", Info),
            ("HV-PERF-008", Low),
        ],
    );
    // The .conf lints like the argv Proxmox generates from it (evmcs comes from the Intel host).
    let c = "10-proxmox-win11-intel-host.conf.txt";
    expect(c, &NONE, &base);
    expect(
        c,
        &intel(Some(true)),
        &[
            ("HV-OPS-007", Info),
            ("HV-PERF-005", Medium),
            ("HV-PERF-006", Medium),
            ("HV-PERF-008", Low),
        ],
    );
}

#[test]
fn proxmox_13_win10_i440fx() {
    for f in [
        "13-proxmox-i440fx-win10-spice.args",
        "13-proxmox-i440fx-win10-spice.conf.txt",
    ] {
        let base = [("HV-OPS-007", Info), ("HV-PERF-008", Low)];
        expect(f, &NONE, &base);
        let apic = [
            ("HV-OPS-007", Info),
            ("HV-PERF-005", Medium),
            ("HV-PERF-006", Medium),
            ("HV-PERF-008", Low),
        ];
        expect(f, &intel(Some(true)), &apic);
        // PIT discard: no HV-PERF-007 on AMD with AVIC; no evmcs: no HV-HOST-001.
        expect(f, &amd_avic(), &apic);
    }
}

#[test]
fn virt_install_30_win11_default() {
    let f = "30-virt-install-win11-default.xml";
    assert_eq!(read(f).len(), 2, "install-time and final domain");
    expect(f, &intel(None), &[]);
    expect(f, &intel(Some(true)), &[]);
    expect(
        f,
        &amd_avic(),
        &[("HV-HOST-001", Error), ("HV-PERF-007", High)],
    );
    let r = lint::lint(&read(f), &amd_avic());
    let lines: Vec<(Option<usize>, Option<usize>)> = r
        .findings
        .iter()
        .filter(|x| x.rule == "HV-PERF-007")
        .map(|x| (x.document, x.element.line))
        .collect();
    assert_eq!(lines, vec![(Some(1), Some(37)), (Some(2), Some(137))]);
    let cs = Options {
        host: HostFacts {
            clocksource: Some("hpet".into()),
            ..host(Some(Vendor::Intel), Some(true))
        },
        ..Options::default()
    };
    expect(f, &cs, &[("HV-PERF-012", High)]);
}

#[test]
fn virt_install_33_no_domcaps() {
    let f = "33-virt-install-hyperv-no-domcaps.xml";
    let base = [
        ("HV-PERF-002", High),
        ("HV-PERF-003", High),
        ("HV-PERF-008", Low),
    ];
    expect(f, &NONE, &base);
    expect(
        f,
        &intel(None),
        &[
            ("HV-PERF-002", High),
            ("HV-PERF-003", High),
            ("HV-PERF-008", Low),
            ("HV-PERF-013", Medium),
        ],
    );
    expect(
        f,
        &amd_avic(),
        &[
            ("HV-PERF-002", High),
            ("HV-PERF-003", High),
            ("HV-PERF-007", High),
            ("HV-PERF-008", Low),
        ],
    );
    let r = lint::lint(&read(f), &NONE);
    let rtc = r.findings.iter().find(|x| x.rule == "HV-PERF-003").unwrap();
    assert_eq!(rtc.element.path, "/domain/clock/timer[@name='hpet']");
    assert_eq!(rtc.element.line, Some(26));
}

#[test]
fn user_60_kevinlocke_win11() {
    let f = "60-user-kevinlocke-win11.xml";
    expect(f, &NONE, &[]);
    expect(f, &intel(Some(false)), &[]);
    expect(
        f,
        &intel(Some(true)),
        &[("HV-PERF-005", Medium), ("HV-PERF-006", Medium)],
    );
    expect(
        f,
        &amd_avic(),
        &[
            ("HV-PERF-005", Medium),
            ("HV-PERF-006", Medium),
            ("HV-PERF-007", High),
        ],
    );
}

/// What libvirt's XML → argv mapping has to preserve.
fn mapping(e: &Effective) -> impl PartialEq + std::fmt::Debug + use<> {
    (
        e.name.clone(),
        e.accel,
        e.machine.clone(),
        e.vcpus,
        e.passthrough,
        e.hv.clone(),
        e.qemu_cpu_flags.clone(),
        (
            e.hpet,
            e.pit,
            e.rtc_catchup,
            e.kvm_hidden,
            e.hypervisor_hidden,
        ),
    )
}

#[test]
fn libvirt_xml_maps_to_its_golden_argv() {
    for stem in [
        "01-libvirt-test-hyperv",
        "04-libvirt-test-hyperv-off",
        "05-libvirt-test-hyperv-stimer-direct",
        "06-libvirt-test-hyperv-passthrough",
        "08-libvirt-test-clock-timer-hyperv-rtc",
    ] {
        let xml = read(&format!("{stem}.xml"));
        let args = read(&format!("{stem}.args"));
        assert_eq!((xml.len(), args.len()), (1, 1), "{stem}");
        let (x, a) = (xml[0].effective(), args[0].effective());
        assert_eq!(mapping(&x), mapping(&a), "{stem}");
    }
    let spin = read("01-libvirt-test-hyperv.xml")[0].effective();
    assert_eq!(
        spin.hv
            .iter()
            .find(|(f, _)| f.qemu() == "hv-spinlocks")
            .map(|(_, v)| v.as_str()),
        Some("0x2fff")
    );
    assert!(
        read("04-libvirt-test-hyperv-off.xml")[0]
            .effective()
            .hv
            .is_empty()
    );
}

#[test]
fn proxmox_conf_maps_to_its_generated_argv() {
    for stem in [
        "10-proxmox-win11-intel-host",
        "13-proxmox-i440fx-win10-spice",
    ] {
        let conf = read_with(&format!("{stem}.conf.txt"), Some(Vendor::Intel));
        let args = read(&format!("{stem}.args"));
        let (c, a) = (conf[0].effective(), args[0].effective());
        let key = |e: &Effective| {
            (
                e.accel,
                e.vcpus,
                e.cpu_model.clone(),
                e.hv.clone(),
                (e.hpet, e.pit, e.rtc_catchup, e.kvm_hidden),
            )
        };
        assert_eq!(key(&c), key(&a), "{stem}");
    }
}

fn amd_avic_kernel(kernel: &str) -> Options {
    let mut o = amd_avic();
    o.host.kernel = Some(kernel.to_string());
    o
}

/// The AVIC inhibitors beyond the PIT and SynIC: x2APIC on a host kernel without x2AVIC
/// (X2APIC), SVM exposed (NESTED), more vCPUs than AVIC addresses (PHYSICAL_ID_TOO_BIG).
#[test]
fn avic_inhibitors_follow_the_host_kernel() {
    // Real configurations: none removes x2APIC, so a 5.15 host inhibits AVIC for them.
    let f = "60-user-kevinlocke-win11.xml";
    let base = [
        ("HV-PERF-005", Medium),
        ("HV-PERF-006", Medium),
        ("HV-PERF-007", High),
    ];
    expect(f, &amd_avic_kernel("6.8.0-45-generic"), &base);
    let old = amd_avic_kernel("5.15.0-91-generic");
    let mut with_x2apic = base.to_vec();
    with_x2apic.push(("HV-PERF-015", High));
    expect(f, &old, &with_x2apic);
    let r = lint::lint(&read(f), &old);
    let x = r.findings.iter().find(|x| x.rule == "HV-PERF-015").unwrap();
    assert!(x.message.contains("X2APIC") && x.message.contains("5.15"));
    assert_eq!(x.fix.qemu.as_deref(), Some("-cpu …,-x2apic"));
    assert!(x.source.contains("887196"));
    // Intel hosts, or AVIC off: silent.
    let mut intel_old = intel(Some(true));
    intel_old.host.kernel = Some("5.15".into());
    expect(
        f,
        &intel_old,
        &[("HV-PERF-005", Medium), ("HV-PERF-006", Medium)],
    );
    for f in [
        "30-virt-install-win11-default.xml",
        "33-virt-install-hyperv-no-domcaps.xml",
    ] {
        assert!(
            verdict(f, &old).contains(&("HV-PERF-015".to_string(), High)),
            "{f}"
        );
        assert!(
            !verdict(f, &amd_avic_kernel("6.1"))
                .iter()
                .any(|(r, _)| r == "HV-PERF-015"),
            "{f}"
        );
    }
}

/// SVM exposed and x2APIC removed, on a QEMU command line (written for this test: no public
/// sample exposes SVM explicitly).
#[test]
fn avic_nested_and_x2apic_on_a_qemu_line() {
    let line = "qemu-system-x86_64 -machine q35,accel=kvm -cpu EPYC,+svm,-x2apic -smp 4 \
                -global kvm-pit.lost_tick_policy=discard\n";
    let configs = config::read_str(
        line,
        "svm.args",
        &ReadOptions {
            format: Some(config::Format::Qemu),
            host_vendor: Some(Vendor::Amd),
        },
    )
    .unwrap();
    let rules = |o: &Options| -> Vec<(String, Severity)> {
        let mut v: Vec<_> = lint::lint(&configs, o)
            .findings
            .iter()
            .map(|f| (f.rule.to_string(), f.severity))
            .collect();
        v.sort();
        v
    };
    // x2APIC removed: no X2APIC finding even on 5.15; SVM: the whole VM before 5.19.
    assert_eq!(
        rules(&amd_avic_kernel("5.15")),
        [("HV-PERF-014".to_string(), High)]
    );
    assert_eq!(
        rules(&amd_avic_kernel("6.8")),
        [("HV-PERF-014".to_string(), Low)]
    );
    assert_eq!(rules(&amd_avic()), [("HV-PERF-014".to_string(), Medium)]);
    assert!(rules(&intel(Some(true))).is_empty());
    let big = config::read_str(
        "qemu-system-x86_64 -machine q35,accel=kvm -cpu host -smp 600 \
         -global kvm-pit.lost_tick_policy=discard\n",
        "big.args",
        &ReadOptions {
            format: Some(config::Format::Qemu),
            host_vendor: Some(Vendor::Amd),
        },
    )
    .unwrap();
    let r = lint::lint(&big, &amd_avic_kernel("6.8"));
    let f = r.findings.iter().find(|f| f.rule == "HV-PERF-015").unwrap();
    assert_eq!(f.severity, Medium);
    assert!(f.message.contains("PHYSICAL_ID_TOO_BIG"));
}

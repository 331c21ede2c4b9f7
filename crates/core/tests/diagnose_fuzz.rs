//! `diagnose` never panics on anything the sources produce: mutated real samples that still
//! parse, and arbitrary profiles (every key kind, counts and times up to `u64::MAX`, odd ISAs,
//! windows of any length), under every guest, with and without host facts and a configuration.
//! Every result serialises to JSON.
//!
//! `PROPTEST_CASES=20000 cargo test -p virtlens-core --test tests --release -- diagnose_fuzz::`
//! runs longer.

use proptest::prelude::*;
use virtlens_core::config::{self, GuestFamily, ReadOptions, VmConfig};
use virtlens_core::decode::{Decoder, Isa};
use virtlens_core::diagnose::{self, Options};
use virtlens_core::profile::{
    Access, Key, Origin, Profile, Row, Table, TableKind, TimeStats, Window,
};
use virtlens_core::sources;
use virtlens_core::{HostFacts, Vendor};

use crate::common::{self, Edit, apply};

const SAMPLES: [&str; 15] = [
    include_str!("../../../testdata/exit-reports/01-bcc-kvmexit-all-threads.txt"),
    include_str!("../../../testdata/exit-reports/05-perf-kvm-stat-msr-event-tscdeadline.txt"),
    include_str!("../../../testdata/exit-reports/06-perf-kvm-stat-vmexit-amd-svm-idle.txt"),
    include_str!("../../../testdata/exit-reports/09-perf-kvm-stat-vmexit-2012-format.txt"),
    include_str!("../../../testdata/exit-reports/11-perf-kvm-stat-ioport-2012-format.txt"),
    include_str!("../../../testdata/exit-reports/13-perf-kvm-stat-vmexit-intel-msr-write-hlt.txt"),
    include_str!("../../../testdata/exit-reports/17-perf-kvm-stat-live-amd-sev-es-hung-vcpu.txt"),
    include_str!("../../../testdata/exit-reports/18-kvm_stat-debugfs-legacy-haswell-io-exits.txt"),
    include_str!("../../../testdata/exit-reports/21-perf-top-kvm_exit-trace-output-timer-off.txt"),
    include_str!(
        "../../../testdata/exit-reports/24-perf-script-kvm-events-nested-triple-fault.txt"
    ),
    include_str!("../../../testdata/exit-reports/30-trace-cmd-report-kvm_exit-amd-sev-snp-npf.txt"),
    include_str!(
        "../../../testdata/exit-reports/34-perf-kvm-stat-hists-format-riscv-before-after.txt"
    ),
    include_str!("../../../testdata/seed-kvm-hyperv-traps/1-no-hyperv-features.txt"),
    include_str!("../../../testdata/seed-kvm-hyperv-traps/2-all-hyperv-features.txt"),
    include_str!(
        "../../../testdata/seed-kvm-hyperv-traps/4-all-hyperv-features-stimer-optimized.txt"
    ),
];

fn edit() -> impl Strategy<Value = Edit> {
    common::edit(vec![
        b"18446744073709551615".to_vec(),
        b"0".to_vec(),
        b"HLT".to_vec(),
        b"EPT_MISCONFIG".to_vec(),
        b"0x608:PIN".to_vec(),
        b"pause".to_vec(),
        b"\n".to_vec(),
        b"%".to_vec(),
        b"us".to_vec(),
    ])
}

fn configs() -> Vec<VmConfig> {
    let dir = virtlens_testkit::testdata("configs");
    [
        "04-libvirt-test-hyperv-off.xml",
        "30-virt-install-win11-default.xml",
        "10-proxmox-win11-intel-host.conf.txt",
    ]
    .iter()
    .map(|n| {
        config::read_path(&dir.join(n), &ReadOptions::default())
            .unwrap()
            .remove(0)
    })
    .collect()
}

fn options(which: u8) -> Options {
    Options {
        guest: match which % 4 {
            0 => None,
            1 => Some(GuestFamily::Windows),
            2 => Some(GuestFamily::Linux),
            _ => Some(GuestFamily::Other),
        },
        host: if which & 4 != 0 {
            HostFacts {
                vendor: Some(if which & 8 != 0 {
                    Vendor::Amd
                } else {
                    Vendor::Intel
                }),
                apicv: Some(which & 16 != 0),
                avic: Some(which & 16 != 0),
                clocksource: Some("hpet".into()),
                kernel: Some("5.10.0-21-amd64".into()),
                ..HostFacts::default()
            }
        } else {
            HostFacts::default()
        },
        qemu_version: (which & 32 != 0).then_some(virtlens_core::config::Version(6, 0)),
        window_s: (which & 2 != 0).then_some(if which & 1 != 0 { 1e-9 } else { 10.0 }),
        vcpus: (which & 128 != 0).then_some(u32::from(which % 7) + 1),
        io: (which & 64 != 0).then_some(virtlens_core::diagnose::IoRate {
            iops: if which & 1 != 0 { 1e-300 } else { 50_000.0 },
            basis: "option",
            fio: None,
        }),
        ..Options::default()
    }
}

fn run(profiles: &[Profile], which: u8, configs: &[VmConfig]) -> Result<(), TestCaseError> {
    let config = match which >> 6 {
        0 => None,
        n => configs.get(usize::from(n) - 1),
    };
    let d = diagnose::diagnose(profiles, config, &Decoder::builtin(), &options(which));
    let json = serde_json::to_value(&d).map_err(|e| TestCaseError::fail(e.to_string()))?;
    prop_assert_eq!(json["schema"].as_str(), Some("virtlens.diagnose/2"));
    let fine = |x: Option<f64>| x.is_none_or(|v| v.is_finite() && v >= 0.0);
    for f in &d.findings {
        if let Some(c) = &f.cost {
            prop_assert!(fine(c.share) && fine(c.cpu_share) && fine(c.per_second));
            prop_assert!(fine(c.per_vcpu_second));
        }
        prop_assert!(fine(f.effect.cpu_share_saved) && fine(f.grade.value));
        prop_assert!(!f.cause.is_empty());
        prop_assert!(!f.fixes.is_empty());
    }
    let text = virtlens_core::render::Export::text(&d, &Default::default());
    prop_assert!(!text.is_empty());
    Ok(())
}

fn key() -> impl Strategy<Value = Key> {
    let access = prop::option::of(prop_oneof![
        Just(Access::Read),
        Just(Access::Write),
        Just(Access::In),
        Just(Access::Out)
    ]);
    let name = prop_oneof![
        Just("HLT".to_string()),
        Just("EPT_MISCONFIG".to_string()),
        Just("EPT_VIOLATION".to_string()),
        Just("MSR_WRITE".to_string()),
        Just("EXTERNAL_INTERRUPT".to_string()),
        Just("PAUSE_INSTRUCTION".to_string()),
        Just("APIC_WRITE".to_string()),
        Just("VMCALL".to_string()),
        Just("npf".to_string()),
        Just("vintr".to_string()),
        Just("interrupt".to_string()),
        Just("UNKNOWN".to_string()),
        Just("VMREAD".to_string()),
        Just("vmrun".to_string()),
        Just("INTERRUPT_WINDOW".to_string()),
        Just("EOI_INDUCED".to_string()),
        Just("TRIPLE_FAULT".to_string()),
        Just("EXCEPTION_NMI".to_string()),
        "[A-Za-z_()0-9]{0,12}",
    ];
    prop_oneof![
        (prop::option::of(any::<u64>()), name.clone())
            .prop_map(|(code, name)| Key::Exit { code, name }),
        (
            prop_oneof![
                Just(0x608u64),
                Just(0x70),
                Just(0x3f8),
                Just(0xc090),
                any::<u64>()
            ],
            access.clone()
        )
            .prop_map(|(port, access)| Key::Port { port, access }),
        (
            prop_oneof![Just(0xfed0_00f0u64), Just(0xfee0_0300), any::<u64>()],
            access.clone()
        )
            .prop_map(|(gpa, access)| Key::Mmio { gpa, access }),
        (
            prop_oneof![
                Just(0x6e0u64),
                Just(0x830),
                Just(0x4000_0020),
                Just(0x4000_0070),
                Just(0x4000_00b0),
                any::<u64>()
            ],
            access
        )
            .prop_map(|(index, access)| Key::Msr { index, access }),
        prop_oneof![
            Just("exits"),
            Just("io_exits"),
            Just("halt_exits"),
            Just("irq_exits"),
            Just("kvm_hv_hypercall"),
            Just("kvm_exit"),
            Just("kvm_msr"),
            Just("kvm_inj_virq"),
            Just("kvm_eoi"),
            Just("kvm_apic_ipi"),
            Just("kvm_page_fault"),
            Just("pf_guest"),
            Just("halt_successful_poll"),
            Just("kvm_nested_vmexit")
        ]
        .prop_map(|n| Key::Event {
            name: n.to_string()
        }),
    ]
}

fn row() -> impl Strategy<Value = Row> {
    let big = prop_oneof![Just(0u64), Just(u64::MAX), 0u64..1_000_000];
    (key(), big.clone(), prop::option::of(big), any::<bool>()).prop_map(|(key, count, t, vcpu)| {
        let mut r = Row::new(key, count);
        r.vcpu = vcpu.then_some(1);
        r.time = TimeStats {
            total_ns: t,
            ..TimeStats::unknown()
        };
        r
    })
}

fn table() -> impl Strategy<Value = Table> {
    let kind = prop_oneof![
        Just(TableKind::Vmexit),
        Just(TableKind::Ioport),
        Just(TableKind::Mmio),
        Just(TableKind::Msr),
        Just(TableKind::KvmStat),
        Just(TableKind::KvmStatRate),
        Just(TableKind::Events),
    ];
    let isa = prop::option::of(prop_oneof![Just(Isa::Vmx), Just(Isa::Svm), Just(Isa::Pvm)]);
    (
        kind,
        isa,
        prop::collection::vec(row(), 0..8),
        prop::option::of(prop_oneof![
            Just(0u64),
            Just(1),
            Just(u64::MAX),
            1u64..10_000_000_000
        ]),
        prop::option::of(prop_oneof![Just("a".to_string()), Just("b".to_string())]),
        any::<bool>(),
    )
        .prop_map(|(kind, isa, rows, window, label, overlapping)| {
            let mut t = Table::new(kind);
            t.isa = isa;
            t.rows = rows;
            t.label = label;
            t.overlapping = overlapping;
            t.window = window.map(|w| Window {
                duration_ns: Some(w),
                ..Window::default()
            });
            t
        })
}

fn profile() -> impl Strategy<Value = Profile> {
    prop::collection::vec(table(), 0..5).prop_map(|tables| {
        let mut p = Profile::new(Origin::new("fuzz", Some("fuzz.txt")));
        p.tables = tables;
        p
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: common::cases(500), ..ProptestConfig::default() })]

    #[test]
    fn mutated_samples_never_panic(
        which in 0usize..SAMPLES.len(),
        edits in prop::collection::vec(edit(), 0..6),
        opts in any::<u8>(),
    ) {
        let bytes = apply(SAMPLES[which].as_bytes().to_vec(), &edits);
        if let Ok(p) = sources::read_bytes(&bytes, "fuzz.txt", None) {
            run(&[p], opts, &configs())?;
        }
    }

    #[test]
    fn arbitrary_profiles_never_panic(
        profiles in prop::collection::vec(profile(), 1..3),
        opts in any::<u8>(),
    ) {
        run(&profiles, opts, &configs())?;
    }
}

//! Fuzzing the kernel-log source (proptest, bounded so it runs in every `cargo test`): real
//! logs with damaged, cut and duplicated lines never panic, what is read round-trips through
//! JSON, and every error names the input.
//!
//! `PROPTEST_CASES=100000 cargo test -p virtlens-core --test tests --release -- fuzz_kernel_log::`
//! runs a longer campaign.

use proptest::prelude::*;
use virtlens_core::decode::Decoder;
use virtlens_core::diagnose::{self, Options};
use virtlens_core::profile::Profile;
use virtlens_core::sources::{self, Format};

use crate::common::{self, Edit, apply};

const SAMPLES: [&str; 6] = [
    include_str!("../../../testdata/kernel-logs/01-novm-dmesg-unhandled-rdmsr.txt"),
    include_str!(
        "../../../testdata/kernel-logs/02-virt-manager-journalctl-amd-unhandled-wrmsr.txt"
    ),
    include_str!("../../../testdata/kernel-logs/03-jfcarter-syslog-one-split-lock.txt"),
    include_str!("../../../testdata/kernel-logs/04-virtualbox-dmesg-split-lock-every-vcpu.txt"),
    include_str!("../../../testdata/kernel-logs/05-harvester-dmesg-T-vcpu-soft-lockup.txt"),
    include_str!("../../../testdata/kernel-logs/06-opennebula-dmesg-qemu-hung-task-panic.txt"),
];

/// An exit profile the logs are joined with (perf kvm stat's report layout).
const EXITS: &str = "Analyze events for all VMs, all VCPUs:\n\n\
    VM-EXIT    Samples  Samples%     Time%    Min Time    Max Time         Avg time\n\n\
    BUS_LOCK      600    60.00%    50.00%      1.00us     90.00us     10.00us ( +-   1.00% )\n\
    HLT           400    40.00%    50.00%      1.00us   9000.00us     15.00us ( +-   1.00% )\n\n\
    Total Samples:1000, Total events handled time:12000.00us.\n";

fn edit() -> impl Strategy<Value = Edit> {
    common::edit(vec![
        b"\n".to_vec(),
        b"[".to_vec(),
        b"]".to_vec(),
        b"/".to_vec(),
        b":".to_vec(),
        b" kernel: ".to_vec(),
        b"[99999999999999999999.1] ".to_vec(),
        b"[Sat Feb 31 25:61:61 2026] ".to_vec(),
        b"x86/split lock detection: #AC: ".to_vec(),
        b"CPU 4294967296/KVM/99999999999".to_vec(),
        b"kvm [4294967296]: vcpu99999999999, guest rIP: 0x".to_vec(),
        b"Unhandled WRMSR(0xffffffffffffffffff) = ".to_vec(),
        b"BUG: soft lockup - CPU#1 stuck for 18446744073709551615s! [".to_vec(),
        b"INFO: task :1 blocked for more than  seconds.\n".to_vec(),
        b"rcu: INFO: rcu_sched detected stalls on CPUs/tasks:\n".to_vec(),
        b"CPU: 1 PID: x Comm:  Tainted:\n".to_vec(),
        b"split_lock_warn: 18446744073709551615 callbacks suppressed\n".to_vec(),
        b"\0".to_vec(),
        b"\xff".to_vec(),
    ])
}

fn check(bytes: &[u8]) -> Result<(), TestCaseError> {
    match sources::read_bytes(bytes, "k.txt", Some(Format::KernelLog)) {
        Ok(p) => {
            let json = serde_json::to_string(&p).unwrap();
            let back: Profile = serde_json::from_str(&json).unwrap();
            prop_assert_eq!(back.tables.len(), p.tables.len());
            // Alone, and joined with an exit profile as `diagnose exits.txt dmesg.txt` does.
            let exits = sources::read_bytes(EXITS.as_bytes(), "exits.txt", None).unwrap();
            let joined = [exits, p.clone()];
            let d = diagnose::diagnose(&joined, None, &Decoder::builtin(), &Options::default());
            prop_assert_eq!(d.inputs.len(), 1);
            let _ = diagnose::diagnose(&[p], None, &Decoder::builtin(), &Options::default());
        }
        Err(e) => common::check_error(e, "k.txt", bytes)?,
    }
    let head = &bytes[..bytes.len().min(sources::DETECT_BYTES)];
    let _ = sources::detect(head);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(common::cases(256)))]

    #[test]
    fn damaged_logs_never_panic(
        sample in 0..SAMPLES.len(),
        edits in prop::collection::vec(edit(), 0..8),
    ) {
        let bytes = apply(SAMPLES[sample].as_bytes().to_vec(), &edits);
        check(&bytes)?;
    }

    #[test]
    fn random_text_never_panics(text in "[ -~\n\t]{0,400}") {
        check(text.as_bytes())?;
    }

    #[test]
    fn cut_logs_keep_what_came_before(sample in 0..SAMPLES.len(), at in any::<prop::sample::Index>()) {
        let text = SAMPLES[sample];
        let cut = at.index(text.len().max(1));
        if text.is_char_boundary(cut) {
            check(&text.as_bytes()[..cut])?;
        }
    }
}

//! Fuzzing the trace-text source (proptest, bounded so it runs in every `cargo test`): mutated
//! real samples and hand-written traces of every dialect (bare event lines and mailer-wrapped
//! lines among them), and random text and bytes, never panic; every error names the input and,
//! where a line is at fault, the line; every warning points at a line that exists; and one
//! damaged event line never takes the other events with it.
//!
//! `PROPTEST_CASES=100000 cargo test -p virtlens-core --test tests --release -- fuzz_trace_text::`
//! runs a longer campaign.

use proptest::prelude::*;
use virtlens_core::sources::{self, Format};

use crate::common::{self, Edit, apply};

const SAMPLES: [&str; 8] = [
    include_str!("../../../testdata/readers/bare-events-nsvm-smm-kuznetsov.txt"),
    include_str!("../../../testdata/readers/wrapped-trace-pckbd-ruemelin.txt"),
    include_str!("../../../testdata/exit-reports/21-perf-top-kvm_exit-trace-output-timer-off.txt"),
    include_str!(
        "../../../testdata/exit-reports/24-perf-script-kvm-events-nested-triple-fault.txt"
    ),
    include_str!("../../../testdata/exit-reports/30-trace-cmd-report-kvm_exit-amd-sev-snp-npf.txt"),
    PERF_SCRIPT,
    FTRACE,
    LEGACY,
];

const PERF_SCRIPT: &str = "\
 CPU 0/KVM  4321/4330 [001] 100.000100:       kvm:kvm_exit: vcpu 0 reason IO_INSTRUCTION rip 0xffffffff81000040 info1 0x0000000003f80000 info2 0x0000000000000000 intr_info 0x00000000 error_code 0x00000000
 CPU 0/KVM  4321/4330 [001] 100.000110:        kvm:kvm_pio: pio_write at 0x3f8 size 1 count 1 val 0x41 
 CPU 0/KVM  4321/4330 [001] 100.000120: kvm:kvm_userspace_exit: reason KVM_EXIT_IO (2)
 CPU 1/KVM  4321/4331 [002] 100.000150:       kvm:kvm_exit: vcpu 1 reason EPT_MISCONFIG rip 0xffffffff81000050 info1 0x0 info2 0x0 intr_info 0x00000000 error_code 0x00000000
 CPU 1/KVM  4321/4331 [002] 100.000160:       kvm:kvm_mmio: mmio unsatisfied-read len 4 gpa 0xfed000f0 val 0x0
 CPU 1/KVM  4321/4331 [002] 100.000300:       kvm:kvm_mmio: mmio read len 4 gpa 0xfed000f0 val 0x1234
 CPU 0/KVM  4321/4330 [001] 100.000350:      kvm:kvm_entry: vcpu 0, rip 0xffffffff81000040
 CPU 1/KVM  4321/4331 [002] 100.000400:      kvm:kvm_entry: vcpu 1, rip 0xffffffff81000050 [immediate exit]
 CPU 1/KVM  4321/4331 [002] 100.000500:       kvm:kvm_exit: vcpu 1 reason MSR_WRITE rip 0xffffffff81000060 info1 0x0 info2 0x0 intr_info 0x00000000 error_code 0x00000000
 CPU 1/KVM  4321/4331 [002] 100.000510:        kvm:kvm_msr: msr_write 830 = 0x2000000fd
 CPU 1/KVM  4321/4331 [002] 100.000600:      kvm:kvm_entry: vcpu 1, rip 0xffffffff81000060
";

const FTRACE: &str = "\
# tracer: nop
#
#                                _-----=> irqs-off/BH-disabled
#           TASK-PID     CPU#  |||||  TIMESTAMP  FUNCTION
#              | |         |   |||||     |         |
       CPU 0/KVM-4330    (   4321) [001] d..2.   100.000100: kvm_exit: vcpu 0 reason INVALID_STATE FAILED_VMENTRY rip 0xfff0 info1 0x0 info2 0x0 intr_info 0x0 error_code 0x0
       CPU 0/KVM-4330    (   4321) [001] .....   100.000200: kvm_userspace_exit: reason KVM_EXIT_FAIL_ENTRY (9)
          <idle>-0       (-------) [000] d.h1.   100.000250: kvm_nested_vmexit: CAN'T FIND FIELD \"rip\"<CANT FIND FIELD exit_code>vcpu 0 reason npf rip 0x0 info1 0x0 info2 0x0 intr_info 0x0 error_code 0x0
       CPU 0/KVM-4330    (   4321) [001] .....   100.000300: kvm_hv_hypercall: code 0x8 fast cnt 0x0 idx 0x0 in 0x0 out 0x0
CPU:2 [LOST 12 EVENTS]
";

const LEGACY: &str = "\
$ sudo perf script
qemu-kvm 1234 [000] 3.000001: kvm:kvm_exit: reason apic_access rip 0xc011518c
qemu-kvm 1234 [000] 3.000002: kvm:kvm_pio: pio_read at 0xc13e size 2 count 1
qemu-kvm 1234 [000] 3.000003: kvm:kvm_entry: vcpu 0
qemu-kvm 1234 [000] 3.000004: kvm:kvm_exit: reason EXCEPTION_NMI rip 0x1007 info 66 80000b0e
qemu-kvm 1234 [000] 3.000005: kvm:kvm_msr: msr_read 3b = 0x0 (#GP)
...
qemu-kvm 1234 [000] 3.0000^C
";

fn edit() -> impl Strategy<Value = Edit> {
    common::edit(vec![
        b"kvm:kvm_exit: ".to_vec(),
        b"kvm_entry: ".to_vec(),
        b" reason ".to_vec(),
        b" rip ".to_vec(),
        b"[001] ".to_vec(),
        b": ".to_vec(),
        b"-".to_vec(),
        b"/".to_vec(),
        b"%".to_vec(),
        b"^C".to_vec(),
        b"\n".to_vec(),
        b"> ".to_vec(),
        b" FAILED_VMENTRY".to_vec(),
        b"|0x8000000".to_vec(),
        b"CAN'T FIND FIELD ".to_vec(),
        b"UNKNOWN (".to_vec(),
        b"Samples: 887K of event 'kvm:kvm_pio'\n".to_vec(),
        b"Overhead  Trace output\n".to_vec(),
        b"  99.99%  ".to_vec(),
        b"18446744073709551615".to_vec(),
        b"99999999999.9999999999: ".to_vec(),
        b"(-------) ".to_vec(),
        b"\t".to_vec(),
        "\u{a0}".as_bytes().to_vec(),
        b"  kvm_exit:             reason EXIT_RSM rip 0x7ffbb280 info 0 0\n".to_vec(),
        b"qemu-system-x86-5665  [000] ....   280.971121:\n".to_vec(),
        b"\n    200000006 1ab000\n".to_vec(),
        b".....\n".to_vec(),
        b"B: ".to_vec(),
    ])
}

/// Samples with one event per line, and that line's events.
const ONE_EVENT_PER_LINE: [&str; 4] = [
    include_str!(
        "../../../testdata/exit-reports/24-perf-script-kvm-events-nested-triple-fault.txt"
    ),
    include_str!("../../../testdata/exit-reports/30-trace-cmd-report-kvm_exit-amd-sev-snp-npf.txt"),
    PERF_SCRIPT,
    FTRACE,
];

/// How many events a profile counted (its every-event table).
fn events(p: &virtlens_core::profile::Profile) -> u64 {
    p.tables
        .iter()
        .filter(|t| t.kind.as_str() == "events")
        .map(|t| t.count())
        .sum()
}

fn check(bytes: &[u8], forced: bool) -> Result<(), TestCaseError> {
    let lines = bytes.split(|&b| b == b'\n').count();
    let format = forced.then_some(Format::TraceText);
    match sources::read_bytes(bytes, "fuzz.txt", format) {
        Ok(p) => {
            if p.origin.format == "trace-text" {
                prop_assert!(!p.tables.is_empty());
                for n in &p.warnings {
                    prop_assert!(n.line.is_none_or(|l| l >= 1 && l <= lines), "{n:?}");
                }
            }
            // Whatever was read must serialise and come back equal.
            let json = serde_json::to_string(&p).map_err(|e| TestCaseError::fail(e.to_string()))?;
            let back: virtlens_core::profile::Profile =
                serde_json::from_str(&json).map_err(|e| TestCaseError::fail(e.to_string()))?;
            prop_assert_eq!(back.tables.len(), p.tables.len());
        }
        Err(e) => common::check_error(e, "fuzz.txt", bytes)?,
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: common::cases(2000), ..ProptestConfig::default() })]

    #[test]
    fn mutated_samples_never_panic(
        which in 0..SAMPLES.len(),
        edits in prop::collection::vec(edit(), 1..8),
        forced in any::<bool>(),
    ) {
        let bytes = apply(SAMPLES[which].as_bytes().to_vec(), &edits);
        check(&bytes, forced)?;
    }

    /// Damage one event line of a real trace (a stretch of it replaced by typo bytes, never a
    /// line break, a colon or a `#`): every other event is still counted, and the damaged line
    /// is either counted or noted at its line.
    #[test]
    fn one_bad_event_line_never_takes_the_others(
        which in 0..ONE_EVENT_PER_LINE.len(),
        pick in any::<prop::sample::Index>(),
        at in any::<prop::sample::Index>(),
        cut in 0usize..8,
        bytes in prop::collection::vec(prop::sample::select(b"aZx09.%_-+ \t\0\xff()/[]".to_vec()), 0..4),
    ) {
        let text = ONE_EVENT_PER_LINE[which];
        let full = sources::read_bytes(text.as_bytes(), "full.txt", Some(Format::TraceText))
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        let lines: Vec<&str> = text.lines().collect();
        let event_lines: Vec<usize> = (0..lines.len())
            .filter(|&i| lines[i].contains("kvm_") && lines[i].contains(": ") && !lines[i].starts_with('#'))
            .collect();
        let line = event_lines[pick.index(event_lines.len())];
        let input = common::damage_line(text, line, at, cut, &bytes);
        let p = sources::read_bytes(&input, "one-bad-line.txt", Some(Format::TraceText))
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        let (before, after) = (events(&full), events(&p));
        prop_assert!(after + 1 >= before, "{} events of {} left: {:?}", after, before, p.warnings);
        let noted = p.warnings.iter().any(|w| w.line == Some(line + 1));
        prop_assert!(after >= before || noted, "line {} neither counted nor noted: {:?}", line + 1, p.warnings);
    }

    #[test]
    fn random_text_never_panics(text in "(\\PC|\\t|\\n){0,400}") {
        check(text.as_bytes(), true)?;
    }

    #[test]
    fn random_trace_like_lines_never_panic(
        lines in prop::collection::vec(
            "[ -~]{0,20}(-[0-9]{1,7})? (\\[[0-9]{1,3}\\] )?([.dNh0-9]{5} )?[0-9]{1,12}\\.[0-9]{0,12}: (kvm:)?kvm_[a-z_]{1,20}: [ -~]{0,80}",
            0..30,
        )
    ) {
        check(lines.join("\n").as_bytes(), true)?;
    }

    #[test]
    fn random_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..600)) {
        check(&bytes, true)?;
    }
}

/// The hand-written traces parse as intended before being mutated.
#[test]
fn seeds_are_valid() {
    for s in SAMPLES {
        let p = sources::read_bytes(s.as_bytes(), "seed", None).unwrap();
        assert_eq!(p.origin.format, "trace-text");
        assert!(!p.tables.is_empty());
    }
}

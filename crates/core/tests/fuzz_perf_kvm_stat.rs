//! Fuzzing the perf kvm stat source (proptest, bounded so it runs in every `cargo test`):
//! mutated real samples and random text never panic, and every error names the input and,
//! where a line is at fault, the line.
//!
//! `PROPTEST_CASES=100000 cargo test -p virtlens-core --test fuzz_perf_kvm_stat --release`
//! runs a longer campaign.

#![allow(clippy::panic, clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{Edit, apply};

use proptest::prelude::*;
use virtlens_core::sources::{self, Format};

const SAMPLES: [&str; 11] = [
    include_str!("../../../testdata/exit-reports/05-perf-kvm-stat-msr-event-tscdeadline.txt"),
    include_str!("../../../testdata/exit-reports/06-perf-kvm-stat-vmexit-amd-svm-idle.txt"),
    include_str!("../../../testdata/exit-reports/09-perf-kvm-stat-vmexit-2012-format.txt"),
    include_str!("../../../testdata/exit-reports/11-perf-kvm-stat-ioport-2012-format.txt"),
    include_str!("../../../testdata/exit-reports/13-perf-kvm-stat-vmexit-intel-msr-write-hlt.txt"),
    include_str!("../../../testdata/exit-reports/17-perf-kvm-stat-live-amd-sev-es-hung-vcpu.txt"),
    include_str!(
        "../../../testdata/exit-reports/34-perf-kvm-stat-hists-format-riscv-before-after.txt"
    ),
    include_str!("../../../testdata/seed-kvm-hyperv-traps/1-no-hyperv-features.txt"),
    include_str!("../../../testdata/seed-kvm-hyperv-traps/2-all-hyperv-features.txt"),
    include_str!("../../../testdata/seed-kvm-hyperv-traps/3-hypervisor-cpuid-hidden.txt"),
    include_str!(
        "../../../testdata/seed-kvm-hyperv-traps/4-all-hyperv-features-stimer-optimized.txt"
    ),
];

fn edit() -> impl Strategy<Value = Edit> {
    common::edit(vec![
        b"( +-".to_vec(),
        b"us".to_vec(),
        b"%".to_vec(),
        b"\n".to_vec(),
        b"> ".to_vec(),
        b"Total Samples:".to_vec(),
        b"UNKNOWN".to_vec(),
        b"unknown kvm exit code:99 on SVM\n".to_vec(),
        b"19:49:57.094070\n".to_vec(),
        b"\t".to_vec(),
        b"18446744073709551615".to_vec(),
    ])
}

fn check(bytes: &[u8], forced: bool) -> Result<(), TestCaseError> {
    let format = forced.then_some(Format::PerfKvmStat);
    match sources::read_bytes(bytes, "fuzz.txt", format) {
        Ok(p) => {
            prop_assert!(!p.tables.is_empty());
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

    #[test]
    fn random_text_never_panics(text in "(\\PC|\\t|\\n){0,400}") {
        check(text.as_bytes(), true)?;
    }

    #[test]
    fn random_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..600)) {
        check(&bytes, true)?;
    }
}

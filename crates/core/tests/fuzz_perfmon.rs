//! Fuzzing the performance-counter sources (PDH-CSV and pasted counter tables; proptest,
//! bounded so it runs in every `cargo test`): mutated real logs, random text built from the
//! format's pieces and random bytes never panic; whatever is read round-trips through JSON
//! and the counter analysis runs on it; every error names the input and a line it has.
//!
//! `PROPTEST_CASES=100000 cargo test -p virtlens-core --test tests --release -- fuzz_perfmon::`
//! runs a longer campaign.

use proptest::prelude::*;
use virtlens_core::counters;
use virtlens_core::sources::{self, Format};

use crate::common::{self, Edit, apply};

const SAMPLES: [(Format, &[u8]); 4] = [
    (
        Format::PerfmonCsv,
        include_bytes!("../../../testdata/perfmon/disk-queue-india-2017.csv"),
    ),
    (
        Format::PerfmonCsv,
        include_bytes!("../../../testdata/perfmon/process-bytes-edt-2021-b.csv"),
    ),
    (
        Format::PerfmonCsv,
        include_bytes!("../../../testdata/perfmon/process-bytes-edt-2021-c.csv"),
    ),
    (
        Format::CounterTable,
        include_bytes!("../../../testdata/perfmon/talk-10m-iops-vp-table.txt"),
    ),
];

const FORMATS: [Format; 2] = [Format::PerfmonCsv, Format::CounterTable];

fn edit() -> impl Strategy<Value = Edit> {
    common::edit(vec![
        b"\"".to_vec(),
        b"\",\"".to_vec(),
        b"\" \"".to_vec(),
        b"\r\n".to_vec(),
        b"\n".to_vec(),
        b"\\\\".to_vec(),
        b"(".to_vec(),
        b")".to_vec(),
        b"#1".to_vec(),
        b",".to_vec(),
        b".".to_vec(),
        b"\"(PDH-CSV 4.0) (UTC)(0)\"".to_vec(),
        b"(Paris, Madrid (heure d'\xc3\xa9t\xc3\xa9))(-120)".to_vec(),
        b"\"13/45/2020 99:99:99.999\"".to_vec(),
        b"1e308".to_vec(),
        b"-1".to_vec(),
        b"NaN".to_vec(),
        b"\xff\xfe".to_vec(),
        b"\\\\h\\Hyper-V Hypervisor Virtual Processor(vm:Hv VP 0)\\Total Intercepts/sec :".to_vec(),
        b"Hyper-V Hypervisor Virtual Processor  _Total  vm:Hv VP 0\n".to_vec(),
        b"9,214,942".to_vec(),
        b"21,465".to_vec(),
    ])
}

fn check(bytes: &[u8], format: Option<Format>) -> Result<(), TestCaseError> {
    match sources::read_bytes(bytes, "fuzz.csv", format) {
        Ok(p) => {
            if let Some(log) = &p.counters {
                for s in &log.series {
                    if let Some(st) = s.stats {
                        prop_assert!(st.n >= 1 && st.min <= st.max && st.mean.is_finite());
                    }
                    prop_assert!(s.slices.len() <= virtlens_core::profile::SLICES);
                }
                let a = counters::analyse("fuzz", log, Some(1e6));
                prop_assert!(
                    a.findings
                        .iter()
                        .all(|f| f.facts.iter().all(|x| x.value.is_finite()))
                );
            }
            let json = serde_json::to_string(&p).map_err(|e| TestCaseError::fail(e.to_string()))?;
            let back: virtlens_core::profile::Profile =
                serde_json::from_str(&json).map_err(|e| TestCaseError::fail(e.to_string()))?;
            prop_assert_eq!(
                back.counters.map(|c| c.series.len()),
                p.counters.map(|c| c.series.len())
            );
        }
        Err(e) => common::check_error(e, "fuzz.csv", bytes)?,
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: common::cases(500), ..ProptestConfig::default() })]

    #[test]
    fn mutated_logs_never_panic(
        which in 0..SAMPLES.len(),
        edits in prop::collection::vec(edit(), 1..8),
        forced in any::<bool>(),
    ) {
        let (format, bytes) = SAMPLES[which];
        let bytes = apply(bytes.to_vec(), &edits);
        check(&bytes, forced.then_some(format))?;
    }

    #[test]
    fn random_text_never_panics(
        text in "(\\PC|\"|,|\\r\\n|\\n|[0-9.,]{1,12}|\\\\\\\\h\\\\|\\(PDH-CSV 4.0\\)|% Guest Run Time| ){0,200}",
        which in 0..FORMATS.len(),
    ) {
        check(text.as_bytes(), Some(FORMATS[which]))?;
    }

    #[test]
    fn random_bytes_never_panic(
        bytes in prop::collection::vec(any::<u8>(), 0..600),
        which in 0..FORMATS.len(),
    ) {
        check(&bytes, Some(FORMATS[which]))?;
    }
}

//! Fuzzing fio's JSON reader (`diagnose --fio`; proptest, bounded so it runs in every `cargo
//! test`): mutated real fio outputs, random JSON-ish text and random bytes never panic; a rate
//! that is read is a finite number ≥ 0 and the sum of its directions; every error names the
//! input (and a line it has, when a line is at fault).
//!
//! `PROPTEST_CASES=100000 cargo test -p virtlens-core --test tests --release -- fuzz_fio_json::`
//! runs a longer campaign.

use proptest::prelude::*;
use virtlens_core::sources::read_fio_json;

use crate::common::{self, Edit, apply};

const SAMPLES: [&[u8]; 2] = [
    include_bytes!("../../../testdata/fio/randread-qd32-io_uring.json"),
    include_bytes!("../../../testdata/fio/randrw-qd1-2jobs-psync.json"),
];

fn edit() -> impl Strategy<Value = Edit> {
    common::edit(vec![
        b"{".to_vec(),
        b"}".to_vec(),
        b"[".to_vec(),
        b"]".to_vec(),
        b",".to_vec(),
        b"\"".to_vec(),
        b"\"iops\" : ".to_vec(),
        b"\"jobs\" : [".to_vec(),
        b"\"read\" : {".to_vec(),
        b"-1".to_vec(),
        b"1e999".to_vec(),
        b"null".to_vec(),
        b"\"8\"".to_vec(),
        b"fio: note: both iodepth >= 1 and synchronous I/O engine are selected\n".to_vec(),
        b"\xff\xfe".to_vec(),
    ])
}

fn check(bytes: &[u8]) -> Result<(), TestCaseError> {
    match read_fio_json(bytes, "fuzz.json") {
        Ok(r) => {
            prop_assert!(r.iops.is_finite() && r.iops >= 0.0, "{r:?}");
            prop_assert!(r.read_iops + r.write_iops <= r.iops * (1.0 + 1e-12) + 1e-9);
            prop_assert!(r.jobs >= 1);
        }
        Err(e) => common::check_error(e, "fuzz.json", bytes)?,
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: common::cases(500), ..ProptestConfig::default() })]

    #[test]
    fn mutated_outputs_never_panic(
        which in 0..SAMPLES.len(),
        edits in prop::collection::vec(edit(), 1..8),
    ) {
        check(&apply(SAMPLES[which].to_vec(), &edits))?;
    }

    #[test]
    fn random_text_never_panics(
        text in "(\\PC|\\{|\\}|\\[|\\]|,|:|\"jobs\"|\"read\"|\"write\"|\"iops\"|[0-9.e+-]{1,8}|\\n| ){0,120}",
    ) {
        check(text.as_bytes())?;
    }

    #[test]
    fn random_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..600)) {
        check(&bytes)?;
    }
}

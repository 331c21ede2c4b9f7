//! Fuzzing the inhibit-reason text (proptest, bounded; a unit test, as `parse` is not public
//! API): `apicv_inhibit::parse` on random text,
//! on real shapes with random numbers, masks and names, and on cut and mutated lines never
//! panics; what it reads back from a key is what made the key; and a trace of such lines is
//! read and diagnosed without a panic.

use proptest::prelude::*;

use super::Decoder;
use super::apicv_inhibit::{Inhibit, parse};
use crate::diagnose::{self, Options};
use crate::sources::{self, Format};

/// PROPTEST_CASES, or 256 (as the integration tests' fuzzers).
fn config() -> ProptestConfig {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(256);
    ProptestConfig::with_cases(cases)
}

fn name() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::sample::select(Inhibit::ALL.to_vec()).prop_map(|i| i.name().to_string()),
        "[A-Z_|]{0,30}",
    ]
}

fn line() -> impl Strategy<Value = String> {
    (
        prop::sample::select(vec!["set", "cleared", "activate", "deactivate", "bogus"]),
        any::<u32>(),
        any::<u64>(),
        prop::collection::vec(name(), 0..4),
        any::<bool>(),
    )
        .prop_map(|(verb, n, mask, names, with_mask)| {
            let n = n % 70;
            if with_mask {
                format!("{verb} reason={n}, inhibits={mask:#x} {}", names.join("|"))
            } else {
                format!("{verb} reason={n}")
            }
        })
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn random_text_never_panics(s in ".{0,80}") {
        let _ = parse(&s);
    }

    #[test]
    fn shaped_cut_and_mutated_lines_never_panic(l in line(), cut in 0usize..80, at in 0usize..80, b in any::<u8>()) {
        if let Some(c) = parse(&l) {
            prop_assert_eq!(parse(&c.key()).map(|k| (k.set, k.number, k.named)), Some((c.set, c.number, c.named)));
        }
        let cut_at = l.char_indices().map(|(i, _)| i).nth(cut).unwrap_or(l.len());
        let _ = parse(&l[..cut_at]);
        let mut bytes = l.clone().into_bytes();
        if !bytes.is_empty() {
            let i = at % bytes.len();
            bytes[i] = b;
        }
        let _ = parse(&String::from_utf8_lossy(&bytes));
    }

    #[test]
    fn traces_of_such_lines_read_and_diagnose(lines in prop::collection::vec(line(), 1..12)) {
        let text: String = lines
            .iter()
            .enumerate()
            .map(|(i, l)| format!(" qemu-1 [000] .... {}.000100: kvm_apicv_inhibit_changed: {l}\n", i + 1))
            .collect();
        if let Ok(p) = sources::read_bytes(text.as_bytes(), "fuzz", Some(Format::TraceText)) {
            let _ = diagnose::diagnose(&[p], None, &Decoder::builtin(), &Options::default());
        }
    }
}

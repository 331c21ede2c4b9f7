//! Fuzzing the guest symbol maps (proptest, bounded so it runs in every `cargo test`): windows
//! of the real Debian System.map and a Windows linker map, mutated and cut, never panic; an
//! error names the file; and one damaged line never moves another symbol: every undamaged
//! text symbol still resolves to itself.
//!
//! `PROPTEST_CASES=100000 cargo test -p virtlens-core --test tests --release -- fuzz_guest_symbols::`
//! runs a longer campaign.

use std::io::Read;
use std::sync::OnceLock;

use proptest::prelude::*;
use virtlens_core::sources::SymbolMap;
use virtlens_testkit::testdata;

use crate::common::{self, Edit, apply};

/// A Windows linker map in `link /MAP`'s layout.
const WINDOWS_MAP: &str = " ntoskrnl\n\n Timestamp is 5f8d2a10 (Mon Oct 19 08:00:00 2020)\n\n \
    Preferred load address is 0000000140000000\n\n Start         Length     Name                   Class\n \
    0001:00000000 000a1234H .text                   CODE\n\n  \
    Address         Publics by Value              Rva+Base               Lib:Object\n\n \
    0000:00000000       ___safe_se_handler_count   0000000000000000     <absolute>\n \
    0001:00000000       KeBugCheckEx               0000000140001000 f   ntos:bugcheck.obj\n \
    0001:00000200       HalpTimerQuery             0000000140001200 f i hal:timer.obj\n \
    0002:00000000       KiDataTable                0000000140200000     ntos:data.obj\n\n \
    entry point at        0001:00000000\n\n Static symbols\n\n \
    0001:00000400       KiIdleLoop                 0000000140001400 f   ntos:idle.obj\n";

/// The real map's text, decompressed once.
fn real_map() -> &'static str {
    static TEXT: OnceLock<String> = OnceLock::new();
    TEXT.get_or_init(|| {
        let f =
            std::fs::File::open(testdata("guest-symbols/System.map-6.1.0-56-amd64.xz")).unwrap();
        let mut s = String::new();
        liblzma::read::XzDecoder::new(f)
            .read_to_string(&mut s)
            .unwrap();
        s
    })
}

/// `lines` lines of the real map from line `from` (wrapping).
fn window(from: usize, lines: usize) -> String {
    let all: Vec<&str> = real_map().lines().collect();
    let from = from % all.len();
    let mut s = String::new();
    for l in all.iter().cycle().skip(from).take(lines) {
        s.push_str(l);
        s.push('\n');
    }
    s
}

fn edit() -> impl Strategy<Value = Edit> {
    common::edit(vec![
        b"\n".to_vec(),
        b" T ".to_vec(),
        b" t ".to_vec(),
        b" W ".to_vec(),
        b"\t[kvm]".to_vec(),
        "\t[x\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}x]".as_bytes().to_vec(),
        b"ffffffffffffffff".to_vec(),
        b"0000000000000000".to_vec(),
        b"Publics by Value Rva+Base".to_vec(),
        b" f ".to_vec(),
        b"0001:".to_vec(),
        b"\0".to_vec(),
        b"\xff".to_vec(),
    ])
}

proptest! {
    #![proptest_config(ProptestConfig { cases: common::cases(400), ..ProptestConfig::default() })]

    #[test]
    fn mutated_maps_never_panic(
        from in any::<usize>(),
        windows in any::<bool>(),
        edits in prop::collection::vec(edit(), 1..8),
        probes in prop::collection::vec(any::<u64>(), 0..16),
    ) {
        let text = if windows { WINDOWS_MAP.to_string() } else { window(from, 300) };
        let bytes = apply(text.into_bytes(), &edits);
        match SymbolMap::read(&bytes[..], "fuzz.map") {
            Ok(m) => {
                prop_assert!(m.functions > 0 && m.functions <= m.len());
                for p in probes {
                    if let Some(r) = m.resolve(p) {
                        prop_assert!(r.start <= p && p - r.start == r.offset);
                    }
                }
            }
            Err(e) => prop_assert!(e.to_string().starts_with("fuzz.map: "), "{e}"),
        }
    }

    /// One damaged line: every other text symbol still resolves to its own address.
    #[test]
    fn one_damaged_line_moves_no_other_symbol(
        from in any::<usize>(),
        line in 0usize..200,
        at in any::<prop::sample::Index>(),
        cut in 0usize..8,
        bytes in prop::collection::vec(prop::sample::select(b"aZx09_ .:\t\0\xff".to_vec()), 0..4),
    ) {
        let text = window(from, 200);
        let input = common::damage_line(&text, line, at, cut, &bytes);
        let Ok(m) = SymbolMap::read(&input[..], "fuzz.map") else {
            // A window of data symbols alone, damaged: nothing to resolve.
            return Ok(());
        };
        for (i, l) in text.lines().enumerate() {
            let f: Vec<&str> = l.split_whitespace().collect();
            if i == line || f.len() < 3 || !matches!(f[1], "t" | "T" | "W") {
                continue;
            }
            let Ok(addr) = u64::from_str_radix(f[0], 16) else { continue };
            let r = m.resolve(addr);
            prop_assert!(
                r.is_none_or(|r| r.start == addr),
                "line {} ({l}) resolved to {:?}", i + 1, r
            );
        }
    }
}

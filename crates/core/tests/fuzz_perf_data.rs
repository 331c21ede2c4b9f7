//! Fuzzing the perf.data source (proptest, bounded so it runs in every `cargo test`): truncated
//! and mutated copies of real recordings, and random bytes, never panic; whatever is read
//! round-trips through JSON; every error names the input and the byte or what was expected;
//! a copy damaged among its records still gives the profile of what came before, with a
//! warning.
//!
//! `PROPTEST_CASES=20000 cargo test -p virtlens-core --test tests --release -- fuzz_perf_data::`
//! runs a longer campaign.

use proptest::prelude::*;
use virtlens_core::Error;
use virtlens_core::profile::{Profile, TableKind};
use virtlens_core::sources::{self, Format};

/// `perf record -e 'kvm:*' -- pio_guest 50` (see testdata/perf-data/README.md).
const PIO: &[u8] = include_bytes!("../../../testdata/perf-data/pio-guest-50.perf.data");
/// `perf kvm stat record -- pio_guest 50`.
const KVM_STAT: &[u8] =
    include_bytes!("../../../testdata/perf-data/kvm-stat-record-pio-50.perf.data");

const NAME: &str = "fuzz.data";

fn le64(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap())
}

/// Interesting places of a seed: the header, the attributes, the first records, the end of
/// the data section (feature table) and the tracing data.
fn hot_spots(seed: &[u8]) -> Vec<usize> {
    let data_at = le64(seed, 40) as usize;
    let data_end = data_at + le64(seed, 48) as usize;
    vec![
        0,
        16,
        24,
        40,
        48,
        104,
        data_at,
        data_at + 8,
        data_end,
        data_end + 16,
        seed.len() - 1,
    ]
}

fn count(p: &Profile, kind: &TableKind, key: &str) -> u64 {
    p.tables
        .iter()
        .filter(|t| &t.kind == kind)
        .flat_map(|t| &t.rows)
        .filter(|r| r.key.key_text() == key)
        .map(|r| r.count)
        .sum()
}

fn events() -> TableKind {
    TableKind::Events
}

/// What a read gave, to compare two: the tables and warnings, or the error (with `path`
/// written as [`NAME`]).
fn outcome(r: &Result<Profile, Error>, path: &str) -> String {
    match r {
        Ok(p) => serde_json::to_string(&(&p.tables, &p.warnings)).unwrap_or_default(),
        Err(e) => e.to_string().replace(path, NAME),
    }
}

/// Files for [`read_as_file`], one per call.
static FILES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// The outcome of reading `bytes` from a file: mapped, where `read_bytes` streams them.
fn read_as_file(bytes: &[u8]) -> String {
    let n = FILES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let path = std::env::temp_dir().join(format!(
        "virtlens-fuzz-perf-data-{}-{n}.data",
        std::process::id()
    ));
    let out = match std::fs::write(&path, bytes) {
        Ok(()) => outcome(
            &sources::read_path(&path, Some(Format::PerfData)),
            &path.display().to_string(),
        ),
        Err(e) => format!("cannot write {}: {e}", path.display()),
    };
    let _ = std::fs::remove_file(&path);
    out
}

/// Reads `bytes`: an error must name the input and say where or what; a profile must survive
/// JSON; reading them from a file (mapped) gives the same.
fn check(bytes: &[u8]) -> Result<Option<Profile>, TestCaseError> {
    let read = sources::read_bytes(bytes, NAME, Some(Format::PerfData));
    prop_assert_eq!(
        outcome(&read, NAME),
        read_as_file(bytes),
        "in memory vs from a file"
    );
    match read {
        Ok(p) => {
            let json = serde_json::to_string(&p).map_err(|e| TestCaseError::fail(e.to_string()))?;
            let back: Profile =
                serde_json::from_str(&json).map_err(|e| TestCaseError::fail(e.to_string()))?;
            prop_assert_eq!(back.tables.len(), p.tables.len());
            Ok(Some(p))
        }
        Err(Error::Input { path, message }) => {
            prop_assert_eq!(path, NAME);
            prop_assert!(
                message.contains("byte")
                    || message.contains("expected")
                    || message.contains("empty"),
                "vague error: {}",
                message
            );
            Ok(None)
        }
        // A broken compression reads as the unwrapped stream's I/O error, saying where.
        Err(Error::Io { path, source }) if source.to_string().contains("ends or breaks here") => {
            prop_assert_eq!(path, NAME);
            Ok(None)
        }
        Err(e) => Err(TestCaseError::fail(format!("unexpected error kind: {e}"))),
    }
}

/// Bytes in memory are read as the same bytes in a file: empty, a bare compression magic (a
/// random case once found that only the file path unwrapped `1f 8b`) and a gzipped seed.
#[test]
fn in_memory_and_file_reads_agree_on_wrappings() {
    use std::io::Write;
    for bytes in [&b""[..], &[0x1f, 0x8b][..], &[0x28, 0xb5, 0x2f, 0xfd][..]] {
        if let Err(e) = check(bytes) {
            panic!("{bytes:02x?}: {e}");
        }
    }
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(PIO).unwrap();
    let gz = gz.finish().unwrap();
    let plain = sources::read_bytes(PIO, NAME, None).unwrap();
    let unwrapped = sources::read_bytes(&gz, NAME, None).unwrap();
    assert_eq!(outcome(&Ok(unwrapped), NAME), outcome(&Ok(plain), NAME));
    assert_eq!(
        read_as_file(&gz),
        outcome(&sources::read_bytes(&gz, NAME, None), NAME)
    );
}

#[test]
fn the_seeds_read_as_recorded() {
    let p = sources::read_bytes(PIO, NAME, None).unwrap();
    assert_eq!(p.origin.format, "perf-data");
    assert!(p.warnings.is_empty(), "{:?}", p.warnings);
    assert_eq!(count(&p, &TableKind::Ioport, "0x80"), 50);
    assert_eq!(count(&p, &events(), "kvm_pio"), 50);
    assert_eq!(count(&p, &events(), "kvm_fpu"), 102);
    assert_eq!(count(&p, &events(), "kvm_emulate_insn"), 156);
    let ue = TableKind::UserspaceExit;
    assert_eq!(count(&p, &ue, "KVM_EXIT_IO"), 50);
    assert_eq!(count(&p, &ue, "KVM_EXIT_HLT"), 1);
    assert_eq!(
        p.tables
            .iter()
            .find(|t| t.kind == events())
            .unwrap()
            .count(),
        374
    );
    assert_eq!(p.origin.vendor.as_deref(), Some("AuthenticAMD"));
    assert!(
        p.origin
            .kernel
            .as_deref()
            .is_some_and(|k| k.starts_with("6."))
    );
    assert!(p.origin.vm_names.values().any(|n| n == "pio_guest"));

    let k = sources::read_bytes(KVM_STAT, NAME, None).unwrap();
    assert_eq!(count(&k, &TableKind::Ioport, "0x80"), 50);
}

#[test]
fn a_truncated_copy_is_an_error_naming_the_byte() {
    let data_end = (le64(PIO, 40) + le64(PIO, 48)) as usize;
    let cut = &PIO[..data_end - 1000];
    let err = sources::read_bytes(cut, NAME, Some(Format::PerfData))
        .err()
        .map(|e| e.to_string())
        .unwrap();
    assert!(err.starts_with("fuzz.data: "), "{err}");
    assert!(
        err.contains("truncated") && err.contains(&format!("byte {}", cut.len())),
        "{err}"
    );
}

#[test]
fn a_copy_damaged_among_its_records_keeps_what_came_before() {
    let data_at = le64(PIO, 40) as usize;
    let mut bad = PIO.to_vec();
    // Walk 200 records, then give the next one an impossible size.
    let mut at = data_at;
    for _ in 0..200 {
        at += u16::from_le_bytes([bad[at + 6], bad[at + 7]]) as usize;
    }
    bad[at + 6] = 3;
    bad[at + 7] = 0;
    let p = sources::read_bytes(&bad, NAME, Some(Format::PerfData)).unwrap();
    let note = p
        .warnings
        .iter()
        .map(|n| n.message.as_str())
        .collect::<Vec<_>>()
        .join("\n");
    assert!(
        note.contains(&format!("byte {at}")) && note.contains("reading stopped"),
        "{note}"
    );
    let total = p
        .tables
        .iter()
        .find(|t| t.kind == events())
        .unwrap()
        .count();
    assert!(total > 0 && total < 374, "{total}");
}

#[test]
fn every_cut_point_is_an_error_or_a_warned_partial_profile() {
    for seed in [PIO, KVM_STAT] {
        for cut in (0..seed.len()).step_by(97) {
            let read = sources::read_bytes(&seed[..cut], NAME, Some(Format::PerfData));
            if cut > 0 {
                // (An empty file is refused before its format is looked at.)
                assert_eq!(
                    outcome(&read, NAME),
                    read_as_file(&seed[..cut]),
                    "cut at {cut}"
                );
            }
            match read {
                Ok(p) => assert!(!p.warnings.is_empty(), "cut at {cut} read silently"),
                Err(e) => assert!(e.to_string().starts_with("fuzz.data: "), "{e}"),
            }
        }
    }
}

/// One edit of a byte string.
#[derive(Debug, Clone)]
enum Edit {
    /// XOR a byte at a position anywhere.
    Flip(usize, u8),
    /// Overwrite 1–8 bytes near a hot spot (header fields, section tables, record headers).
    Hot(usize, usize, Vec<u8>),
    Delete(usize, usize),
    Insert(usize, Vec<u8>),
    Truncate(usize),
}

fn edit() -> impl Strategy<Value = Edit> {
    prop_oneof![
        3 => (any::<usize>(), any::<u8>()).prop_map(|(i, b)| Edit::Flip(i, b)),
        3 => (any::<usize>(), 0usize..64, prop::collection::vec(any::<u8>(), 1..9))
            .prop_map(|(s, d, v)| Edit::Hot(s, d, v)),
        1 => (any::<usize>(), 0usize..64).prop_map(|(i, n)| Edit::Delete(i, n)),
        1 => (any::<usize>(), prop::collection::vec(any::<u8>(), 0..32))
            .prop_map(|(i, v)| Edit::Insert(i, v)),
        1 => any::<usize>().prop_map(Edit::Truncate),
    ]
}

fn apply(seed: &[u8], edits: &[Edit]) -> Vec<u8> {
    let spots = hot_spots(seed);
    let mut bytes = seed.to_vec();
    for e in edits {
        let len = bytes.len().max(1);
        match e {
            Edit::Flip(i, b) => {
                if let Some(x) = bytes.get_mut(i % len) {
                    *x ^= b | 1;
                }
            }
            Edit::Hot(s, d, v) => {
                let at = spots[s % spots.len()] + d;
                for (k, b) in v.iter().enumerate() {
                    if let Some(x) = bytes.get_mut(at + k) {
                        *x = *b;
                    }
                }
            }
            Edit::Delete(i, n) => {
                let start = (i % len).min(bytes.len());
                let end = (start + n).min(bytes.len());
                bytes.drain(start..end);
            }
            Edit::Insert(i, v) => {
                let at = (i % len).min(bytes.len());
                bytes.splice(at..at, v.iter().copied());
            }
            Edit::Truncate(i) => bytes.truncate(i % len),
        }
    }
    bytes
}

proptest! {
    #[test]
    fn mutated_copies_never_panic(
        pio in any::<bool>(),
        edits in prop::collection::vec(edit(), 1..6),
    ) {
        let seed = if pio { PIO } else { KVM_STAT };
        check(&apply(seed, &edits))?;
    }

    #[test]
    fn truncated_copies_never_panic(pio in any::<bool>(), cut in any::<usize>()) {
        let seed = if pio { PIO } else { KVM_STAT };
        let cut = cut % seed.len();
        if let Some(p) = check(&seed[..cut])? {
            prop_assert!(!p.warnings.is_empty(), "a copy cut at {} read without a warning", cut);
        }
    }

    #[test]
    fn random_bytes_never_panic(
        magic in any::<bool>(),
        tail in prop::collection::vec(any::<u8>(), 0..4096),
    ) {
        let mut bytes = if magic { b"PERFILE2".to_vec() } else { Vec::new() };
        bytes.extend(tail);
        check(&bytes)?;
    }

    #[test]
    fn a_real_header_with_random_sections_never_panics(
        tail in prop::collection::vec(any::<u8>(), 0..8192),
        keep in 104usize..2048,
    ) {
        let mut bytes = PIO[..keep].to_vec();
        bytes.extend(tail);
        check(&bytes)?;
    }
}

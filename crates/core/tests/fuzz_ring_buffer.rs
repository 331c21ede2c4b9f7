//! Fuzzing the live-capture decoding (proptest, bounded so it runs in every `cargo test`):
//! ring-buffer pages built from random events decode back to exactly those events; random and
//! mutated pages never panic (damage stops a page with a reason); random payloads fed to the
//! profile never panic; and the capture reader, on a real capture and on truncated, mutated
//! and random copies of it, returns the profile or an error naming the file, never a panic.
//!
//! `PROPTEST_CASES=20000 cargo test -p virtlens-core --test tests --release -- fuzz_ring_buffer::`
//! runs a longer campaign.

use proptest::prelude::*;
use virtlens_core::capture::{EventTable, Hit, ProfileFeed, ThreadInfo};
use virtlens_core::decode::PageBuilder;
use virtlens_core::decode::parse_event_format;
use virtlens_core::decode::{Missed, PageLayout};
use virtlens_core::profile::{Origin, TableKind};
use virtlens_core::sources::{self, Format};

use crate::common;

/// `virtlens record` while `pio_guest 2000 0x80` ran (see testdata/capture/README.md).
const CAPTURE: &[u8] = include_bytes!("../../../testdata/capture/pio-guest-2000.parquet");
const NAME: &str = "fuzz.parquet";

fn config() -> ProptestConfig {
    ProptestConfig::with_cases(common::cases(256))
}

/// Events in time order: (delta from the previous, payload length in 4-byte words 1..=40).
fn events() -> impl Strategy<Value = Vec<(u64, usize)>> {
    prop::collection::vec(
        (
            prop_oneof![0u64..1_000, 0u64..(1 << 27), (1u64 << 27)..(1u64 << 40)],
            1usize..=40,
        ),
        0..60,
    )
}

fn formats() -> EventTable {
    let f = |sys: &str, text: &str| parse_event_format(sys, text).unwrap();
    let common = "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\
                  \tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n";
    EventTable::new(vec![
        f(
            "kvm",
            &format!(
                "name: kvm_pio\nID: 1\nformat:\n{common}\
                 \tfield:unsigned int rw;\toffset:8;\tsize:4;\tsigned:0;\n\
                 \tfield:unsigned int port;\toffset:12;\tsize:4;\tsigned:0;\n"
            ),
        ),
        f(
            "kvm",
            &format!(
                "name: kvm_exit\nID: 2\nformat:\n{common}\
                 \tfield:unsigned int exit_reason;\toffset:8;\tsize:4;\tsigned:0;\n\
                 \tfield:unsigned long guest_rip;\toffset:16;\tsize:8;\tsigned:0;\n\
                 \tfield:u32 isa;\toffset:24;\tsize:4;\tsigned:0;\n"
            ),
        ),
        f("kvm", &format!("name: kvm_entry\nID: 3\nformat:\n{common}")),
        f(
            "kvm",
            &format!(
                "name: kvm_mmio\nID: 4\nformat:\n{common}\
                 \tfield:u32 type;\toffset:8;\tsize:4;\tsigned:0;\n\
                 \tfield:u64 gpa;\toffset:16;\tsize:8;\tsigned:0;\n"
            ),
        ),
        f("kvmmmu", &format!("name: walk\nID: 5\nformat:\n{common}")),
    ])
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn built_pages_decode_to_the_same_events(evs in events(), start in 0u64..(1 << 50), lost in proptest::option::of(proptest::option::of(0u64..1000))) {
        let layout = PageLayout::default();
        let mut b = PageBuilder::new(layout, start);
        let mut want = Vec::new();
        let mut ts = start;
        for (i, (delta, words)) in evs.iter().enumerate() {
            ts += delta;
            let payload: Vec<u8> = (0..words * 4).map(|j| (i + j) as u8).collect();
            if !b.event(ts, &payload) {
                break;
            }
            want.push((ts, payload));
        }
        if let Some(n) = lost {
            b.missed(n);
        }
        let bytes = b.finish();
        let page = layout.page(&bytes).unwrap();
        let mut it = page.events();
        let got: Vec<(u64, Vec<u8>)> = it.by_ref().map(|e| (e.ts, e.payload.to_vec())).collect();
        prop_assert!(it.damage().is_none(), "{:?}", it.damage());
        prop_assert_eq!(got, want);
        prop_assert_eq!(page.missed, match lost { None => Missed::None, Some(n) => Missed::Some(n) });
    }

    #[test]
    fn random_and_mutated_pages_never_panic(
        bytes in prop::collection::vec(any::<u8>(), 0..4200),
        evs in events(),
        flips in prop::collection::vec((any::<usize>(), any::<u8>()), 0..12),
    ) {
        let layout = PageLayout::default();
        if let Ok(p) = layout.page(&bytes) {
            let mut it = p.events();
            for e in it.by_ref() {
                prop_assert!(e.payload.len() <= 4080);
            }
        }
        let mut b = PageBuilder::new(layout, 1);
        for (i, (d, w)) in evs.iter().enumerate() {
            b.event(1 + d * i as u64, &vec![7u8; w * 4]);
        }
        let mut page = b.finish();
        for (at, x) in flips {
            let i = at % page.len();
            page[i] ^= x;
        }
        if let Ok(p) = layout.page(&page) {
            let mut it = p.events();
            let n = it.by_ref().count();
            prop_assert!(n <= 4080 / 4);
            if let Some(d) = it.damage() {
                prop_assert!(d.starts_with("data byte"), "{d}");
            }
        }
    }

    #[test]
    fn random_payloads_feed_the_profile_without_panicking(
        payloads in prop::collection::vec((0u16..7, prop::collection::vec(any::<u8>(), 0..40)), 0..80),
    ) {
        let table = formats();
        let mut feed = ProfileFeed::new(Origin::new("capture", None), &table);
        let thread = ThreadInfo::new(Some(9), Some("CPU 1/KVM".into()), None);
        for (i, (id, rest)) in payloads.iter().enumerate() {
            let mut p = id.to_ne_bytes().to_vec();
            p.extend_from_slice(rest);
            if let Some(idx) = table.index_of(&p) {
                let tid = table.tid_of(&p).unwrap_or(0);
                let hit = Hit { index: idx, ts: i as u64 * 10, cpu: 0, tid, payload: &p, thread: Some(&thread) };
                feed.push(&table, &hit);
            }
        }
        let profile = feed.finish(&table);
        let json = serde_json::to_string(&profile).unwrap();
        prop_assert!(serde_json::from_str::<virtlens_core::profile::Profile>(&json).is_ok());
    }

    #[test]
    fn capture_copies_are_read_or_refused_by_name(
        cut in 0usize..CAPTURE.len(),
        edits in prop::collection::vec(common::edit(vec![b"PAR1".to_vec(), vec![0x18, 0x10], vec![0x19, 0x1c], vec![0xff; 5]]), 1..6),
        tail_edits in prop::collection::vec((0usize..600, any::<u8>()), 0..8),
    ) {
        for bytes in [
            CAPTURE[..cut].to_vec(),
            common::apply(CAPTURE.to_vec(), &edits),
            {
                // The footer is where the profile is: damage it there.
                let mut b = CAPTURE.to_vec();
                let n = b.len();
                for (back, x) in &tail_edits {
                    let i = n - 1 - back % n.min(600);
                    b[i] ^= x;
                }
                b
            },
        ] {
            match sources::read_bytes(&bytes, NAME, Some(Format::Capture)) {
                Ok(p) => prop_assert_eq!(p.origin.format.as_str(), "capture"),
                Err(e) => prop_assert!(e.to_string().starts_with(NAME), "{e}"),
            }
        }
    }
}

#[test]
fn the_real_capture_reads_back_its_profile() {
    let p = sources::read_bytes(CAPTURE, NAME, None).unwrap();
    assert_eq!(p.origin.format, "capture");
    assert_eq!(p.origin.path.as_deref(), Some(NAME));
    let io = p
        .tables
        .iter()
        .find(|t| t.kind == TableKind::Ioport)
        .unwrap();
    assert_eq!(io.count(), 2000);
    assert_eq!(io.rows[0].key.key_text(), "0x80");
    assert!(p.origin.vm_names.values().any(|n| n == "pio_guest"));
    assert!(io.window.as_ref().and_then(|w| w.duration_ns).is_some());
    let err = sources::read_bytes(b"PAR1 not really", NAME, None).unwrap_err();
    assert!(err.to_string().starts_with(NAME), "{err}");
}

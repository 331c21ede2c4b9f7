//! `virsh domstats` with KVM's binary statistics: a real output (glances' virsh engine shows
//! one, `virsh domstats win11`, in nicolargo/glances glances/plugins/vms/engines/virsh.py) read
//! into the `kvm_stats` table the counters' rules read; damaged lines cost at most their
//! statistic, with a note.

use proptest::prelude::*;
use virtlens_core::profile::{Profile, TableKind};
use virtlens_core::sources::{self, Format};

use crate::common::{self, apply};

const SAMPLE: &str = "virsh/domstats-win11-glances.txt";

fn sample() -> Vec<u8> {
    let path = virtlens_testkit::testdata(SAMPLE);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn read(bytes: &[u8]) -> Profile {
    sources::read_bytes(bytes, "domstats.txt", None).unwrap_or_else(|e| panic!("{e}"))
}

fn count(p: &Profile, name: &str, vcpu: Option<u32>) -> Option<u64> {
    p.tables
        .iter()
        .flat_map(|t| &t.rows)
        .find(|r| r.key.key_text() == name && r.vcpu == vcpu)
        .map(|r| r.count)
}

/// The real output with every `.sum` value raised by `by`, as a later poll prints it.
fn polled(bytes: &[u8], by: u64) -> String {
    String::from_utf8_lossy(bytes)
        .lines()
        .map(|l| match l.split_once(".sum=") {
            Some((key, v)) => match v.parse::<u64>() {
                Ok(v) => format!("{key}.sum={}\n", v + by),
                Err(_) => format!("{l}\n"),
            },
            None => format!("{l}\n"),
        })
        .collect()
}

/// A domain printed again is a later poll of a loop: its table is the change from the first
/// poll to the last, whatever the polls between said, and one note says so.
#[test]
fn a_domain_polled_again_holds_the_change_from_its_first_poll_to_its_last() {
    let bytes = sample();
    let text = [polled(&bytes, 0), polled(&bytes, 7), polled(&bytes, 1_000)].join("\n");
    let p = read(text.as_bytes());
    assert_eq!(p.tables.len(), 1, "one domain, one table");
    let t = &p.tables[0];
    assert_eq!(count(&p, "exits", Some(0)), Some(1_000));
    assert_eq!(count(&p, "remote_tlb_flush", None), Some(1_000));
    assert_eq!(t.rows.len(), 40 - 3 + 8, "the same statistics as one poll");
    common::assert_read_as_polls(&p, &read(&bytes), 3, "'win11' was polled 3 times");
    // A value that went down (the VM restarted between polls) is left out, and said.
    let restarted = [polled(&bytes, 1_000), polled(&bytes, 0)].join("\n");
    let p = read(restarted.as_bytes());
    assert!(p.tables[0].rows.is_empty() && p.tables[0].partial);
    assert!(
        p.warnings
            .iter()
            .any(|w| w.message.contains("went down between its first poll")),
        "{:?}",
        p.warnings
    );
}

#[test]
fn a_real_output_becomes_the_binary_statistics_table_of_its_domain() {
    let bytes = sample();
    assert_eq!(sources::detect(&bytes), Some(Format::VirshDomstats));
    let p = read(&bytes);
    assert_eq!(p.tables.len(), 1);
    let t = &p.tables[0];
    assert_eq!(t.kind, TableKind::KvmStats);
    assert!(t.overlapping, "KVM's counters include one another");
    assert!(t.label.as_deref().is_some_and(|l| l.contains("'win11'")));
    assert_eq!(count(&p, "exits", Some(0)), Some(28_094_008));
    assert_eq!(count(&p, "io_exits", Some(0)), Some(1_723_037));
    assert_eq!(count(&p, "mmio_exits", Some(0)), Some(6_536_664));
    assert_eq!(count(&p, "halt_exits", Some(0)), Some(1_173_865));
    assert_eq!(
        count(&p, "remote_tlb_flush", None),
        Some(436_456),
        "the VM's own"
    );
    assert_eq!(
        count(&p, "halt_wait_ns", Some(0)),
        None,
        "a time, not a count"
    );
    assert_eq!(count(&p, "pages_4k", None), None, "an instant value");
    assert_eq!(
        t.rows.len(),
        40 - 3 + 8,
        "vCPU 0's 40 sums less 3 times, and the VM's 8"
    );
    // The author elided vCPUs 1-3 (`vcpu.1...`): said, and the table is partial.
    assert!(t.partial);
    let notes: Vec<&str> = p.warnings.iter().map(|w| w.message.as_str()).collect();
    assert!(notes.iter().any(|n| n.contains("elided")), "{notes:?}");
    assert!(
        notes.iter().any(|n| n.contains("12 KVM values")),
        "{notes:?}"
    );
    assert!(
        !notes.iter().any(|n| n.contains("could not read")),
        "{notes:?}"
    );
}

#[test]
fn two_domains_are_two_tables_and_a_damaged_value_costs_only_its_statistic() {
    let one = String::from_utf8(sample()).unwrap();
    let other = one.replace("'win11'", "'db'").replace("=28094008", "=5");
    let damaged = one.replace("vcpu.0.io_exits.sum=1723037", "vcpu.0.io_exits.sum=17x#!");
    let p = read(format!("{damaged}{other}").as_bytes());
    assert_eq!(p.tables.len(), 2);
    assert!(
        p.tables[1]
            .label
            .as_deref()
            .is_some_and(|l| l.contains("'db'"))
    );
    assert_eq!(
        p.tables[1]
            .rows
            .iter()
            .find(|r| r.key.key_text() == "exits")
            .map(|r| r.count),
        Some(5)
    );
    assert!(
        p.tables[0]
            .rows
            .iter()
            .all(|r| r.key.key_text() != "io_exits")
    );
    assert_eq!(
        p.tables[0].rows.len(),
        p.tables[1].rows.len() - 1,
        "only io_exits is lost"
    );
    let note = p.warnings.iter().find(|w| w.message.contains("17x#!"));
    assert_eq!(note.and_then(|n| n.line), Some(45), "{:?}", p.warnings);
}

#[test]
fn domstats_without_kvm_statistics_is_not_this_format() {
    let plain = "Domain: 'demo'\n  vcpu.current=4\n  vcpu.0.state=1\n  vcpu.0.time=1420000000\n  vcpu.0.wait=18403928\n";
    assert_ne!(
        sources::detect(plain.as_bytes()),
        Some(Format::VirshDomstats)
    );
    let e =
        sources::read_bytes(plain.as_bytes(), "d.txt", Some(Format::VirshDomstats)).unwrap_err();
    assert!(e.to_string().contains("libvirt ≥ 9.3"), "{e}");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(common::cases(64)))]

    /// Any damage: never a panic; an error that names the input, or a profile whose tables
    /// hold only KVM statistics.
    #[test]
    fn damaged_outputs_never_panic(edits in prop::collection::vec(common::edit(vec![
        b"Domain: '".to_vec(), b".sum=".to_vec(), b"vcpu.".to_vec(), b"...".to_vec(), b"=".to_vec(),
    ]), 1..8)) {
        let bytes = apply(sample(), &edits);
        match sources::read_bytes(&bytes, "fuzz.txt", Some(Format::VirshDomstats)) {
            Ok(p) => prop_assert!(p.tables.iter().all(|t| t.kind == TableKind::KvmStats)),
            Err(e) => prop_assert!(e.to_string().contains("fuzz.txt")),
        }
    }
}

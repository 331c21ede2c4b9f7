//! QEMU's QMP `query-stats` reply: hand-written in the shape qapi/stats.json defines
//! (`StatsResult`: `provider`, `qom-path` for a vCPU, `stats` of `name` / `value`, a value a
//! number, a boolean or a list) with KVM's statistics names, and the real replies QEMU 7.2 gave
//! on the lab host (the causal lab's Linux cases; no public paste of one was found). The counts
//! become the `kvm_stats` table the counters' rules read; a damaged line costs at most its
//! statistic, which is then noted.

use proptest::prelude::*;
use virtlens_core::decode::Decoder;
use virtlens_core::diagnose::{self, Options};
use virtlens_core::profile::{Profile, TableKind};
use virtlens_core::sources::{self, Format};

use crate::common::{self, Edit, apply};

/// `virsh qemu-monitor-command VM --pretty '{"execute":"query-stats","arguments":
/// {"target":"vcpu"}}'`-style output, the VM's own statistics first.
const PRETTY: &str = r#"{
  "return": [
    {
      "provider": "kvm",
      "stats": [
        {"name": "max_mmu_page_hash_collisions", "value": 0},
        {"name": "remote_tlb_flush", "value": 1904},
        {"name": "pages_4k", "value": 521000}
      ]
    },
    {
      "provider": "kvm",
      "qom-path": "/machine/unattached/device[0]",
      "stats": [
        {"name": "guest_mode", "value": 0},
        {"name": "halt_wait_hist", "value": [0, 12, 40, 3]},
        {"name": "halt_poll_success_ns", "value": 123456789},
        {"name": "exits", "value": 9000000},
        {"name": "io_exits", "value": 5000000},
        {"name": "mmio_exits", "value": 10000},
        {"name": "halt_exits", "value": 200000},
        {"name": "irq_exits", "value": 300000}
      ]
    },
    {
      "provider": "kvm",
      "qom-path": "/machine/unattached/device[1]",
      "stats": [
        {"name": "exits", "value": 1000000},
        {"name": "io_exits", "value": 500000},
        {"name": "halt_exits", "value": 100000}
      ]
    }
  ]
}
"#;

/// The same reply on one line, as the QMP socket sends it.
const COMPACT: &str = r#"{"return": [{"provider": "kvm", "qom-path": "/machine/unattached/device[0]", "stats": [{"name": "exits", "value": 70000}, {"name": "halt_exits", "value": 50000}, {"name": "halt_wait_hist", "value": [1, 2]}, {"name": "io_exits", "value": 1000}]}]}
"#;

fn read(text: &str) -> Profile {
    sources::read_bytes(text.as_bytes(), "stats.json", None).unwrap_or_else(|e| panic!("{e}"))
}

fn total(p: &Profile, name: &str) -> u64 {
    p.tables
        .iter()
        .flat_map(|t| &t.rows)
        .filter(|r| r.key.key_text() == name)
        .map(|r| r.count)
        .sum()
}

#[test]
fn a_reply_becomes_the_binary_statistics_table() {
    for text in [PRETTY, COMPACT] {
        assert_eq!(sources::detect(text.as_bytes()), Some(Format::QmpStats));
    }
    let p = read(PRETTY);
    assert_eq!(p.tables.len(), 1);
    let t = &p.tables[0];
    assert_eq!(t.kind, TableKind::KvmStats);
    assert!(t.overlapping);
    assert_eq!(total(&p, "exits"), 10_000_000);
    assert_eq!(total(&p, "io_exits"), 5_500_000);
    // vCPUs in the order listed; the VM's own statistics have none.
    let vcpus: Vec<Option<u32>> = t
        .rows
        .iter()
        .filter(|r| r.key.key_text() == "exits")
        .map(|r| r.vcpu)
        .collect();
    assert_eq!(vcpus, [Some(0), Some(1)]);
    assert!(
        t.rows
            .iter()
            .any(|r| r.key.key_text() == "remote_tlb_flush" && r.vcpu.is_none())
    );
    // Times, histograms, instant and peak values are no counts.
    for name in [
        "halt_poll_success_ns",
        "halt_wait_hist",
        "guest_mode",
        "pages_4k",
    ] {
        assert_eq!(total(&p, name), 0, "{name}");
    }
    assert!(
        p.warnings
            .iter()
            .any(|w| w.message.contains("not counts of events"))
    );
    let p = read(COMPACT);
    assert_eq!(total(&p, "halt_exits"), 50_000);
}

/// The replies QEMU gave on the lab host (a VM's and its vCPUs', one JSON line each): every
/// numeric statistic that counts events is read with its value, summed over the vCPUs; the
/// booleans (`guest_mode`, `blocking`) and the rest are left out as no counts, without a note
/// of damage.
#[test]
fn real_replies_from_qemu_are_read_whole() {
    let dirs: Vec<_> = std::fs::read_dir(virtlens_testkit::testdata("lab-cases"))
        .unwrap()
        .map(|e| e.unwrap().path().join("qmp-query-stats.json"))
        .filter(|f| f.is_file())
        .collect();
    assert!(!dirs.is_empty(), "no qmp-query-stats.json in the lab cases");
    for file in dirs {
        let text = std::fs::read_to_string(&file).unwrap();
        assert_eq!(
            sources::detect(text.as_bytes()),
            Some(Format::QmpStats),
            "{}",
            file.display()
        );
        let p = read(&text);
        let mut expected = std::collections::BTreeMap::<String, u64>::new();
        let mut vcpus = 0;
        for line in text.lines() {
            let doc: serde_json::Value = serde_json::from_str(line).unwrap();
            for result in doc["return"].as_array().unwrap() {
                vcpus += usize::from(result.get("qom-path").is_some());
                for stat in result["stats"].as_array().unwrap() {
                    if let Some(v) = stat["value"].as_u64() {
                        *expected
                            .entry(stat["name"].as_str().unwrap().into())
                            .or_default() += v;
                    }
                }
            }
        }
        assert!(vcpus >= 1 && expected.contains_key("exits"));
        let t = &p.tables[0];
        let read_vcpus: std::collections::BTreeSet<_> =
            t.rows.iter().filter_map(|r| r.vcpu).collect();
        assert_eq!(read_vcpus.len(), vcpus, "{}", file.display());
        let mut read = 0;
        for (name, v) in &expected {
            let got = total(&p, name);
            if got > 0 || t.rows.iter().any(|r| r.key.key_text() == *name) {
                assert_eq!(got, *v, "{}: {name}", file.display());
                read += 1;
            }
        }
        // Only times (`…_ns`) and instant or peak values are left out.
        assert!(read >= expected.len() - 12, "{read} of {}", expected.len());
        assert_eq!(total(&p, "exits"), expected["exits"]);
        assert!(
            !p.warnings
                .iter()
                .any(|w| w.message.contains("could not read")),
            "{}: {:?}",
            file.display(),
            p.warnings
        );
        assert!(!t.partial, "{}", file.display());
    }
}

/// The counters' rules read it: with the VM's uptime as the window, the IO exits lead.
/// Replies printed again and again (a loop logging each poll): each result is told by its
/// provider and vCPU, and the table is the change from its first poll to its last, whatever
/// the polls between said; vCPUs keep their numbers.
#[test]
fn replies_polled_again_hold_the_change_from_the_first_poll_to_the_last() {
    let later = |by: u64| {
        PRETTY
            .replace("9000000", &(9_000_000 + by).to_string())
            .replace("1904", &(1904 + by).to_string())
            .replace(
                "\"value\": 100000}",
                &format!("\"value\": {}}}", 100_000 + by),
            )
    };
    let text = [PRETTY.to_string(), later(5), later(70)].join("\n");
    let p = read(&text);
    let once = read(PRETTY);
    let t = &p.tables[0];
    assert_eq!(p.tables.len(), 1);
    assert_eq!(total(&p, "exits"), 70, "the vCPU 0 result's change");
    assert_eq!(total(&p, "remote_tlb_flush"), 70, "the VM's own");
    assert_eq!(total(&p, "halt_exits"), 70, "vCPU 1's");
    assert_eq!(total(&p, "io_exits"), 0);
    assert_eq!(t.rows.len(), once.tables[0].rows.len(), "{:?}", t.rows);
    let vcpus: std::collections::BTreeSet<_> = t.rows.iter().map(|r| r.vcpu).collect();
    assert_eq!(vcpus.len(), 3, "the VM and two vCPUs: {vcpus:?}");
    common::assert_read_as_polls(&p, &once, 3, "the results were printed again");
    // A VM restarted between the polls: its values went down, and are left out.
    let p = read(&[later(70), PRETTY.to_string()].join("\n"));
    assert!(p.tables[0].partial);
    assert!(
        p.warnings
            .iter()
            .any(|w| w.message.starts_with("3 values went down")),
        "{:?}",
        p.warnings
    );
}

#[test]
fn the_counters_rules_read_it() {
    let p = read(PRETTY);
    let options = Options {
        window_s: Some(60.0),
        ..Options::default()
    };
    let d = diagnose::diagnose(&[p], None, &Decoder::builtin(), &options);
    assert_eq!(
        d.inputs[0].evidence.totals.as_ref().map(|t| t.count),
        Some(10_000_000)
    );
    assert!(
        d.main_of(1).is_some_and(|f| f.id.starts_with("io.")),
        "{:?}",
        d.findings
    );
}

#[test]
fn other_json_is_not_taken_for_it() {
    for text in [
        r#"{"return": {"status": "running"}}"#,
        r#"{"jobs": [{"name": "x", "value": 1}]}"#,
    ] {
        assert_ne!(sources::detect(text.as_bytes()), Some(Format::QmpStats));
    }
}

fn edit() -> impl Strategy<Value = Edit> {
    common::edit(vec![
        b"\"".to_vec(),
        b"[".to_vec(),
        b"]".to_vec(),
        b"{".to_vec(),
        b",".to_vec(),
        b"\"value\": ".to_vec(),
        b"\"name\": \"exits\"".to_vec(),
        b"18446744073709551616".to_vec(),
        b"\n".to_vec(),
        b"\0".to_vec(),
        b"\xff".to_vec(),
    ])
}

proptest! {
    #![proptest_config(ProptestConfig { cases: common::cases(800), ..ProptestConfig::default() })]

    #[test]
    fn mutated_replies_never_panic(
        which in any::<bool>(),
        edits in prop::collection::vec(edit(), 1..8),
    ) {
        let text = if which { PRETTY } else { COMPACT };
        let bytes = apply(text.as_bytes().to_vec(), &edits);
        match sources::read_bytes(&bytes, "fuzz.json", Some(Format::QmpStats)) {
            Ok(p) => prop_assert!(p.tables.iter().all(|t| !t.rows.is_empty())),
            Err(e) => common::check_error(e, "fuzz.json", &bytes)?,
        }
    }

    #[test]
    fn random_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..600)) {
        if let Err(e) = sources::read_bytes(&bytes, "fuzz.json", Some(Format::QmpStats)) {
            common::check_error(e, "fuzz.json", &bytes)?;
        }
    }

    /// Damage one statistic's line: the other counts stay, and the line is read or noted.
    #[test]
    fn one_bad_line_costs_at_most_its_statistic(
        pick in any::<prop::sample::Index>(),
        at in any::<prop::sample::Index>(),
        cut in 0usize..6,
        bytes in prop::collection::vec(prop::sample::select(b"aZx09.:,\"{}[] \t\0\xff".to_vec()), 0..4),
    ) {
        let lines: Vec<(usize, u64)> = PRETTY
            .lines()
            .enumerate()
            .filter(|(_, l)| l.contains("\"name\""))
            .map(|(i, l)| {
                let v = l.rsplit(':').next().unwrap_or("").trim_matches(|c: char| !c.is_ascii_digit());
                (i, v.parse().unwrap_or(0))
            })
            .collect();
        let (line, value) = lines[pick.index(lines.len())];
        let full = read(PRETTY);
        let sum = |p: &Profile| p.tables.iter().fold(0u64, |a, t| a.saturating_add(t.count()));
        let input = common::damage_line(PRETTY, line, at, cut, &bytes);
        let p = sources::read_bytes(&input, "bad.json", Some(Format::QmpStats))
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        let (before, after) = (sum(&full), sum(&p));
        prop_assert!(after.saturating_add(value) >= before, "{} of {}: {:?}", after, before, p.warnings);
        let rows = |p: &Profile| p.tables.iter().map(|t| t.rows.len()).sum::<usize>();
        let read_it = rows(&p) >= rows(&full) || after.saturating_add(value) != before;
        let noted = p.warnings.iter().any(|w| w.line == Some(line + 1));
        prop_assert!(read_it || noted, "line {} neither read nor noted: {:?}", line + 1, p.warnings);
    }
}

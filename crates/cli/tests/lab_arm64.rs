//! virtlens's live paths on a real arm64 KVM host: the arm64 lab host (lab/arm64-host.sh, QEMU
//! TCG emulating an arm64 CPU with EL2; Debian's arm64 kernel, KVM built in).
//!
//! One boot runs lab/arm64-inside.sh: the lab guest (lab/arm64-guest) makes a known number of
//! MMIO stores (DABT_LOW exits handed to its VMM) and PSCI calls (HVC64 exits KVM answers),
//! once under `virtlens record -o` (tracefs), once under `record --summary` (in-kernel
//! counting, BPF) and once under `serve` (scraped). Each must hold exactly those exits, keyed by
//! their exception class, with the times labelled as the emulator's.
//!
//! `top` is not checked here: on this host `top --once` over an interval of a running guest
//! showed no exit rows at all in about one run of three (both modes; its MMIO rows were there),
//! a defect not yet understood.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use serde_json::Value;
use virtlens_testkit::{Need, require};

const BIN: &str = env!("CARGO_BIN_EXE_virtlens");
const WRITES: u64 = 2000;
const HVCS: u64 = 100;
/// Boots the test may take: the emulated host now and then stalls (lab/README.md).
const BOOTS: usize = 3;

/// Runs lab/arm64-inside.sh in a boot of the arm64 lab host, retrying a boot that failed on
/// its own (124: timeout, 125: the host stopped before the script ended).
fn in_arm64_host(out: &Path) {
    let _alone = virtlens_testkit::exclusive();
    let root = virtlens_testkit::repo_root();
    for boot in 1..=BOOTS {
        let _ = std::fs::remove_dir_all(out);
        let status = Command::new(root.join("lab/arm64-host.sh"))
            .arg("run")
            .arg(out)
            .arg("sh")
            .arg(root.join("lab/arm64-inside.sh"))
            .args([WRITES.to_string(), HVCS.to_string()])
            .env("TIMEOUT", "600")
            .status()
            .unwrap();
        let console = std::fs::read_to_string(out.join("console.log")).unwrap_or_default();
        match status.code() {
            Some(0) => return,
            Some(124 | 125) if boot < BOOTS => {
                eprintln!("arm64 lab boot {boot} failed:\n{console}")
            }
            c => panic!("the arm64 lab host ended {c:?}; its console:\n{console}"),
        }
    }
}

/// Key → count of the tables of `kind` in a `report --json` document.
fn counts(doc: &Value, kind: &str) -> BTreeMap<String, u64> {
    let mut m = BTreeMap::new();
    for t in doc["tables"].as_array().unwrap() {
        if t["kind"] != kind {
            continue;
        }
        assert_eq!(t["isa"], "arm64", "{kind} table: {t}");
        for r in t["rows"].as_array().unwrap() {
            *m.entry(r["key"].as_str().unwrap().to_string()).or_default() +=
                r["count"].as_u64().unwrap();
        }
    }
    m
}

#[test]
fn arm64_exits_are_keyed_by_their_class_on_every_live_path() {
    if !require(&[Need::LabArm64]) {
        return;
    }
    let out = std::env::temp_dir().join(format!("virtlens-arm64-lab-{}", std::process::id()));
    in_arm64_host(&out);
    let report = Command::new(BIN)
        .args(["report", "--json"])
        .arg(out.join("record.parquet"))
        .output()
        .unwrap();
    assert!(report.status.success(), "{report:?}");
    let summary = std::fs::read_to_string(out.join("summary.json")).unwrap();
    let docs = [
        (
            "record (tracefs)",
            serde_json::from_slice::<Value>(&report.stdout).unwrap(),
        ),
        (
            "record --summary (BPF)",
            serde_json::from_str(&summary).unwrap(),
        ),
    ];
    for (name, doc) in &docs {
        let guest = std::fs::read_to_string(out.join(format!(
            "guest-{}.txt",
            if name.contains("BPF") {
                "summary"
            } else {
                "record"
            }
        )))
        .unwrap();
        assert_eq!(guest.trim(), format!("mmio_writes={WRITES} system_off=1"));
        let exits = counts(doc, "vmexit");
        assert_eq!(exits.get("DABT_LOW"), Some(&WRITES), "{name}: {exits:?}");
        // The PSCI_VERSION calls and the SYSTEM_OFF that ends the run.
        assert_eq!(exits.get("HVC64"), Some(&(HVCS + 1)), "{name}: {exits:?}");
        // Host interrupts are IRQ exits; no trap goes unnamed.
        assert!(
            exits.keys().all(|k| !k.starts_with("UNKNOWN")),
            "{name}: {exits:?}"
        );
        let mmio = counts(doc, "mmio");
        assert_eq!(mmio.get("0x10000000"), Some(&WRITES), "{name}: {mmio:?}");
        let notes = doc["notes"].to_string();
        assert!(
            notes.contains("emulates"),
            "{name}: the emulated CPU is not said: {notes}"
        );
    }
    // The exporter's scrape, taken once it had the power-off exit.
    let metrics = std::fs::read_to_string(out.join("serve.txt")).unwrap();
    let guest = std::fs::read_to_string(out.join("guest-serve.txt")).unwrap();
    assert_eq!(guest.trim(), format!("mmio_writes={WRITES} system_off=1"));
    // The sum of the series whose line starts with `prefix` and contains `label`.
    let sum = |prefix: &str, label: &str| -> u64 {
        metrics
            .lines()
            .filter(|l| l.starts_with(prefix) && l.contains(label))
            .map(|l| l.rsplit(' ').next().unwrap().parse::<f64>().unwrap() as u64)
            .sum()
    };
    let exits = |reason: &str| sum("virtlens_exits_total{", &format!("reason=\"{reason}\""));
    assert_eq!(exits("DABT_LOW"), WRITES, "serve:\n{metrics}");
    assert_eq!(exits("HVC64"), HVCS + 1, "serve:\n{metrics}");
    assert_eq!(
        sum("virtlens_mmio_exits_total{", ""),
        WRITES,
        "serve:\n{metrics}"
    );
    assert!(
        metrics.contains("backend=\"arm64\",timing=\"emulated-cpu\""),
        "serve:\n{metrics}"
    );
    let _ = std::fs::remove_dir_all(&out);
}

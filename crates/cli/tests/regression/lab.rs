//! `virtlens exitcost` and `virtlens lab` (issue 10, "Why"): negative costs shown as "ok", a
//! huge `--ops` running for hours without a word, the bundled recording in the same JSON as a
//! measurement.

use std::process::{Command, Output};

use serde_json::Value;
use virtlens_testkit::{Need, require};

use crate::common::*;

fn json(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{e}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

#[test]
fn exitcost_never_shows_a_negative_or_unresolvable_cost_as_ok() {
    if !require(&[Need::Kvm]) {
        return;
    }
    let _g = shared();
    // One operation per run, one run: the differences are mostly noise.
    let out = run(&["exitcost", "--runs", "1", "--ops", "1", "--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r = json(&out);
    let tests = r["tests"].as_array().unwrap();
    let ok = |t: &&Value| t["status"] == "ok";
    let negative: Vec<&Value> = tests
        .iter()
        .filter(ok)
        .filter(|t| t["median_ns"].as_f64().unwrap() < 0.0)
        .collect();
    assert!(
        negative.is_empty(),
        "negative costs shown as ok: {negative:?}"
    );
    for t in tests.iter().filter(ok) {
        let res = t["resolution_ns"].as_f64().unwrap();
        assert!(
            t["median_ns"].as_f64().unwrap() >= res,
            "below the clock's resolution: {t}"
        );
    }
    let unresolved: Vec<&Value> = tests
        .iter()
        .filter(|t| t["status"] == "unresolved")
        .collect();
    assert!(
        !unresolved.is_empty(),
        "one operation per run resolves nothing cheap: {r}"
    );
    for t in unresolved {
        assert!(t["reason"].as_str().unwrap().contains("--ops"), "{t}");
    }
    assert_eq!(r["measured"], true);
    assert!(r["recorded"]["clock_resolution_ns"].as_f64().unwrap() > 0.0);
}

#[test]
fn exitcost_with_a_huge_ops_is_capped_by_its_budget_and_says_so() {
    if !require(&[Need::Kvm]) {
        return;
    }
    let _g = shared();
    let out = run(&[
        "exitcost",
        "--mode",
        "real",
        "--runs",
        "2",
        "--ops",
        "100000000",
        "--budget",
        "3",
        "--json",
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    let r = json(&out);
    let notes = r["notes"].to_string();
    assert!(
        notes.contains("--ops 100000000 is capped at") && notes.contains("time budget"),
        "{notes}"
    );
    assert!(
        err.contains("--ops 100000000 is capped at"),
        "said on stderr too: {err}"
    );
    for t in r["tests"].as_array().unwrap() {
        assert!(t["ops_per_run"].as_u64().unwrap() < 100_000_000, "{t}");
    }
    assert_eq!(r["recorded"]["budget_s"], 3.0);
}

fn assert_not_measured(out: &Output) {
    assert_eq!(
        out.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    // At the top, where a script looks first.
    let head: Vec<&str> = text.lines().take(3).map(str::trim).collect();
    assert_eq!(
        head,
        [
            "{",
            "\"schema\": \"virtlens.lab/2\",",
            "\"measured\": false,"
        ]
    );
    assert_eq!(json(out)["measured"], false);
}

#[test]
fn lab_offline_json_says_it_measured_nothing_and_exits_3() {
    let _g = shared();
    assert_not_measured(&run(&["lab", "--offline", "--json"]));
    let text = run(&["lab", "--offline"]);
    assert_eq!(
        text.status.code(),
        Some(0),
        "the text says it in its banner"
    );
    assert!(String::from_utf8_lossy(&text.stdout).contains("RECORDED, not measured here"));
    let help = run(&["lab", "--help"]);
    let help = String::from_utf8_lossy(&help.stdout);
    assert!(
        help.contains("3 with --json when nothing was measured"),
        "{help}"
    );
}

#[test]
fn lab_without_kvm_json_says_it_measured_nothing_and_exits_3() {
    // Root for a mount namespace in which /dev/kvm is /dev/null.
    if !require(&[Need::Root, Need::Kvm]) {
        return;
    }
    let _g = shared();
    let out = Command::new("unshare")
        .args(["--mount", "--propagation", "private", "sh", "-c"])
        .arg("mount --bind /dev/null /dev/kvm && exec \"$@\"")
        .args(["sh", BIN, "lab", "--quick", "--json"])
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("not the KVM device"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_not_measured(&out);
}

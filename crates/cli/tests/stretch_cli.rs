//! `virtlens load`, `bench`, `stretch` and `model overcommit` end to end: the JSON contracts,
//! checked answers, the published figures' stated summaries, exit codes on bad input, and —
//! with /dev/kvm — the in-lab stretch and a crowded host's over-commit measured with micro-VMs.

use serde_json::Value;
use virtlens_testkit::{Need, require};

use crate::common;
use crate::common::run as virtlens;

fn data(name: &str) -> String {
    common::data(&format!("stretch/{name}"))
}

fn json(args: &[&str]) -> Value {
    common::json_of(args, &[0])
}

fn text(args: &[&str]) -> String {
    String::from_utf8(common::stdout_of(args, &[0])).unwrap()
}

#[test]
fn the_nested_study_goes_through_stretch_and_its_storage_summary_is_flagged() {
    let out = text(&["stretch", &data("nested-hyperv-2016tp4.json")]);
    assert!(
        out.contains("agrees: VM vs host on cpu.fritz_chess: stated -4.14%"),
        "{out}"
    );
    assert!(
        out.contains("DISAGREES: VM vs host on storage.randwrite_4k: stated -21.38%"),
        "{out}"
    );
    assert!(
        out.contains("summary (as the nested study printed it"),
        "{out}"
    );
    let j = json(&[
        "stretch",
        "--json",
        &data("friedman-hyperv-overcommit.json"),
    ]);
    assert_eq!(j["schema"], "virtlens.stretch/1");
    let flagged: Vec<&str> = j["stated"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["agrees"] == false)
        .map(|s| s["stated"]["says"].as_str().unwrap())
        .collect();
    assert_eq!(flagged, vec!["4.08x"]);
}

#[test]
fn native_and_tcg_bench_documents_compare_with_noise_bounds() {
    let j = json(&[
        "stretch",
        "--json",
        &data("native.json"),
        &data("tcg-vm.json"),
    ]);
    let rows = j["rows"].as_array().unwrap();
    let cpu = rows.iter().find(|r| r["measure"] == "cpu.search").unwrap();
    let s = &cpu["vs_first"][0];
    assert!(
        s["bounds"].is_array(),
        "repeated runs give noise bounds: {s}"
    );
    assert!(s["factor"].as_f64().unwrap() > 0.0);
    assert!(
        j["notes"].to_string().contains("TCG"),
        "the emulated layer is labelled"
    );
    assert_eq!(
        cpu["values"][1]["detail"]["kernel"],
        "12-queens, bitboard backtracking"
    );
}

#[test]
fn load_reports_latency_cpu_and_run_queue_wait() {
    let j = json(&[
        "load",
        "--tasks",
        "4",
        "--workers",
        "2",
        "--iterations",
        "1",
        "--footprint-mb",
        "1",
        "--json",
    ]);
    assert_eq!(j["schema"], "virtlens.load/1");
    assert_eq!(j["tasks_done"], 4);
    for k in ["p50", "p90", "p99", "max"] {
        assert!(j["latency_ms"][k].as_f64().unwrap() > 0.0, "{k}");
    }
    assert!(
        j["run_queue"]["ready_pct"].is_number(),
        "schedstat is read: {j}"
    );
    assert!(j["cpu"]["user_s"].is_number());
    // bad dials are usage errors
    assert_eq!(
        virtlens(&["load", "--contention", "2"]).status.code(),
        Some(2)
    );
}

#[test]
fn bench_gives_one_versioned_document_with_a_checked_cpu_answer() {
    let j = json(&[
        "bench", "--quick", "--runs", "2", "--layer", "test", "--json",
    ]);
    assert_eq!(j["schema"], "virtlens.bench/1");
    assert_eq!(j["layer"], "test");
    let m = j["measures"].as_array().unwrap();
    let cpu = m.iter().find(|x| x["name"] == "cpu.search").unwrap();
    assert_eq!(cpu["check"]["ok"], true);
    assert_eq!(cpu["check"]["expected"], 14200);
    assert_eq!(cpu["samples"].as_array().unwrap().len(), 2);
    for name in [
        "clock.read",
        "syscall.getppid",
        "tlb.random_4k",
        "tlb.random_2m",
        "memory.copy",
    ] {
        assert!(m.iter().any(|x| x["name"] == name), "{name}");
    }
    assert!(j["fingerprint"]["clocksource"].is_string());
}

#[test]
fn model_overcommit_states_its_assumptions_and_refuses_nonsense() {
    let out = text(&[
        "model",
        "overcommit",
        "--pcpus",
        "2",
        "--vcpus",
        "4",
        "--util",
        "0.25",
    ]);
    assert!(
        out.contains("joint probability")
            && out.contains("Erlang C")
            && out.contains("assumptions:")
    );
    let j = json(&[
        "model",
        "overcommit",
        "--pcpus",
        "2",
        "--vcpus",
        "8",
        "--json",
    ]);
    assert!((j["erlang_c"]["stretch"].as_f64().unwrap() - 4.0).abs() < 1e-9);
    assert_eq!(
        virtlens(&["model", "overcommit", "--util", "0"])
            .status
            .code(),
        Some(2)
    );
    assert_eq!(
        virtlens(&["stretch", &data("README.md")]).status.code(),
        Some(2)
    );
}

#[test]
fn in_lab_stretch_runs_the_same_kernels_natively_and_in_micro_vms() {
    if !require(&[Need::Kvm]) {
        return;
    }
    let j = json(&["stretch", "--lab", "--runs", "1", "--json"]);
    let layers: Vec<&str> = j["layers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["name"].as_str().unwrap())
        .collect();
    assert_eq!(layers.len(), 3);
    assert_eq!(&layers[..2], &["native", "micro-VM ring 3"]);
    let rows = j["rows"].as_array().unwrap();
    let cpu = rows
        .iter()
        .find(|r| r["measure"] == "lab.cpu.queens8")
        .unwrap();
    for v in cpu["values"].as_array().unwrap() {
        assert!(v["value"].as_f64().unwrap() > 0.0);
    }
    let tlb = rows
        .iter()
        .find(|r| r["measure"] == "lab.tlb.random_4k")
        .unwrap();
    assert!(
        tlb["values"][1]["detail"]["pages_obtained"]
            .as_str()
            .unwrap()
            .starts_with("4K guest pages")
    );
    if std::path::Path::new("/sys/module/kvm_pvm").exists() {
        assert!(layers[2].contains("emulated"), "{layers:?}");
    }
}

#[test]
fn a_crowded_host_is_measured_against_the_model() {
    if !require(&[Need::Kvm]) {
        return;
    }
    let j = json(&[
        "model",
        "overcommit",
        "--measure",
        "--max-vcpus",
        "3",
        "--runs",
        "1",
        "--json",
    ]);
    let rows = j["rows"].as_array().unwrap();
    assert_eq!(
        rows.iter()
            .map(|r| r["k"].as_u64().unwrap())
            .collect::<Vec<_>>(),
        vec![1, 2, 3]
    );
    for r in rows {
        assert!(r["measured_stretch"]["median"].as_f64().unwrap() > 0.0);
        assert!(
            r["measured_ready_pct"]["median"].is_number(),
            "ready % from schedstat: {r}"
        );
        assert!(r["predicted_stretch_erlang"].as_f64().unwrap() >= 1.0);
    }
}

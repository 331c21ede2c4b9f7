//! `virtlens diagnose` end to end: exit codes (0, 1 at or above `--fail-on` — default high —,
//! 2 on bad input), the JSON contract (`virtlens.diagnose/2` with every finding field), the
//! comparison of several inputs, the configuration join, and text that reads as an answer.

use serde_json::Value;

use crate::common::run as virtlens;
use crate::common::{self, data};

fn seed(n: u8) -> String {
    let name = match n {
        1 => "1-no-hyperv-features.txt",
        2 => "2-all-hyperv-features.txt",
        3 => "3-hypervisor-cpuid-hidden.txt",
        _ => "4-all-hyperv-features-stimer-optimized.txt",
    };
    data(&format!("seed-kvm-hyperv-traps/{name}"))
}

fn code(args: &[&str]) -> i32 {
    virtlens(args).status.code().unwrap_or(-1)
}

fn json(args: &[&str]) -> Value {
    common::json_of(args, &[0, 1])
}

#[test]
fn exit_codes_follow_fail_on() {
    let (s1, s3, s4) = (seed(1), seed(3), seed(4));
    let w = ["diagnose", "--guest", "windows"];
    let with =
        |extra: &[&str]| -> Vec<String> { w.iter().chain(extra).map(|s| s.to_string()).collect() };
    let run = |a: Vec<String>| code(&a.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(run(with(&[&s1])), 1, "high finding, default --fail-on high");
    assert_eq!(run(with(&[&s4])), 0, "healthy");
    assert_eq!(run(with(&[&s1, "--fail-on", "critical"])), 0);
    assert_eq!(run(with(&[&s3, "--fail-on", "low"])), 1);
    assert_eq!(run(with(&[&s4, "--fail-on", "info"])), 1);
}

#[test]
fn bad_input_exits_2() {
    assert_eq!(code(&["diagnose", "/nonexistent/virtlens.txt"]), 2);
    assert_eq!(code(&["diagnose", &seed(1), "--qemu-version", "x"]), 2);
    assert_eq!(
        code(&["diagnose", &seed(1), "--config", "/nonexistent/domain.xml"]),
        2
    );
    assert_eq!(code(&["diagnose", &data("configs/INDEX.md")]), 2);
    assert_eq!(code(&["diagnose", &seed(1), "--fail-on", "severe"]), 2);
    // One scale for lint, diagnose and counters: lint's `error` is `critical` everywhere.
    assert_eq!(
        code(&["diagnose", &seed(1), "--fail-on", "error"]),
        code(&["diagnose", &seed(1), "--fail-on", "critical"])
    );
    let perfmon = data("perfmon/disk-queue-india-2017.csv");
    assert_eq!(
        code(&["counters", &perfmon, "--fail-on", "error"]),
        0,
        "no critical"
    );
    assert_eq!(code(&["counters", &perfmon, "--fail-on", "severe"]), 2);
}

#[test]
fn json_carries_every_field() {
    let v = json(&["diagnose", "--json", "--guest", "windows", &seed(2)]);
    assert_eq!(v["schema"], "virtlens.diagnose/2");
    let input = &v["inputs"][0];
    assert_eq!(input["evidence"]["guest"]["family"], "windows");
    assert_eq!(input["evidence"]["guest"]["basis"], "option");
    assert_eq!(input["verdict"], "problem");
    assert_eq!(input["main"], 1);
    let fs = v["findings"].as_array().unwrap();
    let f = fs
        .iter()
        .find(|f| f["id"] == "apic.apicv-inhibited-synic")
        .unwrap();
    for key in [
        "id",
        "tag",
        "input",
        "rank",
        "role",
        "severity",
        "grade",
        "title",
        "confidence",
        "cost",
        "evidence",
        "against",
        "competing",
        "check",
        "words_for",
        "cause",
        "fixes",
        "advice",
        "effect",
        "sources",
        "confirm",
    ] {
        assert!(f.get(key).is_some(), "no {key}");
    }
    assert_eq!(f["tag"], "apic.apicv-inhibited");
    assert_eq!(f["role"], "main");
    assert_eq!(f["severity"], "high");
    assert_eq!(f["confidence"], "likely");
    assert_eq!(f["grade"]["measure"], "overhead-share");
    assert_eq!(f["cost"]["share_of"], "overhead-time");
    assert!(f["fixes"][0]["qemu"].as_str().unwrap().contains("hv-avic"));
    assert!(f["fixes"][0]["libvirt"].as_str().unwrap().contains("<avic"));
    assert_eq!(f["fixes"][0]["guest"], "windows");
    assert!(
        f["advice"]
            .as_array()
            .unwrap()
            .iter()
            .any(|a| a == "advice.hv-avic")
    );
    assert!(
        f["competing"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["id"] == "apic.hv-apic-msrs")
    );
    assert!(f["sources"][0]["ref"].as_str().is_some());
    let e = &f["evidence"][0];
    for key in [
        "key",
        "table",
        "count",
        "count_share",
        "time_ns",
        "time_share",
        "mean_ns",
        "explains",
    ] {
        assert!(e.get(key).is_some(), "evidence lacks {key}");
    }
    assert!(v.get("comparison").is_none());
}

#[test]
fn window_and_vcpus_make_costs_absolute() {
    let v = json(&[
        "diagnose",
        "--json",
        "--guest",
        "windows",
        "--window",
        "10",
        "--vcpus",
        "4",
        &seed(1),
    ]);
    let rate = &v["inputs"][0]["evidence"]["rate"];
    assert_eq!(rate["window_basis"], "option");
    assert_eq!(rate["vcpus"], 4);
    assert_eq!(rate["cpu_basis"], "window-vcpus");
    let f = &v["findings"][0];
    assert_eq!(f["id"], "timer.hpet-mmio");
    // 5.808 s of handling over 10 s and 4 vCPUs.
    let share = f["cost"]["cpu_share"].as_f64().unwrap();
    assert!((share - 5.808 / 40.0).abs() < 0.001, "{share}");
    assert_eq!(f["grade"]["measure"], "cpu-share");
    assert_eq!(code(&["diagnose", &seed(1), "--window", "0"]), 2);
    assert_eq!(code(&["diagnose", &seed(1), "--vcpus", "0"]), 2);
}

#[test]
fn two_inputs_are_compared() {
    let v = json(&[
        "diagnose",
        "--json",
        "--guest",
        "windows",
        &seed(2),
        &seed(4),
    ]);
    let c = &v["comparison"]["changes"][0];
    assert_eq!(c["verdict"], "helped");
    assert_eq!(c["resolved"][0], "apic.apicv-inhibited-synic");
    assert_eq!(v["comparison"]["verdicts"][0]["measure"], "time");
    let out = virtlens(&["diagnose", "--guest", "windows", &seed(2), &seed(4)]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("Did it help?"), "{text}");
    assert!(
        text.contains("helped: exit-handling time without idle -48%"),
        "{text}"
    );
}

#[test]
fn config_is_joined() {
    let v = json(&[
        "diagnose",
        "--json",
        "--guest",
        "windows",
        &seed(1),
        "--config",
        &data("configs/04-libvirt-test-hyperv-off.xml"),
    ]);
    let f = &v["findings"][0];
    assert_eq!(f["id"], "timer.hpet-mmio");
    assert_eq!(f["config"][0]["rule"], "HV-PERF-002");
    assert!(
        f["config"][0]["element"]["path"]
            .as_str()
            .unwrap()
            .starts_with("/domain/")
    );
    assert_eq!(v["config"]["format"], "libvirt");
}

#[test]
fn text_reads_like_an_answer() {
    let out = virtlens(&["diagnose", "--guest", "windows", &seed(1)]);
    let text = String::from_utf8_lossy(&out.stdout);
    for needle in [
        "Main problem: the guest's timer runs on the emulated HPET",
        "1. [high] timer.hpet-mmio",
        "evidence  EPT_MISCONFIG",
        "cause",
        "qemu    -cpu …,hv-vpindex=on,hv-synic=on,hv-stimer=on,hv-time=on",
        "severity  high",
        "libvirt <vpindex state='on'/>",
        "<stimer state='on'/>",
        "expect",
        "confirm   record the addresses",
        "source",
    ] {
        assert!(text.contains(needle), "missing `{needle}` in:\n{text}");
    }
    // Idle apart, nothing alarming on the idle sample.
    let out = virtlens(&[
        "diagnose",
        &data("exit-reports/13-perf-kvm-stat-vmexit-intel-msr-write-hlt.txt"),
    ]);
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("Nothing alarming: the guest is mostly idle"),
        "{text}"
    );
    assert!(text.contains("[info] idle.hlt"), "{text}");
}

#[test]
fn host_options_are_used() {
    let v = json(&[
        "diagnose",
        "--json",
        "--guest",
        "windows",
        "--host-vendor",
        "intel",
        "--host-apicv",
        "off",
        &seed(2),
    ]);
    assert_eq!(v["host"]["apicv"], false);
    assert!(
        v["findings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f["id"] == "apic.apicv-off")
    );
    let v = json(&[
        "diagnose",
        "--json",
        "--guest",
        "windows",
        "--host-kernel",
        "5.10.0-21-amd64",
        "--qemu-version",
        "6.0",
        &seed(2),
    ]);
    let f = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["id"] == "apic.apicv-inhibited-synic")
        .unwrap()
        .clone();
    assert!(f["fixes"][0]["host"].as_str().unwrap().contains("5.10"));
    assert!(
        f["fixes"][0]["summary"]
            .as_str()
            .unwrap()
            .contains("QEMU 6.0 predates hv-avic")
    );
}

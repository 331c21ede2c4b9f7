//! `report --by rip` and `diagnose --guest-symbols` on the lab's real recordings of a Debian
//! guest, with the real System.map of its kernel (testdata/guest-symbols/README.md): the
//! exits are named by the guest functions whose instructions make them (checked by hand
//! against the kernel's `vmlinux`), the KASLR offset inferred and said so.

use std::process::Command;

use serde_json::Value;
use virtlens_testkit::{Need, require};

use crate::common::{self, data, json_of, run, stdout_of};

const CASE: &str = "lab-cases/linux-halt-churn-pingpong/perf.data";
const MAP: &str = "guest-symbols/System.map-6.1.0-56-amd64.xz";

fn text(args: &[&str]) -> String {
    String::from_utf8(stdout_of(args, &[0])).unwrap()
}

#[test]
fn report_by_rip_names_the_guest_functions_of_each_exit_reason() {
    let out = text(&[
        "report",
        &data(CASE),
        "--by",
        "rip",
        "--guest-symbols",
        &data(MAP),
    ]);
    assert!(out.contains("exits by guest code"), "{out}");
    assert!(out.contains("native_safe_halt+0xa"), "{out}");
    assert!(
        out.contains("100% of the hlt exits come from native_safe_halt+0xa"),
        "{out}"
    );
    assert!(
        out.contains("87% of the msr exits come from native_write_msr+0x4"),
        "{out}"
    );
    assert!(
        out.contains("load offset (KASLR) 0x3400000 inferred"),
        "{out}"
    );
}

#[test]
fn report_by_rip_json_has_the_shares_of_each_reason() {
    let doc = json_of(
        &[
            "report",
            "--json",
            "--by",
            "rip",
            "--guest-symbols",
            &data(MAP),
            &data(CASE),
        ],
        &[0],
    );
    let tables = doc["tables"].as_array().unwrap();
    let hlt = tables
        .iter()
        .find(|t| t["kind"] == "guest_rip" && t["label"].as_str().unwrap().starts_with("hlt "))
        .unwrap();
    assert_eq!(hlt["rows"][0]["key"], "native_safe_halt+0xa");
    assert_eq!(hlt["rows"][0]["count_share"], 1.0);
    assert_eq!(hlt["rows"][0]["code"], 0xffff_ffff_84e5_92eau64);
}

#[test]
fn without_symbols_the_rips_are_shown_and_the_flag_named() {
    let out = text(&["report", &data(CASE), "--by", "rip", "--top", "1"]);
    assert!(out.contains("0xffffffff84e592ea"), "{out}");
    assert!(out.contains("--guest-symbols FILE"), "{out}");
    // Inputs without RIPs say why.
    let out = text(&[
        "report",
        &data("lab-cases/linux-halt-churn-pingpong/perf-kvm-stat.txt"),
        "--by",
        "rip",
    ]);
    assert!(out.contains("no exit carries a guest RIP"), "{out}");
    // Captures recorded before the profile kept RIPs: their raw events have them.
    let out = text(&[
        "report",
        &data("lab-cases/linux-idle/capture.parquet"),
        "--by",
        "rip",
    ]);
    assert!(out.contains("`guest_rip` or `rip` column"), "{out}");
}

#[test]
fn a_given_offset_is_used_as_given() {
    let out = text(&[
        "report",
        &data(CASE),
        "--by",
        "rip",
        "--guest-symbols",
        &data(MAP),
        "--guest-kaslr-offset",
        "0x3400000",
    ]);
    assert!(out.contains("load offset 0x3400000 as given"), "{out}");
    assert!(out.contains("native_safe_halt+0xa"), "{out}");
    let out = run(&[
        "report",
        &data(CASE),
        "--by",
        "rip",
        "--guest-kaslr-offset",
        "0x1",
    ]);
    assert_eq!(out.status.code(), Some(2), "the offset needs the symbols");
}

#[test]
fn an_unreadable_map_is_bad_input_naming_the_file() {
    let tmp = common::TempDir::new("guest-symbols");
    let zeros = tmp.0.join("kallsyms");
    std::fs::write(
        &zeros,
        "0000000000000000 T _text\n0000000000000000 t native_safe_halt\n",
    )
    .unwrap();
    let out = run(&[
        "report",
        &data(CASE),
        "--by",
        "rip",
        "--guest-symbols",
        zeros.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("kallsyms") && err.contains("kptr_restrict"),
        "{err}"
    );
}

#[test]
fn diagnose_names_the_guest_code_under_the_exit_reasons_of_its_findings() {
    let doc = json_of(
        &[
            "diagnose",
            "--json",
            "--guest-symbols",
            &data(MAP),
            &data(CASE),
        ],
        &[0, 1],
    );
    let lines: Vec<&Value> = doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|f| f["evidence"].as_array().unwrap())
        .filter(|e| e["table"] == "guest_rip")
        .collect();
    // AVIC is off: interrupts are injected through window exits, which open as the idle
    // guest's `sti; hlt` wakes (the RIP after its `hlt`).
    let vintr = lines
        .iter()
        .find(|e| e["note"].as_str().unwrap().contains("of the vintr exits"))
        .unwrap();
    assert_eq!(vintr["key"], "native_safe_halt+0xb", "{lines:?}");
    assert_eq!(vintr["count"], 149);
    let notes = doc["notes"].to_string();
    assert!(notes.contains("0x3400000 inferred"), "{notes}");
    // Without symbols the findings are as they were.
    let doc = json_of(&["diagnose", "--json", &data(CASE)], &[0, 1]);
    assert!(!doc.to_string().contains("guest_rip"));
}

#[test]
fn a_port_finding_names_the_guest_code_of_its_io_exits() {
    // acpi_pm_read+0xb is the `in` of the PM-timer read (checked in the kernel's vmlinux).
    let doc = json_of(
        &[
            "diagnose",
            "--json",
            "--guest",
            "linux",
            "--guest-symbols",
            &data(MAP),
            &data("lab-cases/linux-clocksource-acpi-pm/perf.data"),
        ],
        &[0, 1],
    );
    let main = doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["id"] == "timer.acpi-pm-port")
        .unwrap();
    let line = main["evidence"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["table"] == "guest_rip")
        .unwrap();
    assert_eq!(line["key"], "acpi_pm_read+0xb");
    assert_eq!(line["count_share"], 1.0);
    assert!(line["note"].as_str().unwrap().contains("all the io exits"));
}

#[test]
fn symbols_of_another_kernel_are_said_not_to_fit() {
    let out = String::from_utf8(stdout_of(
        &[
            "diagnose",
            "--guest-symbols",
            &data(MAP),
            &data("exit-reports/24-perf-script-kvm-events-nested-triple-fault.txt"),
        ],
        &[0, 1],
    ))
    .unwrap();
    assert!(out.contains("the map is not the guest's kernel"), "{out}");
}

#[test]
fn perf_script_text_of_the_same_recording_names_the_same_functions() {
    if !require(&[Need::Perf]) {
        return;
    }
    let tmp = common::TempDir::new("guest-code-script");
    let script = tmp.0.join("perf-script.txt");
    let out = Command::new("perf")
        .args(["script", "-i", &data(CASE)])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    std::fs::write(&script, out.stdout).unwrap();
    let out = text(&[
        "report",
        script.to_str().unwrap(),
        "--by",
        "rip",
        "--guest-symbols",
        &data(MAP),
    ]);
    assert!(
        out.contains("100% of the hlt exits come from native_safe_halt+0xa"),
        "{out}"
    );
    assert!(out.contains("0x3400000 inferred"), "{out}");
}

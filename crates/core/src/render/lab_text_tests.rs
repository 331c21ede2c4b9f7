//! Tests of the text form of `exitcost` and `lab` (`render::lab_text`).

use super::*;

/// The recording `virtlens lab --json` made on a development machine (PVM backend).
const RECORDING: &str = include_str!("../../../../testdata/lab/pvm-dev-machine.json");

#[test]
fn the_bundled_recording_renders_as_a_recording_with_its_caveat() {
    let r: LabReport = serde_json::from_str(RECORDING).unwrap_or_else(|e| panic!("{e}"));
    let mut text = recording_banner(
        &r,
        "cannot measure here (/dev/kvm: missing)",
        &Style::plain(),
    );
    text.push_str(&lab(&r, &Style::plain()));
    assert!(text.contains("RECORDED, not measured here"), "{text}");
    // A newcomer reads what an exit is and the answer before any table of numbers.
    let at = |needle: &str| {
        text.find(needle)
            .unwrap_or_else(|| panic!("{needle}: {text}"))
    };
    assert!(at("A VM exit is the CPU leaving the guest") < at("The answer"));
    assert!(at("The answer") < at("Details"));
    assert!(at("Details") < at("Exit costs"));
    // On a backend that emulates ring 0, the answer is measured where guest code is native:
    // there the PM timer is thousands of times a TSC-page read, not 0.9 of it.
    assert!(text.contains("The answer (64-bit ring 3"), "{text}");
    let clock = r
        .headline
        .scenarios
        .iter()
        .find(|s| s.name == "clock_read" && s.mode == Mode::User64)
        .and_then(|s| s.trap_over_fixed)
        .unwrap_or_else(|| panic!("no ring-3 clock ratio: {text}"));
    assert!(clock > 100.0, "{clock}");
    assert!(
        text.contains(&format!("{}× slower", times(clock))),
        "{text}"
    );
    // No negative cost anywhere: a figure below the noise reads `< noise`.
    assert!(
        !text
            .split_whitespace()
            .any(|w| w.starts_with('-') && w[1..].starts_with(|c: char| c.is_ascii_digit())),
        "{text}"
    );
    assert!(text.contains(&r.recorded.date));
    assert!(text.contains("backend pvm"));
    assert!(text.contains("not hardware exit costs"));
    assert!(text.contains("a port exit to the VMM costs"));
    assert!(text.contains("reading the clock through the ACPI PM timer costs"));
    for s in &r.scenarios {
        assert!(text.contains(&s.name), "{}", s.name);
    }
    assert!(!r.backend.hardware);
}

#[test]
fn exitcost_text_shows_status_reason_and_spread_kind() {
    let r: LabReport = serde_json::from_str(RECORDING).unwrap_or_else(|e| panic!("{e}"));
    let report = ExitCostReport {
        schema: crate::measure::EXITCOST_SCHEMA.into(),
        measured: false,
        notes: vec!["capped".into()],
        backend: r.backend.clone(),
        cpu: r.cpu.clone(),
        kernel: r.kernel.clone(),
        recorded: r.recorded.clone(),
        tests: r.tests.clone(),
    };
    let mut report = report;
    crate::measure::resolution::label_exitcost(&mut report);
    let text = exitcost(&report, &Style::plain());
    assert!(text.contains("note: capped"), "{text}");
    let ram_store = text
        .lines()
        .filter(|l| l.trim_start().starts_with("ram_store"))
        .find(|l| l.contains("unresolved"))
        .unwrap_or_else(|| panic!("the recording's negative ram_store is unresolved: {text}"));
    assert!(ram_store.contains("negative"), "{ram_store}");
    assert!(
        !text
            .lines()
            .any(|l| l.contains(" ok ") && l.contains("-0.0")),
        "no negative cost is ok: {text}"
    );
    assert!(text.contains("interquartile range / median"));
    assert!(text.contains("unsupported"));
    assert!(text.contains("64-bit long mode, ring 3"));
    assert_eq!(times(2761.3), "2761");
    assert_eq!(times(0.91), "0.9");
}

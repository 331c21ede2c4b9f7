//! The results of `virtlens exitcost` and `virtlens lab`, as they serialise to JSON
//! (`virtlens.exitcost/2`, `virtlens.lab/2`; /2 added `measured`, `notes`, the `unresolved`
//! status and `resolution_ns`; `io_path`, docs/iopath.md, is an optional field): the backend label, one
//! [`TestResult`] per exit type and mode, and for the lab one [`ScenarioResult`] per trap
//! scenario and the IO-path table.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::headline::Headline;
use super::mode::Mode;
use crate::facts::{Backend, ExitTiming};
use crate::profile::Profile;

/// The schema of `virtlens exitcost --json`.
pub const EXITCOST_SCHEMA: &str = "virtlens.exitcost/2";
/// The schema of `virtlens lab --json`.
pub const LAB_SCHEMA: &str = "virtlens.lab/2";

/// Which KVM backend the numbers come from and what they therefore mean.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BackendLabel {
    /// `vmx`, `svm`, `pvm`, or another module's name.
    pub name: String,
    /// What numbers measured on this backend mean, in one sentence.
    pub caveat: String,
    /// Whether these are costs of hardware VM exits (VMX/SVM and ring-0 code not emulated).
    pub hardware: bool,
    /// Measured: guest ring-0 instructions are run by KVM's instruction emulator.
    pub ring0_emulated: Option<bool>,
    /// `insn_emulation` per guest instruction of a ring-0 nop loop (≈ 1 when emulated).
    pub ring0_emulations_per_insn: Option<f64>,
    /// `insn_emulation` per guest instruction of a ring-3 nop loop (≈ 0 when native).
    pub ring3_emulations_per_insn: Option<f64>,
    /// This host is itself a guest (CPUID hypervisor bit).
    pub nested: Option<bool>,
    /// What the times are the times of: `hardware`, `nested`, `emulated-cpu` (a CPU that
    /// software emulates, e.g. QEMU TCG), `pvm`, `unknown` (absent in recordings made before
    /// it was added).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timing: Option<String>,
    /// The software that emulates the host's CPU, when it is emulated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_emulator: Option<String>,
}

impl BackendLabel {
    /// The label of `backend` on a CPU that `emulator` emulates (if any), with the measured
    /// emulation ratios (when measured). The numbers count as hardware exit costs only on
    /// VMX/SVM on bare metal, on a real CPU, when ring-0 code was not found emulated.
    pub fn new(
        backend: &Backend,
        emulator: Option<&str>,
        ring0_ratio: Option<f64>,
        ring3_ratio: Option<f64>,
        nested: Option<bool>,
    ) -> Self {
        let ring0_emulated = ring0_ratio.map(|r| r > 0.5);
        let timing = ExitTiming::of(Some(backend), emulator, nested);
        let mut caveat = timing.caveat();
        if ring0_emulated == Some(true) && backend.is_hardware() {
            caveat = "guest ring-0 code was measured to be emulated instruction by instruction: \
                      these are not hardware exit costs"
                .to_string();
        }
        Self {
            name: backend.to_string(),
            caveat,
            hardware: timing.is_hardware() && ring0_emulated != Some(true),
            timing: Some(timing.name().to_string()),
            cpu_emulator: emulator.map(str::to_string),
            ring0_emulated,
            ring0_emulations_per_insn: ring0_ratio,
            ring3_emulations_per_insn: ring3_ratio,
            nested,
        }
    }

    /// Whether guest code of `mode` is emulated instruction by instruction on this backend
    /// (`None` when that was not measured).
    pub fn emulates(&self, mode: Mode) -> Option<bool> {
        if mode.is_user() {
            self.ring3_emulations_per_insn.map(|r| r > 0.5)
        } else {
            self.ring0_emulated
        }
    }
}

/// Whether a test could be measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Ok,
    /// Measured, but the figure is below what the clock resolves per operation, or negative
    /// once the nop loop is subtracted: the operation costs less than the measurement can
    /// show (the reason says which). Never a cost to read as one.
    Unresolved,
    /// Not possible here (the reason says why: a missing capability, an instruction that
    /// faults in this mode, a guest that hangs in the kernel on this backend).
    Unsupported,
    /// It should have worked and did not (the reason holds the error).
    Failed,
}

impl Status {
    /// The JSON spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Unresolved => "unresolved",
            Status::Unsupported => "unsupported",
            Status::Failed => "failed",
        }
    }
}

/// One exit type measured in one mode. Times are ns per guest operation over `runs`
/// interleaved runs of `ops_per_run` operations; `median_ns`, `min_ns`, `max_ns` have the
/// nop loop of the same round subtracted (the exit's own cost), except for the `nop_loop`
/// baseline itself (`baseline: true`), which is the loop's gross cost per iteration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TestResult {
    pub name: String,
    pub mode: Mode,
    /// The guest instruction(s) of one operation and who handles them.
    pub what: String,
    pub status: Status,
    pub reason: Option<String>,
    pub median_ns: Option<f64>,
    pub min_ns: Option<f64>,
    pub max_ns: Option<f64>,
    /// The median before the nop loop was subtracted.
    pub gross_median_ns: Option<f64>,
    /// Run-to-run spread: interquartile range over the median of the gross per-op times, %.
    pub spread_pct: Option<f64>,
    /// KVM binary statistics (vCPU, and VM-level ones as `vm.NAME`) that moved, per
    /// operation; cumulative counters only. They include each run's final exit to the VMM
    /// (1 / `ops_per_run` of `exits`).
    pub stats_per_op: BTreeMap<String, f64>,
    /// Returns to the VMM (userspace) per operation, as the lab's own exit handling counted
    /// them (the run's final exit excluded).
    pub userspace_exits_per_op: Option<f64>,
    pub ops_per_run: u64,
    pub runs: usize,
    /// The smallest cost per operation the clock can show at `ops_per_run` (see
    /// `measure::resolution`); a median below it is `unresolved`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolution_ns: Option<f64>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub baseline: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

impl TestResult {
    /// A result without measurements (`unsupported` or `failed`).
    pub fn not_measured(
        name: &str,
        mode: Mode,
        what: &str,
        status: Status,
        reason: String,
    ) -> Self {
        Self {
            name: name.to_string(),
            mode,
            what: what.to_string(),
            status,
            reason: Some(reason),
            median_ns: None,
            min_ns: None,
            max_ns: None,
            gross_median_ns: None,
            spread_pct: None,
            stats_per_op: BTreeMap::new(),
            userspace_exits_per_op: None,
            ops_per_run: 0,
            runs: 0,
            resolution_ns: None,
            baseline: false,
            note: None,
        }
    }
}

/// When, where and by what a result was measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Recording {
    /// `YYYY-MM-DD HH:MM UTC`.
    pub date: String,
    pub host: Option<String>,
    pub virtlens: String,
    /// Wall time of the whole command, seconds.
    pub wall_s: f64,
    /// Interleaved rounds (runs per test).
    pub rounds: usize,
    /// `--quick` was given.
    #[serde(default)]
    pub quick: bool,
    /// The smallest step of the clock the runs were timed with, ns (measured).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clock_resolution_ns: Option<f64>,
    /// The time budget of the run, seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget_s: Option<f64>,
}

/// `virtlens exitcost --json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExitCostReport {
    pub schema: String,
    /// Whether these numbers were measured by this run on this host (`false`: a recording).
    #[serde(default)]
    pub measured: bool,
    pub backend: BackendLabel,
    pub cpu: Option<String>,
    pub kernel: Option<String>,
    pub recorded: Recording,
    pub tests: Vec<TestResult>,
    /// What the run had to change to stay within its budget, and the like.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// One variant (trap, fixed, or another) of a scenario.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct VariantResult {
    pub name: String,
    /// What the guest does per logical operation.
    pub what: String,
    pub status: Status,
    pub reason: Option<String>,
    /// ns per logical operation, the nop loop subtracted (median over runs).
    pub ns_per_op: Option<f64>,
    pub min_ns: Option<f64>,
    pub max_ns: Option<f64>,
    pub gross_ns_per_op: Option<f64>,
    pub spread_pct: Option<f64>,
    /// The smallest cost per logical operation the clock can show (see `TestResult`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolution_ns: Option<f64>,
    /// KVM's `exits` statistic per logical operation (on an emulating backend it also counts
    /// emulation batches, about one per thousand emulated instructions).
    pub exits_per_op: Option<f64>,
    /// Returns to the VMM per logical operation, as counted by the lab's exit handling.
    pub userspace_exits_per_op: Option<f64>,
    pub stats_per_op: BTreeMap<String, f64>,
    /// The exit profile of one run: what the guest hit (ports, MMIO, MSRs, returns to the VMM)
    /// and the KVM statistics that moved, for `diagnose`.
    pub profile: Option<Profile>,
    /// The ids `diagnose` raises (low and above) on `profile` (see `measure::diagnosed`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub diagnosed_as: Option<Vec<String>>,
}

/// A pair of guests doing the same logical work, one hitting a known trap, one like the
/// fixed guest (plus, where useful, variants in between).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ScenarioResult {
    pub name: String,
    /// The trap, in words.
    pub title: String,
    /// One logical operation, in words (e.g. "one clock read").
    pub op: String,
    pub mode: Mode,
    pub trap: VariantResult,
    pub fixed: VariantResult,
    /// Other variants (e.g. the clock read through an MSR handled in the kernel).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub also: Vec<VariantResult>,
    /// trap ns_per_op / fixed ns_per_op, when both were measured, resolved and positive.
    pub trap_over_fixed: Option<f64>,
}

/// `virtlens lab --json`: the exit costs plus the scenarios and the headline.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LabReport {
    pub schema: String,
    /// Whether these numbers were measured by this run on this host (`false`: the bundled
    /// recording, shown offline).
    #[serde(default)]
    pub measured: bool,
    pub backend: BackendLabel,
    pub cpu: Option<String>,
    pub kernel: Option<String>,
    pub recorded: Recording,
    pub tests: Vec<TestResult>,
    pub scenarios: Vec<ScenarioResult>,
    /// The IO-path scenario: delivery modes × queue depths (absent from recordings made
    /// before it, and from lab runs that skip it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub io_path: Option<super::io_path::IoPathReport>,
    pub headline: Headline,
    /// What the run had to change to stay within its budget, and the like.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_never_call_emulated_numbers_hardware() {
        let pvm = BackendLabel::new(&Backend::Pvm, None, Some(1.0), Some(0.0), Some(true));
        assert!(!pvm.hardware);
        assert_eq!(pvm.ring0_emulated, Some(true));
        assert!(pvm.caveat.contains("not hardware exit costs"));
        let vmx = BackendLabel::new(&Backend::Vmx, None, Some(0.0), Some(0.0), None);
        assert!(vmx.hardware);
        let odd = BackendLabel::new(&Backend::Vmx, None, Some(0.99), None, None);
        assert!(!odd.hardware && odd.caveat.contains("emulated"));
        // SVM that QEMU's TCG emulates: the exits are real SVM exits, their costs are not.
        let tcg = BackendLabel::new(&Backend::Svm, Some("QEMU TCG"), Some(0.0), None, Some(true));
        assert!(!tcg.hardware);
        assert_eq!(tcg.timing.as_deref(), Some("emulated-cpu"));
        assert!(tcg.caveat.contains("QEMU TCG") && tcg.caveat.contains("never hardware"));
        let nested = BackendLabel::new(&Backend::Vmx, None, Some(0.0), None, Some(true));
        assert!(!nested.hardware && nested.caveat.contains("outer hypervisor"));
    }

    #[test]
    fn status_spelling() {
        assert_eq!(
            serde_json::to_string(&Status::Unsupported).unwrap_or_default(),
            "\"unsupported\""
        );
        assert_eq!(Status::Failed.as_str(), "failed");
    }
}

//! The first screen of `virtlens lab`, for someone who has never heard of VM exits: what an
//! exit is and why it costs, then the answer — each trap against its fix in times slower and
//! in microseconds, in the mode whose guest code ran natively here — with the backend's caveat
//! in one line. Every measurement behind it follows under "Details".

use super::Style;
use super::format::duration;
use super::lab_text::{grid, ns, times};
use crate::measure::{LabReport, Lesson, lesson};

/// What an exit is, in the words of someone explaining it at a whiteboard.
const WHAT_AN_EXIT_IS: &str = concat!(
    "  A VM exit is the CPU leaving the guest so the hypervisor can do something the guest may not\n",
    "  do itself: answer a port or device access, a model-specific register (MSR), a halt, a timer.\n",
    "  The guest stands still until the exit is handled: in the host kernel (KVM) it takes about a\n",
    "  microsecond on hardware, and several times that when the device is emulated by the VMM\n",
    "  process (QEMU), which the exit has to wake and wait for. A guest that takes such an exit\n",
    "  thousands of times a second runs measurably slower, and most such traps have a known fix.\n",
    "  This lab runs tiny guests (micro-VMs) on /dev/kvm that do one trap, or its fix, in a loop.\n",
);

/// The title, the paragraph on exits and the answer; nothing when the run has no scenario.
pub(crate) fn answer(out: &mut String, r: &LabReport, style: &Style) {
    let title = if r.measured {
        "virtlens lab: what a VM exit costs on this host"
    } else {
        "virtlens lab: what a VM exit costs (a recording of another host)"
    };
    out.push_str(&Style::paint(style.title, title));
    out.push('\n');
    out.push_str(WHAT_AN_EXIT_IS);
    out.push('\n');
    let Some(l) = lesson(&r.headline, &r.backend) else {
        return;
    };
    let where_ = match l.native {
        Some(true) => "guest code ran natively",
        Some(false) => "guest code was emulated, as in every mode on this backend",
        None => "not measured whether guest code ran natively",
    };
    out.push_str(&Style::paint(
        style.title,
        &format!("The answer ({}: {where_})", l.mode.short()),
    ));
    out.push('\n');
    traps(out, r, &l, style);
    if let Some(p) = l.ports {
        out.push_str(&format!(
            "  A port exit answered by the VMM costs {}; caught in the kernel (ioeventfd), {}.\n",
            duration(p.vmm_ns),
            duration(p.kernel_ns)
        ));
    }
    let paint = if r.backend.hardware {
        style.good
    } else {
        style.bad
    };
    out.push_str(&Style::paint(
        paint,
        &format!("  Caveat: {}.", r.backend.caveat),
    ));
    out.push('\n');
    out.push_str(
        "  `virtlens diagnose` finds these traps in a real VM's exits; every measurement follows.\n\n",
    );
}

/// One row per scenario of the lesson's mode: the trap, the fix, what each costs, how much
/// slower the trap is.
fn traps(out: &mut String, r: &LabReport, l: &Lesson<'_>, style: &Style) {
    let rows: Vec<Vec<String>> = l
        .scenarios
        .iter()
        .map(|s| {
            let names = r
                .scenarios
                .iter()
                .find(|full| full.name == s.name && full.mode == s.mode)
                .map(|full| format!("{} → {}", full.trap.name, full.fixed.name))
                .unwrap_or_default();
            let slower = s.trap_over_fixed.map_or_else(
                || "more than the clock resolves".to_string(),
                |x| format!("{}× slower", times(x)),
            );
            vec![
                s.name.clone(),
                names,
                s.op.trim_start_matches("one ").to_string(),
                ns(Some(s.trap_ns)),
                fix_cost(s.fixed_ns, s.trap_over_fixed.is_some()),
                slower,
            ]
        })
        .collect();
    let h = [
        "scenario",
        "trap → fix",
        "per",
        "trap",
        "fix",
        "the trap is",
    ];
    let mut table = String::new();
    grid(&h, rows, 3, &mut table, style);
    for line in table.lines() {
        out.push(' ');
        out.push_str(line);
        out.push('\n');
    }
}

/// The fix's cost, `< noise` when the clock could not resolve it.
fn fix_cost(v: f64, resolved: bool) -> String {
    if resolved && v > 0.0 {
        ns(Some(v))
    } else {
        "< noise".to_string()
    }
}

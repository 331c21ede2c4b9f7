//! The lab, diagnosed: every scenario variant's exit profile goes through [`crate::diagnose`]
//! (as a Windows guest, the setting the traps come from), and the ids of the problems it raises
//! (low and above; context findings such as host interrupts are the normal floor, not problems)
//! are kept with the variant, so `virtlens lab` shows that each trap is recognised by the rule
//! for it and that its fix is not.

use super::{LabReport, VariantResult};
use crate::config::GuestFamily;
use crate::decode::Decoder;
use crate::diagnose::{self, Options, Severity};

/// Fills `diagnosed_as` of every variant that carries a profile.
pub fn diagnose_scenarios(report: &mut LabReport) {
    let options = Options {
        guest: Some(GuestFamily::Windows),
        ..Options::default()
    };
    let decoder = Decoder::builtin();
    for s in &mut report.scenarios {
        let variants = [&mut s.trap, &mut s.fixed]
            .into_iter()
            .chain(s.also.iter_mut());
        for v in variants {
            v.diagnosed_as = ids(v, &decoder, &options);
        }
    }
}

fn ids(v: &VariantResult, decoder: &Decoder, options: &Options) -> Option<Vec<String>> {
    let profile = v.profile.as_ref()?;
    let d = diagnose::diagnose(std::slice::from_ref(profile), None, decoder, options);
    Some(
        d.findings
            .iter()
            .filter(|f| f.severity >= Severity::Low && !f.is_context())
            .map(|f| f.id.to_string())
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The recording `virtlens lab --json` made on a development machine carries each
    /// variant's profile: its traps are recognised by their rules, their fixes are not.
    #[test]
    fn the_recorded_traps_are_named_by_their_rules() {
        let text = include_str!("../../../../testdata/lab/pvm-dev-machine.json");
        let mut r: LabReport = serde_json::from_str(text).unwrap_or_else(|e| panic!("{e}"));
        diagnose_scenarios(&mut r);
        let rule = |name: &str| match name {
            "clock_read" => "timer.acpi-pm-port",
            "timer_program" => "timer.hpet-mmio",
            "apic_eoi" => "apic.apic-access-mmio",
            "serial_console" => "io.serial-pio-storm",
            "virtio_notify" => "io.virtio-legacy-pio-notify",
            other => panic!("a scenario without an expected rule: {other}"),
        };
        assert!(!r.scenarios.is_empty());
        for s in &r.scenarios {
            let want = rule(&s.name);
            let trap = s.trap.diagnosed_as.clone().unwrap_or_default();
            let fixed = s.fixed.diagnosed_as.clone().unwrap_or_default();
            assert!(
                trap.iter().any(|i| i == want),
                "{} ({:?}): trap {trap:?}",
                s.name,
                s.mode
            );
            assert!(
                !fixed.iter().any(|i| i == want),
                "{} ({:?}): fixed {fixed:?}",
                s.name,
                s.mode
            );
        }
    }
}

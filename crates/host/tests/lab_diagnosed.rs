//! The lab, diagnosed: each trap scenario's exit profile, recorded from a real micro-VM, is
//! recognised by the diagnose rule for that trap, and its fixed variant raises nothing of the
//! kind. Needs /dev/kvm (`virtlens_testkit::require`).

use virtlens_core::config::GuestFamily;
use virtlens_core::decode::Decoder;
use virtlens_core::diagnose::{self, Options};
use virtlens_core::measure::Mode;
use virtlens_host::lab::variant_profile;
use virtlens_testkit::{Need, require};

fn ids(scenario: &str, variant: &str) -> Vec<String> {
    let profile = variant_profile(scenario, variant, Mode::Long64, 2000)
        .unwrap_or_else(|e| panic!("{scenario}/{variant}: {e}"));
    let options = Options {
        guest: Some(GuestFamily::Windows),
        ..Options::default()
    };
    let d = diagnose::diagnose(&[profile], None, &Decoder::builtin(), &options);
    d.findings
        .iter()
        .filter(|f| f.severity >= diagnose::Severity::Low)
        .map(|f| f.id.to_string())
        .collect()
}

#[test]
fn each_trap_is_named_by_its_rule_and_its_fix_is_not() {
    if !require(&[Need::Kvm]) {
        return;
    }
    // Alone: the rules weigh the variants' exit rates, which a busy machine lowers.
    let _alone = virtlens_testkit::exclusive();
    let cases = [
        (
            "clock_read",
            "acpi_pm_timer",
            "tsc_page",
            "timer.acpi-pm-port",
        ),
        (
            "timer_program",
            "hpet_mmio",
            "lapic_timer",
            "timer.hpet-mmio",
        ),
        (
            "apic_eoi",
            "apic_page_vmm",
            "apic_in_kernel",
            "apic.apic-access-mmio",
        ),
        (
            "serial_console",
            "uart_lsr_poll",
            "buffered_write",
            "io.serial-pio-storm",
        ),
        (
            "virtio_notify",
            "notify_pio_vmm",
            "notify_ioeventfd",
            "io.virtio-legacy-pio-notify",
        ),
    ];
    let mut report = Vec::new();
    for (scenario, trap, fixed, rule) in cases {
        let t = ids(scenario, trap);
        let f = ids(scenario, fixed);
        println!("{scenario}: trap {t:?}, fixed {f:?}");
        report.push((
            scenario,
            rule,
            t.iter().any(|i| i == rule),
            f.iter().any(|i| i == rule),
        ));
    }
    for (scenario, rule, in_trap, in_fixed) in &report {
        assert!(
            in_trap,
            "{scenario}: the trap variant is not recognised as {rule}: {report:?}"
        );
        assert!(
            !in_fixed,
            "{scenario}: the fixed variant still raises {rule}"
        );
    }
}

//! Decoding tables shared by every source, rule and renderer: VM-exit reasons (VMX, SVM, PVM, arm64, RISC-V),
//! MSR names, IO ports and MMIO ranges of QEMU's PC machines, and QEMU `info mtree` maps that
//! override the built-in names.
//!
//! Nothing here parses a capture format; sources hand raw codes and names in, and get canonical
//! names, classes and descriptions out. Unknown codes are never an error: they stay numeric.

pub(crate) mod apicv_inhibit;
#[cfg(test)]
mod apicv_inhibit_fuzz;
pub(crate) mod exit_reason;
pub(crate) mod ioport;
pub(crate) mod kvm_stats;
pub(crate) mod mmio;
pub(crate) mod msr;
pub(crate) mod mtree;
pub(crate) mod ring_buffer;
pub(crate) mod trace_format;

mod exit_arm64;
mod exit_names;
mod exit_pvm;
mod exit_riscv;
mod exit_svm;
mod exit_vmx;
mod msr_hyperv;
mod mtree_flat;
mod mtree_parse;

pub use exit_arm64::arm64_code;
pub use exit_reason::{ExitClass, ExitReasonInfo, Isa};
pub use mtree::AddressMap;

// What other crates use of this area (docs/development.md, "Public API").
pub use exit_reason::display_key as display_exit_key;
pub use kvm_stats::{Layout as StatsLayout, StatType, StatUnit, StatsError};
pub use ring_buffer::build::PageBuilder;
pub use ring_buffer::{Missed, PageLayout};
pub use trace_format::{EventFormat, parse as parse_event_format};

/// Names ports, MMIO addresses and MSRs: the built-in tables, overridden by a QEMU
/// `info mtree` map when one was given (`--mtree FILE`).
#[derive(Debug, Default, Clone)]
pub struct Decoder {
    map: Option<AddressMap>,
}

impl Decoder {
    /// A decoder with only the built-in tables.
    pub fn builtin() -> Self {
        Self { map: None }
    }

    /// A decoder whose names for ports and addresses come first from `map`.
    pub fn with_map(map: AddressMap) -> Self {
        Self { map: Some(map) }
    }

    /// The name of an IO port: the mtree map's region first, then the built-in table; both
    /// when both know it (`acpi-tmr (acpi-pm-timer)`), so register detail is not lost.
    pub fn port(&self, port: u64) -> Option<String> {
        let builtin = u16::try_from(port).ok().and_then(ioport::port_name);
        combine(self.map.as_ref().and_then(|m| m.name_port(port)), builtin)
    }

    /// The name of a guest-physical MMIO address: the mtree map's region first, then the
    /// built-in ranges (LAPIC by register, IOAPIC, HPET, …), both when both know it.
    pub fn mmio(&self, gpa: u64) -> Option<String> {
        combine(
            self.map.as_ref().and_then(|m| m.name_addr(gpa)),
            mmio::mmio_name(gpa),
        )
    }

    /// The name of an MSR index.
    pub fn msr(&self, index: u64) -> Option<String> {
        u32::try_from(index).ok().and_then(msr::msr_name)
    }
}

/// `map: builtin` when both name a thing differently, else whichever does.
fn combine(map: Option<&str>, builtin: Option<String>) -> Option<String> {
    match (map, builtin) {
        (Some(m), Some(b)) if m != b => Some(format!("{m}: {b}")),
        (Some(m), _) => Some(m.to_string()),
        (None, b) => b,
    }
}

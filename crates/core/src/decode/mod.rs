//! Decoding tables shared by every source, rule and renderer: VM-exit reasons (VMX, SVM, PVM),
//! MSR names, IO ports and MMIO ranges of QEMU's PC machines, and QEMU `info mtree` maps that
//! override the built-in names.
//!
//! Nothing here parses a capture format; sources hand raw codes and names in, and get canonical
//! names, classes and descriptions out. Unknown codes are never an error: they stay numeric.

pub mod exit_reason;
pub mod ioport;
pub mod mmio;
pub mod msr;
pub mod mtree;

mod exit_names;
mod exit_pvm;
mod exit_svm;
mod exit_vmx;
mod msr_hyperv;
mod mtree_flat;
mod mtree_parse;

pub use exit_reason::{ExitClass, ExitReasonInfo, Isa};
pub use mtree::AddressMap;

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

    /// The name of an IO port: the mtree map's region first, then the built-in table.
    pub fn port(&self, port: u64) -> Option<String> {
        if let Some(name) = self.map.as_ref().and_then(|m| m.name_port(port)) {
            return Some(name.to_string());
        }
        u16::try_from(port).ok().and_then(ioport::port_name)
    }

    /// The name of a guest-physical MMIO address: the mtree map's region first, then the
    /// built-in ranges (LAPIC by register, IOAPIC, HPET, …).
    pub fn mmio(&self, gpa: u64) -> Option<String> {
        if let Some(name) = self.map.as_ref().and_then(|m| m.name_addr(gpa)) {
            return Some(name.to_string());
        }
        mmio::mmio_name(gpa)
    }

    /// The name of an MSR index.
    pub fn msr(&self, index: u64) -> Option<String> {
        u32::try_from(index).ok().and_then(msr::msr_name)
    }
}

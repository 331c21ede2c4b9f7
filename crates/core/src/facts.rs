//! What is known about the host a profile or measurement came from: CPU vendor and model,
//! kernel, the KVM backend (VMX, SVM, PVM, …), APICv/AVIC, clocksource. Filled by
//! `virtlens-host` on a live host or from `--host-*` flags; used to label results (numbers
//! from an emulating backend are never hardware exit costs) and by rules and lint.

use std::fmt;

use serde::{Deserialize, Serialize};

/// The host CPU's vendor.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Vendor {
    Intel,
    Amd,
    Hygon,
    /// Another vendor, by its CPUID vendor string.
    Other(String),
}

impl Vendor {
    /// The vendor of a CPUID vendor string (`GenuineIntel`, `AuthenticAMD`, `HygonGenuine`).
    pub fn from_cpuid(id: &str) -> Vendor {
        match id.trim() {
            "GenuineIntel" => Vendor::Intel,
            "AuthenticAMD" => Vendor::Amd,
            "HygonGenuine" => Vendor::Hygon,
            other => Vendor::Other(other.to_string()),
        }
    }
}

/// Which KVM implementation runs guests on the host.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Backend {
    /// kvm_intel: hardware VMX.
    Vmx,
    /// kvm_amd: hardware SVM.
    Svm,
    /// kvm_pvm: paravirtualised, guest ring-0 code run by KVM's instruction emulator.
    Pvm,
    /// Another backend module, by name.
    Other(String),
    /// No KVM backend is loaded.
    None,
}

impl Backend {
    /// True when exit costs measured on this backend are costs of real VM exits.
    pub fn is_hardware(&self) -> bool {
        matches!(self, Backend::Vmx | Backend::Svm)
    }

    /// What numbers measured here mean, in one sentence, for labels.
    pub fn caveat(&self) -> &'static str {
        match self {
            Backend::Vmx | Backend::Svm => "hardware virtualization: exit costs are real VM exits",
            Backend::Pvm => {
                "PVM backend: guest ring-0 code is emulated instruction by instruction; \
                 these are not hardware exit costs"
            }
            Backend::Other(_) => {
                "unknown KVM backend: compare with a VMX/SVM host before concluding"
            }
            Backend::None => "no KVM backend loaded",
        }
    }
}

impl fmt::Display for Backend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Backend::Vmx => f.write_str("vmx"),
            Backend::Svm => f.write_str("svm"),
            Backend::Pvm => f.write_str("pvm"),
            Backend::Other(name) => f.write_str(name),
            Backend::None => f.write_str("none"),
        }
    }
}

/// Facts about one host; every field is `None` when not known.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostFacts {
    pub vendor: Option<Vendor>,
    pub cpu_model: Option<String>,
    pub kernel: Option<String>,
    pub backend: Option<Backend>,
    /// The CPU advertises VMX or SVM to this kernel.
    pub hardware_virtualization: Option<bool>,
    /// This host is itself a guest (CPUID hypervisor bit).
    pub nested: Option<bool>,
    /// kvm_intel `enable_apicv`.
    pub apicv: Option<bool>,
    /// kvm_amd `avic`.
    pub avic: Option<bool>,
    /// The host's current clocksource (`tsc`, `kvm-clock`, `hpet`, …).
    pub clocksource: Option<String>,
    /// Whether `/dev/kvm` exists.
    pub kvm_device: Option<bool>,
    /// Measured: guest ring-0 instructions are emulated (insn_emulation ≈ instructions run).
    pub ring0_emulated: Option<bool>,
}

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
    /// KVM on arm64 (built in): the guest runs at EL1 and traps to EL2.
    Arm64,
    /// Another backend module, by name.
    Other(String),
    /// No KVM backend is loaded.
    None,
}

impl Backend {
    /// The backend its [`Display`](fmt::Display) name stands for (`vmx`, `svm`, `pvm`, `none`,
    /// another module's name), as recordings state it.
    pub fn named(name: &str) -> Backend {
        match name {
            "vmx" => Backend::Vmx,
            "svm" => Backend::Svm,
            "pvm" => Backend::Pvm,
            "arm64" => Backend::Arm64,
            "none" => Backend::None,
            other => Backend::Other(other.to_string()),
        }
    }

    /// True when exit costs measured on this backend are costs of real VM exits.
    pub fn is_hardware(&self) -> bool {
        matches!(self, Backend::Vmx | Backend::Svm | Backend::Arm64)
    }

    /// What numbers measured here mean, in one sentence, for labels.
    pub fn caveat(&self) -> &'static str {
        match self {
            Backend::Vmx | Backend::Svm => "hardware virtualization: exit costs are real VM exits",
            Backend::Arm64 => "hardware virtualization (arm64 EL2): exit costs are real traps",
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
            Backend::Arm64 => f.write_str("arm64"),
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
    /// The software that emulates this host's CPU (`QEMU TCG`), when it is emulated: its VMX or
    /// SVM is the emulator's, and so is every exit's cost.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_emulator: Option<String>,
}

impl HostFacts {
    /// What the exit costs measured on this host are.
    pub fn exit_timing(&self) -> ExitTiming {
        ExitTiming::of(
            self.backend.as_ref(),
            self.cpu_emulator.as_deref(),
            self.nested,
        )
    }
}

/// The software that emulates a CPU, from what the CPU says of itself: QEMU's TCG names its
/// `max` and `base` models "QEMU TCG CPU" and signs the CPUID hypervisor leaf "TCGTCGTCGTCG".
pub fn cpu_emulator(
    model_name: Option<&str>,
    hypervisor_signature: Option<&str>,
) -> Option<String> {
    let tcg = model_name.is_some_and(|m| m.contains("QEMU TCG CPU"))
        || hypervisor_signature.is_some_and(|s| s.trim_end_matches('\0') == "TCGTCGTCGTCG");
    tcg.then(|| "QEMU TCG".to_string())
}

/// The backend as figures are labelled with it: `svm`, or `svm on a CPU that QEMU TCG emulates
/// (…)` when software emulated the CPU.
pub(crate) fn backend_label(backend: Option<&str>, emulator: Option<&str>) -> Option<String> {
    let on = |e: &str| {
        format!("a CPU that {e} emulates (times are the emulator's, not hardware exit costs)")
    };
    match (backend, emulator) {
        (Some(b), Some(e)) => Some(format!("{b} on {}", on(e))),
        (None, Some(e)) => Some(on(e)),
        (b, None) => b.map(str::to_string),
    }
}

/// What the time of an exit measured on a host is the time of.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ExitTiming {
    /// VMX/SVM on bare metal: real VM exits.
    Hardware,
    /// VMX/SVM on a host that is itself a guest: every exit of its guests is first taken by
    /// the outer hypervisor, so it costs more than on bare metal.
    Nested,
    /// VMX/SVM of a CPU that software emulates (QEMU TCG): counts and reasons are real, times
    /// are the emulator's, about a hundred times a hardware exit.
    EmulatedCpu(String),
    /// KVM's PVM backend: guest ring-0 code is emulated instruction by instruction.
    Pvm,
    /// No KVM backend, or one virtlens does not know.
    Unknown,
}

impl ExitTiming {
    /// The timing of a host with `backend`, whose CPU `emulator` emulates (if any), `nested` in
    /// another hypervisor (if known).
    pub fn of(backend: Option<&Backend>, emulator: Option<&str>, nested: Option<bool>) -> Self {
        match (backend, emulator) {
            (Some(Backend::Pvm), _) => ExitTiming::Pvm,
            (Some(b), Some(e)) if b.is_hardware() => ExitTiming::EmulatedCpu(e.to_string()),
            (Some(b), None) if b.is_hardware() && nested == Some(true) => ExitTiming::Nested,
            (Some(b), None) if b.is_hardware() => ExitTiming::Hardware,
            _ => ExitTiming::Unknown,
        }
    }

    /// The timing an input states through its origin: its backend's name and its CPU emulator.
    pub fn of_origin(backend: Option<&str>, emulator: Option<&str>) -> Self {
        match (backend.map(Backend::named), emulator) {
            (Some(Backend::Pvm), _) => ExitTiming::Pvm,
            // Whatever the backend, an emulated CPU's times are the emulator's.
            (_, Some(e)) => ExitTiming::EmulatedCpu(e.to_string()),
            (b, None) => Self::of(b.as_ref(), None, None),
        }
    }

    /// The short name (JSON, metric labels): `hardware`, `nested`, `emulated-cpu`, `pvm`,
    /// `unknown`.
    pub fn name(&self) -> &'static str {
        match self {
            ExitTiming::Hardware => "hardware",
            ExitTiming::Nested => "nested",
            ExitTiming::EmulatedCpu(_) => "emulated-cpu",
            ExitTiming::Pvm => "pvm",
            ExitTiming::Unknown => "unknown",
        }
    }

    /// Whether an exit's measured time is what it costs on hardware.
    pub fn is_hardware(&self) -> bool {
        *self == ExitTiming::Hardware
    }

    /// Whether measured times say nothing about hardware at all (an emulated CPU or PVM): a
    /// diagnosis weighs such exits by typical hardware costs instead.
    pub fn times_emulated(&self) -> bool {
        matches!(self, ExitTiming::EmulatedCpu(_) | ExitTiming::Pvm)
    }

    /// What numbers measured on such a host mean, in one sentence, for labels.
    pub fn caveat(&self) -> String {
        match self {
            ExitTiming::Hardware => Backend::Svm.caveat().into(),
            ExitTiming::Nested => "hardware virtualization inside a VM (this host is itself a \
                                   guest): each exit also costs the outer hypervisor's handling, \
                                   so exits cost more than on bare metal"
                .into(),
            ExitTiming::EmulatedCpu(by) => format!(
                "a CPU that {by} emulates (no hardware virtualization underneath): exit counts and \
                 reasons are real, their times are the emulator's (about 100 times a hardware \
                 exit), never hardware exit costs"
            ),
            ExitTiming::Pvm => Backend::Pvm.caveat().to_string(),
            ExitTiming::Unknown => Backend::Other(String::new()).caveat().into(),
        }
    }
}

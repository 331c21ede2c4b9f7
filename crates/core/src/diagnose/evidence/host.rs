//! The host a profile comes from and the configuration it ran: the CPU vendor (given, probed,
//! or read from the exit names: VMX → Intel, SVM → AMD), the KVM backend, APIC virtualization,
//! kernel and clocksource as given; and, with `--config`, the effective flag set and the lint
//! findings under the same host facts and guest.

use serde::Serialize;

use crate::config::{Effective, GuestFamily, HvFlag, Version, VmConfig};
use crate::decode::Isa;
use crate::facts::{HostFacts, Vendor};
use crate::lint;
use crate::profile::Origin;

/// How the host vendor is known.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum VendorBasis {
    /// `--host-vendor` or `--host-facts auto`.
    Given,
    /// The exit names are VMX (Intel) or SVM (AMD).
    ExitNames,
    /// The input names the CPU.
    Input,
}

/// The host, as far as it is known.
#[derive(Debug, Clone, Serialize)]
pub struct Host {
    #[serde(flatten)]
    pub facts: HostFacts,
    pub vendor_basis: Option<VendorBasis>,
    pub isa: Option<Isa>,
    /// The KVM backend the input names (`vmx`, `svm`, `pvm`).
    pub backend: Option<String>,
    pub qemu_version: Option<Version>,
    /// The given facts name another vendor than the exits: they may describe another host.
    pub facts_disagree: bool,
}

impl Host {
    /// The host of an input with exit ISA `isa` and `origin` (vendor, backend, CPU emulator),
    /// under the given facts.
    pub fn of(
        given: &HostFacts,
        isa: Option<Isa>,
        origin: &Origin,
        qemu_version: Option<Version>,
    ) -> Host {
        let (vendor, backend) = (origin.vendor.as_deref(), origin.backend.as_deref());
        let mut facts = given.clone();
        if facts.cpu_emulator.is_none() {
            facts.cpu_emulator.clone_from(&origin.cpu_emulator);
        }
        let isa_vendor = match isa {
            Some(Isa::Vmx) => Some(Vendor::Intel),
            Some(Isa::Svm) => Some(Vendor::Amd),
            _ => None,
        };
        let mut vendor_basis = facts.vendor.as_ref().map(|_| VendorBasis::Given);
        if facts.vendor.is_none() {
            (facts.vendor, vendor_basis) = match (&isa_vendor, vendor) {
                (Some(v), _) => (Some(v.clone()), Some(VendorBasis::ExitNames)),
                (None, Some(v)) => (Some(Vendor::from_cpuid(v)), Some(VendorBasis::Input)),
                _ => (None, None),
            };
        }
        let facts_disagree = matches!((&given.vendor, &isa_vendor), (Some(v), Some(i))
            if (*v == Vendor::Intel) != (*i == Vendor::Intel));
        Host {
            facts,
            vendor_basis,
            isa,
            backend: backend.map(str::to_string),
            qemu_version,
            facts_disagree,
        }
    }

    pub fn amd(&self) -> bool {
        matches!(self.facts.vendor, Some(Vendor::Amd | Vendor::Hygon))
    }

    pub fn intel(&self) -> bool {
        self.facts.vendor == Some(Vendor::Intel)
    }

    /// Host APIC virtualization (APICv on Intel, AVIC on AMD), when known.
    pub fn apic_virt(&self) -> Option<bool> {
        if self.amd() {
            self.facts.avic
        } else if self.intel() {
            self.facts.apicv
        } else {
            self.facts.apicv.or(self.facts.avic)
        }
    }

    /// The host kernel's version, when given.
    pub fn kernel(&self) -> Option<Version> {
        self.facts.kernel.as_deref().and_then(Version::parse)
    }

    /// True for an emulating backend (PVM): its exit costs are not hardware exit costs.
    pub fn emulated(&self) -> bool {
        self.isa == Some(Isa::Pvm) || self.backend.as_deref() == Some("pvm")
    }

    /// The backend as figures are labelled with it (see [`crate::facts::backend_label`]).
    pub fn backend_label(&self) -> Option<String> {
        crate::facts::backend_label(self.backend.as_deref(), self.facts.cpu_emulator.as_deref())
    }

    /// True when software emulated the host's CPU (QEMU TCG): exit counts and reasons are real,
    /// their times are the emulator's.
    pub fn cpu_emulated(&self) -> bool {
        self.facts.cpu_emulator.is_some()
    }
}

/// The configuration a diagnosis joins with.
#[derive(Debug, Clone)]
pub struct ConfigInfo {
    pub effective: Effective,
    /// Its lint findings, under the same host facts and guest.
    pub lint: Vec<lint::Finding>,
}

impl ConfigInfo {
    /// The configuration's effective flags and lint findings for `guest` on `host`.
    pub fn of(c: &VmConfig, host: &Host, guest: GuestFamily) -> ConfigInfo {
        let options = lint::Options {
            host: host.facts.clone(),
            guest: (guest != GuestFamily::Unknown).then_some(guest),
            qemu_version: host.qemu_version,
            ..lint::Options::default()
        };
        let (_, lint, _) = lint::check(c, &options);
        ConfigInfo {
            effective: c.effective(),
            lint,
        }
    }

    /// Whether the configuration turns `flag` on.
    pub fn flag(&self, flag: HvFlag) -> bool {
        self.effective.hv.contains_key(&flag)
            || (self.effective.passthrough && flag.in_passthrough())
    }
}

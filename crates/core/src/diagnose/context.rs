//! What every rule asks besides the rows: which guest this is (`--guest`, the configuration, or
//! the profile itself), what the host is (facts given or probed, else the exit ISA), what the
//! configuration turns on (its effective flag set and its lint findings), whether the guest
//! visibly uses Hyper-V enlightenments, which rows earlier rules already explained, and the
//! severity cap the input's total cost allows.

use std::collections::BTreeSet;

use serde::Serialize;

use super::finding::{Evidence, Finding, Severity};
use super::grade;
use super::view::{Part, VRow, View};
use crate::config::{Effective, GuestFamily, GuestSource, HvFlag, Version, VmConfig, WinGen};
use crate::decode::Isa;
use crate::facts::{HostFacts, Vendor};
use crate::lint;
use crate::profile::{Key, TableKind};

/// The guest OS a diagnosis assumed, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GuestInfo {
    pub family: GuestFamily,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub windows: Option<WinGen>,
    /// How it was determined, in words.
    pub basis: String,
}

impl GuestInfo {
    pub fn describe(&self) -> String {
        let what = match (self.family, self.windows) {
            (GuestFamily::Windows, Some(g)) => format!("Windows {g}"),
            (GuestFamily::Windows, None) => "Windows".to_string(),
            (GuestFamily::Linux, _) => "Linux".to_string(),
            (GuestFamily::Other, _) => "non-Windows".to_string(),
            (GuestFamily::Unknown, _) => "unknown".to_string(),
        };
        format!("{what} ({})", self.basis)
    }
}

/// The configuration a diagnosis joins with.
#[derive(Debug, Clone)]
pub struct ConfigInfo {
    pub effective: Effective,
    /// Its lint findings, under the same host facts and guest.
    pub lint: Vec<lint::Finding>,
}

/// Everything a rule reads.
pub struct Ctx<'a> {
    pub view: &'a View,
    pub guest: GuestInfo,
    /// Host facts as given, with the vendor filled in from the exit ISA when not given.
    pub host: HostFacts,
    pub qemu_version: Option<Version>,
    pub config: Option<ConfigInfo>,
    /// How the host vendor is known: `given` (options or probe), `exit names`, `input`, or none.
    pub vendor_basis: Option<&'static str>,
    /// Remarks for the reader (host facts that contradict the input, …).
    pub notes: Vec<String>,
    claimed: BTreeSet<(TableKind, Key)>,
}

impl<'a> Ctx<'a> {
    /// The context of `view` under the user's options and an optional configuration.
    pub fn new(
        view: &'a View,
        guest: Option<GuestFamily>,
        host: &HostFacts,
        qemu_version: Option<Version>,
        config: Option<&'a VmConfig>,
    ) -> Ctx<'a> {
        let mut host = host.clone();
        let mut vendor_basis = host.vendor.as_ref().map(|_| "given");
        if host.vendor.is_none() {
            (host.vendor, vendor_basis) = match view.isa {
                Some(Isa::Vmx) => (Some(Vendor::Intel), Some("from the VMX exit names")),
                Some(Isa::Svm) => (Some(Vendor::Amd), Some("from the SVM exit names")),
                _ => (
                    view.vendor.as_deref().map(Vendor::from_cpuid),
                    view.vendor.as_ref().map(|_| "from the input"),
                ),
            };
        }
        let mut notes = Vec::new();
        let isa_vendor = match view.isa {
            Some(Isa::Vmx) => Some(Vendor::Intel),
            Some(Isa::Svm) => Some(Vendor::Amd),
            _ => None,
        };
        if let (Some(v), Some(i)) = (&host.vendor, &isa_vendor)
            && vendor_basis == Some("given")
            && (v == &Vendor::Intel) != (i == &Vendor::Intel)
        {
            notes.push(format!(
                "{}: the host facts say {} but the exits are {} names: the facts may describe \
                 another host than the one the capture comes from",
                view.input.name,
                match v {
                    Vendor::Intel => "Intel",
                    Vendor::Amd => "AMD",
                    Vendor::Hygon => "Hygon",
                    Vendor::Other(o) => o.as_str(),
                },
                view.isa.map_or("", |i| i.as_str()).to_uppercase()
            ));
        }
        let guest = resolve_guest(view, guest, config);
        let config = config.map(|c| {
            let options = lint::Options {
                host: host.clone(),
                guest: (guest.family != GuestFamily::Unknown).then_some(guest.family),
                qemu_version,
                ..lint::Options::default()
            };
            let (_, findings, _) = lint::check(c, &options);
            ConfigInfo {
                effective: c.effective(),
                lint: findings,
            }
        });
        Ctx {
            view,
            guest,
            host,
            qemu_version,
            config,
            vendor_basis,
            notes,
            claimed: BTreeSet::new(),
        }
    }

    pub fn windows(&self) -> bool {
        self.guest.family == GuestFamily::Windows
    }

    pub fn linux(&self) -> bool {
        self.guest.family == GuestFamily::Linux
    }

    pub fn amd(&self) -> bool {
        matches!(self.host.vendor, Some(Vendor::Amd | Vendor::Hygon))
    }

    /// Whether the configuration turns `flag` on (`None` without a configuration).
    pub fn flag(&self, flag: HvFlag) -> Option<bool> {
        let c = self.config.as_ref()?;
        Some(
            c.effective.hv.contains_key(&flag)
                || (c.effective.passthrough && flag.in_passthrough()),
        )
    }

    /// Host APIC virtualization (APICv on Intel, AVIC on AMD), when known.
    pub fn apic_virt(&self) -> Option<bool> {
        if self.amd() {
            self.host.avic
        } else if self.host.vendor == Some(Vendor::Intel) {
            self.host.apicv
        } else {
            self.host.apicv.or(self.host.avic)
        }
    }

    /// Rows showing the guest uses the Hyper-V interface: hypercall exits, Hyper-V MSRs.
    pub fn hv_signs(&self) -> Vec<Evidence> {
        let mut out: Vec<Evidence> = Vec::new();
        if let Some(ex) = &self.view.exits {
            out.extend(
                ex.named(&["VMCALL", "hypercall", "VMMCALL", "hypercalls"])
                    .into_iter()
                    .filter(|r| r.count > 0)
                    .map(|r| ex.evidence(r).context()),
            );
        }
        if let Some(m) = &self.view.msrs {
            out.extend(
                m.rows
                    .iter()
                    .filter(|r| matches!(r.key, Key::Msr { index, .. } if is_hyperv_msr(index)))
                    .map(|r| m.evidence(r).context()),
            );
        }
        out
    }

    /// Whether the guest uses Hyper-V enlightenments: the configuration when given (and the
    /// hypervisor bit is not hidden), else the profile — hypercall exits or Hyper-V MSRs say
    /// yes; an exit table of real size with neither hypercalls nor MSR writes says no.
    pub fn enlightened(&self) -> Option<bool> {
        if let Some(c) = &self.config {
            return Some(c.effective.any_enlightenment() && !c.effective.hypervisor_hidden);
        }
        if !self.hv_signs().is_empty() {
            return Some(true);
        }
        let ex = self.view.exits.as_ref().filter(|p| !p.from_counters)?;
        let msr_writes = ex.named(&["MSR_WRITE", "msr"]);
        (ex.totals.count >= 1000 && msr_writes.iter().all(|r| r.count == 0)).then_some(false)
    }

    /// Whether an earlier rule already explained `row`.
    pub fn free(&self, row: &VRow) -> bool {
        !self.claimed.contains(&(row.table.clone(), row.key.clone()))
    }

    /// Rows of `part` no earlier rule explained.
    pub fn free_rows<'p>(&self, rows: Vec<&'p VRow>) -> Vec<&'p VRow> {
        rows.into_iter().filter(|r| self.free(r)).collect()
    }

    /// Records the rows `f` explains, so later rules leave them alone.
    pub fn claim(&mut self, f: &Finding) {
        for e in f.evidence.iter().filter(|e| e.explains) {
            if let Some(id) = &e.id {
                self.claimed.insert(id.clone());
            }
        }
    }

    /// The severity cap for this input's cost.
    pub fn cap(&self) -> Option<(Severity, String)> {
        grade::cost_cap(self.view.exits.as_ref())
    }

    /// The exit part, when the input has one.
    pub fn exits(&self) -> Option<&'a Part> {
        self.view.exits.as_ref()
    }
}

/// Hyper-V synthetic MSRs (0x40000000–0x400001ff).
pub fn is_hyperv_msr(index: u64) -> bool {
    (0x4000_0000..=0x4000_01ff).contains(&index)
}

/// KVM paravirtual MSRs (kvmclock, steal time, async PF, PV EOI: 0x4b564d00–0x4b564dff).
fn is_kvm_msr(index: u64) -> bool {
    (0x4b56_4d00..=0x4b56_4dff).contains(&index)
}

/// The guest: `--guest`, else the configuration's libosinfo id or ostype, else what the profile
/// shows (Hyper-V MSRs → Windows, KVM PV MSRs → Linux), else the configuration's hv-* flags.
fn resolve_guest(view: &View, given: Option<GuestFamily>, config: Option<&VmConfig>) -> GuestInfo {
    let from_config = config.map(|c| &c.guest);
    let windows = from_config.and_then(|g| g.windows);
    if let Some(family) = given {
        return GuestInfo {
            family,
            windows: windows.filter(|_| family == GuestFamily::Windows),
            basis: "--guest".to_string(),
        };
    }
    if let Some(g) = from_config.filter(|g| {
        g.family != GuestFamily::Unknown
            && matches!(g.source, GuestSource::Libosinfo | GuestSource::Ostype)
    }) {
        return GuestInfo {
            family: g.family,
            windows: g.windows,
            basis: format!(
                "from the configuration: {}",
                g.id.as_deref().unwrap_or("os")
            ),
        };
    }
    let msr = |pred: fn(u64) -> bool| {
        view.msrs.as_ref().is_some_and(|m| {
            m.rows
                .iter()
                .any(|r| matches!(r.key, Key::Msr { index, .. } if pred(index)))
        })
    };
    let hv_hypercalls = view.events.get("kvm_hv_hypercall").is_some_and(|&n| n > 0);
    if msr(is_hyperv_msr) || hv_hypercalls {
        return GuestInfo {
            family: GuestFamily::Windows,
            windows: None,
            basis:
                "inferred: the profile shows Hyper-V synthetic MSRs or hypercalls, which a Windows \
                    guest uses"
                    .to_string(),
        };
    }
    if msr(is_kvm_msr) {
        return GuestInfo {
            family: GuestFamily::Linux,
            windows: None,
            basis:
                "inferred: the profile shows KVM paravirtual MSRs (kvmclock, steal time), which a \
                    Linux guest uses"
                    .to_string(),
        };
    }
    if let Some(c) = config
        && c.effective().any_enlightenment()
    {
        return GuestInfo {
            family: GuestFamily::Windows,
            windows,
            basis: "inferred from the configuration's hv-* flags".to_string(),
        };
    }
    GuestInfo {
        family: GuestFamily::Unknown,
        windows: None,
        basis: "not stated; pass --guest windows|linux for guest-specific causes".to_string(),
    }
}

/// A share with the severity it earns.
#[derive(Debug, Clone)]
pub struct Graded {
    pub value: f64,
    pub share: super::finding::Share,
    pub severity: Severity,
    pub why: String,
}

impl Ctx<'_> {
    /// The share of the cost `rows` (of `part`) explain, graded from `base` by
    /// [`grade::by_share`]; `None` when too small to raise.
    pub fn graded(&self, part: &Part, rows: &[&VRow], base: Severity) -> Option<Graded> {
        if rows.is_empty() {
            return None;
        }
        let (value, share) = self.view.share_against(part, rows);
        let (severity, why) = grade::by_share(base, value, &share.of)?;
        Some(Graded {
            value,
            share,
            severity,
            why,
        })
    }

    /// Like [`Ctx::graded`], but for exits that go to QEMU when only counts are known: a count
    /// share from [`grade::USERSPACE_COUNT`] up is raised at low (see there).
    pub fn graded_userspace(&self, part: &Part, rows: &[&VRow], base: Severity) -> Option<Graded> {
        if let Some(g) = self.graded(part, rows, base) {
            return Some(g);
        }
        let (value, share) = self.view.share_against(part, rows);
        (share.measure == "exits" && value >= grade::USERSPACE_COUNT && !rows.is_empty()).then(
            || Graded {
                value,
                why: format!(
                    "explains {:.1}% of the {} — few, but exits to QEMU cost several times an \
                     interrupt or MSR exit, so their share of the time is larger",
                    value * 100.0,
                    share.of
                ),
                share,
                severity: Severity::Low.min(base),
            },
        )
    }
}

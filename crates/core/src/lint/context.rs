//! What every rule asks of a configuration and the host: is a flag on (explicitly or through
//! passthrough), where is it (or where would it go), is the guest Windows (given or inferred),
//! does the host have APICv/AVIC, is it Intel or AMD.

use super::{Finding, Fix, Options, Severity, rules};
use crate::config::{
    Accel, Effective, FlagSetting, Format, Guest, GuestFamily, GuestSource, HvFlag, Origin,
    VmConfig,
};
use crate::facts::Vendor;

/// A configuration, its effective flag set, the resolved guest and the options.
pub(super) struct Ctx<'a> {
    pub c: &'a VmConfig,
    pub e: Effective,
    pub guest: Guest,
    pub opts: &'a Options,
    notes: Vec<String>,
}

impl<'a> Ctx<'a> {
    pub(super) fn new(c: &'a VmConfig, opts: &'a Options) -> Ctx<'a> {
        let e = c.effective();
        let mut notes = c.notes.clone();
        let guest = match opts.guest {
            Some(family) => Guest {
                family,
                windows: (c.guest.family == family)
                    .then_some(c.guest.windows)
                    .flatten(),
                source: GuestSource::Option,
                id: None,
                origin: None,
            },
            None if c.guest.family != GuestFamily::Unknown => c.guest.clone(),
            None if e.any_enlightenment() => {
                notes.push(
                    "the guest OS is not stated; taken as Windows because Hyper-V enlightenments are set \
                     (pass --guest windows|linux to say)"
                        .to_string(),
                );
                Guest {
                    family: GuestFamily::Windows,
                    source: GuestSource::Heuristic,
                    ..Guest::default()
                }
            }
            None => {
                notes.push(
                    "the guest OS is unknown and no Hyper-V enlightenment is set: Windows-only checks were \
                     skipped (pass --guest windows to run them)"
                        .to_string(),
                );
                Guest::default()
            }
        };
        if let Some(a) = &c.accel
            && a.value == Accel::Tcg
        {
            notes.push(format!(
                "{} selects TCG, not KVM; the findings are for running it on KVM, where QEMU checks \
                 the Hyper-V dependencies and the enlightenments take effect",
                a.origin
            ));
        }
        Ctx {
            c,
            e,
            guest,
            opts,
            notes,
        }
    }

    pub(super) fn notes(&self) -> Vec<String> {
        self.notes.clone()
    }

    pub(super) fn passthrough(&self) -> bool {
        self.c.hyperv.passthrough.is_some()
    }

    /// On, explicitly or because passthrough turns it on (hv-evmcs only where the host is
    /// not known to be non-Intel: KVM offers it on VMX only).
    pub(super) fn on(&self, f: HvFlag) -> bool {
        if self.passthrough() && f.in_passthrough() {
            return f != HvFlag::Evmcs || !self.vendor_known_not_intel();
        }
        self.e.hv.contains_key(&f)
    }

    /// On by an explicit setting (not through passthrough).
    pub(super) fn explicit_on(&self, f: HvFlag) -> Option<&FlagSetting> {
        self.c
            .hyperv
            .flags
            .get(&f)
            .filter(|s| s.on && self.e.hv.contains_key(&f))
    }

    /// Where `f` is set (on or off), else where it would go.
    pub(super) fn origin(&self, f: HvFlag) -> Origin {
        match self.c.hyperv.flags.get(&f) {
            Some(s) => s.origin.clone(),
            None if f == HvFlag::Time => self.clock_anchor(),
            None => self.anchor(),
        }
    }

    /// Where Hyper-V settings go.
    pub(super) fn anchor(&self) -> Origin {
        self.c.hyperv.anchor.clone().unwrap_or_else(|| {
            Origin::implied(match self.c.format {
                Format::Libvirt => "/domain/features/hyperv (absent)",
                Format::Qemu => "-cpu (absent)",
                Format::Proxmox => "ostype / cpu",
            })
        })
    }

    /// Where clock settings go (libvirt `<clock>`; on QEMU, hv-time is a `-cpu` flag).
    pub(super) fn clock_anchor(&self) -> Origin {
        match self.c.format {
            Format::Libvirt => self
                .c
                .timers
                .anchor
                .clone()
                .unwrap_or_else(|| Origin::implied("/domain/clock (absent)")),
            _ => self.anchor(),
        }
    }

    pub(super) fn windows(&self) -> bool {
        self.guest.is_windows()
    }

    pub(super) fn intel(&self) -> bool {
        self.opts.host.vendor == Some(Vendor::Intel)
    }

    pub(super) fn amd(&self) -> bool {
        matches!(self.opts.host.vendor, Some(Vendor::Amd | Vendor::Hygon))
    }

    pub(super) fn vendor_known_not_intel(&self) -> bool {
        self.opts
            .host
            .vendor
            .as_ref()
            .is_some_and(|v| *v != Vendor::Intel)
    }

    /// Host APIC virtualization: APICv on Intel, AVIC on AMD; either when the vendor is unknown.
    pub(super) fn apic_virt(&self) -> Option<bool> {
        let h = &self.opts.host;
        if self.intel() {
            h.apicv
        } else if self.amd() {
            h.avic
        } else {
            h.apicv.or(h.avic)
        }
    }

    /// The most vCPUs the VM can run without a restart (the maximum when vCPU hot-plug is
    /// configured: enlightenments cannot be added later without a restart, vCPUs can).
    pub(super) fn vcpus(&self) -> Option<u32> {
        self.e.max_vcpus.or(self.e.vcpus)
    }

    /// `16 vCPUs`, or `up to 16 vCPUs (2 at boot)` with hot-plug.
    pub(super) fn vcpus_text(&self) -> Option<String> {
        let max = self.vcpus()?;
        Some(match self.e.vcpus {
            Some(boot) if boot != max => format!("up to {max} vCPUs ({boot} at boot)"),
            _ => format!("{max} vCPUs"),
        })
    }

    /// A TCG remark for dependency errors.
    pub(super) fn tcg_remark(&self) -> &'static str {
        match self.c.accel.as_ref().map(|a| a.value) {
            Some(Accel::Tcg) => {
                " (this file selects TCG, where QEMU skips the check; on KVM the VM does not start)"
            }
            _ => "",
        }
    }

    /// A finding of `rule`, its source from the catalogue.
    pub(super) fn finding(
        &self,
        rule: &'static str,
        severity: Severity,
        message: String,
        element: Origin,
        fix: Fix,
    ) -> Finding {
        Finding {
            rule,
            severity,
            message,
            element,
            fix,
            source: rules::source(rule),
            document: None,
            count: 1,
            caveats: Vec::new(),
        }
    }
}

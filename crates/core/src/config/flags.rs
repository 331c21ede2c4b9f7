//! The Hyper-V enlightenments QEMU knows (`hv-*` CPU properties), with their libvirt names, the
//! hard dependencies QEMU enforces on KVM, and the first QEMU and libvirt versions that accept
//! each one (QEMU's docs/system/i386/hyperv.rst and target/i386/kvm/hyperv.c, libvirt's
//! formatdomain "Hypervisor features").

use std::fmt;

use serde::{Serialize, Serializer};

/// One Hyper-V enlightenment (a QEMU `hv-*` property).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum HvFlag {
    Relaxed,
    Vapic,
    Spinlocks,
    Vpindex,
    Runtime,
    Crash,
    Time,
    Synic,
    Stimer,
    StimerDirect,
    Reset,
    VendorId,
    Frequencies,
    Reenlightenment,
    Tlbflush,
    TlbflushExt,
    TlbflushDirect,
    Ipi,
    Evmcs,
    Avic,
    EmsrBitmap,
    XmmInput,
    Syndbg,
    NoNonarchCoresharing,
    EnforceCpuid,
}

/// A version as `major.minor` (`6.2`, `8.10`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Version(pub u32, pub u32);

impl Version {
    /// Parses `7`, `7.1`, `7.1.0`, `v8.10.0`, `11.0+pve2` (the part after `+` is ignored).
    pub fn parse(text: &str) -> Option<Version> {
        let t = text.trim().trim_start_matches('v');
        let t = t.split(['+', '-', ' ']).next().unwrap_or(t);
        let mut parts = t.split('.');
        let major = parts.next()?.parse().ok()?;
        let minor = match parts.next() {
            Some(m) => m.parse().ok()?,
            None => 0,
        };
        Some(Version(major, minor))
    }
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.0, self.1)
    }
}

impl Serialize for Version {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// Static facts about one flag.
struct Info {
    flag: HvFlag,
    qemu: &'static str,
    /// The child of libvirt's `<hyperv>` (or what else expresses it), `None` if libvirt has none.
    libvirt: Option<&'static str>,
    qemu_since: Option<Version>,
    libvirt_since: Option<Version>,
    what: &'static str,
}

const fn v(a: u32, b: u32) -> Option<Version> {
    Some(Version(a, b))
}

const TABLE: [Info; 25] = [
    info(
        HvFlag::Relaxed,
        "hv-relaxed",
        Some("relaxed"),
        v(2, 0),
        v(1, 0),
        "relaxed timing",
    ),
    info(
        HvFlag::Vapic,
        "hv-vapic",
        Some("vapic"),
        v(2, 0),
        v(1, 1),
        "virtual APIC",
    ),
    info(
        HvFlag::Spinlocks,
        "hv-spinlocks",
        Some("spinlocks"),
        v(2, 0),
        v(1, 1),
        "spinlock notification",
    ),
    info(
        HvFlag::Vpindex,
        "hv-vpindex",
        Some("vpindex"),
        v(2, 5),
        v(1, 3),
        "VP_INDEX",
    ),
    info(
        HvFlag::Runtime,
        "hv-runtime",
        Some("runtime"),
        v(2, 5),
        v(1, 3),
        "VP runtime",
    ),
    info(
        HvFlag::Crash,
        "hv-crash",
        None,
        v(2, 5),
        v(1, 3),
        "crash MSRs",
    ),
    info(
        HvFlag::Time,
        "hv-time",
        None,
        v(2, 0),
        v(1, 2),
        "clocksources (reference TSC page)",
    ),
    info(
        HvFlag::Synic,
        "hv-synic",
        Some("synic"),
        v(2, 6),
        v(1, 3),
        "synthetic interrupt controller",
    ),
    info(
        HvFlag::Stimer,
        "hv-stimer",
        Some("stimer"),
        v(2, 6),
        v(1, 3),
        "synthetic timers",
    ),
    info(
        HvFlag::StimerDirect,
        "hv-stimer-direct",
        Some("stimer/direct"),
        v(4, 1),
        v(5, 7),
        "direct-mode synthetic timers",
    ),
    info(
        HvFlag::Reset,
        "hv-reset",
        Some("reset"),
        v(2, 5),
        v(1, 3),
        "reset MSR",
    ),
    info(
        HvFlag::VendorId,
        "hv-vendor-id",
        Some("vendor_id"),
        v(2, 5),
        v(1, 3),
        "vendor id",
    ),
    info(
        HvFlag::Frequencies,
        "hv-frequencies",
        Some("frequencies"),
        v(2, 12),
        v(4, 7),
        "frequency MSRs",
    ),
    info(
        HvFlag::Reenlightenment,
        "hv-reenlightenment",
        Some("reenlightenment"),
        v(3, 0),
        v(4, 7),
        "reenlightenment notifications",
    ),
    info(
        HvFlag::Tlbflush,
        "hv-tlbflush",
        Some("tlbflush"),
        v(3, 0),
        v(4, 7),
        "paravirtual TLB flush",
    ),
    info(
        HvFlag::TlbflushExt,
        "hv-tlbflush-ext",
        Some("tlbflush/extended"),
        v(7, 1),
        v(11, 0),
        "extended GVA ranges for TLB flush",
    ),
    info(
        HvFlag::TlbflushDirect,
        "hv-tlbflush-direct",
        Some("tlbflush/direct"),
        v(7, 1),
        v(11, 0),
        "direct TLB flush for nested guests",
    ),
    info(
        HvFlag::Ipi,
        "hv-ipi",
        Some("ipi"),
        v(3, 1),
        v(4, 10),
        "paravirtual IPIs",
    ),
    info(
        HvFlag::Evmcs,
        "hv-evmcs",
        Some("evmcs"),
        v(3, 1),
        v(4, 10),
        "enlightened VMCS",
    ),
    info(
        HvFlag::Avic,
        "hv-avic",
        Some("avic"),
        v(6, 2),
        v(8, 10),
        "APICv/AVIC-friendly SynIC (no AutoEOI)",
    ),
    info(
        HvFlag::EmsrBitmap,
        "hv-emsr-bitmap",
        Some("emsr_bitmap"),
        v(7, 1),
        v(10, 7),
        "enlightened MSR bitmap",
    ),
    info(
        HvFlag::XmmInput,
        "hv-xmm-input",
        Some("xmm_input"),
        v(7, 1),
        v(10, 7),
        "XMM hypercall input",
    ),
    info(
        HvFlag::Syndbg,
        "hv-syndbg",
        None,
        v(7, 0),
        None,
        "synthetic debugger",
    ),
    info(
        HvFlag::NoNonarchCoresharing,
        "hv-no-nonarch-coresharing",
        None,
        v(5, 1),
        None,
        "no non-architectural core sharing",
    ),
    info(
        HvFlag::EnforceCpuid,
        "hv-enforce-cpuid",
        None,
        v(6, 2),
        None,
        "enforce Hyper-V CPUID",
    ),
];

const fn info(
    flag: HvFlag,
    qemu: &'static str,
    libvirt: Option<&'static str>,
    qemu_since: Option<Version>,
    libvirt_since: Option<Version>,
    what: &'static str,
) -> Info {
    Info {
        flag,
        qemu,
        libvirt,
        qemu_since,
        libvirt_since,
        what,
    }
}

impl HvFlag {
    /// Every flag, in table order.
    pub fn all() -> impl Iterator<Item = HvFlag> {
        TABLE.iter().map(|i| i.flag)
    }

    fn info(self) -> &'static Info {
        // TABLE is in enum order; the fallback keeps this total without a panic.
        TABLE.iter().find(|i| i.flag == self).unwrap_or(&TABLE[0])
    }

    /// The QEMU property (`hv-stimer-direct`).
    pub fn qemu(self) -> &'static str {
        self.info().qemu
    }

    /// The libvirt spelling (`stimer/direct`), `None` where libvirt has no `<hyperv>` child.
    pub fn libvirt(self) -> Option<&'static str> {
        self.info().libvirt
    }

    /// What the flag is, in a few words.
    pub fn what(self) -> &'static str {
        self.info().what
    }

    /// The first QEMU version with this property.
    pub fn qemu_since(self) -> Option<Version> {
        self.info().qemu_since
    }

    /// The first libvirt version that can express it.
    pub fn libvirt_since(self) -> Option<Version> {
        self.info().libvirt_since
    }

    /// The flag of a QEMU property name: `hv-relaxed`, `hv_relaxed`, `hv-apicv` (alias of
    /// `hv-avic`), `hv_vendor_id`; `None` for other names.
    pub fn from_qemu(name: &str) -> Option<HvFlag> {
        let n = name.replace('_', "-");
        if n == "hv-apicv" {
            return Some(HvFlag::Avic);
        }
        TABLE.iter().find(|i| i.qemu == n).map(|i| i.flag)
    }

    /// The flag of a direct child of libvirt's `<hyperv>` element.
    pub fn from_libvirt(name: &str) -> Option<HvFlag> {
        TABLE
            .iter()
            .find(|i| i.libvirt == Some(name))
            .map(|i| i.flag)
    }

    /// True for a flag that carries a value rather than on/off.
    pub fn has_value(self) -> bool {
        matches!(
            self,
            HvFlag::Spinlocks | HvFlag::VendorId | HvFlag::NoNonarchCoresharing
        )
    }

    /// True when `hv-passthrough` decides the flag (turns it on where the host's KVM supports
    /// it, or copies KVM's value): everything but syndbg, which QEMU excludes, and the
    /// policy knobs.
    pub fn in_passthrough(self) -> bool {
        !matches!(
            self,
            HvFlag::Syndbg | HvFlag::EnforceCpuid | HvFlag::NoNonarchCoresharing
        )
    }

    /// True for a real enlightenment (vendor id and the debug/policy knobs are not).
    pub fn is_enlightenment(self) -> bool {
        !matches!(
            self,
            HvFlag::VendorId | HvFlag::EnforceCpuid | HvFlag::NoNonarchCoresharing
        )
    }
}

impl fmt::Display for HvFlag {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.qemu())
    }
}

impl Serialize for HvFlag {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.qemu())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for f in HvFlag::all() {
            assert_eq!(HvFlag::from_qemu(f.qemu()), Some(f));
            if let Some(l) = f.libvirt() {
                assert_eq!(HvFlag::from_libvirt(l), Some(f));
            }
        }
        assert_eq!(HvFlag::from_qemu("hv_vendor_id"), Some(HvFlag::VendorId));
        assert_eq!(HvFlag::from_qemu("hv-apicv"), Some(HvFlag::Avic));
        assert_eq!(HvFlag::all().count(), 25);
    }

    #[test]
    fn versions() {
        assert_eq!(Version::parse("11.0+pve2"), Some(Version(11, 0)));
        assert_eq!(Version::parse("8.10.0"), Some(Version(8, 10)));
        assert!(Version(6, 2) < Version(6, 10));
        assert_eq!(Version::parse("x"), None);
    }
}

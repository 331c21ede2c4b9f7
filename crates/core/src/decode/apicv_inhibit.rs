//! APICv/AVIC inhibit reasons: what `kvm_apicv_inhibit_changed` (and, before it,
//! `kvm_apicv_update_request`) says, by number and by name, in every kernel era.
//!
//! The numbering is not stable: KVM's reasons were `#define`s 0..7 (Linux 5.6 to 5.17), became
//! `enum kvm_apicv_inhibit` (5.18), were regrouped (common reasons first, AVIC-only after) with
//! X2APIC removed and APIC_ID/APIC_BASE_MODIFIED added (6.0), and regrouped again with
//! PHYSICAL_ID_ALIASED / LOGICAL_ID_ALIASED (6.3) and PHYSICAL_ID_TOO_BIG (6.17). A number
//! printed alone names a reason only when the era is known (the old event name says it); else
//! [`candidates`] lists every name it can be. Newer kernels print the names of the inhibits
//! still set after the change (`APICV_INHIBIT_REASONS`), from which the reason of a `set` line
//! is read exactly.
//!
//! Trace text per era (arch/x86/kvm/trace.h):
//!
//! | kernels | event | `TP_printk` |
//! |---|---|---|
//! | 5.6–5.17 | `kvm_apicv_update_request` | `"%s reason=%u"` with `activate`/`deactivate` (deactivate = inhibit set) |
//! | 5.18– | `kvm_apicv_inhibit_changed` | `"%s reason=%u, inhibits=0x%lx"` with `set`/`cleared` |
//! | 6.11– | `kvm_apicv_inhibit_changed` | `"%s reason=%u, inhibits=0x%lx%s%s"`: the mask's names, `\|`-separated (69148ccec679, with f992572120fb renaming DISABLE to DISABLED) |

/// One inhibit reason, by its name in `enum kvm_apicv_inhibit` (without `APICV_INHIBIT_REASON_`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Inhibit {
    /// Off by module parameter or unsupported (`DISABLE`, renamed `DISABLED`).
    Disabled,
    /// A Hyper-V guest uses SynIC AutoEOI.
    Hyperv,
    /// The VMM has not created the in-kernel (or split) irqchip yet.
    Absent,
    /// KVM_GUESTDBG_BLOCKIRQ (a debugger blocks interrupts).
    Blockirq,
    /// vCPUs alias in the physical APIC ID map.
    PhysicalIdAliased,
    /// The guest changed an xAPIC ID.
    ApicIdModified,
    /// The guest moved the APIC base.
    ApicBaseModified,
    /// A vCPU runs a nested guest (AVIC).
    Nested,
    /// KVM waits for an interrupt window (AVIC).
    Irqwin,
    /// The in-kernel PIT re-injects missed ticks (AVIC).
    PitReinj,
    /// The guest has x2APIC while AVIC has no x2AVIC (AVIC, before 6.0).
    X2apic,
    /// SEV guests (AVIC).
    Sev,
    /// vCPUs alias in the logical APIC ID map (AVIC).
    LogicalIdAliased,
    /// A vCPU's APIC ID is beyond what AVIC/x2AVIC addresses.
    PhysicalIdTooBig,
}

/// How a reason behaves over a run: set once and kept, or set and cleared by design.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Nature {
    /// Set by the configuration or the guest's APIC set-up and kept until it changes.
    Sticky,
    /// Set and cleared around short events (IRQ windows, debugging): benign toggling.
    Toggling,
}

impl Inhibit {
    pub const ALL: [Inhibit; 14] = [
        Inhibit::Disabled,
        Inhibit::Hyperv,
        Inhibit::Absent,
        Inhibit::Blockirq,
        Inhibit::PhysicalIdAliased,
        Inhibit::ApicIdModified,
        Inhibit::ApicBaseModified,
        Inhibit::Nested,
        Inhibit::Irqwin,
        Inhibit::PitReinj,
        Inhibit::X2apic,
        Inhibit::Sev,
        Inhibit::LogicalIdAliased,
        Inhibit::PhysicalIdTooBig,
    ];

    /// The kernel's name (the newest spelling).
    pub fn name(self) -> &'static str {
        match self {
            Inhibit::Disabled => "DISABLED",
            Inhibit::Hyperv => "HYPERV",
            Inhibit::Absent => "ABSENT",
            Inhibit::Blockirq => "BLOCKIRQ",
            Inhibit::PhysicalIdAliased => "PHYSICAL_ID_ALIASED",
            Inhibit::ApicIdModified => "APIC_ID_MODIFIED",
            Inhibit::ApicBaseModified => "APIC_BASE_MODIFIED",
            Inhibit::Nested => "NESTED",
            Inhibit::Irqwin => "IRQWIN",
            Inhibit::PitReinj => "PIT_REINJ",
            Inhibit::X2apic => "X2APIC",
            Inhibit::Sev => "SEV",
            Inhibit::LogicalIdAliased => "LOGICAL_ID_ALIASED",
            Inhibit::PhysicalIdTooBig => "PHYSICAL_ID_TOO_BIG",
        }
    }

    /// A printed name of any era (`DISABLE` and `DISABLED`; with or without the
    /// `APICV_INHIBIT_REASON_` prefix).
    pub fn from_name(s: &str) -> Option<Inhibit> {
        let s = s.trim();
        let s = s.strip_prefix("APICV_INHIBIT_REASON_").unwrap_or(s);
        // `DISABLE` before its rename; the short names of the first posting of the printed
        // names (20240214223554.1033154-1-alejandro.j.jimenez@oracle.com).
        let alias = match s {
            "DISABLE" => Some(Inhibit::Disabled),
            "PHYS_ID_ALIASED" => Some(Inhibit::PhysicalIdAliased),
            "APIC_ID_MOD" => Some(Inhibit::ApicIdModified),
            "APIC_BASE_MOD" => Some(Inhibit::ApicBaseModified),
            "LOG_ID_ALIASED" => Some(Inhibit::LogicalIdAliased),
            _ => None,
        };
        alias.or_else(|| Inhibit::ALL.into_iter().find(|i| i.name() == s))
    }

    pub fn nature(self) -> Nature {
        match self {
            Inhibit::Irqwin | Inhibit::Blockirq | Inhibit::Nested => Nature::Toggling,
            _ => Nature::Sticky,
        }
    }
}

/// A numbering of the reasons and the kernels it applies to.
#[derive(Debug, Clone, Copy)]
pub struct Era {
    /// Kernel releases, as `first–last` (`last` empty: still current).
    pub kernels: &'static str,
    /// Where the numbering is stated: the kernel change that set it.
    pub source: &'static str,
    /// The reasons by number.
    pub reasons: &'static [Inhibit],
}

use Inhibit as I;

/// Every numbering, oldest first. Checked against the patches as posted and merged: the
/// `#define`s of 4e19c36f2df8 and later (5.6–5.17), `enum kvm_apicv_inhibit` (5.18, Sean
/// Christopherson), the regrouping of Maxim Levitsky's "KVM: x86: document AVIC/APICv inhibit
/// reasons" (<20220606180829.102503-2-mlevitsk@redhat.com>) with Suravee Suthikulpanit's x2AVIC
/// series dropping X2APIC (6.0), Sean Christopherson's APIC ID aliasing series (6.3), and
/// PHYSICAL_ID_TOO_BIG (6.17).
pub const ERAS: [Era; 5] = [
    Era {
        kernels: "5.6–5.17",
        source: "#define APICV_INHIBIT_REASON_* 0..7 (BLOCKIRQ and ABSENT from 5.16)",
        reasons: &[
            I::Disabled,
            I::Hyperv,
            I::Nested,
            I::Irqwin,
            I::PitReinj,
            I::X2apic,
            I::Blockirq,
            I::Absent,
        ],
    },
    Era {
        kernels: "5.18–5.19",
        source: "enum kvm_apicv_inhibit, SEV appended",
        reasons: &[
            I::Disabled,
            I::Hyperv,
            I::Nested,
            I::Irqwin,
            I::PitReinj,
            I::X2apic,
            I::Blockirq,
            I::Absent,
            I::Sev,
        ],
    },
    Era {
        kernels: "6.0–6.2",
        source: "common reasons first, AVIC-only after; X2APIC removed (x2AVIC)",
        reasons: &[
            I::Disabled,
            I::Hyperv,
            I::Absent,
            I::Blockirq,
            I::ApicIdModified,
            I::ApicBaseModified,
            I::Nested,
            I::Irqwin,
            I::PitReinj,
            I::Sev,
        ],
    },
    Era {
        kernels: "6.3–6.16",
        source: "PHYSICAL_ID_ALIASED and LOGICAL_ID_ALIASED added",
        reasons: &[
            I::Disabled,
            I::Hyperv,
            I::Absent,
            I::Blockirq,
            I::PhysicalIdAliased,
            I::ApicIdModified,
            I::ApicBaseModified,
            I::Nested,
            I::Irqwin,
            I::PitReinj,
            I::Sev,
            I::LogicalIdAliased,
        ],
    },
    Era {
        kernels: "6.17–",
        source: "PHYSICAL_ID_TOO_BIG appended",
        reasons: &[
            I::Disabled,
            I::Hyperv,
            I::Absent,
            I::Blockirq,
            I::PhysicalIdAliased,
            I::ApicIdModified,
            I::ApicBaseModified,
            I::Nested,
            I::Irqwin,
            I::PitReinj,
            I::Sev,
            I::LogicalIdAliased,
            I::PhysicalIdTooBig,
        ],
    },
];

/// The eras of `kvm_apicv_inhibit_changed` (5.18 and later).
const CHANGED_ERAS: std::ops::RangeFrom<usize> = 1..;

/// Every name `number` can be in the eras of `kvm_apicv_inhibit_changed` (or, with
/// `legacy`, of `kvm_apicv_update_request`), each once, in numbering order of the eras.
pub fn candidates(number: u32, legacy: bool) -> Vec<Inhibit> {
    let eras = if legacy {
        &ERAS[..1]
    } else {
        &ERAS[CHANGED_ERAS]
    };
    let mut out: Vec<Inhibit> = Vec::new();
    for e in eras {
        if let Some(&r) = e.reasons.get(number as usize)
            && !out.contains(&r)
        {
            out.push(r);
        }
    }
    out
}

/// One inhibit change as the trace line gives it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Change {
    /// The inhibit was set (`set`, `deactivate`), not cleared.
    pub set: bool,
    /// The reason's number.
    pub number: u32,
    /// The inhibits still set after the change, when printed.
    pub inhibits: Option<u64>,
    /// The reason by name, when the line says it (printed mask names of a `set`, or a
    /// `(NAME)` after the number), or when the numbering is certain (`kvm_apicv_update_request`).
    pub named: Option<Inhibit>,
    /// From `kvm_apicv_update_request` (5.6–5.17).
    pub legacy: bool,
    /// Not a change but a reason still set at the end of the trace (from the last mask of
    /// the VM): key `held reason=…`.
    pub held: bool,
}

impl Change {
    /// The reason when known, else every name the number can be.
    pub fn reasons(&self) -> Vec<Inhibit> {
        match self.named {
            Some(r) => vec![r],
            None => candidates(self.number, self.legacy),
        }
    }

    /// The key the profile keeps it under: `set reason=9 (PIT_REINJ)`, `cleared reason=9`;
    /// [`parse`] reads it back.
    pub fn key(&self) -> String {
        let verb = match (self.held, self.set) {
            (true, _) => "held",
            (false, true) => "set",
            (false, false) => "cleared",
        };
        let era = if self.legacy { " legacy" } else { "" };
        match self.named {
            Some(r) => format!("{verb} reason={} ({}){era}", self.number, r.name()),
            None => format!("{verb} reason={}{era}", self.number),
        }
    }
}

/// Reads the text of a `kvm_apicv_inhibit_changed` / `kvm_apicv_update_request` event (or a
/// key of [`Change::key`]); `None` when it has none of the shapes above.
pub(crate) fn parse(text: &str) -> Option<Change> {
    let text = text.trim();
    let held = text.starts_with("held ");
    let (set, rest) = if let Some(r) = text.strip_prefix("set ") {
        (true, r)
    } else if let Some(r) = text.strip_prefix("held ") {
        (true, r)
    } else if let Some(r) = text.strip_prefix("cleared ") {
        (false, r)
    } else if let Some(r) = text.strip_prefix("deactivate ") {
        (true, r)
    } else if let Some(r) = text.strip_prefix("activate ") {
        (false, r)
    } else {
        return None;
    };
    let legacy_verb = text.starts_with("activate") || text.starts_with("deactivate");
    let rest = rest
        .strip_prefix("reason=")
        .or_else(|| rest.strip_prefix("bit="))?;
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    let number: u32 = rest.get(..digits)?.parse().ok()?;
    let mut rest = rest.get(digits..)?.trim_start_matches(',').trim_start();
    let mut inhibits = None;
    if let Some(r) = rest.strip_prefix("inhibits=") {
        let r = r.strip_prefix("0x").unwrap_or(r);
        let n = r.bytes().take_while(u8::is_ascii_hexdigit).count();
        inhibits = Some(u64::from_str_radix(r.get(..n)?, 16).ok()?);
        rest = r.get(n..)?.trim_start();
    }
    let mut named = None;
    let mut legacy = legacy_verb;
    if let Some(inner) = rest.strip_prefix('(') {
        let (name, tail) = inner.split_once(')')?;
        named = Some(Inhibit::from_name(name)?);
        rest = tail.trim_start();
    } else if let (true, Some(mask)) = (set, inhibits)
        && !rest.is_empty()
        && !rest.starts_with("legacy")
    {
        named = mask_names(mask, rest)
            .into_iter()
            .find_map(|(bit, r)| (bit == number).then_some(r));
    }
    if rest.starts_with("legacy") {
        legacy = true;
    }
    if legacy && named.is_none() {
        named = ERAS[0].reasons.get(number as usize).copied();
    }
    Some(Change {
        set,
        number,
        inhibits,
        named,
        legacy,
        held,
    })
}

/// The names printed after a mask (`IRQWIN|PIT_REINJ`), paired with their bits: the names
/// follow the set bits in ascending order. Empty when the names do not match the mask.
pub(crate) fn mask_names(mask: u64, text: &str) -> Vec<(u32, Inhibit)> {
    let Some(word) = text.split_whitespace().next() else {
        return Vec::new();
    };
    let names: Vec<&str> = word.split('|').collect();
    if names.len() != mask.count_ones() as usize {
        return Vec::new();
    }
    let bits = (0..64u32).filter(|b| mask & (1u64 << b) != 0);
    let mut out = Vec::new();
    for (bit, name) in bits.zip(names) {
        match Inhibit::from_name(name) {
            Some(r) => out.push((bit, r)),
            None => return Vec::new(),
        }
    }
    out
}

/// The text after the mask of a `kvm_apicv_inhibit_changed` line: the printed names, if any.
pub(crate) fn names_text(text: &str) -> &str {
    text.find("inhibits=")
        .and_then(|i| text.get(i..))
        .and_then(|t| t.find(' ').and_then(|j| t.get(j + 1..)))
        .unwrap_or("")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_era_numbers_each_reason_once() {
        for e in ERAS {
            for (i, r) in e.reasons.iter().enumerate() {
                assert_eq!(
                    e.reasons.iter().position(|x| x == r),
                    Some(i),
                    "{}",
                    e.kernels
                );
            }
        }
    }

    #[test]
    fn lines_of_every_era() {
        let c = parse("set reason=9, inhibits=0x200 PIT_REINJ").unwrap();
        assert_eq!((c.set, c.number, c.named), (true, 9, Some(I::PitReinj)));
        let c = parse("set reason=8, inhibits=0x301 DISABLED|IRQWIN|PIT_REINJ").unwrap();
        assert_eq!(c.named, Some(I::Irqwin));
        let c = parse("cleared reason=8, inhibits=0x200 PIT_REINJ").unwrap();
        assert_eq!((c.set, c.named), (false, None));
        assert_eq!(c.reasons(), [I::Sev, I::PitReinj, I::Irqwin]);
        let c = parse("set reason=4, inhibits=0x10").unwrap();
        assert_eq!(
            c.reasons(),
            [I::PitReinj, I::ApicIdModified, I::PhysicalIdAliased]
        );
        let c = parse("deactivate reason=4").unwrap();
        assert_eq!((c.set, c.named, c.legacy), (true, Some(I::PitReinj), true));
        let c = parse("set reason=1 (HYPERV)").unwrap();
        assert_eq!(c.named, Some(I::Hyperv));
        let c2 = parse("set reason=4, inhibits=0x30 PHYS_ID_ALIASED|APIC_ID_MOD").unwrap();
        assert_eq!(c2.named, Some(I::PhysicalIdAliased));
        assert_eq!(
            mask_names(
                0x300,
                names_text("cleared reason=8, inhibits=0x300 IRQWIN|PIT_REINJ")
            ),
            [(8, I::Irqwin), (9, I::PitReinj)]
        );
        let h = parse("held reason=9 (PIT_REINJ)").unwrap();
        assert!(h.held && h.set);
        for c in [c, parse("deactivate reason=5").unwrap(), h] {
            assert_eq!(
                parse(&c.key()),
                Some(Change {
                    inhibits: None,
                    ..c
                })
            );
        }
        assert_eq!(parse("set reason=, inhibits=0x0"), None);
        assert_eq!(parse("set reason=99999999999"), None);
    }
}

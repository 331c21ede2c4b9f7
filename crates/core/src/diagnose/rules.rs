//! The rule registry: every diagnosis rule as a type. A family (`timer`, `apic`, `io`, …: the
//! prefix of its rules' ids) declares its rules once, in `hypotheses/<family>.rs`, with
//! [`rules!`] — each rule's id, cause tag, role and thresholds — which makes the family's enum
//! (`TimerRule`, …). `families!` below joins the families into [`RuleId`] and [`Family`].
//!
//! Everything that must know every rule matches on these types exhaustively: the words
//! (`words/<family>.rs`: title, meaning, sources, cause, fixes), the checks, the catalogue and
//! docs/findings.md. A rule without words, or a misspelled rule, does not compile.

use serde::Serialize;

use super::model::Role;

/// A rule of the catalogue, as its family declares it.
#[derive(Debug, Clone, Copy)]
pub struct Rule {
    pub id: RuleId,
    /// The cause tag of the case corpus.
    pub tag: &'static str,
    /// Context findings never lead the list.
    pub role: Role,
    pub thresholds: &'static [Threshold],
}

/// A number a rule compares with, and what it means.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Threshold {
    pub name: &'static str,
    pub value: f64,
    /// `share`, `/s`, `/s per vCPU`, `ns`, `exits`.
    pub unit: &'static str,
}

/// Declares a family's rules: the family's enum, and for each rule its id (`family.name`), its
/// cause tag, its role (`Problem` or `Context`) and its thresholds.
///
/// ```ignore
/// rules! {
///     /// The rules of `cpuid.*`.
///     pub enum CpuidRule in Cpuid {
///         /// CPUID in a hot loop.
///         Storm { id: "cpuid.storm", tag: "cpuid.storm", role: Problem, thresholds: SHARE },
///     }
/// }
/// ```
macro_rules! rules {
    (
        $(#[$meta:meta])*
        pub enum $name:ident in $family:ident {
            $(
                $(#[$vmeta:meta])*
                $variant:ident {
                    id: $id:literal,
                    tag: $tag:literal,
                    role: $role:ident,
                    thresholds: $thresholds:expr $(,)?
                }
            ),* $(,)?
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum $name {
            $( $(#[$vmeta])* $variant, )*
        }

        impl $name {
            /// Every rule of the family, in catalogue order.
            pub const ALL: &'static [$name] = &[$($name::$variant),*];

            /// The rule's id: `family.name`.
            pub const fn id(self) -> &'static str {
                match self {
                    $($name::$variant => $id,)*
                }
            }

            /// The rule's declaration.
            pub const fn rule(self) -> $crate::diagnose::rules::Rule {
                match self {
                    $($name::$variant => $crate::diagnose::rules::Rule {
                        id: $crate::diagnose::rules::RuleId::$family($name::$variant),
                        tag: $tag,
                        role: $crate::diagnose::model::Role::$role,
                        thresholds: $thresholds,
                    },)*
                }
            }
        }

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.id())
            }
        }

        impl PartialEq<&str> for $name {
            fn eq(&self, other: &&str) -> bool {
                self.id() == *other
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.id())
            }
        }

        impl From<$name> for $crate::diagnose::rules::RuleId {
            fn from(r: $name) -> Self {
                $crate::diagnose::rules::RuleId::$family(r)
            }
        }
    };
}
pub(crate) use rules;

/// Joins the families: `Family`, and `RuleId` with a variant per family holding its enum.
macro_rules! families {
    ($( $(#[$meta:meta])* $family:ident($module:ident::$rule:ident) = $name:literal, )*) => {
        /// A family of rules: the prefix of their ids, one `hypotheses/<family>.rs` and one
        /// `words/<family>.rs`. In catalogue order.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
        #[serde(rename_all = "lowercase")]
        pub enum Family {
            $( $(#[$meta])* $family, )*
        }

        impl Family {
            /// Every family, in catalogue order.
            pub const ALL: &'static [Family] = &[$(Family::$family),*];

            /// The prefix of the family's rule ids.
            pub const fn name(self) -> &'static str {
                match self {
                    $(Family::$family => $name,)*
                }
            }

            /// The family's rules, in catalogue order.
            pub fn rules(self) -> Vec<RuleId> {
                match self {
                    $(Family::$family => super::hypotheses::$module::$rule::ALL
                        .iter()
                        .map(|&r| RuleId::$family(r))
                        .collect(),)*
                }
            }
        }

        /// A diagnosis rule: which family, and which of its rules.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum RuleId {
            $( $family(super::hypotheses::$module::$rule), )*
        }

        impl RuleId {
            /// The rule's id, as findings, the catalogue and the case corpus spell it.
            pub const fn as_str(self) -> &'static str {
                match self {
                    $(RuleId::$family(r) => r.id(),)*
                }
            }

            pub const fn family(self) -> Family {
                match self {
                    $(RuleId::$family(_) => Family::$family,)*
                }
            }

            /// The rule's declaration.
            pub const fn rule(self) -> Rule {
                match self {
                    $(RuleId::$family(r) => r.rule(),)*
                }
            }
        }
    };
}

families! {
    Unknown(unknown::UnknownRule) = "unknown",
    Arch(arch::ArchRule) = "arch",
    Emulation(emulation::EmulationRule) = "emulation",
    Nested(nested::NestedRule) = "nested",
    Mmu(mmu::MmuRule) = "mmu",
    Spin(spin::SpinRule) = "spin",
    Timer(timer::TimerRule) = "timer",
    Apic(apic::ApicRule) = "apic",
    Io(io::IoRule) = "io",
    Msr(msr::MsrRule) = "msr",
    Mmio(mmio::MmioRule) = "mmio",
    Halt(halt::HaltRule) = "halt",
    Hypercall(hypercall::HypercallRule) = "hypercall",
    Cpuid(cpuid::CpuidRule) = "cpuid",
    Sched(sched::SchedRule) = "sched",
    Hv(hv::HvRule) = "hv",
    Irq(irq::IrqRule) = "irq",
    Idle(idle::IdleRule) = "idle",
    Hostlog(hostlog::HostlogRule) = "hostlog",
}

impl Family {
    /// Whether the family's rules are about x86 alone (its ports, MSRs, APIC, timers, Hyper-V
    /// enlightenments, instructions): they do not run on exits of arm64 or RISC-V.
    pub fn x86_only(self) -> bool {
        match self {
            Family::Unknown
            | Family::Arch
            // The log's own lines say which architecture they come from.
            | Family::Hostlog
            | Family::Halt
            | Family::Sched
            | Family::Irq
            | Family::Idle => false,
            Family::Emulation
            | Family::Nested
            | Family::Mmu
            | Family::Spin
            | Family::Timer
            | Family::Apic
            | Family::Io
            | Family::Msr
            | Family::Mmio
            | Family::Hypercall
            | Family::Cpuid
            | Family::Hv => true,
        }
    }
}

impl RuleId {
    /// Every rule, family by family in catalogue order.
    pub fn all() -> Vec<RuleId> {
        Family::ALL.iter().flat_map(|f| f.rules()).collect()
    }

    /// The rule whose id is `id`.
    pub fn parse(id: &str) -> Option<RuleId> {
        RuleId::all().into_iter().find(|r| r.as_str() == id)
    }
}

impl std::fmt::Display for RuleId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_id_is_its_familys_and_unique() {
        let all = RuleId::all();
        let mut ids: Vec<&str> = all.iter().map(|r| r.as_str()).collect();
        for r in &all {
            let (family, name) = r.as_str().split_once('.').unwrap_or_default();
            assert_eq!(family, r.family().name(), "{r}: id outside its family");
            assert!(!name.is_empty(), "{r}: no name after the family");
            assert_eq!(r.rule().id, *r, "{r}: declared under another id");
            assert_eq!(RuleId::parse(r.as_str()), Some(*r));
        }
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), all.len(), "duplicate ids");
    }
}

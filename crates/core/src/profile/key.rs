//! What a profile row counts: an exit reason, an IO port, an MMIO address, an MSR, or another
//! named event, with the access direction where the source distinguishes it.

use std::fmt;

use serde::{Deserialize, Serialize};

/// The direction of an access, as `perf kvm stat` keys show it (`:POUT`, `:PIN`, `:W`, `:R`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Access {
    Read,
    Write,
    In,
    Out,
}

impl Access {
    /// The suffix `perf kvm stat` prints after the address.
    pub fn perf_suffix(self) -> &'static str {
        match self {
            Access::Read => "R",
            Access::Write => "W",
            Access::In => "PIN",
            Access::Out => "POUT",
        }
    }

    /// A short word for text output.
    pub fn word(self) -> &'static str {
        match self {
            Access::Read => "read",
            Access::Write => "write",
            Access::In => "in",
            Access::Out => "out",
        }
    }
}

/// The identity of a row. Two rows with equal keys (and VM/vCPU) are the same thing and merge.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Key {
    /// A VM-exit reason: its canonical name and numeric code when known. An unknown code keeps
    /// its number in both fields (`UNKNOWN(0x20000)`), never merged with other unknown codes.
    Exit { code: Option<u64>, name: String },
    /// An IO port access.
    Port { port: u64, access: Option<Access> },
    /// A guest-physical MMIO access.
    Mmio { gpa: u64, access: Option<Access> },
    /// An MSR access.
    Msr { index: u64, access: Option<Access> },
    /// Any other named event (a tracepoint, a counter, a key this source could not decode).
    Event { name: String },
    /// The guest code an exit came from: the exit reason's canonical name and the guest's
    /// instruction pointer at the exit (`kvm_exit`'s `rip` / `guest_rip`).
    GuestRip { reason: String, rip: u64 },
}

impl Key {
    /// The key of the exit reason named `name` in any era's spelling, under `isa` (its
    /// canonical name and code); a name no table knows stays as written, without a code.
    pub fn exit_named(isa: Option<crate::decode::Isa>, name: &str) -> Key {
        match crate::decode::exit_reason::lookup_name(isa, name) {
            Some(info) => Key::Exit {
                name: info.name.to_string(),
                code: Some(info.code),
            },
            None => Key::Exit {
                name: name.to_string(),
                code: None,
            },
        }
    }

    /// The key as JSON shows it: the exit name, or the port/address/MSR in hex.
    pub fn key_text(&self) -> String {
        match self {
            Key::Exit { name, .. } | Key::Event { name } => name.clone(),
            Key::Port { port: n, .. } | Key::Mmio { gpa: n, .. } | Key::Msr { index: n, .. } => {
                format!("{n:#x}")
            }
            Key::GuestRip { reason, rip } => format!("{reason}@{rip:#x}"),
        }
    }

    /// The numeric code: exit code, port, address, MSR index or guest RIP.
    pub fn code(&self) -> Option<u64> {
        match self {
            Key::Exit { code, .. } => *code,
            Key::Port { port: n, .. }
            | Key::Mmio { gpa: n, .. }
            | Key::Msr { index: n, .. }
            | Key::GuestRip { rip: n, .. } => Some(*n),
            Key::Event { .. } => None,
        }
    }

    /// The access direction, for ports, MMIO and MSRs.
    pub fn access(&self) -> Option<Access> {
        match self {
            Key::Port { access, .. } | Key::Mmio { access, .. } | Key::Msr { access, .. } => {
                *access
            }
            _ => None,
        }
    }

    /// Parses a `perf kvm stat` address key such as `0xc090:POUT`, `0xfee00380:W` or `0x6e0:R`
    /// into its number and direction. `None` when the text is not of that shape.
    pub fn parse_perf_address(text: &str) -> Option<(u64, Option<Access>)> {
        let (num, suffix) = match text.split_once(':') {
            Some((n, s)) => (n, Some(s)),
            None => (text, None),
        };
        let hex = num.strip_prefix("0x").or_else(|| num.strip_prefix("0X"))?;
        let value = u64::from_str_radix(hex, 16).ok()?;
        let access = match suffix {
            None => None,
            Some("W") => Some(Access::Write),
            Some("R") => Some(Access::Read),
            Some("POUT") => Some(Access::Out),
            Some("PIN") => Some(Access::In),
            Some(_) => return None,
        };
        Some((value, access))
    }
}

impl fmt::Display for Key {
    /// `perf kvm stat`'s own spelling: `HLT`, `0x608:PIN`, `0x6e0:W`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.access() {
            Some(a) => write!(f, "{}:{}", self.key_text(), a.perf_suffix()),
            None => f.write_str(&self.key_text()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn perf_address_keys() {
        assert_eq!(
            Key::parse_perf_address("0xc090:POUT"),
            Some((0xc090, Some(Access::Out)))
        );
        assert_eq!(
            Key::parse_perf_address("0xfee00380:W"),
            Some((0xfee0_0380, Some(Access::Write)))
        );
        assert_eq!(
            Key::parse_perf_address("0x3b:R"),
            Some((0x3b, Some(Access::Read)))
        );
        assert_eq!(Key::parse_perf_address("0x3b:X"), None);
        assert_eq!(Key::parse_perf_address("HLT"), None);
        assert_eq!(Key::parse_perf_address("0x:W"), None);
    }

    #[test]
    fn display_uses_perf_spelling() {
        let k = Key::Port {
            port: 0x608,
            access: Some(Access::In),
        };
        assert_eq!(k.to_string(), "0x608:PIN");
        assert_eq!(k.key_text(), "0x608");
    }
}

//! The CPU mode a lab guest runs in.

use std::fmt;

use serde::{Deserialize, Serialize};

/// The CPU mode (and privilege level) of a micro-VM guest.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// 16-bit real mode.
    Real,
    /// 32-bit protected mode, ring 0, no paging.
    Prot32,
    /// 64-bit long mode, ring 0 (a guest kernel).
    Long64,
    /// 64-bit long mode, ring 3 (guest user space), with a TSS I/O bitmap that allows every port.
    User64,
}

impl Mode {
    /// Every mode, in the order results are shown.
    pub const ALL: [Mode; 4] = [Mode::Real, Mode::Prot32, Mode::Long64, Mode::User64];

    /// The name used on the command line and in JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Real => "real",
            Mode::Prot32 => "prot32",
            Mode::Long64 => "long64",
            Mode::User64 => "user64",
        }
    }

    /// The mode named `name` (the inverse of [`Mode::as_str`]).
    pub fn from_name(name: &str) -> Option<Mode> {
        Mode::ALL.into_iter().find(|m| m.as_str() == name)
    }

    /// A phrase for text output.
    pub fn describe(self) -> &'static str {
        match self {
            Mode::Real => "16-bit real mode",
            Mode::Prot32 => "32-bit protected mode, ring 0",
            Mode::Long64 => "64-bit long mode, ring 0 (guest kernel)",
            Mode::User64 => "64-bit long mode, ring 3 (guest user space)",
        }
    }

    /// A short phrase for tables and summaries.
    pub fn short(self) -> &'static str {
        match self {
            Mode::Real => "16-bit real mode",
            Mode::Prot32 => "32-bit ring 0",
            Mode::Long64 => "64-bit ring 0",
            Mode::User64 => "64-bit ring 3",
        }
    }

    /// The code size of the mode's instructions (16, 32 or 64).
    pub fn bitness(self) -> u32 {
        match self {
            Mode::Real => 16,
            Mode::Prot32 => 32,
            Mode::Long64 | Mode::User64 => 64,
        }
    }

    /// Whether guest code runs at CPL 3.
    pub fn is_user(self) -> bool {
        self == Mode::User64
    }
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for m in Mode::ALL {
            assert_eq!(Mode::from_name(m.as_str()), Some(m));
        }
        assert_eq!(Mode::from_name("v86"), None);
        assert_eq!(Mode::User64.bitness(), 64);
        assert!(Mode::User64.is_user() && !Mode::Long64.is_user());
    }
}

//! Building fixes: a builder for one guest's fix, and the Hyper-V flag fix as both QEMU flags
//! and libvirt XML (through lint's snippets), for the flags the configuration lacks.

use crate::config::HvFlag;
use crate::diagnose::evidence::EvidenceSet;
use crate::diagnose::model::{Fix, ForGuest};
use crate::lint::fix;

/// A fix under construction.
pub(super) struct F(Fix);

impl F {
    pub(super) fn new(guest: ForGuest, summary: &str) -> F {
        F(Fix {
            guest,
            summary: summary.to_string(),
            qemu: None,
            libvirt: None,
            host: None,
            in_guest: None,
            advice: Vec::new(),
        })
    }

    pub(super) fn qemu(mut self, s: &str) -> F {
        self.0.qemu = Some(s.to_string());
        self
    }

    pub(super) fn libvirt(mut self, s: &str) -> F {
        self.0.libvirt = Some(s.to_string());
        self
    }

    pub(super) fn host(mut self, s: &str) -> F {
        self.0.host = Some(s.to_string());
        self
    }

    pub(super) fn guest(mut self, s: &str) -> F {
        self.0.in_guest = Some(s.to_string());
        self
    }

    pub(super) fn advice(mut self, tags: &[&'static str]) -> F {
        self.0.advice.extend_from_slice(tags);
        self
    }

    pub(super) fn done(self) -> Fix {
        self.0
    }
}

/// A Windows fix turning on `flags` (those the configuration lacks, all of them without a
/// configuration), as QEMU flags and libvirt XML.
pub(super) fn hv_fix(
    ev: &EvidenceSet,
    summary: &str,
    flags: &[HvFlag],
    advice: &[&'static str],
) -> Fix {
    let missing: Vec<HvFlag> = flags
        .iter()
        .copied()
        .filter(|f| ev.flag(*f) != Some(true))
        .collect();
    let use_flags = if missing.is_empty() { flags } else { &missing };
    let l = fix::add(summary, use_flags);
    Fix {
        guest: ForGuest::Windows,
        summary: l.summary,
        qemu: l.qemu,
        libvirt: l.libvirt,
        host: None,
        in_guest: None,
        advice: advice.to_vec(),
    }
}

//! Which guest runs: stated (`--guest`, the configuration's OS id), or inferred from what only
//! one guest does — Hyper-V synthetic MSRs and hypercalls (Windows), KVM paravirtual MSRs and
//! events (Linux), hypercall exits without Linux signs (Windows, weakly: Linux guests use KVM
//! hypercalls for PV IPIs too), RTC ports at a timer's rate (Windows), `io_delay` writes to port
//! 0x80 (Linux), the configuration's hv-* flags — with the basis and the rows that show it.

use serde::Serialize;

use crate::config::{GuestFamily, GuestSource, VmConfig, WinGen};
use crate::decode::ioport;
use crate::profile::{Access, Key};

use super::super::model::Fact;
use super::counters::Counters;
use super::rows::sat_sum;
use super::rows::{Part, ratio};

/// How the guest is known.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum GuestBasis {
    /// `--guest`.
    Option,
    /// The configuration's libosinfo id or OS type.
    ConfigOs,
    /// Hyper-V synthetic MSRs or Hyper-V hypercalls in the profile.
    HypervInterface,
    /// KVM paravirtual MSRs (kvmclock, steal time, PV EOI, async PF) or events.
    KvmParavirt,
    /// Hypercall exits and no Linux sign.
    Hypercalls,
    /// RTC ports accessed at a periodic timer's rate.
    RtcTimer,
    /// Writes to port 0x80 (Linux's io_delay).
    IoDelay,
    /// The configuration turns on Hyper-V enlightenments.
    ConfigHvFlags,
    /// Nothing says.
    None,
}

/// How sure the guest is: stated and strong inferences pick one guest's words; weak ones pick
/// it first and give the other guest's words too, labelled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Strength {
    None,
    Weak,
    Strong,
    Stated,
}

/// The guest a diagnosis assumed, and why.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Guest {
    pub family: GuestFamily,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub windows: Option<WinGen>,
    pub basis: GuestBasis,
    pub strength: Strength,
    /// The configuration id (`win11`, `l26`) when the basis is the configuration's OS.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub config_id: Option<String>,
    /// The rows that show it.
    pub signs: Vec<Fact>,
}

/// Hyper-V synthetic MSRs (0x40000000–0x400001ff).
pub(crate) fn is_hyperv_msr(index: u64) -> bool {
    (0x4000_0000..=0x4000_01ff).contains(&index)
}

/// KVM paravirtual MSRs (0x4b564d00–0x4b564dff) and the old kvmclock pair (0x11, 0x12).
pub(crate) fn is_kvm_msr(index: u64) -> bool {
    (0x4b56_4d00..=0x4b56_4dff).contains(&index) || matches!(index, 0x11 | 0x12)
}

/// Events only a Linux guest's paravirtual features make the host fire.
const LINUX_EVENTS: [&str; 4] = [
    "kvm_pv_eoi",
    "kvm_async_pf_ready",
    "kvm_async_pf_not_present",
    "kvm_pv_tlb_flush",
];

/// The guest of one input.
pub(crate) struct Signs<'a> {
    pub exits: Option<&'a Part>,
    pub ports: Option<&'a Part>,
    pub msrs: Option<&'a Part>,
    pub counters: &'a Counters,
    pub events: &'a std::collections::BTreeMap<String, u64>,
}

/// The guest: `--guest`, else the configuration's OS id, else what the profile shows.
pub(crate) fn resolve(
    given: Option<GuestFamily>,
    config: Option<&VmConfig>,
    s: &Signs<'_>,
) -> Guest {
    let from_config = config.map(|c| &c.guest);
    let windows = from_config.and_then(|g| g.windows);
    let guest = |family, basis, strength, signs| Guest {
        family,
        windows: windows.filter(|_| family == GuestFamily::Windows),
        basis,
        strength,
        config_id: None,
        signs,
    };
    if let Some(family) = given {
        return guest(family, GuestBasis::Option, Strength::Stated, Vec::new());
    }
    if let Some(g) = from_config.filter(|g| {
        g.family != GuestFamily::Unknown
            && matches!(g.source, GuestSource::Libosinfo | GuestSource::Ostype)
    }) {
        let mut out = guest(g.family, GuestBasis::ConfigOs, Strength::Stated, Vec::new());
        out.config_id = g.id.clone();
        return out;
    }
    let msr_facts = |pred: fn(u64) -> bool| -> Vec<Fact> {
        s.msrs.map_or_else(Vec::new, |m| {
            m.rows
                .iter()
                .filter(|r| matches!(r.key, Key::Msr { index, .. } if pred(index)))
                .map(|r| m.fact(r).context())
                .collect()
        })
    };
    let event_facts = |names: &[&str]| -> Vec<Fact> {
        names
            .iter()
            .filter_map(|n| {
                let count = s
                    .events
                    .get(*n)
                    .copied()
                    .filter(|&c| c > 0)
                    .or_else(|| s.counters.get(n).map(|c| c.total).filter(|&c| c > 0))?;
                let mut f = Fact::said("events", *n, "");
                f.note = None;
                f.count = count;
                Some(f)
            })
            .collect()
    };
    let mut hv = msr_facts(is_hyperv_msr);
    hv.extend(event_facts(&["kvm_hv_hypercall"]));
    if !hv.is_empty() {
        return guest(
            GuestFamily::Windows,
            GuestBasis::HypervInterface,
            Strength::Strong,
            hv,
        );
    }
    let mut pv = msr_facts(is_kvm_msr);
    pv.extend(event_facts(&LINUX_EVENTS));
    if !pv.is_empty() {
        return guest(
            GuestFamily::Linux,
            GuestBasis::KvmParavirt,
            Strength::Strong,
            pv,
        );
    }
    if let Some(c) = config
        && c.effective().any_enlightenment()
    {
        return guest(
            GuestFamily::Windows,
            GuestBasis::ConfigHvFlags,
            Strength::Weak,
            Vec::new(),
        );
    }
    if let Some(ex) = s.exits {
        let calls = ex.named(&["VMCALL", "VMMCALL", "hypercalls", "kvm_hypercall"]);
        let n = sat_sum(calls.iter().map(|r| r.count));
        let whole = ex.totals.overhead_count.max(1);
        if n >= 100 && ratio(n, whole) >= 0.005 {
            let signs = calls.iter().map(|r| ex.fact(r).context()).collect();
            return guest(
                GuestFamily::Windows,
                GuestBasis::Hypercalls,
                Strength::Weak,
                signs,
            );
        }
    }
    if let Some(p) = s.ports {
        let port_of = |pred: fn(u16) -> bool, write_only: bool| -> Vec<Fact> {
            p.rows
                .iter()
                .filter(|r| match r.key {
                    Key::Port { port, access } => {
                        u16::try_from(port).is_ok_and(pred)
                            && !(write_only && access == Some(Access::In))
                    }
                    _ => false,
                })
                .map(|r| p.fact(r).context())
                .collect()
        };
        let rtc = port_of(ioport::is_rtc, false);
        let rtc_n = sat_sum(rtc.iter().map(|f| f.count));
        if rtc_n >= 1000 && ratio(rtc_n, p.totals.count) >= 0.2 {
            return guest(
                GuestFamily::Windows,
                GuestBasis::RtcTimer,
                Strength::Weak,
                rtc,
            );
        }
        let delay = port_of(|x| x == 0x80, true);
        if delay.iter().any(|f| f.count > 0) {
            return guest(
                GuestFamily::Linux,
                GuestBasis::IoDelay,
                Strength::Weak,
                delay,
            );
        }
    }
    guest(
        GuestFamily::Unknown,
        GuestBasis::None,
        Strength::None,
        Vec::new(),
    )
}

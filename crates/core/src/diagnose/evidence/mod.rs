//! Evidence: everything one input carries, as one set per VM — every table merged by kind
//! (exit reasons, IO ports, MMIO addresses, MSRs), the breakdown tables joined to the exits
//! they break down (IO_INSTRUCTION ↔ ports, EPT_MISCONFIG/NPF ↔ MMIO addresses, MSR_WRITE ↔
//! MSRs), kvm_stat's `kvm_exit(REASON)` children and tracepoint counters with their rates, trace
//! events by name, the time base (window, printed rates, vCPUs), the guest (stated or inferred,
//! with its basis), the host and the configuration. Rules read this, never a source's layout.
//!
//! A new kind of evidence (like [`sched`]: the vCPU threads' scheduler samples; IO benchmarks,
//! Hyper-V counters) is one more field here filled by one more file, read by one more
//! hypotheses file.

pub(crate) mod counters;
pub(crate) mod guest;
pub(crate) mod host;
pub(crate) mod hostlog;
pub(crate) mod hv;
pub(crate) mod inhibits;
pub(crate) mod io;
pub(crate) mod rate;
pub(crate) mod rows;
pub(crate) mod sched;

use std::collections::BTreeMap;

use serde::Serialize;

use crate::config::{GuestFamily, HvFlag, VmConfig};
use crate::decode::{Decoder, ExitClass, Isa};
use crate::facts::HostFacts;
use crate::profile::{Key, Profile, Table, TableKind};

use super::model::Fact;
pub(crate) use counters::Counters;
pub(crate) use guest::{Guest, is_hyperv_msr};
pub use guest::{GuestBasis, Strength};
pub use host::VendorBasis;
pub(crate) use host::{ConfigInfo, Host};
pub(crate) use rate::Rate;
pub use rate::{VcpuBasis, WindowBasis};
pub(crate) use rows::{Item, Part, known_exit, ratio, sat_sum};

/// One diagnosed input: a file, or one labelled table set of a file.
#[derive(Debug, Clone, Serialize)]
pub struct Input {
    /// 1-based, in the order given (as `compare` numbers them).
    pub number: usize,
    pub name: String,
    pub path: Option<String>,
    pub label: Option<String>,
    /// The source format (`perf-kvm-stat`, `kvm-stat`, …).
    pub format: String,
}

/// What the user said besides the inputs.
#[derive(Debug, Clone, Default)]
pub struct Given<'a> {
    pub guest: Option<GuestFamily>,
    pub host: HostFacts,
    pub qemu_version: Option<crate::config::Version>,
    pub config: Option<&'a VmConfig>,
    /// `--window SECONDS`.
    pub window_s: Option<f64>,
    /// `--vcpus N`.
    pub vcpus: Option<u32>,
    /// `--iops N` / `--fio FILE`.
    pub io: Option<io::IoRate>,
    /// The kernel-log tables of the run's kernel-log inputs, joined with every other input.
    pub host_log: Vec<Table>,
}

/// Everything known about one input.
#[derive(Debug, Clone)]
pub struct EvidenceSet {
    pub input: Input,
    pub exits: Option<Part>,
    pub ports: Option<Part>,
    pub mmio: Option<Part>,
    pub msrs: Option<Part>,
    pub counters: Counters,
    /// Trace events counted by name (`kvm_apicv_inhibit_changed`, `kvm_nested_vmexit`, …).
    pub events: BTreeMap<String, u64>,
    /// Exits to userspace by reason (`KVM_EXIT_IO`, `KVM_EXIT_INTERNAL_ERROR`, …).
    pub userspace: BTreeMap<String, u64>,
    /// APICv/AVIC inhibit changes by reason (`kvm_apicv_inhibit_changed`), most sets first.
    pub inhibits: Vec<inhibits::InhibitSeen>,
    pub rate: Rate,
    pub guest: Guest,
    pub host: Host,
    pub config: Option<ConfigInfo>,
    /// The vCPU threads' scheduler samples (live captures).
    pub sched: Option<crate::analysis::sched::SchedSummary>,
    /// The input's exits per IO, when the IO rate was given.
    pub io: Option<io::IoView>,
    /// Hyper-V / esxtop performance counters.
    pub hv: Option<hv::HvEvidence>,
    /// The host's kernel log: this input's, or one given beside it.
    pub host_log: Option<hostlog::HostLog>,
}

impl EvidenceSet {
    /// The evidence of `tables` (one input of `profile`) under what the user gave.
    pub fn gather(
        input: Input,
        profile: &Profile,
        tables: &[&Table],
        decoder: &Decoder,
        given: &Given<'_>,
    ) -> EvidenceSet {
        let isa = tables.iter().find_map(|t| t.isa).or(profile.origin.isa);
        let part = |kind: TableKind| rows::part(kind, tables, isa, decoder);
        let counters = Counters::of(tables);
        let mut exits = part(TableKind::Vmexit).or_else(|| counters::exit_part(tables, &counters));
        let mut ports = part(TableKind::Ioport);
        let mut mmio = part(TableKind::Mmio);
        let mut msrs = part(TableKind::Msr);
        let mut events = BTreeMap::new();
        let mut userspace = BTreeMap::new();
        for t in tables {
            let (map, name) = match &t.kind {
                TableKind::Events => (&mut events, None),
                TableKind::Hypercall => (&mut events, Some("hypercall")),
                TableKind::UserspaceExit => (&mut userspace, None),
                _ => continue,
            };
            for r in &t.rows {
                let key = name.map_or_else(|| r.key.key_text(), str::to_string);
                let n = map.entry(key).or_insert(0u64);
                *n = n.saturating_add(r.count);
            }
        }
        let host = Host::of(&given.host, isa, &profile.origin, given.qemu_version);
        if host.cpu_emulated() {
            // The times are the emulator's: weigh exits by typical hardware costs instead, as
            // for an input without durations (idle rows keep theirs: time the guest waited).
            for p in [&mut exits, &mut ports, &mut mmio, &mut msrs]
                .into_iter()
                .flatten()
            {
                p.forget_handling_times();
            }
        }
        let guest = guest::resolve(
            given.guest,
            given.config,
            &guest::Signs {
                exits: exits.as_ref(),
                ports: ports.as_ref(),
                msrs: msrs.as_ref(),
                counters: &counters,
                events: &events,
            },
        );
        let config = given.config.map(|c| ConfigInfo::of(c, &host, guest.family));
        let vcpus = given.vcpus.map(|n| (n, VcpuBasis::Option)).or_else(|| {
            config
                .as_ref()
                .and_then(|c| c.effective.vcpus)
                .map(|n| (n, VcpuBasis::Config))
        });
        let printed = rows::printed_rates(tables);
        let rate = Rate::of(
            &[ports.as_ref(), mmio.as_ref(), msrs.as_ref()],
            exits.as_ref(),
            given.window_s,
            vcpus,
            !printed.is_empty(),
        );
        for p in [&mut exits, &mut ports, &mut mmio, &mut msrs]
            .into_iter()
            .flatten()
        {
            rate.fill(p, &printed);
        }
        let mut ev = EvidenceSet {
            input,
            exits,
            ports,
            mmio,
            msrs,
            counters,
            events,
            userspace,
            inhibits: inhibits::gather(tables),
            rate,
            guest,
            host,
            config,
            sched: sched::of(profile, tables),
            io: None,
            hv: hv::HvEvidence::of(profile, given.io.as_ref().map(|r| r.iops))
                .filter(|h| !h.is_empty()),
            host_log: hostlog::HostLog::of(tables.iter().copied(), false)
                .or_else(|| hostlog::HostLog::of(&given.host_log, true)),
        };
        ev.io = given
            .io
            .as_ref()
            .filter(|r| r.iops.is_finite() && r.iops > 0.0)
            .map(|r| io::IoView::of(&ev, r));
        ev
    }

    /// True when the input holds nothing the rules can read.
    pub fn is_empty(&self) -> bool {
        self.exits.is_none()
            && self.ports.is_none()
            && self.mmio.is_none()
            && self.msrs.is_none()
            && self.counters.is_empty()
            && self.events.is_empty()
            && self.sched.is_none()
            && self.hv.is_none()
            && self.host_log.as_ref().is_none_or(|l| l.rows.is_empty())
    }

    /// How many events the input counts: the largest of its exit and breakdown tables.
    pub fn size(&self) -> u64 {
        [&self.exits, &self.ports, &self.mmio, &self.msrs]
            .into_iter()
            .flatten()
            .map(|p| p.totals.count)
            .max()
            .unwrap_or(0)
    }

    pub fn isa(&self) -> Option<Isa> {
        self.host.isa
    }

    pub fn windows(&self) -> bool {
        self.guest.family == GuestFamily::Windows
    }

    pub fn linux(&self) -> bool {
        self.guest.family == GuestFamily::Linux
    }

    /// Whether the configuration turns `flag` on (`None` without a configuration).
    pub fn flag(&self, flag: HvFlag) -> Option<bool> {
        self.config.as_ref().map(|c| c.flag(flag))
    }

    /// The table that breaks exits of `class` down by key, when the input has it: ports for IO,
    /// addresses for MMIO, MSR indexes for MSR exits.
    pub fn breakdown(&self, class: ExitClass) -> Option<&Part> {
        match class {
            ExitClass::Io => self.ports.as_ref(),
            ExitClass::Mmio => self.mmio.as_ref(),
            ExitClass::Msr => self.msrs.as_ref(),
            _ => None,
        }
    }

    /// Rows showing the guest uses the Hyper-V interface: hypercall exits, Hyper-V MSRs.
    pub fn hv_signs(&self) -> Vec<Fact> {
        let mut out: Vec<Fact> = Vec::new();
        if let Some(ex) = &self.exits {
            out.extend(
                ex.named(&["VMCALL", "VMMCALL", "hypercalls"])
                    .into_iter()
                    .filter(|r| r.count > 0)
                    .map(|r| ex.fact(r).context()),
            );
        }
        if let Some(m) = &self.msrs {
            out.extend(
                m.rows
                    .iter()
                    .filter(|r| matches!(r.key, Key::Msr { index, .. } if is_hyperv_msr(index)))
                    .map(|r| m.fact(r).context()),
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
        let ex = self.exits.as_ref().filter(|p| !p.from_counters)?;
        (ex.totals.count >= 1000 && ex.count_of(&["MSR_WRITE", "msr"]) == 0).then_some(false)
    }

    /// The rate of event `name`: its counter's rate, else its trace count over the window.
    pub fn event_rate(&self, name: &str) -> Option<f64> {
        self.counters.get(name).and_then(|c| c.rate).or_else(|| {
            let n = self.events.get(name)?;
            self.rate
                .window_ns
                .filter(|&w| w > 0)
                .map(|w| *n as f64 / (w as f64 / 1e9))
        })
    }

    /// Count of event `name` (trace events, else counters).
    pub fn event(&self, name: &str) -> Option<u64> {
        self.events
            .get(name)
            .copied()
            .or_else(|| self.counters.get(name).map(|c| c.total))
    }
}

/// Splits profiles into inputs as `compare` does (see [`crate::analysis::inputs`]).
pub(crate) fn split(profiles: &[Profile]) -> Vec<(Input, &Profile, Vec<&Table>)> {
    crate::analysis::inputs::split(profiles)
        .into_iter()
        .map(|i| {
            let input = Input {
                number: i.number,
                name: i.name,
                path: i.path,
                label: i.label,
                format: i.profile.origin.format.clone(),
            };
            (input, i.profile, i.tables)
        })
        .collect()
}

//! The Profile: the one data model every source fills and every analysis reads.
//!
//! A profile holds tables; a table holds rows of one kind (exit reasons, IO ports, MMIO
//! addresses, MSRs, or named events); a row counts one key for one VM/vCPU (when known) with
//! what is known of its durations. Anything a source did not carry is `None` and serialises as
//! `null`: it is never invented. The JSON form is versioned by [`SCHEMA`].

mod counters;
pub(crate) mod fold;
mod histogram;
mod key;
mod row;
pub(crate) mod sched;
mod stats;
pub(crate) mod timeline;

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

pub use counters::{CounterLog, CounterPath, CounterTool, LogHeader, SLICES, Series, Slice, Stats};
pub use histogram::Latency;
pub use key::{Access, Key};
pub use row::Row;
pub use sched::SchedSamples;
pub use stats::{TimeStats, Welford};
pub use timeline::{LaneSched, OTHER_REASONS, Timeline, TimelineLane, TimelineSeries};

use crate::decode::Isa;

// What other crates use of this area (docs/development.md, "Public API").
pub use fold::TABLE_CAP;
pub use sched::{HostTicks, SchedInterval, VcpuSched};

/// The version of the profile JSON schema.
pub const SCHEMA: &str = "virtlens.profile/1";

/// Everything virtlens read from one input.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Profile {
    pub schema: String,
    pub origin: Origin,
    pub tables: Vec<Table>,
    /// Sampled performance counters (perfmon / esxtop PDH-CSV, pasted counter tables).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub counters: Option<CounterLog>,
    /// Things the source noticed but could live with (elided rows, totals that do not add up).
    pub warnings: Vec<Note>,
    /// The vCPU threads' scheduler samples, when the host was watched (live capture).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sched: Option<SchedSamples>,
    /// Exits per reason over time per VM and vCPU, when the input's events have timestamps.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeline: Option<Timeline>,
}

impl Profile {
    /// An empty profile of the given origin.
    pub fn new(origin: Origin) -> Self {
        Self {
            schema: SCHEMA.to_string(),
            origin,
            tables: Vec::new(),
            counters: None,
            warnings: Vec::new(),
            sched: None,
            timeline: None,
        }
    }

    /// Sets `origin.isa` when every table that knows its ISA agrees on it.
    pub fn settle_isa(&mut self) {
        let mut isas = self.tables.iter().filter_map(|t| t.isa);
        if let Some(first) = isas.next()
            && isas.all(|i| i == first)
        {
            self.origin.isa = Some(first);
        }
    }

    /// Gives every table a label of its own, so `compare` keeps runs apart: unlabelled tables
    /// of a file with several become `run N`, and a repeated label gets ` (2)`, ` (3)`, ….
    pub fn distinct_labels(&mut self) {
        let several = self.tables.len() > 1;
        let mut used: Vec<String> = Vec::new();
        for (i, table) in self.tables.iter_mut().enumerate() {
            let base = match (&table.label, several) {
                (Some(l), _) => l.clone(),
                (None, true) => format!("run {}", i + 1),
                (None, false) => continue,
            };
            let mut label = base.clone();
            let mut k = 1;
            while used.contains(&label) {
                k += 1;
                label = format!("{base} ({k})");
            }
            used.push(label.clone());
            table.label = Some(label);
        }
    }
}

/// Where a profile came from.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Origin {
    /// The source format, e.g. `perf-kvm-stat`.
    pub format: String,
    /// The file it was read from, when it was a file.
    pub path: Option<String>,
    /// The host CPU vendor (`GenuineIntel`, `AuthenticAMD`, …) when the input says.
    pub vendor: Option<String>,
    /// The exit-reason ISA the input's codes belong to, when known or inferred.
    pub isa: Option<Isa>,
    /// The host kernel release, when known.
    pub kernel: Option<String>,
    /// The KVM backend (`vmx`, `svm`, `pvm`, …), when known.
    pub backend: Option<String>,
    /// The host CPU's model name, when the input states it (a live capture, perf.data's
    /// CPUDESC header).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu: Option<String>,
    /// The software that emulated the host's CPU (`QEMU TCG`), when it was emulated: the
    /// input's exit times are then the emulator's, never hardware exit costs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_emulator: Option<String>,
    /// VM names by VMM process id.
    pub vm_names: BTreeMap<u32, String>,
    /// The virtlens version that read it.
    pub reader: String,
}

impl Origin {
    /// What the input's exit times are the times of, as far as the input says.
    pub fn exit_timing(&self) -> crate::facts::ExitTiming {
        crate::facts::ExitTiming::of_origin(self.backend.as_deref(), self.cpu_emulator.as_deref())
    }

    /// The backend as figures are labelled with it (see `crate::facts::backend_label`).
    pub fn backend_label(&self) -> Option<String> {
        crate::facts::backend_label(self.backend.as_deref(), self.cpu_emulator.as_deref())
    }

    /// An origin for `format` read from `path`.
    pub fn new(format: &str, path: Option<&str>) -> Self {
        Self {
            format: format.to_string(),
            path: path.map(str::to_string),
            reader: crate::VERSION.to_string(),
            ..Self::default()
        }
    }
}

/// The event-table name of KVM's binary statistics ([`TableKind::KvmStats`]).
pub const KVM_STATS_KIND: &str = "kvm_stats";

/// What a table's rows count: the four detail tables, the event tables every reader and
/// capture knows by name, and any other event by its name.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum TableKind {
    Vmexit,
    Ioport,
    Mmio,
    Msr,
    /// Every event, by name (`events`): the tracepoints that have no table of their own.
    Events,
    /// Returns to the VMM, by reason (`userspace_exit`: kvm_userspace_exit).
    UserspaceExit,
    /// Hypercalls, by number (`hypercall`).
    Hypercall,
    /// Halts: polled, waited (`halt`: kvm_vcpu_wakeup).
    Halt,
    /// KVM's binary statistics (`kvm_stats`, `KVM_GET_STATS_FD`): a row per counter per VM
    /// and per vCPU, its increment over the table's window (captures and lab runs write it).
    KvmStats,
    /// kvm_stat's counters (`kvm_stat`): debugfs or tracepoint totals over the window.
    KvmStat,
    /// kvm_stat's per-guest counters (`kvm_stat_guest`, its `-g` screens).
    KvmStatGuest,
    /// kvm_stat's printed per-second values (`kvm_stat_rate`), kept apart from the totals:
    /// a rate summed with counts would be neither.
    KvmStatRate,
    /// Notifications KVM signalled to an eventfd (`ioeventfd`).
    Ioeventfd,
    /// MMIO writes KVM batched for the VMM (`coalesced_mmio`).
    CoalescedMmio,
    /// The vCPU threads' scheduling (`sched`).
    Sched,
    /// KVM-relevant messages of the host's kernel log (`kernel_log`): lock traps, MSRs KVM
    /// does not emulate, lockups of vCPU threads, KVM's module warnings.
    KernelLog,
    /// APICv/AVIC inhibit changes by reason and direction (`apicv_inhibit`: keys as
    /// `crate::decode::apicv_inhibit::Change::key`); a `cleared` row's durations are the
    /// time the reason was set before it, when the trace has timestamps.
    ApicvInhibit,
    /// Exits by reason and the guest code they came from (`guest_rip`: keys
    /// [`Key::GuestRip`]), from `kvm_exit`'s `rip` / `guest_rip`.
    GuestRip,
    /// Another event, by name (never one of the names above: [`TableKind::from_name`]).
    Event(String),
}

impl TableKind {
    /// The kinds with a name of their own, besides [`TableKind::Event`].
    pub const NAMED: [TableKind; 18] = [
        TableKind::Vmexit,
        TableKind::Ioport,
        TableKind::Mmio,
        TableKind::Msr,
        TableKind::Events,
        TableKind::UserspaceExit,
        TableKind::Hypercall,
        TableKind::Halt,
        TableKind::KvmStats,
        TableKind::KvmStat,
        TableKind::KvmStatGuest,
        TableKind::KvmStatRate,
        TableKind::Ioeventfd,
        TableKind::CoalescedMmio,
        TableKind::Sched,
        TableKind::KernelLog,
        TableKind::ApicvInhibit,
        TableKind::GuestRip,
    ];

    /// The name used in JSON and on the command line.
    pub fn as_str(&self) -> &str {
        match self {
            TableKind::Vmexit => "vmexit",
            TableKind::Ioport => "ioport",
            TableKind::Mmio => "mmio",
            TableKind::Msr => "msr",
            TableKind::Events => "events",
            TableKind::UserspaceExit => "userspace_exit",
            TableKind::Hypercall => "hypercall",
            TableKind::Halt => "halt",
            TableKind::KvmStats => KVM_STATS_KIND,
            TableKind::KvmStat => "kvm_stat",
            TableKind::KvmStatGuest => "kvm_stat_guest",
            TableKind::KvmStatRate => "kvm_stat_rate",
            TableKind::Ioeventfd => "ioeventfd",
            TableKind::CoalescedMmio => "coalesced_mmio",
            TableKind::Sched => "sched",
            TableKind::KernelLog => "kernel_log",
            TableKind::ApicvInhibit => "apicv_inhibit",
            TableKind::GuestRip => "guest_rip",
            TableKind::Event(name) => name,
        }
    }

    /// The kind named `name` (the inverse of [`TableKind::as_str`]): a named kind when there
    /// is one, else [`TableKind::Event`].
    pub fn from_name(name: &str) -> Self {
        TableKind::NAMED
            .into_iter()
            .find(|k| k.as_str() == name)
            .unwrap_or_else(|| TableKind::Event(name.to_string()))
    }
}

impl fmt::Display for TableKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for TableKind {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for TableKind {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(TableKind::from_name(&String::deserialize(d)?))
    }
}

/// One table of rows of one kind, e.g. one `perf kvm stat report` table.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Table {
    pub kind: TableKind,
    /// The author's label (e.g. "testing with patch"), or the interval of a live screen.
    pub label: Option<String>,
    /// What the source says the table covers, as printed (e.g. "all VMs, all VCPUs").
    pub scope: Option<String>,
    /// The ISA of the exit reasons in this table, when known or inferred.
    pub isa: Option<Isa>,
    /// The capture window, when the input shows it.
    pub window: Option<Window>,
    pub rows: Vec<Row>,
    /// The totals the source printed, to check the rows against.
    pub printed_total: Option<PrintedTotal>,
    /// The 1-based line of the input where the table begins.
    pub line: Option<usize>,
    /// The rows are counters that may include one another (kvm_stat's `exits` includes
    /// `io_exits`): they are not parts of a whole, so there are no shares and no total.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub overlapping: bool,
    /// The counts are events per second (a rate column), not events.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub per_second: bool,
    /// Rows that the source printed or measured are missing from this table: the author
    /// elided some, the input was cut off inside it, a row could not be read, the rows add up
    /// to less than the printed total, or the tracer lost events. The profile's notes say
    /// which, with the line. Always in the JSON (`false` when complete as far as can be told).
    #[serde(default)]
    pub partial: bool,
}

impl Table {
    /// An empty table of `kind`.
    pub fn new(kind: TableKind) -> Self {
        Self {
            kind,
            label: None,
            scope: None,
            isa: None,
            window: None,
            rows: Vec::new(),
            printed_total: None,
            line: None,
            overlapping: false,
            per_second: false,
            partial: false,
        }
    }

    /// The sum of the row counts, saturating at `u64::MAX` (sources note when it does).
    pub fn count(&self) -> u64 {
        self.rows
            .iter()
            .fold(0u64, |acc, r| acc.saturating_add(r.count))
    }

    /// The sum of the row times, when every row's time is known.
    pub fn time_ns(&self) -> Option<u64> {
        self.rows
            .iter()
            .try_fold(0u64, |acc, r| Some(acc.saturating_add(r.time.total_ns?)))
    }
}

/// The time span a table covers.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Window {
    /// The first timestamp as the source printed it.
    pub start: Option<String>,
    /// The last timestamp as the source printed it.
    pub end: Option<String>,
    /// The length of the window, when it can be told.
    pub duration_ns: Option<u64>,
    /// How many display intervals were summed into the table (live screens).
    pub intervals: u32,
}

/// The totals line a source printed under its table.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PrintedTotal {
    pub count: u64,
    pub time_ns: Option<u64>,
    pub lost_events: Option<u64>,
}

/// A remark about the input, with the line it is about.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Note {
    pub line: Option<usize>,
    pub message: String,
}

#[cfg(test)]
mod tests {
    use super::TableKind;

    #[test]
    fn every_named_kind_reads_back_as_itself() {
        for k in TableKind::NAMED {
            assert_eq!(TableKind::from_name(k.as_str()), k);
        }
        assert_eq!(
            TableKind::from_name("kvm_nested_vmexit"),
            TableKind::Event("kvm_nested_vmexit".into())
        );
    }
}

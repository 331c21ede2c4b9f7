//! Counters: kvm_stat's tracepoint counters (`kvm_msr`, `kvm_inj_virq`, `kvm_eoi`,
//! `kvm_page_fault`, `kvm_vcpu_wakeup`, …) and KVM's debugfs / binary-stats counters (`exits`,
//! `io_exits`, `halt_exits`, `halt_successful_poll`, `irq_injections`, …), each with its total
//! and its rate per second (printed `CurAvg/s`, or total over the window). The binary statistics
//! a capture read (`kvm_stats`, summed over its VMs and vCPUs) are used when the input has no
//! kvm_stat screen. When an input has no exit-reason table, the exit counters become an exit
//! [`Part`] of their own so the same rules read them.

use std::collections::BTreeMap;

use crate::analysis::Totals;
use crate::decode::ExitClass;
use crate::profile::{Key, Table, TableKind};

use super::super::model::Fact;
use super::rows::{Item, Part, rate, sat_sum};

/// One counter.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Counter {
    pub total: u64,
    /// Per second: the printed rate, or the total over the window.
    pub rate: Option<f64>,
}

/// Every counter of an input, by name.
#[derive(Debug, Clone)]
pub struct Counters {
    pub by_name: BTreeMap<String, Counter>,
    /// The event table they come from (kvm_stat's screen or the binary statistics).
    pub source: TableKind,
}

impl Default for Counters {
    fn default() -> Self {
        Counters {
            by_name: BTreeMap::new(),
            source: TableKind::KvmStat,
        }
    }
}

impl Counters {
    /// The counters of `tables` (kvm_stat's counter and rate tables, else a capture's binary
    /// statistics).
    pub fn of(tables: &[&Table]) -> Counters {
        let mut by_name: BTreeMap<String, Counter> = BTreeMap::new();
        let source = source_kind(tables);
        for t in tables.iter().filter(|t| t.kind == source) {
            let window = t.window.as_ref().and_then(|w| w.duration_ns);
            for r in &t.rows {
                let c = by_name.entry(r.key.key_text()).or_default();
                c.total = c.total.saturating_add(r.count);
                c.rate = rate(c.total, window);
            }
        }
        for t in tables.iter().filter(|t| t.kind == TableKind::KvmStatRate) {
            for r in &t.rows {
                if matches!(r.key, Key::Event { .. }) {
                    let c = by_name.entry(r.key.key_text()).or_default();
                    c.rate = Some(c.rate.unwrap_or(0.0).max(r.count as f64));
                }
            }
        }
        Counters { by_name, source }
    }

    pub fn is_empty(&self) -> bool {
        self.by_name.is_empty()
    }

    pub fn get(&self, name: &str) -> Option<Counter> {
        self.by_name.get(name).copied()
    }

    /// The rate of the first of `names` the input has.
    pub fn rate(&self, names: &[&str]) -> Option<f64> {
        names.iter().find_map(|n| self.get(n)).and_then(|c| c.rate)
    }

    /// The total of the first of `names` the input has.
    pub fn total(&self, names: &[&str]) -> Option<u64> {
        names.iter().find_map(|n| self.get(n)).map(|c| c.total)
    }

    /// The fact of counter `name` (context: counters are not exit rows).
    pub fn fact(&self, name: &str) -> Option<Fact> {
        let c = self.get(name)?;
        let table = match self.source {
            TableKind::Events => TableKind::Events,
            _ => TableKind::KvmStat,
        };
        let mut f = Fact::said(table.as_str(), name, "");
        f.note = None;
        f.count = c.total;
        f.per_second = c.rate;
        f.explains = true;
        Some(f)
    }
}

/// The table the counters come from: kvm_stat's screen when the input has one, else the binary
/// statistics (both count the same things; summing them would count twice), else tracepoint
/// totals counted by name without their events (`perf stat -e 'kvm:*'`: an event table that
/// counts `kvm_exit` itself, which a trace never does — its exits have a table of their own).
fn source_kind(tables: &[&Table]) -> TableKind {
    let has = |kind: TableKind| tables.iter().any(|t| t.kind == kind);
    let counted_exits = || {
        !has(TableKind::Vmexit)
            && tables.iter().any(|t| {
                t.kind == TableKind::Events
                    && t.rows
                        .iter()
                        .any(|r| matches!(&r.key, Key::Event { name } if name == "kvm_exit"))
            })
    };
    if !has(TableKind::KvmStat) && has(TableKind::KvmStats) {
        TableKind::KvmStats
    } else if !has(TableKind::KvmStat) && counted_exits() {
        TableKind::Events
    } else {
        TableKind::KvmStat
    }
}

/// The class of an exit counter (debugfs / binary stats names, or the kvm tracepoint that fires
/// once per exit of that kind); `None` for counters that are not exits.
fn counter_class(name: &str, tracepoints: bool) -> Option<ExitClass> {
    Some(match (name, tracepoints) {
        ("io_exits", false) | ("kvm_pio", true) => ExitClass::Io,
        ("mmio_exits", false) | ("kvm_mmio", true) => ExitClass::Mmio,
        ("halt_exits", false) => ExitClass::Idle,
        (
            "irq_exits" | "irq_window" | "irq_window_exits" | "nmi_window" | "nmi_window_exits"
            | "request_irq" | "request_irq_exits",
            false,
        ) => ExitClass::Interrupt,
        ("hypercalls", false) | ("kvm_hypercall" | "kvm_hv_hypercall", true) => {
            ExitClass::Hypercall
        }
        ("kvm_msr", true) => ExitClass::Msr,
        ("kvm_page_fault", true) => ExitClass::Mmu,
        ("signal_exits", false) => ExitClass::Other,
        _ => return None,
    })
}

/// An exit part from counters: the debugfs `exits` counter (or, on a tracepoint-only screen,
/// `kvm_exit`) is the whole, the exit counters are its rows. They overlap nothing else, but do
/// not add up to the whole: the rest are exits no counter names.
pub(crate) fn exit_part(tables: &[&Table], counters: &Counters) -> Option<Part> {
    let (whole_name, tracepoints) = if counters.get("exits").is_some_and(|c| c.total > 0) {
        ("exits", false)
    } else if counters.get("kvm_exit").is_some_and(|c| c.total > 0) {
        ("kvm_exit", true)
    } else {
        return None;
    };
    let whole = counters.get(whole_name)?;
    let kind = counters.source.clone();
    let window_ns = tables
        .iter()
        .find(|t| t.kind == kind)
        .and_then(|t| t.window.as_ref())
        .and_then(|w| w.duration_ns);
    let mut rows = Vec::new();
    for (name, c) in &counters.by_name {
        let Some(class) = counter_class(name, tracepoints) else {
            continue;
        };
        rows.push(Item {
            table: kind.clone(),
            key: Key::Event { name: name.clone() },
            name: None,
            class: Some(class),
            idle: class == ExitClass::Idle,
            count: c.total,
            time_ns: None,
            per_second: c.rate,
            vcpus: Default::default(),
        });
    }
    let mut totals = Totals::zero();
    totals.time_ns = None;
    totals.idle_time_ns = None;
    totals.overhead_time_ns = None;
    totals.count = whole.total;
    totals.idle_count = sat_sum(rows.iter().filter(|r| r.idle).map(|r| r.count));
    totals.overhead_count = whole.total.saturating_sub(totals.idle_count);
    totals.per_second = whole.rate;
    Some(Part {
        kind,
        from_counters: true,
        rows,
        totals,
        timed: false,
        window_ns,
    })
}

//! From an interval's profile to what `top` shows ([`TopView`]): per VM its rows merged over
//! vCPUs (exit reasons, ports, MMIO addresses, MSRs, returns to the VMM, hypercalls, and the
//! other events by name), busiest first, as rates over the interval; the share of the VM's
//! handled time where durations exist (perf's Time%); and its KVM statistics per second; and
//! the vCPU threads' scheduling (ready % per VM and vCPU) when the interval has it.

use std::collections::BTreeMap;

use virtlens_core::analysis::summarize_sched as summarize;
use virtlens_core::decode::Decoder;
use virtlens_core::events::TABLED;
use virtlens_core::profile::{Key, TableKind};
use virtlens_core::render::{TOP_SCHEMA as SCHEMA, TopCounter, TopRow, TopView, TopVm};

use super::live::Interval;

/// Events that have a table of their own, so their rows in `events` would count them twice.
const IN_TABLES: [&str; 8] = TABLED;

#[derive(Default)]
struct Acc {
    count: u64,
    time_ns: Option<u64>,
    name: Option<String>,
}

/// The view of `iv`, `elapsed_s` after `top` started.
pub fn build(iv: &Interval, decoder: &Decoder, elapsed_s: f64) -> TopView {
    let secs = (iv.duration_ns as f64 / 1e9).max(1e-9);
    let p = &iv.profile;
    // (pid) → (kind, key) → acc
    let mut vms: BTreeMap<Option<u32>, BTreeMap<(String, String), Acc>> = BTreeMap::new();
    let mut counters: BTreeMap<Option<u32>, BTreeMap<String, u64>> = BTreeMap::new();
    let mut events: BTreeMap<Option<u32>, u64> = BTreeMap::new();
    for t in &p.tables {
        let kind = match &t.kind {
            TableKind::Vmexit => "exit",
            TableKind::Ioport => "port",
            TableKind::Mmio => "mmio",
            TableKind::Msr => "msr",
            TableKind::UserspaceExit => "to-vmm",
            TableKind::Hypercall => "hypercall",
            TableKind::Events => "event",
            TableKind::KvmStats => {
                for r in &t.rows {
                    *counters
                        .entry(r.pid)
                        .or_default()
                        .entry(r.key.key_text())
                        .or_default() += r.count;
                }
                continue;
            }
            _ => continue,
        };
        for r in &t.rows {
            if kind == "event" {
                *events.entry(r.pid).or_default() += r.count;
                if IN_TABLES.contains(&r.key.key_text().as_str()) {
                    continue;
                }
            }
            let key = match (&r.key, r.key.access()) {
                (Key::Port { .. } | Key::Mmio { .. } | Key::Msr { .. }, Some(a)) => {
                    format!("{} {}", r.key.key_text(), a.word())
                }
                _ => r.key.key_text(),
            };
            let acc = vms
                .entry(r.pid)
                .or_default()
                .entry((kind.to_string(), key))
                .or_default();
            acc.count += r.count;
            acc.time_ns = match (acc.time_ns, r.time.total_ns) {
                (a, Some(b)) => Some(a.unwrap_or(0) + b),
                (a, None) => a,
            };
            if acc.name.is_none() {
                acc.name = match &r.key {
                    Key::Port { port, .. } => decoder.port(*port),
                    Key::Mmio { gpa, .. } => decoder.mmio(*gpa),
                    Key::Msr { index, .. } => decoder.msr(*index),
                    _ => None,
                };
            }
        }
    }
    let mut out: Vec<TopVm> = vms
        .into_iter()
        .map(|(pid, rows)| {
            let total_time: u64 = rows.values().filter_map(|a| a.time_ns).sum();
            let mut rows: Vec<TopRow> = rows
                .into_iter()
                .map(|((kind, key), a)| TopRow {
                    kind,
                    key,
                    name: a.name,
                    count: a.count,
                    per_s: a.count as f64 / secs,
                    time_share: a
                        .time_ns
                        .filter(|_| total_time > 0)
                        .map(|t| t as f64 / total_time as f64),
                    mean_ns: a.time_ns.map(|t| t as f64 / a.count.max(1) as f64),
                })
                .collect();
            rows.sort_by(|a, b| b.count.cmp(&a.count).then_with(|| a.key.cmp(&b.key)));
            let mut c: Vec<TopCounter> = counters
                .remove(&pid)
                .unwrap_or_default()
                .into_iter()
                .map(|(name, n)| TopCounter {
                    name,
                    per_s: n as f64 / secs,
                })
                .collect();
            c.sort_by(|a, b| b.per_s.total_cmp(&a.per_s));
            TopVm {
                pid,
                name: pid.and_then(|p| iv.profile.origin.vm_names.get(&p).cloned()),
                events_per_s: events.get(&pid).copied().unwrap_or(0) as f64 / secs,
                rows,
                counters: c,
            }
        })
        .collect();
    // VMs only seen in the statistics.
    for (pid, cs) in counters {
        let mut c: Vec<TopCounter> = cs
            .into_iter()
            .map(|(name, n)| TopCounter {
                name,
                per_s: n as f64 / secs,
            })
            .collect();
        c.sort_by(|a, b| b.per_s.total_cmp(&a.per_s));
        out.push(TopVm {
            pid,
            name: pid.and_then(|p| iv.profile.origin.vm_names.get(&p).cloned()),
            events_per_s: 0.0,
            rows: Vec::new(),
            counters: c,
        });
    }
    out.sort_by(|a, b| b.events_per_s.total_cmp(&a.events_per_s));
    TopView {
        schema: SCHEMA.to_string(),
        interval_s: secs,
        elapsed_s,
        events: iv.events,
        events_per_s: iv.events as f64 / secs,
        lost: iv.lost,
        backend: p.origin.backend.clone(),
        cpu_emulator: p.origin.cpu_emulator.clone(),
        notes: p.warnings.iter().map(|n| n.message.clone()).collect(),
        vms: out,
        sched: p.sched.as_ref().map(summarize),
    }
}

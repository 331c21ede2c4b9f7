//! From an interval's profile to what `top` shows ([`TopView`]): per VM its rows merged over
//! vCPUs (exit reasons, ports, MMIO addresses, MSRs, returns to the VMM, hypercalls, and the
//! other events by name), busiest first, as rates over the interval; the share of the VM's
//! handled time where durations exist (perf's Time%); and its KVM statistics per second; and
//! the vCPU threads' scheduling (ready % per VM and vCPU) when the interval has it.

use std::collections::BTreeMap;

use virtlens_core::Backend;
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
    let mut notes: Vec<String> = p.warnings.iter().map(|n| n.message.clone()).collect();
    notes.extend(out.iter().filter_map(|vm| exits_missing(vm, &p.origin)));
    TopView {
        schema: SCHEMA.to_string(),
        interval_s: secs,
        elapsed_s,
        events: iv.events,
        events_per_s: iv.events as f64 / secs,
        lost: iv.lost,
        backend: p.origin.backend.clone(),
        cpu_emulator: p.origin.cpu_emulator.clone(),
        notes,
        vms: out,
        sched: p.sched.as_ref().map(summarize),
    }
}

/// A note when `vm` returned to its VMM but no exit was counted for it: every return to the
/// VMM follows an exit, so `kvm_exit` did not fire (or was not seen) in the interval and the
/// exit reasons are missing. PVM never fires it, and says so elsewhere. Seen on arm64 hosts
/// emulated by multi-threaded QEMU TCG when tracing starts while a vCPU runs: the vCPU keeps
/// running the code translated before the tracepoint was switched on.
fn exits_missing(vm: &TopVm, origin: &virtlens_core::profile::Origin) -> Option<String> {
    let backend = origin.backend.as_deref().map(Backend::named);
    if backend == Some(Backend::Pvm) {
        return None;
    }
    let to_vmm: u64 = vm
        .rows
        .iter()
        .filter(|r| r.kind == "to-vmm")
        .map(|r| r.count)
        .sum();
    if to_vmm == 0 || vm.rows.iter().any(|r| r.kind == "exit") {
        return None;
    }
    let who = match (vm.pid, &vm.name) {
        (Some(pid), Some(name)) => format!("{name} (pid {pid})"),
        (Some(pid), None) => format!("pid {pid}"),
        _ => "a VM".to_string(),
    };
    let why = match &origin.cpu_emulator {
        Some(emu) => format!(
            "; this host's CPU is emulated ({emu}), which can keep running code translated \
             before tracing started"
        ),
        None => String::new(),
    };
    Some(format!(
        "{who} returned to its VMM {to_vmm} times but no kvm_exit was counted: the exit \
         reasons of this interval are missing{why}"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use virtlens_core::profile::Origin;

    fn vm(kinds: &[&str]) -> TopVm {
        TopVm {
            pid: Some(7),
            rows: kinds
                .iter()
                .map(|k| TopRow {
                    kind: k.to_string(),
                    count: 3,
                    ..TopRow::default()
                })
                .collect(),
            ..TopVm::default()
        }
    }

    /// Returns to the VMM without one exit are said, except on PVM, which never fires
    /// `kvm_exit`; an exit row, or no return to the VMM, says nothing.
    #[test]
    fn returns_to_the_vmm_without_exits_are_noted() {
        let arm = Origin {
            backend: Some("arm64".into()),
            cpu_emulator: Some("QEMU TCG".into()),
            ..Origin::default()
        };
        let note = exits_missing(&vm(&["to-vmm", "mmio"]), &arm).unwrap_or_default();
        assert!(
            note.starts_with("pid 7 returned to its VMM 3 times"),
            "{note}"
        );
        assert!(note.contains("QEMU TCG"), "{note}");
        assert_eq!(exits_missing(&vm(&["to-vmm", "exit"]), &arm), None);
        assert_eq!(exits_missing(&vm(&["mmio"]), &arm), None);
        let pvm = Origin {
            backend: Some("pvm".into()),
            ..Origin::default()
        };
        assert_eq!(exits_missing(&vm(&["to-vmm"]), &pvm), None);
    }
}

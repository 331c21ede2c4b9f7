//! From an interval of in-kernel counts ([`Snapshot::since`]) to the [`Profile`] every other
//! part of virtlens reads (`top`, `record --summary`, diagnose): the same tables the tracefs
//! capture fills (`vmexit`, `ioport`, `mmio`, `msr`, `userspace_exit`, `hypercall`, `events`,
//! and `halt` for the halt-poll/wait durations), a row per (key, VMM, vCPU) with the summed
//! durations where a latency pair measured them. Threads are resolved to their VMM and vCPU
//! while they live ([`Identities`]); events of threads of other processes are dropped.

use std::collections::BTreeMap;

use virtlens_core::decode::{Isa, arm64_code, display_exit_key};
use virtlens_core::profile::{Access, Key, Note, Profile, Row, Table, TableKind, TimeStats};
use virtlens_core::sources::userspace_exit_name;

use super::maps::Hist;
use super::plan::{EVENTS, Pair};
use super::snapshot::Snapshot;
use crate::capture::identity::Identities;

/// The profile's `origin.format`.
pub(crate) const FORMAT: &str = "virtlens-bpf";

/// One accumulating row: count, and the durations measured for it.
#[derive(Default)]
struct Acc {
    count: u64,
    timed: u64,
    total_ns: u64,
}

type Slot = (TableKind, Key, Option<u32>, Option<u32>);

/// The profile of `delta`, an interval of `duration_ns`; `origin_isa` decodes exit codes
/// whose event did not say its ISA.
pub(crate) fn profile(
    delta: &Snapshot,
    duration_ns: u64,
    ids: &mut Identities,
    origin: virtlens_core::profile::Origin,
) -> Profile {
    let isa = origin.isa;
    let mut accs: BTreeMap<Slot, Acc> = BTreeMap::new();
    let mut pids = Vec::new();
    // The VMM is the thread's process, which the kernel gave with the key (kvm events come
    // only from processes that use KVM), so a VM that ran and exited between two reads still
    // counts; its vCPU is known while the thread lives.
    let place = |ids: &mut Identities, tgid: u32, tid: u32| -> Option<(Option<u32>, Option<u32>)> {
        ids.see(tid, true);
        let vcpu = ids
            .get(tid)
            .filter(|t| t.pid == Some(tgid))
            .and_then(|t| t.vcpu);
        Some((Some(tgid), vcpu))
    };
    for (k, n) in &delta.counts {
        let Some((pid, vcpu)) = place(ids, k.tgid, k.tid) else {
            continue;
        };
        pids.extend(pid);
        let Some(&event) = EVENTS.get(k.event as usize) else {
            continue;
        };
        let mut add = |kind: TableKind, key: Key| {
            accs.entry((kind, key, pid, vcpu)).or_default().count += n;
        };
        add(
            TableKind::Events,
            Key::Event {
                name: event.to_string(),
            },
        );
        if let Some((kind, key)) = keyed(event, k.sub, k.detail, isa) {
            add(kind, key);
        }
    }
    for (k, h) in &delta.hists {
        let Some((pid, vcpu)) = place(ids, k.tgid, k.tid) else {
            continue;
        };
        let Some(slot) = Pair::from_index(k.event).and_then(|p| timed_slot(p, k.detail, isa))
        else {
            continue;
        };
        let acc = accs.entry((slot.0, slot.1, pid, vcpu)).or_default();
        add_time(acc, h);
        if Pair::from_index(k.event) == Some(Pair::Halt) {
            acc.count += h.count();
        }
    }
    let mut profile = Profile::new(origin);
    let mut tables: BTreeMap<TableKind, Table> = BTreeMap::new();
    for ((kind, key, pid, vcpu), acc) in accs {
        // The count is the counts map's (or, for halts, the histogram's): an exit counted in
        // one interval may end, and be timed, in the next, so an interval's timed samples are
        // no count of its own (taking the larger, `serve` summed two exits too many per 2,000).
        let mut row = Row::new(key, acc.count);
        row.pid = pid;
        row.vcpu = vcpu;
        if acc.timed > 0 {
            row.time = TimeStats {
                total_ns: Some(acc.total_ns),
                timed: (acc.timed != row.count).then_some(acc.timed),
                ..TimeStats::unknown()
            };
        }
        let table = tables.entry(kind.clone()).or_insert_with(|| {
            let mut t = Table::new(kind);
            t.window = Some(virtlens_core::profile::Window {
                start: None,
                end: None,
                duration_ns: Some(duration_ns),
                intervals: 0,
            });
            t
        });
        table.rows.push(row);
    }
    for (_, mut t) in tables {
        t.rows
            .sort_by(|a, b| b.count.cmp(&a.count).then_with(|| a.key.cmp(&b.key)));
        if t.kind == TableKind::Vmexit {
            t.isa = isa;
        }
        profile.tables.push(t);
    }
    pids.sort_unstable();
    pids.dedup();
    profile.origin.vm_names = ids.names_of(pids.into_iter());
    for (event, n) in delta.other() {
        profile.warnings.push(Note {
            line: None,
            message: format!(
                "{n} {event} events were counted without their key: the in-kernel map was full"
            ),
        });
    }
    if delta.dropped_latencies() > 0 {
        profile.warnings.push(Note {
            line: None,
            message: format!(
                "{} latency samples were dropped: the in-kernel histogram map was full, or \
                 two threads shared a start slot",
                delta.dropped_latencies()
            ),
        });
    }
    profile
}

fn add_time(acc: &mut Acc, h: &Hist) {
    acc.timed += h.count();
    acc.total_ns = acc.total_ns.saturating_add(h.sum_ns);
}

/// The table and key a count of `event` goes to, besides `events`.
fn keyed(event: &str, sub: u32, detail: u64, isa: Option<Isa>) -> Option<(TableKind, Key)> {
    let access = |read: Access, write: Access| Some(if sub != 0 { write } else { read });
    Some(match event {
        "kvm_exit" => (TableKind::Vmexit, exit_key(sub, detail, isa)),
        "kvm_pio" => (
            TableKind::Ioport,
            Key::Port {
                port: detail,
                access: access(Access::In, Access::Out),
            },
        ),
        // An unsatisfied read (type 0) is the first half of a read that returns to the VMM;
        // the read itself is counted when it completes (type 1).
        "kvm_mmio" if sub == 0 => return None,
        "kvm_mmio" => (
            TableKind::Mmio,
            Key::Mmio {
                gpa: detail,
                access: Some(if sub == 2 {
                    Access::Write
                } else {
                    Access::Read
                }),
            },
        ),
        "kvm_msr" => (
            TableKind::Msr,
            Key::Msr {
                index: detail,
                access: access(Access::Read, Access::Write),
            },
        ),
        "kvm_userspace_exit" => (TableKind::UserspaceExit, userspace_key(detail, sub)),
        "kvm_hypercall" | "kvm_hv_hypercall" => (
            TableKind::Hypercall,
            Key::Event {
                name: format!("{detail:#x}"),
            },
        ),
        _ => return None,
    })
}

/// Where a latency pair's durations go.
fn timed_slot(pair: Pair, detail: u64, isa: Option<Isa>) -> Option<(TableKind, Key)> {
    Some(match pair {
        // The exit's ISA is not in the pair's key: the host's is. On arm64 the start kept the
        // exception type in the high half.
        Pair::Exit => (
            TableKind::Vmexit,
            exit_key((detail >> 32) as u32, detail & 0xffff_ffff, isa),
        ),
        Pair::Vmm => (TableKind::UserspaceExit, userspace_key(detail, 0)),
        Pair::Halt => (
            TableKind::Halt,
            Key::Event {
                name: if detail != 0 { "wait" } else { "poll" }.into(),
            },
        ),
    })
}

fn userspace_key(reason: u64, errno: u32) -> Key {
    let mut buf = String::new();
    let name = userspace_exit_name(reason as u32, i64::from(errno as i32), &mut buf);
    Key::Event {
        name: name.to_string(),
    }
}

/// An exit reason's key. On an arm64 host `sub` is the exception type and `detail` its class;
/// elsewhere `detail` is the reason and `sub` the `isa` field (1 VMX, 2 SVM, else the host's).
fn exit_key(sub: u32, detail: u64, host: Option<Isa>) -> Key {
    let (isa, code) = match (host, sub) {
        (Some(Isa::Arm64), ret) => (host, arm64_code(u64::from(ret), detail)),
        (_, 1) => (Some(Isa::Vmx), detail),
        (_, 2) => (Some(Isa::Svm), detail),
        _ => (host, detail),
    };
    let name = display_exit_key(isa, code);
    Key::Exit {
        name,
        code: Some(code),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_of_each_event() {
        let k = |e, sub, detail| keyed(e, sub, detail, Some(Isa::Vmx));
        assert_eq!(
            k("kvm_pio", 1, 0x70),
            Some((
                TableKind::Ioport,
                Key::Port {
                    port: 0x70,
                    access: Some(Access::Out)
                }
            ))
        );
        assert!(k("kvm_mmio", 0, 0xfee0_0000).is_none());
        assert_eq!(
            k("kvm_exit", 1, 30).map(|(_, k)| k.key_text()),
            Some("IO_INSTRUCTION".to_string())
        );
        assert_eq!(
            k("kvm_userspace_exit", 0, 2).map(|(_, k)| k.key_text()),
            Some("KVM_EXIT_IO".to_string())
        );
        assert_eq!(
            k("kvm_userspace_exit", (-4i32) as u32, 2).map(|(_, k)| k.key_text()),
            Some("restart".to_string())
        );
        assert!(k("kvm_fpu", 1, 0).is_none());
    }

    /// On an arm64 host a count's `sub` is the exception type and its detail the class, and a
    /// duration's detail holds both (type in the high half).
    #[test]
    fn arm64_exits_are_named_by_class_or_type() {
        let arm = Some(Isa::Arm64);
        let name = |(_, k): (TableKind, Key)| k.key_text();
        // ret 2 (TRAP) with class 0x24; ret 0 (IRQ) with no class.
        assert_eq!(
            keyed("kvm_exit", 2, 0x24, arm).map(name),
            Some("DABT_LOW".into())
        );
        assert_eq!(keyed("kvm_exit", 0, 0, arm).map(name), Some("IRQ".into()));
        assert_eq!(
            timed_slot(Pair::Exit, 2 << 32 | 0x16, arm).map(name),
            Some("HVC64".into())
        );
        // An x86 host's durations are keyed by the reason alone, as before.
        assert_eq!(
            timed_slot(Pair::Exit, 30, Some(Isa::Vmx)).map(name),
            Some("IO_INSTRUCTION".into())
        );
    }
}

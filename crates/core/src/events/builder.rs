//! Aggregating a stream of [`Event`]s into a [`Profile`]: one accumulator per (table, key, VM,
//! vCPU) slot with count, Welford stats and a latency histogram; per-thread pairing of begins
//! and ends (see `threads`); every event also counted by name. Memory grows with the number
//! of distinct keys, VMs and vCPUs, not with the number of events.

use rustc_hash::FxHashMap as HashMap;

use super::names::EventNames;
use super::reasons::Reasons;
use super::slots::{Accumulators, CKey, Renumbering, Slot, SlotKey, way};
use super::threads::{RIP_CACHED_THREADS, Thread, Threads, vcpu_from_comm};
use super::timeline::TimelineAcc;
use super::{Event, EventKind, MmioAccess, NameId};
use crate::decode::Isa;
use crate::profile::{Access, Latency, Origin};

/// The events the builder knows by kind, in the order of their fixed name ids.
const KNOWN_EVENTS: [&str; 8] = super::tracepoints::TABLED;

/// Where an event is counted: its thread (for the slot cache), VM and vCPU.
#[derive(Debug, Clone, Copy)]
struct Place {
    thread: Option<usize>,
    pid: Option<u32>,
    vcpu: Option<u32>,
}

/// Builds a profile from events; see the module doc.
#[derive(Debug)]
pub struct ProfileBuilder {
    origin: Origin,
    isa: Option<Isa>,
    accs: Accumulators,
    reasons: Reasons,
    names: EventNames,
    threads: Threads<(Slot, CKey)>,
    first_ts: Option<u64>,
    last_ts: Option<u64>,
    events: u64,
    /// Per VM and inhibit number: the name a `set` line showed, and since when it is set.
    inhibits: HashMap<(Option<u32>, u32), Inhibited>,
    /// Per VM: the inhibits still set after its last change (and whether of the old event).
    inhibit_masks: HashMap<Option<u32>, (u64, bool)>,
    /// Exits over time per lane and reason (`events::timeline`).
    timeline: TimelineAcc,
}

/// What the builder remembers of one inhibit of one VM.
#[derive(Debug, Default, Clone, Copy)]
struct Inhibited {
    named: Option<crate::decode::apicv_inhibit::Inhibit>,
    since: Option<u64>,
}

impl ProfileBuilder {
    /// A builder for a profile of `origin`; `origin.isa` (if set) decodes exit codes.
    pub fn new(origin: Origin) -> Self {
        let mut b = Self {
            isa: origin.isa,
            origin,
            accs: Accumulators::default(),
            reasons: Reasons::default(),
            names: EventNames::default(),
            threads: Threads::default(),
            first_ts: None,
            last_ts: None,
            events: 0,
            inhibits: HashMap::default(),
            inhibit_masks: HashMap::default(),
            timeline: TimelineAcc::default(),
        };
        // Ids 0..8 are the kinds `kind_name_id` knows, in its order.
        for kind in KNOWN_EVENTS {
            b.names.id(kind);
        }
        b
    }

    /// Sets the ISA used to decode exit codes that do not carry their own.
    pub fn set_isa(&mut self, isa: Option<Isa>) {
        self.isa = isa;
    }

    /// How many events were pushed.
    pub fn events(&self) -> u64 {
        self.events
    }

    /// Adds one event.
    pub fn push(&mut self, ev: &Event<'_>) {
        self.events += 1;
        let ts = ev.ts_ns;
        if let Some(ts) = ts {
            self.first_ts = Some(self.first_ts.map_or(ts, |f| f.min(ts)));
            self.last_ts = Some(self.last_ts.map_or(ts, |l| l.max(ts)));
        }
        let thread = ev.tid.map(|t| self.threads.index(t));
        let (pid, vcpu) = self.identity(ev, thread);
        let at = Place { thread, pid, vcpu };
        let name = self.kind_name_id(&ev.kind);
        self.count_name(at, name);
        match ev.kind {
            EventKind::Exit {
                reason, isa, rip, ..
            } => {
                let id = self.reasons.id(reason, isa);
                if let Some(ts) = ts {
                    self.timeline
                        .exit(ts, ev.tid, (pid, vcpu), id, &self.reasons);
                }
                let slot = self.count(at, Slot::Vmexit, CKey::Reason(id));
                if let Some(t) = self.thread(thread) {
                    t.exit.begin(slot, ts);
                    t.last_exit_ts = ts;
                }
                if let Some(rip) = rip {
                    self.count_rip(at, id, rip);
                }
            }
            EventKind::Entry { .. } => {
                let Some(t) = self.thread(thread) else {
                    return;
                };
                let ends = [
                    t.exit.end(ts),
                    t.pio.end(ts),
                    t.msr.end(ts),
                    t.mmio_write.end(ts),
                ];
                t.last_exit_ts = None;
                for (slot, ns) in ends.into_iter().flatten() {
                    self.record(slot, ns);
                }
            }
            EventKind::Pio { write, port } => {
                let access = Some(if write { Access::Out } else { Access::In });
                let slot = self.count(at, Slot::Ioport, CKey::Addr(port, access));
                if let Some(t) = self.thread(thread) {
                    t.pio.begin(slot, ts);
                }
            }
            EventKind::Msr { write, index } => {
                let access = Some(if write { Access::Write } else { Access::Read });
                let slot = self.count(at, Slot::Msr, CKey::Addr(index, access));
                if let Some(t) = self.thread(thread) {
                    t.msr.begin(slot, ts);
                }
            }
            EventKind::Mmio { access, gpa } => self.mmio(at, access, gpa, ts),
            EventKind::UserspaceExit { reason } => {
                let id = self.names.id(reason);
                self.count(at, Slot::UserspaceExit, CKey::Name(id));
            }
            EventKind::Hypercall { nr, .. } => {
                self.count(at, Slot::Hypercall, CKey::Addr(nr, None));
            }
            EventKind::ApicvInhibit { change, names, .. } => self.inhibit(at, change, names, ts),
            EventKind::SchedSwitch {
                prev,
                prev_runnable,
                next,
            } => {
                if let Some(ts) = ts {
                    self.timeline.switch(ts, prev, prev_runnable, next);
                }
            }
            EventKind::SchedWakeup { tid, .. } => {
                if let Some(ts) = ts {
                    self.timeline.wakeup(ts, tid);
                }
            }
            EventKind::Other { .. } | EventKind::Interned { .. } => {}
        }
    }

    /// An inhibit change: counted by reason and direction; a clear records how long the
    /// reason was set (the VM's last set of it), and takes the name its set showed.
    fn inhibit(
        &mut self,
        at: Place,
        mut change: crate::decode::apicv_inhibit::Change,
        names: &str,
        ts: Option<u64>,
    ) {
        if let Some(mask) = change.inhibits {
            // The printed names name every inhibit still set, not only this line's.
            for (bit, r) in crate::decode::apicv_inhibit::mask_names(mask, names) {
                self.inhibits.entry((at.pid, bit)).or_default().named = Some(r);
            }
            self.inhibit_masks.insert(at.pid, (mask, change.legacy));
        }
        let state = self.inhibits.entry((at.pid, change.number)).or_default();
        if change.named.is_none() {
            change.named = state.named;
        } else {
            state.named = change.named;
        }
        let held = if change.set {
            // A repeated set keeps the first time: the reason has been set since then.
            state.since = state.since.or(ts);
            None
        } else {
            let since = state.since.take();
            since.zip(ts).and_then(|(a, b)| b.checked_sub(a))
        };
        let id = self.names.id(&change.key());
        // Inhibits are per VM: counted without the vCPU.
        let at = Place {
            vcpu: None,
            thread: None,
            ..at
        };
        let slot = self.count(at, Slot::ApicvInhibit, CKey::Name(id));
        if let Some(ns) = held {
            self.record(slot, ns);
        }
    }

    fn thread(&mut self, i: Option<usize>) -> Option<&mut Thread<(Slot, CKey)>> {
        i.and_then(|i| self.threads.get_mut(i))
    }

    fn mmio(&mut self, at: Place, access: MmioAccess, gpa: u64, ts: Option<u64>) {
        let a = match access {
            MmioAccess::UnsatisfiedRead => return,
            MmioAccess::Read => Access::Read,
            MmioAccess::Write => Access::Write,
        };
        let slot = self.count(at, Slot::Mmio, CKey::Addr(gpa, Some(a)));
        let Some(t) = self.thread(at.thread) else {
            return;
        };
        match a {
            Access::Write => t.mmio_write.begin(slot, ts),
            _ => {
                let start = t.last_exit_ts.take();
                if let (Some(s), Some(e)) = (start, ts)
                    && e >= s
                {
                    self.record(slot, e - s);
                }
            }
        }
    }

    /// The VM and vCPU of an event: its own fields, else what its thread showed before.
    fn identity(&mut self, ev: &Event<'_>, thread: Option<usize>) -> (Option<u32>, Option<u32>) {
        let own_vcpu = match ev.kind {
            EventKind::Exit { vcpu, .. } | EventKind::Entry { vcpu } => vcpu,
            _ => None,
        };
        let Some(t) = self.thread(thread) else {
            return (
                ev.pid,
                own_vcpu.or_else(|| ev.comm.and_then(vcpu_from_comm)),
            );
        };
        // A thread's name says its vCPU (`CPU 3/KVM`): parse the first name the thread shows.
        let own_vcpu = match (own_vcpu, t.vcpu) {
            (None, None) if !t.comm_seen && ev.comm.is_some() => {
                t.comm_seen = true;
                ev.comm.and_then(vcpu_from_comm)
            }
            (v, _) => v,
        };
        let (pid, vcpu) = (ev.pid.or(t.pid), own_vcpu.or(t.vcpu));
        if (pid, vcpu) != (t.pid, t.vcpu) {
            // The cached slots are for the old VM/vCPU.
            t.forget_slots();
            t.pid = pid;
            t.vcpu = vcpu;
        }
        (pid, vcpu)
    }

    /// Counts one event in the `events` table under name id `name`: through the thread's
    /// by-name index when there is a thread, else like any slot.
    fn count_name(&mut self, at: Place, name: u32) {
        let n = name as usize;
        let cached = self
            .thread(at.thread)
            .and_then(|t| t.by_name.get(n).copied().flatten());
        let i = match cached {
            Some(i) => {
                self.accs.bump(i);
                return;
            }
            None => self.count(at, Slot::Events, CKey::Name(name)),
        };
        if let Some(t) = self.thread(at.thread) {
            if t.by_name.len() <= n {
                t.by_name.resize(n + 1, None);
            }
            t.by_name[n] = Some(i);
        }
    }

    /// Counts one exit of reason `id` at guest `rip`, through the thread's RIP cache.
    fn count_rip(&mut self, at: Place, id: u32, rip: u64) {
        let cached = self.thread(at.thread).and_then(|t| t.rip_slot(id, rip));
        if let Some(i) = cached {
            self.accs.bump(i);
            return;
        }
        let i = self.count(at, Slot::GuestRip, CKey::Rip(id, rip));
        let may_cache = at.thread.is_some_and(|i| i < RIP_CACHED_THREADS);
        if let Some(t) = self.thread(at.thread) {
            t.put_rip_slot(id, rip, i, may_cache);
        }
    }

    /// Counts one event in the accumulator of `slot`/`key` at `at`, and returns its index.
    fn count(&mut self, at: Place, slot: Slot, key: CKey) -> usize {
        let way = way(slot, key);
        let cached = self
            .thread(at.thread)
            .and_then(|t| t.slots.get(way, (slot, key)));
        let i = match cached {
            Some(i) => i,
            None => {
                let sk = SlotKey {
                    slot,
                    key,
                    pid: at.pid,
                    vcpu: at.vcpu,
                };
                let (i, renumbering) = self.accs.index_of(sk);
                if let Some(r) = renumbering {
                    self.renumber(&r);
                }
                if let Some(t) = self.thread(at.thread) {
                    t.slots.put(way, (slot, key), i);
                }
                i
            }
        };
        self.accs.bump(i);
        i
    }

    /// The accumulators were renumbered (a table was folded): every reference a thread holds
    /// follows.
    fn renumber(&mut self, r: &Renumbering) {
        self.threads.renumber(r);
    }

    fn record(&mut self, slot: usize, ns: u64) {
        if let Some(acc) = self.accs.get_mut(slot) {
            acc.durations.push(ns);
            acc.latency.get_or_insert_with(Latency::new).record(ns);
        }
    }

    /// The name id of an event's kind: fixed for the kinds the builder knows (interned first
    /// in `new`), looked up for other events.
    fn kind_name_id(&mut self, kind: &EventKind<'_>) -> u32 {
        match kind {
            EventKind::Exit { .. } => 0,
            EventKind::Entry { .. } => 1,
            EventKind::Pio { .. } => 2,
            EventKind::Mmio { .. } => 3,
            EventKind::Msr { .. } => 4,
            EventKind::UserspaceExit { .. } => 5,
            EventKind::Hypercall { hyperv: false, .. } => 6,
            EventKind::Hypercall { hyperv: true, .. } => 7,
            EventKind::SchedSwitch { .. } => self.names.id("sched_switch"),
            EventKind::Other { name }
            | EventKind::ApicvInhibit { name, .. }
            | EventKind::SchedWakeup { name, .. } => self.names.id(name),
            EventKind::Interned { name } => name.0,
        }
    }

    /// Interns `name` once, for [`EventKind::Interned`] events of this builder.
    pub fn intern(&mut self, name: &str) -> NameId {
        NameId(self.names.id(name))
    }
}

#[path = "builder_finish.rs"]
mod finish;

#[cfg(test)]
#[path = "builder_tests.rs"]
mod tests;

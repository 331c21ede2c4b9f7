//! Aggregating a stream of [`Event`]s into a [`Profile`]: one accumulator per (table, key, VM,
//! vCPU) slot with count, Welford stats and a latency histogram; per-thread pairing of begins
//! and ends (see `threads`); every event also counted by name. Memory grows with the number
//! of distinct keys, VMs and vCPUs, not with the number of events.

use rustc_hash::FxHashMap as HashMap;

use super::reasons::Reasons;
use super::slots::{Accumulators, CKey, Renumbering, Slot, SlotKey, way};
use super::threads::{RIP_CACHED_THREADS, Thread, Threads, vcpu_from_comm};
use super::timeline::TimelineAcc;
use super::{Event, EventKind, MmioAccess, NameId};
use crate::decode::Isa;
use crate::profile::{Access, Key, Latency, Origin, Profile, Row, Table, Window};

/// The events the builder knows by kind, in the order of their fixed name ids.
const KNOWN_EVENTS: [&str; 8] = super::tracepoints::TABLED;

/// The most distinct event names kept; later new names are counted as [`OTHER_NAMES`].
const MAX_NAMES: usize = 65_536;

/// The name counting the events whose names came after [`MAX_NAMES`] others.
const OTHER_NAMES: &str = "other event names";

/// Ways of the name cache in `name_id`.
const RECENT_NAMES: usize = 8;

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
    names: Vec<String>,
    name_ids: HashMap<String, u32>,
    /// Events whose name came after [`MAX_NAMES`] others.
    more_names: u64,
    recent_names: [(usize, u32); RECENT_NAMES],
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
            names: Vec::new(),
            name_ids: HashMap::default(),
            more_names: 0,
            recent_names: [(0, 0); RECENT_NAMES],
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
            b.name_id(kind);
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
                let id = self.name_id(reason);
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
        let id = self.name_id(&change.key());
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

    /// The inhibits each VM still had set after its last change: a `held` row each, so that a
    /// reason set before the trace began and never cleared shows as sticky.
    fn held_inhibits(&mut self) {
        let mut masks: Vec<(Option<u32>, (u64, bool))> =
            self.inhibit_masks.iter().map(|(k, v)| (*k, *v)).collect();
        masks.sort_unstable();
        for (pid, (mask, legacy)) in masks {
            for bit in (0..64u32).filter(|b| mask & (1u64 << b) != 0) {
                let named = self.inhibits.get(&(pid, bit)).and_then(|s| s.named);
                let change = crate::decode::apicv_inhibit::Change {
                    set: true,
                    number: bit,
                    inhibits: None,
                    named,
                    legacy,
                    held: true,
                };
                let id = self.name_id(&change.key());
                let at = Place {
                    thread: None,
                    pid,
                    vcpu: None,
                };
                self.count(at, Slot::ApicvInhibit, CKey::Name(id));
            }
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
            EventKind::SchedSwitch { .. } => self.name_id("sched_switch"),
            EventKind::Other { name }
            | EventKind::ApicvInhibit { name, .. }
            | EventKind::SchedWakeup { name, .. } => self.name_id(name),
            EventKind::Interned { name } => name.0,
        }
    }

    /// Interns `name` once, for [`EventKind::Interned`] events of this builder.
    pub fn intern(&mut self, name: &str) -> NameId {
        NameId(self.name_id(name))
    }

    fn name_id(&mut self, name: &str) -> u32 {
        // Binary sources hand the same `&str` for every event of a kind: a small cache keyed
        // by its address, checked against the content (text sources reuse line buffers, so an
        // address alone proves nothing), skips the hash map.
        let addr = name.as_ptr() as usize;
        let way = ((addr >> 3) ^ name.len()) % RECENT_NAMES;
        let (cached_addr, cached_id) = self.recent_names[way];
        if cached_addr == addr
            && self
                .names
                .get(cached_id as usize)
                .is_some_and(|n| n == name)
        {
            return cached_id;
        }
        let id = match self.name_ids.get(name) {
            Some(&id) => id,
            None if self.names.len() >= MAX_NAMES => {
                // Endless new names (garbage read under a forced format): one name for the rest.
                self.more_names += 1;
                match self.name_ids.get(OTHER_NAMES) {
                    Some(&id) => id,
                    None => {
                        let id = self.names.len() as u32;
                        self.names.push(OTHER_NAMES.to_string());
                        self.name_ids.insert(OTHER_NAMES.to_string(), id);
                        id
                    }
                }
            }
            None => {
                let id = self.names.len() as u32;
                self.names.push(name.to_string());
                self.name_ids.insert(name.to_string(), id);
                id
            }
        };
        self.recent_names[way] = (addr, id);
        id
    }

    /// The profile: one table per kind that saw events, rows largest first.
    pub fn finish(mut self) -> Profile {
        self.held_inhibits();
        let isa = self.isa.or_else(|| self.reasons.guess_isa());
        let reason_keys = self.reasons.keys(isa);
        let window = self.first_ts.zip(self.last_ts).map(|(a, b)| Window {
            start: None,
            end: None,
            duration_ns: Some(b - a),
            intervals: 0,
        });
        let mut tables: Vec<Table> = Vec::new();
        let other_keys: Vec<(Slot, Key)> = Slot::ALL
            .iter()
            .map(|&s| (s, self.accs.other_key(s)))
            .collect();
        let (mut accs, notes) = self.accs.finish();
        accs.sort_by_key(|(k, _)| k.slot);
        for (sk, acc) in accs {
            let key = match sk.key {
                CKey::Reason(id) => reason_keys.get(id as usize).cloned(),
                CKey::Addr(n, access) => Some(match sk.slot {
                    Slot::Ioport => Key::Port { port: n, access },
                    Slot::Mmio => Key::Mmio { gpa: n, access },
                    Slot::Msr => Key::Msr { index: n, access },
                    _ => Key::Event {
                        name: format!("{n:#x}"),
                    },
                }),
                CKey::Rip(id, rip) => reason_keys.get(id as usize).map(|k| Key::GuestRip {
                    reason: k.key_text(),
                    rip,
                }),
                CKey::Name(id) => self
                    .names
                    .get(id as usize)
                    .map(|n| Key::Event { name: n.clone() }),
                CKey::Folded => other_keys
                    .iter()
                    .find(|(s, _)| *s == sk.slot)
                    .map(|(_, key)| key.clone()),
            };
            let Some(key) = key else { continue };
            let mut row = Row::new(key, acc.count);
            row.pid = sk.pid;
            row.vcpu = sk.vcpu;
            if acc.durations.count() > 0 {
                row.time = acc.durations.stats();
                if row.time.timed == Some(acc.count) {
                    row.time.timed = None;
                }
                row.latency = acc.latency;
            }
            let kind = sk.slot.kind();
            match tables.last_mut() {
                Some(t) if t.kind == kind => t.rows.push(row),
                _ => {
                    let mut t = Table::new(kind);
                    t.isa = (sk.slot == Slot::Vmexit).then_some(isa).flatten();
                    t.window = window.clone();
                    t.rows.push(row);
                    tables.push(t);
                }
            }
        }
        for t in &mut tables {
            t.rows
                .sort_by(|a, b| b.count.cmp(&a.count).then_with(|| a.key.cmp(&b.key)));
        }
        let mut origin = self.origin;
        origin.isa = origin.isa.or(isa);
        let mut profile = Profile::new(origin);
        profile.tables = tables;
        profile.warnings = notes;
        profile.timeline = self.timeline.finish(isa);
        profile.warnings.extend(self.threads.notes());
        if self.more_names > 0 {
            profile.warnings.push(crate::profile::Note {
                line: None,
                message: format!(
                    "more than {MAX_NAMES} distinct event names: {} events with later new \
                     names are counted as `{OTHER_NAMES}`",
                    self.more_names
                ),
            });
        }
        profile
    }
}

#[cfg(test)]
#[path = "builder_tests.rs"]
mod tests;

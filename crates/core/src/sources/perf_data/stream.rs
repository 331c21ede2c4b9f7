//! The record loop's state: samples become decoded events that wait in time order
//! ([`Order`]) and then go to the profile builder's thread ([`super::sink`]); COMM records keep
//! the thread names (and so the VMM process names); lost-event, damage and skip counts become
//! warnings. Memory grows with threads, names and keys, not with samples.

use std::collections::{BTreeMap, HashMap};

use super::bytes::padded_str;
use super::kvm::{Kind, NONE};
use super::order::{Order, Stamped};
use super::records::Record;
use super::setup::Setup;
use super::sink::Outbox;

const PERF_RECORD_LOST: u32 = 2;
const PERF_RECORD_COMM: u32 = 3;
const PERF_RECORD_SAMPLE: u32 = 9;
const PERF_RECORD_LOST_SAMPLES: u32 = 13;
const PERF_RECORD_FINISHED_ROUND: u32 = 68;
const PERF_RECORD_COMPRESSED: u32 = 81;
const PERF_RECORD_COMPRESSED2: u32 = 83;

/// A decoded sample waiting for its turn: 48 bytes, absent values as [`NONE`] / [`NO_TS`].
#[derive(Debug, Clone, Copy)]
pub(super) struct Pending {
    pub ts: u64,
    pub pid: u32,
    pub tid: u32,
    pub cpu: u32,
    /// The thread's name id in [`Comms`].
    pub comm: u32,
    pub kind: Kind,
}

/// "No timestamp" in [`Pending::ts`].
pub(super) const NO_TS: u64 = u64::MAX;

impl Stamped for Pending {
    #[inline]
    fn ts(&self) -> u64 {
        self.ts
    }
}

/// Thread names from COMM records, interned.
#[derive(Debug, Default)]
pub(super) struct Comms {
    strings: Vec<String>,
    ids: HashMap<String, u32>,
    by_tid: HashMap<u32, u32>,
    /// Names of processes (the thread whose id is the process id).
    pub by_pid: HashMap<u32, u32>,
    last: Option<(u32, u32)>,
}

impl Comms {
    fn set(&mut self, pid: u32, tid: u32, name: String) {
        let id = match self.ids.get(&name) {
            Some(&id) => id,
            None => {
                let id = self.strings.len() as u32;
                self.ids.insert(name.clone(), id);
                self.strings.push(name);
                id
            }
        };
        self.by_tid.insert(tid, id);
        if pid == tid {
            self.by_pid.insert(pid, id);
        }
        self.last = None;
    }

    /// The name id of thread `tid`, or [`NONE`].
    #[inline]
    fn of_tid(&mut self, tid: u32) -> u32 {
        if let Some((t, c)) = self.last
            && t == tid
        {
            return c;
        }
        let c = self.by_tid.get(&tid).copied().unwrap_or(NONE);
        self.last = Some((tid, c));
        c
    }

    pub(super) fn get(&self, id: u32) -> Option<&str> {
        self.strings.get(id as usize).map(String::as_str)
    }

    /// The names interned from id `from` on.
    pub(super) fn interned_from(&self, from: usize) -> &[String] {
        self.strings.get(from..).unwrap_or(&[])
    }
}

/// The loop state; feed it records, then [`Stream::finish`].
pub(super) struct Stream<'s> {
    setup: &'s Setup,
    out: Outbox,
    order: Order<Pending>,
    pub comms: Comms,
    pub samples: u64,
    lost: u64,
    unknown_ids: u64,
    bad_samples: u64,
    first_bad: Option<(u64, &'static str)>,
    short_payloads: BTreeMap<String, u64>,
    compressed: u64,
}

impl<'s> Stream<'s> {
    pub(super) fn new(setup: &'s Setup, out: Outbox) -> Self {
        Self {
            setup,
            out,
            order: Order::default(),
            comms: Comms::default(),
            samples: 0,
            lost: 0,
            unknown_ids: 0,
            bad_samples: 0,
            first_bad: None,
            short_payloads: BTreeMap::new(),
            compressed: 0,
        }
    }

    /// Handles one record.
    // Inlined into the record loop, as `Records::next` is; `sample` stays a call (inlined
    // too, it called the sample's parser out of line and ran 8% more instructions).
    #[inline(always)]
    pub(super) fn record(&mut self, r: &Record<'_>) {
        // Nearly every record is a sample: one compare, before the jump table the match
        // below compiles to (12 fewer instructions per record).
        if r.kind == PERF_RECORD_SAMPLE {
            return self.sample(r);
        }
        let e = self.setup.endian;
        match r.kind {
            PERF_RECORD_FINISHED_ROUND => {
                let (out, comms) = (&mut self.out, &self.comms);
                self.order.round(|p| out.push(p, comms));
            }
            PERF_RECORD_COMM => {
                if let (Some(pid), Some(tid), Some(name)) =
                    (e.u32(r.body, 0), e.u32(r.body, 4), r.body.get(8..))
                {
                    self.comms.set(pid, tid, padded_str(name));
                }
            }
            PERF_RECORD_LOST => self.lost += e.u64(r.body, 8).unwrap_or(0),
            PERF_RECORD_LOST_SAMPLES => self.lost += e.u64(r.body, 0).unwrap_or(0),
            PERF_RECORD_COMPRESSED | PERF_RECORD_COMPRESSED2 => self.compressed += 1,
            _ => {}
        }
    }

    #[inline]
    fn sample(&mut self, r: &Record<'_>) {
        let setup = self.setup;
        let Some(attr) = setup.attr_of(r.body) else {
            self.unknown_ids += 1;
            return;
        };
        let (Some(layout), Some(decoder)) = (setup.layouts.get(attr), setup.decoders.get(attr))
        else {
            self.unknown_ids += 1;
            return;
        };
        let s = match layout.parse(setup.endian, r.body) {
            Ok(s) => s,
            Err(why) => {
                self.bad_samples += 1;
                self.first_bad.get_or_insert((r.offset, why));
                return;
            }
        };
        self.samples += 1;
        let target = attr as u32;
        let kind = match s.raw {
            Some(raw) => match decoder.decode(setup.payload_endian, raw, target) {
                Some(k) => k,
                None => {
                    let name = setup.names.get(attr).cloned().unwrap_or_default();
                    *self.short_payloads.entry(name).or_default() += 1;
                    Kind::Other { target }
                }
            },
            None => Kind::Other { target },
        };
        let p = Pending {
            ts: s.time.unwrap_or(NO_TS),
            pid: s.pid.unwrap_or(NONE),
            tid: s.tid.unwrap_or(NONE),
            cpu: s.cpu.unwrap_or(NONE),
            comm: s.tid.map_or(NONE, |t| self.comms.of_tid(t)),
            kind,
        };
        let (out, comms) = (&mut self.out, &self.comms);
        // Only events that pair (begin/end on a thread) need time order; the others are
        // counted, and their times only widen the window (a min/max), so they skip the buffer.
        let paired = matches!(
            p.kind,
            Kind::Exit { .. }
                | Kind::Entry { .. }
                | Kind::Pio { .. }
                | Kind::Mmio { .. }
                | Kind::Msr { .. }
        );
        match s.time {
            Some(ts) if ts != NO_TS && paired => self.order.push(p, |p| out.push(p, comms)),
            _ => out.push(p, comms),
        }
    }

    /// Releases what is held to the sink, and hangs up (the sink's thread then ends);
    /// returns the warnings and the thread names.
    pub(super) fn finish(mut self) -> (Vec<String>, Comms) {
        let (out, comms) = (&mut self.out, &self.comms);
        self.order.finish(|p| out.push(p, comms));
        out.flush(comms);
        let mut w = Vec::new();
        if self.lost > 0 {
            w.push(format!(
                "perf lost {} events while recording (its buffers overflowed): the counts are lower bounds",
                self.lost
            ));
        }
        if self.unknown_ids > 0 {
            w.push(format!(
                "{} samples carry an id that no event of the file has; skipped",
                self.unknown_ids
            ));
        }
        if let Some((at, why)) = self.first_bad {
            w.push(format!(
                "{} samples could not be read (first at byte {at}: {why}); skipped",
                self.bad_samples
            ));
        }
        for (name, n) in &self.short_payloads {
            w.push(format!(
                "{n} {name} payloads are shorter than their format; counted by name only"
            ));
        }
        if self.compressed > 0 {
            w.push(format!(
                "{} zstd-compressed record blocks (perf record -z) were skipped: virtlens does not \
                 decompress them; record without -z",
                self.compressed
            ));
        }
        if self.order.forced > 0 {
            w.push(format!(
                "the file has no round markers: events were put in time order within windows of {} only",
                super::order::MAX_HELD
            ));
        }
        (w, self.comms)
    }

    /// Whether any sample or compressed block was seen.
    pub(super) fn compressed(&self) -> u64 {
        self.compressed
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn pending_stays_small() {
        assert!(std::mem::size_of::<super::Pending>() <= 48);
    }
}

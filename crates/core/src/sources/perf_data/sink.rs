//! The profile builder's side of reading a perf.data, on a thread of its own: the record loop
//! ([`super::stream`]) decodes samples and sends them here in batches, in the order it
//! releases them, so decoding records and building the profile run on two cores and the
//! profile is the one a single thread would build. Thread names travel with the batches (each
//! batch carries the names interned since the one before), so an event's name id always
//! resolves here.

use std::collections::BTreeSet;
use std::sync::mpsc::{Receiver, Sender, SyncSender};

use super::kvm::{Kind, NONE};
use super::setup::Setup;
use super::stream::{Comms, NO_TS, Pending};
use crate::events::{Event, EventKind, NameId, ProfileBuilder};
use crate::sources::touch_ahead::Toucher;

/// Events per batch (768 KiB): each hand-over wakes the other thread, so batches are large
/// (on 5 M events, 4,096 per batch took 0.21 s, 16,384 0.20 s, 1,024 0.28 s).
const BATCH: usize = 16384;

/// Batches sent and not yet built: with the one being filled and the one being built, the
/// memory in flight is bounded (3 MiB) whatever the file.
pub(super) const IN_FLIGHT: usize = 2;

/// Decoded events, with the thread names interned since the batch before.
pub(super) struct Batch {
    comms: Vec<String>,
    events: Vec<Pending>,
}

fn opt(v: u32) -> Option<u32> {
    (v != NONE).then_some(v)
}

/// Where decoded events go: the builder, and the VMM process ids seen.
pub(super) struct Sink<'s> {
    builder: ProfileBuilder,
    names: &'s [String],
    /// `names` interned in `builder`, so events of other kinds cost no string work.
    ids: Vec<NameId>,
    buf: String,
    comms: Vec<String>,
    pids: BTreeSet<u32>,
    last_pid: u32,
}

impl<'s> Sink<'s> {
    pub(super) fn new(setup: &'s Setup, mut builder: ProfileBuilder) -> Self {
        let ids = setup.names.iter().map(|n| builder.intern(n)).collect();
        Self {
            builder,
            names: &setup.names,
            ids,
            buf: String::new(),
            comms: Vec::new(),
            pids: BTreeSet::new(),
            last_pid: NONE,
        }
    }

    /// Builds every batch `inbox` brings, until the record loop hangs up, and sends the
    /// emptied batches back on `spent` to be filled again (a fresh batch of this size would
    /// be fresh pages from the kernel every time); returns the builder and the VMM process
    /// ids seen. After each batch, `toucher` (a mapped file's) touches the pages the record
    /// loop reads next: this thread has time to spare, the record loop has none.
    pub(super) fn run(
        mut self,
        inbox: Receiver<Batch>,
        spent: Sender<Vec<Pending>>,
        mut toucher: Option<Toucher<'_, '_>>,
    ) -> (ProfileBuilder, BTreeSet<u32>) {
        for mut batch in inbox {
            self.comms.append(&mut batch.comms);
            for p in &batch.events {
                self.push(p);
            }
            batch.events.clear();
            // The record loop may be done: then the batch is simply dropped.
            let _ = spent.send(batch.events);
            if let Some(t) = &mut toucher {
                t.touch();
            }
        }
        (self.builder, self.pids)
    }

    #[inline]
    fn push(&mut self, p: &Pending) {
        if p.pid != self.last_pid {
            self.last_pid = p.pid;
            self.pids.extend(opt(p.pid));
        }
        let kind = match p.kind {
            Kind::Other { target } if (target as usize) < self.ids.len() => EventKind::Interned {
                name: self.ids[target as usize],
            },
            k => k.to_event_kind(self.names, &mut self.buf),
        };
        let ev = Event {
            ts_ns: (p.ts != NO_TS).then_some(p.ts),
            tid: opt(p.tid),
            pid: opt(p.pid),
            cpu: opt(p.cpu),
            comm: opt(p.comm)
                .and_then(|c| self.comms.get(c as usize))
                .map(String::as_str),
            kind,
        };
        self.builder.push(&ev);
    }
}

/// The record loop's end of the channel to the [`Sink`].
pub(super) struct Outbox {
    tx: SyncSender<Batch>,
    spares: Receiver<Vec<Pending>>,
    events: Vec<Pending>,
    /// How many of the record loop's thread names the sink has been sent.
    comms_sent: usize,
}

impl Outbox {
    pub(super) fn new(tx: SyncSender<Batch>, spares: Receiver<Vec<Pending>>) -> Self {
        Self {
            tx,
            spares,
            events: Vec::with_capacity(BATCH),
            comms_sent: 0,
        }
    }

    /// Queues one event; a full batch goes to the sink.
    #[inline]
    pub(super) fn push(&mut self, p: Pending, comms: &Comms) {
        self.events.push(p);
        if self.events.len() >= BATCH {
            self.flush(comms);
        }
    }

    /// Sends what is queued, with the thread names the sink has not seen.
    pub(super) fn flush(&mut self, comms: &Comms) {
        if self.events.is_empty() {
            return;
        }
        let new = comms.interned_from(self.comms_sent);
        self.comms_sent += new.len();
        let batch = Batch {
            comms: new.to_vec(),
            events: std::mem::replace(
                &mut self.events,
                self.spares
                    .try_recv()
                    .unwrap_or_else(|_| Vec::with_capacity(BATCH)),
            ),
        };
        // The sink only hangs up when its thread ended early; `read` reports that on join.
        let _ = self.tx.send(batch);
    }
}

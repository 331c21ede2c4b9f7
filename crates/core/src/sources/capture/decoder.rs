//! From raw tracepoint payloads of a live capture to the profile: [`EventTable`] knows every
//! enabled event by its `common_type` id, with the kvm payload decoder of the perf.data
//! source (field positions from the kernel's own `format` files), and [`ProfileFeed`] hands
//! each event, with its time, CPU and thread, to the [`ProfileBuilder`], which pairs
//! `kvm_exit`/`kvm_entry` per thread where they fire. Where they do not (PVM), the profile
//! is what the events that did fire say, and a note tells so.

use std::fmt::Write as _;

use crate::decode::trace_format::EventFormat;
use crate::events::{Event, EventKind, NameId, ProfileBuilder};
use crate::profile::{Note, Origin, Profile};
use crate::sources::perf_data::bytes::Endian;
use crate::sources::perf_data::kvm::{Decoder, Kind};

/// Where `common_type` and `common_pid` are when a format does not say (every kernel since
/// 2.6.3x puts them there).
const TYPE_AT: (usize, usize) = (0, 2);
const PID_AT: (usize, usize) = (4, 4);

/// Live payloads are in the running kernel's byte order.
const NATIVE: Endian = if cfg!(target_endian = "big") {
    Endian::Big
} else {
    Endian::Little
};

/// Every event a capture can meet, by id.
#[derive(Debug, Clone)]
pub struct EventTable {
    formats: Vec<EventFormat>,
    decoders: Vec<Decoder>,
    /// Format index + 1 by event id (0: unknown id).
    by_id: Vec<u32>,
    type_at: (usize, usize),
    pid_at: (usize, usize),
    /// Remarks on formats virtlens cannot fully decode.
    pub notes: Vec<String>,
}

impl EventTable {
    /// The table of `formats` (as read from `events/SYSTEM/NAME/format`).
    pub fn new(formats: Vec<EventFormat>) -> Self {
        let mut notes = Vec::new();
        let decoders = formats
            .iter()
            .map(|f| {
                let (d, note) = Decoder::for_format(f);
                notes.extend(note);
                d
            })
            .collect();
        let max = formats.iter().map(|f| f.id).max().unwrap_or(0).min(0xffff);
        let mut by_id = vec![0u32; max as usize + 1];
        for (i, f) in formats.iter().enumerate() {
            if let Some(slot) = by_id.get_mut(f.id as usize) {
                *slot = i as u32 + 1;
            }
        }
        let common = |name: &str, default: (usize, usize)| {
            formats
                .first()
                .and_then(|f| f.field(name))
                .map_or(default, |fl| (fl.offset, fl.size))
        };
        let type_at = common("common_type", TYPE_AT);
        let pid_at = common("common_pid", PID_AT);
        Self {
            formats,
            decoders,
            by_id,
            type_at,
            pid_at,
            notes,
        }
    }

    /// The formats, by index.
    pub fn formats(&self) -> &[EventFormat] {
        &self.formats
    }

    /// The format index of a payload (from its `common_type`), `None` for an unknown id.
    #[inline]
    pub fn index_of(&self, payload: &[u8]) -> Option<usize> {
        let id = NATIVE.uint(payload, self.type_at.0, self.type_at.1)?;
        let slot = *self.by_id.get(usize::try_from(id).ok()?)?;
        (slot as usize).checked_sub(1)
    }

    /// The thread that hit the event (`common_pid`, which is a thread id).
    #[inline]
    pub fn tid_of(&self, payload: &[u8]) -> Option<u32> {
        NATIVE
            .uint(payload, self.pid_at.0, self.pid_at.1)
            .and_then(|v| u32::try_from(v).ok())
    }
}

/// What is known of a host thread: its process (set only for VMM processes), name and vCPU.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ThreadInfo {
    pub pid: Option<u32>,
    pub comm: Option<String>,
    pub vcpu: Option<u32>,
    /// The name handed to the builder, which reads a vCPU from QEMU's `CPU N/KVM` spelling:
    /// threads whose vCPU is known from another VMM's naming are handed over in that spelling.
    label: Option<String>,
}

impl ThreadInfo {
    pub fn new(pid: Option<u32>, comm: Option<String>, vcpu: Option<u32>) -> Self {
        let label = match vcpu {
            Some(n) => Some(format!("CPU {n}/KVM")),
            None => comm.clone(),
        };
        Self {
            pid,
            comm,
            vcpu,
            label,
        }
    }
}

/// One event of a capture: its format index (from [`EventTable::index_of`]), time, CPU,
/// thread and payload.
#[derive(Debug, Clone, Copy)]
pub struct Hit<'a> {
    pub index: usize,
    pub ts: u64,
    pub cpu: u32,
    pub tid: u32,
    pub payload: &'a [u8],
    pub thread: Option<&'a ThreadInfo>,
}

/// Feeds events into a profile builder; see the module doc.
#[derive(Debug)]
pub struct ProfileFeed {
    builder: ProfileBuilder,
    /// The builder's name id of each format, interned on first use.
    names: Vec<Option<NameId>>,
    /// Events seen per format.
    counts: Vec<u64>,
    buf: String,
    undecodable: u64,
}

impl ProfileFeed {
    /// A feed for events of `table` into a profile of `origin`.
    pub fn new(origin: Origin, table: &EventTable) -> Self {
        let n = table.formats.len();
        Self {
            builder: ProfileBuilder::new(origin),
            names: vec![None; n],
            counts: vec![0; n],
            buf: String::new(),
            undecodable: 0,
        }
    }

    /// How many events were fed.
    pub fn events(&self) -> u64 {
        self.builder.events()
    }

    /// Adds one event.
    pub fn push(&mut self, table: &EventTable, hit: &Hit<'_>) {
        let Hit {
            index,
            ts,
            cpu,
            tid,
            payload,
            thread,
        } = *hit;
        let (Some(decoder), Some(format)) = (table.decoders.get(index), table.formats.get(index))
        else {
            return;
        };
        if let Some(c) = self.counts.get_mut(index) {
            *c += 1;
        }
        let kind = match decoder.decode(NATIVE, payload, index as u32) {
            Some(Kind::Other { .. }) => None,
            Some(k) => Some(k),
            None => {
                self.undecodable += 1;
                None
            }
        };
        let kind = match kind {
            Some(k) => k.to_event_kind(&[], &mut self.buf),
            None => {
                let id = match self.names.get(index).copied().flatten() {
                    Some(id) => id,
                    None => {
                        let id = self.builder.intern(&format.name);
                        if let Some(slot) = self.names.get_mut(index) {
                            *slot = Some(id);
                        }
                        id
                    }
                };
                EventKind::Interned { name: id }
            }
        };
        let ev = Event {
            ts_ns: Some(ts),
            tid: Some(tid),
            pid: thread.and_then(|t| t.pid),
            cpu: Some(cpu),
            comm: thread.and_then(|t| t.label.as_deref()),
            kind,
        };
        self.builder.push(&ev);
    }

    /// The profile, with notes on what could not be decoded and, when `kvm_exit`/`kvm_entry`
    /// did not fire, on what the profile is built from instead.
    pub fn finish(self, table: &EventTable) -> Profile {
        let mut notes: Vec<String> = table.notes.clone();
        if self.undecodable > 0 {
            notes.push(format!(
                "{} events were shorter than their format says; they are counted by name only",
                self.undecodable
            ));
        }
        let count_of = |name: &str| {
            table
                .formats
                .iter()
                .zip(&self.counts)
                .filter(|(f, _)| f.system == "kvm" && f.name == name)
                .map(|(_, c)| *c)
                .sum::<u64>()
        };
        let exits = count_of("kvm_exit") + count_of("kvm_entry");
        let total = self.builder.events();
        let counts = self.counts;
        let mut profile = self.builder.finish();
        if exits == 0 && total > 0 {
            notes.push(no_exit_note(
                table,
                &counts,
                profile.origin.backend.as_deref(),
            ));
        }
        profile
            .warnings
            .extend(notes.into_iter().map(|message| Note {
                line: None,
                message,
            }));
        profile
    }
}

/// "kvm_exit/kvm_entry did not fire; the profile is built from kvm_pio (N), …", with the
/// reason that fits the capture's backend: PVM never fires them; on VMX or SVM, where every
/// exit fires them, the guest made no exit while the capture ran.
fn no_exit_note(table: &EventTable, counts: &[u64], backend: Option<&str>) -> String {
    let enabled = table
        .formats
        .iter()
        .any(|f| f.system == "kvm" && (f.name == "kvm_exit" || f.name == "kvm_entry"));
    let mut fired: Vec<(u64, &str)> = table
        .formats
        .iter()
        .zip(counts)
        .filter(|(_, c)| **c > 0)
        .map(|(f, c)| (*c, f.name.as_str()))
        .collect();
    fired.sort_by(|a, b| b.cmp(a));
    let mut list = String::new();
    for (i, (c, name)) in fired.iter().take(8).enumerate() {
        if i > 0 {
            list.push_str(", ");
        }
        let _ = write!(list, "{name} ({c})");
    }
    if fired.len() > 8 {
        let _ = write!(list, ", and {} more", fired.len() - 8);
    }
    let why = match (enabled, backend) {
        (false, _) => "kvm_exit and kvm_entry were not captured",
        (true, Some("pvm")) => {
            "kvm_exit and kvm_entry were enabled but never fired (this is the PVM backend: guest \
             ring-0 code is emulated and makes no VM exits)"
        }
        (true, Some("vmx" | "svm")) => {
            "kvm_exit and kvm_entry were enabled but never fired: on this VMX/SVM backend every \
             exit fires them, so the guest made no VM exit while the capture ran (it was not \
             running, or ran without exiting)"
        }
        (true, _) => {
            "kvm_exit and kvm_entry were enabled but never fired: either the guest made no VM \
             exit while the capture ran, or the backend does not emit them (KVM's PVM backend \
             emulates guest ring-0 code and never does)"
        }
    };
    format!(
        "{why}: there is no VM-exit table and no exit durations; the profile is built from the \
         events that did fire: {list}"
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode::trace_format;
    use crate::profile::{Access, Key, TableKind};

    fn pio_format() -> EventFormat {
        trace_format::parse(
            "kvm",
            "name: kvm_pio\nID: 110\nformat:\n\
             \tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\
             \tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\
             \tfield:unsigned int rw;\toffset:8;\tsize:4;\tsigned:0;\n\
             \tfield:unsigned int port;\toffset:12;\tsize:4;\tsigned:0;\n",
        )
        .unwrap()
    }

    fn fpu_format() -> EventFormat {
        trace_format::parse(
            "kvm",
            "name: kvm_fpu\nID: 37\nformat:\n\
             \tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\
             \tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\
             \tfield:u32 load;\toffset:8;\tsize:4;\tsigned:0;\n",
        )
        .unwrap()
    }

    fn payload(id: u16, tid: u32, rest: &[u32]) -> Vec<u8> {
        let mut p = id.to_ne_bytes().to_vec();
        p.extend_from_slice(&[0, 0]);
        p.extend_from_slice(&tid.to_ne_bytes());
        for r in rest {
            p.extend_from_slice(&r.to_ne_bytes());
        }
        p
    }

    #[test]
    fn exits_pair_with_entries_on_their_thread() {
        let common = "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\
                      \tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n";
        let exit = trace_format::parse(
            "kvm",
            &format!(
                "name: kvm_exit\nID: 103\nformat:\n{common}\
                 \tfield:unsigned int exit_reason;\toffset:8;\tsize:4;\tsigned:0;\n\
                 \tfield:u32 isa;\toffset:12;\tsize:4;\tsigned:0;\n\
                 \tfield:unsigned int vcpu_id;\toffset:16;\tsize:4;\tsigned:0;\n"
            ),
        )
        .unwrap();
        let entry = trace_format::parse(
            "kvm",
            &format!(
                "name: kvm_entry\nID: 104\nformat:\n{common}\
                 \tfield:unsigned int vcpu_id;\toffset:8;\tsize:4;\tsigned:0;\n"
            ),
        )
        .unwrap();
        let table = EventTable::new(vec![exit, entry]);
        let mut feed = ProfileFeed::new(Origin::new("capture", None), &table);
        // HLT (12) from 100 to 400 and from 1000 to 1100, on thread 7 (vCPU 2).
        let events = [
            (100, payload(103, 7, &[12, 1, 2])),
            (400, payload(104, 7, &[2])),
            (1000, payload(103, 7, &[12, 1, 2])),
            (1100, payload(104, 7, &[2])),
        ];
        for (ts, p) in &events {
            let hit = Hit {
                index: table.index_of(p).unwrap(),
                ts: *ts,
                cpu: 1,
                tid: 7,
                payload: p,
                thread: None,
            };
            feed.push(&table, &hit);
        }
        let p = feed.finish(&table);
        let t = p
            .tables
            .iter()
            .find(|t| t.kind == TableKind::Vmexit)
            .unwrap();
        let hlt = &t.rows[0];
        assert_eq!(hlt.key.key_text(), "HLT");
        assert_eq!((hlt.count, hlt.vcpu), (2, Some(2)));
        assert_eq!(hlt.time.total_ns, Some(400));
        assert!(p.warnings.is_empty(), "{:?}", p.warnings);
    }

    #[test]
    fn pio_and_other_events_become_rows_with_vcpu_and_a_pvm_note() {
        let table = EventTable::new(vec![pio_format(), fpu_format()]);
        let mut feed = ProfileFeed::new(Origin::new("capture", None), &table);
        let thread = ThreadInfo::new(Some(100), Some("fc_vcpu 1".into()), Some(1));
        for i in 0..3u64 {
            for p in [payload(110, 101, &[1, 0x510]), payload(37, 101, &[1])] {
                let idx = table.index_of(&p).unwrap();
                assert_eq!(table.tid_of(&p), Some(101));
                let hit = Hit {
                    index: idx,
                    ts: 1000 + i,
                    cpu: 0,
                    tid: 101,
                    payload: &p,
                    thread: Some(&thread),
                };
                feed.push(&table, &hit);
            }
        }
        assert_eq!(table.index_of(&payload(999, 1, &[])), None);
        assert_eq!(feed.events(), 6);
        let p = feed.finish(&table);
        let io = p
            .tables
            .iter()
            .find(|t| t.kind == TableKind::Ioport)
            .unwrap();
        assert_eq!(
            (
                &io.rows[0].key,
                io.rows[0].count,
                io.rows[0].pid,
                io.rows[0].vcpu
            ),
            (
                &Key::Port {
                    port: 0x510,
                    access: Some(Access::Out)
                },
                3,
                Some(100),
                Some(1)
            )
        );
        let events = p
            .tables
            .iter()
            .find(|t| t.kind == TableKind::Events)
            .unwrap();
        assert!(
            events
                .rows
                .iter()
                .any(|r| r.key.key_text() == "kvm_fpu" && r.count == 3)
        );
        let note = &p.warnings[0].message;
        assert!(
            note.contains("not captured") && note.contains("kvm_pio (3)"),
            "{note}"
        );
    }
}

//! Scanning a block of a trace file on a helper thread: the costly part of every line (the
//! newline search, UTF-8 and clean-up checks, the column split and the event text decoding),
//! done without the reader's state. An event line comes back as byte ranges and numbers,
//! nothing allocated per line; any other line (blank, header, wrapped, damaged, prose) comes
//! back as its byte range only, for the replay to read with the sequential code.

use super::line::{self, Dialect, PrefixMemo, Stamp};
use super::{Reader, kinds};
use crate::decode::Isa;
use crate::decode::apicv_inhibit::Change;
use crate::events::{EventKind, Reason};
use crate::sources::lines::{MAX_LINE, has_escape_bytes, quoted};
use crate::sources::unread::excerpt;

/// A byte range of a block's text.
pub(super) type Span = (u32, u32);

/// One line of a block, as the worker left it for the replay.
#[derive(Debug, Clone, Copy)]
pub(super) enum Item {
    /// An event line (its raw bytes): split and decoded, at this index of `Block::events`.
    Event(Span, u32),
    /// Any other line (its raw bytes, newline included): read by the sequential code.
    Line(Span),
    /// A line longer than [`MAX_LINE`]: the input is refused there.
    TooLong,
}

/// An event line's columns and decoded kind, as ranges of the block's text.
#[derive(Debug)]
pub(super) struct Scanned {
    /// The line without its blanks around (what [`Reader::line`] calls `t`).
    t: Span,
    comm: Option<Span>,
    subsystem: Option<Span>,
    event: Span,
    text: Span,
    pid: Option<u32>,
    tid: Option<u32>,
    cpu: Option<u32>,
    stamp: Stamp,
    dialect: Dialect,
    /// The kind, the exit's `FAILED_VMENTRY` and `CAN'T FIND FIELD` marks; `None` when the
    /// text has none of the known shapes.
    kind: Option<(Kind, bool, bool)>,
}

/// An [`EventKind`] whose names are ranges of the block's text.
#[derive(Debug)]
pub(super) enum Kind {
    /// A kind without names.
    Plain(EventKind<'static>),
    ExitName {
        reason: Span,
        isa: Option<Isa>,
        vcpu: Option<u32>,
        rip: Option<u64>,
    },
    UserspaceExit(Span),
    Apicv {
        name: Span,
        change: Change,
        names: Span,
    },
    SchedWakeup {
        name: Span,
        tid: u32,
    },
    Other(Span),
}

/// A block's bytes: from one byte before the block to the end of its last line, as text when
/// they are valid UTF-8 (else no line is an [`Item::Event`]).
#[derive(Debug)]
pub(super) enum Data<'a> {
    /// Read into a buffer of the block's own.
    Read(Result<String, Vec<u8>>),
    /// Where the file is mapped.
    Mapped(Result<&'a str, &'a [u8]>),
}

impl Data<'_> {
    /// The bytes as text, when they are valid UTF-8.
    pub(super) fn text(&self) -> Option<&str> {
        match self {
            Data::Read(Ok(t)) => Some(t),
            Data::Mapped(Ok(t)) => Some(t),
            Data::Read(Err(_)) | Data::Mapped(Err(_)) => None,
        }
    }

    pub(super) fn bytes(&self) -> &[u8] {
        match self {
            Data::Read(Ok(t)) => t.as_bytes(),
            Data::Read(Err(b)) => b,
            Data::Mapped(Ok(t)) => t.as_bytes(),
            Data::Mapped(Err(b)) => b,
        }
    }

    /// The buffer to read the next block into (none for a mapped block).
    pub(super) fn into_buffer(self) -> Vec<u8> {
        match self {
            Data::Read(d) => d.map_or_else(|v| v, String::into_bytes),
            Data::Mapped(_) => Vec::new(),
        }
    }
}

/// A block, scanned.
#[derive(Debug)]
pub(super) struct Block<'a> {
    pub data: Data<'a>,
    pub items: Vec<Item>,
    pub events: Vec<Scanned>,
    /// The last line had no newline after it (the end of the file).
    pub unterminated: bool,
}

/// Splits the block `data` into its lines (those starting in `start..own_end`) and scans
/// each, into `items` and `events` (emptied first: they are reused).
pub(super) fn scan(
    data: Data<'_>,
    mut items: Vec<Item>,
    mut events: Vec<Scanned>,
    start: usize,
    own_end: usize,
) -> Block<'_> {
    let (text, bytes) = (data.text(), data.bytes());
    items.clear();
    events.clear();
    let mut unterminated = false;
    // Escape bytes are rare: one search of the whole block spares one per line.
    let escapes = has_escape_bytes(bytes.get(start..).unwrap_or_default());
    let mut memo = PrefixMemo::default();
    let mut pos = start;
    while pos < own_end {
        let end = match memchr::memchr(b'\n', &bytes[pos..]) {
            Some(j) => pos + j + 1,
            None => {
                unterminated = true;
                bytes.len()
            }
        };
        if end - pos > MAX_LINE + 2 {
            items.push(Item::TooLong);
            break;
        }
        let span = (pos as u32, end as u32);
        items.push(
            match text.and_then(|t| scan_line(t, pos, end, escapes, &mut memo)) {
                Some(e) => {
                    events.push(e);
                    Item::Event(span, events.len() as u32 - 1)
                }
                None => Item::Line(span),
            },
        );
        pos = end;
    }
    Block {
        data,
        items,
        events,
        unterminated,
    }
}

/// The event line in `text[pos..end]` when it is one the sequential reader reads with no
/// state but its own: clean, neither blank nor a comment, split as an event of a dialect with
/// a task or CPU, with its text on the same line. Every other line is left to the replay.
/// `escapes`: whether the block holds escape bytes anywhere (else no line needs the search).
fn scan_line(
    text: &str,
    pos: usize,
    end: usize,
    escapes: bool,
    memo: &mut PrefixMemo,
) -> Option<Scanned> {
    let raw = text.get(pos..end)?;
    let t = raw.trim_ascii();
    // A quoted line's text starts with its quote mark: only then is the line looked at again.
    if (escapes && has_escape_bytes(raw.as_bytes())) || (t.starts_with('>') && quoted(raw)) {
        return None;
    }
    if t.is_empty() || t.starts_with('#') {
        return None;
    }
    let l = line::split_with(t, memo)?;
    if l.text.is_empty() || l.dialect == Dialect::Bare || l.event.starts_with("PERF_RECORD_") {
        return None;
    }
    let span = |s: &str| span_of(text, s);
    let kind = match kinds::decode(l.event, l.text) {
        Some(d) => {
            let (failed, noise) = d.exit.map_or((false, false), |e| (e.failed_entry, e.noise));
            Some((kind_of(text, d.kind)?, failed, noise))
        }
        None => None,
    };
    Some(Scanned {
        t: span(t)?,
        comm: match l.comm {
            Some(c) => Some(span(c)?),
            None => None,
        },
        subsystem: match l.subsystem {
            Some(c) => Some(span(c)?),
            None => None,
        },
        event: span(l.event)?,
        text: span(l.text)?,
        pid: l.pid,
        tid: l.tid,
        cpu: l.cpu,
        stamp: l.stamp,
        dialect: l.dialect,
        kind,
    })
}

/// Where `s`, a slice of `text`, lies in it; `None` when it is not one.
fn span_of(text: &str, s: &str) -> Option<Span> {
    let at = (s.as_ptr() as usize).checked_sub(text.as_ptr() as usize)?;
    let end = at.checked_add(s.len())?;
    (end <= text.len()).then_some(())?;
    Some((u32::try_from(at).ok()?, u32::try_from(end).ok()?))
}

/// `kind` with its names as ranges of `text`.
// Inlined: returned through memory, the kind was read back with wide loads right after its
// narrow stores, a store-forwarding stall `perf annotate` put at a sixth of `scan`.
#[inline(always)]
fn kind_of(text: &str, kind: EventKind<'_>) -> Option<Kind> {
    let span = |s: &str| span_of(text, s);
    Some(match kind {
        EventKind::Exit {
            reason: Reason::Code(c),
            isa,
            vcpu,
            rip,
        } => Kind::Plain(EventKind::Exit {
            reason: Reason::Code(c),
            isa,
            vcpu,
            rip,
        }),
        EventKind::Exit {
            reason: Reason::Name(n),
            isa,
            vcpu,
            rip,
        } => Kind::ExitName {
            reason: span(n)?,
            isa,
            vcpu,
            rip,
        },
        EventKind::Entry { vcpu } => Kind::Plain(EventKind::Entry { vcpu }),
        EventKind::Pio { write, port } => Kind::Plain(EventKind::Pio { write, port }),
        EventKind::Mmio { access, gpa } => Kind::Plain(EventKind::Mmio { access, gpa }),
        EventKind::Msr { write, index } => Kind::Plain(EventKind::Msr { write, index }),
        EventKind::Hypercall { nr, hyperv } => Kind::Plain(EventKind::Hypercall { nr, hyperv }),
        EventKind::Interned { name } => Kind::Plain(EventKind::Interned { name }),
        EventKind::UserspaceExit { reason } => Kind::UserspaceExit(span(reason)?),
        EventKind::ApicvInhibit {
            name,
            change,
            names,
        } => Kind::Apicv {
            name: span(name)?,
            change,
            names: span(names)?,
        },
        EventKind::SchedSwitch {
            prev,
            prev_runnable,
            next,
        } => Kind::Plain(EventKind::SchedSwitch {
            prev,
            prev_runnable,
            next,
        }),
        EventKind::SchedWakeup { name, tid } => Kind::SchedWakeup {
            name: span(name)?,
            tid,
        },
        EventKind::Other { name } => Kind::Other(span(name)?),
    })
}

/// The text of `s` in `text` (empty if out of range: never, as `span_of` made it).
fn at(text: &str, s: Span) -> &str {
    text.get(s.0 as usize..s.1 as usize).unwrap_or("")
}

impl Kind {
    fn resolve<'a>(&self, text: &'a str) -> EventKind<'a> {
        match *self {
            Kind::Plain(k) => k,
            Kind::ExitName {
                reason,
                isa,
                vcpu,
                rip,
            } => EventKind::Exit {
                reason: Reason::Name(at(text, reason)),
                isa,
                vcpu,
                rip,
            },
            Kind::UserspaceExit(r) => EventKind::UserspaceExit {
                reason: at(text, r),
            },
            Kind::Apicv {
                name,
                change,
                names,
            } => EventKind::ApicvInhibit {
                name: at(text, name),
                change,
                names: at(text, names),
            },
            Kind::SchedWakeup { name, tid } => EventKind::SchedWakeup {
                name: at(text, name),
                tid,
            },
            Kind::Other(name) => EventKind::Other {
                name: at(text, name),
            },
        }
    }
}

impl Reader {
    /// Line `n`, an event line a worker scanned: what [`Reader::line`] does with it.
    pub(super) fn scanned(&mut self, n: usize, e: &Scanned, text: &str) {
        let t = at(text, e.t);
        if self.first_line.is_none() {
            self.first_line = Some((n, excerpt(t)));
        }
        if let Some(w) = self.wrapped.take() {
            // An event line never continues a wrapped one: this deals with the wrapped line
            // on its own and returns false.
            self.join(w, t);
        }
        let l = line::Line {
            comm: e.comm.map(|s| at(text, s)),
            pid: e.pid,
            tid: e.tid,
            cpu: e.cpu,
            stamp: e.stamp,
            subsystem: e.subsystem.map(|s| at(text, s)),
            event: at(text, e.event),
            text: at(text, e.text),
            dialect: e.dialect,
        };
        let d = e
            .kind
            .as_ref()
            .map(|(k, failed, noise)| (k.resolve(text), *failed, *noise));
        self.decoded(n, &l, d);
    }
}

//! Reading a trace file on every core, with the same profile as reading it line by line.
//!
//! The file is cut into blocks of [`BLOCK`] bytes; a block owns the lines that start in it
//! (the line that runs over its end is read on from the next bytes). Worker threads, one per
//! core, read their blocks with positioned reads and do the costly part of every line: the
//! newline search, UTF-8 and clean-up checks, the column split and the event text decoding
//! ([`scan`]). An event line comes back as byte ranges and numbers, nothing allocated per line;
//! any other line (blank, header, wrapped, damaged, prose) comes back as its byte range only.
//! The calling thread then replays the blocks in file order through the one [`Reader`] and its
//! [`crate::events::ProfileBuilder`], exactly as the sequential reader would have seen them:
//! pairing of exits with entries, line numbers in notes, wrapped lines joined across block
//! ends, the first-line and nothing-found checks are all the sequential code, run in the
//! sequential order, so the profile is the same to the last bit (`parallel_tests` checks it).
//!
//! Memory: each worker holds at most two blocks (one being scanned, one waiting in its
//! channel), so it is bounded by the number of cores, never by the file.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::sync::mpsc;

use super::line::{self, Dialect, Stamp};
use super::{NOTHING_AFTER, Reader, kinds};
use crate::decode::Isa;
use crate::decode::apicv_inhibit::Change;
use crate::error::{Error, Result};
use crate::events::{EventKind, Reason};
use crate::profile::Profile;
use crate::sources::lines::{MAX_LINE, is_clean, line_text, too_long};
use crate::sources::unread::excerpt;

/// Bytes of the file per block.
pub(super) const BLOCK: usize = 2 << 20;

/// How much more is read at a time after a block's end, to finish its last line.
const TAIL_READ: usize = 64 << 10;

/// A byte range of a block's text.
type Span = (u32, u32);

/// One line of a block, as the worker left it for the replay.
#[derive(Debug, Clone, Copy)]
enum Item {
    /// An event line (its raw bytes): split and decoded, at this index of `Block::events`.
    Event(Span, u32),
    /// Any other line (its raw bytes, newline included): read by the sequential code.
    Line(Span),
    /// A line longer than [`MAX_LINE`]: the input is refused there.
    TooLong,
}

/// An event line's columns and decoded kind, as ranges of the block's text.
#[derive(Debug)]
struct Scanned {
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
enum Kind {
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

/// A block, scanned.
#[derive(Debug)]
struct Block {
    /// The bytes read (from one byte before the block, to the end of its last line), as text
    /// when they are valid UTF-8 (else no line is an [`Item::Event`]).
    data: Result<String, Vec<u8>>,
    items: Vec<Item>,
    events: Vec<Scanned>,
    /// The last line had no newline after it (the end of the file).
    unterminated: bool,
}

/// Reads `file` (a regular file; `path` names it) on `workers` threads in blocks of `block`
/// bytes.
pub(super) fn read_file(file: &File, path: &str, workers: usize, block: usize) -> Result<Profile> {
    let len = file.metadata().map_err(|e| io(path, e))?.len();
    let block = block.max(1);
    let workers = workers.max(1);
    let blocks = usize::try_from(len.div_ceil(block as u64)).unwrap_or(usize::MAX);
    std::thread::scope(|s| {
        let mut inbox = Vec::with_capacity(workers);
        let mut spent = Vec::with_capacity(workers);
        for w in 0..workers {
            let (tx, rx) = mpsc::sync_channel::<std::io::Result<Block>>(1);
            // Replayed blocks come back to be filled again: no fresh pages per block.
            let (back, spares) = mpsc::channel::<Block>();
            inbox.push(rx);
            spent.push(back);
            s.spawn(move || {
                for i in (w..blocks).step_by(workers) {
                    let (mut bytes, items, events) = match spares.try_recv() {
                        Ok(b) => (
                            b.data.map_or_else(|v| v, String::into_bytes),
                            b.items,
                            b.events,
                        ),
                        Err(_) => Default::default(),
                    };
                    let b = load(file, i, block, len, &mut bytes)
                        .map(|(start, end)| scan(bytes, items, events, start, end));
                    let failed = b.is_err();
                    // The reader stopped (it found its answer, or an error): stop too.
                    if tx.send(b).is_err() || failed {
                        break;
                    }
                }
            });
        }
        replay(&inbox, &spent, blocks, path)
    })
}

/// The blocks in file order through one [`Reader`].
fn replay(
    inbox: &[mpsc::Receiver<std::io::Result<Block>>],
    spent: &[mpsc::Sender<Block>],
    blocks: usize,
    path: &str,
) -> Result<Profile> {
    let mut state = Reader::new(path);
    let mut base = 0usize;
    let mut cut = None;
    for i in 0..blocks {
        let b = inbox
            .get(i % inbox.len())
            .and_then(|rx| rx.recv().ok())
            .ok_or_else(|| Error::Input {
                path: path.to_string(),
                message: "a reading thread stopped before the end of the file".into(),
            })?
            .map_err(|e| io(path, e))?;
        let (text, bytes) = match &b.data {
            Ok(t) => (Some(t.as_str()), t.as_bytes()),
            Err(bytes) => (None, bytes.as_slice()),
        };
        for (k, item) in b.items.iter().enumerate() {
            let n = base + k + 1;
            let scanned = match *item {
                Item::Event(_, e) => text.zip(b.events.get(e as usize)),
                _ => None,
            };
            match (*item, scanned) {
                (_, Some((text, e))) => state.scanned(n, e, text),
                (Item::Line(span) | Item::Event(span, _), None) => {
                    let raw = bytes.get(span.0 as usize..span.1 as usize).unwrap_or(&[]);
                    state.line(n, &line_text(raw));
                }
                (Item::TooLong, None) => return Err(too_long(path, n)),
            }
            if n == NOTHING_AFTER && state.builder.events() == 0 && !state.top.has_rows() {
                return state.finish(None);
            }
        }
        base += b.items.len();
        if b.unterminated && !b.items.is_empty() {
            cut = Some(base);
        }
        if let Some(back) = spent.get(i % spent.len()) {
            // The worker may be done: then the block is simply dropped.
            let _ = back.send(b);
        }
    }
    state.finish(cut)
}

fn io(path: &str, e: std::io::Error) -> Error {
    Error::Io {
        path: path.to_string(),
        source: e,
    }
}

/// Reads block `i`: from the byte before it (to see whether a line starts at its first byte)
/// to the end of the last line that starts in it, into `bytes`. Returns where its first line
/// starts and where its own lines end (a line starting at or after it is the next block's).
fn load(
    file: &File,
    i: usize,
    block: usize,
    len: u64,
    bytes: &mut Vec<u8>,
) -> std::io::Result<(usize, usize)> {
    let lo = (i as u64 * block as u64).saturating_sub(1);
    let hi = ((i as u64 + 1) * block as u64).min(len);
    bytes.resize(usize::try_from(hi - lo).unwrap_or(0), 0);
    let got = read_at(file, bytes, lo)?;
    bytes.truncate(got);
    let own_end = bytes.len();
    let start = if i == 0 {
        0
    } else {
        match memchr::memchr(b'\n', &bytes[..own_end.saturating_sub(1)]) {
            Some(j) => j + 1,
            None => own_end,
        }
    };
    if start >= own_end || bytes.last() == Some(&b'\n') {
        return Ok((start, own_end));
    }
    // The last line runs on into the next block: read up to its newline (or the end of the
    // file, or past the longest line there may be).
    let mut at = lo + bytes.len() as u64;
    loop {
        let from = bytes.len();
        bytes.resize(from + TAIL_READ, 0);
        let got = read_at(file, &mut bytes[from..], at)?;
        bytes.truncate(from + got);
        at += got as u64;
        if let Some(j) = memchr::memchr(b'\n', &bytes[from..]) {
            bytes.truncate(from + j + 1);
            break;
        }
        if got == 0 || bytes.len() - own_end > MAX_LINE + 2 {
            break;
        }
    }
    Ok((start, own_end))
}

/// `buf.len()` bytes at `offset`, fewer only at the end of the file.
fn read_at(file: &File, buf: &mut [u8], offset: u64) -> std::io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match file.read_at(&mut buf[got..], offset + got as u64) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

/// Splits the loaded block `bytes` into its lines (those starting in `start..own_end`) and
/// scans each, into `items` and `events` (emptied first: they are reused).
fn scan(
    bytes: Vec<u8>,
    mut items: Vec<Item>,
    mut events: Vec<Scanned>,
    start: usize,
    own_end: usize,
) -> Block {
    let data = String::from_utf8(bytes).map_err(|e| e.into_bytes());
    let (text, bytes) = match &data {
        Ok(t) => (Some(t.as_str()), t.as_bytes()),
        Err(b) => (None, b.as_slice()),
    };
    items.clear();
    events.clear();
    let mut unterminated = false;
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
        items.push(match text.and_then(|t| scan_line(t, pos, end)) {
            Some(e) => {
                events.push(e);
                Item::Event(span, events.len() as u32 - 1)
            }
            None => Item::Line(span),
        });
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
fn scan_line(text: &str, pos: usize, end: usize) -> Option<Scanned> {
    let raw = text.get(pos..end)?;
    let line = raw.trim_end_matches(['\n', '\r']);
    if !is_clean(line) {
        return None;
    }
    let t = line.trim_ascii();
    if t.is_empty() || t.starts_with('#') {
        return None;
    }
    let l = line::split(t)?;
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
    fn scanned(&mut self, n: usize, e: &Scanned, text: &str) {
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

#[cfg(test)]
#[path = "parallel_tests.rs"]
mod tests;

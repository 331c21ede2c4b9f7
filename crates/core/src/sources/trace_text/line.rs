//! Splitting one trace line into its columns without allocating: the thread (comm, pid, tid),
//! the host CPU, the timestamp, the event name and the event's own text. One splitter serves
//! every dialect, anchored on the `TIMESTAMP:` and `EVENT:` tokens that all of them print:
//!
//! - `perf script`: `COMM TID [CPU] SECS: kvm:kvm_exit: TEXT`, where COMM may hold spaces
//!   (`CPU 0/KVM`), TID may be `PID/TID`, and `-F` may drop any column (`[001] SECS: EVENT:`);
//! - `trace-cmd report`: `COMM-PID [CPU] SECS: kvm_exit: TEXT` (split at the last `-`);
//! - raw ftrace (`trace`, `trace_pipe`): the same plus the latency flags (`d..2.`) after the
//!   CPU and, with `record-tgid`, a `(TGID)` column (`(-------)` when unknown);
//! - bare event lines as patch mails paste them: `kvm_exit: reason EXIT_RSM rip 0x… info 0 0`,
//!   with no task, CPU or timestamp, or only the `comm-pid` (only for `kvm_*` events, so prose
//!   is not taken for one).
//!
//! [`prefix_only`] recognises the first half of a line a mailer wrapped right after the
//! timestamp (`qemu-system-x86-5665  [000] ....   280.971121:`), so the reader can join it
//! with the event on the next line.

use super::fields::{all_digits, dec32, is_ident};
use crate::sources::numbers::decimal_scaled;

/// Which tool printed a line, as far as its shape tells.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Dialect {
    /// `perf script`: events carry their subsystem (`kvm:kvm_exit:`).
    PerfScript,
    /// `trace-cmd report`: `comm-pid [cpu] ts: event:`.
    TraceCmd,
    /// Raw ftrace text: latency flags after the CPU, or a TGID column.
    Ftrace,
    /// A bare `kvm_*:` event line without task, CPU or timestamp (pasted in mails).
    Bare,
}

impl Dialect {
    pub(super) const ALL: [Dialect; 4] = [
        Dialect::PerfScript,
        Dialect::TraceCmd,
        Dialect::Ftrace,
        Dialect::Bare,
    ];

    /// How notes name the dialect.
    pub(super) fn describe(self) -> &'static str {
        match self {
            Dialect::PerfScript => "`perf script` lines",
            Dialect::TraceCmd => "`trace-cmd report` lines",
            Dialect::Ftrace => "raw ftrace lines (`trace`/`trace_pipe`, latency flags or TGID)",
            Dialect::Bare => {
                "bare event lines without CPU or timestamp, some without the task too (as \
                 pasted in mails): events are counted, but without timestamps exits cannot be \
                 paired with entries, so there are no durations"
            }
        }
    }

    pub(super) fn index(self) -> usize {
        match self {
            Dialect::PerfScript => 0,
            Dialect::TraceCmd => 1,
            Dialect::Ftrace => 2,
            Dialect::Bare => 3,
        }
    }
}

/// The timestamp column.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Stamp {
    /// No timestamp column.
    Missing,
    /// Seconds with a fraction, as exact nanoseconds.
    Ns(u64),
    /// An integer: a raw clock (`counter`, `x86-tsc`) whose unit is unknown.
    Raw,
}

/// The columns of one event line, borrowed from it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Line<'a> {
    pub comm: Option<&'a str>,
    pub pid: Option<u32>,
    pub tid: Option<u32>,
    pub cpu: Option<u32>,
    pub stamp: Stamp,
    /// `kvm` in `kvm:kvm_exit:` (perf script only).
    pub subsystem: Option<&'a str>,
    /// The event name without its subsystem: `kvm_exit`.
    pub event: &'a str,
    /// The event's text after its name, leading blanks removed.
    pub text: &'a str,
    pub dialect: Dialect,
}

/// How many `word: ` tokens before the timestamp are tolerated (a comm holding `: `).
const MAX_EARLY_TOKENS: usize = 3;

/// The columns of `line` when it is an event line: a `NAME:` token (after the timestamp
/// when there is one), and at least a timestamp, a `[cpu]` or a `subsystem:` to tell it
/// from prose such as `Samples: 887K`.
pub(super) fn split(line: &str) -> Option<Line<'_>> {
    split_by(line, prefix)
}

/// [`split`], for a reader that splits many lines: the columns before the timestamp are read
/// once for a run of lines that repeat them.
pub(super) fn split_with<'a>(line: &'a str, memo: &mut PrefixMemo) -> Option<Line<'a>> {
    split_by(line, |before| memo.prefix(before))
}

/// [`split`], with `prefix_of` reading the columns before the timestamp.
#[inline(always)]
fn split_by(line: &str, mut prefix_of: impl FnMut(&str) -> Prefix) -> Option<Line<'_>> {
    let b = line.as_bytes();
    let mut from = 0;
    let mut stamp: Option<(usize, Stamp)> = None;
    let mut early = 0;
    while let Some(i) = token_end(b, from) {
        from = i + 1;
        let start = token_start(b, i);
        let token = &line[start..i];
        if stamp.is_none()
            && let Some(s) = timestamp(token)
        {
            stamp = Some((start, s));
            continue;
        }
        // Tokens are a few bytes: a plain loop (memchr measured no faster).
        let (subsystem, event) = match token.bytes().position(|c| c == b':') {
            Some(c) => (Some(&token[..c]), &token[c + 1..]),
            None => (None, token),
        };
        if is_ident(event) && subsystem.is_none_or(is_ident) {
            let before = &line[..stamp.map_or(start, |(s, _)| s)];
            let prefix = prefix_of(before);
            let comm = prefix.comm.map(|(from, to)| &before[from..to]);
            if stamp.is_none() && subsystem.is_none() && prefix.cpu.is_none() {
                // Bare: nothing before the event, or only the `comm-pid` an author kept.
                let lone_task = prefix.tid.is_some() && !before.trim_ascii().contains([' ', '\t']);
                let bare =
                    (before.trim_ascii().is_empty() || lone_task) && event.starts_with("kvm_");
                return bare.then(|| Line {
                    comm,
                    pid: prefix.pid,
                    tid: prefix.tid,
                    cpu: None,
                    stamp: Stamp::Missing,
                    subsystem: None,
                    event,
                    text: line[from..].trim_ascii_start(),
                    dialect: Dialect::Bare,
                });
            }
            let dialect = if subsystem.is_some() {
                Dialect::PerfScript
            } else if prefix.flags || prefix.tgid {
                Dialect::Ftrace
            } else {
                Dialect::TraceCmd
            };
            return Some(Line {
                comm,
                pid: prefix.pid,
                tid: prefix.tid,
                cpu: prefix.cpu,
                stamp: stamp.map_or(Stamp::Missing, |(_, s)| s),
                subsystem,
                event,
                text: line[from..].trim_ascii_start(),
                dialect,
            });
        }
        // After the timestamp the event name comes next; anything else is not an event line.
        early += 1;
        if stamp.is_some() || early >= MAX_EARLY_TOKENS {
            return None;
        }
    }
    None
}

/// Where the next `NAME:` token from `from` on ends: the next `:` followed by a blank or the
/// end of the line. The columns before a line's event are a few dozen bytes: searched a word
/// at a time (memchr measured no faster than a byte loop; the word search is).
#[inline]
fn token_end(b: &[u8], from: usize) -> Option<usize> {
    let mut i = from;
    loop {
        i = crate::sources::blanks::find_byte(b, i, b':');
        if i >= b.len() {
            return None;
        }
        if matches!(b.get(i + 1), None | Some(b' ' | b'\t')) {
            return Some(i);
        }
        i += 1;
    }
}

/// Whether `line` is the first half of an event line that a mailer wrapped after the
/// timestamp: it ends with `SECONDS:` and has a `[cpu]` or a thread before it.
pub(super) fn prefix_only(line: &str) -> bool {
    let t = line.trim_ascii_end();
    let Some(body) = t.strip_suffix(':') else {
        return false;
    };
    let start = token_start(body.as_bytes(), body.len());
    if !matches!(timestamp(&body[start..]), Some(Stamp::Ns(_))) {
        return false;
    }
    let p = prefix(&body[..start]);
    p.cpu.is_some() || p.tid.is_some()
}

/// Where the token that ends at `end` starts: after the last blank before it.
fn token_start(b: &[u8], end: usize) -> usize {
    crate::sources::blanks::run_start(b, end)
}

/// `770.850287` → ns; `123456789` → a raw clock; anything else → not a timestamp.
fn timestamp(token: &str) -> Option<Stamp> {
    let b = token.as_bytes();
    if !b.first()?.is_ascii_digit() {
        return None;
    }
    // One pass: the whole seconds (`None` once they overflow), then what follows them.
    let mut secs = Some(0u64);
    let mut dot = 0;
    while let Some(&c) = b.get(dot)
        && c.is_ascii_digit()
    {
        secs = secs.and_then(|s| s.checked_mul(10)?.checked_add(u64::from(c - b'0')));
        dot += 1;
    }
    match b.get(dot) {
        // Digits only, however many: a raw clock.
        None => return Some(Stamp::Raw),
        Some(b'.') => {}
        Some(_) => return None,
    }
    // Seconds with up to 9 decimals: integer arithmetic only (longer fractions round half up).
    let secs = secs?;
    let frac = &b[dot + 1..];
    if frac.is_empty() || frac.len() > 9 {
        return decimal_scaled(token, 9).map(Stamp::Ns);
    }
    let mut ns: u64 = 0;
    for &c in frac {
        if !c.is_ascii_digit() {
            return None;
        }
        ns = ns * 10 + u64::from(c - b'0');
    }
    ns *= 10u64.pow(9 - frac.len() as u32);
    secs.checked_mul(1_000_000_000)?
        .checked_add(ns)
        .map(Stamp::Ns)
}

/// What the columns before the timestamp say.
#[derive(Debug, Default, Clone, Copy)]
struct Prefix {
    /// Where the thread's name is in the columns.
    comm: Option<(usize, usize)>,
    pid: Option<u32>,
    tid: Option<u32>,
    cpu: Option<u32>,
    /// Latency flags after the CPU column (ftrace, `trace-cmd report -l`).
    flags: bool,
    /// A `(tgid)` column (ftrace `record-tgid`).
    tgid: bool,
}

/// The columns before the timestamp of the line split last, and what they say: the lines of
/// one thread follow each other in a trace and repeat these columns byte for byte, and
/// [`prefix`] depends on nothing but its text, so a line whose columns are the same bytes
/// gets the same answer without reading them again.
#[derive(Debug, Default)]
pub(super) struct PrefixMemo {
    text: Vec<u8>,
    known: Option<Prefix>,
}

impl PrefixMemo {
    fn prefix(&mut self, text: &str) -> Prefix {
        if let Some(known) = self.known
            && self.text == text.as_bytes()
        {
            return known;
        }
        let p = prefix(text);
        self.text.clear();
        self.text.extend_from_slice(text.as_bytes());
        self.known = Some(p);
        p
    }
}

fn prefix(text: &str) -> Prefix {
    let mut out = Prefix::default();
    let mut rest = text.trim_ascii();
    // The columns before the timestamp are a few bytes: plain loops (memchr measured no
    // faster).
    if let Some(lb) = rest.bytes().rposition(|c| c == b'[')
        && let Some(len) = rest.as_bytes()[lb..].iter().position(|&c| c == b']')
    {
        let inner = rest[lb + 1..lb + len].trim_ascii();
        if all_digits(inner) {
            out.cpu = dec32(inner);
            out.flags = !rest[lb + len + 1..].trim_ascii().is_empty();
            rest = rest[..lb].trim_ascii_end();
        }
    }
    if rest.ends_with(')')
        && let Some(lp) = memchr::memrchr(b'(', rest.as_bytes())
    {
        let inner = rest[lp + 1..rest.len() - 1].trim_ascii();
        out.tgid = true;
        if all_digits(inner) {
            out.pid = dec32(inner);
        }
        rest = rest[..lp].trim_ascii_end();
    }
    if rest.is_empty() {
        return out;
    }
    let last_at = token_start(rest.as_bytes(), rest.len());
    let last = &rest[last_at..];
    let comm = if let Some(slash) = last.bytes().position(|c| c == b'/')
        && let (p, t) = (&last[..slash], &last[slash + 1..])
        && all_digits(p)
        && all_digits(t)
    {
        // perf script `PID/TID`.
        out.pid = dec32(p);
        out.tid = dec32(t);
        &rest[..last_at]
    } else if all_digits(last) {
        // perf script `COMM TID`.
        out.tid = dec32(last);
        &rest[..last_at]
    } else if let Some(dash) = memchr::memrchr(b'-', rest.as_bytes())
        && all_digits(&rest[dash + 1..])
    {
        // ftrace / trace-cmd `COMM-PID`: the last `-`, since COMM may hold dashes.
        out.tid = dec32(&rest[dash + 1..]);
        &rest[..dash]
    } else {
        rest
    };
    let comm = comm.trim_ascii();
    if !comm.is_empty() && comm != "<...>" {
        // `comm` is a slice of `text`: where it starts is the distance between the two.
        let from = comm.as_ptr() as usize - text.as_ptr() as usize;
        out.comm = Some((from, from + comm.len()));
    }
    out
}

#[cfg(test)]
#[path = "line_tests.rs"]
mod tests;

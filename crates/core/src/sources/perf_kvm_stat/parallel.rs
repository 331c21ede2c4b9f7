//! A large `perf kvm stat live` transcript read on every core: the file is cut at the
//! timestamp lines that start its intervals, each part is read by a reader of its own, and the
//! parts are joined in order into what one reader would have read.
//!
//! A part's reader starts fresh, so the join holds only where one reader, arriving at the
//! cut, would have been in that fresh state too: nothing pending (no table, wrapped row, label,
//! scope, `--event` of a command line, or unknown exit code carried over), and the part read
//! nothing that looks back across the cut (no repaired or unreadable line, no `Lost events`
//! before its first table, nor after it when that table has no printed total). Where that
//! does not hold, the reader of the parts before goes on through the part's lines itself, as
//! a single reader would. The join sums the first table of a part into the last one before
//! it as the live session's intervals are summed, and takes the part's state as its own.
//!
//! The result is the one reader's: the same tables, rows, counts, windows, notes and line
//! numbers. (A row's variance is summed in another order, so it can differ in its last bits.)

use super::{Reader, layout, live};
use crate::error::Result;
use crate::profile::Profile;
use crate::sources::line_reader::{Driver, LineFormat};
use crate::sources::lines;
use crate::sources::mapped::Mapped;

/// Files smaller than this are read by one reader: the threads would cost more than they save.
const MIN_PARALLEL: usize = 8 << 20;

/// How far past a part's nominal start a timestamp line is looked for.
const MAX_SEARCH: usize = 1 << 20;

/// Reads the mapped transcript `mapped`; `path` names it in notes and errors.
pub(crate) fn read_mapped(mapped: &Mapped, path: &str) -> Result<Profile> {
    let bytes = mapped.bytes();
    let workers = std::thread::available_parallelism().map_or(1, |n| n.get());
    let cuts = if bytes.len() >= MIN_PARALLEL && workers > 1 {
        cuts(bytes, workers)
    } else {
        Vec::new()
    };
    read_parts(mapped, bytes, &cuts, path)
}

/// Where to cut `bytes` into about `parts` parts: the starts of timestamp lines.
fn cuts(bytes: &[u8], parts: usize) -> Vec<usize> {
    let mut out: Vec<usize> = Vec::new();
    for k in 1..parts {
        let nominal = bytes.len() / parts * k;
        let from = out.last().map_or(nominal, |&c| nominal.max(c + 1));
        if let Some(at) = timestamp_line_at_or_after(bytes, from) {
            out.push(at);
        }
    }
    out
}

/// The start of the first timestamp line that starts at or after `from` (and within
/// [`MAX_SEARCH`] of it).
fn timestamp_line_at_or_after(bytes: &[u8], from: usize) -> Option<usize> {
    let mut start = match from {
        0 => 0,
        _ => from + memchr::memchr(b'\n', bytes.get(from - 1..)?)?,
    };
    while start < bytes.len() && start - from <= MAX_SEARCH {
        let end = memchr::memchr(b'\n', &bytes[start..]).map_or(bytes.len(), |i| start + i + 1);
        if layout::timestamp(lines::line_text(&bytes[start..end]).trim_ascii()).is_some() {
            return Some(start);
        }
        start = end;
    }
    None
}

/// What a part's reader read: the reader (not ended), its driver, its last line's number,
/// and that line when the input ended inside it.
struct Part {
    reader: Reader,
    driver: Driver,
    last_line: usize,
    cut: Option<usize>,
}

/// Reads the parts of `bytes` between `cuts` (starts of timestamp lines, in order) on threads
/// of their own, and joins them.
pub(super) fn read_parts(
    mapped: &Mapped,
    bytes: &[u8],
    cuts: &[usize],
    path: &str,
) -> Result<Profile> {
    let mut bounds = vec![0];
    bounds.extend_from_slice(cuts);
    bounds.push(bytes.len());
    let ranges: Vec<(usize, usize)> = bounds.windows(2).map(|w| (w[0], w[1])).collect();
    let parts: Vec<Result<Part>> = std::thread::scope(|s| {
        let handles: Vec<_> = ranges
            .iter()
            .map(|&(start, end)| {
                s.spawn(move || {
                    // The lines before the part: its first line's number (counted on this
                    // thread, so the first part starts at once).
                    let before = count_lines(mapped, start);
                    read_part(mapped, start, end, before, path)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
            .collect()
    });
    let mut parts = parts.into_iter();
    let Some(first) = parts.next() else {
        return read_part(mapped, 0, bytes.len(), 0, path).and_then(end);
    };
    let mut whole = first?;
    for (part, &(start, end)) in parts.zip(&ranges[1..]) {
        let part = part?;
        // The first line of the part (the timestamp line): read by the reader before it as a
        // single reader would, so that it is in the state the part's reader started in.
        let first_end = memchr::memchr(b'\n', &bytes[start..end]).map_or(end, |i| start + i + 1);
        let n = whole.last_line + 1;
        let first_line = lines::line_text(&bytes[start..first_end]);
        whole.driver.line(&mut whole.reader, n, &first_line);
        if whole.reader.settled_at(first_line.trim_ascii())
            && part.reader.fresh_start()
            && whole.reader.joins_exactly(&part.reader)
        {
            whole.reader.join(part.reader);
            whole.driver.joined.extend(part.driver.joined);
            whole.last_line = part.last_line;
            whole.cut = part.cut;
        } else {
            let (reader, driver) = (&mut whole.reader, &mut whole.driver);
            whole.cut = each_line(mapped, first_end, end, n, path, |n, text| {
                driver.line(reader, n, text);
            })?;
            whole.last_line = part.last_line;
        }
    }
    end(whole)
}

/// The lines in the first `upto` bytes of the map, counted a few MiB at a time, each
/// dropped from the map once counted (memory stays flat).
fn count_lines(mapped: &Mapped, upto: usize) -> usize {
    let bytes = &mapped.bytes()[..upto.min(mapped.bytes().len())];
    let mut lines = 0;
    for (i, chunk) in bytes.chunks(RELEASE).enumerate() {
        mapped.will_read(i * RELEASE, i * RELEASE + chunk.len());
        lines += memchr::memchr_iter(b'\n', chunk).count();
        mapped.done_with(i * RELEASE, i * RELEASE + chunk.len());
    }
    lines
}

/// Reads `start..end` of the map, whose first line is line `before + 1`.
fn read_part(mapped: &Mapped, start: usize, end: usize, before: usize, path: &str) -> Result<Part> {
    let mut reader = Reader::new(path);
    let mut driver = Driver::default();
    let mut last_line = before;
    let cut = each_line(mapped, start, end, before, path, |n, text| {
        driver.line(&mut reader, n, text);
        last_line = n;
    })?;
    Ok(Part {
        reader,
        driver,
        last_line,
        cut,
    })
}

/// The profile of the whole, once every part is joined.
fn end(part: Part) -> Result<Profile> {
    let mut profile = part.reader.end(part.cut)?;
    profile.warnings.extend(part.driver.joined);
    Ok(profile)
}

impl Reader {
    /// Whether the reader, having read timestamp line `line`, holds nothing that a fresh
    /// reader would not after reading it (besides what it has read: tables, notes, its book),
    /// and has read a table.
    fn settled_at(&self, line: &str) -> bool {
        self.timestamp.as_ref().is_some_and(|(t, _)| t == line)
            && self.table.is_none()
            && self.carry.is_none()
            && self.pending.is_none()
            && self.label.is_none()
            && self.scope.is_none()
            && self.kind_hint.is_none()
            && self.unknown.is_none()
            && !self.profile.tables.is_empty()
    }

    /// Whether this reader, which started fresh at a cut, read nothing that a reader arriving
    /// there from the lines before would have read otherwise.
    pub(super) fn fresh_start(&self) -> bool {
        self.book.is_quiet() && !self.lost_looks_back
    }

    /// Whether [`Reader::join`] with `later` does what one reader would: where one reader
    /// would sum `later`'s first table into this one's last, their ISAs are the same (one
    /// reader sums a table of unknown ISA into one of a known ISA, and then compares the
    /// intervals after it with the known one, where `later` compared them with its own).
    fn joins_exactly(&self, later: &Reader) -> bool {
        let (Some(first), Some(last)) = (later.profile.tables.first(), self.profile.tables.last())
        else {
            return true;
        };
        let one_reader_sums = first.window.is_some()
            && live::continues_live(last, &first.kind, first.scope.as_deref(), first.isa);
        !one_reader_sums || last.isa == first.isa
    }

    /// Takes over from `later`, the reader of the lines after this one's: its tables (the
    /// first summed into this reader's last when a single reader would have summed it), its
    /// notes, and its state.
    fn join(&mut self, later: Reader) {
        // Every field named: one added to `Reader` later must be decided on here.
        let Reader {
            path: _,
            mut profile,
            table,
            label,
            scope,
            timestamp,
            kind_hint,
            unknown,
            carry,
            live_first,
            names,
            intervals: _,
            cut: _,
            book,
            started,
            prose_before,
            last_header,
            own,
            pending,
            spare: _,
            lost_looks_back: _,
            losses,
            zero_min_noted,
        } = later;
        self.losses.join(losses);
        match (self.zero_min_noted, zero_min_noted) {
            // Noted before the cut: one reader would not have noted it again.
            (Some(_), Some(line)) => profile
                .warnings
                .retain(|w| !(w.line == Some(line) && w.message == super::ZERO_MIN_NOTE)),
            (None, later) => self.zero_min_noted = later,
            (Some(_), None) => {}
        }
        let mut tables = profile.tables.into_iter();
        let mut summed_first = false;
        let had_first = tables.len() > 0;
        if let Some(first) = tables.next() {
            let last_seconds = first
                .window
                .as_ref()
                .and_then(|w| w.end.as_deref())
                .and_then(layout::timestamp);
            // As one reader would ([`Reader::joins_exactly`] held: the ISAs are the same).
            match (last_seconds, self.profile.tables.last_mut()) {
                (Some(s), Some(last))
                    if live::continues_live(
                        last,
                        &first.kind,
                        first.scope.as_deref(),
                        first.isa,
                    ) =>
                {
                    live::sum_interval(last, first, (self.live_first, s));
                    summed_first = true;
                }
                _ => self.profile.tables.push(first),
            }
        }
        // The window start is the one of the last table pushed: `later`'s own when it pushed
        // one that was not summed here, this reader's otherwise (`later` may have pushed none:
        // its only table still open).
        let pushed_new = tables.len() > 0 || (had_first && !summed_first);
        self.profile.tables.extend(tables);
        self.profile.warnings.extend(profile.warnings);
        if pushed_new {
            self.live_first = live_first;
        }
        self.book.absorb(book);
        self.table = table;
        self.label = label;
        self.scope = scope;
        self.timestamp = timestamp;
        self.kind_hint = kind_hint;
        self.unknown = unknown;
        self.carry = carry;
        self.names = names;
        // Its row numbers are for its own tables, and this reader's for tables now joined.
        self.intervals = super::interval::Intervals::default();
        self.started = started;
        self.prose_before = prose_before;
        self.last_header = last_header;
        self.own += own;
        self.pending = pending;
    }
}

/// How much is read before the pages read are dropped.
const RELEASE: usize = 4 << 20;

/// Gives `each` every line of `start..end` of the map (its first is line `before + 1`), read in
/// place; the pages read are dropped from the map every few MiB, so memory stays flat however
/// large the file. Returns the number of the last line if the map ended inside it.
fn each_line(
    mapped: &Mapped,
    start: usize,
    end: usize,
    before: usize,
    path: &str,
    mut each: impl FnMut(usize, &str),
) -> Result<Option<usize>> {
    let bytes = mapped.bytes().get(start..end).unwrap_or(&[]);
    let mut released = start;
    mapped.will_read(start, (start + RELEASE).min(end));
    lines::each_line_in(bytes, before, path, |n, text, read| {
        each(n, text);
        let at = start + read;
        if at - released >= RELEASE {
            // Whole pages only: the page the next line starts in stays.
            let upto = at & !4095;
            mapped.done_with(released, upto);
            released = upto;
            mapped.will_read(upto, (upto + RELEASE).min(end));
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cuts_fall_on_timestamp_lines() {
        let text = b"x\n10:00:00.000123\nrow\n10:00:01.000123\nrow\n";
        assert_eq!(timestamp_line_at_or_after(text, 0), Some(2));
        assert_eq!(timestamp_line_at_or_after(text, 3), Some(22));
        assert_eq!(timestamp_line_at_or_after(text, 23), None);
        assert_eq!(cuts(text, 2), vec![22]);
    }
}

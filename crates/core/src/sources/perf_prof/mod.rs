//! Source for perf-prof's `kvm-exit` profiler output (OpenCloudOS/perf-prof): the interval
//! tables `exit_reason calls total(us) min(us) avg(us) [p99(us)] max(us) [%gsys]` of every
//! version, with their interval stamps, `--perins` instance columns (`[CPU]`/`[THREAD]`) or
//! per-instance titles, `--tsc` kilocycle units, interleaved `--than` slow-exit lines, the
//! early log2 histogram, and the `# `-commented copies of its docs. Names come from
//! libtraceevent (`EXIT_HLT`, `EXIT_NPF`, …) or the VMX tables (`HLT`, `MSR_WRITE`).
//!
//! Each run (a command line and everything under it, or the whole file) becomes one `vmexit`
//! table: its intervals summed, with the window they cover. See [`table`] for what is kept of
//! `avg`, `p99` and `%gsys`.
//!
//! A row-shaped line that cannot be read (a cell damaged, the row cut short, a number where the
//! name should be) is noted with its line and the reason; elisions and a last row the input may
//! have cut off mark the table partial. A line that holds two lines joined (rows glued together,
//! the title glued to the header) is split by the line driver and both read, with a note.
//!
//! Reading streams line by line; memory grows with the number of runs and exit reasons only.

mod layout;
mod row;
mod table;

use std::io::BufRead;

use crate::error::Result;
use crate::profile::{Note, Origin, Profile};
use crate::sources::line_reader::{LineBook, LineFormat, read_lines};
use crate::sources::lines::{self, strip_ctrl_c, unquote};
use layout::{Header, Instance};
use table::Acc;

/// The name of this format (`--format perf-prof`, `origin.format`).
pub(crate) const FORMAT: &str = "perf-prof";

/// Whether `head` (the first bytes of an input) looks like perf-prof kvm-exit output: its
/// `kvm-exit latency` title, its `exit_reason  calls …` header, or its command line.
pub(crate) fn looks_like(head: &[u8]) -> bool {
    String::from_utf8_lossy(head).lines().any(|l| {
        let t = strip_ctrl_c(unquote(l)).trim();
        let u = layout::uncomment(t);
        layout::title(u).is_some() || layout::header(u).is_some() || layout::command(t).is_some()
    })
}

/// Reads every run of `reader`; `path` names the input in notes and errors.
pub(crate) fn read<R: BufRead>(reader: R, path: &str) -> Result<Profile> {
    read_lines(reader, path, Reader::new(path))
}

struct Reader {
    path: String,
    profile: Profile,
    current: Option<Acc>,
    header: Option<Header>,
    /// The instance a 2022 `kvm-exit latency THREAD N` title names.
    instance: Option<(Instance, u32)>,
    /// The last column header of this run, and its line: rows under a damaged header of the
    /// next interval are read in its columns.
    last_header: Option<(usize, Header)>,
    /// The first line since the title that was not recognised (the header, damaged?), and
    /// whether a note named it.
    skipped: Option<(usize, String)>,
    skipped_noted: bool,
    /// The line and start of the current header.
    header_at: (usize, String),
    /// The line of the last header, rule or row: a name alone right after one is a row cut
    /// short.
    structure: usize,
    book: LineBook,
}

impl Reader {
    fn new(path: &str) -> Self {
        Self {
            path: path.to_string(),
            profile: Profile::new(Origin::new(FORMAT, Some(path))),
            current: None,
            header: None,
            instance: None,
            last_header: None,
            skipped: None,
            skipped_noted: false,
            header_at: (0, String::new()),
            structure: 0,
            book: LineBook::default(),
        }
    }

    fn acc(&mut self, line: usize) -> &mut Acc {
        self.current.get_or_insert_with(|| Acc::new(line))
    }

    /// The dashed rule on line `n`: when it draws more columns than the header above it has,
    /// the header was cut or damaged; the rows under it are read in the columns
    /// of the run's last header if those fit, else not at all (and noted).
    fn rule(&mut self, n: usize, t: &str) {
        self.structure = n;
        let Some(h) = &self.header else { return };
        let drawn = layout::rule_columns(t);
        // A rule that draws fewer columns is the one cut short; the header is the one when it
        // has fewer.
        if layout::header_columns(h) >= drawn || self.header_at.0 + 1 != n {
            return;
        }
        let (at, text) = self.header_at.clone();
        let good = self
            .last_header
            .as_ref()
            .filter(|(_, g)| layout::header_columns(g) == drawn)
            .cloned();
        let message = match &good {
            Some((m, _)) => format!(
                "`{text}` does not fit the dashed rule under it (cut or damaged?): the rows \
                 under it are read in the columns of the header on line {m}"
            ),
            None => format!(
                "`{text}` does not fit the dashed rule under it (cut or damaged?): the rows \
                 under it cannot be read"
            ),
        };
        self.profile.warnings.push(Note {
            line: Some(at),
            message,
        });
        self.header = good.map(|(_, g)| g);
        if self.header.is_none() {
            self.skipped = Some((at, text));
            self.skipped_noted = true;
        }
    }

    fn finish(&mut self) {
        self.header = None;
        self.instance = None;
        self.last_header = None;
        self.skipped = None;
        if let Some(acc) = self.current.take()
            && let Some(table) = acc.finish(&mut self.profile.warnings)
        {
            self.profile.tables.push(table);
        }
    }
}

impl LineFormat for Reader {
    /// The rows read ([`LineFormat::own_lines`]).
    fn own_lines(&self) -> Option<u64> {
        Some(self.book.rows())
    }

    const SPLITS_JOINED: bool = true;

    fn inside(&self) -> bool {
        self.current.is_some() || self.header.is_some()
    }

    fn reads(&self, text: &str) -> bool {
        let raw = strip_ctrl_c(text).trim();
        let t = layout::uncomment(raw);
        t.is_empty()
            || layout::command(raw).is_some()
            || layout::stamp(t).is_some()
            || layout::title(t).is_some()
            || layout::histogram(t)
            || layout::rule(t)
            || layout::header(t).is_some()
            || lines::elision(t)
            || self
                .header
                .as_ref()
                .or(self.last_header.as_ref().map(|(_, h)| h))
                .is_some_and(|h| row::row(t, h).is_some())
    }

    fn line(&mut self, n: usize, text: &str) {
        let raw = strip_ctrl_c(text).trim();
        if raw.is_empty() {
            return;
        }
        if let Some((label, interval_ms)) = layout::command(raw) {
            self.finish();
            let mut acc = Acc::new(n);
            acc.label = Some(label);
            acc.interval_ms = interval_ms;
            self.current = Some(acc);
            return;
        }
        let t = layout::uncomment(raw);
        if t.is_empty() {
            return;
        }
        if let Some((stamp, ns, rest)) = layout::stamp(t) {
            let acc = self.acc(n);
            if rest.is_empty() {
                acc.stamp(stamp, ns);
            } else {
                acc.events += 1;
            }
            return;
        }
        if let Some(instance) = layout::title(t) {
            self.acc(n);
            self.instance = instance;
            self.header = None;
            self.skipped = None;
            self.skipped_noted = false;
            return;
        }
        if layout::rule(t) {
            self.rule(n, t);
            return;
        }
        if layout::histogram(t) {
            return;
        }
        if let Some(header) = layout::header(t) {
            let acc = self.acc(n);
            acc.cycles |= !header.micros;
            self.header = Some(header);
            self.header_at = (n, crate::sources::unread::excerpt(t));
            self.structure = n;
            return;
        }
        if self.header.is_none()
            && let Some((at, h)) = &self.last_header
            && row::row(t, h).is_some()
        {
            // The header of this interval is damaged or missing: its rows have the columns of
            // the one before (perf-prof prints the same header every interval).
            let (at, h) = (*at, h.clone());
            let (line, what) = match self.skipped.take() {
                Some((m, text)) => (m, format!("`{text}` is not a column header (damaged?)")),
                None => (n, "no column header above this row".to_string()),
            };
            self.profile.warnings.push(Note {
                line: Some(line),
                message: format!(
                    "{what}: the rows under it are read in the columns of the header on line {at}"
                ),
            });
            self.header = Some(h);
        }
        if let Some(h) = &self.header
            && let Some(r) = row::row(t, h)
        {
            let instance = match (h.instance, r.instance) {
                (Some(kind), Some(id)) => Some((kind, id)),
                _ => self.instance,
            };
            self.current
                .get_or_insert_with(|| Acc::new(n))
                .row(n, r, instance);
            self.book.row(n);
            self.structure = n;
            if self.last_header.as_ref().map(|l| l.0) != Some(self.header_at.0) {
                self.last_header = Some((self.header_at.0, h.clone()));
            }
            return;
        }
        if self.header.is_some() && lines::elision(t) {
            self.acc(n).partial = true;
            self.profile.warnings.push(Note {
                line: Some(n),
                message: format!("the author elided rows here (`{t}`): the run is partial"),
            });
            return;
        }
        if let Some(h) = &self.header
            && let Some(r) = row::cut_short(t, h)
        {
            let instance = match (h.instance, r.instance) {
                (Some(kind), Some(id)) => Some((kind, id)),
                _ => self.instance,
            };
            self.profile.warnings.push(Note {
                line: Some(n),
                message: format!(
                    "this row is cut short (`{}`): its count is read, its times are not",
                    crate::sources::unread::excerpt(t)
                ),
            });
            self.acc(n).row(n, r, instance);
            self.book.row(n);
            self.structure = n;
            return;
        }
        if let Some(why) = self.header.as_ref().and_then(|h| row::damage(t, h)) {
            self.acc(n).partial = true;
            self.book.unreadable(n, t, &why);
            return;
        }
        let after_row = self.structure == n.saturating_sub(1);
        let why = match &self.header {
            Some(_) if after_row => row::cut_after_name(t).map(str::to_string),
            None if self.current.is_some() && row::row_shaped(t) => Some(match &self.skipped {
                Some((m, text)) => {
                    if !std::mem::replace(&mut self.skipped_noted, true) {
                        self.profile.warnings.push(Note {
                            line: Some(*m),
                            message: format!(
                                "`{text}` is not a column header (damaged?): the rows under it \
                                 cannot be read"
                            ),
                        });
                    }
                    format!("no column header above it (line {m} damaged?)")
                }
                None => "no column header above it".to_string(),
            }),
            _ => None,
        };
        if let Some(why) = why {
            self.acc(n).partial = true;
            self.book.unreadable(n, t, &why);
            return;
        }
        if self.header.is_none() && self.skipped.is_none() && self.current.is_some() {
            self.skipped = Some((n, crate::sources::unread::excerpt(t)));
        }
        if self.profile.tables.is_empty() && self.current.as_ref().is_none_or(|a| !a.has_rows()) {
            self.book.unrecognised(n, t);
        }
    }

    fn end(mut self, cut: Option<usize>) -> Result<Profile> {
        if let Some(acc) = &mut self.current
            && self.book.last_row_cut(cut, &mut self.profile.warnings)
        {
            acc.partial = true;
        }
        self.finish();
        self.book.note_unread(cut, &mut self.profile.warnings);
        if self.profile.tables.is_empty() {
            let expected = "expected perf-prof kvm-exit output: an `exit_reason  calls  \
                            total(us) …` header followed by rows";
            return Err(self.book.nothing_found(&self.path, expected));
        }
        self.profile.distinct_labels();
        self.profile.settle_isa();
        Ok(self.profile)
    }
}

//! Source for bhyve's VM-exit summaries printed by DTrace: the per-second `Exit summary` of
//! propolis' `scripts/vm-exit-codes.d` on illumos bhyve (AMD SVM), with its SVM exit codes in
//! hex, its IO-port (IOIO) and nested-page-fault (NPF) tables and the `VM_EXITCODE_BOGUS`
//! reasons of `vm_run()`. Row layouts are in [`rows`].
//!
//! Every second of a capture is one summary; they are summed into one table per kind (exit
//! codes → `vmexit`, ports → `ioport`, NPF addresses → `mmio`, bogus reasons → an event table),
//! each with a window of as many seconds as there were banners. A row that cannot be read is
//! noted and costs that row only (its table is marked partial); rows with a count of 0 (keys
//! DTrace keeps across `clear()`) are left out, and said so.

mod rows;

use std::collections::BTreeMap;
use std::io::BufRead;

use crate::decode::Isa;
use crate::decode::exit_reason;
use crate::error::{Error, Result};
use crate::profile::Window;
use crate::profile::{Access, Key, Note, Origin, Profile, Row as ProfileRow, Table, TableKind};
use crate::sources::line_reader::{LineBook, LineFormat, read_lines};
use rows::{Line, Row, Section};

/// The name of this format (`--format bhyve-dtrace`, `origin.format`).
pub(crate) const FORMAT: &str = "bhyve-dtrace";

/// The event table of `vm_run()`'s `VM_EXITCODE_BOGUS` reasons (returns to the VMM).
const BOGUS_TABLE: &str = "vm_run_bogus";

/// Whether `head` looks like the summary: its `=== Exit summary, one second ending at` banner
/// or its `SVM code  Count` header on a line of its own.
pub(crate) fn looks_like(head: &[u8]) -> bool {
    String::from_utf8_lossy(head)
        .lines()
        .map(crate::sources::lines::unquote)
        .any(rows::signature)
}

/// Reads every summary of `reader`; `path` names the input in notes and errors.
pub(crate) fn read<R: BufRead>(reader: R, path: &str) -> Result<Profile> {
    read_lines(reader, path, Reader::new(path))
}

/// The rows read so far, summed by key, and where each kind's rows started.
#[derive(Default)]
struct Sums {
    exits: BTreeMap<u64, u64>,
    ports: BTreeMap<(u64, Access), u64>,
    npf: BTreeMap<(u64, Option<Access>), u64>,
    bogus: BTreeMap<String, u64>,
    /// First line of each section, and whether a row of it was lost.
    first: BTreeMap<Section, usize>,
    partial: BTreeMap<Section, bool>,
}

struct Reader {
    path: String,
    profile: Profile,
    section: Option<Section>,
    seconds: u32,
    last_stamp: Option<String>,
    not_understood: u64,
    zero_rows: u64,
    rows: usize,
    sums: Sums,
    book: LineBook,
    /// The last line that was not read (a damaged header may be it), and the last banner's.
    unread_line: Option<(usize, String)>,
    banner_line: Option<usize>,
}

impl Reader {
    fn new(path: &str) -> Self {
        Self {
            path: path.to_string(),
            profile: Profile::new(Origin::new(FORMAT, Some(path))),
            section: None,
            seconds: 0,
            last_stamp: None,
            not_understood: 0,
            zero_rows: 0,
            rows: 0,
            sums: Sums::default(),
            book: LineBook::default(),
            unread_line: None,
            banner_line: None,
        }
    }

    fn add(&mut self, n: usize, section: Section, row: Row) {
        self.book.row(n);
        self.rows += 1;
        self.sums.first.entry(section).or_insert(n);
        if row.count() == 0 {
            self.zero_rows += 1;
            return;
        }
        let add = |v: &mut u64, c: u64| *v = v.saturating_add(c);
        match row {
            Row::Exit { code, count } => add(self.sums.exits.entry(code).or_default(), count),
            Row::Port {
                port,
                access,
                count,
            } => add(self.sums.ports.entry((port, access)).or_default(), count),
            Row::Npf { gpa, access, count } => {
                add(self.sums.npf.entry((gpa, access)).or_default(), count);
            }
            Row::Bogus { reason, count } => add(self.sums.bogus.entry(reason).or_default(), count),
        }
    }

    fn window(&self) -> Option<Window> {
        (self.seconds > 0).then(|| Window {
            start: None,
            end: self.last_stamp.clone(),
            duration_ns: Some(u64::from(self.seconds).saturating_mul(1_000_000_000)),
            intervals: self.seconds,
        })
    }

    fn table(&self, kind: TableKind, section: Section, rows: Vec<ProfileRow>) -> Option<Table> {
        if rows.is_empty() {
            return None;
        }
        let mut t = Table::new(kind);
        t.rows = rows;
        t.window = self.window();
        t.line = self.sums.first.get(&section).copied();
        t.partial = self.sums.partial.get(&section).copied().unwrap_or(false);
        Some(t)
    }
}

impl Reader {
    /// Rows of exit codes right after a banner, or right after a line that could not be read:
    /// the `SVM code  Count` header that opens them is missing or damaged. Noted (on the
    /// damaged line, or on the first row), and they are read as exit codes.
    fn header_lost(&mut self, n: usize, t: &str) -> Option<Section> {
        rows::row(Section::Exits, t).ok()?;
        let damaged = self.unread_line.take().filter(|(m, _)| m + 1 == n);
        let at = match &damaged {
            Some((m, _)) => *m,
            None if self.banner_line.is_some_and(|b| b + 1 == n) => n,
            None => return None,
        };
        let what = damaged.map_or_else(
            || "missing".to_string(),
            |(_, text)| format!("damaged (`{}`)", crate::sources::unread::excerpt(&text)),
        );
        self.profile.warnings.push(crate::profile::Note {
            line: Some(at),
            message: format!(
                "the `SVM code  Count` header is {what}: the rows under it are read as exit codes"
            ),
        });
        self.section = Some(Section::Exits);
        self.section
    }
}

impl LineFormat for Reader {
    /// A banner with the line under it glued to it (their newline lost): split after the
    /// banner's closing `===`.
    fn split(&mut self, n: usize, text: &str) -> Option<usize> {
        let at = rows::banner_end(text)?;
        self.book.repaired(
            n,
            "the banner and the line under it on one line (a newline lost)",
        );
        Some(at)
    }

    fn line(&mut self, n: usize, text: &str) {
        let t = text.trim();
        if t.is_empty() {
            return;
        }
        match rows::line(t) {
            Some(Line::Banner(stamp)) => {
                self.seconds = self.seconds.saturating_add(1);
                self.last_stamp = Some(stamp.to_string());
                self.section = None;
                self.banner_line = Some(n);
                return;
            }
            Some(Line::Opens(s)) => {
                self.section = Some(s);
                return;
            }
            Some(Line::Header) if self.section.is_some() => return,
            Some(Line::NotUnderstood(k)) => {
                self.not_understood = self.not_understood.saturating_add(k);
                return;
            }
            _ => {}
        }
        let Some(section) = self.section.or_else(|| self.header_lost(n, t)) else {
            self.book.unrecognised(n, t);
            self.unread_line = Some((n, t.to_string()));
            return;
        };
        match rows::row(section, t) {
            Ok(row) => self.add(n, section, row),
            Err(why) => {
                self.sums.partial.insert(section, true);
                self.book.unreadable(n, t, &why);
            }
        }
    }

    fn end(mut self, cut: Option<usize>) -> Result<Profile> {
        if self.book.last_row_cut(cut, &mut self.profile.warnings)
            && let Some(s) = self.section
        {
            self.sums.partial.insert(s, true);
        }
        self.book.note_unread(cut, &mut self.profile.warnings);
        if self.rows == 0 {
            let expected = "expected the bhyve DTrace exit summary: an `=== Exit summary, one \
                            second ending at … ===` banner or an `SVM code  Count` header, \
                            followed by rows";
            return Err(self.book.nothing_found(&self.path, expected));
        }
        if self.rows as u64 == self.zero_rows {
            return Err(Error::Input {
                path: self.path.clone(),
                message: format!(
                    "every row of this exit summary counts 0 ({} rows): nothing to report",
                    self.rows
                ),
            });
        }
        let exits = self
            .sums
            .exits
            .iter()
            .map(|(&code, &count)| {
                let name = match exit_reason::lookup_code(Isa::Svm, code) {
                    Some(info) => info.name.to_string(),
                    None => exit_reason::unknown_key(Some(Isa::Svm), code),
                };
                ProfileRow::new(
                    Key::Exit {
                        code: Some(code),
                        name,
                    },
                    count,
                )
            })
            .collect();
        let ports = self
            .sums
            .ports
            .iter()
            .map(|(&(port, access), &count)| {
                let key = Key::Port {
                    port,
                    access: Some(access),
                };
                ProfileRow::new(key, count)
            })
            .collect();
        let npf = self
            .sums
            .npf
            .iter()
            .map(|(&(gpa, access), &count)| ProfileRow::new(Key::Mmio { gpa, access }, count))
            .collect();
        let bogus = self
            .sums
            .bogus
            .iter()
            .map(|(reason, &count)| {
                ProfileRow::new(
                    Key::Event {
                        name: reason.clone(),
                    },
                    count,
                )
            })
            .collect();
        let mut tables = Vec::new();
        if let Some(mut t) = self.table(TableKind::Vmexit, Section::Exits, exits) {
            t.isa = Some(Isa::Svm);
            tables.push(t);
        }
        tables.extend(self.table(TableKind::Ioport, Section::Ioio, ports));
        if let Some(mut t) = self.table(TableKind::Mmio, Section::Npf, npf) {
            t.scope = Some(
                "nested page faults (SVM NPF) by guest-physical address: emulated MMIO and \
                 memory faults alike"
                    .into(),
            );
            tables.push(t);
        }
        tables.extend(self.table(TableKind::Event(BOGUS_TABLE.into()), Section::Bogus, bogus));
        let mut note = |message: String| {
            self.profile.warnings.push(Note {
                line: None,
                message,
            });
        };
        if self.seconds > 1 {
            note(format!(
                "{} one-second summaries summed (the script prints one per second)",
                self.seconds
            ));
        }
        if self.zero_rows > 0 {
            note(format!(
                "{} rows with a count of 0 left out (keys DTrace keeps after `clear()`)",
                self.zero_rows
            ));
        }
        if self.not_understood > 0 {
            note(format!(
                "the script did not understand {} returns to the VMM (it says so: the script \
                 or the kernel changed)",
                self.not_understood
            ));
        }
        self.profile.tables = tables;
        self.profile.settle_isa();
        Ok(self.profile)
    }
}

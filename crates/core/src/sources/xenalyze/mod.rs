//! Source for Xen's `xenalyze` summary (tools/xentrace/xenalyze.c, run on a `xentrace`
//! capture: `xenalyze --summary trace.bin`): per domain (`|-- Domain N --|`) and per vCPU
//! (`-- vN --`), the `Exit reasons:` of HVM guests with their count, time, share of the trace
//! and mean cycles. Xen's HVM exit reasons are the hardware's (VMX basic exit reasons, AMD SVM
//! exit codes), so each row keys as the reason a `perf kvm stat` table names ([`rows`] maps
//! xenalyze's spellings to the codes).
//!
//! Each domain's exits become one `vmexit` table (labelled with the domain when its header is
//! there), a row per vCPU and reason. Times: xenalyze prints seconds (two decimals) computed
//! from cycles at the cpu speed it assumes, and the mean in cycles; when its `Total time … (using
//! cpu speed X GHz)` line is there, each row's time is its cycles at that speed, otherwise the
//! printed seconds (a row printing `0.00s` has no time). Breakdowns under a reason (the
//! interrupt vectors, `cr0`, IO handlers) and the other summaries (runstates, PV hypercalls) are
//! not read. A row that cannot be read is noted and costs that row only.

mod rows;

use std::collections::BTreeMap;
use std::io::BufRead;

use crate::decode::Isa;
use crate::decode::exit_reason;
use crate::error::{Error, Result};
use crate::profile::{
    Key, Note, Origin, Profile, Row as ProfileRow, Table, TableKind, TimeStats, Window,
};
use crate::sources::line_reader::{LineBook, LineFormat, read_lines};
use rows::{Line, Row};

/// The name of this format (`--format xenalyze`, `origin.format`).
pub(crate) const FORMAT: &str = "xenalyze";

/// Whether `head` looks like a xenalyze summary: its `Total time: … (using cpu speed … GHz)`
/// line, or an exit-reason row of xenalyze's shape with one of its reason names.
pub(crate) fn looks_like(head: &[u8]) -> bool {
    String::from_utf8_lossy(head)
        .lines()
        .map(crate::sources::lines::unquote)
        .any(rows::signature)
}

/// Reads the summary in `reader`; `path` names the input in notes and errors.
pub(crate) fn read<R: BufRead>(reader: R, path: &str) -> Result<Profile> {
    read_lines(reader, path, Reader::new(path))
}

/// Where a row belongs: its domain (`None` before any domain header, `Some(None)` for the
/// default domain), vCPU, ISA and exit code.
type Place = (Option<Option<u32>>, Option<u32>, Isa, u64);

struct Reader {
    path: String,
    profile: Profile,
    isa: Option<Isa>,
    total: Option<(f64, Option<f64>)>,
    domain: Option<Option<u32>>,
    vcpu: Option<u32>,
    in_exits: bool,
    /// Whether a line of xenalyze was seen (before it, lines are named if nothing is found).
    seen: bool,
    header_lost: bool,
    rows: BTreeMap<Place, (Row, usize)>,
    /// First row line and whether a row was lost, per domain.
    first: BTreeMap<Option<Option<u32>>, usize>,
    partial: BTreeMap<Option<Option<u32>>, bool>,
    book: LineBook,
}

impl Reader {
    fn new(path: &str) -> Self {
        Self {
            path: path.to_string(),
            profile: Profile::new(Origin::new(FORMAT, Some(path))),
            isa: None,
            total: None,
            domain: None,
            vcpu: None,
            in_exits: false,
            seen: false,
            header_lost: false,
            rows: BTreeMap::new(),
            first: BTreeMap::new(),
            partial: BTreeMap::new(),
            book: LineBook::default(),
        }
    }

    fn add(&mut self, n: usize, isa: Isa, code: u64, row: Row) {
        if !self.in_exits && !self.header_lost {
            self.header_lost = true;
            self.profile.warnings.push(Note {
                line: Some(n),
                message: "an exit-reason row outside `Exit reasons:` (its title missing or \
                          damaged): read as one"
                    .into(),
            });
        }
        self.book.row(n);
        self.first.entry(self.domain).or_insert(n);
        let entry = self
            .rows
            .entry((self.domain, self.vcpu, isa, code))
            .or_insert((
                Row {
                    count: 0,
                    seconds: 0.0,
                    mean_cycles: 0,
                },
                n,
            ));
        // The same vCPU's reason twice (two summaries pasted): counts and times add up, the
        // mean is weighted.
        let (old, new) = (entry.0, row);
        let count = old.count.saturating_add(new.count);
        let cycles = (u128::from(old.count) * u128::from(old.mean_cycles))
            .saturating_add(u128::from(new.count) * u128::from(new.mean_cycles));
        entry.0 = Row {
            count,
            seconds: old.seconds + new.seconds,
            mean_cycles: if count == 0 {
                0
            } else {
                u64::try_from(cycles / u128::from(count)).unwrap_or(u64::MAX)
            },
        };
    }

    fn lost(&mut self, n: usize, t: &str, why: &str) {
        self.partial.insert(self.domain, true);
        self.book.unreadable(n, t, why);
    }

    /// The time of a row: its cycles at the stated cpu speed, else the printed seconds.
    fn time(&self, row: &Row) -> TimeStats {
        let total_ns = match self.total.and_then(|(_, ghz)| ghz) {
            Some(ghz) => Some((row.count as f64 * row.mean_cycles as f64 / ghz).round() as u64),
            None if row.seconds > 0.0 => Some((row.seconds * 1e9).round() as u64),
            None => None,
        };
        TimeStats {
            total_ns,
            ..TimeStats::unknown()
        }
    }
}

impl LineFormat for Reader {
    /// Two lines whose newline was lost: a header (`-- v0 --`, `|-- Domain 0 --|`, `Exit
    /// reasons:`) glued to the line under it, or an exit-reason row glued after another line.
    fn split(&mut self, n: usize, text: &str) -> Option<usize> {
        let (at, what) = rows::joined(text)?;
        self.book.repaired(
            n,
            &format!("{what} and the line after it on one line (a newline lost)"),
        );
        Some(at)
    }

    fn line(&mut self, n: usize, text: &str) {
        let t = text.trim();
        if t.is_empty() {
            return;
        }
        let parsed = rows::line(text);
        if parsed.is_some() {
            self.seen = true;
        }
        match parsed {
            Some(Line::Isa(isa)) => self.isa = Some(isa),
            Some(Line::Total { seconds, ghz }) => self.total = Some((seconds, ghz)),
            Some(Line::Domain(d)) => {
                self.domain = Some(d);
                self.vcpu = None;
                self.in_exits = false;
            }
            Some(Line::Vcpu(v)) => {
                self.vcpu = Some(v);
                self.in_exits = false;
            }
            Some(Line::ExitReasons) => self.in_exits = true,
            Some(Line::Row { indent, name, row }) => {
                let numbered = name.parse::<u64>().is_ok();
                match rows::code(name, self.isa) {
                    Some((isa, code)) if !numbered || self.in_exits => {
                        self.add(n, isa, code, row);
                    }
                    // An exit reason's row starts with one blank, a breakdown's with three
                    // or more (two is a reason's row damaged), and a breakdown is named in
                    // lower case: a row in capitals is a reason's, damaged.
                    _ if self.in_exits && (indent <= 2 || numbered || rows::reason_like(name)) => {
                        let why = if numbered {
                            "an exit reason by number, but the trace's ISA (VMX or SVM) is not \
                             known"
                                .to_string()
                        } else {
                            format!("`{name}` is not an exit reason xenalyze names")
                        };
                        self.lost(n, t, &why);
                    }
                    // A breakdown under a reason, or a row of another summary.
                    _ => {}
                }
            }
            None if rows::damaged_header(t) => {
                // The rows under it would go to the vCPU or domain before it: they get none.
                self.vcpu = None;
                self.in_exits = false;
                self.profile.warnings.push(Note {
                    line: Some(n),
                    message: format!(
                        "a vCPU or domain header that cannot be read (`{}`): the rows under it \
                         are given no vCPU",
                        crate::sources::unread::excerpt(t)
                    ),
                });
            }
            None => {
                let first = t.split_whitespace().next().unwrap_or("");
                let indent = text.len() - text.trim_start().len();
                let named = rows::code(first, None).is_some();
                if named || (self.in_exits && indent <= 2 && rows::name_shaped(first)) {
                    self.lost(n, t, "an exit reason without its count, time and cycles");
                } else if self.in_exits && indent == 0 {
                    self.in_exits = false;
                }
                if !self.seen {
                    self.book.unrecognised(n, t);
                }
            }
        }
    }

    fn end(mut self, cut: Option<usize>) -> Result<Profile> {
        if self.book.last_row_cut(cut, &mut self.profile.warnings) {
            self.partial.insert(self.domain, true);
        }
        self.book.note_unread(cut, &mut self.profile.warnings);
        if self.rows.is_empty() {
            if self.seen {
                return Err(Error::Input {
                    path: self.path.clone(),
                    message: "a xenalyze summary without `Exit reasons:` rows: HVM guests' \
                              exits are there only (PV guests have hypercalls instead)"
                        .into(),
                });
            }
            let expected = "expected xenalyze's summary: `Exit reasons:` rows such as ` HLT  \
                            120  0.50s 12.00% 10000 cyc`";
            return Err(self.book.nothing_found(&self.path, expected));
        }
        let window = self.total.map(|(seconds, _)| Window {
            start: None,
            end: None,
            duration_ns: Some((seconds * 1e9).round() as u64),
            intervals: 1,
        });
        let mut untimed = 0usize;
        let mut tables: BTreeMap<Option<Option<u32>>, Table> = BTreeMap::new();
        for (&(domain, vcpu, isa, code), &(row, _)) in &self.rows {
            let name = match exit_reason::lookup_code(isa, code) {
                Some(info) => info.name.to_string(),
                None => exit_reason::unknown_key(Some(isa), code),
            };
            let mut r = ProfileRow::new(
                Key::Exit {
                    code: Some(code),
                    name,
                },
                row.count,
            );
            r.vcpu = vcpu;
            r.time = self.time(&row);
            if r.time.total_ns.is_none() {
                untimed += 1;
            }
            let t = tables.entry(domain).or_insert_with(|| {
                let mut t = Table::new(TableKind::Vmexit);
                t.isa = Some(isa);
                t.window = window.clone();
                t.line = self.first.get(&domain).copied();
                t.partial = self.partial.get(&domain).copied().unwrap_or(false);
                t.label = match domain {
                    Some(Some(d)) => Some(format!("Xen domain {d}")),
                    Some(None) => Some("Xen default domain".into()),
                    None => None,
                };
                t
            });
            t.rows.push(r);
        }
        let mut note = |message: String| {
            self.profile.warnings.push(Note {
                line: None,
                message,
            });
        };
        match self.total {
            Some((_, Some(ghz))) => note(format!(
                "times are xenalyze's cycles at the cpu speed it states ({ghz:.2} GHz; \
                 xenalyze assumes 2.4 GHz unless given --cpu-hz)"
            )),
            _ => note(
                "times are the seconds xenalyze prints (two decimals, from cycles at the cpu \
                 speed it assumes: 2.4 GHz unless given --cpu-hz); no `Total time` line, so \
                 no window"
                    .into(),
            ),
        }
        if untimed > 0 {
            note(format!(
                "{untimed} rows print `0.00s` (under 5 ms): their time is left unknown"
            ));
        }
        self.profile.tables = tables.into_values().collect();
        self.profile.settle_isa();
        Ok(self.profile)
    }
}

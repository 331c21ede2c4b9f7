//! perf top's "Trace output" view (`perf top -e kvm:kvm_exit`, also `perf report --sort trace
//! --stdio`): a header `Samples: 887K of event 'kvm:kvm_exit', … Event count (approx.): 47982`,
//! a column header `Overhead  Trace output`, and rows `  36.22%  reason MSR_WRITE rip 0x… info 0
//! 0`, one per distinct event text (so one reason spreads over several rows, one per RIP).
//!
//! The rows are percentages, not counts, and they are not exact: perf top ages its entries
//! (each refresh decays their weight, so the percentages describe recent samples more than
//! old ones), the view shows only its top rows, and the header rounds the sample count to
//! three digits (`887K`). virtlens therefore estimates each row's count as
//! `round(percent × samples / 100)` with the header's sample count (or perf's event count when
//! the sample count is missing, or per 10,000 when neither is printed), sums rows of the same
//! key, records the header's count as the table's printed total (so reports show how much the
//! visible rows leave out) and says all of this in a warning. Nothing about time, threads or
//! vCPUs is known. Several screens of the same event: perf's sample count is cumulative, so
//! only the last screen is kept.

use std::collections::HashMap;

use super::fields::{all_digits, dec};
use super::kinds;
use crate::decode::Isa;
use crate::decode::exit_reason::{guess_isa, lookup_code, lookup_name, unknown_key};
use crate::events::{EventKind, MmioAccess, Reason};
use crate::profile::{Access, Key, Note, PrintedTotal, Row, Table, TableKind};
use crate::sources::numbers::decimal_scaled;

/// The state of a perf top view being read.
#[derive(Debug, Default)]
pub(super) struct View {
    sections: Vec<Section>,
    table_open: bool,
}

/// One `Samples: … of event '…'` screen.
#[derive(Debug, Default)]
struct Section {
    line: usize,
    event: Option<String>,
    samples: Option<u64>,
    samples_text: Option<String>,
    event_count: Option<u64>,
    /// Hundredths of a percent per key, in first-seen order.
    rows: HashMap<TopKey, (usize, u64)>,
    shown: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum TopKey {
    ExitName(String),
    ExitCode(u64),
    Port(u64, Access),
    Mmio(u64, Access),
    Msr(u64, Access),
    Userspace(String),
    Hypercall(u64),
    Event(String),
}

/// Whether `t` is a line only this view has (for format detection).
pub(super) fn is_header(t: &str) -> bool {
    let h = t.trim_start_matches('#').trim();
    (h.starts_with("Overhead") && h.contains("Trace output"))
        || (h.starts_with("Samples: ") && h.contains(" of event") && h.contains("'kvm:"))
        || percent_row(h).is_some_and(|(_, text)| exit_shaped(text))
}

impl View {
    /// Takes `t` (a trimmed line) when it belongs to the view.
    pub(super) fn line(&mut self, n: usize, t: &str) -> bool {
        let h = t.trim_start_matches('#').trim_start();
        if let Some(rest) = h.strip_prefix("Samples: ")
            && rest.contains(" of event")
        {
            self.table_open = false;
            self.sections.push(section(n, rest));
            return true;
        }
        if let Some(rest) = h.strip_prefix("Event count (approx.):") {
            if let Some(s) = self.sections.last_mut() {
                s.event_count = dec(rest.trim_start());
            }
            return true;
        }
        if h.starts_with("Overhead") && h.contains("Trace output") {
            self.table_open = true;
            if self.sections.is_empty() {
                self.sections.push(Section {
                    line: n,
                    ..Section::default()
                });
            }
            return true;
        }
        if self.table_open && h.starts_with("....") {
            return true;
        }
        let Some((hundredths, text)) = percent_row(t) else {
            return false;
        };
        if !self.table_open && !exit_shaped(text) {
            return false;
        }
        if self.sections.is_empty() {
            self.sections.push(Section {
                line: n,
                ..Section::default()
            });
        }
        let Some(s) = self.sections.last_mut() else {
            return false;
        };
        let event = s
            .event
            .clone()
            .unwrap_or_else(|| infer_event(text).to_string());
        let key = top_key(&event, text);
        let order = s.rows.len();
        let slot = &mut s.rows.entry(key).or_insert((order, 0)).1;
        *slot = slot.saturating_add(hundredths);
        s.shown = s.shown.saturating_add(hundredths);
        true
    }

    /// Whether any row was read.
    pub(super) fn has_rows(&self) -> bool {
        self.sections.iter().any(|s| !s.rows.is_empty())
    }

    /// The tables, the ISA their exit names point to, and the notes about them.
    pub(super) fn finish(self, notes: &mut Vec<Note>) -> (Vec<Table>, Option<Isa>) {
        let mut kept: Vec<Section> = Vec::new();
        for s in self.sections.into_iter().filter(|s| !s.rows.is_empty()) {
            if let Some(i) = kept.iter().position(|k| k.event == s.event) {
                notes.push(Note {
                    line: Some(kept[i].line),
                    message: "an earlier perf top screen of the same event, superseded by a \
                              later one (perf top's sample count is cumulative)"
                        .into(),
                });
                kept[i] = s;
            } else {
                kept.push(s);
            }
        }
        let isa = guess_isa(kept.iter().flat_map(|s| {
            s.rows.keys().filter_map(|k| match k {
                TopKey::ExitName(n) => Some(n.as_str()),
                _ => None,
            })
        }));
        let mut tables: Vec<Table> = Vec::new();
        for mut s in kept {
            notes.push(section_note(&s));
            let total = s.samples.or(s.event_count);
            let scale = total.unwrap_or(10_000);
            let mut rows: Vec<(usize, TopKey, u64)> = std::mem::take(&mut s.rows)
                .into_iter()
                .map(|(k, (o, h))| (o, k, h))
                .collect();
            rows.sort_by_key(|r| r.0);
            let first = tables.len();
            for (_, key, hundredths) in rows {
                let count = estimate(hundredths, scale);
                let (kind, key) = table_key(key, isa);
                let at = match tables[first..].iter().position(|t| t.kind == kind) {
                    Some(i) => first + i,
                    None => {
                        tables.push(new_table(&s, kind, isa, total));
                        tables.len() - 1
                    }
                };
                let table = &mut tables[at];
                match table.rows.iter_mut().find(|r| r.key == key) {
                    Some(r) => r.count = r.count.saturating_add(count),
                    None => table.rows.push(Row::new(key, count)),
                }
            }
        }
        for t in &mut tables {
            t.rows
                .sort_by(|a, b| b.count.cmp(&a.count).then_with(|| a.key.cmp(&b.key)));
        }
        (tables, isa)
    }
}

fn new_table(s: &Section, kind: TableKind, isa: Option<Isa>, total: Option<u64>) -> Table {
    let mut t = Table::new(kind);
    t.line = Some(s.line);
    t.isa = (t.kind == TableKind::Vmexit).then_some(isa).flatten();
    t.label = Some(match (&s.samples_text, &s.event) {
        (Some(n), Some(e)) => format!("perf top trace output, {n} samples of {e} (estimated)"),
        _ => "perf top trace output (estimated counts)".to_string(),
    });
    t.printed_total = total.map(|count| PrintedTotal {
        count,
        time_ns: None,
        lost_events: None,
    });
    t
}

/// `round(hundredths of a percent × scale / 10000)`.
fn estimate(hundredths: u64, scale: u64) -> u64 {
    let v = (u128::from(hundredths) * u128::from(scale) + 5_000) / 10_000;
    u64::try_from(v).unwrap_or(u64::MAX)
}

fn section_note(s: &Section) -> Note {
    let shown = format!("{}.{:02} %", s.shown / 100, s.shown % 100);
    let message = match (&s.samples_text, s.samples, s.event_count) {
        (Some(text), Some(n), _) => format!(
            "perf top trace output: rows are percentages, so each count is estimated as \
             percent × {n} (the header's {text} samples, rounded by perf); perf top's percentages \
             are shares of its decaying event count{}, and the rows shown cover {shown} of it; \
             no durations, threads or vCPUs",
            s.event_count.map(|c| format!(" ({c})")).unwrap_or_default()
        ),
        (_, _, Some(c)) => format!(
            "perf top trace output: rows are percentages, so each count is estimated as \
             percent × {c} (perf's approximate event count); the rows shown cover {shown}; \
             no durations, threads or vCPUs"
        ),
        _ => format!(
            "perf top trace output without a `Samples:` header: counts are shares in units of \
             0.01 % (per 10,000 events), not event counts; the rows shown cover {shown}"
        ),
    };
    Note {
        line: Some(s.line),
        message,
    }
}

/// `887K of event 'kvm:kvm_exit', 1 Hz, Event count (approx.): 47982 …`
fn section(n: usize, rest: &str) -> Section {
    let first = rest.split_whitespace().next().unwrap_or("");
    let digits = first.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    let unit = match &first[digits.len()..] {
        "" => Some(1u64),
        "K" | "k" => Some(1_000),
        "M" => Some(1_000_000),
        "G" => Some(1_000_000_000),
        "T" => Some(1_000_000_000_000),
        _ => None,
    };
    let samples = all_digits(digits)
        .then(|| dec(digits))
        .flatten()
        .zip(unit)
        .and_then(|(v, u)| v.checked_mul(u));
    let event = rest
        .find('\'')
        .and_then(|a| {
            let name = &rest[a + 1..];
            name.find('\'').map(|b| &name[..b])
        })
        .map(|name| name.rsplit(':').next().unwrap_or(name).to_string());
    let event_count = rest
        .find("Event count (approx.):")
        .and_then(|i| dec(rest[i + 22..].trim_start()));
    Section {
        line: n,
        event,
        samples,
        samples_text: samples.map(|_| first.to_string()),
        event_count,
        ..Section::default()
    }
}

/// `36.22%  TEXT` → (3622, TEXT).
fn percent_row(t: &str) -> Option<(u64, &str)> {
    let t = t.trim_start();
    let end = t.find('%')?;
    let number = &t[..end];
    if number.is_empty() || number.len() > 8 {
        return None;
    }
    let hundredths = decimal_scaled(number, 2)?;
    let text = t[end + 1..].trim_matches([' ', '\t']);
    (!text.is_empty() && t[end + 1..].starts_with([' ', '\t'])).then_some((hundredths, text))
}

/// `reason X rip …` / `vcpu N reason X rip …`: a kvm_exit text.
fn exit_shaped(text: &str) -> bool {
    (text.starts_with("reason ") || text.starts_with("vcpu ")) && text.contains(" rip ")
}

/// The event a row's text comes from, when no header named it.
fn infer_event(text: &str) -> &'static str {
    if exit_shaped(text) {
        "kvm_exit"
    } else if text.starts_with("pio_") {
        "kvm_pio"
    } else if text.starts_with("mmio ") {
        "kvm_mmio"
    } else if text.starts_with("msr_") {
        "kvm_msr"
    } else if text.starts_with("vcpu ") {
        "kvm_entry"
    } else {
        "trace_output"
    }
}

fn top_key(event: &str, text: &str) -> TopKey {
    let Some(d) = kinds::decode(event, text) else {
        return TopKey::Event(event.to_string());
    };
    let rw = |write: bool| if write { Access::Write } else { Access::Read };
    match d.kind {
        EventKind::Exit { reason, .. } => match reason {
            Reason::Code(c) => TopKey::ExitCode(c),
            Reason::Name(n) => TopKey::ExitName(n.to_string()),
        },
        EventKind::Pio { write, port } => {
            TopKey::Port(port, if write { Access::Out } else { Access::In })
        }
        EventKind::Mmio { access, gpa } => match access {
            MmioAccess::Write => TopKey::Mmio(gpa, Access::Write),
            MmioAccess::Read => TopKey::Mmio(gpa, Access::Read),
            MmioAccess::UnsatisfiedRead => TopKey::Event(event.to_string()),
        },
        EventKind::Msr { write, index } => TopKey::Msr(index, rw(write)),
        EventKind::UserspaceExit { reason } => TopKey::Userspace(reason.to_string()),
        EventKind::Hypercall { nr, .. } => TopKey::Hypercall(nr),
        other => TopKey::Event(other.event_name().to_string()),
    }
}

fn table_key(key: TopKey, isa: Option<Isa>) -> (TableKind, Key) {
    let event = TableKind::from_name;
    match key {
        TopKey::ExitName(name) => {
            let key = match lookup_name(isa, &name) {
                Some(info) => Key::Exit {
                    name: info.name.to_string(),
                    code: Some(info.code),
                },
                None => Key::Exit { name, code: None },
            };
            (TableKind::Vmexit, key)
        }
        TopKey::ExitCode(code) => {
            let key = match isa.and_then(|i| lookup_code(i, code)) {
                Some(info) => Key::Exit {
                    name: info.name.to_string(),
                    code: Some(info.code),
                },
                None => Key::Exit {
                    name: unknown_key(isa, code),
                    code: Some(code),
                },
            };
            (TableKind::Vmexit, key)
        }
        TopKey::Port(port, a) => (
            TableKind::Ioport,
            Key::Port {
                port,
                access: Some(a),
            },
        ),
        TopKey::Mmio(gpa, a) => (
            TableKind::Mmio,
            Key::Mmio {
                gpa,
                access: Some(a),
            },
        ),
        TopKey::Msr(index, a) => (
            TableKind::Msr,
            Key::Msr {
                index,
                access: Some(a),
            },
        ),
        TopKey::Userspace(name) => (event("userspace_exit"), Key::Event { name }),
        TopKey::Hypercall(nr) => (
            event("hypercall"),
            Key::Event {
                name: format!("{nr:#x}"),
            },
        ),
        TopKey::Event(name) => (event("events"), Key::Event { name }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_and_headers() {
        assert_eq!(
            percent_row("  36.22%  reason MSR_WRITE rip 0x1 info 0 0"),
            Some((3622, "reason MSR_WRITE rip 0x1 info 0 0"))
        );
        assert_eq!(percent_row("36.22%x"), None);
        assert_eq!(percent_row("%  x"), None);
        let s = section(
            1,
            "887K of event 'kvm:kvm_exit', 1 Hz, Event count (approx.): 47982",
        );
        assert_eq!(
            (s.samples, s.event.as_deref(), s.event_count),
            (Some(887_000), Some("kvm_exit"), Some(47982))
        );
        assert_eq!(estimate(3622, 887_000), 321_271);
        assert_eq!(estimate(1, 10_000), 1);
        assert!(is_header("Overhead  Trace output"));
        assert!(is_header("# Overhead  Trace output"));
    }
}

//! The lines of a `perf kvm stat` table that are not rows: the column header (which fixes the
//! layout: 2012, 20/40-column stdio, hists, or any subset of the stdio columns an author kept,
//! in any order, even wrapped onto a second line), the `Analyze events for …` scope line, the
//! totals line, live-mode timestamps, the stderr note about unknown exit codes, and elisions.

use std::sync::OnceLock;

use memchr::memmem;

use crate::decode::Isa;
use crate::profile::TableKind;
use crate::sources::numbers;

pub(super) use super::stdio_columns::{StdioColumn, StdioColumns};

/// How a table's rows are laid out, as fixed by its header.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Layout {
    /// perf's stdio layout: `Samples Samples% Time% [Min Time Max Time] Avg time ( +-x% )`,
    /// times suffixed `us`, or the subset of those columns the header names (an author's trim).
    Stdio { columns: StdioColumns },
    /// The hists layout: cells named by the header, times in plain ns.
    Hists { columns: Vec<HistsColumn> },
}

impl Layout {
    /// How many values (cells after the key, spread aside) a full row has.
    pub(super) fn columns(&self) -> usize {
        match self {
            Layout::Stdio { columns } => columns.len(),
            Layout::Hists { columns } => columns.len(),
        }
    }
}

/// A column of the hists layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum HistsColumn {
    Samples,
    SamplePct,
    TimeNs,
    TimePct,
    MaxNs,
    MinNs,
    MeanNs,
    Unknown,
}

/// A recognised header: the kind named in its first cell (when it names one) and the layout.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Header {
    pub kind: Option<TableKind>,
    pub layout: Layout,
}

/// The kind a header's first cell or a kind line names.
pub(super) fn kind_name(cell: &str) -> Option<TableKind> {
    match cell.trim_ascii() {
        "VM-EXIT" => Some(TableKind::Vmexit),
        "MMIO Access" => Some(TableKind::Mmio),
        "IO Port Access" => Some(TableKind::Ioport),
        "MSR Access" => Some(TableKind::Msr),
        _ => None,
    }
}

/// Recognises a column header line: a kind (`VM-EXIT`, `IO Port Access`, …), `Event` or
/// nothing, then column names, `Samples` among them and at least one more.
pub(super) fn header(line: &str) -> Option<Header> {
    line.find("Samples")?;
    let at = first_column(line)?;
    let rest = &line[at..];
    let first = line[..at].trim_ascii();
    if first == "Event name" {
        let cells: Vec<&str> = line
            .split('\t')
            .flat_map(|c| c.split("  "))
            .map(str::trim)
            .filter(|c| !c.is_empty())
            .skip(1)
            .collect();
        let columns: Vec<HistsColumn> = cells.iter().copied().map(hists_column).collect();
        // A last column name cut short (`Sa`), or `Samples` alone: the header is cut short.
        if columns.len() < 2
            || columns.last() == Some(&HistsColumn::Unknown)
                && cells.last().is_some_and(|c| cut_column(c))
        {
            return None;
        }
        return Some(Header {
            kind: None,
            layout: Layout::Hists { columns },
        });
    }
    let kind = kind_name(first);
    if kind.is_none() && first != "Event" && !first.is_empty() {
        return None;
    }
    let columns = stdio_columns(rest);
    if !columns.contains(StdioColumn::Samples) || columns.len() < 2 {
        return None;
    }
    Some(Header {
        kind,
        layout: Layout::Stdio { columns },
    })
}

/// Where the first column name of a header starts (the cells before it name the table).
fn first_column(line: &str) -> Option<usize> {
    let b = line.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i].is_ascii_whitespace() {
            i += 1;
            continue;
        }
        let end = b[i..]
            .iter()
            .position(u8::is_ascii_whitespace)
            .map_or(b.len(), |e| i + e);
        let word = &line[i..end];
        if matches!(
            word,
            "Samples" | "Samples%" | "Sample%" | "Time%" | "Min" | "Max" | "Avg"
        ) || word.starts_with("Time(")
        {
            return Some(i);
        }
        i = end;
    }
    None
}

/// The stdio columns named in `text`, in order: `Samples`, `Samples%`, `Time%`, `Min Time`,
/// `Max Time`, `Avg time`. A time column's name may be cut after its first word (`… Max` with
/// `Time` on the next line); other words (`# ti...`) are passed over.
pub(super) fn stdio_columns(text: &str) -> StdioColumns {
    let mut columns = StdioColumns::of(&[]);
    for word in text.split_ascii_whitespace() {
        let column = match word {
            "Samples" => StdioColumn::Samples,
            "Samples%" | "Sample%" => StdioColumn::SamplesPct,
            "Time%" => StdioColumn::TimePct,
            w if w.eq_ignore_ascii_case("min") => StdioColumn::Min,
            w if w.eq_ignore_ascii_case("max") => StdioColumn::Max,
            w if w.eq_ignore_ascii_case("avg") => StdioColumn::Avg,
            _ => continue,
        };
        columns.push(column);
    }
    columns
}

/// A cell that is the start of a hists column name, not all of it (`Sa`, `Time (n`).
fn cut_column(cell: &str) -> bool {
    let squeezed: String = cell.split_ascii_whitespace().collect();
    [
        "Samples",
        "Sample%",
        "Time(ns)",
        "Time%",
        "MaxTime(ns)",
        "MinTime(ns)",
        "MeanTime(ns)",
    ]
    .iter()
    .any(|c| c.len() > squeezed.len() && c.starts_with(squeezed.as_str()))
}

fn hists_column(cell: &str) -> HistsColumn {
    let squeezed: String = cell.split_ascii_whitespace().collect();
    match squeezed.as_str() {
        "Samples" => HistsColumn::Samples,
        "Sample%" | "Samples%" => HistsColumn::SamplePct,
        "Time(ns)" => HistsColumn::TimeNs,
        "Time%" => HistsColumn::TimePct,
        "MaxTime(ns)" => HistsColumn::MaxNs,
        "MinTime(ns)" => HistsColumn::MinNs,
        "MeanTime(ns)" | "AvgTime(ns)" => HistsColumn::MeanNs,
        _ => HistsColumn::Unknown,
    }
}

/// The scope of an `Analyze events for …:` line: its text, and the pid and vCPU it names.
#[derive(Debug, Clone, Default, PartialEq)]
pub(super) struct Scope {
    pub text: String,
    pub pid: Option<u32>,
    pub vcpu: Option<u32>,
}

/// Recognises `Analyze events for all VMs, all VCPUs:` and its variants.
pub(super) fn scope(line: &str) -> Option<Scope> {
    let text = line.trim_ascii().strip_prefix("Analyze events for ")?;
    let text = text.trim_ascii_end().trim_end_matches(':').trim_ascii();
    let pid = text
        .strip_prefix("pid(s) ")
        .and_then(|r| r.split(", ").next())
        .filter(|pids| !pids.contains(','))
        .and_then(|p| p.trim_ascii().parse().ok());
    let vcpu = text
        .rsplit_once("VCPU ")
        .and_then(|(_, n)| n.trim_ascii().parse().ok());
    Some(Scope {
        text: text.to_string(),
        pid,
        vcpu,
    })
}

/// The totals line: `Total Samples:N, Total events handled time:Xus.`
pub(super) fn total(line: &str) -> Option<(u64, Option<u64>)> {
    let rest = line.trim_ascii().strip_prefix("Total Samples:")?;
    let (count_text, rest) = rest.split_once(',').unwrap_or((rest, ""));
    let count = numbers::count(count_text.trim_ascii())?;
    let time = rest
        .trim_ascii()
        .strip_prefix("Total events handled time:")
        .map(|t| t.trim_ascii().trim_end_matches('.'))
        .and_then(numbers::micros_as_ns);
    Some((count, time))
}

/// `Lost events: N`.
pub(super) fn lost(line: &str) -> Option<u64> {
    numbers::count(line.trim_ascii().strip_prefix("Lost events:")?.trim_ascii())
}

/// A live-mode timestamp line `HH:MM:SS.ffffff`, as seconds since midnight.
pub(super) fn timestamp(line: &str) -> Option<f64> {
    let t = line.trim_ascii();
    // `hh:mm:ss.` first: every line not a timestamp is told by three bytes, before any search.
    let b = t.as_bytes();
    if b.len() < 9 || b[2] != b':' || b[5] != b':' || b[8] != b'.' {
        return None;
    }
    let (hms, _) = t.split_once('.')?;
    let mut parts = hms.split(':');
    let (h, m, s) = (parts.next()?, parts.next()?, parts.next()?);
    if parts.next().is_some() || [h, m, s].iter().any(|p| p.len() != 2) {
        return None;
    }
    let field = |p: &str| numbers::count(p).map(|v| v as f64);
    // The fraction read from its point, as `0.frac` would be, without building that text.
    let fraction = numbers::decimal_at(b, hms.len(), 6)?;
    if fraction.end != t.len() {
        return None;
    }
    let micros = fraction.value as f64;
    Some(field(h)? * 3600.0 + field(m)? * 60.0 + field(s)? + micros / 1e6)
}

/// perf's stderr note `unknown kvm exit code:N on VMX` (it precedes the UNKNOWN row it is for).
pub(super) fn unknown_exit_code(line: &str) -> Option<(u64, Option<Isa>)> {
    // The searcher is built once: `str::find` builds one per line, which a profile showed.
    static FINDER: OnceLock<memmem::Finder<'static>> = OnceLock::new();
    let finder = FINDER.get_or_init(|| memmem::Finder::new("unknown kvm exit code:"));
    let at = finder.find(line.as_bytes())?;
    let rest = &line[at + "unknown kvm exit code:".len()..];
    let end = rest
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(rest.len());
    // perf prints ` on VMX` (or SVM) after the code: without it the line may be cut inside
    // the code, and a damaged code is never read as a shorter one.
    if !rest[end..].starts_with(" on ") {
        return None;
    }
    let code = numbers::count(&rest[..end])?;
    let isa = if rest.contains("on SVM") {
        Some(Isa::Svm)
    } else if rest.contains("on VMX") {
        Some(Isa::Vmx)
    } else {
        None
    };
    Some((code, isa))
}

/// A line that carries no content: a Markdown fence or a dashed rule.
pub(super) fn decoration(line: &str) -> bool {
    let t = line.trim_ascii();
    t.starts_with("```") || (!t.is_empty() && t.bytes().all(|b| matches!(b, b'-' | b' ' | b'=')))
}

/// The `--event=` of a `perf kvm stat report|live` command line, if the line is one.
pub(super) fn command_event(line: &str) -> Option<Option<TableKind>> {
    if !line.contains("perf") || !line.contains("kvm") {
        return None;
    }
    let event = line
        .split_ascii_whitespace()
        .find_map(|w| w.strip_prefix("--event="))
        .map(|e| match e {
            "ioport" => TableKind::Ioport,
            "mmio" => TableKind::Mmio,
            "msr" => TableKind::Msr,
            _ => TableKind::Vmexit,
        });
    Some(event)
}

#[cfg(test)]
pub(super) mod tests {
    use super::super::pasted::{header_continuation, implied, unbox};
    use super::*;

    use StdioColumn::*;

    proptest::proptest! {
        /// The fraction of a timestamp is read as the number `0.frac` (as it was, by building
        /// that text), whatever follows the seconds' point.
        #[test]
        fn timestamp_fractions_read_as_decimals(picks in proptest::collection::vec(0usize..6, 0..24)) {
            let frac: String = picks.iter().map(|&i| ["0", "7", "5", ".", " ", "x"][i]).collect();
            let line = format!("10:00:01.{frac}");
            let t = line.trim_ascii();
            let want = t.split_once('.').and_then(|(_, f)| {
                crate::sources::numbers::decimal_scaled(&format!("0.{f}"), 6)
            });
            let want = want.map(|micros| 36_001.0 + micros as f64 / 1e6);
            proptest::prop_assert_eq!(timestamp(&line), want, "{:?}", line);
        }
    }

    /// perf's 2012 layout (`Avg time` only).
    pub(crate) const FULL_2012: [StdioColumn; 4] = [Samples, SamplesPct, TimePct, Avg];

    #[test]
    fn headers_of_every_era() {
        let modern = "             VM-EXIT    Samples  Samples%     Time%    Min Time    Max Time         Avg time";
        assert_eq!(
            header(modern),
            Some(Header {
                kind: Some(TableKind::Vmexit),
                layout: Layout::Stdio {
                    columns: StdioColumns::of(&[Samples, SamplesPct, TimePct, Min, Max, Avg])
                }
            })
        );
        let old = "      IO Port Access    Samples  Samples%     Time%         Avg time";
        assert_eq!(
            header(old),
            Some(Header {
                kind: Some(TableKind::Ioport),
                layout: Layout::Stdio {
                    columns: StdioColumns::of(&FULL_2012)
                }
            })
        );
        let trimmed = "VM-EXIT    Samples  Samples%     Time%";
        assert_eq!(
            header(trimmed).map(|h| h.layout),
            Some(Layout::Stdio {
                columns: StdioColumns::of(&[Samples, SamplesPct, TimePct])
            })
        );
        let wrapped = "             VM-EXIT    Samples  Samples%     Time%    Min Time    Max";
        assert_eq!(
            header(wrapped).map(|h| h.layout),
            Some(Layout::Stdio {
                columns: StdioColumns::of(&[Samples, SamplesPct, TimePct, Min, Max])
            })
        );
        assert_eq!(
            header_continuation("Time         Avg time"),
            Some(StdioColumns::of(&[Avg]))
        );
        assert_eq!(
            header_continuation("    Avg time "),
            Some(StdioColumns::of(&[Avg]))
        );
        assert_eq!(header_continuation("HLT 12"), None);
        let boxed = "|    Event name      |    Samples        |     Sample%      |      Time (ns)     |     Time%    |";
        assert!(matches!(
            header(&unbox(boxed)).map(|h| h.layout),
            Some(Layout::Hists { columns }) if columns.len() == 4
        ));
        assert_eq!(
            unbox("|  msr  |  524213  |  49.00%  |  592573933  |    64.00 %   |")
                .split_whitespace()
                .collect::<Vec<_>>(),
            ["msr", "524213", "49.00%", "592573933", "64.00%"]
        );
        assert!(implied("           MSR_WRITE     338793    56.54%     5.51%      0.33us     34.44us      0.44us ( +-   0.20% )").is_some());
        assert!(implied("MSR_WRITE 42521 53.32% 0.06%").is_none());
        let hists = "Event name                    Samples  Sample%       Time(ns)";
        assert_eq!(
            header(hists).map(|h| h.layout),
            Some(Layout::Hists {
                columns: vec![
                    HistsColumn::Samples,
                    HistsColumn::SamplePct,
                    HistsColumn::TimeNs
                ]
            })
        );
        let tabbed = "Event\tSamples\tSamples%\tTime%\tMin Time\tMax Time\tAvg time";
        assert_eq!(header(tabbed).map(|h| h.kind), Some(None));
        assert_eq!(header("Total Samples:5"), None);
        assert_eq!(
            header("VM-EXIT    Avg time    Samples").map(|h| h.layout),
            Some(Layout::Stdio {
                columns: StdioColumns::of(&[Avg, Samples])
            })
        );
        assert_eq!(header("VM-EXIT    Samples"), None);
        assert_eq!(header("some prose about Samples and Time"), None);
    }

    #[test]
    fn scopes() {
        let s = scope("Analyze events for pid(s) 1347712, all VCPUs:");
        assert_eq!(s.as_ref().and_then(|s| s.pid), Some(1_347_712));
        let s = scope("Analyze events for all VMs, VCPU 3:");
        assert_eq!(s.as_ref().and_then(|s| s.vcpu), Some(3));
        let s = scope("Analyze events for pid(s) 1,2, all VCPUs:");
        assert_eq!(s.and_then(|s| s.pid), None);
    }

    #[test]
    fn totals_timestamps_and_stderr() {
        assert_eq!(
            total("Total Samples:68259, Total events handled time:61150.95us."),
            Some((68_259, Some(61_150_950)))
        );
        assert_eq!(lost("Lost events: 12"), Some(12));
        assert_eq!(timestamp("19:49:57.094070"), Some(71_397.094_07));
        assert_eq!(timestamp("19:49"), None);
        assert_eq!(
            unknown_exit_code("unknown kvm exit code:131072 on VMX"),
            Some((131_072, Some(Isa::Vmx)))
        );
    }
}

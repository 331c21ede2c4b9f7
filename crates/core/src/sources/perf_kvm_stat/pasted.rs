//! The shapes people give a `perf kvm stat` table when they paste it, turned back into what
//! perf printed: a table redrawn in a box, rows pasted without their header, a header wrapped
//! onto a second line, and the label line that names the table under it.

use std::borrow::Cow;

use super::layout::{Layout, StdioColumn, StdioColumns, stdio_columns};

/// A line of a table an author redrew in a box (`| msr | 524213 | 49.00% | … | 64.00 % |`),
/// as the plain line perf printed: bars become blanks and `64.00 %` becomes `64.00%`.
/// Other lines are returned as they are.
pub(super) fn unbox(line: &str) -> Cow<'_, str> {
    if !line.trim_ascii_start().starts_with('|') {
        return Cow::Borrowed(line);
    }
    let mut out = String::with_capacity(line.len());
    for c in line.chars() {
        if c == '%' && out.ends_with(' ') && out.trim_end().ends_with(|d: char| d.is_ascii_digit())
        {
            out.truncate(out.trim_end().len());
        }
        out.push(if c == '|' { ' ' } else { c });
    }
    Cow::Owned(out)
}

/// The layout of a row printed without a header above it, and the words that name it: the
/// first of perf's layouts the line reads as completely — the stdio layout of today (count,
/// two percentages, three `us` times and the spread), of 2012 (one `us` time, the average),
/// and the hists layout in full (count, two percentages, three ns times after the total) or as
/// `perf kvm stat report` prints it by default (count, percentage, total ns).
pub(super) fn implied(line: &str) -> Option<(Layout, &'static str)> {
    use super::layout::HistsColumn as H;
    use StdioColumn as S;
    let text = line.trim_ascii();
    let reads = |layout: &Layout| {
        matches!(
            super::row::parse(text, layout, 0),
            super::row::Parsed::Row(_)
        )
    };
    let cells: Vec<&str> = text.split_ascii_whitespace().collect();
    let times = cells.iter().filter(|c| c.ends_with("us")).count();
    let percents = cells.iter().filter(|c| c.ends_with('%')).count();
    let spread = text.contains("+-");
    let stdio = |columns: &[StdioColumn]| Layout::Stdio {
        columns: StdioColumns::of(columns),
    };
    let full = stdio(&[
        S::Samples,
        S::SamplesPct,
        S::TimePct,
        S::Min,
        S::Max,
        S::Avg,
    ]);
    if times >= 3 && reads(&full) {
        return Some((
            full,
            "perf's stdio layout (Samples, Samples%, Time%, Min Time, Max Time, Avg time)",
        ));
    }
    let old = stdio(&[S::Samples, S::SamplesPct, S::TimePct, S::Avg]);
    if times == 1 && spread && cells.get(4).is_some_and(|c| c.ends_with("us")) && reads(&old) {
        return Some((
            old,
            "perf's stdio layout of 2012 (Samples, Samples%, Time%, Avg time)",
        ));
    }
    if times > 0 || spread {
        return None;
    }
    let percent_at = |i: &[usize]| {
        percents == i.len()
            && i.iter()
                .all(|&i| cells.get(i).is_some_and(|c| c.ends_with('%')))
    };
    let hists = |columns: Vec<H>| Layout::Hists { columns };
    let all = hists(vec![
        H::Samples,
        H::SamplePct,
        H::TimeNs,
        H::TimePct,
        H::MaxNs,
        H::MinNs,
        H::MeanNs,
    ]);
    if cells.len() == 8 && percent_at(&[2, 4]) && reads(&all) {
        return Some((
            all,
            "perf's hists layout (Samples, Sample%, Time (ns), Time%, Max, Min and Mean Time \
             (ns))",
        ));
    }
    let short = hists(vec![H::Samples, H::SamplePct, H::TimeNs]);
    if cells.len() == 4 && percent_at(&[2]) && reads(&short) {
        return Some((
            short,
            "perf's default hists layout (Samples, Sample%, Time(ns))",
        ));
    }
    None
}

/// The rest of a header that a mailer wrapped onto the next line (`Time         Avg time`,
/// `    Avg time`): the stdio columns it adds, when every word of it is a column word.
pub(super) fn header_continuation(line: &str) -> Option<StdioColumns> {
    let words = |w: &str| {
        matches!(w, "Time" | "time" | "Samples%" | "Sample%" | "Time%")
            || ["min", "max", "avg"]
                .iter()
                .any(|c| w.eq_ignore_ascii_case(c))
    };
    let t = line.trim_ascii();
    (!t.is_empty() && t.split_ascii_whitespace().all(words)).then(|| stdio_columns(t))
}

/// The label a prose line gives the table under it: the line without Markdown heading marks,
/// list bullets and the closing colon (`### with the patch:` → `with the patch`).
pub(super) fn label(t: &str) -> Option<String> {
    let label = t
        .trim_start_matches('#')
        .trim()
        .trim_start_matches(['-', '*', '•'])
        .trim()
        .trim_end_matches(':')
        .trim();
    label
        .contains(|c: char| c.is_alphabetic())
        .then(|| label.chars().take(120).collect())
}

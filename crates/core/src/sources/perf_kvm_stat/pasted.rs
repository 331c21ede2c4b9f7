//! The shapes people give a `perf kvm stat` table when they paste it, turned back into what
//! perf printed: a table redrawn in a box, rows pasted without their header, a header wrapped
//! onto a second line, and the label line that names the table under it.

use std::borrow::Cow;

use super::layout::{Layout, StdioColumn, StdioColumns, stdio_columns};

/// A line of a table an author redrew in a box (`| msr | 524213 | 49.00% | … | 64.00 % |`),
/// as the plain line perf printed: bars become blanks and `64.00 %` becomes `64.00%`.
/// Other lines are returned as they are.
pub fn unbox(line: &str) -> Cow<'_, str> {
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

/// The layout of a row printed without a header above it: perf's full layout, when the line
/// reads as a complete row of it (count, two percentages, three times).
pub fn implied(line: &str) -> Option<Layout> {
    let layout = Layout::Stdio {
        columns: StdioColumns::of(&[
            StdioColumn::Samples,
            StdioColumn::SamplesPct,
            StdioColumn::TimePct,
            StdioColumn::Min,
            StdioColumn::Max,
            StdioColumn::Avg,
        ]),
    };
    let text = line.trim_ascii();
    let full = matches!(
        super::row::parse(text, &layout, 0),
        super::row::Parsed::Row(_)
    ) && text
        .split_ascii_whitespace()
        .filter(|c| c.ends_with("us"))
        .count()
        >= 3;
    full.then_some(layout)
}

/// The rest of a header that a mailer wrapped onto the next line (`Time         Avg time`,
/// `    Avg time`): the stdio columns it adds, when every word of it is a column word.
pub fn header_continuation(line: &str) -> Option<StdioColumns> {
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
pub fn label(t: &str) -> Option<String> {
    let label = t
        .trim_start_matches('#')
        .trim()
        .trim_start_matches(['-', '*', '•'])
        .trim()
        .trim_end_matches(':')
        .trim();
    (!label.is_empty()).then(|| label.chars().take(120).collect())
}

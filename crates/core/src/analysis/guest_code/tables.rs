//! `report --by rip`: one report table per exit reason, a row per guest function (or
//! unresolved RIP) with its share of that reason's exits.

use super::{CodeRow, GuestCode};
use crate::analysis::Totals;
use crate::analysis::report::{Other, ReportRow, ReportTable};
use crate::profile::TableKind;

/// Rows shown per exit reason when `--top` is not given.
pub(super) const DEFAULT_TOP: usize = 10;

/// The report tables of one input's attribution.
pub(crate) fn report_tables(input: &str, code: &GuestCode, top: Option<usize>) -> Vec<ReportTable> {
    let top = top.unwrap_or(DEFAULT_TOP);
    code.reasons
        .iter()
        .map(|r| {
            let mut total = Totals::zero();
            total.add(r.exits, None, false);
            let mut rows: Vec<ReportRow> = r.code.iter().map(row).collect();
            let other = (top < rows.len()).then(|| {
                let rest = rows.split_off(top);
                Other {
                    rows: rest.len(),
                    count: rest.iter().map(|r| r.count).sum(),
                    time_ns: None,
                }
            });
            ReportTable {
                input: input.to_string(),
                kind: TableKind::GuestRip,
                label: Some(format!("{} ({} exits with a RIP)", r.reason, r.exits)),
                scope: None,
                isa: None,
                grouped_by: "function",
                window_ns: None,
                timed: false,
                overlapping: false,
                per_second: false,
                partial: code.folded > 0,
                rows,
                other,
                total,
                printed_count: None,
                printed_time_ns: None,
                backend: None,
            }
        })
        .collect()
}

/// The sites of a function: `+0x4` alone, or `+0x4 (95%), +0x1c, … (5 RIPs)`.
fn sites(c: &CodeRow) -> Option<String> {
    c.function.as_ref()?;
    if c.distinct == 1 {
        // The name says it: `native_write_msr+0x4`.
        return None;
    }
    let offsets: Vec<String> = c
        .sites
        .iter()
        .filter_map(|s| {
            let label = s.label.as_deref()?;
            let off = label.rsplit_once('+').map_or(label, |(_, o)| o);
            Some(if c.distinct > 1 {
                format!(
                    "+{off} ({:.0}%)",
                    s.count as f64 * 100.0 / c.count.max(1) as f64
                )
            } else {
                format!("+{off}")
            })
        })
        .collect();
    let more = if c.distinct > c.sites.len() {
        format!(", … ({} RIPs)", c.distinct)
    } else {
        String::new()
    };
    Some(format!("{}{more}", offsets.join(", ")))
}

fn row(c: &CodeRow) -> ReportRow {
    ReportRow {
        key: c.name(),
        code: c.sites.first().map(|s| s.rip),
        access: None,
        name: sites(c),
        class: None,
        idle: false,
        pid: None,
        vm: None,
        vcpu: None,
        count: c.count,
        count_share: Some(c.share),
        time_ns: None,
        time_share: None,
        min_ns: None,
        max_ns: None,
        mean_ns: None,
        rel_stderr_pct: None,
        p50_ns: None,
        p99_ns: None,
        per_second: None,
        latency: Vec::new(),
    }
}

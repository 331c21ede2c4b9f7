//! A live session's intervals summed into one table: which table goes on a session, its
//! rows, printed totals and window summed, and the label its window gives it.

use crate::decode::Isa;
use crate::profile::{PrintedTotal, Table, TableKind, Window};

/// Whether a table of `kind`, `scope` and `isa`, read at a timestamp, is one more interval of
/// the live session summed in `last` (so one reader sums it into `last`): the same kind and
/// scope, and the same ISA or none guessed.
pub(super) fn continues_live(
    last: &Table,
    kind: &TableKind,
    scope: Option<&str>,
    isa: Option<Isa>,
) -> bool {
    last.window.is_some()
        && last.kind == *kind
        && last.scope.as_deref() == scope
        && (last.isa == isa || isa.is_none())
}

/// Adds the rows of `next` (one more interval of a live session) into `into`.
pub(super) fn sum_interval(into: &mut Table, next: Table, seconds: (f64, f64)) {
    for row in next.rows {
        match into
            .rows
            .iter_mut()
            .find(|r| r.key == row.key && r.pid == row.pid && r.vcpu == row.vcpu)
        {
            Some(existing) => existing.merge(&row),
            None => into.rows.push(row),
        }
    }
    sum_totals(into, next.partial, next.printed_total, next.window, seconds);
}

/// Sums what an interval's table holds besides its rows into the live table `into`: its
/// partiality, printed total and window (`seconds`: the first interval's and this one's).
pub(super) fn sum_totals(
    into: &mut Table,
    partial: bool,
    total: Option<PrintedTotal>,
    window: Option<Window>,
    seconds: (f64, f64),
) {
    into.partial |= partial;
    if let (Some(a), Some(b)) = (&mut into.printed_total, total) {
        a.count = a.count.saturating_add(b.count);
        a.time_ns = a.time_ns.zip(b.time_ns).map(|(x, y)| x.saturating_add(y));
        a.lost_events = match (a.lost_events, b.lost_events) {
            (None, None) => None,
            (x, y) => Some(x.unwrap_or(0).saturating_add(y.unwrap_or(0))),
        };
    }
    if let (Some(w), Some(nw)) = (&mut into.window, window) {
        w.intervals += nw.intervals;
        w.end = nw.end;
        let (first, last) = seconds;
        let span = if last >= first {
            last - first
        } else {
            last + 86_400.0 - first
        };
        // n displays at equal intervals cover n × (span / (n − 1)).
        let n = f64::from(w.intervals);
        w.duration_ns = (n > 1.0 && span > 0.0).then(|| (span * n / (n - 1.0) * 1e9) as u64);
    }
}

/// The label of a live table summed from intervals ([`sum_interval`]): its window. Set once
/// all are read (formatting it at every interval cost more than summing it).
pub(super) fn label_live(table: &mut Table) {
    if let Some(w) = table.window.as_ref().filter(|w| w.intervals > 1) {
        table.label = Some(format!(
            "live {}–{} ({} intervals)",
            w.start.as_deref().unwrap_or("?"),
            w.end.as_deref().unwrap_or("?"),
            w.intervals
        ));
    }
}

//! One table of `virtlens report`: a group of an input's tables merged into rows by what the
//! report groups by (key, vCPU or VM, idle kept apart), each row with its decoded name and its
//! shares of the totals, ranked by time (or count when time is unknown) and cut at `--top`.

use std::collections::HashMap;

use super::report::{By, Options, Other, ReportRow, ReportTable};
use super::{Totals, exit_class};
use crate::decode::{Decoder, ExitClass, Isa};
use crate::profile::{Key, Profile, Row, Table, TableKind};

/// The report table of `tables` (one group of `p`'s tables): rows merged by what
/// `options.by` groups them by, ranked, cut at `options.top`, with their totals.
pub(super) fn build(
    input: &str,
    p: &Profile,
    tables: &[&Table],
    decoder: &Decoder,
    options: &Options,
) -> ReportTable {
    let Some(first) = tables.first() else {
        return empty_table(input);
    };
    let isa = first.isa.or(p.origin.isa);
    let grouped_by = match options.by {
        By::Vcpu => "vcpu",
        By::Vm => "vm",
        _ => "key",
    };
    // Merge rows by their group key, keeping idle apart (indexed: tables can have hundreds of
    // thousands of distinct addresses).
    let mut merged: Vec<(GroupKey, Row, bool)> = Vec::new();
    let mut at: HashMap<GroupKey, usize> = HashMap::new();
    for t in tables {
        for r in &t.rows {
            let idle = exit_class(&r.key, t.isa.or(isa)) == Some(ExitClass::Idle);
            let gk = group_key(r, options.by, idle);
            match at.get(&gk).and_then(|&i| merged.get_mut(i)) {
                Some((_, row, _)) => row.merge(r),
                None => {
                    at.insert(gk.clone(), merged.len());
                    merged.push((gk, r.clone(), idle));
                }
            }
        }
    }
    let window_ns = if tables.len() == 1 {
        first.window.as_ref().and_then(|w| w.duration_ns)
    } else {
        None
    };
    let mut total = Totals::zero();
    for (_, r, idle) in &merged {
        total.add(r.count, r.time.total_ns, *idle);
    }
    let total = total.with_window(window_ns);
    let timed = total.time_ns.is_some() && !merged.is_empty();
    let overlapping = tables.iter().any(|t| t.overlapping);
    let mut rows: Vec<ReportRow> = merged
        .into_iter()
        .map(|(gk, r, idle)| {
            let row = report_row(gk, &r, idle, isa, p, decoder, &total, window_ns);
            ReportRow {
                count_share: row.count_share.filter(|_| !overlapping),
                ..row
            }
        })
        .collect();
    rows.sort_by(|a, b| {
        let measure = |r: &ReportRow| {
            if timed {
                r.time_ns.unwrap_or(0)
            } else {
                r.count
            }
        };
        measure(b).cmp(&measure(a)).then_with(|| a.key.cmp(&b.key))
    });
    let other = options.top.filter(|&n| n < rows.len()).map(|n| {
        let rest = rows.split_off(n);
        Other {
            rows: rest.len(),
            count: rest.iter().fold(0u64, |acc, r| acc.saturating_add(r.count)),
            time_ns: rest.iter().try_fold(0u64, |a, r| Some(a + r.time_ns?)),
        }
    });
    let printed = |f: fn(&Table) -> Option<u64>| -> Option<u64> {
        tables.iter().map(|t| f(t)).sum::<Option<u64>>()
    };
    ReportTable {
        input: input.to_string(),
        kind: first.kind.clone(),
        label: first.label.clone(),
        scope: if tables.len() == 1 {
            first.scope.clone()
        } else {
            None
        },
        isa,
        grouped_by,
        window_ns,
        timed,
        overlapping,
        partial: tables.iter().any(|t| t.partial),
        per_second: tables.iter().any(|t| t.per_second),
        rows,
        other,
        total,
        printed_count: printed(|t| t.printed_total.as_ref().map(|p| p.count)),
        printed_time_ns: printed(|t| t.printed_total.as_ref().and_then(|p| p.time_ns)),
        backend: p.origin.backend_label(),
    }
}

/// A table with no rows, for a group with no tables.
fn empty_table(input: &str) -> ReportTable {
    ReportTable {
        input: input.to_string(),
        kind: TableKind::Vmexit,
        label: None,
        scope: None,
        isa: None,
        grouped_by: "key",
        window_ns: None,
        timed: false,
        overlapping: false,
        partial: false,
        per_second: false,
        rows: Vec::new(),
        other: None,
        total: Totals::zero(),
        printed_count: None,
        printed_time_ns: None,
        backend: None,
    }
}

/// What rows are merged by.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum GroupKey {
    Key(Key),
    Vcpu(Option<u32>, bool),
    Vm(Option<u32>, bool),
}

/// The group key of row `r`, grouped by `by`.
fn group_key(r: &Row, by: By, idle: bool) -> GroupKey {
    match by {
        By::Vcpu => GroupKey::Vcpu(r.vcpu, idle),
        By::Vm => GroupKey::Vm(r.pid, idle),
        _ => GroupKey::Key(r.key.clone()),
    }
}

/// One merged row as the report shows it: its key decoded, its shares of the table's totals.
#[allow(clippy::too_many_arguments)]
fn report_row(
    gk: GroupKey,
    r: &Row,
    idle: bool,
    isa: Option<Isa>,
    p: &Profile,
    decoder: &Decoder,
    total: &Totals,
    window_ns: Option<u64>,
) -> ReportRow {
    let share = |part: u64, whole: u64| {
        if whole == 0 {
            0.0
        } else {
            part as f64 / whole as f64
        }
    };
    let vm_name = |pid: Option<u32>| pid.and_then(|pid| p.origin.vm_names.get(&pid).cloned());
    let idle_suffix = if idle { " (idle)" } else { "" };
    let (key, code, access, name, class) = match &gk {
        GroupKey::Key(k) => (
            k.key_text(),
            k.code(),
            k.access(),
            match k {
                Key::Port { port, .. } => decoder.port(*port),
                Key::Mmio { gpa, .. } => decoder.mmio(*gpa),
                Key::Msr { index, .. } => decoder.msr(*index),
                _ => None,
            },
            exit_class(k, isa),
        ),
        GroupKey::Vcpu(v, _) => (
            match v {
                Some(v) => format!("vcpu {v}{idle_suffix}"),
                None => format!("all vCPUs{idle_suffix}"),
            },
            v.map(u64::from),
            None,
            None,
            None,
        ),
        GroupKey::Vm(pid, _) => (
            match (pid, vm_name(*pid)) {
                (_, Some(name)) => format!("{name}{idle_suffix}"),
                (Some(pid), None) => format!("pid {pid}{idle_suffix}"),
                (None, None) => format!("all VMs{idle_suffix}"),
            },
            pid.map(u64::from),
            None,
            None,
            None,
        ),
    };
    ReportRow {
        key,
        code,
        access,
        name,
        class,
        idle,
        pid: r.pid,
        vm: vm_name(r.pid),
        vcpu: r.vcpu,
        count: r.count,
        count_share: Some(share(r.count, total.count)),
        time_ns: r.time.total_ns,
        time_share: r
            .time
            .total_ns
            .zip(total.time_ns)
            .map(|(t, all)| share(t, all)),
        min_ns: r.time.min_ns,
        max_ns: r.time.max_ns,
        mean_ns: r.time.mean_ns(r.count),
        rel_stderr_pct: r.time.rel_stderr_pct(r.count),
        p50_ns: r.latency.as_ref().and_then(|l| l.quantile_ns(0.5)),
        p99_ns: r.latency.as_ref().and_then(|l| l.quantile_ns(0.99)),
        latency: r
            .latency
            .as_ref()
            .map(super::distribution::buckets)
            .unwrap_or_default(),
        per_second: window_ns
            .filter(|&w| w > 0)
            .map(|w| r.count as f64 / (w as f64 / 1e9)),
    }
}

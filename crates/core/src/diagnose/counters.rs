//! kvm_stat / KVM binary-stats counters (`exits`, `io_exits`, `halt_exits`, `irq_exits`, …) as
//! an exit part: the `exits` counter is the whole, the exit counters are its rows, classed so the
//! rules read them like exit reasons; rates come from the capture window or kvm_stat's rate
//! column. Counters that are not exits (`pf_fixed`, `insn_emulation`, …) stay out.

use crate::analysis::Totals;
use crate::decode::ExitClass;
use crate::profile::{Key, Table, TableKind};
use crate::sources::kvm_stat::{COUNTER_KIND, RATE_KIND};

use super::view::{Part, VRow, rate};

/// The class of a KVM exit counter (debugfs / binary stats names), `None` for counters that
/// are not exits (`pf_fixed`, `insn_emulation`, `halt_wakeup`, …).
fn counter_class(name: &str) -> Option<ExitClass> {
    Some(match name {
        "io_exits" => ExitClass::Io,
        "mmio_exits" => ExitClass::Mmio,
        "halt_exits" => ExitClass::Idle,
        "irq_exits" | "irq_window" | "irq_window_exits" | "nmi_window" | "nmi_window_exits"
        | "request_irq" | "request_irq_exits" => ExitClass::Interrupt,
        "hypercalls" => ExitClass::Hypercall,
        "signal_exits" => ExitClass::Other,
        _ => return None,
    })
}

/// An exit part from kvm_stat / binary-stats counters: the `exits` counter is the whole, the
/// exit counters (`io_exits`, `halt_exits`, `irq_exits`, …) are its rows. They overlap nothing
/// else, but do not add up to `exits`: the rest are exits no counter names.
pub fn part(tables: &[&Table]) -> Option<Part> {
    let find = |kind: &str| {
        tables
            .iter()
            .find(|t| matches!(&t.kind, TableKind::Event(n) if n == kind))
    };
    let counters = find(COUNTER_KIND)?;
    let rates = find(RATE_KIND);
    let count = |name: &str| {
        counters
            .rows
            .iter()
            .filter(|r| matches!(&r.key, Key::Event { name: n } if n == name))
            .map(|r| r.count)
            .fold(0u64, u64::saturating_add)
    };
    let exits = count("exits");
    if exits == 0 {
        return None;
    }
    let window_ns = counters.window.as_ref().and_then(|w| w.duration_ns);
    let mut totals = Totals::zero();
    totals.time_ns = None;
    totals.idle_time_ns = None;
    totals.overhead_time_ns = None;
    totals.count = exits;
    let mut rows = Vec::new();
    for r in &counters.rows {
        let Key::Event { name } = &r.key else {
            continue;
        };
        let Some(class) = counter_class(name) else {
            continue;
        };
        let idle = class == ExitClass::Idle;
        if idle {
            totals.idle_count = totals.idle_count.saturating_add(r.count);
        }
        let per_second = rate(r.count, window_ns).or_else(|| {
            rates.and_then(|t| {
                t.rows
                    .iter()
                    .find(|x| x.key == r.key)
                    .map(|x| x.count as f64)
            })
        });
        rows.push(VRow {
            table: counters.kind.clone(),
            key: r.key.clone(),
            name: None,
            class: Some(class),
            idle,
            count: r.count,
            time_ns: None,
            per_second,
        });
    }
    totals.overhead_count = exits.saturating_sub(totals.idle_count);
    totals.per_second = rate(exits, window_ns).or_else(|| {
        rates.and_then(|t| {
            t.rows
                .iter()
                .find(|x| matches!(&x.key, Key::Event { name } if name == "exits"))
                .map(|x| x.count as f64)
        })
    });
    Some(Part {
        kind: counters.kind.clone(),
        from_counters: true,
        rows,
        totals,
        timed: false,
        window_ns,
    })
}

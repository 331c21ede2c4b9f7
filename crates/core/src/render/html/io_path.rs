//! The IO-path section of the `lab` page: exits per IO for each way completions reach the
//! driver (an interrupt the VMM injects, an irqfd, polling) at each queue depth, as bars with
//! the returns to the VMM printed beside them, and every configuration in the table under the
//! chart (the same cells as the text table).

use super::chart::{self, Bar, Chart, Group, Scale};
use super::page::{Block, DataTable, Section};
use crate::measure::BackendLabel;
use crate::measure::io_path::{Delivery, Eoi, IoPathReport};
use crate::render::format::per_io;
use crate::render::io_path_text::{HEADER, row};

/// The section of a lab run that measured the IO path.
pub(super) fn section(r: &IoPathReport, b: &BackendLabel, measured: &str) -> Section {
    let mut s = Section::new("io-path", "The IO path: interrupts or polling, per IO");
    s.intro.push(format!(
        "A micro-VM driver submits requests through a ring and notifies the device; completions \
         come as an interrupt the VMM injects, through an irqfd to the in-kernel LAPIC, or not at \
         all (the driver polls). Counts per IO are exact on any backend; times are backend {}'s.",
        b.name
    ));
    let mut table = DataTable::new("Every configuration, per IO", &HEADER);
    for i in [0, 3] {
        table.numeric[i] = false;
    }
    table.rows = r.rows.iter().map(row).collect();
    let mut depths: Vec<u32> = r.rows.iter().map(|x| x.qd).collect();
    depths.sort_unstable();
    depths.dedup();
    let mut groups = Vec::new();
    for qd in depths {
        let bars: Vec<Bar> = Delivery::ALL
            .iter()
            .enumerate()
            .filter_map(|(series, &d)| {
                let eoi = if d.interrupts() {
                    Eoi::Xapic
                } else {
                    Eoi::None
                };
                let row = r.row(d, qd, 1, eoi)?;
                let (e, v) = (row.exits_per_io?, row.vmm_returns_per_io?);
                Some(Bar {
                    series,
                    value: e.total,
                    shown: format!("{} exits, {} to the VMM", per_io(e.total), per_io(v.total)),
                })
            })
            .collect();
        if !bars.is_empty() {
            groups.push(Group {
                label: format!("queue depth {qd}"),
                bars,
            });
        }
    }
    let chart = Chart {
        id: "io-path".into(),
        title: "Exits per IO by delivery mode and queue depth".into(),
        desc: "For each queue depth, one interrupt per completion: the exits per IO (notify, \
               EOI, halt or interrupt window) of an interrupt the VMM injects, of an irqfd, and of \
               polling, with the returns to the VMM per IO printed at each bar."
            .into(),
        axis: "exits per IO".into(),
        series: Delivery::ALL.iter().map(|d| d.name().to_string()).collect(),
        groups,
        scale: Scale::Linear,
        tick: per_io,
        measured: measured.to_string(),
        table,
    };
    s.blocks.push(Block::Chart(Box::new(chart::layout(chart))));
    s.intro.push(format!("Model: {}", r.model));
    s.intro.extend(r.notes.iter().cloned());
    s
}

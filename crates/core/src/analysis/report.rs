//! `virtlens report`: one input's tables, grouped as asked (`--by`), each row with its share of
//! exits and of time, its decoded name, and whether it is idle; rows ranked by time (or by
//! count when time is unknown), and totals that keep idle apart from overhead.

use std::collections::BTreeMap;

use serde::Serialize;

use super::{Totals, report_table};
use crate::decode::{Decoder, ExitClass, Isa};
use crate::facts::ExitTiming;
use crate::profile::{Access, Profile, Table, TableKind};

/// The version of the report JSON schema.
pub(crate) const SCHEMA: &str = "virtlens.report/1";

/// How rows are grouped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum By {
    /// Every table as the input has it.
    #[default]
    Table,
    /// Only exit-reason tables, by reason.
    Reason,
    /// Only IO port tables.
    Port,
    /// Only MMIO tables.
    Mmio,
    /// Only MSR tables.
    Msr,
    /// Rows summed per vCPU.
    Vcpu,
    /// Rows summed per VM.
    Vm,
    /// Each exit reason's exits by the guest code they came from (the `guest_rip` table).
    Rip,
}

/// What the user asked for.
#[derive(Debug, Clone, Default)]
pub struct Options {
    pub by: By,
    /// Show only the top N rows of each table (the rest are summed into `other`).
    pub top: Option<usize>,
    /// The guest's symbols, for [`By::Rip`].
    pub symbols: super::guest_code::Symbols,
}

/// A report over one or more inputs.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub schema: &'static str,
    pub tables: Vec<ReportTable>,
    /// The vCPU threads' scheduling of the inputs that carry it (live captures).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub sched: Vec<SchedInput>,
    /// The performance counters of the inputs that carry them (perfmon / esxtop / tables).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub counters: Vec<CounterInput>,
    /// Exits over time per VM and vCPU, of the inputs whose events have timestamps.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub timelines: Vec<TimelineInput>,
    /// Remarks about the inputs, each prefixed with the input's name.
    pub notes: Vec<String>,
}

/// One input's vCPU scheduling.
#[derive(Debug, Clone, Serialize)]
pub struct SchedInput {
    pub input: String,
    #[serde(flatten)]
    pub summary: super::sched::SchedSummary,
}

/// One input's timeline, its lanes named by the input's VM names.
#[derive(Debug, Clone, Serialize)]
pub struct TimelineInput {
    pub input: String,
    #[serde(flatten)]
    pub timeline: crate::profile::Timeline,
}

/// One input's performance counters.
#[derive(Debug, Clone, Serialize)]
pub struct CounterInput {
    pub input: String,
    #[serde(flatten)]
    pub log: crate::profile::CounterLog,
}

/// One table of the report.
#[derive(Debug, Clone, Serialize)]
pub struct ReportTable {
    pub input: String,
    pub kind: TableKind,
    pub label: Option<String>,
    pub scope: Option<String>,
    pub isa: Option<Isa>,
    /// What a row is: `key` (reason/port/…), `vcpu` or `vm`.
    pub grouped_by: &'static str,
    pub window_ns: Option<u64>,
    /// True when every row's time is known, so rows are ranked by time.
    pub timed: bool,
    /// Rows are overlapping counters: no shares, no total (see `Table::overlapping`).
    pub overlapping: bool,
    /// Counts are events per second.
    pub per_second: bool,
    /// Rows of the input are missing (elided, unreadable, cut off, lost): the notes say which.
    pub partial: bool,
    pub rows: Vec<ReportRow>,
    /// Rows beyond `--top`, summed.
    pub other: Option<Other>,
    pub total: Totals,
    /// The totals the input printed, when it printed them.
    pub printed_count: Option<u64>,
    pub printed_time_ns: Option<u64>,
    /// The KVM backend the input names (`vmx`, `svm`, `pvm`), for labelling figures (not part
    /// of the JSON schema, which says it per input elsewhere).
    #[serde(skip)]
    pub backend: Option<String>,
}

/// One row of a report table.
#[derive(Debug, Clone, Serialize)]
pub struct ReportRow {
    pub key: String,
    pub code: Option<u64>,
    pub access: Option<Access>,
    /// The decoded name of a port, address or MSR.
    pub name: Option<String>,
    pub class: Option<ExitClass>,
    pub idle: bool,
    pub pid: Option<u32>,
    pub vm: Option<String>,
    pub vcpu: Option<u32>,
    pub count: u64,
    /// Share of the table's events (`None` for overlapping counters).
    pub count_share: Option<f64>,
    pub time_ns: Option<u64>,
    pub time_share: Option<f64>,
    pub min_ns: Option<u64>,
    pub max_ns: Option<u64>,
    pub mean_ns: Option<f64>,
    pub rel_stderr_pct: Option<f64>,
    pub p50_ns: Option<u64>,
    pub p99_ns: Option<u64>,
    pub per_second: Option<f64>,
    /// The latency distribution in 1-2-5 buckets, where individual events were timed (for
    /// the HTML page; not part of the JSON schema).
    #[serde(skip)]
    pub latency: Vec<super::distribution::Bucket>,
}

/// Rows folded away by `--top`.
#[derive(Debug, Clone, Serialize)]
pub struct Other {
    pub rows: usize,
    pub count: u64,
    pub time_ns: Option<u64>,
}

/// Builds the report of `profiles` (one per input).
pub fn build(profiles: &[Profile], decoder: &Decoder, options: &Options) -> Report {
    let mut tables = Vec::new();
    let mut notes = input_notes(profiles);
    for p in profiles {
        let input = input_name(p);
        if options.by == By::Rip {
            match super::guest_code::attribute(p, &options.symbols) {
                Some(code) => {
                    tables.extend(super::guest_code::report_tables(&input, &code, options.top));
                    notes.extend(code.notes().into_iter().map(|n| format!("{input}: {n}")));
                    notes.extend(code.reasons.iter().take(3).filter_map(|r| {
                        code.headline(r)
                            .map(|h| format!("{input}: guest code: {h}"))
                    }));
                }
                None if p.origin.format == crate::sources::capture::FORMAT => notes.push(format!(
                    "{input}: its profile has no guest RIPs: the capture was recorded by a \
                     virtlens that did not keep them (its raw events have a `guest_rip` or \
                     `rip` column, for DuckDB or pandas); record again to have them here"
                )),
                None => notes.push(format!(
                    "{input}: no exit carries a guest RIP (kvm_exit's `rip`): perf kvm stat \
                     report and kvm_stat print none; `perf record -e kvm:kvm_exit`, \
                     `perf kvm stat record`, trace-cmd or `virtlens record` keep it"
                )),
            }
            continue;
        }
        for group in group_tables(p, options.by) {
            tables.push(report_table::build(&input, p, &group, decoder, options));
        }
    }
    let sched = profiles
        .iter()
        .filter_map(|p| {
            Some(SchedInput {
                input: input_name(p),
                summary: super::sched::summarize(p.sched.as_ref()?),
            })
        })
        .collect();
    let counters = profiles
        .iter()
        .filter_map(|p| {
            Some(CounterInput {
                input: input_name(p),
                log: p.counters.clone()?,
            })
        })
        .collect();
    let timelines = profiles
        .iter()
        .filter_map(|p| {
            let mut timeline = p.timeline.clone()?;
            for lane in &mut timeline.lanes {
                lane.vm = lane
                    .pid
                    .and_then(|pid| p.origin.vm_names.get(&pid).cloned());
            }
            Some(TimelineInput {
                input: input_name(p),
                timeline,
            })
        })
        .collect();
    Report {
        schema: SCHEMA,
        tables,
        sched,
        counters,
        timelines,
        notes,
    }
}

/// How an input is named in output: its path, else its format.
fn input_name(p: &Profile) -> String {
    p.origin
        .path
        .clone()
        .unwrap_or_else(|| p.origin.format.clone())
}

/// Every input's notes as `file:line: message`, and for an input recorded on an emulated CPU,
/// what its times are.
pub(crate) fn input_notes(profiles: &[Profile]) -> Vec<String> {
    profiles
        .iter()
        .flat_map(|p| {
            let input = input_name(p);
            let timing = p.origin.exit_timing();
            let emulated = matches!(timing, ExitTiming::EmulatedCpu(_))
                .then(|| format!("{input}: times: {}", timing.caveat()));
            p.warnings
                .iter()
                .map(move |n| match n.line {
                    Some(l) => format!("{input}:{l}: {}", n.message),
                    None => format!("{input}: {}", n.message),
                })
                .chain(emulated)
                .collect::<Vec<_>>()
        })
        .collect()
}

/// The tables of `p` that `by` selects, merged where `by` sums across tables.
fn group_tables(p: &Profile, by: By) -> Vec<Vec<&Table>> {
    let wanted = |t: &&Table| match by {
        // Guest code has a view of its own (`--by rip`): its rows repeat the exits.
        _ if t.kind == TableKind::GuestRip => false,
        By::Table | By::Vcpu | By::Vm => true,
        By::Reason => t.kind == TableKind::Vmexit,
        By::Port => t.kind == TableKind::Ioport,
        By::Mmio => t.kind == TableKind::Mmio,
        By::Msr => t.kind == TableKind::Msr,
        By::Rip => false,
    };
    if by == By::Table {
        return p.tables.iter().filter(wanted).map(|t| vec![t]).collect();
    }
    let mut groups: BTreeMap<(TableKind, Option<String>), Vec<&Table>> = BTreeMap::new();
    for t in p.tables.iter().filter(wanted) {
        groups
            .entry((t.kind.clone(), t.label.clone()))
            .or_default()
            .push(t);
    }
    groups.into_values().collect()
}

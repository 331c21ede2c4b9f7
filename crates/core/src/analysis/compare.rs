//! `virtlens compare`: several inputs side by side. Each labelled table of a file is an input
//! of its own (a before/after paste compares with itself); rows are aligned by key within each
//! kind, deltas are taken against the first input, totals keep idle apart, and a verdict names
//! the biggest changes in plain words.

use std::collections::BTreeMap;

use serde::Serialize;

use super::{Totals, exit_class};
use crate::decode::{Decoder, ExitClass, Isa};
use crate::profile::{Access, Key, Profile, Table, TableKind};

/// The version of the compare JSON schema.
pub(crate) const SCHEMA: &str = "virtlens.compare/1";

/// A comparison of inputs.
#[derive(Debug, Clone, Serialize)]
pub struct Comparison {
    pub schema: &'static str,
    pub inputs: Vec<Input>,
    pub tables: Vec<CompareTable>,
    /// One per input after the first, against the first.
    pub verdicts: Vec<Verdict>,
    /// Input numbers (1-based) from least to most handled time without idle (or exits, when
    /// time is unknown), for the kind the verdicts are about.
    pub ranking: Vec<usize>,
    /// Performance counters side by side, when two or more inputs carry them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub counters: Option<crate::counters::compare::Comparison>,
    /// Remarks about the inputs, each prefixed with the input's file.
    pub notes: Vec<String>,
}

/// One compared input.
#[derive(Debug, Clone, Serialize)]
pub struct Input {
    /// 1-based position, as the text output numbers inputs.
    pub number: usize,
    pub name: String,
    pub path: Option<String>,
    /// The label the input gave its table (`baseline`, `with the patch`), part of `name`.
    pub label: Option<String>,
    /// Rows of this input are missing (elided, unreadable, cut off, lost): see the notes.
    pub partial: bool,
    /// The KVM backend (`vmx`, `svm`, `pvm`) when the input names it, for labelling figures
    /// (not part of the JSON schema).
    #[serde(skip)]
    pub backend: Option<String>,
}

/// What input `input` changed against input 1, for one kind.
#[derive(Debug, Clone, Serialize)]
pub struct Verdict {
    pub input: usize,
    pub name: String,
    pub kind: TableKind,
    /// What `before`/`after` measure: handled time without idle (ns), or exits without idle.
    pub measure: Measure,
    pub before: u64,
    pub after: u64,
    pub change_pct: Option<f64>,
    /// The keys that moved most (by time, else by count), largest first.
    pub movers: Vec<Mover>,
}

/// The unit of a verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Measure {
    Time,
    Exits,
}

/// One key that moved.
#[derive(Debug, Clone, Serialize)]
pub struct Mover {
    pub key: String,
    pub count_before: u64,
    pub count_after: u64,
    pub count_change_pct: Option<f64>,
}

/// One kind of rows, aligned across inputs.
#[derive(Debug, Clone, Serialize)]
pub struct CompareTable {
    pub kind: TableKind,
    pub rows: Vec<CompareRow>,
    /// Per input; `None` when that input has no table of this kind.
    pub totals: Vec<Option<Totals>>,
}

/// One key across inputs: `None` where the input has no table of this kind, 0 where it has
/// the table but not the key.
#[derive(Debug, Clone, Serialize)]
pub struct CompareRow {
    pub key: String,
    pub code: Option<u64>,
    pub access: Option<Access>,
    pub name: Option<String>,
    pub class: Option<ExitClass>,
    pub idle: bool,
    pub counts: Vec<Option<u64>>,
    pub time_ns: Vec<Option<u64>>,
    /// Change of count against input 1, in percent (None when input 1 had none).
    pub count_change_pct: Vec<Option<f64>>,
    /// Change of time against input 1, in percent.
    pub time_change_pct: Vec<Option<f64>>,
}

struct Side<'a> {
    input: Input,
    tables: Vec<&'a Table>,
    isa: Option<Isa>,
}

/// Compares `profiles` (in the order given).
pub fn build(profiles: &[Profile], decoder: &Decoder) -> Comparison {
    let sides = split_inputs(profiles);
    let mut kinds: Vec<TableKind> = Vec::new();
    for s in &sides {
        // Guest RIPs move with every boot (KASLR): compared as addresses they say nothing.
        for t in s.tables.iter().filter(|t| t.kind != TableKind::GuestRip) {
            if !kinds.contains(&t.kind) {
                kinds.push(t.kind.clone());
            }
        }
    }
    let tables: Vec<CompareTable> = kinds
        .iter()
        .map(|k| compare_kind(k, &sides, decoder))
        .collect();
    let (verdicts, ranking) = tables
        .iter()
        .find(|t| t.totals.iter().all(Option::is_some))
        .map(|t| verdicts(t, &sides))
        .unwrap_or_default();
    Comparison {
        schema: SCHEMA,
        inputs: sides.into_iter().map(|s| s.input).collect(),
        tables,
        verdicts,
        ranking,
        counters: crate::counters::compare::compare(profiles),
        notes: super::report::input_notes(profiles),
    }
}

/// One side per input (see [`super::inputs`]), with the ISA its tables were read under.
fn split_inputs(profiles: &[Profile]) -> Vec<Side<'_>> {
    super::inputs::split(profiles)
        .into_iter()
        .map(|i| Side {
            isa: i.tables.iter().find_map(|t| t.isa).or(i.profile.origin.isa),
            input: Input {
                number: i.number,
                name: i.name,
                path: i.path,
                label: i.label,
                partial: i.tables.iter().any(|t| t.partial),
                backend: i.profile.origin.backend_label(),
            },
            tables: i.tables,
        })
        .collect()
}

fn compare_kind(kind: &TableKind, sides: &[Side<'_>], decoder: &Decoder) -> CompareTable {
    let n = sides.len();
    let mut keys: Vec<(Key, bool, Option<ExitClass>)> = Vec::new();
    let mut counts: BTreeMap<Key, Vec<Option<u64>>> = BTreeMap::new();
    let mut times: BTreeMap<Key, Vec<Option<u64>>> = BTreeMap::new();
    let mut totals = vec![None; n];
    for (i, side) in sides.iter().enumerate() {
        let tables: Vec<&&Table> = side.tables.iter().filter(|t| &t.kind == kind).collect();
        if tables.is_empty() {
            continue;
        }
        let mut total = Totals::zero();
        for t in tables {
            for r in &t.rows {
                let class = exit_class(&r.key, t.isa.or(side.isa));
                let idle = class == Some(ExitClass::Idle);
                total.add(r.count, r.time.total_ns, idle);
                if !keys.iter().any(|(k, _, _)| *k == r.key) {
                    keys.push((r.key.clone(), idle, class));
                }
                let c = counts.entry(r.key.clone()).or_insert_with(|| vec![None; n]);
                c[i] = Some(c[i].unwrap_or(0) + r.count);
                let t_ns = times.entry(r.key.clone()).or_insert_with(|| vec![None; n]);
                t_ns[i] = match (t_ns[i], r.time.total_ns) {
                    (Some(a), Some(b)) => Some(a + b),
                    (None, b) => b,
                    (a, None) => a,
                };
            }
        }
        totals[i] = Some(total);
    }
    let mut rows: Vec<CompareRow> = keys
        .into_iter()
        .map(|(key, idle, class)| {
            let present = |v: Option<Vec<Option<u64>>>| -> Vec<Option<u64>> {
                let v = v.unwrap_or_else(|| vec![None; n]);
                v.iter()
                    .zip(&totals)
                    .map(|(x, t)| t.as_ref().map(|_| x.unwrap_or(0)))
                    .collect()
            };
            let c = present(counts.remove(&key));
            let t = match times.remove(&key) {
                Some(v) => v,
                None => vec![None; n],
            };
            let t: Vec<Option<u64>> = t
                .iter()
                .zip(&c)
                .map(|(time, count)| if count == &Some(0) { Some(0) } else { *time })
                .collect();
            CompareRow {
                name: match &key {
                    Key::Port { port, .. } => decoder.port(*port),
                    Key::Mmio { gpa, .. } => decoder.mmio(*gpa),
                    Key::Msr { index, .. } => decoder.msr(*index),
                    _ => None,
                },
                key: key.key_text(),
                code: key.code(),
                access: key.access(),
                class,
                idle,
                count_change_pct: changes(&c),
                time_change_pct: changes(&t),
                counts: c,
                time_ns: t,
            }
        })
        .collect();
    rows.sort_by(|a, b| {
        let peak = |r: &CompareRow| {
            let t = r.time_ns.iter().flatten().max().copied();
            (
                t.unwrap_or(0),
                r.counts.iter().flatten().max().copied().unwrap_or(0),
            )
        };
        peak(b).cmp(&peak(a)).then_with(|| a.key.cmp(&b.key))
    });
    CompareTable {
        kind: kind.clone(),
        rows,
        totals,
    }
}

/// Relative change of each value against the first, in percent.
fn changes(values: &[Option<u64>]) -> Vec<Option<f64>> {
    let base = values.first().copied().flatten();
    values
        .iter()
        .map(|v| match (base, v) {
            (Some(b), Some(v)) if b > 0 => Some((*v as f64 - b as f64) / b as f64 * 100.0),
            _ => None,
        })
        .collect()
}

/// The verdicts and the ranking, from one kind's table.
fn verdicts(t: &CompareTable, sides: &[Side<'_>]) -> (Vec<Verdict>, Vec<usize>) {
    let timed = t
        .totals
        .iter()
        .flatten()
        .all(|x| x.overhead_time_ns.is_some());
    let measure = |x: &Totals| {
        if timed {
            x.overhead_time_ns.unwrap_or(0)
        } else {
            x.overhead_count
        }
    };
    let values: Vec<u64> = t
        .totals
        .iter()
        .map(|x| x.as_ref().map_or(0, measure))
        .collect();
    let mut ranking: Vec<usize> = (1..=values.len()).collect();
    ranking.sort_by_key(|&i| values[i - 1]);
    let base = values.first().copied().unwrap_or(0);
    let verdicts = values
        .iter()
        .enumerate()
        .skip(1)
        .map(|(i, &v)| Verdict {
            input: i + 1,
            name: sides[i].input.name.clone(),
            kind: t.kind.clone(),
            measure: if timed { Measure::Time } else { Measure::Exits },
            before: base,
            after: v,
            change_pct: (base > 0).then(|| (v as f64 - base as f64) / base as f64 * 100.0),
            movers: biggest_changes(t, i, timed),
        })
        .collect();
    (verdicts, ranking)
}

/// The rows that moved most between input 1 and input `i+1`, by time (or count).
fn biggest_changes(t: &CompareTable, i: usize, timed: bool) -> Vec<Mover> {
    let mut moves: Vec<(u64, Mover)> = t
        .rows
        .iter()
        .filter(|r| !r.idle)
        .filter_map(|r| {
            let (a, b) = if timed {
                (r.time_ns[0]?, r.time_ns[i]?)
            } else {
                (r.counts[0]?, r.counts[i]?)
            };
            let (ca, cb) = (r.counts[0].unwrap_or(0), r.counts[i].unwrap_or(0));
            let mover = Mover {
                key: r.key.clone(),
                count_before: ca,
                count_after: cb,
                count_change_pct: r.count_change_pct[i],
            };
            (a != b).then_some((a.abs_diff(b), mover))
        })
        .collect();
    moves.sort_by_key(|m| std::cmp::Reverse(m.0));
    moves.into_iter().take(3).map(|(_, m)| m).collect()
}

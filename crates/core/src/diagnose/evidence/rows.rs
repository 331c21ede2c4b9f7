//! The rows rules read: one input's tables of a kind merged by key into a [`Part`] (exit
//! reasons, IO ports, MMIO addresses, MSRs), each row decoded (port, address and MSR names) and
//! classed (idle, IO, MMIO, …), with totals that keep idle apart and a rate per row wherever
//! one can be known. A Profile from any source arrives here the same way.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use crate::analysis::{Totals, exit_class};
use crate::decode::{Decoder, ExitClass, Isa, exit_reason};
use crate::profile::{Key, Row, Table, TableKind};

use super::super::model::{Fact, ShareOf};

/// One merged row.
#[derive(Debug, Clone)]
pub struct Item {
    pub table: TableKind,
    pub key: Key,
    /// The decoded name of a port, address or MSR.
    pub name: Option<String>,
    pub class: Option<ExitClass>,
    pub idle: bool,
    pub count: u64,
    pub time_ns: Option<u64>,
    /// Events per second, when a window, `--window` or a printed rate says.
    pub per_second: Option<f64>,
    /// The vCPUs the row's events came from, when the source says.
    pub vcpus: BTreeSet<u32>,
}

impl Item {
    /// The exit (or counter) name, for exit rows and counters.
    pub fn exit_name(&self) -> Option<&str> {
        match &self.key {
            Key::Exit { name, .. } | Key::Event { name } => Some(name),
            _ => None,
        }
    }

    /// The row cut to `count` of its events, its time and rate in proportion (a part of the row
    /// that other evidence accounts for, or what is left of it).
    pub fn scaled(&self, count: u64) -> Item {
        let share = if self.count == 0 {
            0.0
        } else {
            count as f64 / self.count as f64
        };
        Item {
            count,
            time_ns: self.time_ns.map(|t| (t as f64 * share) as u64),
            per_second: self.per_second.map(|x| x * share),
            ..self.clone()
        }
    }

    /// True when the row is exit `name` (canonical name of any ISA; case-insensitive).
    pub fn is(&self, names: &[&str]) -> bool {
        self.exit_name()
            .is_some_and(|n| names.iter().any(|x| x.eq_ignore_ascii_case(n)))
    }

    /// The port, address or MSR index of the row.
    pub fn code(&self) -> Option<u64> {
        match self.key {
            Key::Port { port: n, .. } | Key::Mmio { gpa: n, .. } | Key::Msr { index: n, .. } => {
                Some(n)
            }
            _ => None,
        }
    }

    pub fn mean_ns(&self) -> Option<f64> {
        self.time_ns
            .filter(|_| self.count > 0)
            .map(|t| t as f64 / self.count as f64)
    }
}

/// The rows of one kind, merged by key, with their totals.
#[derive(Debug, Clone)]
pub struct Part {
    pub kind: TableKind,
    /// The rows are kvm_stat / binary-stats counters standing in for exit reasons.
    pub from_counters: bool,
    pub rows: Vec<Item>,
    pub totals: Totals,
    /// Every row's time is known.
    pub timed: bool,
    /// The window the table covers, when the input shows it.
    pub window_ns: Option<u64>,
}

impl Part {
    /// Drops the handling times of the rows that are not idle (and of the totals), keeping the
    /// idle rows' (time the guest waited): for inputs whose times are not what exits cost.
    pub fn forget_handling_times(&mut self) {
        let mut idle_time = Some(0u64);
        for r in &mut self.rows {
            if r.idle {
                idle_time = idle_time.zip(r.time_ns).map(|(a, b)| a.saturating_add(b));
            } else {
                r.time_ns = None;
            }
        }
        self.totals.time_ns = None;
        self.totals.overhead_time_ns = None;
        self.totals.idle_time_ns = idle_time.filter(|_| self.rows.iter().any(|r| r.idle));
        self.timed = false;
    }

    /// Rows of exit `names` (canonical names, any ISA; case-insensitive).
    pub fn named(&self, names: &[&str]) -> Vec<&Item> {
        self.rows.iter().filter(|r| r.is(names)).collect()
    }

    /// Rows of `class`.
    pub fn class(&self, class: ExitClass) -> Vec<&Item> {
        self.rows
            .iter()
            .filter(|r| r.class == Some(class))
            .collect()
    }

    /// Rows whose code (port, address, MSR) `pred` accepts.
    pub fn coded(&self, pred: impl Fn(&Item, u64) -> bool) -> Vec<&Item> {
        self.rows
            .iter()
            .filter(|r| r.code().is_some_and(|c| pred(r, c)))
            .collect()
    }

    /// The count of exits `names`.
    pub fn count_of(&self, names: &[&str]) -> u64 {
        sat_sum(self.named(names).iter().map(|r| r.count))
    }

    /// The share of this part's overhead (all of it, for idle rows) that `rows` make up: by
    /// time when timed, else by count.
    pub fn share_of(&self, rows: &[&Item]) -> (f64, ShareOf) {
        let all_idle = !rows.is_empty() && rows.iter().all(|r| r.idle);
        if self.timed {
            let t = sat_sum(rows.iter().filter_map(|r| r.time_ns));
            let (whole, of) = if all_idle {
                (self.totals.time_ns, ShareOf::HandledTime)
            } else {
                (self.totals.overhead_time_ns, ShareOf::OverheadTime)
            };
            (ratio(t, whole.unwrap_or(0)), of)
        } else {
            let c = sat_sum(rows.iter().map(|r| r.count));
            let (whole, of) = if all_idle {
                (self.totals.count, ShareOf::AllExits)
            } else {
                (self.totals.overhead_count, ShareOf::OverheadExits)
            };
            (ratio(c, whole), of)
        }
    }

    /// The fact of `row`, with shares of this part.
    pub fn fact(&self, row: &Item) -> Fact {
        let (count_whole, time_whole) = if row.idle {
            (self.totals.count, self.totals.time_ns)
        } else {
            (self.totals.overhead_count, self.totals.overhead_time_ns)
        };
        Fact {
            key: row.key.key_text(),
            table: row.table.clone(),
            access: row.key.access().map(|a| a.word()),
            name: row.name.clone(),
            count: row.count,
            count_share: (count_whole > 0 && !self.from_counters)
                .then(|| ratio(row.count, count_whole)),
            time_ns: row.time_ns,
            time_share: row
                .time_ns
                .zip(time_whole.filter(|&w| w > 0))
                .map(|(t, w)| ratio(t, w)),
            mean_ns: row.mean_ns(),
            per_second: row.per_second,
            per_io: None,
            explains: true,
            note: None,
            id: Some((row.table.clone(), row.key.clone())),
        }
    }

    /// A fact saying exit `name` is absent from this part.
    pub fn absent(&self, name: &str, note: &str) -> Fact {
        let mut f = Fact::said(self.kind.as_str(), name, note);
        f.table = self.kind.clone();
        f.count_share = Some(0.0);
        f.time_ns = self.timed.then_some(0);
        f
    }
}

/// The sum of `it`, saturating (counts read from text can be anything up to `u64::MAX`).
pub(crate) fn sat_sum(it: impl Iterator<Item = u64>) -> u64 {
    it.fold(0, u64::saturating_add)
}

/// `part / whole`, 0 when `whole` is 0.
pub(crate) fn ratio(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 / whole as f64
    }
}

/// Events per second of `count` over `window_ns`.
pub(crate) fn rate(count: u64, window_ns: Option<u64>) -> Option<f64> {
    window_ns
        .filter(|&w| w > 0)
        .map(|w| count as f64 / (w as f64 / 1e9))
}

/// The rows of every table of `kind` (rate tables aside), merged by key; `None` when there are
/// no such rows.
pub(crate) fn part(
    kind: TableKind,
    tables: &[&Table],
    isa: Option<Isa>,
    decoder: &Decoder,
) -> Option<Part> {
    let of_kind: Vec<&&Table> = tables
        .iter()
        .filter(|t| t.kind == kind && !t.per_second && !t.overlapping)
        .collect();
    let first = of_kind.first()?;
    let mut merged: Vec<(Row, Option<ExitClass>, BTreeSet<u32>)> = Vec::new();
    // Indexed by key: an MMIO or MSR table can hold hundreds of thousands of distinct keys.
    let mut at: HashMap<&Key, usize> = HashMap::new();
    for t in &of_kind {
        for r in &t.rows {
            match at.get(&r.key).and_then(|&i| merged.get_mut(i)) {
                Some((m, _, v)) => {
                    m.merge(r);
                    v.extend(r.vcpu);
                }
                None => {
                    let class = exit_class(&r.key, t.isa.or(isa));
                    at.insert(&r.key, merged.len());
                    merged.push((r.clone(), class, r.vcpu.into_iter().collect()));
                }
            }
        }
    }
    let window_ns = if of_kind.len() == 1 {
        first.window.as_ref().and_then(|w| w.duration_ns)
    } else {
        None
    };
    let mut totals = Totals::zero();
    let rows: Vec<Item> = merged
        .into_iter()
        .map(|(r, class, vcpus)| {
            let idle = class == Some(ExitClass::Idle);
            totals.add(r.count, r.time.total_ns, idle);
            Item {
                table: kind.clone(),
                name: match &r.key {
                    Key::Port { port, .. } => decoder.port(*port),
                    Key::Mmio { gpa, .. } => decoder.mmio(*gpa),
                    Key::Msr { index, .. } => decoder.msr(*index),
                    _ => None,
                },
                per_second: rate(r.count, window_ns),
                key: r.key,
                class,
                idle,
                count: r.count,
                time_ns: r.time.total_ns,
                vcpus,
            }
        })
        .collect();
    if rows.is_empty() {
        return None;
    }
    let timed = totals.time_ns.is_some();
    Some(Part {
        kind,
        from_counters: false,
        rows,
        totals: totals.with_window(window_ns),
        timed,
        window_ns,
    })
}

/// The printed per-second rates of the input's rate tables (kvm_stat's `CurAvg/s`), by key.
pub(crate) fn printed_rates(tables: &[&Table]) -> BTreeMap<Key, f64> {
    let mut out = BTreeMap::new();
    for t in tables.iter().filter(|t| t.per_second) {
        for r in &t.rows {
            *out.entry(r.key.clone()).or_insert(0.0) += r.count as f64;
        }
    }
    out
}

/// Whether `key` is a canonical exit name of some ISA (not one virtlens could not decode).
pub(crate) fn known_exit(key: &Key, isa: Option<Isa>) -> bool {
    match key {
        Key::Exit { name, code } => {
            let by_code = code
                .zip(isa)
                .and_then(|(c, i)| exit_reason::lookup_code(i, c));
            by_code.is_some() || exit_reason::lookup_name(isa, name).is_some()
        }
        _ => true,
    }
}

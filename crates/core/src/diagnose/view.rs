//! What the rules read: one input's tables merged by key into parts (exit reasons, IO ports,
//! MMIO addresses, MSRs), each row decoded and classed, with totals that keep idle apart, rates
//! where a window or a rate column says them, and shares of the overhead. kvm_stat / KVM
//! binary-stats counters (`exits`, `io_exits`, `halt_exits`, …) become an exit part of their own
//! when there is no exit-reason table, so the same rules read counters and exit tables alike.
//! A Profile from any source (file or live capture) arrives here the same way.

use std::collections::BTreeMap;

use crate::analysis::{Totals, exit_class};
use crate::decode::{Decoder, ExitClass, Isa, exit_reason};
use crate::profile::{Key, Profile, Row, Table, TableKind};

use super::finding::{Evidence, Share};

/// One diagnosed input: a file, or one labelled table set of a file.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Input {
    /// 1-based, in the order given (as `compare` numbers them).
    pub number: usize,
    pub name: String,
    pub path: Option<String>,
    pub label: Option<String>,
    /// The source format (`perf-kvm-stat`, `kvm-stat`, …).
    pub format: String,
}

/// One merged row.
#[derive(Debug, Clone)]
pub struct VRow {
    pub table: TableKind,
    pub key: Key,
    /// The decoded name of a port, address or MSR.
    pub name: Option<String>,
    pub class: Option<ExitClass>,
    pub idle: bool,
    pub count: u64,
    pub time_ns: Option<u64>,
    pub per_second: Option<f64>,
}

impl VRow {
    /// The exit name, for exit rows and counters.
    pub fn exit_name(&self) -> Option<&str> {
        match &self.key {
            Key::Exit { name, .. } | Key::Event { name } => Some(name),
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
    /// The rows are kvm_stat/binary-stats counters standing in for exit reasons.
    pub from_counters: bool,
    pub rows: Vec<VRow>,
    pub totals: Totals,
    /// Every row's time is known.
    pub timed: bool,
    pub window_ns: Option<u64>,
}

impl Part {
    /// The share of this part's overhead (all of it, for idle rows) that `rows` make up:
    /// by time when timed, else by count.
    pub fn share_of(&self, rows: &[&VRow]) -> f64 {
        let (part, whole) = if self.timed {
            let t = sat_sum(rows.iter().filter_map(|r| r.time_ns));
            let whole = if rows.iter().all(|r| r.idle) {
                self.totals.time_ns
            } else {
                self.totals.overhead_time_ns
            };
            (t, whole.unwrap_or(0))
        } else {
            let c = sat_sum(rows.iter().map(|r| r.count));
            let whole = if rows.iter().all(|r| r.idle) {
                self.totals.count
            } else {
                self.totals.overhead_count
            };
            (c, whole)
        };
        ratio(part, whole)
    }

    /// The share of this part's overhead one row makes up.
    pub fn share(&self, row: &VRow) -> f64 {
        self.share_of(&[row])
    }

    /// `time` or `exits`.
    pub fn measure(&self) -> &'static str {
        if self.timed { "time" } else { "exits" }
    }

    /// Rows of exit `names` (canonical names, any ISA; case-insensitive).
    pub fn named(&self, names: &[&str]) -> Vec<&VRow> {
        self.rows
            .iter()
            .filter(|r| {
                r.exit_name()
                    .is_some_and(|n| names.iter().any(|x| x.eq_ignore_ascii_case(n)))
            })
            .collect()
    }

    /// Rows of `class`.
    pub fn class(&self, class: ExitClass) -> Vec<&VRow> {
        self.rows
            .iter()
            .filter(|r| r.class == Some(class))
            .collect()
    }

    /// The evidence of `row`, with shares of this part.
    pub fn evidence(&self, row: &VRow) -> Evidence {
        let (count_whole, time_whole) = if row.idle {
            (self.totals.count, self.totals.time_ns)
        } else {
            (self.totals.overhead_count, self.totals.overhead_time_ns)
        };
        Evidence {
            key: row.key.key_text(),
            table: row.table.clone(),
            access: row.key.access().map(|a| a.word()),
            name: row.name.clone(),
            count: row.count,
            count_share: (count_whole > 0).then(|| ratio(row.count, count_whole)),
            time_ns: row.time_ns,
            time_share: row
                .time_ns
                .zip(time_whole.filter(|&w| w > 0))
                .map(|(t, w)| ratio(t, w)),
            mean_ns: row.mean_ns(),
            per_second: row.per_second,
            explains: true,
            note: None,
            id: Some((row.table.clone(), row.key.clone())),
        }
    }

    /// Evidence that exit `name` is absent from this part.
    pub fn absent(&self, name: &str, note: &str) -> Evidence {
        Evidence {
            key: name.to_string(),
            table: self.kind.clone(),
            access: None,
            name: None,
            count: 0,
            count_share: Some(0.0),
            time_ns: self.timed.then_some(0),
            time_share: self.timed.then_some(0.0),
            mean_ns: None,
            per_second: None,
            explains: false,
            note: Some(note.to_string()),
            id: None,
        }
    }

    /// What this part's shares are of, in words.
    pub fn basis(&self) -> String {
        let what = match &self.kind {
            TableKind::Vmexit => "exit-handling",
            TableKind::Ioport => "IO-port access",
            TableKind::Mmio => "MMIO access",
            TableKind::Msr => "MSR access",
            _ if self.from_counters => "kvm_stat `exits`",
            _ => "event",
        };
        match (
            self.timed,
            self.kind == TableKind::Vmexit || self.from_counters,
        ) {
            (true, true) => format!("{what} time without idle"),
            (false, true) if self.from_counters => format!("{what} count without idle"),
            (false, true) => "exits without idle".to_string(),
            (true, false) => format!("{what} time"),
            (false, false) if what == "event" => "events".to_string(),
            (false, false) => format!("{what}es"),
        }
    }

    /// A [`Share`] of this part.
    pub fn share_struct(&self, value: f64) -> Share {
        Share {
            value,
            measure: self.measure(),
            of: self.basis(),
        }
    }
}

/// One input, ready for the rules.
#[derive(Debug, Clone)]
pub struct View {
    pub input: Input,
    pub isa: Option<Isa>,
    /// The host vendor or backend the input names (`origin.vendor` / `origin.backend`).
    pub vendor: Option<String>,
    pub backend: Option<String>,
    pub exits: Option<Part>,
    pub ports: Option<Part>,
    pub mmio: Option<Part>,
    pub msrs: Option<Part>,
    /// Counts of every event by name (`kvm_apicv_inhibit_changed`, …), when the input has them.
    pub events: BTreeMap<String, u64>,
}

impl View {
    /// The view of `tables` (one input of `profile`).
    pub fn new(input: Input, profile: &Profile, tables: &[&Table], decoder: &Decoder) -> View {
        let isa = tables.iter().find_map(|t| t.isa).or(profile.origin.isa);
        let part = |kind: TableKind| build_part(kind, tables, isa, decoder);
        let exits = part(TableKind::Vmexit)
            .filter(|p| !p.rows.is_empty())
            .or_else(|| super::counters::part(tables));
        let mut events = BTreeMap::new();
        for t in tables
            .iter()
            .filter(|t| matches!(&t.kind, TableKind::Event(n) if n == "events"))
        {
            for r in &t.rows {
                let n = events.entry(r.key.key_text()).or_insert(0u64);
                *n = n.saturating_add(r.count);
            }
        }
        View {
            input,
            isa,
            vendor: profile.origin.vendor.clone(),
            backend: profile.origin.backend.clone(),
            exits,
            ports: part(TableKind::Ioport).filter(|p| !p.rows.is_empty()),
            mmio: part(TableKind::Mmio).filter(|p| !p.rows.is_empty()),
            msrs: part(TableKind::Msr).filter(|p| !p.rows.is_empty()),
            events,
        }
    }

    /// The part the finding's share is measured against: the exit part when `kind`'s rows can
    /// be set against it, else the part itself.
    pub fn share_against<'v>(&'v self, own: &'v Part, rows: &[&VRow]) -> (f64, Share) {
        if own.kind != TableKind::Vmexit
            && !own.from_counters
            && let Some(ex) = &self.exits
        {
            let (part, whole) = if ex.timed && own.timed {
                let t = sat_sum(rows.iter().filter_map(|r| r.time_ns));
                (t, ex.totals.overhead_time_ns.unwrap_or(0))
            } else {
                let c = sat_sum(rows.iter().map(|r| r.count));
                (c, ex.totals.overhead_count)
            };
            if whole > 0 {
                let v = ratio(part, whole).min(1.0);
                return (v, ex.share_struct(v));
            }
        }
        let v = own.share_of(rows);
        (v, own.share_struct(v))
    }

    /// True when the input holds no rows the rules can read.
    pub fn is_empty(&self) -> bool {
        self.exits.is_none() && self.ports.is_none() && self.mmio.is_none() && self.msrs.is_none()
    }
}

/// The sum of `it`, saturating (counts read from text can be anything up to `u64::MAX`).
pub fn sat_sum(it: impl Iterator<Item = u64>) -> u64 {
    it.fold(0, u64::saturating_add)
}

/// Adds one row to `t` like [`Totals::add`], but saturating.
fn add(t: &mut Totals, count: u64, time_ns: Option<u64>, idle: bool) {
    let plus = |a: Option<u64>| a.zip(time_ns).map(|(a, b)| a.saturating_add(b));
    t.count = t.count.saturating_add(count);
    t.time_ns = plus(t.time_ns);
    if idle {
        t.idle_count = t.idle_count.saturating_add(count);
        t.idle_time_ns = plus(t.idle_time_ns);
    } else {
        t.overhead_count = t.overhead_count.saturating_add(count);
        t.overhead_time_ns = plus(t.overhead_time_ns);
    }
}

/// `part / whole`, 0 when `whole` is 0.
pub fn ratio(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 / whole as f64
    }
}

/// The rows of every table of `kind` (rate tables aside), merged by key.
fn build_part(
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
    let mut merged: Vec<(Row, Option<ExitClass>)> = Vec::new();
    for t in &of_kind {
        for r in &t.rows {
            let class = exit_class(&r.key, t.isa.or(isa));
            match merged.iter_mut().find(|(m, _)| m.key == r.key) {
                Some((m, _)) => m.merge(r),
                None => merged.push((r.clone(), class)),
            }
        }
    }
    let window_ns = if of_kind.len() == 1 {
        first.window.as_ref().and_then(|w| w.duration_ns)
    } else {
        None
    };
    let mut totals = Totals::zero();
    let rows: Vec<VRow> = merged
        .into_iter()
        .map(|(r, class)| {
            let idle = class == Some(ExitClass::Idle);
            add(&mut totals, r.count, r.time.total_ns, idle);
            VRow {
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
            }
        })
        .collect();
    let timed = totals.time_ns.is_some() && !rows.is_empty();
    Some(Part {
        kind,
        from_counters: false,
        rows,
        totals: totals.with_window(window_ns),
        timed,
        window_ns,
    })
}

pub(super) fn rate(count: u64, window_ns: Option<u64>) -> Option<f64> {
    window_ns
        .filter(|&w| w > 0)
        .map(|w| count as f64 / (w as f64 / 1e9))
}

/// Splits profiles into inputs the way `compare` does: one per (file, table label), in order.
pub fn split(profiles: &[Profile]) -> Vec<(Input, &Profile, Vec<&Table>)> {
    let mut out = Vec::new();
    for p in profiles {
        let path = p.origin.path.clone();
        let stem = path
            .as_deref()
            .map(|s| {
                std::path::Path::new(s)
                    .file_stem()
                    .map_or_else(|| s.to_string(), |f| f.to_string_lossy().into_owned())
            })
            .unwrap_or_else(|| p.origin.format.clone());
        let mut order: Vec<Option<String>> = Vec::new();
        for t in &p.tables {
            if !order.contains(&t.label) {
                order.push(t.label.clone());
            }
        }
        let several = order.len() > 1;
        for label in order {
            let tables: Vec<&Table> = p.tables.iter().filter(|t| t.label == label).collect();
            let name = match (&label, several) {
                (Some(l), true) => format!("{stem}: {l}"),
                _ => stem.clone(),
            };
            out.push((
                Input {
                    number: out.len() + 1,
                    name,
                    path: path.clone(),
                    label,
                    format: p.origin.format.clone(),
                },
                p,
                tables,
            ));
        }
        if p.tables.is_empty() {
            out.push((
                Input {
                    number: out.len() + 1,
                    name: stem,
                    path,
                    label: None,
                    format: p.origin.format.clone(),
                },
                p,
                Vec::new(),
            ));
        }
    }
    out
}

/// Whether `name` is a canonical exit name of some ISA (not one virtlens could not decode).
pub fn known_exit(key: &Key, isa: Option<Isa>) -> bool {
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

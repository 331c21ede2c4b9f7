//! The sliding window the findings are computed on: the last intervals' profiles, merged per
//! VM into one profile (rows of the same key, VM and vCPU added up, the window's duration
//! the sum of the intervals'), then diagnosed as one input.

use std::collections::{BTreeMap, VecDeque};
use std::time::{Duration, Instant};

use virtlens_core::decode::Decoder;
use virtlens_core::diagnose::{self, Options};
use virtlens_core::profile::{Profile, Row, Table, TableKind, Window as TableWindow};

/// The recent intervals.
#[derive(Debug)]
pub(crate) struct Window {
    span: Duration,
    intervals: VecDeque<(Instant, u64, Profile)>,
}

impl Window {
    pub(crate) fn new(span: Duration) -> Window {
        Window {
            span,
            intervals: VecDeque::new(),
        }
    }

    /// Adds an interval of `duration_ns` ending `now`, and forgets those older than the span.
    pub(crate) fn push(&mut self, now: Instant, duration_ns: u64, profile: Profile) {
        self.intervals.push_back((now, duration_ns, profile));
        while let Some((t, _, _)) = self.intervals.front() {
            if now.duration_since(*t) > self.span && self.intervals.len() > 1 {
                self.intervals.pop_front();
            } else {
                break;
            }
        }
    }

    /// VM `pid`'s rows over the window, as one profile.
    pub(crate) fn profile_of(&self, pid: u32) -> Option<Profile> {
        let (_, _, last) = self.intervals.back()?;
        let duration_ns: u64 = self.intervals.iter().map(|(_, d, _)| d).sum();
        let mut tables: BTreeMap<TableKind, BTreeMap<(String, Option<u32>), Row>> = BTreeMap::new();
        for (_, _, p) in &self.intervals {
            for t in &p.tables {
                for r in t.rows.iter().filter(|r| r.pid == Some(pid)) {
                    let rows = tables.entry(t.kind.clone()).or_default();
                    let k = (format!("{:?}", r.key), r.vcpu);
                    match rows.get_mut(&k) {
                        Some(have) => have.merge(r),
                        None => {
                            rows.insert(k, r.clone());
                        }
                    }
                }
            }
        }
        if tables.is_empty() {
            return None;
        }
        let mut out = Profile::new(last.origin.clone());
        out.origin.vm_names.retain(|p, _| *p == pid);
        for (kind, rows) in tables {
            let mut t = Table::new(kind);
            t.isa = last.origin.isa;
            t.window = Some(TableWindow {
                start: None,
                end: None,
                duration_ns: Some(duration_ns),
                intervals: 0,
            });
            t.rows = rows.into_values().collect();
            t.rows
                .sort_by(|a, b| b.count.cmp(&a.count).then_with(|| a.key.cmp(&b.key)));
            out.tables.push(t);
        }
        Some(out)
    }
}

/// The findings of VM `pid` over the window: (id, severity).
pub(crate) fn findings(
    window: &Window,
    pid: u32,
    decoder: &Decoder,
    opts: &Options,
) -> Vec<(String, String)> {
    let Some(profile) = window.profile_of(pid) else {
        return Vec::new();
    };
    let d = diagnose::diagnose(&[profile], None, decoder, opts);
    let mut out: Vec<(String, String)> = d
        .findings
        .iter()
        .map(|f| (f.id.clone(), f.severity.name().to_string()))
        .collect();
    out.sort();
    out.dedup();
    out
}

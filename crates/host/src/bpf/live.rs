//! The in-kernel aggregation as an interval source, like the tracefs capture's
//! [`Live`](crate::capture::live::Live): each [`BpfLive::take`] reads the maps, keeps the
//! increments since the previous call as that interval's [`Profile`](super::profile) (only the
//! selected VMMs' with `--pid`/`--vm`), and the latency histograms per VMM and pair as read
//! (log2 buckets, exact). Keys of VMMs that exited are deleted after the read that saw their
//! last counts, so the maps hold only live processes.

use std::collections::{BTreeMap, BTreeSet};

use virtlens_core::profile::Origin;

use super::maps::{HIST_BUCKETS, Hist};
use super::plan::Pair;
use super::snapshot::Snapshot;
use super::{Aggregation, Limits, ProgramRuns, Unavailable};
use crate::capture::CaptureOptions;
use crate::capture::identity::Identities;
use crate::capture::live::Interval;
use crate::discovery;

/// One VMM's latency histogram of one pair over an interval.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VmHist {
    pub pid: u32,
    pub pair: Pair,
    pub hist: Hist,
}

/// What an interval has besides its profile.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Extras {
    /// Latency histograms per VMM and pair.
    pub hists: Vec<VmHist>,
    /// Events counted without their key (the counts map was full), by event.
    pub unkeyed: Vec<(String, u64)>,
    /// Latency samples dropped (the histogram map was full).
    pub dropped_latencies: u64,
    /// Per event, what the kernel counted of its program so far.
    pub programs: Vec<ProgramRuns>,
}

/// A running aggregation read as intervals.
#[derive(Debug)]
pub struct BpfLive {
    agg: Aggregation,
    prev: Snapshot,
    ids: Identities,
    selected: Option<BTreeSet<u32>>,
    origin: Origin,
    /// Per event, the program runs the kernel skipped as of the previous read.
    misses: BTreeMap<String, u64>,
}

impl BpfLive {
    /// Starts the aggregation for the VMs `opts` selects (all without `--pid`/`--vm`).
    pub fn start(opts: &CaptureOptions, limits: Limits) -> Result<BpfLive, Unavailable> {
        let vmms = discovery::scan();
        let selected = if opts.pid.is_some() || opts.vm.is_some() {
            let chosen = discovery::select(&vmms, opts.pid, opts.vm.as_deref())
                .map_err(|e| Unavailable(format!("the VM selection matches nothing here: {e}")))?;
            Some(chosen.iter().map(|v| v.pid).collect())
        } else {
            None
        };
        let agg = Aggregation::start(opts.tracefs.as_deref(), limits)?;
        let prev = agg
            .read()
            .map_err(|e| Unavailable(format!("reading the BPF maps failed: {e}")))?;
        let origin = crate::facts::origin(super::profile::FORMAT);
        let misses = missed(&agg.program_runs());
        Ok(BpfLive {
            agg,
            prev,
            ids: Identities::from_scan(&vmms),
            selected,
            origin,
            misses,
        })
    }

    /// What could not be used, and why.
    pub fn notes(&self) -> &[String] {
        &self.agg.notes
    }

    /// The events with a program.
    pub fn events(&self) -> Vec<&str> {
        self.agg.events()
    }

    /// The interval since the previous call (or the start).
    pub fn take(&mut self) -> std::io::Result<(Interval, Extras)> {
        let now = self.agg.read()?;
        let duration_ns = now.at.duration_since(self.prev.at).as_nanos() as u64;
        let mut delta = now.since(Some(&self.prev));
        if let Some(sel) = &self.selected {
            delta.counts.retain(|(k, _)| sel.contains(&k.tgid));
            delta.hists.retain(|(k, _)| sel.contains(&k.tgid));
        }
        let mut profile =
            super::profile::profile(&delta, duration_ns, &mut self.ids, self.origin.clone());
        profile
            .warnings
            .extend(self.agg.notes.iter().map(|m| virtlens_core::profile::Note {
                line: None,
                message: m.clone(),
            }));
        let programs = self.agg.program_runs();
        let misses = missed(&programs);
        for (event, &n) in &misses {
            let new = n.saturating_sub(self.misses.get(event).copied().unwrap_or(0));
            if new > 0 {
                profile.warnings.push(virtlens_core::profile::Note {
                    line: None,
                    message: format!(
                        "{new} {event} events were not counted: the kernel skipped their \
                         program because another BPF program was running on that CPU"
                    ),
                });
            }
        }
        self.misses = misses;
        let events = delta.counts.iter().map(|(_, n)| n).sum();
        let extras = Extras {
            hists: per_vm(&delta),
            unkeyed: delta
                .other()
                .into_iter()
                .map(|(e, n)| (e.to_string(), n))
                .collect(),
            dropped_latencies: delta.dropped_latencies(),
            programs,
        };
        self.prev = now;
        if self.agg.prune_exited()? > 0 {
            let alive = |tgid: u32| std::path::Path::new(&format!("/proc/{tgid}")).exists();
            self.prev.counts.retain(|(k, _)| alive(k.tgid));
            self.prev.hists.retain(|(k, _)| alive(k.tgid));
        }
        Ok((
            Interval {
                profile,
                duration_ns,
                events,
                lost: 0,
            },
            extras,
        ))
    }
}

/// Per event, the runs of its program the kernel skipped so far.
fn missed(programs: &[ProgramRuns]) -> BTreeMap<String, u64> {
    programs
        .iter()
        .map(|p| (p.event.clone(), p.misses))
        .collect()
}

/// The histograms of `delta` summed per VMM and pair.
fn per_vm(delta: &Snapshot) -> Vec<VmHist> {
    let mut out: BTreeMap<(u32, Pair), Hist> = BTreeMap::new();
    for (k, h) in &delta.hists {
        let Some(pair) = Pair::from_index(k.event) else {
            continue;
        };
        let acc = out.entry((k.tgid, pair)).or_insert(Hist {
            buckets: [0; HIST_BUCKETS],
            sum_ns: 0,
        });
        for (a, b) in acc.buckets.iter_mut().zip(h.buckets.iter()) {
            *a += b;
        }
        acc.sum_ns = acc.sum_ns.saturating_add(h.sum_ns);
    }
    out.into_iter()
        .map(|((pid, pair), hist)| VmHist { pid, pair, hist })
        .collect()
}

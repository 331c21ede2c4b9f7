//! Where the live commands (`serve`, `top`) get each interval: the in-kernel aggregation
//! ([`BpfLive`]) when this host allows BPF, else the tracefs capture ([`Live`]), with the
//! reason it fell back. Both give
//! the interval's [`Interval`] profile and per-VM log2 latency histograms; the tracefs capture
//! has durations only for exit→entry pairs, and its histograms are re-binned from the rows'.

use std::collections::BTreeMap;

use crate::bpf::live::{BpfLive, Extras, VmHist};
use crate::bpf::maps::{HIST_BUCKETS, Hist};
use crate::bpf::{Limits, Pair};
use crate::capture::live::{Interval, Live};
use crate::capture::{CaptureError, CaptureOptions};
use virtlens_core::profile::TableKind;

/// The interval source in use.
pub enum Source {
    Bpf(Box<BpfLive>),
    Tracefs(Box<Live>),
}

impl Source {
    /// BPF if it can be had (and `bpf` allows it), else tracefs; the notes say which and why.
    pub fn start(
        opts: &CaptureOptions,
        limits: Limits,
        bpf: bool,
    ) -> Result<(Source, Vec<String>), CaptureError> {
        let mut notes = Vec::new();
        if bpf {
            // What killed virtlens runs left (tracefs instances, spools, unfinished files):
            // the tracefs capture's session removes it itself, the aggregation does it here.
            notes.extend(crate::capture::leftovers::sweep());
            match BpfLive::start(opts, limits) {
                Ok(live) => {
                    notes.extend(live.notes().iter().cloned());
                    return Ok((Source::Bpf(Box::new(live)), notes));
                }
                Err(e) => notes.push(format!("{e}; falling back to the tracefs capture")),
            }
        } else {
            notes.push("BPF was turned off (--no-bpf): using the tracefs capture".into());
        }
        let live = Live::start(opts)?;
        Ok((Source::Tracefs(Box::new(live)), notes))
    }

    /// `bpf` or `tracefs`.
    pub fn name(&self) -> &'static str {
        match self {
            Source::Bpf(_) => "bpf",
            Source::Tracefs(_) => "tracefs",
        }
    }

    /// Reads what the kernel has meanwhile (the tracefs buffers must be drained often; the
    /// BPF maps need nothing).
    pub fn poll(&mut self) -> Result<(), CaptureError> {
        match self {
            Source::Bpf(_) => Ok(()),
            Source::Tracefs(l) => l.poll(),
        }
    }

    /// The interval since the previous call.
    pub fn take(&mut self) -> Result<(Interval, Extras), CaptureError> {
        match self {
            Source::Bpf(l) => l
                .take()
                .map_err(|e| CaptureError::io("reading the BPF maps", "bpf", e)),
            Source::Tracefs(l) => {
                let iv = l.take()?;
                let extras = Extras {
                    hists: rebinned(&iv),
                    ..Extras::default()
                };
                Ok((iv, extras))
            }
        }
    }

    /// Stops; the tracefs instance is taken down (BPF objects go with their fds).
    pub fn stop(self) -> Result<(), CaptureError> {
        match self {
            Source::Bpf(_) => Ok(()),
            Source::Tracefs(l) => l.stop(),
        }
    }
}

/// Per-VM log2 histograms of the exit→entry durations the tracefs capture measured.
fn rebinned(iv: &Interval) -> Vec<VmHist> {
    let mut out: BTreeMap<u32, Hist> = BTreeMap::new();
    for t in iv
        .profile
        .tables
        .iter()
        .filter(|t| t.kind == TableKind::Vmexit)
    {
        for r in &t.rows {
            let (Some(pid), Some(lat)) = (r.pid, &r.latency) else {
                continue;
            };
            let h = out.entry(pid).or_insert(Hist {
                buckets: [0; HIST_BUCKETS],
                sum_ns: 0,
            });
            for (ns, n) in lat.buckets() {
                let b = (63 - ns.max(1).leading_zeros()) as usize;
                h.buckets[b.min(HIST_BUCKETS - 1)] += n;
            }
            h.sum_ns = h.sum_ns.saturating_add(r.time.total_ns.unwrap_or(0));
        }
    }
    out.into_iter()
        .map(|(pid, hist)| VmHist {
            pid,
            pair: Pair::Exit,
            hist,
        })
        .collect()
}

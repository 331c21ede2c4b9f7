//! Where the live commands (`serve`, `top`, `record --summary`) get each interval: the
//! in-kernel aggregation ([`BpfLive`]) when this host allows BPF, else the tracefs capture
//! ([`Live`]), with the reason it fell back. Both give the interval's [`Interval`] profile and
//! per-VM log2 latency histograms; the tracefs capture has durations only for exit→entry pairs,
//! and its histograms are re-binned from the rows'. Either way an interval in which a VM
//! returned to its VMM without one exit counted says so (its exit reasons are missing).

use std::collections::{BTreeMap, BTreeSet};

use crate::bpf::live::{BpfLive, Extras, VmHist};
use crate::bpf::maps::{HIST_BUCKETS, Hist};
use crate::bpf::{Limits, Pair};
use crate::capture::live::{Interval, Live};
use crate::capture::{CaptureError, CaptureOptions};
use virtlens_core::Backend;
use virtlens_core::profile::{Note, Profile, TableKind};

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
        let watched = self.watches_exits();
        let (mut iv, extras) = self.take_raw()?;
        if watched {
            let missing = exits_missing(&iv.profile);
            iv.profile.warnings.extend(missing);
        }
        Ok((iv, extras))
    }

    /// Whether `kvm_exit` is among the events counted.
    fn watches_exits(&self) -> bool {
        match self {
            Source::Bpf(l) => l.events().contains(&"kvm_exit"),
            Source::Tracefs(l) => l.enabled().iter().any(|e| e == "kvm:kvm_exit"),
        }
    }

    fn take_raw(&mut self) -> Result<(Interval, Extras), CaptureError> {
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

/// A note for each VM that returned to its VMM, or made MMIO or port accesses, in `p` with no
/// exit counted: every return to the VMM with an exit reason, and every access KVM traces,
/// is handled in a VM exit, so `kvm_exit` did not fire (or was not seen) for them and the
/// interval's exit reasons are missing. Not on PVM, which never fires `kvm_exit` and says so
/// elsewhere. Seen on arm64 hosts emulated by multi-threaded QEMU TCG when tracing starts while
/// a vCPU runs: the vCPU keeps running code translated before the tracepoint was switched on
/// (once with `kvm_mmio` the only event seen, its returns to the VMM missed as well).
fn exits_missing(p: &Profile) -> Vec<Note> {
    if p.origin.backend.as_deref().map(Backend::named) == Some(Backend::Pvm) {
        return Vec::new();
    }
    let per_vm = |kinds: &[TableKind]| {
        let mut n: BTreeMap<Option<u32>, u64> = BTreeMap::new();
        for t in p.tables.iter().filter(|t| kinds.contains(&t.kind)) {
            for r in &t.rows {
                // A KVM_RUN interrupted (`restart`) or failed (`error`) hands no exit over.
                if !matches!(r.key.key_text().as_str(), "restart" | "error") {
                    *n.entry(r.pid).or_default() += r.count;
                }
            }
        }
        n
    };
    let exits = per_vm(&[TableKind::Vmexit]);
    let returns = per_vm(&[TableKind::UserspaceExit]);
    let accesses = per_vm(&[TableKind::Mmio, TableKind::Ioport]);
    let why = match &p.origin.cpu_emulator {
        Some(emu) => format!(
            "; this host's CPU is emulated ({emu}), which can keep running code translated \
             before tracing started"
        ),
        None => String::new(),
    };
    let vms: BTreeSet<Option<u32>> = returns.keys().chain(accesses.keys()).copied().collect();
    vms.into_iter()
        .filter(|pid| exits.get(pid).copied().unwrap_or(0) == 0)
        .filter_map(|pid| {
            let returned = returns.get(&pid).copied().unwrap_or(0);
            let accessed = accesses.get(&pid).copied().unwrap_or(0);
            let did = match (returned, accessed) {
                (0, 0) => return None,
                (r, 0) => format!("returned to its VMM {r} times"),
                (0, a) => format!("made {a} MMIO or port accesses"),
                (r, a) => {
                    format!("returned to its VMM {r} times and made {a} MMIO or port accesses")
                }
            };
            let who = match (pid, pid.and_then(|pid| p.origin.vm_names.get(&pid))) {
                (Some(pid), Some(name)) => format!("{name} (pid {pid})"),
                (Some(pid), None) => format!("pid {pid}"),
                (None, _) => "a VM".to_string(),
            };
            Some(Note {
                line: None,
                message: format!(
                    "{who} {did} but no kvm_exit was counted: the exit reasons of this interval \
                     are missing{why}"
                ),
            })
        })
        .collect()
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

#[cfg(test)]
mod tests {
    use super::*;
    use virtlens_core::profile::{Key, Origin, Row, Table};

    fn profile(backend: &str, rows: &[(TableKind, &str)]) -> Profile {
        let mut p = Profile::new(Origin {
            backend: Some(backend.into()),
            cpu_emulator: Some("QEMU TCG".into()),
            ..Origin::default()
        });
        for (kind, name) in rows {
            let mut t = Table::new(kind.clone());
            let mut r = Row::new(
                Key::Event {
                    name: name.to_string(),
                },
                3,
            );
            r.pid = Some(7);
            t.rows.push(r);
            p.tables.push(t);
        }
        p
    }

    /// Returns to the VMM without one exit are said, except on PVM, which never fires
    /// `kvm_exit`; an exit row, no return to the VMM, or only interrupted runs say nothing.
    #[test]
    fn returns_to_the_vmm_without_exits_are_noted() {
        let to_vmm = (TableKind::UserspaceExit, "KVM_EXIT_MMIO");
        let notes = exits_missing(&profile("arm64", std::slice::from_ref(&to_vmm)));
        assert_eq!(notes.len(), 1, "{notes:?}");
        let note = &notes[0].message;
        assert!(
            note.starts_with("pid 7 returned to its VMM 3 times"),
            "{note}"
        );
        assert!(note.contains("QEMU TCG"), "{note}");
        let exit = (TableKind::Vmexit, "DABT_LOW");
        assert!(exits_missing(&profile("arm64", &[to_vmm.clone(), exit.clone()])).is_empty());
        assert!(exits_missing(&profile("arm64", std::slice::from_ref(&exit))).is_empty());
        let restart = (TableKind::UserspaceExit, "restart");
        assert!(exits_missing(&profile("arm64", &[restart])).is_empty());
        // MMIO accesses alone (the returns to the VMM missed too) say so as well.
        let mmio = (TableKind::Mmio, "0x10000000 write");
        let notes = exits_missing(&profile("arm64", std::slice::from_ref(&mmio)));
        assert_eq!(notes.len(), 1, "{notes:?}");
        assert!(
            notes[0]
                .message
                .starts_with("pid 7 made 3 MMIO or port accesses but no kvm_exit"),
            "{notes:?}"
        );
        assert!(exits_missing(&profile("arm64", &[mmio, exit])).is_empty());
        assert!(exits_missing(&profile("pvm", &[to_vmm])).is_empty());
    }
}

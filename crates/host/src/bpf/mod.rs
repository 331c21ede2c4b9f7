//! In-kernel aggregation of KVM events with eBPF, built at run time: no compiler, no object
//! file. For each kvm tracepoint this kernel has and the aggregation uses (`plan`), a
//! program is generated from the tracepoint's `format` file (`program`, encoded by
//! `insn`) that counts the event per (VM process, thread, event, sub, detail) in a per-CPU
//! hash map, or for each CPU's first keys of an event in its hot slots (`hot`), and keeps log2
//! latency histograms per thread (`maps`). virtlens reads the maps
//! every interval ([`Aggregation::read`]); nothing per event reaches user space.
//!
//! Programs are attached to the raw tracepoints where the fields they read are the
//! tracepoint's arguments (`plan::raw_args`), else through perf events of the tracepoints
//! (reading the payload at the format's offsets); nothing is pinned, so the
//! programs, events and maps live exactly as long as this process's fds and the kernel frees
//! them when it exits, SIGKILL included ([`leftovers`] lists what a process left, for the
//! tests that check it). All `unsafe` code is in `sys`.
//!
//! Where BPF cannot be used (no CAP_BPF/CAP_PERFMON, a kernel without BPF or tracepoint
//! programs, lockdown, a verifier that refuses a program) [`Aggregation::start`] says why, and
//! the caller falls back to the tracefs capture.

pub(crate) mod hot;
pub(crate) mod insn;
pub(crate) mod live;
pub(crate) mod maps;
pub(crate) mod plan;
pub(crate) mod profile;
pub(crate) mod program;
pub(crate) mod snapshot;
pub(crate) mod source;
#[allow(unsafe_code)]
mod sys;

use std::ffi::CStr;
use std::os::fd::{AsFd, OwnedFd};
use std::path::Path;
use std::time::Instant;

use virtlens_core::decode::parse_event_format;

pub use maps::{Hist, Key, Limits};
pub use plan::Pair;
pub use snapshot::Snapshot;
pub use source::Source;

use crate::capture::tracefs::{self, Tracefs};
use maps::Maps;
use program::MapFds;

/// The license the generated programs declare (GPL-compatible, as the kernel asks of
/// tracing programs; they use no GPL-only helper).
const LICENSE: &CStr = c"Dual MIT/GPL";

/// Why the aggregation could not start.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("in-kernel aggregation (BPF) is unavailable: {0}")]
pub struct Unavailable(pub String);

/// One attached program.
#[derive(Debug)]
struct Attached {
    event: String,
    // Field order: the attachment (raw tracepoint link or perf event) is closed before the
    // program.
    _link: OwnedFd,
    prog: OwnedFd,
}

/// A running aggregation; dropping it detaches and frees everything.
#[derive(Debug)]
pub struct Aggregation {
    attached: Vec<Attached>,
    maps: Maps,
    /// What could not be used, and why.
    pub notes: Vec<String>,
}

/// The name prefix of this process's BPF objects: `vl<pid>_`.
pub fn tag(pid: u32) -> String {
    format!("vl{pid}_")
}

impl Aggregation {
    /// Generates, loads and attaches the programs of every kvm event this kernel has.
    pub fn start(tracefs: Option<&Path>, limits: Limits) -> Result<Aggregation, Unavailable> {
        let tfs = Tracefs::locate(tracefs).map_err(|e| Unavailable(e.to_string()))?;
        let mut notes = Vec::new();
        let mut plans = Vec::new();
        for name in plan::EVENTS {
            let path = tfs.root().join("events/kvm").join(name).join("format");
            let Ok(text) = tracefs::read(&path) else {
                continue;
            };
            match parse_event_format("kvm", &text) {
                Ok(f) => {
                    let raw = plan::plan(&f, plan::Ctx::Raw, &mut Vec::new());
                    plans.extend(plan::plan(&f, plan::Ctx::Format, &mut notes).map(|p| (p, raw)));
                }
                Err(e) => notes.push(format!("kvm:{name} is left out: {e}")),
            }
        }
        if plans.is_empty() {
            return Err(Unavailable(
                "this kernel has none of the kvm tracepoints the aggregation uses (is the kvm \
                 module loaded?)"
                    .into(),
            ));
        }
        let tag = tag(std::process::id());
        let maps = Maps::create(limits, &tag).map_err(|e| {
            Unavailable(format!(
                "creating a BPF map failed: {e}{}",
                hint(e.raw_os_error())
            ))
        })?;
        let fds = MapFds {
            counts: maps.counts.raw_fd(),
            hists: maps.hists.raw_fd(),
            starts: maps.starts.raw_fd(),
            overflow: maps.overflow.raw_fd(),
            zero: maps.zero.raw_fd(),
            hot_counts: maps.hot_counts.as_ref().map(|h| h.fds()),
            hot_hists: maps.hot_hists.as_ref().map(|h| h.fds()),
        };
        let mut attached = Vec::new();
        let mut first_error = None;
        for (p, raw) in &plans {
            match attach(p, raw.as_ref(), &fds, &tag, &mut notes) {
                Ok(a) => attached.push(a),
                Err(e) => {
                    notes.push(format!("kvm:{} has no program: {e}", p.event));
                    first_error.get_or_insert(e);
                }
            }
        }
        if attached.is_empty() {
            return Err(Unavailable(first_error.unwrap_or_default()));
        }
        Ok(Aggregation {
            attached,
            maps,
            notes,
        })
    }

    /// The events with an attached program.
    pub fn events(&self) -> Vec<&str> {
        self.attached.iter().map(|a| a.event.as_str()).collect()
    }

    /// The maps' bounds.
    pub fn limits(&self) -> Limits {
        self.maps.limits
    }

    /// Everything counted so far.
    pub fn read(&self) -> std::io::Result<Snapshot> {
        Ok(Snapshot {
            at: Instant::now(),
            counts: self.maps.counts()?,
            hists: self.maps.hists()?,
            overflow: self.maps.overflow()?,
        })
    }

    /// Per event, what the kernel counted of its program so far (see [`ProgramRuns`]).
    pub fn program_runs(&self) -> Vec<ProgramRuns> {
        self.attached
            .iter()
            .filter_map(|a| {
                let (run_ns, runs, misses) = sys::program_runs(a.prog.as_fd()).ok()?;
                Some(ProgramRuns {
                    event: a.event.clone(),
                    run_ns,
                    runs,
                    misses,
                })
            })
            .collect()
    }

    /// The count keys and the histogram keys in a live hot slot of some CPU (see `hot`):
    /// which keys took the cheap path.
    pub fn hot_keys(&self) -> std::io::Result<(Vec<Key>, Vec<Key>)> {
        let keys = |t: &Option<hot::HotTable>| -> std::io::Result<Vec<Key>> {
            let mut out = Vec::new();
            if let Some(t) = t {
                t.each(|k, _, _| out.push(k))?;
            }
            Ok(out)
        };
        Ok((keys(&self.maps.hot_counts)?, keys(&self.maps.hot_hists)?))
    }

    /// Forgets the keys of VMM processes that have exited (read them first: their last
    /// counts are in the maps until then).
    pub fn prune_exited(&self) -> std::io::Result<usize> {
        self.maps
            .prune(&|tgid| !Path::new(&format!("/proc/{tgid}")).exists())
    }
}

/// Attaches the program of an event: to its raw tracepoint when `raw` plans one (the program
/// runs straight from the tracepoint: no perf record is built, no perf event walked, the
/// part of the cost per event that the kernel's timing of the program leaves out), else, or
/// when the kernel refuses that (older kernels: noted, as the capture then costs more per
/// event), through a perf event of the tracepoint with the format-file program `p`.
fn attach(
    p: &plan::Plan,
    raw: Option<&plan::Plan>,
    fds: &MapFds,
    tag: &str,
    notes: &mut Vec<String>,
) -> Result<Attached, String> {
    if let Some(raw) = raw {
        match attach_raw(raw, fds, tag) {
            Ok(a) => return Ok(a),
            Err(e) => notes.push(format!(
                "kvm:{}: the raw tracepoint was refused ({e}); its program runs through a \
                 perf event instead, at a higher cost per event",
                p.event
            )),
        }
    }
    let insns = program::generate(p, fds)?;
    let prog = load(&insns, false, p, tag)?;
    finish(p, prog)
}

/// Attaches the program of `p` (a [`plan::Ctx::Raw`] plan) to the raw tracepoint.
fn attach_raw(p: &plan::Plan, fds: &MapFds, tag: &str) -> Result<Attached, String> {
    let insns = program::generate(p, fds)?;
    let prog = load(&insns, true, p, tag)?;
    let name = std::ffi::CString::new(p.event.as_str()).map_err(|e| e.to_string())?;
    let link = sys::open_raw_tracepoint(&name, prog.as_fd())
        .map_err(|e| format!("attaching to the raw tracepoint failed: {e}"))?;
    Ok(Attached {
        event: p.event.clone(),
        _link: link,
        prog,
    })
}

/// Loads a program; a refusal says the verifier's last words.
fn load(insns: &[insn::Insn], raw: bool, p: &plan::Plan, tag: &str) -> Result<OwnedFd, String> {
    let name = format!("{tag}{}", p.event.trim_start_matches("kvm_"));
    sys::load_tracepoint_program(insns, raw, LICENSE, &name, None).or_else(|e| {
        // Load again with the verifier's log, to say why.
        let mut log = vec![0u8; 1 << 20];
        sys::load_tracepoint_program(insns, raw, LICENSE, &name, Some(&mut log)).map_err(|_| {
            let end = log.iter().position(|&b| b == 0).unwrap_or(log.len());
            let text = String::from_utf8_lossy(&log[..end]);
            let mut last: Vec<&str> = text.lines().rev().take(3).collect();
            last.reverse();
            format!(
                "the kernel refused its program: {e}{} {}",
                hint(e.raw_os_error()),
                last.join(" / ")
            )
        })
    })
}

fn finish(p: &plan::Plan, prog: OwnedFd) -> Result<Attached, String> {
    let perf = sys::open_tracepoint(u64::from(p.id)).map_err(|e| {
        format!(
            "perf_event_open of the tracepoint failed: {e}{}",
            hint(e.raw_os_error())
        )
    })?;
    sys::attach_and_enable(perf.as_fd(), prog.as_fd())
        .map_err(|e| format!("attaching the program failed: {e}"))?;
    Ok(Attached {
        event: p.event.clone(),
        _link: perf,
        prog,
    })
}

/// What the kernel counted of the program of one event since it was loaded.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProgramRuns {
    pub event: String,
    /// Its total run time and its runs: the aggregation's own cost (counted only while
    /// `kernel.bpf_stats_enabled` is 1, else 0).
    pub run_ns: u64,
    pub runs: u64,
    /// Events whose program the kernel skipped because a BPF program was already running on
    /// that CPU (`recursion_misses`): each is an event not counted.
    pub misses: u64,
}

/// Has the kernel count the run time of every BPF program while this lives (see
/// [`Aggregation::program_runs`]); nothing outlives it.
#[derive(Debug)]
pub struct RunTimeStats(#[allow(dead_code)] OwnedFd);

impl RunTimeStats {
    pub fn enable() -> std::io::Result<RunTimeStats> {
        sys::enable_run_time_stats().map(RunTimeStats)
    }
}

/// What an errno of bpf(2)/perf_event_open(2) usually means here.
fn hint(errno: Option<i32>) -> &'static str {
    match errno {
        Some(libc::EPERM) | Some(libc::EACCES) => {
            " (needs CAP_BPF and CAP_PERFMON, or root; a kernel in lockdown refuses BPF too)"
        }
        Some(libc::ENOSYS) => " (this kernel has no bpf(2): CONFIG_BPF_SYSCALL is off)",
        Some(libc::EINVAL) => " (this kernel lacks a BPF feature the aggregation uses)",
        _ => "",
    }
}

/// The BPF programs and maps process `pid` created that still exist, as
/// `program <id> <name>` / `map <id> <name>` (needs CAP_SYS_ADMIN to list them).
pub fn leftovers(pid: u32) -> std::io::Result<Vec<String>> {
    let tag = tag(pid);
    let mut out = Vec::new();
    for (kind, word) in [
        (sys::ObjectKind::Program, "program"),
        (sys::ObjectKind::Map, "map"),
    ] {
        for (id, name) in sys::objects(kind)? {
            if name.starts_with(&tag) {
                out.push(format!("{word} {id} {name}"));
            }
        }
    }
    Ok(out)
}

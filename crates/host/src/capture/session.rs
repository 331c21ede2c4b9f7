//! One capture session: set up the instance (monotonic ns trace clock, buffer size, drop
//! new events rather than overwrite when full, the selected events and their `common_pid`
//! filters), read the per-CPU pages as they come, walking each page once to count its
//! events and resolve new threads while they live, and at the end turn tracing off, drain
//! what is left, account the lost events and take the instance down.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Instant;

use virtlens_core::capture::EventTable;
use virtlens_core::decode::PageLayout;

use super::CaptureOptions;
use super::buffers::BufferPlan;
use super::clock;
use super::error::CaptureError;
use super::events;
use super::identity::Identities;
use super::leftovers;
use super::pipes::Pipes;
use super::tracefs::{self, Instance, Tracefs};
use super::vm_stats::{Snapshots, StatsSet};
use crate::discovery::{self, Vmm};

/// Where [`Session::poll`] hands each page: `(pipe index, page)`.
pub(crate) type PageSink<'a> = dyn FnMut(usize, &[u8]) -> Result<(), CaptureError> + 'a;

/// Pages read from one CPU before moving to the next (so no CPU starves the others).
const PAGES_PER_ROUND: usize = 256;

/// A running capture; see the module doc.
pub(crate) struct Session {
    pub notes: Vec<String>,
    pub layout: PageLayout,
    pub table: EventTable,
    /// `system:name` of every enabled event.
    pub enabled: Vec<String>,
    pub identities: Identities,
    /// The VMM processes `--pid`/`--vm` selected.
    pub selected: Option<BTreeSet<u32>>,
    /// The kernel filter in force, if any.
    pub filter: Option<String>,
    filter_tids: BTreeSet<u32>,
    /// Events seen per format index.
    pub seen: Vec<u64>,
    /// Whether the event of each format index is a `kvm` one.
    kvm: Vec<bool>,
    pub events: u64,
    pub clock: String,
    pub realtime_offset_ns: i64,
    pub stats: Option<(StatsSet, Snapshots)>,
    /// The first and last event time, once the events are merged.
    pub span: Option<(u64, u64)>,
    /// The ring buffers asked of the kernel.
    pub buffers: BufferPlan,
    cpus: Vec<u32>,
    started: Instant,
    pipes: Option<Pipes>,
    instance: Option<Instance>,
}

/// What [`Session::stop`] found.
#[derive(Debug, Clone, Default)]
pub(crate) struct Stopped {
    pub duration_ns: u64,
    pub lost: u64,
    pub lost_by_cpu: BTreeMap<u32, u64>,
}

impl Session {
    /// Sets everything up and turns tracing on.
    pub(crate) fn start(opts: &CaptureOptions) -> Result<Session, CaptureError> {
        let tfs = Tracefs::locate(opts.tracefs.as_deref())?;
        let buffers = BufferPlan::for_host(opts.buffer_kb)?;
        let mut notes = leftovers::sweep_files();
        notes.extend(tfs.remove_stale());
        let vmms = discovery::scan();
        let selected: Option<Vec<&Vmm>> = if opts.pid.is_some() || opts.vm.is_some() {
            Some(
                discovery::select(&vmms, opts.pid, opts.vm.as_deref())
                    .map_err(CaptureError::Selection)?,
            )
        } else {
            None
        };
        let available = tracefs::read(&tfs.root().join("available_events"))
            .map_err(|e| CaptureError::io("reading", tfs.root().join("available_events"), e))?;
        let wanted = events::select(&available, &opts.events)?;
        let header = tracefs::read(&tfs.root().join("events/header_page"))
            .map_err(|e| CaptureError::io("reading", tfs.root().join("events/header_page"), e))?;
        let mut layout = PageLayout::parse(&header).map_err(CaptureError::Decode)?;

        let mut inst = Instance::create(&tfs)?;
        let clocks = inst.read("trace_clock").unwrap_or_default();
        let clock = ["mono", "global", "local"]
            .into_iter()
            .find(|c| {
                clocks
                    .split_whitespace()
                    .any(|w| w.trim_matches(['[', ']']) == *c)
            })
            .unwrap_or("local")
            .to_string();
        inst.write("trace_clock", &clock)?;
        if clock != "mono" {
            notes.push(format!(
                "the kernel has no `mono` trace clock; times are in the `{clock}` clock"
            ));
        }
        inst.write("buffer_size_kb", &buffers.per_cpu_kb.to_string())?;
        // Full buffer: drop new events (counted) instead of overwriting unread ones.
        let _ = inst.write("options/overwrite", "0");
        // The kernel keeps each traced thread's process (saved_tgids), so a VM that exits
        // before its events are read is still attributed (see `identity`). Kernels without
        // the option lose only that.
        let _ = inst.write("options/record-tgid", "1");
        if let Ok(kb) = inst.read("buffer_subbuf_size_kb")
            && let Ok(kb) = kb.trim().parse::<usize>()
            && kb * 1024 > layout.data_offset
        {
            layout.data_size = kb * 1024 - layout.data_offset;
        }

        let (formats, format_notes) = events::formats(&inst.path().join("events"), &wanted);
        notes.extend(format_notes);
        let mut enabled = Vec::new();
        let mut kept = Vec::new();
        for f in formats {
            match inst.enable(&f.system, &f.name) {
                Ok(()) => {
                    enabled.push(format!("{}:{}", f.system, f.name));
                    kept.push(f);
                }
                Err(e) => notes.push(format!("{}:{} is left out: {e}", f.system, f.name)),
            }
        }
        if kept.is_empty() {
            return Err(CaptureError::NoEvents(
                "none of the selected tracepoints could be enabled".into(),
            ));
        }
        let kvm = kept.iter().map(|f| f.system == "kvm").collect();
        let table = EventTable::new(kept);
        let seen = vec![0; table.formats().len()];

        let stats = if opts.kvm_stats {
            let watched: Vec<&Vmm> = match &selected {
                Some(s) => s.clone(),
                None => vmms.iter().collect(),
            };
            let set = StatsSet::open(&watched);
            notes.extend(set.notes.iter().cloned());
            (!set.is_empty()).then(|| {
                let snap = set.snapshot();
                (set, snap)
            })
        } else {
            None
        };
        let pipes = Pipes::open(inst.path(), layout.page_size())?;
        let cpus = (0..pipes.len()).map(|i| pipes.cpu(i)).collect();
        let mut session = Session {
            notes,
            layout,
            table,
            enabled,
            identities: Identities::from_scan(&vmms).with_saved(tfs.root().to_path_buf()),
            selected: selected.map(|s| s.iter().map(|v| v.pid).collect()),
            filter: None,
            filter_tids: BTreeSet::new(),
            seen,
            kvm,
            events: 0,
            clock,
            realtime_offset_ns: clock::realtime_offset_ns(),
            stats,
            span: None,
            buffers,
            cpus,
            started: Instant::now(),
            pipes: Some(pipes),
            instance: Some(inst),
        };
        session.refresh_filter();
        if let Some(inst) = &session.instance {
            inst.write("tracing_on", "1")?;
        }
        session.started = Instant::now();
        Ok(session)
    }

    /// The name of the tracefs instance (`virtlens-<pid>`).
    pub(crate) fn instance_name(&self) -> Option<&str> {
        self.instance.as_ref().map(Instance::name)
    }

    /// The CPU of each pipe, by pipe index.
    pub(crate) fn cpus(&self) -> &[u32] {
        &self.cpus
    }

    /// How long tracing has been on.
    pub(crate) fn elapsed_ns(&self) -> u64 {
        self.started.elapsed().as_nanos() as u64
    }

    /// Events lost so far.
    pub(crate) fn lost(&self) -> u64 {
        self.pipes.as_ref().map_or(0, |p| p.lost().values().sum())
    }

    /// Sets (or extends) the kernel filter to the selected VMMs' current threads.
    pub(crate) fn refresh_filter(&mut self) {
        let Some(pids) = &self.selected else {
            return;
        };
        let mut tids = BTreeSet::new();
        for &pid in pids {
            if let Some(v) = discovery::probe(pid) {
                tids.extend(v.threads.iter().map(|t| t.tid));
            }
        }
        if tids.is_empty() || tids.is_subset(&self.filter_tids) {
            return;
        }
        tids.extend(self.filter_tids.iter().copied());
        if tids.len() > events::MAX_FILTER_THREADS {
            if self.filter.is_some() || self.filter_tids.is_empty() {
                self.notes.push(format!(
                    "the selected VMMs have {} threads, too many for a kernel filter: events \
                     are filtered by virtlens instead",
                    tids.len()
                ));
            }
            self.clear_filter();
            self.filter_tids = tids;
            return;
        }
        let list: Vec<u32> = tids.iter().copied().collect();
        let filter = events::pid_filter(&list);
        let Some(inst) = self.instance.as_mut() else {
            return;
        };
        let mut failed = None;
        for f in self.table.formats() {
            if let Err(e) = inst.set_filter(&f.system, &f.name, &filter) {
                failed = Some(format!("{}:{}: {e}", f.system, f.name));
                break;
            }
        }
        match failed {
            None => self.filter = Some(filter),
            Some(why) => {
                self.notes.push(format!(
                    "the kernel filter could not be set ({why}): events are filtered by \
                     virtlens instead"
                ));
                self.clear_filter();
            }
        }
        self.filter_tids = tids;
    }

    fn clear_filter(&mut self) {
        if let Some(inst) = self.instance.as_mut() {
            for f in self.table.formats() {
                let _ = inst.set_filter(&f.system, &f.name, "");
            }
        }
        self.filter = None;
    }

    /// Reads what the kernel has now, handing each page (trimmed to its used bytes) to
    /// `sink(pipe index, page)`. Returns how many pages were read, and whether a CPU had
    /// more than one round's worth (so the caller should not sleep before the next).
    pub(crate) fn poll(&mut self, sink: &mut PageSink<'_>) -> Result<(usize, bool), CaptureError> {
        let Some(pipes) = self.pipes.as_mut() else {
            return Ok((0, false));
        };
        let mut pages = 0;
        let mut busy = false;
        for i in 0..pipes.len() {
            for n in 0..PAGES_PER_ROUND {
                let Some(page) = pipes.read_page(i)? else {
                    break;
                };
                busy |= n + 1 == PAGES_PER_ROUND;
                pages += 1;
                let used = match self.layout.page(page) {
                    Ok(p) => {
                        for e in p.events() {
                            self.events += 1;
                            let idx = self.table.index_of(e.payload);
                            if let Some(n) = idx.and_then(|i| self.seen.get_mut(i)) {
                                *n += 1;
                            }
                            if let Some(tid) = self.table.tid_of(e.payload) {
                                let kvm = idx.and_then(|i| self.kvm.get(i)) == Some(&true);
                                self.identities.see(tid, kvm);
                            }
                        }
                        // The header, the events and the lost count that may follow them.
                        (self.layout.data_offset + p.data_len() + self.layout.commit_size)
                            .min(page.len())
                    }
                    Err(_) => page.len(),
                };
                sink(i, &page[..used])?;
            }
        }
        Ok((pages, busy))
    }

    /// Turns tracing off, drains the buffers into `sink`, counts the lost events, and takes
    /// the instance down.
    pub(crate) fn stop(&mut self, sink: &mut PageSink<'_>) -> Result<Stopped, CaptureError> {
        let duration_ns = self.elapsed_ns();
        if let Some(inst) = &self.instance {
            inst.write("tracing_on", "0")?;
        }
        while self.poll(sink)?.0 > 0 {}
        let lost_by_cpu = self.pipes.as_ref().map(Pipes::lost).unwrap_or_default();
        self.pipes = None;
        if let Some(inst) = self.instance.take() {
            inst.close()?;
        }
        Ok(Stopped {
            duration_ns,
            lost: lost_by_cpu.values().sum(),
            lost_by_cpu,
        })
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        // The pipes hold the instance open: close them first.
        self.pipes = None;
        self.instance = None;
    }
}

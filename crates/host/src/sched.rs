//! The host's view of over-commit: a sampler of the VMs' vCPU threads for `top`, `record` and
//! `diagnose --live`. Every [`STATE_PERIOD`] it reads each vCPU thread's state
//! (`/proc/PID/task/TID/stat`: the threads runnable, `R`, are counted) and its
//! `/proc/PID/task/TID/schedstat` (time on a CPU, time runnable on a run queue, dispatches),
//! and again at every interval's end; the host's CPU time, steal included, from /proc/stat. The result is the
//! profile's [`SchedSamples`]: one per interval for `top`, the whole window (with its
//! intervals) for a capture. Procfs reads only; a thread or process that vanishes keeps what
//! was read of it.
//!
//! vCPU threads are the ones whose names say so (QEMU `CPU n/KVM`, Firecracker `fc_vcpu n`,
//! …); in a VMM that names none, the threads that have run guest code (guest time in their
//! `stat`) are taken instead. Of two threads with one vCPU's name (a task a vCPU thread started
//! carries its name until it takes its own), the one that has run guest code is the vCPU.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use virtlens_core::profile::{HostTicks, SchedInterval, SchedSamples, VcpuSched};
use virtlens_guest::{CpuTicks, SchedStat, online_cpus};

use crate::discovery::{self, Vmm, vcpus};

/// How often the vCPU threads' states are read (the caller polls at least as often) — and
/// at least [`PER_THREAD`] apart per watched thread, so a host with hundreds of vCPUs is read
/// less often rather than at a higher cost: a reading costs about 17 µs per thread here (two
/// small procfs files; 1.1 ms for 64 threads, release build), so about 1% of a CPU at most.
pub(crate) const STATE_PERIOD: Duration = Duration::from_millis(50);
pub(crate) const PER_THREAD: Duration = Duration::from_millis(2);
/// How often new vCPU threads are looked for: in the selected VMMs, and among all processes.
const RESCAN_SELECTED: Duration = Duration::from_secs(1);
const RESCAN_ALL: Duration = Duration::from_secs(5);
/// The unit of /proc/stat (USER_HZ, fixed at 100 on x86).
const USER_HZ: u32 = 100;

/// One vCPU thread being watched.
#[derive(Debug, Clone)]
struct Watched {
    pid: u32,
    vcpu: Option<u32>,
    comm: String,
    /// Taken for its name (else for its guest time).
    by_name: bool,
    first: Instant,
    /// When `last` was read.
    last_at: Instant,
    base: SchedStat,
    last: SchedStat,
    /// `last` at the start of the current interval (or at first sight within it).
    iv_base: SchedStat,
    iv_since: Instant,
    samples: u64,
    runnable: u64,
    iv_samples: u64,
    iv_runnable: u64,
    gone: bool,
}

impl Watched {
    fn task(&self, tid: u32) -> PathBuf {
        PathBuf::from(format!("/proc/{}/task/{tid}", self.pid))
    }
}

/// See the module doc.
#[derive(Debug)]
pub struct Sampler {
    selected: Option<BTreeSet<u32>>,
    cpus: u32,
    threads: BTreeMap<u32, Watched>,
    names: BTreeMap<u32, String>,
    started: Instant,
    ticks0: Option<CpuTicks>,
    iv_start: Instant,
    iv_ticks: Option<CpuTicks>,
    iv_samples: u64,
    iv_runnable: u64,
    last_state: Instant,
    last_scan: Instant,
    state_samples: u64,
    window: SchedSamples,
    /// QEMU processes none of whose threads is named as a vCPU (no `debug-threads=on`).
    unnamed_qemu: BTreeSet<u32>,
}

/// What a thread's `stat` line says: its name, state letter and guest time (ticks).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Stat {
    comm: String,
    state: char,
    guest: u64,
}

fn parse_stat(stat: &str) -> Option<Stat> {
    let close = stat.rfind(')')?;
    let comm = stat[..close].split_once('(')?.1.to_string();
    let mut fields = stat[close + 1..].split_whitespace();
    let state = fields.next()?.chars().next()?;
    // Field 43 (guest_time) is the 41st after the state (field 3).
    let guest = fields.nth(39).and_then(|g| g.parse().ok()).unwrap_or(0);
    Some(Stat { comm, state, guest })
}

fn read_stat(task: &std::path::Path) -> Option<Stat> {
    parse_stat(&std::fs::read_to_string(task.join("stat")).ok()?)
}

fn ticks(a: Option<CpuTicks>, b: Option<CpuTicks>) -> HostTicks {
    match (a, b) {
        (Some(a), Some(b)) => HostTicks {
            busy: b.busy.saturating_sub(a.busy),
            idle: b.idle.saturating_sub(a.idle),
            steal: b.steal.saturating_sub(a.steal),
            hz: USER_HZ,
        },
        _ => HostTicks::default(),
    }
}

fn ns(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

impl Sampler {
    /// Watches the vCPU threads of the VMMs `pid`/`vm` select (all VMMs when neither is
    /// given); an error names what there is when the selection matches nothing.
    pub fn for_selection(pid: Option<u32>, vm: Option<&str>) -> Result<Sampler, String> {
        let selected = if pid.is_some() || vm.is_some() {
            let vmms = discovery::scan();
            let chosen = discovery::select(&vmms, pid, vm)?;
            Some(chosen.iter().map(|v| v.pid).collect())
        } else {
            None
        };
        Ok(Sampler::new(selected))
    }

    /// Watches the vCPU threads of the VMMs `selected` (all VMMs when `None`), from now on.
    pub fn new(selected: Option<BTreeSet<u32>>) -> Sampler {
        let now = Instant::now();
        let ticks0 = CpuTicks::now();
        let mut s = Sampler {
            selected,
            cpus: u32::try_from(online_cpus()).unwrap_or(u32::MAX),
            threads: BTreeMap::new(),
            names: BTreeMap::new(),
            started: now,
            ticks0,
            iv_start: now,
            iv_ticks: ticks0,
            iv_samples: 0,
            iv_runnable: 0,
            last_state: now,
            last_scan: now,
            state_samples: 0,
            window: SchedSamples::default(),
            unnamed_qemu: BTreeSet::new(),
        };
        s.scan();
        s.sample_states();
        s
    }

    /// What a reader of the ready times should know: a QEMU without `debug-threads=on` names
    /// no thread as a vCPU, so its times are per thread that has run guest code (a vCPU that
    /// has not run yet is missed) and no vCPU number is known.
    pub fn notes(&self) -> Vec<String> {
        self.unnamed_qemu
            .iter()
            .map(|pid| {
                let name = self.names.get(pid).map_or("", String::as_str);
                format!(
                    "QEMU process {pid} ({name}) names no thread as a vCPU (`CPU 0/KVM`): its \
                     ready time is per thread that has run guest code, without vCPU numbers, \
                     and a vCPU that has not run yet is missed; start QEMU with \
                     `-name {name},debug-threads=on` (libvirt sets it) for per-vCPU times"
                )
            })
            .collect()
    }

    /// vCPU threads watched so far.
    pub fn watched(&self) -> usize {
        self.threads.len()
    }

    /// State readings taken so far.
    pub fn readings(&self) -> u64 {
        self.state_samples
    }

    /// Reads the threads' states when `STATE_PERIOD` has passed, and looks for new vCPU
    /// threads now and then; cheap to call often.
    pub fn poll(&mut self) {
        let now = Instant::now();
        let rescan = if self.selected.is_some() {
            RESCAN_SELECTED
        } else {
            RESCAN_ALL
        };
        if now.duration_since(self.last_scan) >= rescan {
            self.scan();
        }
        let watched = u32::try_from(self.threads.len()).unwrap_or(u32::MAX);
        if now.duration_since(self.last_state) >= STATE_PERIOD.max(PER_THREAD * watched) {
            self.sample_states();
        }
    }

    /// The VMMs to look at now.
    fn vmms(&self) -> Vec<Vmm> {
        match &self.selected {
            Some(pids) => pids.iter().filter_map(|&p| discovery::probe(p)).collect(),
            None => discovery::scan(),
        }
    }

    /// Adds the vCPU threads not watched yet.
    fn scan(&mut self) {
        let now = Instant::now();
        self.last_scan = now;
        for v in self.vmms() {
            self.names.entry(v.pid).or_insert_with(|| v.name.clone());
            let named: Vec<_> = v.vcpu_threads().collect();
            let by_name = !named.is_empty();
            // Named later is named: QEMU holds its VM before it starts its vCPU threads.
            if by_name {
                self.unnamed_qemu.remove(&v.pid);
            } else if v.kind == discovery::VmmKind::Qemu {
                self.unnamed_qemu.insert(v.pid);
            }
            let threads: Vec<_> = if named.is_empty() {
                // No names to go by: the threads that have run guest code.
                v.threads
                    .iter()
                    .filter(|t| {
                        let task = PathBuf::from(format!("/proc/{}/task/{}", v.pid, t.tid));
                        read_stat(&task).is_some_and(|st| st.guest > 0)
                    })
                    .collect()
            } else {
                named
            };
            for t in threads {
                if self.threads.contains_key(&t.tid) {
                    continue;
                }
                // A thread named like a vCPU another live thread of the VMM already is: one of
                // the two was started by the other and still carries its creator's name (KVM's
                // per-VM workers are such tasks of the VMM). The vCPU thread is the one that
                // runs guest code: the other is kept only while neither has.
                let twin = self
                    .threads
                    .iter()
                    .find(|(_, w)| by_name && w.pid == v.pid && !w.gone && w.vcpu == t.vcpu)
                    .map(|(&tid, _)| tid);
                if let Some(other) = twin {
                    let guest = |tid: u32| {
                        read_stat(&PathBuf::from(format!("/proc/{}/task/{tid}", v.pid)))
                            .map_or(0, |st| st.guest)
                    };
                    if guest(other) > 0 || guest(t.tid) == 0 {
                        continue;
                    }
                    self.threads.remove(&other);
                }
                let path = format!("/proc/{}/task/{}/schedstat", v.pid, t.tid);
                let Some(stat) = SchedStat::read(&path) else {
                    continue;
                };
                self.threads.insert(
                    t.tid,
                    Watched {
                        pid: v.pid,
                        vcpu: t.vcpu,
                        comm: t.comm.clone(),
                        by_name,
                        first: now,
                        last_at: now,
                        base: stat,
                        last: stat,
                        iv_base: stat,
                        iv_since: now,
                        samples: 0,
                        runnable: 0,
                        iv_samples: 0,
                        iv_runnable: 0,
                        gone: false,
                    },
                );
            }
        }
    }

    /// One reading of every watched thread's state (and its schedstat, so a thread that exits
    /// keeps what it did until just before).
    fn sample_states(&mut self) {
        let now = Instant::now();
        self.last_state = now;
        self.read_schedstats(now);
        let mut runnable = 0;
        let mut not_vcpus = Vec::new();
        for (&tid, w) in self.threads.iter_mut().filter(|(_, w)| !w.gone) {
            match read_stat(&w.task(tid)) {
                // A thread caught before it took its own name (a new thread carries its
                // creator's at first) is no vCPU thread: it is forgotten.
                Some(st) if w.by_name && vcpus::vcpu_of_thread(&st.comm).is_none() => {
                    not_vcpus.push(tid);
                }
                Some(st) => {
                    let r = u64::from(st.state == 'R');
                    runnable += r;
                    w.samples += 1;
                    w.iv_samples += 1;
                    w.runnable += r;
                    w.iv_runnable += r;
                }
                None => w.gone = true,
            }
        }
        for tid in not_vcpus {
            self.threads.remove(&tid);
        }
        self.state_samples += 1;
        self.iv_samples += 1;
        self.iv_runnable += runnable;
    }

    /// Reads every live thread's schedstat (a thread whose counters went back is another
    /// thread now: the old one is gone).
    fn read_schedstats(&mut self, now: Instant) {
        for (&tid, w) in self.threads.iter_mut().filter(|(_, w)| !w.gone) {
            match SchedStat::read(w.task(tid).join("schedstat")) {
                Some(s) if s.run_ns >= w.last.run_ns && s.wait_ns >= w.last.wait_ns => {
                    w.last = s;
                    w.last_at = now;
                }
                _ => w.gone = true,
            }
        }
    }

    /// Ends the current interval: its samples (for `top`), also kept in the window.
    pub fn close_interval(&mut self) -> SchedSamples {
        self.sample_states();
        let now = self.last_state;
        let host_now = CpuTicks::now();
        let host = ticks(self.iv_ticks, host_now);
        let mut vcpus = Vec::new();
        for (&tid, w) in &mut self.threads {
            // Threads gone before this interval have nothing in it; one read only once (a
            // thread caught at birth, before it took its own name) says nothing.
            if (w.last_at < self.iv_start && w.iv_samples == 0) || w.last_at == w.first {
                continue;
            }
            let d = w.last.since(&w.iv_base);
            vcpus.push(VcpuSched {
                pid: w.pid,
                tid,
                vcpu: w.vcpu,
                comm: w.comm.clone(),
                wall_ns: ns(w.last_at.saturating_duration_since(w.iv_since)),
                run_ns: d.run_ns,
                wait_ns: d.wait_ns,
                dispatches: d.slices,
                samples: w.iv_samples,
                runnable_samples: w.iv_runnable,
            });
            w.iv_base = w.last;
            w.iv_since = now;
            w.iv_samples = 0;
            w.iv_runnable = 0;
        }
        let duration_ns = ns(now.saturating_duration_since(self.iv_start));
        let iv = SchedInterval {
            start_ns: ns(self.iv_start.saturating_duration_since(self.started)),
            duration_ns,
            state_samples: self.iv_samples,
            runnable: self.iv_runnable,
            vcpus: u32::try_from(vcpus.len()).unwrap_or(u32::MAX),
            run_ns: vcpus.iter().map(|v| v.run_ns).fold(0, u64::saturating_add),
            wait_ns: vcpus.iter().map(|v| v.wait_ns).fold(0, u64::saturating_add),
            host,
        };
        self.window.push_interval(iv.clone());
        let out = SchedSamples {
            online_cpus: self.cpus,
            window_ns: duration_ns,
            state_samples: self.iv_samples,
            vm_names: self.names_of(&vcpus),
            vcpus,
            host,
            intervals: vec![iv],
        };
        self.iv_start = now;
        self.iv_ticks = host_now;
        self.iv_samples = 0;
        self.iv_runnable = 0;
        out
    }

    fn names_of(&self, vcpus: &[VcpuSched]) -> BTreeMap<u32, String> {
        vcpus
            .iter()
            .filter_map(|v| Some((v.pid, self.names.get(&v.pid)?.clone())))
            .collect()
    }

    /// Ends the window: every vCPU thread's totals since it was first seen, the host's CPU
    /// time, and the intervals.
    pub fn finish(mut self) -> SchedSamples {
        self.close_interval();
        let now = Instant::now();
        let vcpus: Vec<VcpuSched> = self
            .threads
            .iter()
            .filter(|(_, w)| w.last_at > w.first)
            .map(|(&tid, w)| {
                let d = w.last.since(&w.base);
                VcpuSched {
                    pid: w.pid,
                    tid,
                    vcpu: w.vcpu,
                    comm: w.comm.clone(),
                    wall_ns: ns(w.last_at.saturating_duration_since(w.first)),
                    run_ns: d.run_ns,
                    wait_ns: d.wait_ns,
                    dispatches: d.slices,
                    samples: w.samples,
                    runnable_samples: w.runnable,
                }
            })
            .collect();
        let mut out = std::mem::take(&mut self.window);
        out.online_cpus = self.cpus;
        out.window_ns = ns(now.saturating_duration_since(self.started));
        out.state_samples = self.state_samples;
        out.host = ticks(self.ticks0, self.iv_ticks);
        out.vm_names = self.names_of(&vcpus);
        out.vcpus = vcpus;
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_lines_give_state_and_guest_time() {
        let line = "4242 (CPU 0/KVM) R 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 \
                    24 25 26 27 28 29 30 31 32 33 34 35 36 37 38 39 777 41 42\n";
        let st = parse_stat(line);
        assert_eq!(
            st,
            Some(Stat {
                comm: "CPU 0/KVM".into(),
                state: 'R',
                guest: 777
            })
        );
        // A name with spaces and parentheses: the state follows the last `)`.
        let odd = parse_stat("1 (a) b) S 0");
        assert_eq!(odd.map(|s| (s.comm, s.state)), Some(("a) b".into(), 'S')));
        assert_eq!(parse_stat("garbage"), None);
    }

    #[test]
    fn a_process_that_is_no_vmm_has_nothing_watched() {
        let mut s = Sampler::new(Some(BTreeSet::from([u32::MAX])));
        s.poll();
        let iv = s.close_interval();
        assert!(iv.vcpus.is_empty());
        assert!(iv.state_samples >= 1, "the first reading is taken at once");
        let w = s.finish();
        assert!(w.vcpus.is_empty() && w.intervals.len() == 2);
    }
}

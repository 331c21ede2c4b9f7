//! `virtlens serve`: a read-only Prometheus exporter. Every interval it reads the in-kernel
//! aggregation (or, where BPF is unavailable, the tracefs capture: `bpf::source`), the VMs alive
//! now (`discovery`), their vCPUs' scheduler times (`ready`) and KVM statistics, runs the
//! diagnosis on a sliding window (`window`), folds it all into the bounded `state`, and
//! encodes it once (`exposition`); the HTTP workers (`http`) answer scrapes from that
//! text. It changes nothing on the host beyond its own tracing, and undoes that on every
//! exit: the BPF objects die with the process, the tracefs instance is taken down (or removed
//! by the next run after a SIGKILL).

pub(crate) mod exposition;
pub(crate) mod families;
pub(crate) mod http;
pub(crate) mod qmp;
pub(crate) mod ready;
pub(crate) mod state;
pub(crate) mod window;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use virtlens_core::decode::Decoder;
use virtlens_core::diagnose;

use crate::bpf::Limits;
use crate::bpf::source::Source;
use crate::capture::vm_stats::{Snapshots, StatsSet};
use crate::capture::{CaptureError, CaptureOptions};
use crate::discovery::{self, Vmm};
use state::{Sched, State, Update};

/// How `serve` runs.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    pub listen: SocketAddr,
    /// Between collections.
    pub interval: Duration,
    /// Series of their own per VM and family.
    pub top: usize,
    pub max_vms: usize,
    /// How long a gone VM's series stay.
    pub keep_gone: Duration,
    /// The findings' sliding window.
    pub window: Duration,
    /// Use BPF when it can be had.
    pub bpf: bool,
    pub limits: Limits,
    /// `--pid`/`--vm`, the tracefs location and the fallback capture's events and buffer.
    pub capture: CaptureOptions,
    /// QMP sockets of QEMU VMs to read KVM statistics from (`query-stats`).
    pub qmp: Vec<std::path::PathBuf>,
    /// Have the kernel time the BPF programs while serving.
    pub bpf_stats: bool,
}

/// What `serve` tells its caller once it listens.
#[derive(Debug, Clone)]
pub struct Started {
    pub addr: SocketAddr,
    pub source: &'static str,
    pub notes: Vec<String>,
}

/// Runs until `stop` is set; calls `started` once the endpoint answers.
pub fn serve(
    opts: &ServeOptions,
    stop: &AtomicBool,
    started: &mut dyn FnMut(&Started),
) -> Result<(), CaptureError> {
    let (mut source, mut notes) = Source::start(&opts.capture, opts.limits, opts.bpf)?;
    let _stats = match (&source, opts.bpf_stats) {
        (Source::Bpf(_), true) => crate::bpf::RunTimeStats::enable()
            .map_err(|e| notes.push(format!("the kernel cannot time BPF programs: {e}")))
            .ok(),
        _ => None,
    };
    let state = Arc::new(Mutex::new(State::new(
        opts.top,
        opts.max_vms,
        opts.keep_gone,
        source.name(),
    )));
    if let Ok(mut st) = state.lock() {
        let facts = crate::facts::probe();
        st.host.backend = facts
            .backend
            .as_ref()
            .map_or_else(|| "unknown".into(), ToString::to_string);
        st.host.timing = facts.exit_timing().name().to_string();
    }
    let registry = exposition::registry(state.clone());
    let texts = Arc::new(RwLock::new(http::Texts::default()));
    publish(&registry, &texts);
    let server = match http::Http::start(opts.listen, texts.clone()) {
        Ok(s) => s,
        Err(e) => {
            let _ = source.stop();
            return Err(CaptureError::Usage(e));
        }
    };
    started(&Started {
        addr: server.addr,
        source: source.name(),
        notes,
    });
    let result = collect_loop(opts, &mut source, &state, &registry, &texts, stop, &|| {
        server.failure()
    });
    server.stop();
    let stopped = source.stop();
    result.and(stopped)
}

/// Encodes the state and hands the texts to the HTTP workers.
fn publish(registry: &prometheus_client::registry::Registry, texts: &RwLock<http::Texts>) {
    if let Ok(om) = exposition::encode(registry) {
        let classic = exposition::classic(&om);
        if let Ok(mut t) = texts.write() {
            t.openmetrics = om.into();
            t.classic = classic.into();
        }
    }
}

/// How often every process is looked at for VMs (in between, only the processes the counts
/// name are, and the known VMs' are checked to be alive).
const SCAN_EVERY: Duration = Duration::from_secs(10);
/// How often the findings are computed again.
const FINDINGS_EVERY: Duration = Duration::from_secs(5);

/// The VMs alive now, kept between collections so a collection does not walk every process.
#[derive(Default)]
struct Vms {
    list: Vec<Vmm>,
    scanned: Option<Instant>,
}

impl Vms {
    /// The VMMs alive now (among `selected`, when given): a full scan every [`SCAN_EVERY`];
    /// in between the known ones that still run, and the processes new in `profile`.
    fn update(
        &mut self,
        profile: &virtlens_core::profile::Profile,
        selected: Option<&[u32]>,
    ) -> Vec<Vmm> {
        let now = Instant::now();
        if self
            .scanned
            .is_none_or(|t| now.duration_since(t) >= SCAN_EVERY)
        {
            self.scanned = Some(now);
            self.list = discovery::scan();
        } else {
            self.list
                .retain(|v| std::path::Path::new(&format!("/proc/{}", v.pid)).exists());
            let mut new: Vec<u32> = profile
                .tables
                .iter()
                .flat_map(|t| t.rows.iter().filter_map(|r| r.pid))
                .filter(|p| !self.list.iter().any(|v| v.pid == *p))
                .collect();
            new.sort_unstable();
            new.dedup();
            self.list
                .extend(new.into_iter().filter_map(discovery::probe));
        }
        match selected {
            Some(pids) => self
                .list
                .iter()
                .filter(|v| pids.contains(&v.pid))
                .cloned()
                .collect(),
            None => self.list.clone(),
        }
    }
}

/// KVM statistics fds of each VM, opened when it is first seen.
type Stats = BTreeMap<u32, Option<(StatsSet, Snapshots)>>;

fn collect_loop(
    opts: &ServeOptions,
    source: &mut Source,
    state: &Mutex<State>,
    registry: &prometheus_client::registry::Registry,
    texts: &RwLock<http::Texts>,
    stop: &AtomicBool,
    http_failure: &dyn Fn() -> Option<String>,
) -> Result<(), CaptureError> {
    let decoder = Decoder::builtin();
    let diag = diagnose::Options {
        host: crate::facts::probe(),
        ..diagnose::Options::default()
    };
    // `--pid`/`--vm` choose the VMs once, at the start (as the capture does).
    let selected: Option<Vec<u32>> = (opts.capture.pid.is_some() || opts.capture.vm.is_some())
        .then(|| {
            let all = discovery::scan();
            discovery::select(&all, opts.capture.pid, opts.capture.vm.as_deref())
                .map(|v| v.iter().map(|v| v.pid).collect())
                .unwrap_or_default()
        });
    let mut window = window::Window::new(opts.window);
    let mut vms = Vms::default();
    let mut findings_at: Option<Instant> = None;
    let mut stats: Stats = BTreeMap::new();
    let mut qmps: Vec<QmpSource> = opts
        .qmp
        .iter()
        .map(|p| QmpSource {
            path: p.clone(),
            conn: None,
            last: None,
        })
        .collect();
    let mut sched_before = (Instant::now(), ready::sample(&discovery::scan()));
    let slice = Duration::from_millis(50).min(opts.interval);
    while !stop.load(Ordering::Relaxed) {
        let until = Instant::now() + opts.interval;
        while Instant::now() < until && !stop.load(Ordering::Relaxed) {
            source.poll()?;
            std::thread::sleep(slice.min(until.saturating_duration_since(Instant::now())));
        }
        if stop.load(Ordering::Relaxed) {
            break;
        }
        // Without its listener the exporter is of no use: end with an error, so that the
        // supervisor (systemd's Restart=on-failure) starts it again.
        if let Some(why) = http_failure() {
            return Err(CaptureError::Usage(format!(
                "the HTTP server stopped: {why}"
            )));
        }
        let started = Instant::now();
        let (iv, extras) = source.take()?;
        let vmms = vms.update(&iv.profile, selected.as_deref());
        let now = Instant::now();
        let sched_now = (now, ready::sample(&vmms));
        let mut stat_rows = qmp_stats(&mut qmps);
        let by_qmp: Vec<u32> = qmps
            .iter()
            .filter_map(|q| q.conn.as_ref().map(|c| c.1))
            .collect();
        let fd_vmms: Vec<Vmm> = vmms
            .iter()
            .filter(|v| !by_qmp.contains(&v.pid))
            .cloned()
            .collect();
        if opts.capture.kvm_stats {
            stat_rows.extend(kvm_stats(&mut stats, &fd_vmms, iv.duration_ns));
        }
        // The window keeps counts and summed times, not the per-row latency histograms.
        let mut kept = iv.profile.clone();
        for r in kept.tables.iter_mut().flat_map(|t| t.rows.iter_mut()) {
            r.latency = None;
        }
        window.push(now, iv.duration_ns, kept);
        let Ok(mut st) = state.lock() else {
            break;
        };
        st.update(
            &Update {
                now,
                profile: &iv.profile,
                extras: &extras,
                vmms: &vmms,
                lost: iv.lost,
            },
            &decoder,
        );
        let wall = now.duration_since(sched_before.0).as_nanos() as u64;
        for (&(pid, vcpu), now_stat) in &sched_now.1 {
            if let Some(vm) = st.vms.get_mut(&pid) {
                let ready = sched_before
                    .1
                    .get(&(pid, vcpu))
                    .and_then(|b| ready::ready_ratio(b, now_stat, wall));
                vm.vcpus.insert(
                    vcpu,
                    Sched {
                        run_ns: now_stat.run_ns,
                        wait_ns: now_stat.wait_ns,
                        ready,
                    },
                );
            }
        }
        for (pid, stat, n) in stat_rows {
            if let Some(vm) = st.vms.get_mut(&pid) {
                *vm.kvm_stats.entry(stat).or_default() += n;
            }
        }
        if findings_at.is_none_or(|t| now.duration_since(t) >= FINDINGS_EVERY) {
            findings_at = Some(now);
            let pids: Vec<u32> = st.vms.keys().copied().collect();
            for pid in pids {
                let found = window::findings(&window, pid, &decoder, &diag);
                if let Some(vm) = st.vms.get_mut(&pid) {
                    vm.findings = found;
                }
            }
        }
        st.host.collect_seconds = started.elapsed().as_secs_f64();
        drop(st);
        sched_before = sched_now;
        publish(registry, texts);
    }
    Ok(())
}

/// The KVM statistics that moved since the previous call, as (pid, stat, increment); VMs
/// seen for the first time get their statistics fds opened (their first increments come at
/// the next call).
fn kvm_stats(stats: &mut Stats, vmms: &[Vmm], window_ns: u64) -> Vec<(u32, String, u64)> {
    stats.retain(|pid, _| vmms.iter().any(|v| v.pid == *pid));
    let mut out = Vec::new();
    for v in vmms {
        let entry = stats.entry(v.pid).or_insert_with(|| {
            let set = StatsSet::open(&[v]);
            (!set.is_empty()).then(|| {
                let snap = set.snapshot();
                (set, snap)
            })
        });
        let Some((set, before)) = entry else {
            continue;
        };
        let after = set.snapshot();
        if let Some(t) = set.table(before, &after, window_ns) {
            for r in t.rows {
                out.push((v.pid, r.key.key_text(), r.count));
            }
        }
        *before = after;
    }
    out
}

/// A QMP socket, its connection and owner once made, and its last answer.
struct QmpSource {
    path: std::path::PathBuf,
    conn: Option<(qmp::Qmp, u32)>,
    last: Option<BTreeMap<String, u64>>,
}

/// The KVM statistics QEMU reports through QMP that moved since the previous call, as
/// (pid, stat, increment); a socket that fails is connected again at the next call.
fn qmp_stats(sources: &mut [QmpSource]) -> Vec<(u32, String, u64)> {
    let mut out = Vec::new();
    for s in sources {
        if s.conn.is_none() {
            let owner = qmp::socket_owner(&s.path);
            s.conn = owner.and_then(|pid| qmp::Qmp::connect(&s.path).ok().map(|q| (q, pid)));
            s.last = None;
        }
        let Some((q, pid)) = s.conn.as_mut() else {
            continue;
        };
        match q.kvm_stats() {
            Ok(now) => {
                if let Some(last) = &s.last {
                    for (k, v) in &now {
                        let d = v.saturating_sub(last.get(k).copied().unwrap_or(0));
                        if d > 0 {
                            out.push((*pid, k.clone(), d));
                        }
                    }
                }
                s.last = Some(now);
            }
            Err(_) => s.conn = None,
        }
    }
    out
}

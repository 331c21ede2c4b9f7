//! What `serve` exports, kept between scrapes: per VM, monotonic counters since the exporter
//! started (exits by reason, port, MMIO address, MSR, userspace exit, hypercall, event; the
//! measured handling time where a latency pair measured it), cumulative log2 latency
//! histograms, vCPU scheduler times, KVM statistics and the current findings.
//!
//! Bounded: each family of a VM holds at most `top` series of its own; a key gets one when
//! the family has room (the busiest of an interval first) and keeps it, so a series never
//! jumps; keys without one add to the family's `other` series. A series idle for
//! [`EVICT_AFTER`] intervals gives its place up. At most `max_vms` VMs are kept. A VM whose
//! process is gone keeps its series for `keep_gone` (so its last counts are scraped), then
//! they go.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use virtlens_core::decode::Decoder;
use virtlens_core::profile::{Key, Profile, TableKind};

use crate::bpf::Pair;
use crate::bpf::live::Extras;
use crate::bpf::maps::{HIST_BUCKETS, Hist};
use crate::discovery::{NameSource, Vmm};

/// Intervals without an increment after which a series gives its place up.
pub(crate) const EVICT_AFTER: u32 = 600;

/// A family of per-key counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Family {
    Exit,
    Port,
    Mmio,
    Msr,
    Userspace,
    Hypercall,
    Halt,
    Event,
}

impl Family {
    pub const ALL: [Family; 8] = [
        Family::Exit,
        Family::Port,
        Family::Mmio,
        Family::Msr,
        Family::Userspace,
        Family::Hypercall,
        Family::Halt,
        Family::Event,
    ];

    fn of(kind: &TableKind) -> Option<Family> {
        Some(match kind {
            TableKind::Vmexit => Family::Exit,
            TableKind::Ioport => Family::Port,
            TableKind::Mmio => Family::Mmio,
            TableKind::Msr => Family::Msr,
            TableKind::UserspaceExit => Family::Userspace,
            TableKind::Hypercall => Family::Hypercall,
            TableKind::Halt => Family::Halt,
            TableKind::Events => Family::Event,
            _ => return None,
        })
    }
}

/// The labels of one series of a family: its key (reason, port, address, MSR, number), the
/// decoded name where there is one, and the access direction.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct SeriesKey {
    pub key: String,
    pub name: String,
    pub access: String,
}

impl SeriesKey {
    fn other() -> SeriesKey {
        SeriesKey {
            key: "other".into(),
            name: "other".into(),
            access: String::new(),
        }
    }
}

/// One counter series.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Series {
    pub count: u64,
    /// Summed durations, where measured.
    pub time_ns: Option<u64>,
    idle: u32,
}

impl Series {
    fn add(&mut self, count: u64, time_ns: Option<u64>) {
        self.count = self.count.saturating_add(count);
        if let Some(t) = time_ns {
            self.time_ns = Some(self.time_ns.unwrap_or(0).saturating_add(t));
        }
    }
}

/// A family's bounded series.
#[derive(Debug, Clone, Default)]
pub struct Bounded {
    pub series: BTreeMap<SeriesKey, Series>,
    pub other: Series,
}

/// A vCPU's scheduler times (from schedstat), cumulative, and its ready share over the
/// last interval.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Sched {
    pub run_ns: u64,
    pub wait_ns: u64,
    pub ready: Option<f64>,
}

/// Everything exported about one VM.
#[derive(Debug, Clone)]
pub struct VmState {
    pub name: String,
    pub vmm: String,
    pub name_source: String,
    /// QEMU's `-uuid` (libvirt's domain UUID), when given.
    pub uuid: Option<String>,
    pub families: BTreeMap<Family, Bounded>,
    pub hists: BTreeMap<Pair, Hist>,
    pub vcpus: BTreeMap<u32, Sched>,
    /// KVM binary statistics (cumulative counters), increments summed since the start.
    pub kvm_stats: BTreeMap<String, u64>,
    /// Current findings: (id, severity).
    pub findings: Vec<(String, String)>,
    gone_at: Option<Instant>,
}

impl VmState {
    /// A VM with nothing counted yet.
    pub fn new(name: &str, vmm: &str, name_source: &str) -> VmState {
        VmState {
            name: name.to_string(),
            vmm: vmm.to_string(),
            name_source: name_source.to_string(),
            uuid: None,
            families: BTreeMap::new(),
            hists: BTreeMap::new(),
            vcpus: BTreeMap::new(),
            kvm_stats: BTreeMap::new(),
            findings: Vec::new(),
            gone_at: None,
        }
    }

    /// The labels of this VM's series: `vm`, and `uuid` when known (see [`series_name`]).
    /// The pid itself is on `virtlens_vm_info` only.
    pub fn labels(&self) -> Vec<(&'static str, String)> {
        let mut l = vec![("vm", self.name.clone())];
        if let Some(u) = &self.uuid {
            l.push(("uuid", u.clone()));
        }
        l
    }
}

/// The name a VM's series carry. A VM with a name of its own (QEMU `-name`, a libvirt domain,
/// a Firecracker id) keeps its series across restarts, as the libvirt exporter's users key on
/// domain name and UUID; one named only by its process title gets its pid in the name, since
/// two such VMs would share it.
fn series_name(v: &Vmm) -> String {
    if v.name_source == NameSource::ProcessTitle {
        format!("{} (pid {})", v.name, v.pid)
    } else {
        v.name.clone()
    }
}

/// Host-wide numbers about the exporter itself.
#[derive(Debug, Clone, Default)]
pub struct HostState {
    /// `bpf` or `tracefs`.
    pub source: String,
    /// The KVM backend (`vmx`, `svm`, `pvm`) and what its exit times are the times of
    /// (`hardware`, `nested`, `emulated-cpu`, `pvm`): latencies from an emulated CPU are not
    /// hardware exit costs.
    pub backend: String,
    pub timing: String,
    /// Events counted without their key (the in-kernel map was full), by event.
    pub unkeyed: BTreeMap<String, u64>,
    pub dropped_latencies: u64,
    /// Events the tracefs capture lost.
    pub lost: u64,
    /// VMs not exported because `max_vms` were.
    pub vms_over_limit: usize,
    pub collect_seconds: f64,
    pub collects: u64,
    /// Per event, what the kernel counted of its BPF program so far.
    pub programs: Vec<crate::bpf::ProgramRuns>,
}

/// The exporter's state; see the module doc.
#[derive(Debug, Clone)]
pub struct State {
    pub top: usize,
    pub max_vms: usize,
    pub keep_gone: Duration,
    pub vms: BTreeMap<u32, VmState>,
    pub host: HostState,
}

/// One interval's inputs.
pub struct Update<'a> {
    pub now: Instant,
    pub profile: &'a Profile,
    pub extras: &'a Extras,
    /// The VMMs alive now.
    pub vmms: &'a [Vmm],
    pub lost: u64,
}

impl State {
    pub fn new(top: usize, max_vms: usize, keep_gone: Duration, source: &str) -> State {
        State {
            top: top.max(1),
            max_vms: max_vms.max(1),
            keep_gone,
            vms: BTreeMap::new(),
            host: HostState {
                source: source.to_string(),
                backend: "unknown".into(),
                timing: "unknown".into(),
                ..HostState::default()
            },
        }
    }

    /// Folds one interval in.
    pub fn update(&mut self, u: &Update<'_>, decoder: &Decoder) {
        self.track_vms(u.vmms, u.now);
        self.host.lost += u.lost;
        self.host.collects += 1;
        // (pid, family) → key → (count, time)
        let mut inc: BTreeMap<(u32, Family), BTreeMap<SeriesKey, Series>> = BTreeMap::new();
        for t in &u.profile.tables {
            let Some(family) = Family::of(&t.kind) else {
                continue;
            };
            for r in &t.rows {
                let Some(pid) = r.pid else {
                    continue;
                };
                let key = series_key(&r.key, decoder);
                inc.entry((pid, family))
                    .or_default()
                    .entry(key)
                    .or_default()
                    .add(r.count, r.time.total_ns);
            }
        }
        // VMs that ran and exited between two collections: exported (under the name the
        // profile knows, else their pid) until `keep_gone` after now.
        for &(pid, _) in inc.keys() {
            if !self.vms.contains_key(&pid) && self.vms.len() < self.max_vms {
                let name = u.profile.origin.vm_names.get(&pid);
                let mut vm = VmState::new(
                    &name.cloned().unwrap_or_else(|| format!("pid {pid}")),
                    "",
                    "",
                );
                vm.gone_at = Some(u.now);
                self.vms.insert(pid, vm);
            }
        }
        for ((pid, family), keys) in inc {
            if let Some(vm) = self.vms.get_mut(&pid) {
                let top = self.top;
                vm.families.entry(family).or_default().add(keys, top);
            }
        }
        for vm in self.vms.values_mut() {
            for b in vm.families.values_mut() {
                b.age();
            }
        }
        for h in &u.extras.hists {
            if let Some(vm) = self.vms.get_mut(&h.pid) {
                let acc = vm.hists.entry(h.pair).or_insert(Hist {
                    buckets: [0; HIST_BUCKETS],
                    sum_ns: 0,
                });
                for (a, b) in acc.buckets.iter_mut().zip(h.hist.buckets.iter()) {
                    *a = a.saturating_add(*b);
                }
                acc.sum_ns = acc.sum_ns.saturating_add(h.hist.sum_ns);
            }
        }
        for (event, n) in &u.extras.unkeyed {
            *self.host.unkeyed.entry(event.clone()).or_default() += n;
        }
        self.host.dropped_latencies += u.extras.dropped_latencies;
        self.host.programs.clone_from(&u.extras.programs);
    }

    /// Adds VMs that appeared, marks those whose process is gone, and removes them after
    /// `keep_gone`.
    fn track_vms(&mut self, vmms: &[Vmm], now: Instant) {
        let mut over = 0;
        for v in vmms {
            if let Some(s) = self.vms.get_mut(&v.pid) {
                s.gone_at = None;
                s.name = series_name(v);
                s.uuid.clone_from(&v.uuid);
                continue;
            }
            if self.vms.len() >= self.max_vms {
                over += 1;
                continue;
            }
            let mut vm = VmState::new(
                &series_name(v),
                &serde_name(&v.kind),
                &serde_name(&v.name_source),
            );
            vm.uuid.clone_from(&v.uuid);
            self.vms.insert(v.pid, vm);
        }
        self.host.vms_over_limit = over;
        let keep = self.keep_gone;
        for (pid, s) in self.vms.iter_mut() {
            if !vmms.iter().any(|v| v.pid == *pid) && s.gone_at.is_none() {
                s.gone_at = Some(now);
                s.findings.clear();
            }
        }
        self.vms
            .retain(|_, s| s.gone_at.is_none_or(|t| now.duration_since(t) < keep));
    }
}

impl Bounded {
    /// Adds one interval's increments: keys with a series add to it; the others, busiest
    /// first, get one while there is room, else add to `other`.
    fn add(&mut self, keys: BTreeMap<SeriesKey, Series>, top: usize) {
        let mut waiting: Vec<(SeriesKey, Series)> = Vec::new();
        for (k, s) in keys {
            match self.series.get_mut(&k) {
                Some(have) => {
                    have.add(s.count, s.time_ns);
                    have.idle = 0;
                }
                None => waiting.push((k, s)),
            }
        }
        waiting.sort_by(|a, b| b.1.count.cmp(&a.1.count).then_with(|| a.0.cmp(&b.0)));
        for (k, s) in waiting {
            if self.series.len() < top {
                self.series.insert(k, s);
            } else {
                self.other.add(s.count, s.time_ns);
            }
        }
    }

    /// One interval passed: idle series age, and long-idle ones give their place up.
    fn age(&mut self) {
        for s in self.series.values_mut() {
            s.idle = s.idle.saturating_add(1);
        }
        self.series.retain(|_, s| s.idle <= EVICT_AFTER);
    }

    /// Every series, `other` last when it counted anything.
    pub fn all(&self) -> impl Iterator<Item = (SeriesKey, &Series)> {
        self.series
            .iter()
            .map(|(k, s)| (k.clone(), s))
            .chain((self.other.count > 0).then(|| (SeriesKey::other(), &self.other)))
    }
}

/// The name serde gives a unit variant (`cloud-hypervisor`, `qemu-name`).
fn serde_name<T: serde::Serialize>(v: &T) -> String {
    serde_json::to_value(v)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

/// The labels of a profile key.
fn series_key(key: &Key, decoder: &Decoder) -> SeriesKey {
    let name = match key {
        Key::Port { port, .. } => decoder.port(*port),
        Key::Mmio { gpa, .. } => decoder.mmio(*gpa),
        Key::Msr { index, .. } => decoder.msr(*index),
        _ => None,
    };
    SeriesKey {
        key: key.key_text(),
        name: name.unwrap_or_default(),
        access: key
            .access()
            .map(|a| a.word().to_string())
            .unwrap_or_default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vmm(pid: u32, name: &str, source: NameSource, uuid: Option<&str>) -> Vmm {
        Vmm {
            pid,
            name: name.into(),
            name_source: source,
            uuid: uuid.map(str::to_string),
            kind: crate::discovery::VmmKind::Qemu,
            threads: Vec::new(),
            kvm_fds: Default::default(),
            fds_readable: true,
        }
    }

    #[test]
    fn a_named_vm_keeps_its_labels_across_restarts_and_an_unnamed_one_is_told_apart() {
        let uuid = "1c7c3e6a-07b0-4f51-9b8e-2d0c4d2c7e11";
        let labels = |v: &Vmm| {
            let mut s = VmState::new(&series_name(v), "qemu", "");
            s.uuid.clone_from(&v.uuid);
            s.labels()
        };
        let want = vec![("vm", "win10".to_string()), ("uuid", uuid.to_string())];
        let win = |pid| vmm(pid, "win10", NameSource::Libvirt, Some(uuid));
        assert_eq!(labels(&win(4242)), want);
        assert_eq!(
            labels(&win(5151)),
            want,
            "a restart (new pid) is the same series"
        );
        let plain = |pid| vmm(pid, "qemu-system-x86_64", NameSource::ProcessTitle, None);
        assert_eq!(labels(&plain(7))[0].1, "qemu-system-x86_64 (pid 7)");
        assert_ne!(
            labels(&plain(7)),
            labels(&plain(8)),
            "two unnamed VMs are two series"
        );
    }

    fn keys(pairs: &[(&str, u64)]) -> BTreeMap<SeriesKey, Series> {
        pairs
            .iter()
            .map(|(k, n)| {
                (
                    SeriesKey {
                        key: k.to_string(),
                        name: String::new(),
                        access: String::new(),
                    },
                    Series {
                        count: *n,
                        time_ns: None,
                        idle: 0,
                    },
                )
            })
            .collect()
    }

    #[test]
    fn the_busiest_keys_get_series_and_keep_them() {
        let mut b = Bounded::default();
        b.add(keys(&[("a", 1), ("b", 50), ("c", 20)]), 2);
        let names: Vec<String> = b.series.keys().map(|k| k.key.clone()).collect();
        assert_eq!(names, ["b", "c"]);
        assert_eq!(b.other.count, 1);
        // `a` becomes the busiest, but b and c keep their series: a adds to other.
        b.add(keys(&[("a", 100), ("b", 1)]), 2);
        assert_eq!(b.series.len(), 2);
        assert_eq!(b.other.count, 101);
        assert_eq!(b.series.values().map(|s| s.count).sum::<u64>(), 71);
        let all: Vec<String> = b.all().map(|(k, _)| k.key).collect();
        assert_eq!(all, ["b", "c", "other"]);
        // Idle series give their place up after EVICT_AFTER intervals.
        for _ in 0..=EVICT_AFTER {
            b.age();
        }
        assert!(b.series.is_empty());
    }
}

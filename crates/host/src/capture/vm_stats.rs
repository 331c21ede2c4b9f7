//! KVM binary statistics of the VMs a capture watches, read at the start and end (or at each
//! `top` interval). What moved becomes one table per capture, `kvm_stats`: a row per counter
//! per VM (`vcpu` empty) and per vCPU, its increment over the window (so the report shows
//! rates). The counters overlap (`exits` includes `io_exits`), so the table is marked
//! `overlapping`. Only plain cumulative counters are kept (not times, peaks, instants or
//! histograms).
//!
//! Our own VMs (the lab's micro-VMs) are read through `KVM_GET_STATS_FD` on copies of their
//! fds. KVM answers that ioctl only in the process that created the VM (EIO elsewhere), so
//! another VMM's VMs are read through statistics fds it holds open itself, copied with
//! `pidfd_getfd` (reading one is not an ioctl); when it holds none, a note says why there
//! are no statistics.

use std::fs::File;
use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::fs::FileExt;

use virtlens_core::decode::{StatType, StatUnit, StatsLayout as Layout};
use virtlens_core::profile::{Key, Row, Table, TableKind, Window};

use crate::discovery::{Vmm, kvm_fds};
use crate::kvm_stats::{Snapshot, StatsFd};

/// A statistics fd: one opened here, or one a VMM opened and we copied.
enum Reader {
    Own(StatsFd),
    Held { file: File, layout: Layout },
}

impl Reader {
    fn held(fd: OwnedFd) -> io::Result<Reader> {
        let file = File::from(fd);
        let bad = |e| io::Error::new(io::ErrorKind::InvalidData, e);
        let mut header = [0u8; Layout::HEADER_LEN];
        file.read_exact_at(&mut header, 0)?;
        let mut bytes = vec![0u8; Layout::prefix_len(&header).map_err(bad)?];
        file.read_exact_at(&mut bytes, 0)?;
        let layout = Layout::parse(&bytes).map_err(bad)?;
        Ok(Reader::Held { file, layout })
    }

    fn layout(&self) -> &Layout {
        match self {
            Reader::Own(s) => s.layout(),
            Reader::Held { layout, .. } => layout,
        }
    }

    fn snapshot(&self) -> io::Result<Snapshot> {
        match self {
            Reader::Own(s) => s.snapshot(),
            Reader::Held { file, layout } => {
                let mut data = vec![0u8; layout.data_len];
                file.read_exact_at(&mut data, u64::from(layout.data_offset))?;
                let values = layout
                    .values(&data)
                    .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
                Ok(Snapshot { values })
            }
        }
    }
}

struct Source {
    pid: u32,
    vcpu: Option<u32>,
    stats: Reader,
}

/// The statistics fds of a set of VMs.
pub(crate) struct StatsSet {
    sources: Vec<Source>,
    /// What could not be opened, and why.
    pub notes: Vec<String>,
}

/// The values of every source at one moment.
pub(crate) struct Snapshots(Vec<Option<Snapshot>>);

/// The vCPU named by a stats id `kvm-<pid>/vcpu-<n>` (`None` for a VM's `kvm-<pid>`).
fn vcpu_of_id(id: &str) -> Option<u32> {
    id.rsplit_once("/vcpu-").and_then(|(_, n)| n.parse().ok())
}

impl StatsSet {
    /// Opens the statistics of every VM and vCPU of `vmms`.
    pub(crate) fn open(vmms: &[&Vmm]) -> StatsSet {
        let mut set = StatsSet {
            sources: Vec::new(),
            notes: Vec::new(),
        };
        let me = std::process::id();
        for v in vmms {
            if !v.fds_readable {
                set.notes.push(format!(
                    "no KVM statistics for {} (pid {}): its fd table cannot be read (needs root)",
                    v.name, v.pid
                ));
                continue;
            }
            let result = if v.pid == me {
                set.open_own(v)
            } else {
                set.open_held(v)
            };
            if let Err(why) = result {
                set.notes.push(format!(
                    "no KVM statistics for {} (pid {}): {why}",
                    v.name, v.pid
                ));
            }
        }
        set
    }

    /// Our own VMs: KVM_GET_STATS_FD on copies of their fds.
    fn open_own(&mut self, v: &Vmm) -> Result<(), String> {
        let fds = v
            .kvm_fds
            .vms
            .first()
            .map(|&fd| (fd, None))
            .into_iter()
            .chain(v.kvm_fds.vcpus.iter().map(|&(fd, n)| (fd, Some(n))));
        for (fd, vcpu) in fds {
            let stats = kvm_fds::take_fd(v.pid, fd)
                .and_then(|own| StatsFd::open(own.as_fd()))
                .map_err(|e| format!("KVM_GET_STATS_FD on its fd {fd} failed: {e}"))?;
            self.sources.push(Source {
                pid: v.pid,
                vcpu,
                stats: Reader::Own(stats),
            });
        }
        Ok(())
    }

    /// Another VMM's VMs: the statistics fds it holds, copied with pidfd_getfd.
    fn open_held(&mut self, v: &Vmm) -> Result<(), String> {
        if v.kvm_fds.stats.is_empty() {
            return Err(
                "KVM answers KVM_GET_STATS_FD only in the process that created the VM (EIO \
                 from here), and the VMM holds no statistics fd of its own (QEMU opens one \
                 while answering `query-stats`)"
                    .into(),
            );
        }
        let mut seen = Vec::new();
        for &fd in &v.kvm_fds.stats {
            let reader = kvm_fds::take_fd(v.pid, fd)
                .and_then(Reader::held)
                .map_err(|e| {
                    format!(
                        "copying its statistics fd {fd} with pidfd_getfd failed: {e} (needs \
                         ptrace rights over the VMM: CAP_SYS_PTRACE, Yama ptrace_scope below 3)"
                    )
                })?;
            let id = reader.layout().id.clone();
            if seen.contains(&id) {
                continue;
            }
            self.sources.push(Source {
                pid: v.pid,
                vcpu: vcpu_of_id(&id),
                stats: reader,
            });
            seen.push(id);
        }
        Ok(())
    }

    /// Whether any statistics could be opened.
    pub(crate) fn is_empty(&self) -> bool {
        self.sources.is_empty()
    }

    /// Every source's values now (`None` where a read failed: the VM is gone).
    pub(crate) fn snapshot(&self) -> Snapshots {
        Snapshots(
            self.sources
                .iter()
                .map(|s| s.stats.snapshot().ok())
                .collect(),
        )
    }

    /// The counters that moved between `before` and `after`, over `window_ns`.
    pub(crate) fn table(
        &self,
        before: &Snapshots,
        after: &Snapshots,
        window_ns: u64,
    ) -> Option<Table> {
        let mut t = Table::new(TableKind::KvmStats);
        t.overlapping = true;
        t.label = Some("KVM binary statistics (KVM_GET_STATS_FD), increments".into());
        t.window = Some(Window {
            start: None,
            end: None,
            duration_ns: Some(window_ns),
            intervals: 0,
        });
        for ((src, b), a) in self.sources.iter().zip(&before.0).zip(&after.0) {
            let (Some(b), Some(a)) = (b, a) else { continue };
            let layout = src.stats.layout();
            for (i, d) in layout.descriptors.iter().enumerate() {
                if d.kind != StatType::Cumulative || d.unit != StatUnit::None || d.size != 1 {
                    continue;
                }
                let (Some(x), Some(y)) = (
                    b.values.get(i).and_then(|v| v.first()),
                    a.values.get(i).and_then(|v| v.first()),
                ) else {
                    continue;
                };
                let delta = y.saturating_sub(*x);
                if delta == 0 {
                    continue;
                }
                let mut row = Row::new(
                    Key::Event {
                        name: d.name.clone(),
                    },
                    delta,
                );
                row.pid = Some(src.pid);
                row.vcpu = src.vcpu;
                t.rows.push(row);
            }
        }
        t.rows
            .sort_by(|a, b| b.count.cmp(&a.count).then_with(|| a.key.cmp(&b.key)));
        (!t.rows.is_empty()).then_some(t)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsRawFd;

    #[test]
    fn statistics_fds_a_process_holds_are_read_like_another_vmms() {
        use virtlens_testkit::{Need, require};
        if !require(&[Need::Kvm, Need::KvmStats]) {
            return;
        }
        let kvm = kvm_ioctls::Kvm::new().unwrap_or_else(|e| panic!("/dev/kvm: {e}"));
        let vm = kvm.create_vm().unwrap_or_else(|e| panic!("create_vm: {e}"));
        let me = std::process::id();
        let vcpu = vm
            .create_vcpu(0)
            .unwrap_or_else(|e| panic!("create_vcpu: {e}"));
        // Hold statistics fds open, as a VMM answering query-stats does. Other tests of this
        // process make and close VMs meanwhile, so only this test's fds are opened and read:
        // another test's could be closed (EBADF) between the listing and the copy.
        let raw = |fd: i32| u32::try_from(fd).unwrap_or(u32::MAX);
        let held: Vec<StatsFd> = [raw(vm.as_raw_fd()), raw(vcpu.as_raw_fd())]
            .into_iter()
            .map(|fd| {
                kvm_fds::take_fd(me, fd)
                    .and_then(|own| StatsFd::open(own.as_fd()))
                    .unwrap_or_else(|e| panic!("KVM_GET_STATS_FD on fd {fd}: {e}"))
            })
            .collect();
        let ours: Vec<u32> = held.iter().map(|h| raw(h.as_fd().as_raw_fd())).collect();
        let Some(mut v) = crate::discovery::probe(me) else {
            panic!("this process holds a VM");
        };
        for fd in &ours {
            assert!(v.kvm_fds.stats.contains(fd), "{fd} in {:?}", v.kvm_fds);
        }
        v.kvm_fds.stats.retain(|fd| ours.contains(fd));
        let mut set = StatsSet {
            sources: Vec::new(),
            notes: Vec::new(),
        };
        set.open_held(&v).unwrap_or_else(|e| panic!("{e}"));
        assert!(set.sources.iter().any(|s| s.vcpu.is_none()));
        assert!(
            set.sources.iter().any(|s| s.vcpu == Some(0)),
            "{:?}",
            v.kvm_fds
        );
        let a = set.snapshot();
        let b = set.snapshot();
        assert!(a.0.iter().chain(&b.0).all(Option::is_some));
    }

    #[test]
    fn stats_ids_name_vcpus() {
        assert_eq!(vcpu_of_id("kvm-1234/vcpu-3"), Some(3));
        assert_eq!(vcpu_of_id("kvm-1234"), None);
    }
}

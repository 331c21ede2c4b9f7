//! KVM binary statistics of a VM or vCPU: `KVM_GET_STATS_FD` on its fd, the layout decoded
//! once (virtlens_core::decode::kvm_stats), then one `pread` of the data block per snapshot.
//! Works on the fds this process owns (the lab's micro-VMs); other VMMs' fds arrive with live
//! capture (pidfd_getfd). The layout's id is `kvm-{tid}` (the thread that created the VM, which
//! for a multi-threaded VMM is not its pid) or `kvm-{tid}/vcpu-{n}`.

#![allow(unsafe_code)]

use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd};
use std::os::unix::fs::FileExt;

use virtlens_core::decode::{StatsError, StatsLayout as Layout};

/// `_IO(KVMIO, 0xce)`.
const KVM_GET_STATS_FD: libc::c_ulong = 0xAECE;

/// An open stats fd with its layout.
#[derive(Debug)]
pub struct StatsFd {
    file: File,
    layout: Layout,
}

/// The values of every statistic at one moment, in layout order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snapshot {
    pub values: Vec<Vec<u64>>,
}

impl std::os::fd::AsFd for StatsFd {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.file.as_fd()
    }
}

impl StatsFd {
    /// Opens the stats of the VM or vCPU whose KVM fd is `kvm_fd`.
    pub fn open(kvm_fd: BorrowedFd<'_>) -> io::Result<StatsFd> {
        // SAFETY: KVM_GET_STATS_FD takes no argument and returns a new fd or -1; `kvm_fd` is a
        // valid open fd for the duration of the call.
        let fd = unsafe { libc::ioctl(kvm_fd.as_raw_fd(), KVM_GET_STATS_FD, 0) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `fd` was just returned by the kernel and is owned by nobody else.
        let file = unsafe { File::from_raw_fd(fd) };
        let mut header = [0u8; Layout::HEADER_LEN];
        file.read_exact_at(&mut header, 0)?;
        let prefix = Layout::prefix_len(&header).map_err(invalid)?;
        let mut bytes = vec![0u8; prefix];
        file.read_exact_at(&mut bytes, 0)?;
        let layout = Layout::parse(&bytes).map_err(invalid)?;
        Ok(StatsFd { file, layout })
    }

    /// The names, units and kinds of the statistics.
    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    /// Reads every value now.
    pub fn snapshot(&self) -> io::Result<Snapshot> {
        let mut data = vec![0u8; self.layout.data_len];
        self.file
            .read_exact_at(&mut data, u64::from(self.layout.data_offset))?;
        let values = self.layout.values(&data).map_err(invalid)?;
        Ok(Snapshot { values })
    }
}

impl Snapshot {
    /// The first value of the statistic called `name`.
    pub fn get(&self, layout: &Layout, name: &str) -> Option<u64> {
        layout
            .index(name)
            .and_then(|i| self.values.get(i))
            .and_then(|v| v.first().copied())
    }

    /// How much each single-valued statistic moved since `earlier`, by name, skipping those
    /// that did not move.
    pub fn moved_since(&self, earlier: &Snapshot, layout: &Layout) -> Vec<(String, i128)> {
        layout
            .descriptors
            .iter()
            .zip(self.values.iter().zip(&earlier.values))
            .filter(|(d, _)| d.size == 1)
            .filter_map(|(d, (now, then))| {
                let delta = i128::from(*now.first()?) - i128::from(*then.first()?);
                (delta != 0).then(|| (d.name.clone(), delta))
            })
            .collect()
    }
}

fn invalid(e: StatsError) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, e)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vm_and_vcpu_stats_of_a_real_vm() {
        use virtlens_testkit::{Need, require};
        if !require(&[Need::Kvm, Need::KvmStats]) {
            return;
        }
        let kvm = kvm_ioctls::Kvm::new().unwrap_or_else(|e| panic!("/dev/kvm: {e}"));
        let vm = kvm.create_vm().unwrap_or_else(|e| panic!("create_vm: {e}"));
        let vcpu = vm
            .create_vcpu(0)
            .unwrap_or_else(|e| panic!("create_vcpu: {e}"));
        // SAFETY: `vm` owns this fd and outlives the borrow.
        let vm_fd = unsafe { BorrowedFd::borrow_raw(vm.as_raw_fd()) };
        // SAFETY: `vcpu` owns this fd and outlives the borrow.
        let vcpu_fd = unsafe { BorrowedFd::borrow_raw(vcpu.as_raw_fd()) };
        let vm_stats = StatsFd::open(vm_fd).unwrap_or_else(|e| panic!("vm stats: {e}"));
        // The id names the thread that created the VM (here the test's thread), not the process.
        // SAFETY: gettid has no preconditions.
        let tid = unsafe { libc::gettid() };
        assert_eq!(vm_stats.layout().id, format!("kvm-{tid}"));
        let vcpu_stats = StatsFd::open(vcpu_fd).unwrap_or_else(|e| panic!("vcpu stats: {e}"));
        assert_eq!(vcpu_stats.layout().id, format!("kvm-{tid}/vcpu-0"));
        let before = vcpu_stats
            .snapshot()
            .unwrap_or_else(|e| panic!("snapshot: {e}"));
        for name in ["exits", "io_exits", "halt_exits", "insn_emulation"] {
            assert!(before.get(vcpu_stats.layout(), name).is_some(), "no {name}");
        }
        let again = vcpu_stats
            .snapshot()
            .unwrap_or_else(|e| panic!("snapshot: {e}"));
        assert!(
            again.moved_since(&before, vcpu_stats.layout()).is_empty(),
            "an idle vCPU moved"
        );
    }
}

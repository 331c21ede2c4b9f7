//! The KVM file descriptors a process holds (`/proc/PID/fd/N` → `anon_inode:kvm-vm`,
//! `anon_inode:kvm-vcpu:N`, and the statistics fds `anon_inode:kvm-vm-stats` /
//! `anon_inode:kvm-vcpu-stats:N` a VMM opened itself), and taking a copy of one from another
//! process with `pidfd_open` + `pidfd_getfd` (needs ptrace rights over it: root, or the same
//! user with a permissive Yama setting), so its KVM binary statistics can be read.
//!
//! KVM answers ioctls on a VM or vCPU fd only in the process that created the VM (another
//! process gets EIO), so a copied VM fd gives statistics only for our own VMs; another
//! VMM's statistics are readable through statistics fds it holds open (reading one is not an
//! ioctl).

#![allow(unsafe_code)]

use std::io;
use std::os::fd::{FromRawFd, OwnedFd};
use std::path::Path;

use serde::Serialize;

/// A process's KVM fds, by fd number.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct KvmFds {
    /// VM fds (`anon_inode:kvm-vm`).
    pub vms: Vec<u32>,
    /// vCPU fds with their vCPU id (`anon_inode:kvm-vcpu:3`).
    pub vcpus: Vec<(u32, u32)>,
    /// Statistics fds the process opened (`anon_inode:kvm-vm-stats`, `…kvm-vcpu-stats`).
    pub stats: Vec<u32>,
}

impl KvmFds {
    pub fn is_empty(&self) -> bool {
        self.vms.is_empty() && self.vcpus.is_empty()
    }
}

/// What a KVM fd is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FdKind {
    Vm,
    Vcpu(u32),
    Stats,
}

/// What an fd link names, if it is a KVM fd.
pub(crate) fn classify(link: &str) -> Option<FdKind> {
    match link.strip_prefix("anon_inode:")? {
        "kvm-vm" => Some(FdKind::Vm),
        "kvm-vm-stats" => Some(FdKind::Stats),
        // `kvm-vcpu-stats:N` on current kernels.
        other if other.starts_with("kvm-vcpu-stats") => Some(FdKind::Stats),
        other => other
            .strip_prefix("kvm-vcpu:")
            .and_then(|n| n.parse().ok())
            .map(FdKind::Vcpu),
    }
}

/// The KVM fds of the process whose `/proc` directory is `proc_pid`; an error when its fd
/// table cannot be read (not root, or the process is gone).
pub(crate) fn kvm_fds(proc_pid: &Path) -> io::Result<KvmFds> {
    let mut out = KvmFds::default();
    for entry in std::fs::read_dir(proc_pid.join("fd"))? {
        let Ok(entry) = entry else { continue };
        let Some(fd) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(link) = std::fs::read_link(entry.path()) else {
            continue;
        };
        match classify(&link.to_string_lossy()) {
            Some(FdKind::Vm) => out.vms.push(fd),
            Some(FdKind::Vcpu(vcpu)) => out.vcpus.push((fd, vcpu)),
            Some(FdKind::Stats) => out.stats.push(fd),
            None => {}
        }
    }
    out.vms.sort_unstable();
    out.stats.sort_unstable();
    out.vcpus.sort_unstable_by_key(|&(_, v)| v);
    Ok(out)
}

/// A copy of fd `fd` of process `pid`, through a pidfd.
pub(crate) fn take_fd(pid: u32, fd: u32) -> io::Result<OwnedFd> {
    let pid = libc::pid_t::try_from(pid).map_err(|_| io::Error::from_raw_os_error(libc::ESRCH))?;
    let fd = libc::c_int::try_from(fd).map_err(|_| io::Error::from_raw_os_error(libc::EBADF))?;
    // SAFETY: pidfd_open takes a pid and flags and returns a new fd or -1; no memory is passed.
    let pidfd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    if pidfd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: the kernel just returned `pidfd`, a new fd that nothing else owns.
    let pidfd = unsafe { OwnedFd::from_raw_fd(pidfd as libc::c_int) };
    let raw = std::os::fd::AsRawFd::as_raw_fd(&pidfd);
    // SAFETY: pidfd_getfd takes a valid pidfd, a target fd number and flags (0); it returns a
    // new fd or -1, and reads or writes no memory of ours.
    let got = unsafe { libc::syscall(libc::SYS_pidfd_getfd, raw, fd, 0) };
    if got < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: the kernel just returned `got`, a new fd that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(got as libc::c_int) })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fd_links() {
        assert_eq!(classify("anon_inode:kvm-vm"), Some(FdKind::Vm));
        assert_eq!(classify("anon_inode:kvm-vcpu:3"), Some(FdKind::Vcpu(3)));
        assert_eq!(classify("anon_inode:kvm-vcpu-stats:0"), Some(FdKind::Stats));
        assert_eq!(classify("anon_inode:kvm-vm-stats"), Some(FdKind::Stats));
        assert_eq!(classify("anon_inode:[eventfd]"), None);
        assert_eq!(classify("/dev/kvm"), None);
        assert_eq!(classify("anon_inode:kvm-vcpu:x"), None);
    }

    #[test]
    fn own_vm_fds_are_found_and_copied() {
        use virtlens_testkit::{Need, require};
        if !require(&[Need::Kvm]) {
            return;
        }
        let kvm = kvm_ioctls::Kvm::new().unwrap_or_else(|e| panic!("/dev/kvm: {e}"));
        let vm = kvm.create_vm().unwrap_or_else(|e| panic!("create_vm: {e}"));
        let _vcpu = vm
            .create_vcpu(0)
            .unwrap_or_else(|e| panic!("create_vcpu: {e}"));
        let fds = kvm_fds(Path::new("/proc/self")).unwrap_or_default();
        // Other tests of this process make and close VMs meanwhile: look for this one's fd,
        // and copy that one (another test's could be closed between the listing and the copy).
        let own = u32::try_from(std::os::fd::AsRawFd::as_raw_fd(&vm)).unwrap_or(u32::MAX);
        assert!(fds.vms.contains(&own), "{own} in {fds:?}");
        assert!(fds.vcpus.iter().any(|&(_, v)| v == 0), "{fds:?}");
        // pidfd_getfd (Linux 5.6) on this process needs no privilege.
        let copy = take_fd(std::process::id(), own)
            .unwrap_or_else(|e| panic!("pidfd_getfd on this process: {e}"));
        let link = std::fs::read_link(format!(
            "/proc/self/fd/{}",
            std::os::fd::AsRawFd::as_raw_fd(&copy)
        ));
        assert_eq!(
            link.map(|l| l.to_string_lossy().into_owned())
                .ok()
                .as_deref(),
            Some("anon_inode:kvm-vm")
        );
    }
}

//! The unsafe boundary of the BPF aggregation, kept in one place: the bpf(2) commands it uses
//! (create a map, load a program, look up / update / delete / walk map elements, list the
//! loaded programs and maps, attach to a raw tracepoint), perf_event_open(2) of a tracepoint
//! and the two ioctls that attach a program to it and enable it. Every `unsafe` block carries its SAFETY argument;
//! nothing outside this file needs `unsafe`.
//!
//! Memory safety rests on one rule: the kernel reads `key_size` bytes at a key pointer and
//! writes `value_size` bytes (times the possible CPUs for per-CPU maps) at a value pointer,
//! so every element call goes through a [`Map`], which knows those sizes because it made the
//! map, and checks the slices against them before the call.
//!
//! Nothing is pinned: every object lives exactly as long as its fds, so the kernel frees the
//! programs, their perf events and the maps when this process exits, however it exits.

use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};

use super::insn::Insn;

const BPF_MAP_CREATE: libc::c_long = 0;
const BPF_MAP_LOOKUP_ELEM: libc::c_long = 1;
const BPF_MAP_UPDATE_ELEM: libc::c_long = 2;
const BPF_MAP_DELETE_ELEM: libc::c_long = 3;
const BPF_MAP_GET_NEXT_KEY: libc::c_long = 4;
const BPF_PROG_LOAD: libc::c_long = 5;
const BPF_PROG_GET_NEXT_ID: libc::c_long = 11;
const BPF_MAP_GET_NEXT_ID: libc::c_long = 12;
const BPF_PROG_GET_FD_BY_ID: libc::c_long = 13;
const BPF_MAP_GET_FD_BY_ID: libc::c_long = 14;
const BPF_OBJ_GET_INFO_BY_FD: libc::c_long = 15;
const BPF_RAW_TRACEPOINT_OPEN: libc::c_long = 17;
const BPF_ENABLE_STATS: libc::c_long = 32;

const BPF_PROG_TYPE_TRACEPOINT: u32 = 5;
const BPF_PROG_TYPE_RAW_TRACEPOINT: u32 = 17;
/// `BPF_OBJ_NAME_LEN`: names are at most 15 bytes and a NUL.
pub(super) const NAME_LEN: usize = 16;

const PERF_TYPE_TRACEPOINT: u32 = 2;
const PERF_FLAG_FD_CLOEXEC: libc::c_ulong = 8;
/// `_IO('$', 0)`.
const PERF_EVENT_IOC_ENABLE: libc::c_ulong = 0x2400;
/// `_IOW('$', 8, __u32)`.
const PERF_EVENT_IOC_SET_BPF: libc::c_ulong = 0x4004_2408;

/// A zeroed `union bpf_attr` (or `perf_event_attr`) large enough for every command used here;
/// the kernel accepts a larger buffer when the bytes it does not know are zero.
#[repr(C, align(8))]
struct Attr([u8; 128]);

impl Attr {
    fn new() -> Attr {
        Attr([0; 128])
    }
    fn u32_at(&mut self, off: usize, v: u32) {
        self.0[off..off + 4].copy_from_slice(&v.to_ne_bytes());
    }
    fn u64_at(&mut self, off: usize, v: u64) {
        self.0[off..off + 8].copy_from_slice(&v.to_ne_bytes());
    }
    fn read_u32(&self, off: usize) -> u32 {
        let mut b = [0u8; 4];
        b.copy_from_slice(&self.0[off..off + 4]);
        u32::from_ne_bytes(b)
    }
    fn name_at(&mut self, off: usize, name: &str) {
        let n = name.len().min(NAME_LEN - 1);
        self.0[off..off + n].copy_from_slice(&name.as_bytes()[..n]);
    }
}

/// bpf(2) with `attr`, whose pointers (if any) the caller has made valid for the command.
fn bpf(cmd: libc::c_long, attr: &mut Attr) -> io::Result<libc::c_long> {
    // SAFETY: `attr` is a live, writable, 8-aligned buffer of the size passed. Every pointer
    // stored in it by the functions of this module points at a live buffer whose length was
    // checked against what the kernel reads or writes for `cmd` (see each caller).
    let rc = unsafe {
        libc::syscall(
            libc::SYS_bpf,
            cmd,
            attr.0.as_mut_ptr(),
            attr.0.len() as libc::c_uint,
        )
    };
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(rc)
    }
}

/// Wraps a new fd returned by the kernel.
fn owned(rc: libc::c_long) -> io::Result<OwnedFd> {
    let fd = RawFd::try_from(rc).map_err(|_| io::Error::other("the kernel returned a bad fd"))?;
    // SAFETY: `fd` was just returned by a successful syscall that creates a new fd, so this
    // process owns it and nothing else closes it.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// A BPF map this process made, with the sizes the kernel uses for its elements.
#[derive(Debug)]
pub(crate) struct Map {
    fd: OwnedFd,
    key_size: usize,
    /// Bytes of one value as the kernel copies it out (per-CPU: every possible CPU's).
    value_len: usize,
}

impl Map {
    /// Creates a map (`map_type` of `enum bpf_map_type`); `cpus` is the number of possible
    /// CPUs for per-CPU map types, else 1.
    pub(crate) fn create(
        map_type: u32,
        key_size: u32,
        value_size: u32,
        max_entries: u32,
        cpus: usize,
        name: &str,
    ) -> io::Result<Map> {
        let mut a = Attr::new();
        a.u32_at(0, map_type);
        a.u32_at(4, key_size);
        a.u32_at(8, value_size);
        a.u32_at(12, max_entries);
        a.name_at(28, name);
        let fd = owned(bpf(BPF_MAP_CREATE, &mut a)?)?;
        let per_value = if cpus > 1 {
            (value_size as usize).div_ceil(8) * 8
        } else {
            value_size as usize
        };
        Ok(Map {
            fd,
            key_size: key_size as usize,
            value_len: per_value * cpus.max(1),
        })
    }

    /// The map's fd, for `ld_imm64` in a program.
    pub(crate) fn raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    /// Bytes of a value as [`Map::lookup`] returns it.
    pub(crate) fn value_len(&self) -> usize {
        self.value_len
    }

    fn check(&self, key: &[u8], value: Option<usize>) -> io::Result<()> {
        if key.len() != self.key_size || value.is_some_and(|v| v != self.value_len) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "map element of {} key bytes and {:?} value bytes, the map has {} and {}",
                    key.len(),
                    value,
                    self.key_size,
                    self.value_len
                ),
            ));
        }
        Ok(())
    }

    fn elem_attr(&self, key: &[u8], value: u64, flags: u64) -> Attr {
        let mut a = Attr::new();
        a.u32_at(0, self.fd.as_raw_fd() as u32);
        a.u64_at(8, key.as_ptr() as u64);
        a.u64_at(16, value);
        a.u64_at(24, flags);
        a
    }

    /// Reads the value of `key` into `value`; `false` when there is no such key.
    pub(crate) fn lookup(&self, key: &[u8], value: &mut [u8]) -> io::Result<bool> {
        self.check(key, Some(value.len()))?;
        // The kernel reads key_size bytes at key and writes value_len bytes at value: both
        // lengths were checked above.
        let mut a = self.elem_attr(key, value.as_mut_ptr() as u64, 0);
        match bpf(BPF_MAP_LOOKUP_ELEM, &mut a) {
            Ok(_) => Ok(true),
            Err(e) if e.raw_os_error() == Some(libc::ENOENT) => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Writes `value` (the whole value: per-CPU maps take every CPU's) under `key`.
    pub(crate) fn update(&self, key: &[u8], value: &[u8]) -> io::Result<()> {
        self.check(key, Some(value.len()))?;
        // The kernel reads key_size bytes at key and value_len bytes at value, both checked.
        let mut a = self.elem_attr(key, value.as_ptr() as u64, 0);
        bpf(BPF_MAP_UPDATE_ELEM, &mut a).map(|_| ())
    }

    /// Deletes `key`; `false` when it was not there.
    pub(crate) fn delete(&self, key: &[u8]) -> io::Result<bool> {
        self.check(key, None)?;
        let mut a = self.elem_attr(key, 0, 0);
        match bpf(BPF_MAP_DELETE_ELEM, &mut a) {
            Ok(_) => Ok(true),
            Err(e) if e.raw_os_error() == Some(libc::ENOENT) => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// The key after `key` (the first with `None`) into `next`; `false` at the end.
    pub(crate) fn next_key(&self, key: Option<&[u8]>, next: &mut [u8]) -> io::Result<bool> {
        self.check(next, None)?;
        if let Some(k) = key {
            self.check(k, None)?;
        }
        let mut a = Attr::new();
        a.u32_at(0, self.fd.as_raw_fd() as u32);
        a.u64_at(8, key.map_or(0, |k| k.as_ptr() as u64));
        a.u64_at(16, next.as_mut_ptr() as u64);
        match bpf(BPF_MAP_GET_NEXT_KEY, &mut a) {
            Ok(_) => Ok(true),
            Err(e) if e.raw_os_error() == Some(libc::ENOENT) => Ok(false),
            Err(e) => Err(e),
        }
    }
}

/// Loads a tracepoint program (`raw`: a raw tracepoint's, whose context is the tracepoint's
/// arguments). On failure with `log` given, the verifier's words are in it.
pub(super) fn load_tracepoint_program(
    insns: &[Insn],
    raw: bool,
    license: &std::ffi::CStr,
    name: &str,
    log: Option<&mut [u8]>,
) -> io::Result<OwnedFd> {
    let code: Vec<u8> = insns.iter().flat_map(Insn::bytes).collect();
    let mut a = Attr::new();
    a.u32_at(
        0,
        if raw {
            BPF_PROG_TYPE_RAW_TRACEPOINT
        } else {
            BPF_PROG_TYPE_TRACEPOINT
        },
    );
    a.u32_at(4, insns.len() as u32);
    a.u64_at(8, code.as_ptr() as u64);
    a.u64_at(16, license.as_ptr() as u64);
    if let Some(log) = log {
        // log_level 1, log_size, log_buf: the kernel writes at most log_size bytes.
        a.u32_at(24, 1);
        a.u32_at(
            28,
            u32::try_from(log.len()).unwrap_or(u32::MAX).min(1 << 24),
        );
        a.u64_at(32, log.as_mut_ptr() as u64);
    }
    a.name_at(48, name);
    owned(bpf(BPF_PROG_LOAD, &mut a)?)
}

/// Which kind of object [`objects`] lists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum ObjectKind {
    Program,
    Map,
}

/// Every loaded program or map as `(id, name)`, walking the kernel's ids (needs
/// CAP_SYS_ADMIN). Objects that go away meanwhile are skipped.
pub(super) fn objects(kind: ObjectKind) -> io::Result<Vec<(u32, String)>> {
    let (next_cmd, fd_cmd, name_off) = match kind {
        ObjectKind::Program => (BPF_PROG_GET_NEXT_ID, BPF_PROG_GET_FD_BY_ID, 64),
        ObjectKind::Map => (BPF_MAP_GET_NEXT_ID, BPF_MAP_GET_FD_BY_ID, 24),
    };
    let mut out = Vec::new();
    let mut id = 0u32;
    loop {
        let mut a = Attr::new();
        a.u32_at(0, id);
        match bpf(next_cmd, &mut a) {
            Ok(_) => id = a.read_u32(4),
            Err(e) if e.raw_os_error() == Some(libc::ENOENT) => break,
            Err(e) => return Err(e),
        }
        let mut a = Attr::new();
        a.u32_at(0, id);
        let fd = match bpf(fd_cmd, &mut a).and_then(owned) {
            Ok(fd) => fd,
            Err(e) if e.raw_os_error() == Some(libc::ENOENT) => continue,
            Err(e) => return Err(e),
        };
        let info = info_of(fd.as_fd())?;
        let raw = &info[name_off..name_off + NAME_LEN];
        let end = raw.iter().position(|&b| b == 0).unwrap_or(NAME_LEN);
        out.push((id, String::from_utf8_lossy(&raw[..end]).into_owned()));
    }
    Ok(out)
}

/// The `bpf_prog_info` / `bpf_map_info` of an object, as bytes (the kernel fills what it
/// knows of the first 256).
fn info_of(fd: BorrowedFd<'_>) -> io::Result<[u8; 256]> {
    let mut info = [0u8; 256];
    let mut a = Attr::new();
    a.u32_at(0, fd.as_raw_fd() as u32);
    // info_len: the kernel writes at most this many bytes at info.
    a.u32_at(4, info.len() as u32);
    a.u64_at(8, info.as_mut_ptr() as u64);
    bpf(BPF_OBJ_GET_INFO_BY_FD, &mut a)?;
    Ok(info)
}

/// How long program `prog` has run, how often, and how often the kernel skipped it
/// (`run_time_ns`, `run_cnt`, `recursion_misses` of its `bpf_prog_info`). The first two stay
/// 0 unless `kernel.bpf_stats_enabled` is 1; the misses are always counted (Linux 5.12; 0
/// before).
pub(super) fn program_runs(prog: BorrowedFd<'_>) -> io::Result<(u64, u64, u64)> {
    let info = info_of(prog)?;
    let at = |off: usize| {
        let mut b = [0u8; 8];
        b.copy_from_slice(&info[off..off + 8]);
        u64::from_ne_bytes(b)
    };
    Ok((at(192), at(200), at(208)))
}

/// Has the kernel count every BPF program's run time while the returned fd is open
/// (`BPF_ENABLE_STATS`, Linux 5.8; closing the fd, by any exit, turns it off again).
pub(super) fn enable_run_time_stats() -> io::Result<OwnedFd> {
    let mut a = Attr::new();
    a.u32_at(0, 0); // BPF_STATS_RUN_TIME
    owned(bpf(BPF_ENABLE_STATS, &mut a)?)
}

/// Attaches raw tracepoint program `prog` to the tracepoint `name` (`kvm_pio`;
/// `BPF_RAW_TRACEPOINT_OPEN`, Linux 4.17, tracepoints of modules since 5.0). The program runs
/// straight from the tracepoint, before and apart from any perf event or ftrace; closing the
/// returned fd detaches it.
pub(super) fn open_raw_tracepoint(
    name: &std::ffi::CStr,
    prog: BorrowedFd<'_>,
) -> io::Result<OwnedFd> {
    let mut a = Attr::new();
    // The kernel reads the NUL-terminated name at this pointer; `name` is a live CStr.
    a.u64_at(0, name.as_ptr() as u64);
    a.u32_at(8, prog.as_raw_fd() as u32);
    owned(bpf(BPF_RAW_TRACEPOINT_OPEN, &mut a)?)
}

/// Opens the tracepoint with id `id` (its `events/SYS/NAME/id`) as a perf event on CPU 0,
/// which is what a BPF program attaches to; the program then runs on every CPU.
pub(super) fn open_tracepoint(id: u64) -> io::Result<OwnedFd> {
    let mut a = Attr::new();
    a.u32_at(0, PERF_TYPE_TRACEPOINT);
    a.u32_at(4, a.0.len() as u32);
    a.u64_at(8, id);
    // SAFETY: `a` is a zeroed perf_event_attr of the size stated in its `size` field; the
    // call creates a new fd and touches no other memory.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_perf_event_open,
            a.0.as_mut_ptr(),
            -1 as libc::pid_t,
            0 as libc::c_int,
            -1 as libc::c_int,
            PERF_FLAG_FD_CLOEXEC,
        )
    };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    owned(rc)
}

/// Attaches program `prog` to the perf event `event` and enables it.
pub(super) fn attach_and_enable(event: BorrowedFd<'_>, prog: BorrowedFd<'_>) -> io::Result<()> {
    // SAFETY: both fds are open (borrowed for the call); SET_BPF takes the program fd as its
    // integer argument and ENABLE takes none. Neither reads or writes our memory.
    let rc = unsafe {
        libc::ioctl(
            event.as_raw_fd(),
            PERF_EVENT_IOC_SET_BPF as _,
            prog.as_raw_fd() as libc::c_ulong,
        )
    };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: as above.
    let rc = unsafe { libc::ioctl(event.as_raw_fd(), PERF_EVENT_IOC_ENABLE as _, 0) };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

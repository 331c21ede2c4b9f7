//! Finding the VMs on this host: every process that holds a KVM VM fd (`anon_inode:kvm-vm`,
//! seen as root) or whose program is a known VMM (QEMU, Firecracker, cloud-hypervisor,
//! crosvm, kvmtool) is a [`Vmm`], named by `names`, with its threads and the vCPU each one
//! runs when its name says (`vcpus`), and its KVM fds (`kvm_fds`) for binary statistics.
//! Reading `/proc` only; a process that vanishes while it is looked at is skipped.

pub(crate) mod kvm_fds;
pub(crate) mod names;
pub(crate) mod vcpus;

use std::path::{Path, PathBuf};

use serde::Serialize;

pub use kvm_fds::KvmFds;
pub use names::{NameSource, VmmKind};

/// Where libvirt keeps the pid files of its QEMU domains.
const LIBVIRT_PIDS: &str = "/run/libvirt/qemu";

/// One VMM process.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Vmm {
    pub pid: u32,
    pub name: String,
    pub name_source: NameSource,
    /// The VM's UUID (QEMU `-uuid`, which libvirt passes), when given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub uuid: Option<String>,
    pub kind: VmmKind,
    pub threads: Vec<VmmThread>,
    pub kvm_fds: KvmFds,
    /// Whether its fd table could be read (root, or our own process).
    pub fds_readable: bool,
}

impl Vmm {
    /// The thread ids of its vCPU threads, when their names say.
    pub fn vcpu_threads(&self) -> impl Iterator<Item = &VmmThread> {
        self.threads.iter().filter(|t| t.vcpu.is_some())
    }
}

/// One thread of a VMM.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct VmmThread {
    pub tid: u32,
    pub comm: String,
    pub vcpu: Option<u32>,
}

/// Every VMM on this host.
pub fn scan() -> Vec<Vmm> {
    scan_at(Path::new("/proc"), Path::new(LIBVIRT_PIDS))
}

/// Every VMM under the proc root `proc` (tests pass a folder).
pub fn scan_at(proc: &Path, libvirt: &Path) -> Vec<Vmm> {
    let Ok(dir) = std::fs::read_dir(proc) else {
        return Vec::new();
    };
    let mut out: Vec<Vmm> = dir
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(|pid| probe_at(proc, libvirt, pid))
        .collect();
    out.sort_by_key(|v| v.pid);
    out
}

/// The VMM with process id `pid`, if that process is one.
pub fn probe(pid: u32) -> Option<Vmm> {
    probe_at(Path::new("/proc"), Path::new(LIBVIRT_PIDS), pid)
}

fn probe_at(proc: &Path, libvirt: &Path, pid: u32) -> Option<Vmm> {
    let dir = proc.join(pid.to_string());
    let cmdline = std::fs::read(dir.join("cmdline")).ok()?;
    let args: Vec<String> = cmdline
        .split(|&b| b == 0)
        .filter(|a| !a.is_empty())
        .map(|a| String::from_utf8_lossy(a).into_owned())
        .collect();
    let comm = read_trim(&dir.join("comm")).unwrap_or_default();
    let title = names::process_title(&args, &comm);
    let kind = match VmmKind::of_program(&title) {
        VmmKind::Other => VmmKind::of_program(&comm),
        k => k,
    };
    let (kvm_fds, fds_readable) = match kvm_fds::kvm_fds(&dir) {
        Ok(f) => (f, true),
        Err(_) => (KvmFds::default(), false),
    };
    if kvm_fds.vms.is_empty() && !kind.is_known() {
        return None;
    }
    let libvirt_name = (kind == VmmKind::Qemu)
        .then(|| names::libvirt_domain(libvirt, pid))
        .flatten();
    let (name, name_source) = names::name_of(kind, &args, &comm, libvirt_name);
    Some(Vmm {
        pid,
        name,
        name_source,
        uuid: (kind == VmmKind::Qemu)
            .then(|| names::qemu_uuid(&args))
            .flatten(),
        kind,
        threads: threads(&dir),
        kvm_fds,
        fds_readable,
    })
}

fn threads(dir: &Path) -> Vec<VmmThread> {
    let Ok(tasks) = std::fs::read_dir(dir.join("task")) else {
        return Vec::new();
    };
    let mut out: Vec<VmmThread> = tasks
        .flatten()
        .filter_map(|e| {
            let tid = e.file_name().to_str()?.parse::<u32>().ok()?;
            let comm = read_trim(&e.path().join("comm"))?;
            Some(VmmThread {
                tid,
                vcpu: vcpus::vcpu_of_thread(&comm),
                comm,
            })
        })
        .collect();
    out.sort_by_key(|t| t.tid);
    out
}

fn read_trim(path: &Path) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()
        .map(|s| s.trim_end_matches('\n').to_string())
}

/// The process (thread group) of thread `tid`, and the thread's name.
pub fn thread_owner(tid: u32) -> Option<(u32, String)> {
    let dir = PathBuf::from(format!("/proc/{tid}"));
    let status = std::fs::read_to_string(dir.join("status")).ok()?;
    let tgid = status
        .lines()
        .find_map(|l| l.strip_prefix("Tgid:"))
        .and_then(|v| v.trim().parse().ok())?;
    let comm = read_trim(&dir.join("comm")).unwrap_or_default();
    Some((tgid, comm))
}

/// The VMMs `--pid`/`--vm` select among `vmms`: by process id, by exact name, else by a
/// unique part of a name. An error lists what there is.
pub fn select<'a>(
    vmms: &'a [Vmm],
    pid: Option<u32>,
    vm: Option<&str>,
) -> Result<Vec<&'a Vmm>, String> {
    let listing = || {
        if vmms.is_empty() {
            "no VMM process is running (or, without root, none could be seen)".to_string()
        } else {
            let all: Vec<String> = vmms
                .iter()
                .map(|v| format!("{} (pid {})", v.name, v.pid))
                .collect();
            format!("running VMs: {}", all.join(", "))
        }
    };
    let mut chosen: Vec<&Vmm> = vmms.iter().collect();
    if let Some(p) = pid {
        chosen.retain(|v| v.pid == p);
        if chosen.is_empty() {
            return Err(format!(
                "process {p} is not a VMM holding a KVM VM; {}",
                listing()
            ));
        }
    }
    if let Some(name) = vm {
        let exact: Vec<&Vmm> = chosen.iter().copied().filter(|v| v.name == name).collect();
        chosen = if exact.is_empty() {
            chosen
                .into_iter()
                .filter(|v| v.name.contains(name))
                .collect()
        } else {
            exact
        };
        match chosen.len() {
            0 => return Err(format!("no VM named `{name}`; {}", listing())),
            1 => {}
            _ => {
                let names: Vec<&str> = chosen.iter().map(|v| v.name.as_str()).collect();
                return Err(format!(
                    "`{name}` names several VMs ({}); give more of the name or --pid",
                    names.join(", ")
                ));
            }
        }
    }
    Ok(chosen)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fake_proc(tag: &str) -> PathBuf {
        let root = std::env::temp_dir().join(format!("virtlens-proc-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let proc_dir = |pid: u32, cmd: &[&str], comm: &str, threads: &[(u32, &str)]| {
            let d = root.join(pid.to_string());
            let _ = std::fs::create_dir_all(d.join("fd"));
            let _ = std::fs::write(d.join("cmdline"), cmd.join("\0") + "\0");
            let _ = std::fs::write(d.join("comm"), format!("{comm}\n"));
            for (tid, name) in threads {
                let t = d.join("task").join(tid.to_string());
                let _ = std::fs::create_dir_all(&t);
                let _ = std::fs::write(t.join("comm"), format!("{name}\n"));
            }
        };
        proc_dir(
            100,
            &[
                "/usr/bin/qemu-system-x86_64",
                "-name",
                "guest=win10,debug-threads=on",
            ],
            "qemu-system-x86",
            &[
                (100, "qemu-system-x86"),
                (105, "CPU 0/KVM"),
                (106, "CPU 1/KVM"),
            ],
        );
        proc_dir(
            200,
            &["/usr/bin/firecracker", "--id", "fc1"],
            "firecracker",
            &[(201, "fc_vcpu 0")],
        );
        proc_dir(300, &["/bin/bash"], "bash", &[(300, "bash")]);
        root
    }

    #[test]
    fn vmms_names_and_vcpu_threads() {
        let root = fake_proc("scan");
        let vmms = scan_at(&root, &root.join("none"));
        let summary: Vec<(u32, &str, VmmKind)> = vmms
            .iter()
            .map(|v| (v.pid, v.name.as_str(), v.kind))
            .collect();
        assert_eq!(
            summary,
            vec![
                (100, "win10", VmmKind::Qemu),
                (200, "fc1", VmmKind::Firecracker)
            ]
        );
        let vcpus: Vec<(u32, Option<u32>)> =
            vmms[0].vcpu_threads().map(|t| (t.tid, t.vcpu)).collect();
        assert_eq!(vcpus, vec![(105, Some(0)), (106, Some(1))]);
        assert_eq!(vmms[1].threads[0].vcpu, Some(0));

        assert_eq!(select(&vmms, None, Some("win")).map(|v| v[0].pid), Ok(100));
        assert_eq!(select(&vmms, Some(200), None).map(|v| v.len()), Ok(1));
        let e = select(&vmms, None, Some("nope")).unwrap_err();
        assert!(e.contains("win10 (pid 100)"), "{e}");
        assert!(select(&vmms, Some(100), Some("fc1")).is_err());
        let _ = std::fs::remove_dir_all(&root);
    }

    #[test]
    fn this_process_is_a_vmm_while_it_holds_a_vm() {
        use virtlens_testkit::{Need, require};
        if !require(&[Need::Kvm]) {
            return;
        }
        let kvm = kvm_ioctls::Kvm::new().unwrap_or_else(|e| panic!("/dev/kvm: {e}"));
        let _vm = kvm.create_vm().unwrap_or_else(|e| panic!("create_vm: {e}"));
        let me = std::process::id();
        let found = probe(me).unwrap_or_else(|| panic!("this process holds a VM"));
        assert!(!found.kvm_fds.vms.is_empty());
        assert!(found.threads.iter().any(|t| t.tid == me));
        assert_eq!(thread_owner(me).map(|(p, _)| p), Some(me));
    }
}

//! Naming a VM from its VMM's command line: QEMU's `-name guest=NAME,…` (libvirt passes the
//! domain name there) or `-name NAME`, Firecracker's `--id ID`, libvirt's pid files
//! (`/run/libvirt/qemu/NAME.pid`), else the process title (`argv[0]`'s file name, or the
//! kernel's `comm`). Pure functions over the strings, so every rule is tested without a VMM.

use std::path::Path;

use serde::Serialize;

/// Which kind of VMM a process is, from its program name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum VmmKind {
    Qemu,
    Firecracker,
    CloudHypervisor,
    Crosvm,
    Kvmtool,
    /// virtlens itself (its lab's micro-VMs) or another program holding a KVM VM.
    Other,
}

impl VmmKind {
    /// The kind of the program called `prog` (`argv[0]`'s file name or comm).
    pub fn of_program(prog: &str) -> VmmKind {
        let p = prog.to_ascii_lowercase();
        if p.starts_with("qemu-system") || p == "qemu-kvm" || p.starts_with("qemu-kvm") {
            VmmKind::Qemu
        } else if p.starts_with("firecracker") {
            VmmKind::Firecracker
        } else if p.starts_with("cloud-hyperviso") {
            VmmKind::CloudHypervisor
        } else if p.starts_with("crosvm") {
            VmmKind::Crosvm
        } else if p == "lkvm" || p == "kvmtool" {
            VmmKind::Kvmtool
        } else {
            VmmKind::Other
        }
    }

    /// Whether a program of this name is a VMM even when its fds cannot be looked at.
    pub fn is_known(self) -> bool {
        self != VmmKind::Other
    }
}

/// Where a VM's name came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum NameSource {
    /// QEMU `-name`.
    QemuName,
    /// A libvirt pid file.
    Libvirt,
    /// Firecracker `--id`.
    FirecrackerId,
    /// The process title.
    ProcessTitle,
}

/// The name given by `-name guest=NAME,…`, `-name NAME,…` or `--name …` (QEMU escapes a
/// comma in a name as `,,`).
pub(crate) fn qemu_name(args: &[String]) -> Option<String> {
    let value = option_value(args, &["-name", "--name"])?;
    let mut parts = Vec::new();
    let mut cur = String::new();
    let mut chars = value.chars().peekable();
    while let Some(c) = chars.next() {
        if c == ',' {
            if chars.peek() == Some(&',') {
                chars.next();
                cur.push(',');
            } else {
                parts.push(std::mem::take(&mut cur));
            }
        } else {
            cur.push(c);
        }
    }
    parts.push(cur);
    let name = parts.iter().enumerate().find_map(|(i, p)| {
        if let Some(n) = p.strip_prefix("guest=") {
            Some(n.to_string())
        } else if i == 0 && !p.contains('=') {
            Some(p.clone())
        } else {
            None
        }
    })?;
    (!name.is_empty()).then_some(name)
}

/// QEMU's `-uuid UUID` (libvirt always passes the domain's), lower case; `None` when absent
/// or not shaped like a UUID (8-4-4-4-12 hex digits).
pub(crate) fn qemu_uuid(args: &[String]) -> Option<String> {
    let v = option_value(args, &["-uuid", "--uuid"])?.to_ascii_lowercase();
    let groups: Vec<&str> = v.split('-').collect();
    let shaped = groups.iter().map(|g| g.len()).eq([8, 4, 4, 4, 12])
        && groups
            .iter()
            .all(|g| g.bytes().all(|b| b.is_ascii_hexdigit()));
    shaped.then_some(v)
}

/// Firecracker's `--id ID` (also `--id=ID`).
pub(crate) fn firecracker_id(args: &[String]) -> Option<String> {
    option_value(args, &["--id"]).filter(|v| !v.is_empty())
}

/// The value after an option given as `OPT VALUE` or `OPT=VALUE`.
fn option_value(args: &[String], opts: &[&str]) -> Option<String> {
    for (i, a) in args.iter().enumerate() {
        for o in opts {
            if a == o {
                return args.get(i + 1).cloned();
            }
            if let Some(v) = a.strip_prefix(o).and_then(|r| r.strip_prefix('=')) {
                return Some(v.to_string());
            }
        }
    }
    None
}

/// The process title: `argv[0]`'s file name, else `comm`.
pub(crate) fn process_title(args: &[String], comm: &str) -> String {
    args.first()
        .and_then(|a| Path::new(a).file_name())
        .map(|n| n.to_string_lossy().into_owned())
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| comm.to_string())
}

/// The libvirt domain whose pid file (in `dir`, e.g. `/run/libvirt/qemu`) holds `pid`.
pub(crate) fn libvirt_domain(dir: &Path, pid: u32) -> Option<String> {
    std::fs::read_dir(dir).ok()?.flatten().find_map(|e| {
        let path = e.path();
        let name = path
            .file_name()?
            .to_str()?
            .strip_suffix(".pid")?
            .to_string();
        let text = std::fs::read_to_string(&path).ok()?;
        (text.trim().parse::<u32>().ok()? == pid).then_some(name)
    })
}

/// The name of a VM and where it came from.
pub(crate) fn name_of(
    kind: VmmKind,
    args: &[String],
    comm: &str,
    libvirt: Option<String>,
) -> (String, NameSource) {
    let from_args = match kind {
        VmmKind::Firecracker => firecracker_id(args).map(|n| (n, NameSource::FirecrackerId)),
        _ => qemu_name(args).map(|n| (n, NameSource::QemuName)),
    };
    from_args
        .or_else(|| libvirt.map(|n| (n, NameSource::Libvirt)))
        .unwrap_or_else(|| (process_title(args, comm), NameSource::ProcessTitle))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_string).collect()
    }

    #[test]
    fn qemu_uuids_as_libvirt_passes_them() {
        let libvirt = args(
            "/usr/bin/qemu-system-x86_64 -name guest=win10 -uuid 1C7C3E6A-07B0-4F51-9B8E-2D0C4D2C7E11 -S",
        );
        assert_eq!(
            qemu_uuid(&libvirt).as_deref(),
            Some("1c7c3e6a-07b0-4f51-9b8e-2d0c4d2c7e11")
        );
        assert_eq!(qemu_uuid(&args("qemu -uuid=not-a-uuid")), None);
        assert_eq!(qemu_uuid(&args("qemu -uuid")), None);
        assert_eq!(qemu_uuid(&args("qemu -m 512")), None);
    }

    #[test]
    fn qemu_names_of_every_spelling() {
        let libvirt = args(
            "/usr/bin/qemu-system-x86_64 -name guest=win10,,pro,debug-threads=on -S -machine q35",
        );
        assert_eq!(qemu_name(&libvirt).as_deref(), Some("win10,pro"));
        assert_eq!(qemu_name(&args("qemu -name db1")).as_deref(), Some("db1"));
        assert_eq!(
            qemu_name(&args("qemu -name db1,process=qemu-db1")).as_deref(),
            Some("db1")
        );
        assert_eq!(qemu_name(&args("qemu --name=web")).as_deref(), Some("web"));
        assert_eq!(qemu_name(&args("qemu -name process=x")), None);
        assert_eq!(qemu_name(&args("qemu -m 512")), None);
        assert_eq!(qemu_name(&args("qemu -name")), None);
    }

    #[test]
    fn other_vmms_and_titles() {
        let fc = args("/usr/bin/firecracker --api-sock /tmp/fc.sock --id vm-42");
        assert_eq!(
            name_of(VmmKind::Firecracker, &fc, "firecracker", None),
            ("vm-42".to_string(), NameSource::FirecrackerId)
        );
        let ch = args("/opt/bin/cloud-hypervisor --kernel vmlinux");
        assert_eq!(
            name_of(VmmKind::CloudHypervisor, &ch, "cloud-hyperviso", None),
            ("cloud-hypervisor".to_string(), NameSource::ProcessTitle)
        );
        assert_eq!(
            name_of(
                VmmKind::Qemu,
                &args("qemu-kvm -m 1"),
                "qemu-kvm",
                Some("dom".into())
            ),
            ("dom".to_string(), NameSource::Libvirt)
        );
        assert_eq!(process_title(&[], "pio_guest"), "pio_guest");
        assert_eq!(VmmKind::of_program("qemu-system-x86_64"), VmmKind::Qemu);
        assert_eq!(
            VmmKind::of_program("cloud-hyperviso"),
            VmmKind::CloudHypervisor
        );
        assert!(!VmmKind::of_program("bash").is_known());
    }

    #[test]
    fn libvirt_pid_files() {
        let dir = std::env::temp_dir().join(format!("virtlens-libvirt-{}", std::process::id()));
        let _ = std::fs::create_dir_all(&dir);
        let _ = std::fs::write(dir.join("win10.pid"), "4242\n");
        let _ = std::fs::write(dir.join("other.xml"), "4242");
        assert_eq!(libvirt_domain(&dir, 4242).as_deref(), Some("win10"));
        assert_eq!(libvirt_domain(&dir, 1), None);
        let _ = std::fs::remove_dir_all(&dir);
    }
}

//! What a capture leaves on disk while it runs, and how any later virtlens command finds and
//! removes it when the capture could not clean up itself (SIGKILL, the OOM killer).
//!
//! Every spool folder and every unfinished capture file is *registered* while it exists: a
//! symbolic link in the runtime folder ([`runtime_dirs`]: `/run/virtlens` for root, else
//! `$XDG_RUNTIME_DIR/virtlens`, else `<tmp>/virtlens-<uid>`) named
//! `<pid>-<start time>-b<boot id>-<n>.<kind>` that points at it. The data stays where it was written (next
//! to the output, on the disk that has room for it: a spool can be gigabytes, too much for a
//! RAM-backed `/run`); the link is what makes it findable from anywhere. [`sweep`], run at the
//! start of every virtlens command, removes what the links of dead processes point at (a
//! process counts as alive only while its pid has the same start time in the same boot, so a
//! reused pid does not keep garbage alive, nor does a dead one get a live capture removed, even
//! in a temporary folder that outlives a reboot), then the links;
//! as root it also removes the tracefs instances of dead virtlens processes: an instance is
//! registered the same way, so a pid that another process has taken since does not keep it.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

use super::error::CaptureError;
use super::tracefs::{Tracefs, euid};

/// What a registration points at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// A spool folder: `.virtlens-spool-…`.
    Spool,
    /// An unfinished capture file: `.NAME.virtlens-part-…`.
    Part,
    /// A tracefs instance: `…/instances/virtlens-…`.
    Instance,
}

impl Kind {
    fn ext(self) -> &'static str {
        match self {
            Kind::Spool => "spool",
            Kind::Part => "part",
            Kind::Instance => "instance",
        }
    }

    fn of_link(name: &str) -> Option<Kind> {
        match name.rsplit_once('.')?.1 {
            "spool" => Some(Kind::Spool),
            "part" => Some(Kind::Part),
            "instance" => Some(Kind::Instance),
            _ => None,
        }
    }

    /// Whether `target` has the name virtlens gives this kind of thing (the sweep removes
    /// nothing else, whatever a link says).
    fn owns(self, target: &Path) -> bool {
        let name = target
            .file_name()
            .map(|n| n.to_string_lossy())
            .unwrap_or_default();
        match self {
            Kind::Spool => name.starts_with(SPOOL_PREFIX),
            Kind::Part => name.starts_with('.') && name.contains(PART_MARK),
            Kind::Instance => {
                name.starts_with(super::tracefs::PREFIX)
                    && target
                        .parent()
                        .and_then(Path::file_name)
                        .is_some_and(|d| d == "instances")
            }
        }
    }
}

/// The name of every spool folder starts so.
pub(crate) const SPOOL_PREFIX: &str = ".virtlens-spool-";
/// The name of every unfinished capture file contains this.
pub(crate) const PART_MARK: &str = ".virtlens-part-";

/// A process, by pid and start time (clock ticks after boot, `/proc/PID/stat` field 22).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Owner {
    pub pid: u32,
    pub start: u64,
}

impl Owner {
    /// This process.
    pub fn me() -> Owner {
        let pid = std::process::id();
        Owner {
            pid,
            start: start_time(pid).unwrap_or(0),
        }
    }

    /// Whether the process still runs (the same one: same pid, same start time).
    pub fn alive(self) -> bool {
        start_time(self.pid) == Some(self.start)
    }

    /// The owner a link name gives (`<pid>-<start>[-b<boot id>]-<n>.<kind>`), and whether it
    /// was registered in this boot (a name without a boot id: assumed so).
    fn parse(link_name: &str) -> Option<(Owner, bool)> {
        let mut parts = link_name.split(['-', '.']);
        let pid = parts.next()?.parse().ok()?;
        let start = parts.next()?.parse().ok()?;
        let this_boot = match parts.next()?.strip_prefix('b') {
            Some(boot) => boot_id().is_some_and(|b| b == boot),
            None => true,
        };
        Some((Owner { pid, start }, this_boot))
    }
}

/// The first 16 hex digits of this boot's id (`/proc/sys/kernel/random/boot_id`).
fn boot_id() -> Option<String> {
    let id = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").ok()?;
    let hex: String = id
        .chars()
        .filter(char::is_ascii_hexdigit)
        .take(16)
        .collect();
    (hex.len() == 16).then_some(hex)
}

/// The start time of process `pid`, from `/proc/PID/stat`.
fn start_time(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) may hold spaces and parentheses: count after the last ')'.
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(19)?.parse().ok()
}

/// A registered spool or unfinished file; the link goes when this is dropped (after the
/// thing itself was removed or renamed into place).
#[derive(Debug)]
pub(crate) struct Registration {
    link: PathBuf,
}

impl Registration {
    /// Registers `target` (absolute, or made so) as a `kind` of this process.
    pub(crate) fn new(kind: Kind, target: &Path) -> Result<Registration, CaptureError> {
        static N: AtomicU32 = AtomicU32::new(0);
        let target = absolute(target);
        let me = Owner::me();
        let n = N.fetch_add(1, Ordering::Relaxed);
        let boot = boot_id().unwrap_or_else(|| "0".repeat(16));
        let name = format!("{}-{}-b{boot}-{n}.{}", me.pid, me.start, kind.ext());
        let mut last = None;
        for dir in runtime_dirs() {
            if let Err(e) = own_dir(&dir) {
                last = Some(CaptureError::io("creating the runtime folder", &dir, e));
                continue;
            }
            let link = dir.join(&name);
            match std::os::unix::fs::symlink(&target, &link) {
                Ok(()) => return Ok(Registration { link }),
                Err(e) => last = Some(CaptureError::io("registering", link, e)),
            }
        }
        Err(last.unwrap_or_else(|| {
            CaptureError::Usage("no runtime folder to register the capture's files in".into())
        }))
    }

    /// The link (the unit tests check where it points).
    #[cfg(test)]
    pub(crate) fn link(&self) -> &Path {
        &self.link
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.link);
    }
}

/// `path` made absolute against the current folder (its folder resolved, so that a link
/// still points at it after the current folder changes).
fn absolute(path: &Path) -> PathBuf {
    let name = path.file_name().map(PathBuf::from).unwrap_or_default();
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    match std::fs::canonicalize(&parent) {
        Ok(p) => p.join(name),
        Err(_) => std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf()),
    }
}

/// Where registrations go, in order of preference.
pub(crate) fn runtime_dirs() -> Vec<PathBuf> {
    let uid = euid();
    let mut dirs = Vec::new();
    if uid == Some(0) {
        dirs.push(PathBuf::from("/run/virtlens"));
    }
    if let Some(x) = std::env::var_os("XDG_RUNTIME_DIR").filter(|x| !x.is_empty()) {
        dirs.push(PathBuf::from(x).join("virtlens"));
    }
    dirs.push(std::env::temp_dir().join(format!("virtlens-{}", uid.unwrap_or(u32::MAX))));
    dirs
}

/// Creates `dir` (mode 0700) when missing; fails when it is not a folder this user owns (a
/// shared temporary folder could hold someone else's).
fn own_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::{DirBuilderExt, MetadataExt};
    match std::fs::DirBuilder::new().mode(0o700).create(dir) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(e),
    }
    let meta = std::fs::symlink_metadata(dir)?;
    if !meta.is_dir() || Some(meta.uid()) != euid() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::PermissionDenied,
            "not a folder of this user",
        ));
    }
    Ok(())
}

/// Removes what dead virtlens processes left: registered spools and unfinished capture
/// files, and (as root) their tracefs instances. Says what it removed or could not; not as
/// root, says which stale instances it sees and how to remove them.
pub fn sweep() -> Vec<String> {
    let mut notes = sweep_files();
    match Tracefs::locate(None) {
        Ok(tfs) => notes.extend(tfs.remove_stale()),
        Err(_) if euid() != Some(0) => notes.extend(super::tracefs::stale_instance_warnings()),
        Err(_) => {}
    }
    notes
}

/// The files part of [`sweep`]: registered spools and unfinished capture files.
pub(crate) fn sweep_files() -> Vec<String> {
    let mut notes = Vec::new();
    for dir in runtime_dirs() {
        if own_dir_exists(&dir) {
            sweep_dir(&dir, &mut notes);
        }
    }
    notes
}

fn own_dir_exists(dir: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    std::fs::symlink_metadata(dir).is_ok_and(|m| m.is_dir() && Some(m.uid()) == euid())
}

fn sweep_dir(dir: &Path, notes: &mut Vec<String>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let (Some((owner, this_boot)), Some(kind)) = (Owner::parse(&name), Kind::of_link(&name))
        else {
            continue;
        };
        if this_boot && owner.alive() {
            continue;
        }
        let link = entry.path();
        if let Ok(target) = std::fs::read_link(&link)
            && kind.owns(&target)
            && std::fs::symlink_metadata(&target).is_ok()
        {
            let removed = match kind {
                Kind::Spool => std::fs::remove_dir_all(&target),
                Kind::Part => std::fs::remove_file(&target),
                Kind::Instance => super::tracefs::remove_instance(&target),
            };
            notes.push(match removed {
                Ok(()) => format!(
                    "removed {} left by virtlens process {}, which is gone",
                    target.display(),
                    owner.pid
                ),
                Err(e) => format!("could not remove {}: {e}", target.display()),
            });
        }
        let _ = std::fs::remove_file(&link);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn owners_by_pid_and_start_time() {
        let me = Owner::me();
        assert!(me.start > 0 && me.alive());
        assert!(
            !Owner {
                start: me.start + 1,
                ..me
            }
            .alive(),
            "a reused pid"
        );
        let link = format!("{}-{}-3.spool", me.pid, me.start);
        assert_eq!(
            Owner::parse(&link),
            Some((me, true)),
            "a name without a boot id"
        );
        assert_eq!(Kind::of_link(&link), Some(Kind::Spool));
        let boot = boot_id().unwrap_or_default();
        assert_eq!(boot.len(), 16);
        let link = format!("{}-{}-b{boot}-3.spool", me.pid, me.start);
        assert_eq!(Owner::parse(&link), Some((me, true)));
        let link = format!("{}-{}-b0123456789abcdef-3.part", me.pid, me.start);
        assert_eq!(
            Owner::parse(&link),
            Some((me, false)),
            "another boot's registration"
        );
        assert_eq!(Owner::parse("x-1-2.part"), None);
        assert_eq!(Kind::of_link("1-2-3.other"), None);
    }

    #[test]
    fn the_sweep_removes_only_what_virtlens_names_and_only_of_dead_owners() {
        let dir = std::env::temp_dir().join(format!("virtlens-sweep-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{e}"));
        let spool = dir.join(".virtlens-spool-1-0");
        let part = dir.join(".cap.parquet.virtlens-part-1-0");
        let other = dir.join("precious");
        for d in [&spool, &other] {
            std::fs::create_dir_all(d).unwrap_or_else(|e| panic!("{e}"));
        }
        std::fs::write(&part, b"x").unwrap_or_else(|e| panic!("{e}"));
        let runtime = dir.join("run");
        std::fs::create_dir_all(&runtime).unwrap_or_else(|e| panic!("{e}"));
        let me = Owner::me();
        let dead = format!("{}-{}", me.pid, me.start + 1);
        let link = |name: &str, to: &Path| {
            std::os::unix::fs::symlink(to, runtime.join(name)).unwrap_or_else(|e| panic!("{e}"))
        };
        link(&format!("{dead}-0.spool"), &spool);
        link(&format!("{dead}-1.part"), &part);
        link(&format!("{dead}-2.spool"), &other);
        let live = dir.join(".virtlens-spool-2-0");
        std::fs::create_dir_all(&live).unwrap_or_else(|e| panic!("{e}"));
        link(&format!("{}-{}-3.spool", me.pid, me.start), &live);
        // This very pid and start time, registered in another boot: not this process.
        let old_boot = dir.join(".virtlens-spool-3-0");
        std::fs::create_dir_all(&old_boot).unwrap_or_else(|e| panic!("{e}"));
        link(
            &format!("{}-{}-b0123456789abcdef-4.spool", me.pid, me.start),
            &old_boot,
        );
        let mut notes = Vec::new();
        sweep_dir(&runtime, &mut notes);
        assert!(!spool.exists() && !part.exists(), "{notes:?}");
        assert!(!old_boot.exists(), "another boot's leftovers go: {notes:?}");
        assert!(
            other.exists(),
            "a link to something else removes only the link"
        );
        assert!(live.exists(), "a live owner's spool stays");
        let left: Vec<_> = std::fs::read_dir(&runtime)
            .unwrap_or_else(|e| panic!("{e}"))
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(left, [format!("{}-{}-3.spool", me.pid, me.start)]);
        assert_eq!(notes.len(), 3, "{notes:?}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}

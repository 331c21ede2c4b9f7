//! tracefs and the capture's own instance (`instances/virtlens-<pid>`): created at start,
//! configured, and always taken down again: [`Instance::close`] on the normal path, `Drop` on
//! every other one (errors, unwinding, a stop by signal that ends the loop). It turns off
//! tracing, disables exactly the events it enabled, clears its filters and removes the
//! instance directory. The global buffer and other tools' instances are never touched;
//! instances of virtlens processes that died without cleaning up (SIGKILL) are removed by the
//! next run ([`Tracefs::remove_stale`]).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

use super::error::CaptureError;

/// Where tracefs is mounted on current and older systems.
const MOUNTS: [&str; 2] = ["/sys/kernel/tracing", "/sys/kernel/debug/tracing"];
/// The prefix of every instance virtlens creates.
pub const PREFIX: &str = "virtlens-";

/// Instances this process created, to name the next one.
static CREATED: AtomicU32 = AtomicU32::new(0);

/// A mounted tracefs that this process may use.
#[derive(Debug, Clone)]
pub struct Tracefs {
    root: PathBuf,
}

impl Tracefs {
    /// The tracefs to use (`explicit`, else the usual mount points), after checking that this
    /// process is root and that tracefs supports instances.
    pub fn locate(explicit: Option<&Path>) -> Result<Tracefs, CaptureError> {
        Self::locate_as(explicit, euid())
    }

    /// [`Tracefs::locate`] for a process of effective user id `euid`.
    fn locate_as(explicit: Option<&Path>, euid: Option<u32>) -> Result<Tracefs, CaptureError> {
        let candidates: Vec<PathBuf> = match explicit {
            Some(p) => vec![p.to_path_buf()],
            None => MOUNTS.iter().map(PathBuf::from).collect(),
        };
        if euid != Some(0) {
            return Err(CaptureError::NotRoot(candidates[0].clone()));
        }
        candidates
            .into_iter()
            .find(|p| p.join("instances").is_dir() && p.join("available_events").is_file())
            .map(|root| Tracefs { root })
            .ok_or(CaptureError::NoTracefs)
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Removes `virtlens-*` instances whose process is gone; says what it removed or could not.
    pub fn remove_stale(&self) -> Vec<String> {
        let mut notes = Vec::new();
        let Ok(dir) = std::fs::read_dir(self.root.join("instances")) else {
            return notes;
        };
        for entry in dir.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let Some(pid) = owner_pid(&name) else {
                continue;
            };
            // Registered instances of dead owners went with the registrations
            // ([`super::leftovers::sweep`], by pid and start time); an unregistered one (an
            // older virtlens) is judged by its pid alone.
            if Path::new(&format!("/proc/{pid}")).exists() {
                continue;
            }
            let path = entry.path();
            match remove_instance(&path) {
                Ok(()) => notes.push(format!(
                    "removed the tracefs instance {name} left by virtlens process {pid}, which is gone"
                )),
                Err(e) => notes.push(format!(
                    "could not remove the stale tracefs instance {name}: {e}"
                )),
            }
        }
        notes
    }
}

/// Turns a left-over instance's tracing and events off and removes it.
pub(crate) fn remove_instance(path: &Path) -> std::io::Result<()> {
    let _ = std::fs::write(path.join("tracing_on"), "0");
    let _ = std::fs::write(path.join("events/enable"), "0");
    std::fs::remove_dir(path)
}

/// Reads a tracefs file whole. Some of them (`events/header_page`) answer only the first
/// read of a file, so it is read with one buffer large enough for all of it.
pub fn read(path: &Path) -> std::io::Result<String> {
    use std::io::Read;
    let mut f = std::fs::File::open(path)?;
    let mut buf = vec![0u8; 1 << 16];
    let mut len = 0;
    loop {
        if len == buf.len() {
            buf.resize(buf.len() * 2, 0);
        }
        match f.read(&mut buf[len..]) {
            Ok(0) => break,
            Ok(n) => len += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    buf.truncate(len);
    Ok(String::from_utf8_lossy(&buf).into_owned())
}

/// The process id in an instance name `virtlens-<pid>` or `virtlens-<pid>-<n>`.
pub fn owner_pid(name: &str) -> Option<u32> {
    let rest = name.strip_prefix(PREFIX)?;
    let (pid, n) = match rest.split_once('-') {
        Some((p, n)) => (p, Some(n)),
        None => (rest, None),
    };
    if n.is_some_and(|n| n.parse::<u32>().is_err()) {
        return None;
    }
    pid.parse().ok()
}

/// This process's effective user id, from /proc/self/status.
pub(crate) fn euid() -> Option<u32> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
}

/// The capture's own tracefs instance; see the module doc.
#[derive(Debug)]
pub struct Instance {
    dir: PathBuf,
    name: String,
    /// `enable` files set to 1, in order.
    enabled: Vec<PathBuf>,
    /// `filter` files written.
    filtered: Vec<PathBuf>,
    closed: bool,
    /// Its registration (see [`super::leftovers`]), dropped after the instance is removed.
    registration: Option<super::leftovers::Registration>,
}

impl Instance {
    /// Creates `instances/virtlens-<pid>` (`…-<n>` for a second one in this process) with
    /// tracing off.
    pub fn create(tfs: &Tracefs) -> Result<Instance, CaptureError> {
        let pid = std::process::id();
        let n = CREATED.fetch_add(1, Ordering::Relaxed);
        let name = if n == 0 {
            format!("{PREFIX}{pid}")
        } else {
            format!("{PREFIX}{pid}-{n}")
        };
        let dir = tfs.root.join("instances").join(&name);
        // Registered first, so that a kill at any point after the instance exists leaves a
        // registration that names its owner by pid and start time.
        let registration =
            super::leftovers::Registration::new(super::leftovers::Kind::Instance, &dir)?;
        std::fs::create_dir(&dir)
            .map_err(|e| CaptureError::io("creating the tracefs instance", &dir, e))?;
        let inst = Instance {
            dir,
            name,
            enabled: Vec::new(),
            filtered: Vec::new(),
            closed: false,
            registration: Some(registration),
        };
        inst.write("tracing_on", "0")?;
        Ok(inst)
    }

    pub fn path(&self) -> &Path {
        &self.dir
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// Writes `value` to the instance's file `rel`.
    pub fn write(&self, rel: &str, value: &str) -> Result<(), CaptureError> {
        let path = self.dir.join(rel);
        std::fs::write(&path, value)
            .map_err(|e| CaptureError::io(format!("writing `{}`", value.trim()), path, e))
    }

    /// Reads the instance's file `rel`.
    pub fn read(&self, rel: &str) -> Result<String, CaptureError> {
        let path = self.dir.join(rel);
        read(&path).map_err(|e| CaptureError::io("reading", path, e))
    }

    /// Enables event `system:name` in this instance.
    pub fn enable(&mut self, system: &str, name: &str) -> Result<(), CaptureError> {
        let rel = format!("events/{system}/{name}/enable");
        self.enabled.push(self.dir.join(&rel));
        self.write(&rel, "1")
    }

    /// Sets the filter of event `system:name` (an empty filter clears it).
    pub fn set_filter(
        &mut self,
        system: &str,
        name: &str,
        filter: &str,
    ) -> Result<(), CaptureError> {
        let rel = format!("events/{system}/{name}/filter");
        let path = self.dir.join(&rel);
        if !self.filtered.contains(&path) {
            self.filtered.push(path);
        }
        self.write(&rel, if filter.is_empty() { "0" } else { filter })
    }

    /// Takes the instance down, reporting the first thing that failed (everything is tried).
    /// Files of the instance (per-CPU pipes) must be closed first.
    pub fn close(mut self) -> Result<(), CaptureError> {
        self.teardown()
    }

    fn teardown(&mut self) -> Result<(), CaptureError> {
        if self.closed {
            return Ok(());
        }
        self.closed = true;
        let mut first: Option<CaptureError> = None;
        let mut note = |r: std::io::Result<()>, what: &str, path: &Path| {
            if let Err(e) = r
                && first.is_none()
            {
                first = Some(CaptureError::io(what, path, e));
            }
        };
        let on = self.dir.join("tracing_on");
        note(std::fs::write(&on, "0"), "turning tracing off", &on);
        for path in self.enabled.iter().rev() {
            note(std::fs::write(path, "0"), "disabling an event", path);
        }
        for path in &self.filtered {
            note(std::fs::write(path, "0"), "clearing a filter", path);
        }
        let removed = std::fs::remove_dir(&self.dir);
        if removed.is_ok() {
            self.registration = None;
        }
        note(removed, "removing the tracefs instance", &self.dir);
        first.map_or(Ok(()), Err)
    }
}

impl Drop for Instance {
    fn drop(&mut self) {
        let _ = self.teardown();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_folder_without_tracefs_or_a_user_without_root_says_what_is_missing() {
        let dir = std::env::temp_dir().join(format!("virtlens-no-tracefs-{}", std::process::id()));
        let _ = std::fs::create_dir_all(&dir);
        let as_root = Tracefs::locate_as(Some(&dir), Some(0)).map(|t| t.root);
        let e = as_root.unwrap_err();
        assert!(matches!(e, CaptureError::NoTracefs), "{e}");
        assert!(
            e.is_usage() && e.to_string().contains("mount -t tracefs"),
            "{e}"
        );
        for user in [Some(1000), None] {
            let e = Tracefs::locate_as(Some(&dir), user)
                .map(|t| t.root)
                .unwrap_err();
            assert!(matches!(e, CaptureError::NotRoot(_)), "{e}");
            assert!(e.is_usage() && e.to_string().contains("needs root"), "{e}");
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn instance_names_and_their_owners() {
        assert_eq!(owner_pid("virtlens-123"), Some(123));
        assert_eq!(owner_pid("virtlens-123-2"), Some(123));
        assert_eq!(owner_pid("virtlens-x"), None);
        assert_eq!(owner_pid("virtlens-12-x"), None);
        assert_eq!(owner_pid("trace-cmd-5"), None);
    }
}

//! tracefs and the capture's own instance (`instances/virtlens-<pid>`): created at start,
//! configured, and always taken down again: [`Instance::close`] on the normal path, `Drop` on
//! every other one (errors, unwinding, a stop by signal that ends the loop). It turns off
//! tracing, disables exactly the events it enabled, clears its filters and removes the
//! instance directory. The global buffer and other tools' instances are never touched;
//! instances of virtlens processes that died without cleaning up (SIGKILL) are removed by the
//! next run ([`Tracefs::remove_stale`]).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use super::error::CaptureError;

/// Where tracefs is mounted on current and older systems.
const MOUNTS: [&str; 2] = ["/sys/kernel/tracing", "/sys/kernel/debug/tracing"];
/// The prefix of every instance virtlens creates.
pub(crate) const PREFIX: &str = "virtlens-";

/// Instances this process created, to name the next one.
static CREATED: AtomicU32 = AtomicU32::new(0);

/// A mounted tracefs that this process may use.
#[derive(Debug, Clone)]
pub(crate) struct Tracefs {
    root: PathBuf,
}

impl Tracefs {
    /// The tracefs to use (`explicit`, else the usual mount points), after checking that this
    /// process is root and that tracefs supports instances.
    pub(crate) fn locate(explicit: Option<&Path>) -> Result<Tracefs, CaptureError> {
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

    pub(crate) fn root(&self) -> &Path {
        &self.root
    }

    /// Removes `virtlens-*` instances whose process is gone; says what it removed or could not.
    pub(crate) fn remove_stale(&self) -> Vec<String> {
        stale_instances(&self.root.join("instances"))
            .into_iter()
            .map(|(path, owner)| {
                let name = path
                    .file_name()
                    .unwrap_or_default()
                    .to_string_lossy()
                    .into_owned();
                match remove_instance(&path) {
                    Ok(()) => format!(
                        "removed the tracefs instance {name} left by virtlens process {}, which \
                         is gone",
                        owner.pid
                    ),
                    Err(e) => format!("could not remove the stale tracefs instance {name}: {e}"),
                }
            })
            .collect()
    }
}

/// The `virtlens-*` instances in `instances` whose owner is gone. Registered instances of dead
/// owners went with the registrations ([`super::leftovers::sweep`]); the name itself carries
/// the owner's start time too, so a pid another process has taken since does not keep the
/// instance. An instance of an older virtlens (pid only) is judged by its pid.
fn stale_instances(instances: &Path) -> Vec<(PathBuf, InstanceOwner)> {
    let Ok(dir) = std::fs::read_dir(instances) else {
        return Vec::new();
    };
    let mut stale: Vec<(PathBuf, InstanceOwner)> = dir
        .flatten()
        .filter_map(|e| {
            let owner = instance_owner(&e.file_name().to_string_lossy())?;
            (!owner.alive()).then(|| (e.path(), owner))
        })
        .collect();
    stale.sort_by(|a, b| a.0.cmp(&b.0));
    stale
}

/// For a process that may not remove tracefs instances (not root): the stale ones it can see
/// (a tracefs mounted with `gid=` for a tracing group), each with how to remove it — they keep
/// tracing, and cost every exit, until someone does. Nothing when it can see none.
pub(crate) fn stale_instance_warnings() -> Vec<String> {
    MOUNTS
        .iter()
        .flat_map(|m| warn_stale(&Path::new(m).join("instances")))
        .collect()
}

fn warn_stale(instances: &Path) -> Vec<String> {
    stale_instances(instances)
        .into_iter()
        .map(|(path, owner)| {
            format!(
                "the tracefs instance {} was left by virtlens process {}, which is gone, and may \
                 still trace (every event it enables costs each exit): run any virtlens command \
                 as root to remove it, or `echo 0 > {p}/tracing_on; rmdir {p}` as root",
                path.file_name().unwrap_or_default().to_string_lossy(),
                owner.pid,
                p = path.display()
            )
        })
        .collect()
}

/// Turns a left-over instance's tracing and events off and removes it.
pub(crate) fn remove_instance(path: &Path) -> std::io::Result<()> {
    let _ = std::fs::write(path.join("tracing_on"), "0");
    let _ = std::fs::write(path.join("events/enable"), "0");
    remove_when_closed(path)
}

/// How long an instance whose files are still open somewhere is waited for.
const CLOSE_PATIENCE: Duration = Duration::from_secs(2);

/// Removes instance directory `dir`. The kernel refuses (`EBUSY`) while any file of the
/// instance is open, and a file this process has closed can stay open a moment longer: a
/// child that another thread is spawning holds a copy of every descriptor from its fork until
/// its exec closes them (seen in the test suite, where tests spawn processes while a capture
/// ends). Nothing signals that moment, so `EBUSY` is tried again, at growing intervals, for up
/// to [`CLOSE_PATIENCE`]; any other error, or `EBUSY` after that, is returned.
fn remove_when_closed(dir: &Path) -> std::io::Result<()> {
    let start = Instant::now();
    let mut wait = Duration::from_millis(1);
    loop {
        match std::fs::remove_dir(dir) {
            Err(e) if e.raw_os_error() == Some(libc::EBUSY) && start.elapsed() < CLOSE_PATIENCE => {
                std::thread::sleep(wait);
                wait = (wait * 2).min(Duration::from_millis(100));
            }
            done => return done,
        }
    }
}

/// Reads a tracefs file whole. Some of them (`events/header_page`) answer only the first
/// read of a file, so it is read with one buffer large enough for all of it.
pub(crate) fn read(path: &Path) -> std::io::Result<String> {
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

/// The owner of an instance, from its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct InstanceOwner {
    pub pid: u32,
    /// The owner's start time (`/proc/PID/stat` field 22), in names since it was added.
    pub start: Option<u64>,
}

impl InstanceOwner {
    /// Whether the owner still runs: the same pid with the same start time (or, for a name
    /// without one, any process of that pid).
    pub(crate) fn alive(self) -> bool {
        match self.start {
            Some(start) => super::leftovers::Owner {
                pid: self.pid,
                start,
            }
            .alive(),
            None => Path::new(&format!("/proc/{}", self.pid)).exists(),
        }
    }
}

/// The owner in an instance name: `virtlens-<pid>-s<start>[-<n>]`, or an older virtlens's
/// `virtlens-<pid>[-<n>]`.
pub(crate) fn instance_owner(name: &str) -> Option<InstanceOwner> {
    let mut parts = name.strip_prefix(PREFIX)?.split('-');
    let pid = parts.next()?.parse().ok()?;
    let mut start = None;
    let mut next = parts.next();
    if let Some(s) = next.and_then(|p| p.strip_prefix('s')) {
        start = Some(s.parse().ok()?);
        next = parts.next();
    }
    if let Some(n) = next {
        n.parse::<u32>().ok()?;
    }
    if parts.next().is_some() {
        return None;
    }
    Some(InstanceOwner { pid, start })
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
pub(crate) struct Instance {
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
    /// Creates `instances/virtlens-<pid>-s<start time>` (`…-<n>` for a second one in this
    /// process) with tracing off: the name says who owns it, whatever pids are reused later.
    pub(crate) fn create(tfs: &Tracefs) -> Result<Instance, CaptureError> {
        let me = super::leftovers::Owner::me();
        let n = CREATED.fetch_add(1, Ordering::Relaxed);
        let name = if n == 0 {
            format!("{PREFIX}{}-s{}", me.pid, me.start)
        } else {
            format!("{PREFIX}{}-s{}-{n}", me.pid, me.start)
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

    pub(crate) fn path(&self) -> &Path {
        &self.dir
    }

    pub(crate) fn name(&self) -> &str {
        &self.name
    }

    /// Writes `value` to the instance's file `rel`.
    pub(crate) fn write(&self, rel: &str, value: &str) -> Result<(), CaptureError> {
        let path = self.dir.join(rel);
        std::fs::write(&path, value)
            .map_err(|e| CaptureError::io(format!("writing `{}`", value.trim()), path, e))
    }

    /// Reads the instance's file `rel`.
    pub(crate) fn read(&self, rel: &str) -> Result<String, CaptureError> {
        let path = self.dir.join(rel);
        read(&path).map_err(|e| CaptureError::io("reading", path, e))
    }

    /// Enables event `system:name` in this instance.
    pub(crate) fn enable(&mut self, system: &str, name: &str) -> Result<(), CaptureError> {
        let rel = format!("events/{system}/{name}/enable");
        self.enabled.push(self.dir.join(&rel));
        self.write(&rel, "1")
    }

    /// Sets the filter of event `system:name` (an empty filter clears it).
    pub(crate) fn set_filter(
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
    pub(crate) fn close(mut self) -> Result<(), CaptureError> {
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
        let removed = remove_when_closed(&self.dir);
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

    /// A file of the instance that another process still holds (as a child that another
    /// thread is spawning holds a copy of every descriptor until its exec) keeps the kernel
    /// from removing the instance: the close waits for it to let go instead of failing with
    /// `EBUSY`.
    #[test]
    fn an_instance_file_held_by_another_process_delays_the_close_not_fails_it() {
        use std::io::Write;
        use std::process::{Command, Stdio};
        if !virtlens_testkit::require(&[
            virtlens_testkit::Need::Root,
            virtlens_testkit::Need::Tracefs,
        ]) {
            return;
        }
        let tfs = Tracefs::locate(None).unwrap_or_else(|e| panic!("{e}"));
        let inst = Instance::create(&tfs).unwrap_or_else(|e| panic!("{e}"));
        let dir = inst.path().to_path_buf();
        let held = std::fs::File::open(dir.join("per_cpu/cpu0/trace_pipe_raw"))
            .unwrap_or_else(|e| panic!("{e}"));
        let (release_read, mut release) = std::io::pipe().unwrap_or_else(|e| panic!("{e}"));
        // The child holds the instance's file (as its stderr, never written) until a byte
        // arrives on its stdin.
        let mut child = Command::new("head")
            .arg("-c1")
            .stdin(release_read)
            .stdout(Stdio::null())
            .stderr(held)
            .spawn()
            .unwrap_or_else(|e| panic!("head: {e}"));
        // This process holds nothing of the instance now; the child still does.
        assert_eq!(
            std::fs::remove_dir(&dir).map_err(|e| e.raw_os_error()),
            Err(Some(libc::EBUSY)),
            "the child's descriptor keeps the instance"
        );
        let closing = std::thread::spawn(move || inst.close());
        release.write_all(b"x").unwrap_or_else(|e| panic!("{e}"));
        let status = child.wait().unwrap_or_else(|e| panic!("{e}"));
        assert!(status.success(), "{status}");
        let closed = closing.join().unwrap_or_else(|_| panic!("close panicked"));
        closed.unwrap_or_else(|e| panic!("{e}"));
        assert!(!dir.exists(), "{} removed", dir.display());
    }

    #[test]
    fn instance_names_and_their_owners() {
        let owner = |pid, start| Some(InstanceOwner { pid, start });
        assert_eq!(instance_owner("virtlens-123-s456"), owner(123, Some(456)));
        assert_eq!(instance_owner("virtlens-123-s456-2"), owner(123, Some(456)));
        assert_eq!(instance_owner("virtlens-123-2"), owner(123, None));
        assert_eq!(instance_owner("virtlens-123-sx"), None);
        assert_eq!(instance_owner("virtlens-123-s4-2-9"), None);
        let me = super::super::leftovers::Owner::me();
        assert!(owner(me.pid, Some(me.start)).is_some_and(|o| o.alive()));
        assert!(
            owner(me.pid, Some(me.start + 1)).is_some_and(|o| !o.alive()),
            "pid reused"
        );
        assert_eq!(instance_owner("virtlens-x"), None);
        assert_eq!(instance_owner("virtlens-12-x"), None);
        assert_eq!(instance_owner("trace-cmd-5"), None);
    }

    #[test]
    fn a_run_that_may_not_remove_stale_instances_says_which_and_how() {
        // The folder stands for a tracefs `instances` folder this user can read but not change.
        let dir = std::env::temp_dir().join(format!("virtlens-stale-test-{}", std::process::id()));
        let me = super::super::leftovers::Owner::me();
        let stale = format!("virtlens-{}-s{}", me.pid, me.start + 1);
        let live = format!("virtlens-{}-s{}", me.pid, me.start);
        for name in [stale.as_str(), live.as_str(), "trace-cmd-1"] {
            std::fs::create_dir_all(dir.join(name)).unwrap_or_else(|e| panic!("{e}"));
        }
        let notes = warn_stale(&dir);
        let _ = std::fs::remove_dir_all(&dir);
        assert_eq!(notes.len(), 1, "{notes:?}");
        assert!(
            notes[0].contains(&stale) && notes[0].contains("rmdir"),
            "{notes:?}"
        );
    }
}

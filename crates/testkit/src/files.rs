//! Where the tests find the repository's files, and the temporary folders they write to.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

/// The repository's root folder (the workspace's).
pub fn repo_root() -> PathBuf {
    let testkit = Path::new(env!("CARGO_MANIFEST_DIR"));
    match testkit.ancestors().nth(2) {
        Some(root) => root.to_path_buf(),
        None => panic!("{} is not crates/testkit of a workspace", testkit.display()),
    }
}

/// The path of `rel` under the repository's `testdata/`.
pub fn testdata(rel: &str) -> PathBuf {
    repo_root().join("testdata").join(rel)
}

/// Every file under `dir`, recursively, sorted (none when `dir` cannot be read).
pub fn files_under(dir: &Path) -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(&p, out);
            } else {
                out.push(p);
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, &mut out);
    out.sort();
    out
}

/// A new, empty temporary folder, removed with what it holds when dropped. Its name,
/// `virtlens-<tag>-<pid>-<n>`, differs between the tests of a process whatever their tags.
#[derive(Debug)]
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(tag: &str) -> Self {
        static N: AtomicU32 = AtomicU32::new(0);
        let n = N.fetch_add(1, Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("virtlens-{tag}-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        if let Err(e) = std::fs::create_dir_all(&dir) {
            panic!("creating {}: {e}", dir.display());
        }
        Self(dir)
    }

    pub fn path(&self) -> &Path {
        &self.0
    }

    /// The names in the folder, hidden ones included, sorted.
    pub fn names(&self) -> Vec<String> {
        let entries = match std::fs::read_dir(&self.0) {
            Ok(entries) => entries,
            Err(e) => panic!("reading {}: {e}", self.0.display()),
        };
        let mut v: Vec<String> = entries
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The tracefs instance of virtlens process `pid` (`/sys/kernel/tracing/instances/
/// virtlens-<pid>-s<start time>`, `…-<n>` for a later capture of the same process): the one
/// on disk, else the name the first would have (from the process's start time, while it runs).
pub fn tracefs_instance(pid: u32) -> PathBuf {
    let dir = Path::new("/sys/kernel/tracing/instances");
    let prefix = format!("virtlens-{pid}-s");
    let on_disk = std::fs::read_dir(dir).ok().and_then(|entries| {
        entries
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .find(|n| {
                n.strip_prefix(&prefix).is_some_and(|rest| {
                    rest.split('-').count() <= 2
                        && rest
                            .split('-')
                            .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
                })
            })
    });
    let name = on_disk.unwrap_or_else(|| {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let start = stat
            .rfind(')')
            .and_then(|i| stat[i + 1..].split_whitespace().nth(19))
            .unwrap_or("0");
        format!("{prefix}{start}")
    });
    dir.join(name)
}

/// The `pio_guest` example of the build the running test belongs to (next to its `deps/`),
/// built first if it is not there yet.
pub fn pio_guest() -> PathBuf {
    let exe = std::env::current_exe().unwrap_or_default();
    let profile_dir = exe
        .parent()
        .and_then(Path::parent)
        .unwrap_or(Path::new("."))
        .to_path_buf();
    let bin = profile_dir.join("examples").join("pio_guest");
    if !bin.exists() {
        let mut cmd = std::process::Command::new(env!("CARGO"));
        cmd.args(["build", "-p", "virtlens-host", "--example", "pio_guest"]);
        if profile_dir.file_name().is_some_and(|n| n == "release") {
            cmd.arg("--release");
        }
        let status = cmd
            .status()
            .unwrap_or_else(|e| panic!("cannot run cargo: {e}"));
        assert!(status.success(), "building the pio_guest example failed");
    }
    assert!(bin.exists(), "no example at {}", bin.display());
    bin
}

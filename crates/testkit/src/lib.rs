//! What a test needs from the machine (root, /dev/kvm, tracefs, perf, …), checked in one place.
//!
//! A test calls [`require`] with its needs before it does anything. When a need is missing:
//! - if the environment variable `VIRTLENS_REQUIRE` names it (`.ci/run` sets
//!   `VIRTLENS_REQUIRE=kvm,tracefs,root,perf,duckdb,…`, or `all`), the test **fails** with the
//!   reason: CI must not pass a test it did not run;
//! - otherwise the test is skipped: `require` prints `SKIP(<test>): <reason>` and appends one
//!   line to the file named by `VIRTLENS_SKIP_LOG` (when set), so that `.ci/run` can count and
//!   print every skip at the end.
//!
//! Tests never install anything: a missing tool is a missing need, and `.ci/run` installs it.

#![allow(clippy::panic)]

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

/// One thing a test may need from the machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Need {
    /// Effective uid 0.
    Root,
    /// `/dev/kvm` opens read-write and a VM can be created on it.
    Kvm,
    /// tracefs mounted at `/sys/kernel/tracing` with instances and the kvm events.
    Tracefs,
    /// `perf` on PATH and runnable.
    Perf,
    /// Python's `duckdb` module importable by `python3`.
    Duckdb,
    /// Debian's `chromium` (headless browser tests).
    Chromium,
    /// `prometheus` and `promtool` on PATH.
    Prometheus,
    /// The bpf(2) system call works for this process (a map can be created).
    Bpf,
    /// `fio` on PATH.
    Fio,
    /// libvirt's XML → QEMU argv golden files in the directory `VIRTLENS_LIBVIRT_TESTDATA`
    /// names (`/work/shared/tools/libvirt-testdata.sh DIR` fetches them; `.ci/run` does).
    LibvirtTestdata,
}

impl Need {
    /// The name used in `VIRTLENS_REQUIRE`.
    pub fn name(self) -> &'static str {
        match self {
            Need::Root => "root",
            Need::Kvm => "kvm",
            Need::Tracefs => "tracefs",
            Need::Perf => "perf",
            Need::Duckdb => "duckdb",
            Need::Chromium => "chromium",
            Need::Prometheus => "prometheus",
            Need::Bpf => "bpf",
            Need::Fio => "fio",
            Need::LibvirtTestdata => "libvirt-testdata",
        }
    }

    /// `None` when the machine has it, else why not.
    pub fn missing(self) -> Option<String> {
        match self {
            Need::Root => (!is_root()).then(|| "not root".to_string()),
            Need::Kvm => kvm_missing(),
            Need::Tracefs => {
                let base = Path::new("/sys/kernel/tracing");
                if !base.join("instances").is_dir() {
                    Some("tracefs is not mounted at /sys/kernel/tracing".to_string())
                } else if !base.join("events/kvm").is_dir() {
                    Some("tracefs has no kvm events".to_string())
                } else {
                    None
                }
            }
            Need::Perf => runs("perf", &["--version"]),
            Need::Duckdb => runs("python3", &["-c", "import duckdb"]),
            Need::Chromium => runs("chromium", &["--version"]),
            Need::Prometheus => {
                runs("prometheus", &["--version"]).or_else(|| runs("promtool", &["--version"]))
            }
            Need::Bpf => bpf_missing(),
            Need::Fio => runs("fio", &["--version"]),
            Need::LibvirtTestdata => libvirt_testdata_missing(),
        }
    }
}

/// Whether the test may go on: true when every need is met. When one is missing, fails the
/// test if `VIRTLENS_REQUIRE` names it (or says `all`), else records a skip and returns false.
#[track_caller]
pub fn require(needs: &[Need]) -> bool {
    let test = std::thread::current()
        .name()
        .unwrap_or("unnamed test")
        .to_string();
    for &need in needs {
        if let Some(why) = need.missing() {
            if required(need) {
                panic!(
                    "{test}: needs {} ({why}), and VIRTLENS_REQUIRE says this machine must have it",
                    need.name()
                );
            }
            record_skip(&test, need, &why);
            return false;
        }
    }
    true
}

/// Whether `VIRTLENS_REQUIRE` names `need` (or is `all`).
pub fn required(need: Need) -> bool {
    std::env::var("VIRTLENS_REQUIRE").is_ok_and(|v| {
        v.split([',', ' '])
            .map(str::trim)
            .any(|w| w == "all" || w == need.name())
    })
}

fn record_skip(test: &str, need: Need, why: &str) {
    let line = format!("SKIP({test}): needs {}: {why}", need.name());
    println!("{line}");
    let log = std::env::var_os("VIRTLENS_SKIP_LOG");
    if let Some(mut f) = log.and_then(|p| {
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(p)
            .ok()
    }) {
        let _ = writeln!(f, "{line}");
    }
}

fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Uid:"))
                .and_then(|l| l.split_whitespace().nth(1).map(|u| u == "0"))
        })
        .unwrap_or(false)
}

fn kvm_missing() -> Option<String> {
    match std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/kvm")
    {
        Ok(_) => None,
        Err(e) => Some(format!("/dev/kvm: {e}")),
    }
}

fn bpf_missing() -> Option<String> {
    // The kernel's own switch; creating a map needs the bpf crate of the host side, so the
    // cheap check here is that the syscall is configured and we are privileged.
    if !is_root() {
        return Some("bpf needs root (CAP_BPF)".to_string());
    }
    if !Path::new("/proc/sys/kernel/unprivileged_bpf_disabled").exists() {
        return Some("this kernel has no bpf(2)".to_string());
    }
    None
}

fn libvirt_testdata_missing() -> Option<String> {
    let Some(dir) = std::env::var_os("VIRTLENS_LIBVIRT_TESTDATA") else {
        return Some("VIRTLENS_LIBVIRT_TESTDATA is not set".to_string());
    };
    let has_xml = std::fs::read_dir(&dir).ok().is_some_and(|entries| {
        entries
            .filter_map(|e| e.ok())
            .any(|e| e.path().extension().is_some_and(|x| x == "xml"))
    });
    (!has_xml).then(|| format!("{} holds no .xml files", Path::new(&dir).display()))
}

fn runs(cmd: &str, args: &[&str]) -> Option<String> {
    match Command::new(cmd)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
    {
        Ok(s) if s.success() => None,
        Ok(s) => Some(format!("`{cmd} {}` exited with {s}", args.join(" "))),
        Err(e) => Some(format!("`{cmd}` cannot run: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_distinct() {
        let all = [
            Need::Root,
            Need::Kvm,
            Need::Tracefs,
            Need::Perf,
            Need::Duckdb,
            Need::Chromium,
            Need::Prometheus,
            Need::Bpf,
            Need::Fio,
            Need::LibvirtTestdata,
        ];
        let mut names: Vec<_> = all.iter().map(|n| n.name()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), all.len());
    }
}

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
//!
//! [`ready::with_ready_fd`] lets a test wait for a program's readiness line instead of
//! sleeping. [`rerun_without_kvm`] proves the loud failure: it re-runs one test of a test binary in a
//! mount namespace where /dev/kvm is /dev/null.
//!
//! Each crate's integration tests are one test binary, their tests threads of one process:
//! [`shared`], [`exclusive`] and [`in_own_process`] (module [`machine`]) keep apart the tests
//! that must not overlap. [`repo_root`], [`testdata`] and [`TempDir`] are the files every suite
//! uses.

#![allow(clippy::panic)]

pub mod files;
pub mod machine;
pub mod ready;

pub use files::{TempDir, files_under, pio_guest, repo_root, testdata, tracefs_instance};
pub use machine::{Guard, exclusive, in_own_process, shared};

use std::io::Write;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::Path;
use std::process::{Command, Output, Stdio};

/// One thing a test may need from the machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Need {
    /// Effective uid 0.
    Root,
    /// `/dev/kvm` is the KVM device (character device 10:232) and opens read-write.
    Kvm,
    /// KVM's binary statistics (`KVM_GET_STATS_FD`, Linux 5.14) besides [`Need::Kvm`].
    KvmStats,
    /// tracefs mounted at `/sys/kernel/tracing` with instances and the kvm events.
    Tracefs,
    /// `perf` on PATH and runnable.
    Perf,
    /// Python's `duckdb` module importable by `python3`.
    Duckdb,
    /// Python's `mcp` (the Model Context Protocol SDK) and `jsonschema` modules importable by
    /// `python3`.
    Mcp,
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
    /// `qemu-system-x86_64` on PATH (Debian's `qemu-system-x86`).
    Qemu,
    /// `pdftotext` on PATH (Debian's `poppler-utils`): the printed pages' text.
    Pdftotext,
    /// The lab host (`lab/host.sh`): QEMU, busybox, cpio and strip on PATH, and the Debian
    /// kernel and kvm_stat fetched into `target/lab-host` (`lab/host.sh build`; .ci/run does).
    LabHost,
    /// The arm64 lab host (`lab/arm64-host.sh`): qemu-system-aarch64, the arm64 kernel and
    /// busybox in `target/lab-arm64`, and virtlens and the lab guest cross-built for aarch64
    /// (`lab/arm64-host.sh build`; .ci/run does).
    LabArm64,
}

impl Need {
    /// The name used in `VIRTLENS_REQUIRE`.
    pub fn name(self) -> &'static str {
        match self {
            Need::Root => "root",
            Need::Kvm => "kvm",
            Need::KvmStats => "kvm-stats",
            Need::Tracefs => "tracefs",
            Need::Perf => "perf",
            Need::Duckdb => "duckdb",
            Need::Mcp => "mcp",
            Need::Chromium => "chromium",
            Need::Prometheus => "prometheus",
            Need::Bpf => "bpf",
            Need::Fio => "fio",
            Need::LibvirtTestdata => "libvirt-testdata",
            Need::Qemu => "qemu",
            Need::Pdftotext => "pdftotext",
            Need::LabHost => "lab-host",
            Need::LabArm64 => "lab-arm64",
        }
    }

    /// `None` when the machine has it, else why not.
    pub fn missing(self) -> Option<String> {
        match self {
            Need::Root => (!is_root()).then(|| "not root".to_string()),
            Need::Kvm => kvm_missing(),
            Need::KvmStats => kvm_missing().or_else(|| {
                let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").ok()?;
                (kernel_version(&release) < (5, 14)).then(|| {
                    format!(
                        "Linux {} has no KVM_GET_STATS_FD (5.14 and later)",
                        release.trim()
                    )
                })
            }),
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
            Need::Mcp => runs("python3", &["-c", "import mcp, jsonschema"]),
            Need::Chromium => runs("chromium", &["--version"]),
            Need::Prometheus => {
                runs("prometheus", &["--version"]).or_else(|| runs("promtool", &["--version"]))
            }
            Need::Bpf => bpf_missing(),
            Need::Fio => runs("fio", &["--version"]),
            Need::LibvirtTestdata => libvirt_testdata_missing(),
            Need::Qemu => runs("qemu-system-x86_64", &["--version"]),
            Need::Pdftotext => runs("pdftotext", &["-v"]),
            Need::LabHost => lab_host_missing(),
            Need::LabArm64 => lab_arm64_missing(),
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

fn lab_host_missing() -> Option<String> {
    let tools = [
        ("qemu-system-x86_64", &["--version"][..]),
        ("busybox", &["--help"][..]),
        ("cpio", &["--version"][..]),
        ("strip", &["--version"][..]),
    ];
    if let Some(why) = tools.iter().find_map(|(t, a)| runs(t, a)) {
        return Some(why);
    }
    let cache = repo_root().join("target/lab-host");
    ["vmlinuz", "host.gz", "kvm_stat"]
        .iter()
        .find(|f| !cache.join(f).is_file())
        .map(|f| format!("no {f} in {} (run lab/host.sh build)", cache.display()))
}

fn lab_arm64_missing() -> Option<String> {
    if let Some(why) = runs("qemu-system-aarch64", &["--version"]) {
        return Some(why);
    }
    let root = repo_root();
    [
        "target/lab-arm64/vmlinuz",
        "target/lab-arm64/host.gz",
        "target/aarch64-unknown-linux-gnu/release/virtlens",
        "target/arm64-guest/aarch64-unknown-linux-gnu/release/arm64-guest",
    ]
    .iter()
    .find(|f| !root.join(f).is_file())
    .map(|f| format!("no {f} (run lab/arm64-host.sh build)"))
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
    const KVM: (u64, u64) = (10, 232);
    let meta = match std::fs::metadata("/dev/kvm") {
        Ok(m) => m,
        Err(e) => return Some(format!("/dev/kvm: {e}")),
    };
    let dev = (
        meta.rdev() >> 8 & 0xfff,
        (meta.rdev() & 0xff) | (meta.rdev() >> 12 & !0xff),
    );
    if !meta.file_type().is_char_device() || dev != KVM {
        return Some(format!(
            "/dev/kvm is not the KVM device (character device {}:{}, not {}:{})",
            dev.0, dev.1, KVM.0, KVM.1
        ));
    }
    match std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/kvm")
    {
        Ok(_) => None,
        Err(e) => Some(format!("/dev/kvm: {e}")),
    }
}

/// `(major, minor)` of a kernel release such as `6.1.0-18-amd64` (`(0, 0)` when it has none).
pub fn kernel_version(release: &str) -> (u32, u32) {
    let mut parts = release
        .trim()
        .split(|c: char| !c.is_ascii_digit())
        .map(|p| p.parse().unwrap_or(0));
    (parts.next().unwrap_or(0), parts.next().unwrap_or(0))
}

/// Re-runs test `test` of the test binary `binary` in a new mount namespace in which
/// /dev/kvm is /dev/null (needs root and `unshare`), with `VIRTLENS_REQUIRE=kvm` when
/// `require` and without it otherwise, and returns what it did. A test that starts with
/// `require(&[Need::Kvm])` must then fail naming the need, or skip.
pub fn rerun_without_kvm(binary: &Path, test: &str, require: bool) -> Output {
    let mut cmd = Command::new("unshare");
    cmd.args(["--mount", "--propagation", "private", "sh", "-c"])
        .arg("mount --bind /dev/null /dev/kvm && exec \"$@\"")
        .arg("sh")
        .arg(binary)
        .args(["--exact", test, "--nocapture", "--test-threads=1"])
        // The child's skip is this test's evidence, not a skip of the suite.
        .env_remove("VIRTLENS_SKIP_LOG")
        .stdin(Stdio::null());
    if require {
        cmd.env("VIRTLENS_REQUIRE", "kvm");
    } else {
        cmd.env_remove("VIRTLENS_REQUIRE");
    }
    match cmd.output() {
        Ok(out) => out,
        Err(e) => panic!("running {} under unshare: {e}", binary.display()),
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

//! What the CLI tests that capture share: the binary, temporary folders, a micro-VM in a
//! thread named like a QEMU vCPU thread, `virtlens record` started with `--ready-fd` and
//! waited for (never a sleep), signals, and the reading back of captures.
//!
//! Every virtlens command first removes what killed virtlens processes left (tracefs
//! instances, spools, unfinished files): each virtlens run here holds the machine shared
//! (`virtlens_testkit::shared`), and a test that kills one and looks at what it left holds it
//! exclusively.

pub mod scoring;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use serde_json::Value;
use virtlens_host::microvm::{MicroVm, pio_loop};
use virtlens_testkit::Guard;
use virtlens_testkit::ready::{Ready, with_ready_fd};
pub use virtlens_testkit::{TempDir, exclusive, shared};

pub const BIN: &str = env!("CARGO_BIN_EXE_virtlens");
pub const TRACEFS: &str = "/sys/kernel/tracing";

/// The path of `rel` under the repository's `testdata/`.
pub fn data(rel: &str) -> String {
    virtlens_testkit::testdata(rel).display().to_string()
}

/// A micro-VM created now in a thread named `CPU 0/KVM`; `run()` lets it do its writes. It
/// holds the machine shared: a test that counts this process's vCPU threads holds it alone.
pub struct Vcpu {
    go: Arc<Barrier>,
    done: std::thread::JoinHandle<u64>,
    _machine: Guard,
}

impl Vcpu {
    pub fn new(port: u16, writes: u32) -> Vcpu {
        let machine = shared();
        let ready = Arc::new(Barrier::new(2));
        let go = Arc::new(Barrier::new(2));
        let (r, g) = (Arc::clone(&ready), Arc::clone(&go));
        let done = std::thread::Builder::new()
            .name("CPU 0/KVM".into())
            .spawn(move || {
                let mut vm = MicroVm::new(1 << 20).unwrap();
                vm.load_real_mode(&pio_loop(port, writes).unwrap()).unwrap();
                r.wait();
                g.wait();
                vm.run(Duration::from_secs(30)).unwrap().pio_exits
            })
            .unwrap();
        ready.wait();
        Vcpu {
            go,
            done,
            _machine: machine,
        }
    }

    pub fn run(self) -> u64 {
        self.go.wait();
        self.done.join().unwrap()
    }
}

pub fn instance_of(pid: u32) -> PathBuf {
    virtlens_testkit::tracefs_instance(pid)
}

/// A virtlens process of a test; when the test fails before it was waited for, it gets a
/// SIGINT and is waited for, so no failed test leaves a capture running. It holds the machine
/// shared until then.
pub struct Running(Option<Child>, Guard);

impl Running {
    pub fn id(&self) -> u32 {
        self.0.as_ref().map_or(0, Child::id)
    }

    /// The process, to wait for.
    pub fn take(mut self) -> Child {
        self.0.take().unwrap()
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(mut child) = self.0.take() {
            let _ = Command::new("kill")
                .args(["-s", "INT", &child.id().to_string()])
                .status();
            let _ = child.wait();
        }
    }
}

/// Starts `virtlens ARGS… --ready-fd 3` with stdout and stderr piped, not waiting.
pub fn spawn_with_ready(args: &[&str]) -> (Running, Ready) {
    let mut cmd = Command::new(BIN);
    cmd.args(args).args(["--ready-fd", "3"]);
    spawn_command_with_ready(&cmd)
}

/// Starts `cmd` (which runs virtlens with `--ready-fd 3`) with stdout and stderr piped.
pub fn spawn_command_with_ready(cmd: &Command) -> (Running, Ready) {
    let guard = shared();
    let (mut wrapped, ready) = with_ready_fd(cmd);
    let child = wrapped
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    drop(wrapped);
    (Running(Some(child.unwrap()), guard), ready)
}

/// Starts `virtlens ARGS… --ready-fd 3` with stdout and stderr piped, and returns it once it
/// said it is ready (tracing on); panics with its stderr when it exited instead.
pub fn start_ready(args: &[&str]) -> Running {
    // Through `env --default-signal=HUP` (which then runs virtlens in the same process): a
    // test run started under nohup would hand its SIGHUP-ignored disposition on, and virtlens
    // rightly keeps an ignored SIGHUP ignored, so a test's SIGHUP would never stop it.
    let mut cmd = Command::new("env");
    cmd.args(["--default-signal=HUP", BIN])
        .args(args)
        .args(["--ready-fd", "3"]);
    start_command_ready(&cmd)
}

/// [`start_ready`] for a command that runs virtlens with `--ready-fd 3` (under `nohup`, …).
pub fn start_command_ready(cmd: &Command) -> Running {
    let args = cmd
        .get_args()
        .map(|a| a.to_string_lossy())
        .collect::<Vec<_>>();
    let (child, ready) = spawn_command_with_ready(cmd);
    match ready.wait() {
        Ok(line) => {
            assert_eq!(line, "ready");
            child
        }
        Err(why) => {
            let out = child.take().wait_with_output().unwrap();
            panic!(
                "virtlens {args:?} was never ready ({why}): {}\n{}",
                out.status,
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }
}

/// A KVM VM held by this test process, which makes it a VMM that `--pid` selects: a test's
/// capture then records this process's events only, not every KVM event of a busy shared host
/// (which a debug build takes long to merge).
pub fn own_vm() -> MicroVm {
    MicroVm::new(1 << 16).unwrap()
}

/// [`record`] of this process only (hold [`own_vm`] meanwhile).
pub fn record_own(out: &Path, extra: &[&str]) -> Running {
    let me = std::process::id().to_string();
    let mut args = vec!["--pid", me.as_str()];
    args.extend_from_slice(extra);
    record(out, &args)
}

/// `virtlens record -o OUT EXTRA… --ready-fd 3`, ready.
pub fn record(out: &Path, extra: &[&str]) -> Running {
    let out = out.to_string_lossy().into_owned();
    let mut args = vec!["record", "-o", &out, "--buffer-kb", "1024"];
    args.extend_from_slice(extra);
    start_ready(&args)
}

/// Sends signal `name` (`INT`, `QUIT`, `RTMIN`, …) with bash's kill, which knows the names
/// of the real-time signals too.
pub fn signal(child: &Running, name: &str) {
    let status = Command::new("bash")
        .args(["-c", &format!("kill -s SIG{name} {}", child.id())])
        .status()
        .unwrap();
    assert!(status.success(), "kill -s SIG{name}");
}

/// Waits for `child`, which must succeed with nothing on stderr (pipes get no progress).
pub fn finish(child: Running) -> Output {
    let out = child.take().wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "virtlens failed ({}): {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.stderr.is_empty(),
        "no progress output in pipes: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// Waits for `child`, whatever its exit status.
pub fn finish_any(child: Running) -> Output {
    child.take().wait_with_output().unwrap()
}

/// `virtlens ARGS…`, run to its end (without colour, whatever the environment says).
pub fn run(args: &[&str]) -> Output {
    let _g = shared();
    Command::new(BIN)
        .args(args)
        .env("NO_COLOR", "1")
        .output()
        .unwrap_or_else(|e| panic!("cannot run virtlens: {e}"))
}

/// The stdout of `virtlens ARGS…`, which must end with one of `codes`.
pub fn stdout_of(args: &[&str], codes: &[i32]) -> Vec<u8> {
    let out = run(args);
    assert!(
        out.status.code().is_some_and(|c| codes.contains(&c)),
        "{args:?} ended {:?}, expected one of {codes:?}: {}",
        out.status.code(),
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// The JSON document of `virtlens ARGS…`, which must end with one of `codes` (0: nothing at
/// or above `--fail-on`; 1: findings that are).
pub fn json_of(args: &[&str], codes: &[i32]) -> Value {
    let out = stdout_of(args, codes);
    serde_json::from_slice(&out).unwrap_or_else(|e| panic!("{args:?}: not JSON: {e}"))
}

pub fn report_json(file: &Path, extra: &[&str]) -> Value {
    let _g = shared();
    let out = Command::new(BIN)
        .arg("report")
        .arg("--json")
        .args(extra)
        .arg(file)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}: {}",
        file.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The count of port `port` out-accesses by process `pid` in a `report --json`.
pub fn port_count(report: &Value, port: u16, pid: u32) -> u64 {
    let mut n = 0;
    for t in report["tables"].as_array().unwrap() {
        if t["kind"] != "ioport" {
            continue;
        }
        for r in t["rows"].as_array().unwrap() {
            if r["code"] == u64::from(port) && r["access"] == "out" && r["pid"] == pid {
                n += r["count"].as_u64().unwrap_or(0);
            }
        }
    }
    n
}

/// The registrations (runtime-folder links) of virtlens process `pid`.
pub fn registrations_of(pid: u32) -> Vec<PathBuf> {
    let prefix = format!("{pid}-");
    ["/run/virtlens"]
        .iter()
        .filter_map(|d| std::fs::read_dir(d).ok())
        .flat_map(|rd| rd.flatten())
        .filter(|e| e.file_name().to_string_lossy().starts_with(&prefix))
        .map(|e| e.path())
        .collect()
}

/// The spool folders and unfinished capture files of process `pid` in `dir`.
pub fn leftovers_in(dir: &TempDir, pid: u32) -> Vec<String> {
    dir.names()
        .into_iter()
        .filter(|n| {
            n.starts_with(&format!(".virtlens-spool-{pid}-"))
                || n.contains(&format!(".virtlens-part-{pid}-"))
        })
        .collect()
}

/// The `vm` label (`vm="NAME"`) `virtlens serve` gives the VM of process `pid`, read from its
/// `virtlens_vm_info` line in the exposition `text`: the pid is a label of that line only.
pub fn serve_vm_label(text: &str, pid: impl std::fmt::Display) -> Option<String> {
    let pid = format!("pid=\"{pid}\"");
    let line = text
        .lines()
        .find(|l| l.starts_with("virtlens_vm_info{") && l.contains(&pid))?;
    let start = line.find("vm=\"")?;
    let end = line[start + 4..].find('"')?;
    Some(line[start..start + 4 + end + 1].to_string())
}

/// How long a condition may take before the test gives up (a failure, not a timing claim).
const PATIENCE: Duration = Duration::from_secs(90);

/// Waits until `f` gives a value, or fails naming `what`.
pub fn wait_for<T>(what: &str, mut f: impl FnMut() -> Option<T>) -> T {
    let end = Instant::now() + PATIENCE;
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(Instant::now() < end, "gave up waiting for {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// A lab trap kept running by `virtlens lab --replay` (a micro-VM in that process), killed on
/// every exit path of the test.
pub struct Replay(pub std::process::Child);

impl Drop for Replay {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Replay {
    /// Starts `trap` (`SCENARIO/VARIANT`) for at most `seconds`, once its guest runs.
    pub fn start(trap: &str, seconds: u32) -> Replay {
        use std::io::BufRead;
        let mut child = Command::new(BIN)
            .args(["lab", "--replay", trap, "--duration", &seconds.to_string()])
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut first = String::new();
        let stdout = child.stdout.take().unwrap();
        let replay = Replay(child);
        std::io::BufReader::new(stdout)
            .read_line(&mut first)
            .unwrap();
        assert!(
            first.contains("running for"),
            "replay's start line: {first:?}"
        );
        replay
    }

    /// The process holding the guest.
    pub fn pid(&self) -> u32 {
        self.0.id()
    }
}

//! `virtlens serve` against a real Prometheus: a micro-VM in this process makes port exits in
//! phases of known size; after each phase Prometheus (scraping every second) must hold
//! exactly the guest's cumulative count for that VM's port, and the exits per second it
//! computes over a phase must be the phase's writes over Prometheus's own sample times.
//! `promtool check metrics` accepts the exposition. Killing the exporter (SIGKILL) leaves
//! no BPF program or map of it behind.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use virtlens_host::microvm::{MicroVm, pio_loop};
use virtlens_testkit::{Need, TempDir, require};

use crate::common::serve_vm_label;
use crate::common::wait_for;

/// The UUID the QMP test's QEMU is given (`-uuid`, as libvirt passes a domain's): its series
/// carry it.
const QEMU_UUID: &str = "0b6f3d1e-8c2a-4f57-9e1d-3a5c7b9d2e4f";

pub(crate) fn http_get(addr: SocketAddr, path: &str) -> Option<(u16, String)> {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(5)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
    write!(s, "GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n").ok()?;
    let mut raw = String::new();
    s.read_to_string(&mut raw).ok()?;
    let (head, body) = raw.split_once("\r\n\r\n")?;
    let status = head.split_whitespace().nth(1)?.parse().ok()?;
    Some((status, body.to_string()))
}

/// `virtlens serve` on a free loopback port, collecting often, saying where as JSON.
const SERVE: [&str; 6] = [
    "serve",
    "--listen",
    "127.0.0.1:0",
    "--interval",
    "0.25",
    "--json",
];

/// The JSON line `serve --json` prints once it answers.
fn start_line(child: &mut Child) -> serde_json::Value {
    let mut out = child.stdout.take().unwrap();
    let mut line = Vec::new();
    let mut b = [0u8; 1];
    while out.read(&mut b).unwrap_or(0) == 1 && b[0] != b'\n' {
        line.push(b[0]);
    }
    serde_json::from_slice(&line).unwrap_or_else(|e| {
        panic!(
            "serve's start line {:?}: {e}",
            String::from_utf8_lossy(&line)
        )
    })
}

/// Starts `virtlens serve --json` and returns it with its address (read from its start line).
pub(crate) fn start_serve(extra: &[&str]) -> (Child, SocketAddr) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_virtlens"))
        .args(SERVE)
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let v = start_line(&mut child);
    assert_eq!(v["schema"], "virtlens.serve/1");
    let addr = v["listen"].as_str().unwrap().parse().unwrap();
    (child, addr)
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

struct Prometheus {
    child: Child,
    addr: SocketAddr,
    _dir: TempDir,
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start_prometheus(target: SocketAddr) -> Prometheus {
    let dir = TempDir::new("prom");
    let config = dir.0.join("prometheus.yml");
    std::fs::write(
        &config,
        format!(
            "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nscrape_configs:\n  \
             - job_name: virtlens\n    static_configs:\n      - targets: ['{target}']\n"
        ),
    )
    .unwrap();
    let addr: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
    let child = Command::new("prometheus")
        .arg(format!("--config.file={}", config.display()))
        .arg(format!(
            "--storage.tsdb.path={}",
            dir.0.join("data").display()
        ))
        .arg(format!("--web.listen-address={addr}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let p = Prometheus {
        child,
        addr,
        _dir: dir,
    };
    wait_for("Prometheus to be ready", || {
        http_get(addr, "/-/ready").filter(|(s, _)| *s == 200)
    });
    p
}

/// The value of a PromQL instant query with one result, if it has one.
fn query(prom: SocketAddr, promql: &str) -> Option<(f64, f64)> {
    let q: String = promql
        .bytes()
        .map(|b| match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'_' | b'.' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect();
    let (status, body) = http_get(prom, &format!("/api/v1/query?query={q}"))?;
    assert_eq!(status, 200, "{promql}: {body}");
    let v: serde_json::Value = serde_json::from_str(&body).ok()?;
    let r = v["data"]["result"].as_array()?.first()?;
    let t = r["value"][0].as_f64()?;
    let x = r["value"][1].as_str()?.parse().ok()?;
    Some((t, x))
}

#[test]
fn prometheus_sees_exactly_the_port_exits_the_guest_made() {
    if !require(&[
        Need::Root,
        Need::Kvm,
        Need::Bpf,
        Need::Tracefs,
        Need::Prometheus,
    ]) {
        return;
    }
    let _g = virtlens_testkit::shared();
    const PORT: u16 = 0x5e1;
    const PER_PHASE: u32 = 20_000;
    let mut vm = MicroVm::new(1 << 20).unwrap();
    vm.load_real_mode(&pio_loop(PORT, PER_PHASE).unwrap())
        .unwrap();
    let (mut serve, addr) = start_serve(&[]);
    let prom = start_prometheus(addr);
    let me = std::process::id();
    // The series of this process's VM, by the `vm` label the exporter gives it.
    let vm_label = wait_for("the exporter to see this process's VM", || {
        serve_vm_label(&http_get(addr, "/metrics")?.1, me)
    });
    let series = format!("virtlens_pio_exits_total{{{vm_label},port=\"{PORT:#x}\"}}");

    // The exposition passes promtool (classic text, as curl gets it).
    let (status, text) = http_get(addr, "/metrics").unwrap();
    assert_eq!(status, 200);
    let mut check = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    check
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let out = check.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "promtool check metrics: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );

    // Phases: the guest writes, then idles until Prometheus holds exactly the running total.
    let mut plateaus = Vec::new();
    for phase in 1..=3u64 {
        if phase > 1 {
            vm.restart().unwrap();
        }
        let stats = vm.run(Duration::from_secs(60)).unwrap();
        assert_eq!(stats.pio_exits, u64::from(PER_PHASE));
        let total = phase * u64::from(PER_PHASE);
        let (_, v) = wait_for(&format!("Prometheus to scrape {total} exits"), || {
            query(prom.addr, &series).filter(|(_, v)| *v as u64 >= total)
        });
        assert_eq!(v as u64, total, "Prometheus holds the guest's exact count");
        // A sample of this plateau (the guest is idle until the next phase).
        let (_, at) = query(prom.addr, &format!("timestamp({series})")).unwrap();
        plateaus.push((at, total));
    }
    // Exits per second as Prometheus computes them between two plateau samples: its
    // increase over exactly that range, over the range, is the guest's writes of the phase
    // over the same time.
    for w in plateaus.windows(2) {
        let ((s1, n1), (s2, n2)) = (w[0], w[1]);
        let ms = ((s2 - s1) * 1000.0).round() as u64;
        let (_, increase) =
            query(prom.addr, &format!("increase({series}[{ms}ms] @ {s2:.3})")).unwrap();
        let prom_per_s = increase / (ms as f64 / 1000.0);
        let guest_per_s = (n2 - n1) as f64 / (ms as f64 / 1000.0);
        println!(
            "{ms} ms window: Prometheus {prom_per_s:.1} port exits/s, guest {guest_per_s:.1}/s"
        );
        assert!(
            (prom_per_s - guest_per_s).abs() <= 1e-6 * guest_per_s,
            "Prometheus {prom_per_s}/s, the guest {guest_per_s}/s"
        );
    }

    let pid = serve.id();
    serve.kill().unwrap();
    serve.wait().unwrap();
    let left = wait_for("the exporter's BPF objects to be freed", || {
        let l = virtlens_host::bpf::leftovers(pid).unwrap();
        l.is_empty().then_some(l)
    });
    assert!(left.is_empty());
    drop(vm);
}

#[test]
fn killing_the_exporter_at_any_point_leaves_no_bpf_object() {
    if !require(&[Need::Root, Need::Bpf, Need::Tracefs]) {
        return;
    }
    let _g = virtlens_testkit::shared();
    // Killed while starting (any moment before it answers), and while serving.
    for delay in [
        Duration::ZERO,
        Duration::from_millis(30),
        Duration::from_millis(200),
    ] {
        let mut child = Command::new(env!("CARGO_BIN_EXE_virtlens"))
            .args(["serve", "--listen", "127.0.0.1:0", "--json"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(delay);
        let pid = child.id();
        child.kill().unwrap();
        child.wait().unwrap();
        wait_for(
            &format!("the BPF objects of exporter {pid} to be freed"),
            || {
                virtlens_host::bpf::leftovers(pid)
                    .unwrap()
                    .is_empty()
                    .then_some(())
            },
        );
    }
    let (mut child, _) = start_serve(&[]);
    let pid = child.id();
    assert!(
        !virtlens_host::bpf::leftovers(pid).unwrap().is_empty(),
        "a serving exporter has programs and maps"
    );
    child.kill().unwrap();
    child.wait().unwrap();
    wait_for("the serving exporter's BPF objects to be freed", || {
        virtlens_host::bpf::leftovers(pid)
            .unwrap()
            .is_empty()
            .then_some(())
    });
    assert!(
        !virtlens_testkit::tracefs_instance(pid).exists(),
        "the BPF path makes no tracefs instance"
    );
}

/// The exporter's count of port `port` exits of process `pid`, from its /metrics.
fn exported_count(addr: SocketAddr, pid: u32, port: u16) -> u64 {
    let (_, text) = http_get(addr, "/metrics").unwrap_or_default();
    let Some(p) = serve_vm_label(&text, pid) else {
        return 0;
    };
    let k = format!("port=\"{port:#x}\"");
    text.lines()
        .filter(|l| l.starts_with("virtlens_pio_exits_total{") && l.contains(&p) && l.contains(&k))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<u64>().ok())
        .sum()
}

#[test]
fn without_bpf_rights_it_falls_back_to_tracefs_and_counts_the_same() {
    if !require(&[Need::Root, Need::Kvm, Need::Bpf, Need::Tracefs]) {
        return;
    }
    let _g = virtlens_testkit::shared();
    const N: u32 = 900;
    // Not 0x5e7 (capture_cli's `top` VM): this process's writes to the port are counted.
    const PORT: u16 = 0x5ed;
    let mut vm = MicroVm::new(1 << 20).unwrap();
    vm.load_real_mode(&pio_loop(PORT, N).unwrap()).unwrap();
    // Root without CAP_BPF, CAP_PERFMON and CAP_SYS_ADMIN: bpf(2) refuses, tracefs works.
    let mut child = Command::new("setpriv")
        .args(["--bounding-set", "-bpf,-perfmon,-sys_admin", "--"])
        .arg(env!("CARGO_BIN_EXE_virtlens"))
        .args(SERVE)
        .args(["--pid", &std::process::id().to_string()])
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let v = start_line(&mut child);
    assert_eq!(v["source"], "tracefs", "{v}");
    let notes = v["notes"].to_string();
    assert!(
        notes.contains("BPF") && notes.contains("falling back"),
        "{notes}"
    );
    let addr: SocketAddr = v["listen"].as_str().unwrap().parse().unwrap();
    assert_eq!(
        vm.run(Duration::from_secs(30)).unwrap().pio_exits,
        u64::from(N)
    );
    let me = std::process::id();
    let n = wait_for("the tracefs exporter to count the writes", || {
        let n = exported_count(addr, me, PORT);
        (n >= u64::from(N)).then_some(n)
    });
    assert_eq!(n, u64::from(N));

    // SIGKILL leaves its tracefs instance; the next run removes it.
    let pid = child.id();
    child.kill().unwrap();
    child.wait().unwrap();
    let inst = virtlens_testkit::tracefs_instance(pid);
    assert!(
        inst.exists(),
        "a killed process cannot take its instance down"
    );
    let (mut next, _) = start_serve(&["--no-bpf"]);
    assert!(!inst.exists(), "the next run removed the stale instance");
    // A clean stop (SIGTERM) takes the exporter's own instance down.
    let own = virtlens_testkit::tracefs_instance(next.id());
    assert!(own.exists());
    assert!(
        Command::new("kill")
            .args(["-TERM", &next.id().to_string()])
            .status()
            .unwrap()
            .success()
    );
    assert!(next.wait().unwrap().success());
    assert!(!own.exists(), "a clean stop leaves no instance");
    drop(vm);
}

#[test]
fn a_qemu_vm_s_kvm_statistics_come_through_qmp() {
    if !require(&[Need::Root, Need::Kvm, Need::Bpf, Need::Tracefs, Need::Qemu]) {
        return;
    }
    let _g = virtlens_testkit::shared();
    let dir = TempDir::new("qmp");
    let (ours, control) = (dir.0.join("exporter.sock"), dir.0.join("control.sock"));
    // A PC machine, paused before its first instruction; the firmware runs once `cont`inued.
    let qmp = |p: &std::path::Path| format!("unix:{},server=on,wait=off", p.display());
    let mut qemu = Command::new("qemu-system-x86_64")
        .args([
            "-accel",
            "kvm",
            "-M",
            "pc",
            "-m",
            "64",
            "-nodefaults",
            "-display",
            "none",
        ])
        .args([
            "-S",
            "-name",
            "qmp-test,debug-threads=on",
            "-uuid",
            QEMU_UUID,
            "-qmp",
            &qmp(&ours),
            "-qmp",
            &qmp(&control),
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_for("QEMU's QMP sockets", || {
        (ours.exists() && control.exists()).then_some(())
    });
    let (mut serve, addr) = start_serve(&["--qmp", ours.to_str().unwrap()]);
    // Let the exporter read the paused VM's statistics once, then run the firmware.
    wait_for("the exporter to see the QEMU VM", || {
        let (_, text) = http_get(addr, "/metrics")?;
        serve_vm_label(&text, qemu.id()).map(|_| ())
    });
    let mut c = virtlens_host::testing::Qmp::connect(&control).unwrap();
    c.execute("cont", None).unwrap();
    let stat =
        format!("virtlens_kvm_stat_total{{vm=\"qmp-test\",uuid=\"{QEMU_UUID}\",stat=\"exits\"}}");
    let exits: u64 = wait_for("KVM's `exits` statistic through QMP", || {
        let (_, text) = http_get(addr, "/metrics")?;
        text.lines()
            .find(|l| l.starts_with(&stat))
            .and_then(|l| l.rsplit(' ').next()?.parse().ok())
    });
    assert!(exits > 0);
    // Its vCPU thread (`CPU 0/KVM`) has scheduler times.
    let run = format!(
        "virtlens_vcpu_run_seconds_total{{vm=\"qmp-test\",uuid=\"{QEMU_UUID}\",vcpu=\"0\"}}"
    );
    wait_for("vCPU 0's run time", || {
        let (_, text) = http_get(addr, "/metrics")?;
        text.lines().any(|l| l.starts_with(&run)).then_some(())
    });
    serve.kill().unwrap();
    serve.wait().unwrap();
    qemu.kill().unwrap();
    qemu.wait().unwrap();
}

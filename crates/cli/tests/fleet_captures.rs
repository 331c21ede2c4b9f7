//! Captures of many hosts, queried together: a capture kept in the repository (host
//! `alpha`) and one recorded here now (host `beta`), each in its `host=NAME` folder, are
//! read by one DuckDB query over the folder (the query of docs/fleet.md), which must give
//! each host's port writes exactly.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use virtlens_host::microvm::{MicroVm, pio_loop};
use virtlens_testkit::{Need, TempDir, require};

const BIN: &str = env!("CARGO_BIN_EXE_virtlens");

/// Waits until recorder `child` has its kvm events on (its tracefs instance says so).
fn wait_recording(child: &mut Child) {
    let dir = virtlens_testkit::tracefs_instance(child.id());
    let end = Instant::now() + Duration::from_secs(60);
    loop {
        let read = |f: &str| std::fs::read_to_string(dir.join(f)).unwrap_or_default();
        if read("events/kvm/kvm_pio/enable").trim() == "1" && read("tracing_on").trim() == "1" {
            return;
        }
        if let Ok(Some(status)) = child.try_wait() {
            panic!("virtlens record exited early: {status}");
        }
        assert!(
            Instant::now() < end,
            "virtlens record did not start capturing"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn duckdb(sql: &str) -> String {
    let py = format!("import duckdb\nfor r in duckdb.sql({sql:?}).fetchall(): print(*r)");
    let out = Command::new("python3").args(["-c", &py]).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn one_duckdb_query_reads_the_captures_of_two_hosts() {
    if !require(&[Need::Root, Need::Kvm, Need::Tracefs, Need::Duckdb]) {
        return;
    }
    let _g = virtlens_testkit::shared();
    const N: u32 = 1700;
    // Not 0x5f3 (json_schemas' `top` VM): this process's writes to the port are counted.
    const PORT: u16 = 0x5f5;
    let root = TempDir::new("fleet");
    let (alpha, beta) = (root.0.join("host=alpha"), root.0.join("host=beta"));
    std::fs::create_dir_all(&alpha).unwrap();
    std::fs::create_dir_all(&beta).unwrap();
    let kept = virtlens_testkit::testdata("capture/pio-guest-2000.parquet");
    std::fs::copy(&kept, alpha.join("capture.parquet")).unwrap();

    let me = std::process::id();
    let mut vm = MicroVm::new(1 << 20).unwrap();
    vm.load_real_mode(&pio_loop(PORT, N).unwrap()).unwrap();
    let mut rec = Command::new(BIN)
        .args(["record", "--pid", &me.to_string(), "-o"])
        .arg(beta.join("capture.parquet"))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_recording(&mut rec);
    assert_eq!(
        vm.run(Duration::from_secs(30)).unwrap().pio_exits,
        u64::from(N)
    );
    // SIGINT ends the recording cleanly (the events already read are all in the file).
    assert!(
        Command::new("kill")
            .args(["-INT", &rec.id().to_string()])
            .status()
            .unwrap()
            .success()
    );
    let out = rec.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let rows = duckdb(&format!(
        "SELECT host, port, count(*) FROM read_parquet('{}/*/*.parquet', hive_partitioning = true, \
         union_by_name = true) WHERE event = 'kvm_pio' GROUP BY ALL ORDER BY host, port",
        root.0.display()
    ));
    let rows: Vec<&str> = rows.lines().collect();
    assert_eq!(
        rows,
        ["alpha 128 2000", &format!("beta {PORT} {N}")],
        "{rows:?}"
    );
    drop(vm);
}

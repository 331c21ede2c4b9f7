//! `virtlens mcp` driven by a real MCP client: the Python SDK's stdio client runs
//! `tests/mcp/session.py`, which initializes, lists the tools, diagnoses a seed sample (its main
//! finding), lints a sample configuration, reads resources and a prompt, gets tool errors (a
//! missing file, paths out of `--root`, a live tool without `--allow-live`) from a server that
//! keeps answering, and validates every result against docs/schemas; and, started with
//! `--allow-live` beside a guest that polls a serial port, its live tools answer in their
//! schemas and diagnose the trap. Needs `mcp` (Python's `mcp` and `jsonschema`; .ci/run
//! installs them), the live test root, /dev/kvm and tracefs too.

use std::process::Command;
use std::time::Instant;

use virtlens_testkit::{Need, require};

use crate::common::{BIN, Replay, shared};

#[test]
fn a_real_client_session() {
    if !require(&[Need::Mcp]) {
        return;
    }
    let _g = shared();
    let root = virtlens_testkit::repo_root();
    let script = root.join("crates/cli/tests/mcp/session.py");
    let started = Instant::now();
    let out = Command::new("python3")
        .arg(&script)
        .arg(BIN)
        .arg(&root)
        .env("NO_COLOR", "1")
        .output()
        .unwrap_or_else(|e| panic!("cannot run python3 {}: {e}", script.display()));
    let took = started.elapsed();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "the MCP session failed ({:?}):\n{stdout}\n{stderr}",
        out.status
    );
    assert!(stdout.contains("main finding of input 1"), "{stdout}");
    println!("MCP session: {:.2} s", took.as_secs_f64());
}

#[test]
fn the_live_tools_answer_when_allowed() {
    if !require(&[Need::Mcp, Need::Root, Need::Kvm, Need::Tracefs]) {
        return;
    }
    let _g = shared();
    // A guest polling a serial port's line status, kept running for the live tools to see.
    let replay = Replay::start("serial_console/uart_lsr_poll", 120);
    let root = virtlens_testkit::repo_root();
    let out = Command::new("python3")
        .arg(root.join("crates/cli/tests/mcp/session.py"))
        .arg(BIN)
        .arg(&root)
        .arg("--live")
        .arg(replay.pid().to_string())
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "the live MCP session failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("main finding: `io.serial-pio-storm`"),
        "{stdout}"
    );
}

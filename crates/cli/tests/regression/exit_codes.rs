//! Issue 20: no exit code outside 0–3 and no panic, on any input. Every file under `testdata/`
//! (real samples, the reliability reproducers, captures, configs, Parquet, perf.data) goes to
//! every command that reads a file, and so do a few hostile inputs (empty, NULs, random bytes,
//! a BOM alone, a lone `\r`), with and without a forced format.

use std::process::Command;

use crate::common::{BIN, shared};

/// Deterministic bytes (xorshift), so a failure reproduces.
fn noise(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

#[test]
fn every_input_to_every_reading_command_exits_0_to_3_without_a_panic() {
    let _g = shared();
    let dir = virtlens_testkit::TempDir::new("exit-codes");
    let mut inputs = virtlens_testkit::files_under(&virtlens_testkit::testdata(""));
    let hostile: [(&str, Vec<u8>); 5] = [
        ("empty", Vec::new()),
        ("nuls", vec![0; 4096]),
        ("random", noise(64 * 1024, 20)),
        ("bom-only", vec![0xef, 0xbb, 0xbf]),
        ("cr", b"\r".to_vec()),
    ];
    for (name, bytes) in &hostile {
        let p = dir.path().join(name);
        std::fs::write(&p, bytes).unwrap();
        inputs.push(p);
    }
    let commands: [&[&str]; 7] = [
        &["report"],
        &["report", "--format", "trace-text"],
        &["report", "--format", "perf-kvm-stat"],
        &["diagnose"],
        &["counters"],
        &["lint"],
        &["stretch"],
    ];
    let mut bad = Vec::new();
    let mut runs = 0;
    for input in &inputs {
        for args in commands {
            let out = Command::new(BIN).args(args).arg(input).output().unwrap();
            runs += 1;
            let code = out.status.code();
            let stderr = String::from_utf8_lossy(&out.stderr);
            if !matches!(code, Some(0..=3)) || stderr.contains("panicked") {
                bad.push(format!(
                    "{args:?} {}: {code:?} {}",
                    input.display(),
                    stderr.trim()
                ));
            }
        }
    }
    assert!(runs > 2000, "only {runs} runs: is testdata/ there?");
    assert!(
        bad.is_empty(),
        "{} of {runs} runs:\n{}",
        bad.len(),
        bad.join("\n")
    );
}

//! The parallel reader gives the sequential reader's profile, to the last bit: on every trace
//! under `testdata/` the trace reader reads, and on generated traces, cut into blocks at every
//! kind of place (between an exit and its entry, inside a wrapped line, at a line's first or
//! last byte), with any number of workers, the file mapped and read.

use std::io::Write;
use std::path::{Path, PathBuf};

use proptest::prelude::*;

use super::read_file;
use crate::sources::{Format, detect};

/// The profile (or error) as JSON text, so two reads compare whole.
fn outcome(r: crate::error::Result<crate::profile::Profile>) -> String {
    match r {
        Ok(p) => serde_json::to_string(&p).unwrap_or_else(|e| format!("unserialisable: {e}")),
        Err(e) => format!("error: {e}"),
    }
}

fn sequential(bytes: &[u8], name: &str) -> String {
    outcome(super::super::read(bytes, name))
}

/// The parallel reader's outcome, mapped and read: when the two differ, both, so the
/// comparison with the sequential reader fails.
fn parallel(path: &Path, name: &str, workers: usize, block: usize) -> String {
    let read = |map: bool| match std::fs::File::open(path) {
        Ok(f) => outcome(read_file(&f, name, workers, block, map)),
        Err(e) => format!("cannot open: {e}"),
    };
    let (mapped, read) = (read(true), read(false));
    if mapped == read {
        mapped
    } else {
        format!("mapped:\n{mapped}\nread:\n{read}")
    }
}

/// The traces under `testdata/` that are read as trace text (uncompressed).
fn traces() -> Vec<(PathBuf, Vec<u8>)> {
    virtlens_testkit::files_under(&virtlens_testkit::testdata(""))
        .into_iter()
        .filter_map(|p| {
            let bytes = std::fs::read(&p).ok()?;
            let head = &bytes[..bytes.len().min(crate::sources::DETECT_BYTES)];
            (!bytes.is_empty()
                && crate::sources::wrapped::wrapping(head).is_none()
                && detect(head) == Some(Format::TraceText))
            .then_some((p, bytes))
        })
        .collect()
}

#[test]
fn every_real_trace_reads_the_same_in_blocks() {
    let traces = traces();
    assert!(traces.len() >= 10, "only {} traces found", traces.len());
    for (path, bytes) in &traces {
        let name = path.display().to_string();
        let want = sequential(bytes, &name);
        let len = bytes.len();
        let mut blocks = vec![
            len + 1,
            len.div_ceil(2),
            len.div_ceil(3),
            len.div_ceil(7),
            97,
        ];
        // A block boundary at every byte of the first lines.
        if len < 20_000 {
            blocks.push(1);
        }
        for block in blocks {
            for workers in [1, 2, 3, 7] {
                let got = parallel(path, &name, workers, block.max(1));
                assert!(
                    got == want,
                    "{name}: {workers} workers, blocks of {block} bytes differ from the \
                     sequential read"
                );
            }
        }
    }
}

/// A small `perf script` / ftrace trace of several vCPU threads, with the lines that carry
/// state from one line to the next: wrapped lines, continuations, blank lines, comments.
fn generated(seed: u64, lines: usize) -> String {
    let mut x = seed | 1;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let reasons = [
        "HLT",
        "MSR_WRITE",
        "EPT_MISCONFIG",
        "IO_INSTRUCTION",
        "EXTERNAL_INTERRUPT",
    ];
    let mut out = String::from("# perf script\n#\n");
    let mut ts: u64 = 7_000_000_000_000;
    let mut open = [false; 4];
    for i in 0..lines {
        ts += next() % 3_000;
        let v = (next() % 4) as usize;
        let tid = 4100 + v;
        let stamp = format!("{}.{:06}", ts / 1_000_000_000, ts % 1_000_000_000 / 1000);
        let head = format!("       CPU {v}/KVM {tid:>6} [{:03}] {stamp}:", v * 2);
        match next() % 40 {
            0 => out.push('\n'),
            1 => out.push_str("#\n"),
            2 => {
                // Wrapped after the timestamp by a mailer.
                out.push_str(&format!("{head}\n  kvm:kvm_entry: vcpu {v}, rip 0x10\n"));
                open[v] = false;
            }
            3 => out.push_str("    nrip: 0xffffffffffbbe119 int_ctl: 0x01020000\n"),
            4 => out.push_str(&format!(
                "{head} kvm:kvm_pio: pio_write at 0x3f8 size 1 count 1\n"
            )),
            5 => out.push_str(&format!(
                "{head} kvm:kvm_mmio: mmio read len 4 gpa 0xfed000f0 val 0x0\n"
            )),
            6 => out.push_str(&format!("{head} kvm:kvm_msr: msr_write 6e0 = 0x1\n")),
            7 => out.push_str(&format!("{head} kvm:kvm_fpu: load\n")),
            // The scheduler's events, which the timeline reads per vCPU thread.
            8 => out.push_str(&format!(
                "{head} sched:sched_switch: prev_comm=CPU {v}/KVM prev_pid={tid} prev_prio=120 \
                 prev_state={} ==> next_comm=kworker/1:0 next_pid=77 next_prio=120\n",
                if next() % 2 == 0 { "R+" } else { "S" }
            )),
            9 => out.push_str(&format!(
                "{head} sched:sched_wakeup: comm=CPU {v}/KVM pid={tid} prio=120 target_cpu=001\n"
            )),
            _ if open[v] => {
                out.push_str(&format!("{head} kvm:kvm_entry: vcpu {v}, rip 0x10\n"));
                open[v] = false;
            }
            _ => {
                let r = reasons[(next() % reasons.len() as u64) as usize];
                let rip = 0xffff_ffff_8100_0000u64 + (next() % 64) * 4;
                out.push_str(&format!(
                    "{head} kvm:kvm_exit: vcpu {v} reason {r} rip {rip:#x} info1 0x0 info2 0x0\n"
                ));
                open[v] = true;
            }
        }
        if i % 500 == 499 {
            out.push_str("CPU:2 [LOST 12 EVENTS]\n");
        }
    }
    out
}

fn temp_file(tag: &str, bytes: &[u8]) -> PathBuf {
    let p = std::env::temp_dir().join(format!(
        "virtlens-parallel-{}-{tag}.txt",
        std::process::id()
    ));
    if let Ok(mut f) = std::fs::File::create(&p) {
        let _ = f.write_all(bytes);
    }
    p
}

#[test]
fn generated_traces_read_the_same_at_every_block_size() {
    let text = generated(42, 3_000);
    let path = temp_file("sizes", text.as_bytes());
    let want = sequential(text.as_bytes(), "gen");
    assert!(want.contains("vmexit"), "{want}");
    // The vCPU threads' scheduling is in the timeline (its blocks must replay in order too).
    assert!(
        want.contains("\"running_ns\""),
        "no scheduler states: {want}"
    );
    for block in [50, 131, 1000, 4096, text.len() / 7 + 1, text.len()] {
        for workers in [1, 2, 3, 7] {
            assert!(
                parallel(&path, "gen", workers, block) == want,
                "{workers} workers, blocks of {block} bytes"
            );
        }
    }
    // A boundary at every byte (a block per byte) of a shorter trace.
    let short = generated(7, 300);
    let short_path = temp_file("short", short.as_bytes());
    let want_short = sequential(short.as_bytes(), "gen");
    for block in [1, 2, 3] {
        assert!(
            parallel(&short_path, "gen", 3, block) == want_short,
            "blocks of {block} bytes"
        );
    }
    let _ = std::fs::remove_file(&short_path);
    // Cut off without a final newline: the same note on the same line.
    let cut = &text.as_bytes()[..text.len() - 20];
    let cut_path = temp_file("cut", cut);
    assert_eq!(parallel(&cut_path, "gen", 3, 777), sequential(cut, "gen"));
    let _ = std::fs::remove_file(&path);
    let _ = std::fs::remove_file(&cut_path);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// Blocks of any size cut the trace at random places; the profile does not change.
    #[test]
    fn random_cuts(seed in 1u64..u64::MAX, block in 1usize..20_000, workers in 1usize..6) {
        let text = generated(seed, 600);
        let path = temp_file(&format!("prop-{seed}"), text.as_bytes());
        let want = sequential(text.as_bytes(), "gen");
        let got = parallel(&path, "gen", workers, block);
        let _ = std::fs::remove_file(&path);
        prop_assert!(got == want, "{} workers, blocks of {} bytes", workers, block);
    }
}

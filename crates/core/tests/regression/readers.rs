//! The text readers: no row lost without a note (a bad row never takes the rows after it),
//! partial tables said to be partial, sums that saturate instead of wrapping, a cap on one
//! line, and the shapes authors paste (trimmed columns, label lines, elisions, bare event
//! lines, lines a mailer wrapped). Inputs are real: the samples under `testdata/`, damaged or
//! cut the way a hostile user did it, and excerpts of public mails (`testdata/readers/README.md`
//! and `testdata/cases/*/case.json` give their sources).
//!
//! `partial` is checked through the profile's JSON so that these tests build on the code before
//! the fix too, and fail there.

use virtlens_core::analysis::compare;
use virtlens_core::decode::Decoder;
use virtlens_core::profile::{Key, Profile};
use virtlens_core::sources::{self, Format};

fn data(rel: &str) -> Vec<u8> {
    let path = virtlens_testkit::testdata(rel);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn read(bytes: &[u8], name: &str, format: Format) -> Profile {
    sources::read_bytes(bytes, name, Some(format)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn partial(p: &Profile, table: usize) -> bool {
    let v = serde_json::to_value(p).unwrap();
    v["tables"][table]["partial"] == serde_json::Value::Bool(true)
}

fn names(p: &Profile, table: usize) -> Vec<String> {
    p.tables[table]
        .rows
        .iter()
        .map(|r| r.key.key_text())
        .collect()
}

fn count_of(p: &Profile, name: &str) -> Option<u64> {
    p.tables[0]
        .rows
        .iter()
        .find(|r| r.key.key_text() == name)
        .map(|r| r.count)
}

/// A note on `line` that says `what`.
fn noted(p: &Profile, line: usize, what: &str) -> bool {
    p.warnings
        .iter()
        .any(|w| w.line == Some(line) && w.message.contains(what))
}

/// `text` with line `n` (1-based) replaced by `with`.
fn replace_line(text: &[u8], n: usize, with: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    for (i, line) in text.split_inclusive(|&b| b == b'\n').enumerate() {
        if i + 1 == n {
            out.extend_from_slice(with);
            out.push(b'\n');
        } else {
            out.extend_from_slice(line);
        }
    }
    out
}

const MSR_HLT: &str = "exit-reports/13-perf-kvm-stat-vmexit-intel-msr-write-hlt.txt";
/// The line of the HLT row in that sample.
const HLT_LINE: usize = 9;
const OTHERS: [&str; 8] = [
    "MSR_WRITE",
    "IO_INSTRUCTION",
    "APIC_WRITE",
    "EXTERNAL_INTERRUPT",
    "PREEMPTION_TIMER",
    "EPT_MISCONFIG",
    "MSR_READ",
    "PAUSE_INSTRUCTION",
];

/// The HLT row of the sample replaced by `bad`: every other row survives with its count, the
/// bad row is noted at its line with `reason`, the table is partial, and the totals line still
/// finds its table.
fn bad_hlt_row_is_noted_and_the_rest_kept(bad: &[u8], reason: &str) {
    let full = read(&data(MSR_HLT), "full.txt", Format::PerfKvmStat);
    let text = replace_line(&data(MSR_HLT), HLT_LINE, bad);
    let p = read(&text, "bad.txt", Format::PerfKvmStat);
    assert_eq!(p.tables.len(), 1, "{:?}", p.warnings);
    for name in OTHERS {
        assert_eq!(count_of(&p, name), count_of(&full, name), "{name}");
    }
    assert_eq!(p.tables[0].rows.len(), OTHERS.len());
    assert!(noted(&p, HLT_LINE, reason), "{:?}", p.warnings);
    assert!(partial(&p, 0));
    assert!(p.tables[0].printed_total.is_some());
    assert!(
        !p.warnings
            .iter()
            .any(|w| w.message.contains("no table above")),
        "{:?}",
        p.warnings
    );
}

#[test]
fn perf_kvm_stat_typo_in_a_count_keeps_the_rows_after_it() {
    bad_hlt_row_is_noted_and_the_rest_kept(
        b"                 HLT      1588x    19.92%    99.89%      0.63us  17539.26us   8224.34us ( +-   0.61% )",
        "`1588x` is not a count",
    );
}

#[test]
fn perf_kvm_stat_invalid_utf8_keeps_the_rows_after_it() {
    bad_hlt_row_is_noted_and_the_rest_kept(
        b"                 H\xffLT      15885    19.92%    99.89%      0.63us  17539.26us   8224.34us ( +-   0.61% )",
        "not UTF-8",
    );
}

#[test]
fn perf_kvm_stat_nul_byte_keeps_the_rows_after_it() {
    bad_hlt_row_is_noted_and_the_rest_kept(
        b"                 HLT\x0015885    19.92%    99.89%      0.63us  17539.26us   8224.34us ( +-   0.61% )",
        "NUL",
    );
}

#[test]
fn perf_kvm_stat_count_above_u64_keeps_the_rows_after_it() {
    bad_hlt_row_is_noted_and_the_rest_kept(
        b"                 HLT      18446744073709551616    19.92%    99.89%      0.63us  17539.26us   8224.34us ( +-   0.61% )",
        "larger than 2^64",
    );
}

#[test]
fn count_of_2_pow_64_minus_1_saturates_the_total_with_a_note() {
    let text = replace_line(
        &data(MSR_HLT),
        HLT_LINE,
        b"                 HLT      18446744073709551615    19.92%    99.89%      0.63us  17539.26us   8224.34us ( +-   0.61% )",
    );
    let p = read(&text, "max.txt", Format::PerfKvmStat);
    assert_eq!(p.tables[0].rows.len(), 9);
    assert_eq!(p.tables[0].count(), u64::MAX, "the sum must not wrap");
    assert!(
        p.warnings.iter().any(|w| w.message.contains("saturated")),
        "{:?}",
        p.warnings
    );
}

/// Cut the sample at every byte of its rows: the rows on the lines before the cut keep their
/// counts, a row is never read with a count other than its own, and a row the cut goes through
/// is either read whole or noted at its line (with the table marked partial).
#[test]
fn truncated_table_never_drops_the_cut_row_silently() {
    let text = data(MSR_HLT);
    let full = read(&text, "full.txt", Format::PerfKvmStat);
    let starts: Vec<usize> = std::iter::once(0)
        .chain(
            text.iter()
                .enumerate()
                .filter(|(_, b)| **b == b'\n')
                .map(|(i, _)| i + 1),
        )
        .collect();
    let first_row = starts[7];
    let last_row_end = starts[16] - 1;
    for cut in first_row + 1..last_row_end {
        let line = starts.iter().filter(|&&s| s <= cut).count();
        if starts.contains(&cut) {
            continue; // cut between lines: nothing is cut short
        }
        let name = format!("cut-at-{cut}.txt");
        let p = match sources::read_bytes(&text[..cut], &name, Some(Format::PerfKvmStat)) {
            Ok(p) => p,
            Err(e) => {
                // Only when the cut goes through the first row, and the error says so.
                assert_eq!(line, 8, "{name}: {e}");
                assert!(e.to_string().contains(":8:"), "{name}: {e}");
                continue;
            }
        };
        let table = &p.tables[0];
        for (i, row) in full.tables[0].rows.iter().enumerate() {
            let row_line = 8 + i;
            let got = table.rows.iter().find(|r| r.key == row.key);
            if row_line < line {
                assert_eq!(
                    got.map(|r| r.count),
                    Some(row.count),
                    "{name}: line {row_line}"
                );
            } else if row_line == line {
                match got {
                    Some(r) => assert_eq!(r.count, row.count, "{name}: a cut count was read"),
                    None => assert!(
                        noted(&p, line, "input ends inside this"),
                        "{name}: the cut row is not noted: {:?}",
                        p.warnings
                    ),
                }
            }
        }
        assert!(partial(&p, 0), "{name}: not marked partial");
    }
}

#[test]
fn bcc_kvmexit_bad_row_is_noted_and_the_rest_kept() {
    let rel = "exit-reports/01-bcc-kvmexit-all-threads.txt";
    let full = read(&data(rel), "full.txt", Format::BccKvmexit);
    // Line 5: `1273551  1273568  EXIT_REASON_MSR_WRITE               6`.
    let text = replace_line(
        &data(rel),
        5,
        b"1273551  1273568  EXIT_REASON_MSR_WRITE               6x",
    );
    let p = read(&text, "bad.txt", Format::BccKvmexit);
    assert!(noted(&p, 5, "`6x` is not a count"), "{:?}", p.warnings);
    assert!(partial(&p, 0));
    assert_eq!(p.tables.len(), full.tables.len());
    let total = |p: &Profile| p.tables.iter().map(|t| t.count()).sum::<u64>();
    assert_eq!(total(&p), total(&full) - 6);
}

#[test]
fn kvm_stat_damaged_count_is_noted_not_read_as_zero() {
    let rel = "exit-reports/18-kvm_stat-debugfs-legacy-haswell-io-exits.txt";
    // Line 10: ` halt_exits                                  204769       0`.
    let text = replace_line(
        &data(rel),
        10,
        b" halt_exits                                  2047x9       0",
    );
    let p = read(&text, "bad.txt", Format::KvmStat);
    assert!(noted(&p, 10, "`2047x9` is not a count"), "{:?}", p.warnings);
    assert!(!names(&p, 0).contains(&"halt_exits".to_string()));
    assert!(names(&p, 0).contains(&"halt_attempted_poll".to_string()));
    assert!(partial(&p, 0));
}

#[test]
fn perf_prof_bad_row_is_noted_and_the_rest_kept() {
    // perf-prof's `"%-*s %8lu %16.3f %9.3f %9.3f %12.3f %6.2f"` rows (kvm-exit.c).
    let text =
        b"exit_reason             calls        total(us)   min(us)   avg(us)      max(us)  %gsys\n\
        -------------------- -------- ---------------- --------- --------- ------------ ------\n\
        HLT                      1113       806253.057     0.816   724.396     4025.007 100.00\n\
        MSR_WRITE                 8x6         1207.433     0.591     1.402       40.129 100.00\n\
        EXTERNAL_INTERRUPT        402          567.881     0.394     1.412       14.003 100.00\n";
    let p = read(text, "bad.txt", Format::PerfProf);
    assert!(noted(&p, 4, "`8x6` is not a count"), "{:?}", p.warnings);
    assert_eq!(names(&p, 0), ["HLT", "EXTERNAL_INTERRUPT"]);
    assert!(partial(&p, 0));
}

#[test]
fn forced_text_format_refuses_a_line_longer_than_the_cap() {
    let mut text =
        b"qemu-system-x86 12345 [002] 770.850287: kvm:kvm_exit: reason HLT rip 0x1\n".to_vec();
    text.extend(std::iter::repeat_n(b'a', 2 << 20));
    text.extend_from_slice(b"\nqemu-system-x86 12345 [002] 770.850290: kvm:kvm_entry: vcpu 0\n");
    let e = sources::read_bytes(&text, "long.txt", Some(Format::TraceText))
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(e.starts_with("long.txt:2:") && e.contains("MiB"), "{e}");
}

/// `VM-EXIT Samples Samples% Time%`: the sample with its time columns cut away by hand, as
/// authors trim tables for a mail, under a label line.
#[test]
fn trimmed_table_under_a_label_line_is_read() {
    let full = read(&data(MSR_HLT), "full.txt", Format::PerfKvmStat);
    let text = String::from_utf8(data(MSR_HLT)).unwrap();
    let mut trimmed = String::from("baseline:\n\n");
    for line in text.lines().skip(5) {
        let cells: Vec<&str> = line.split_whitespace().collect();
        let keep = if line.contains("Samples%") {
            4
        } else {
            4.min(cells.len())
        };
        if line.starts_with("Total") || cells.len() < 4 {
            trimmed.push_str(line);
        } else {
            trimmed.push_str(&cells[..keep].join("    "));
        }
        trimmed.push('\n');
    }
    let p = read(trimmed.as_bytes(), "trimmed.txt", Format::PerfKvmStat);
    assert_eq!(p.tables[0].label.as_deref(), Some("baseline"));
    assert_eq!(p.tables[0].rows.len(), 9);
    for r in &full.tables[0].rows {
        assert_eq!(count_of(&p, &r.key.key_text()), Some(r.count));
    }
    assert!(p.tables[0].rows.iter().all(|r| r.time.total_ns.is_none()));
    // Reordered and cut to `Samples Avg time`.
    let reordered =
        "VM-EXIT    Avg time    Samples\n  HLT   8224.34us   15885\n  MSR_WRITE  1.71us  42521\n";
    let p = read(reordered.as_bytes(), "reordered.txt", Format::PerfKvmStat);
    assert_eq!(count_of(&p, "HLT"), Some(15_885));
    assert_eq!(
        p.tables[0]
            .rows
            .iter()
            .find(|r| r.count == 15_885)
            .and_then(|r| r.time.total_ns),
        Some(15_885 * 8_224_340)
    );
}

/// Two tables of one mail under `- pte_prefetch 8` / `- pte_prefetch 16`, each cut with `[..]`
/// (Senozhatsky, kvm@ 2021-10-19).
#[test]
fn label_lines_name_tables_and_elisions_mark_them_partial() {
    let p = read(
        &data("readers/labels-elided-pte-prefetch-senozhatsky.txt"),
        "prefetch.txt",
        Format::PerfKvmStat,
    );
    let labels: Vec<Option<&str>> = p.tables.iter().map(|t| t.label.as_deref()).collect();
    assert_eq!(labels, [Some("pte_prefetch 8"), Some("pte_prefetch 16")]);
    assert!(partial(&p, 0) && partial(&p, 1));
    assert!(noted(&p, 11, "elided"), "{:?}", p.warnings);
    assert!(noted(&p, 22, "elided"), "{:?}", p.warnings);
}

/// `Before:` and `after applying the patch:` name the inputs `compare` sets side by side.
#[test]
fn label_lines_name_the_inputs_of_compare() {
    let table = String::from_utf8(data(MSR_HLT)).unwrap();
    let before = format!("Before:\n{table}");
    let after = format!("after applying the patch:\n{table}");
    let profiles = [
        read(before.as_bytes(), "run.txt", Format::PerfKvmStat),
        read(after.as_bytes(), "run.txt", Format::PerfKvmStat),
    ];
    let c = compare(&profiles, &Decoder::builtin());
    let names: Vec<&str> = c.inputs.iter().map(|i| i.name.as_str()).collect();
    assert_eq!(names, ["run: Before", "run: after applying the patch"]);
}

/// Bare `kvm_exit:` lines with wrapped continuations (Kuznetsov, kvm@ 2021-06-28): counted,
/// with no durations, and a note saying why.
#[test]
fn bare_event_lines_are_counted_without_durations() {
    let p = read(
        &data("readers/bare-events-nsvm-smm-kuznetsov.txt"),
        "bare.txt",
        Format::TraceText,
    );
    let exits = p
        .tables
        .iter()
        .find(|t| t.kind.as_str() == "vmexit")
        .expect("a vmexit table");
    assert_eq!(exits.count(), 3);
    assert!(exits.rows.iter().all(|r| r.time.total_ns.is_none()));
    assert!(exits.rows.iter().any(|r| matches!(
        &r.key,
        Key::Exit {
            code: Some(0x73),
            ..
        }
    )));
    assert!(
        p.warnings
            .iter()
            .any(|w| w.message.contains("without timestamps") && w.message.contains("no durations")),
        "{:?}",
        p.warnings
    );
}

/// A mail whose lines were wrapped after the timestamp (Rümelin, qemu-devel 2021-05-07): the
/// events on the continuation lines are read, with their durations.
#[test]
fn trace_lines_a_mailer_wrapped_are_joined() {
    let p = read(
        &data("readers/wrapped-trace-pckbd-ruemelin.txt"),
        "wrapped.txt",
        Format::TraceText,
    );
    let exits = &p.tables[0];
    assert_eq!(exits.kind.as_str(), "vmexit");
    assert_eq!(exits.count(), 10);
    assert!(exits.time_ns().is_some_and(|t| t > 0));
}

/// CI's fuzzer found it: two `kvm_exit(REASON)` children whose counts add past 2^64-1 made the
/// check of the children against their parent overflow (a panic in debug builds).
#[test]
fn kvm_stat_children_summing_past_u64_do_not_overflow() {
    let rel = "cases/ml-07-kvm-stat-host-mm-bug-page-fault-loop/input-2.txt";
    let max = b"> >>   kvm_exit(EXCEPTION_NMI)       18446744073709551615  330604";
    let text = replace_line(&data(rel), 6, max);
    let text = replace_line(
        &text,
        7,
        b"> >>   kvm_exit(EXTERNAL_INTERRUPT)  18446744073709551615     105",
    );
    let p = read(&text, "max.txt", Format::KvmStat);
    assert!(
        p.tables.iter().any(|t| t.count() == u64::MAX),
        "the children's sum saturates: {:?}",
        p.tables.iter().map(|t| t.count()).collect::<Vec<_>>()
    );
}

#[test]
fn a_byte_order_mark_before_a_header_on_line_1_is_read_with_or_without_a_forced_format() {
    // repro G1: "not a format virtlens reads", even with `--format perf-kvm-stat`.
    let path = virtlens_testkit::testdata("reliability/G1-bom-hists.txt");
    for format in [None, Some(Format::PerfKvmStat)] {
        let p = sources::read_path(&path, format).unwrap_or_else(|e| panic!("{format:?}: {e}"));
        let rows: usize = p.tables.iter().map(|t| t.rows.len()).sum();
        assert_eq!(rows, 5, "{format:?}");
        assert_eq!(
            p.tables[0].rows.iter().map(|r| r.count).sum::<u64>(),
            10_589
        );
    }
}

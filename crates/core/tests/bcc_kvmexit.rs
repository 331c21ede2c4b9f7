//! The bcc kvmexit source on the real sample (01) and on every mode of `tools/kvmexit.py`,
//! written here from its printf formats (each input names the format it reproduces), with the
//! ways people paste it: the glued `^C`, e-mail quoting, stray characters, a failed run.

use std::collections::BTreeMap;

use virtlens_core::Error;
use virtlens_core::decode::Isa;
use virtlens_core::profile::{Key, Profile, Row, Table, TableKind};
use virtlens_core::sources::{self, Format};
use virtlens_testkit::testdata;

const SAMPLE_01: &str = "exit-reports/01-bcc-kvmexit-all-threads.txt";

fn read_text(text: &str) -> Profile {
    match sources::read_bytes(text.as_bytes(), "pasted", Some(Format::BccKvmexit)) {
        Ok(p) => p,
        Err(e) => panic!("pasted text: {e}"),
    }
}

fn row<'a>(t: &'a Table, name: &str, pid: Option<u32>) -> &'a Row {
    t.rows
        .iter()
        .find(|r| r.key.key_text() == name && r.pid == pid)
        .unwrap_or_else(|| {
            panic!(
                "no row {name} pid {pid:?} in {:?}",
                t.rows
                    .iter()
                    .map(|r| (r.key.key_text(), r.pid))
                    .collect::<Vec<_>>()
            )
        })
}

fn notes(p: &Profile) -> String {
    p.warnings
        .iter()
        .map(|n| format!("{:?}: {}", n.line, n.message))
        .collect::<Vec<_>>()
        .join("\n")
}

// kvmexit.py's output formats, reproduced with Rust's formatter.

/// `"%-8u %-8u %-35s %-8u" % (tgid, pid, exit_reasons[i], sum1)` (all threads).
fn all_threads(pid: u32, tid: u32, reason: &str, count: u64) -> String {
    format!("{pid:<8} {tid:<8} {reason:<35} {count:<8}\n")
}

/// `"%-8u %-35s %-8u" % (pid, exit_reasons[i], sum1)` (`-p -a`, `-T`).
fn per_tid(tid: u32, reason: &str, count: u64) -> String {
    format!("{tid:<8} {reason:<35} {count:<8}\n")
}

/// `"%-35s %-8u" % (exit_reasons[…], count)` (`-p`, `-p -v`, `-t`).
fn collapsed(reason: &str, count: u64) -> String {
    format!("{reason:<35} {count:<8}\n")
}

/// `"%s%-35s %s" % (header_format, "KVM_EXIT_REASON", "COUNT")`.
fn header(format: &str) -> String {
    format!("{format}{:<35} COUNT\n", "KVM_EXIT_REASON")
}

/// Counts of sample 01 by run, pid and reason (prefix `EXIT_REASON_` removed), from plain
/// splitting of the file's text: a run starts at each `# ` line; a row is a line of four words
/// whose first, second and last are numbers, after a leading `^C`.
fn independent_01(text: &str) -> Vec<BTreeMap<(u32, String), u64>> {
    let mut runs: Vec<BTreeMap<(u32, String), u64>> = Vec::new();
    for line in text.lines() {
        if line.starts_with("# ") {
            runs.push(BTreeMap::new());
            continue;
        }
        let line = line.trim_start_matches("^C");
        let words: Vec<&str> = line.split_whitespace().collect();
        if words.len() != 4 {
            continue;
        }
        let (Ok(pid), Ok(_tid), Ok(count)) = (
            words[0].parse::<u32>(),
            words[1].parse::<u32>(),
            words[3].parse::<u64>(),
        ) else {
            continue;
        };
        let reason = words[2].trim_start_matches("EXIT_REASON_").to_string();
        *runs.last_mut().unwrap().entry((pid, reason)).or_default() += count;
    }
    runs
}

fn assert_matches_independent(p: &Profile, text: &str) {
    let expected = independent_01(text);
    assert_eq!(p.tables.len(), expected.len());
    for (t, want) in p.tables.iter().zip(&expected) {
        assert_eq!(t.kind, TableKind::Vmexit);
        assert_eq!(t.rows.len(), want.len(), "{:?}", t.label);
        for ((pid, reason), count) in want {
            let r = row(t, reason, Some(*pid));
            assert_eq!(r.count, *count, "{reason} pid {pid}");
            assert!(matches!(r.key, Key::Exit { code: Some(_), .. }), "{reason}");
            assert_eq!(r.vcpu, None);
            assert_eq!(r.time.total_ns, None, "bcc has no durations");
        }
        assert_eq!(t.count(), want.values().sum::<u64>());
    }
}

#[test]
fn sample_01_two_runs_every_row_counted_independently() {
    let text = std::fs::read_to_string(testdata(SAMPLE_01)).unwrap();
    let p = sources::read_path(&testdata(SAMPLE_01), None).unwrap();
    assert_eq!(p.origin.format, "bcc-kvmexit");
    assert_eq!(p.origin.isa, Some(Isa::Vmx));
    assert_matches_independent(&p, &text);

    let (a, b) = (&p.tables[0], &p.tables[1]);
    assert_eq!(a.label.as_deref(), Some("./kvmexit.py"));
    assert_eq!(b.label.as_deref(), Some("./kvmexit.py 6"));
    assert_eq!(a.scope.as_deref(), Some("all threads"));
    assert_eq!((a.isa, b.isa), (Some(Isa::Vmx), Some(Isa::Vmx)));
    // Run 1 lasted until Ctrl-C: no window. Run 2 slept 6 s.
    assert_eq!(a.window, None);
    let w = b.window.as_ref().unwrap();
    assert_eq!((w.duration_ns, w.intervals), (Some(6_000_000_000), 1));
    // The glued `^C` did not cost the first row; names are decoded to canonical codes.
    let hlt = row(a, "HLT", Some(1_273_551));
    assert_eq!((hlt.count, hlt.key.code()), (12, Some(12)));
    assert_eq!(row(b, "MSR_WRITE", Some(1_273_903)).count, 15_025);
    assert_eq!(
        row(b, "EPT_MISCONFIG", Some(1_273_551)).key.code(),
        Some(49)
    );
    // One thread per VM here: nothing was summed across threads, so no note says so.
    assert!(!notes(&p).contains("per-thread"), "{}", notes(&p));
}

#[test]
fn sample_01_e_mail_quoted_and_with_stray_characters_keeps_every_row() {
    let text = std::fs::read_to_string(testdata(SAMPLE_01)).unwrap();
    let quoted: String = text.lines().map(|l| format!("> {l}\n")).collect();
    let p = read_text(&quoted);
    assert_matches_independent(&p, &text);

    // A pasted `G` between the reason and the count.
    let stray = text.replace(
        "EXIT_REASON_HLT                     6043",
        "EXIT_REASON_HLT G                   6043",
    );
    let p = read_text(&stray);
    assert_matches_independent(&p, &text);
    assert!(notes(&p).contains("stray text `G`"), "{}", notes(&p));
}

#[test]
fn pid_collapsed_with_duration() {
    // ./kvmexit.py -p PID 5: thread_context "PID %s", rows "%-35s %-8u", sorted by count.
    let mut text = String::from("# ./kvmexit.py -p 2024301 5\n");
    text += "Display kvm exit reasons and statistics for PID 2024301 after sleeping 5 secs.\n";
    text += &header("");
    for (reason, n) in [
        ("MSR_WRITE", 20_931),
        ("HLT", 8_812),
        ("EPT_MISCONFIG", 512),
        ("EXTERNAL_INTERRUPT", 233),
        ("IO_INSTRUCTION", 9),
    ] {
        text += &collapsed(reason, n);
    }
    let p = read_text(&text);
    let t = &p.tables[0];
    assert_eq!(t.label.as_deref(), Some("./kvmexit.py -p 2024301 5"));
    assert_eq!(t.scope.as_deref(), Some("PID 2024301"));
    assert_eq!(t.rows.len(), 5);
    assert!(
        t.rows
            .iter()
            .all(|r| r.pid == Some(2_024_301) && r.vcpu.is_none())
    );
    assert_eq!(row(t, "MSR_WRITE", Some(2_024_301)).count, 20_931);
    assert_eq!(t.count(), 20_931 + 8_812 + 512 + 233 + 9);
    assert_eq!(
        t.window.as_ref().and_then(|w| w.duration_ns),
        Some(5_000_000_000)
    );
}

#[test]
fn pid_all_tids_sums_threads_and_says_so() {
    // ./kvmexit.py -p PID 5 -a: header_format "TID      ", rows "%-8u %-35s %-8u".
    let mut text = String::from(
        "Display kvm exit reasons and statistics for PID 2024301 and its all threads after sleeping 5 secs.\n",
    );
    text += &header("TID      ");
    for (tid, reason, n) in [
        (2_024_330, "EXTERNAL_INTERRUPT", 71),
        (2_024_330, "HLT", 3_100),
        (2_024_330, "MSR_WRITE", 8_004),
        (2_024_331, "HLT", 1_902),
        (2_024_331, "MSR_WRITE", 4_377),
    ] {
        text += &per_tid(tid, reason, n);
    }
    let p = read_text(&text);
    let t = &p.tables[0];
    assert_eq!(t.rows.len(), 3);
    assert_eq!(row(t, "HLT", Some(2_024_301)).count, 5_002);
    assert_eq!(row(t, "MSR_WRITE", Some(2_024_301)).count, 12_381);
    assert!(
        notes(&p).contains("pid 2024301: threads 2024330, 2024331"),
        "{}",
        notes(&p)
    );
}

#[test]
fn pid_vcpu_maps_to_the_vcpu_and_ctrl_c_is_stripped() {
    // ./kvmexit.py -p PID -v 0: thread_context "PID %s VCPU %s", collapsed rows, Ctrl-C.
    let mut text = String::from("$ sudo ./kvmexit.py -p 2024301 -v 1\n");
    text +=
        "Display kvm exit reasons and statistics for PID 2024301 VCPU 1... Hit Ctrl-C to end.\n";
    text += &header("");
    text += &format!("^C{}", collapsed("MSR_WRITE", 3_301));
    text += &collapsed("HLT", 977);
    text += &collapsed("PREEMPTION_TIMER", 58);
    let p = read_text(&text);
    let t = &p.tables[0];
    assert_eq!(t.scope.as_deref(), Some("PID 2024301 VCPU 1"));
    assert!(
        t.rows
            .iter()
            .all(|r| r.pid == Some(2_024_301) && r.vcpu == Some(1))
    );
    assert_eq!(row(t, "MSR_WRITE", Some(2_024_301)).count, 3_301);
    assert_eq!(t.window, None);
}

#[test]
fn tid_and_tids_modes_have_no_pid() {
    // ./kvmexit.py -t TID 10: "TID %s", collapsed rows.
    let mut text = String::from("# ./kvmexit.py -t 2024330 10\n");
    text += "Display kvm exit reasons and statistics for TID 2024330 after sleeping 10 secs.\n";
    text += &header("");
    text += &collapsed("MSR_WRITE", 16_020);
    text += &collapsed("HLT", 6_110);
    // ./kvmexit.py -T 'a,b': "TIDS %s" (a Python list), header "TIDS     ", rows "%-8u %-35s %-8u".
    text += "\n# ./kvmexit.py -T '2024330,2024331'\n";
    text += "Display kvm exit reasons and statistics for TIDS ['2024330', '2024331']... Hit Ctrl-C to end.\n";
    text += &header("TIDS     ");
    text += &format!("^C{}", per_tid(2_024_330, "HLT", 14_001));
    text += &per_tid(2_024_330, "MSR_WRITE", 38_420);
    text += &per_tid(2_024_331, "HLT", 9_950);
    let p = read_text(&text);
    assert_eq!(p.tables.len(), 2);
    let (a, b) = (&p.tables[0], &p.tables[1]);
    assert_eq!(a.label.as_deref(), Some("./kvmexit.py -t 2024330 10"));
    assert_eq!(
        b.label.as_deref(),
        Some("./kvmexit.py -T '2024330,2024331'")
    );
    assert!(a.rows.iter().chain(&b.rows).all(|r| r.pid.is_none()));
    assert_eq!(row(a, "HLT", None).count, 6_110);
    assert_eq!(row(b, "HLT", None).count, 23_951);
    assert!(
        notes(&p).contains("threads 2024330, 2024331"),
        "{}",
        notes(&p)
    );
}

#[test]
fn a_failed_run_is_a_note_and_the_others_stay() {
    // The example file's `-v 4` run: a Python traceback instead of output.
    let mut text = String::from("# ./kvmexit.py -p 2024301 -v 4 4\n");
    text += "Traceback (most recent call last):\n";
    text += "  File \"tools/kvmexit.py\", line 306, in <module>\n";
    text += "      raise Exception(\"There's no v%s for PID %d.\" % (tgt_vcpu, args.pid))\n";
    text += "      Exception: There's no vCPU 4 for PID 2024301.\n\n";
    text += "# ./kvmexit.py -p 2024301 -v 0 4\n";
    text +=
        "Display kvm exit reasons and statistics for PID 2024301 VCPU 0 after sleeping 4 secs.\n";
    text += &header("");
    text += &collapsed("HLT", 1_811);
    let p = read_text(&text);
    assert_eq!(p.tables.len(), 1);
    assert_eq!(p.tables[0].rows[0].vcpu, Some(0));
    assert!(
        notes(&p).contains("There's no vCPU 4 for PID 2024301."),
        "{}",
        notes(&p)
    );
}

#[test]
fn amd_names_decide_the_isa() {
    // The AMD-capable kvmexit prints SVM reasons (svm.h names without `SVM_EXIT_`) in the same
    // "%-8u %-8u %-35s %-8u" rows.
    let mut text = String::from(
        "Display kvm exit reasons and statistics for all threads after sleeping 3 secs.\n",
    );
    text += &header("PID      TID      ");
    for (reason, n) in [
        ("NPF", 4_410),
        ("IOIO", 120),
        ("MSR", 2_002),
        ("HLT", 660),
        ("VINTR", 35),
    ] {
        text += &all_threads(88_001, 88_020, reason, n);
    }
    let p = read_text(&text);
    let t = &p.tables[0];
    assert_eq!(t.isa, Some(Isa::Svm));
    assert_eq!(row(t, "npf", Some(88_001)).key.code(), Some(0x400));
    assert_eq!(row(t, "hlt", Some(88_001)).key.code(), Some(0x78));
    assert_eq!(row(t, "io", Some(88_001)).count, 120);
}

#[test]
fn old_bcc_gaps_are_kept_by_name() {
    // bcc prints `N/A` for codes missing from its table, and `TPAUSEN/A` for a missing comma.
    let mut text = header("");
    text += &collapsed("HLT", 10);
    text += &collapsed("N/A", 3);
    text += &collapsed("TPAUSEN/A", 2);
    let p = read_text(&text);
    let t = &p.tables[0];
    assert_eq!(row(t, "N/A", None).key.code(), None);
    assert_eq!(row(t, "TPAUSE", None).key.code(), Some(68));
    assert!(
        notes(&p).contains("3 exits are named `N/A`"),
        "{}",
        notes(&p)
    );
}

#[test]
fn detection_and_errors() {
    let text = std::fs::read_to_string(testdata(SAMPLE_01)).unwrap();
    assert_eq!(sources::detect(text.as_bytes()), Some(Format::BccKvmexit));
    let quoted: String = text.lines().map(|l| format!("> {l}\n")).collect();
    assert_eq!(sources::detect(quoted.as_bytes()), Some(Format::BccKvmexit));
    match sources::read_bytes(b"hello\nworld 1\n", "junk.txt", Some(Format::BccKvmexit)) {
        Err(Error::Parse {
            path,
            line,
            message,
        }) => {
            assert_eq!((path.as_str(), line), ("junk.txt", 1));
            assert!(message.contains("expected"), "{message}");
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        sources::read_bytes(b"", "empty.txt", Some(Format::BccKvmexit)),
        Err(Error::Input { .. })
    ));
}

//! The perf kvm stat source on every real sample, and on the same samples the way people paste
//! them (e-mail quoted and wrapped, Markdown-indented, with stderr notes and live intervals).

use virtlens_core::decode::Isa;
use virtlens_core::profile::{Key, Profile, Table, TableKind};
use virtlens_core::sources::{self, Format};
use virtlens_testkit::testdata;

fn read(rel: &str) -> Profile {
    match sources::read_path(&testdata(rel), None) {
        Ok(p) => p,
        Err(e) => panic!("{rel}: {e}"),
    }
}

fn read_text(text: &str) -> Profile {
    match sources::read_bytes(text.as_bytes(), "pasted", Some(Format::PerfKvmStat)) {
        Ok(p) => p,
        Err(e) => panic!("pasted text: {e}"),
    }
}

fn row<'a>(t: &'a Table, key: &str) -> &'a virtlens_core::profile::Row {
    match t.rows.iter().find(|r| r.key.key_text() == key) {
        Some(r) => r,
        None => panic!(
            "no row {key} in {:?}",
            t.rows.iter().map(|r| r.key.key_text()).collect::<Vec<_>>()
        ),
    }
}

/// Sums what the printed rows hold, straight from the file's text (independent of the parser):
/// the first integer after the key on each line that has a `%` cell.
fn independent_row_sum(text: &str) -> u64 {
    text.lines()
        .filter(|l| l.contains('%') && !l.contains("Samples") && !l.contains("Sample%"))
        .filter_map(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
        .sum()
}

fn printed_total(text: &str) -> Option<u64> {
    let at = text.find("Total Samples:")?;
    text[at + 14..].split(',').next()?.trim().parse().ok()
}

/// Every complete perf kvm stat sample: one table, rows adding up to the printed total.
#[test]
fn complete_samples_add_up_to_their_printed_total() {
    let complete = [
        "exit-reports/05-perf-kvm-stat-msr-event-tscdeadline.txt",
        "exit-reports/06-perf-kvm-stat-vmexit-amd-svm-idle.txt",
        "exit-reports/09-perf-kvm-stat-vmexit-2012-format.txt",
        "exit-reports/11-perf-kvm-stat-ioport-2012-format.txt",
        "exit-reports/13-perf-kvm-stat-vmexit-intel-msr-write-hlt.txt",
        "exit-reports/17-perf-kvm-stat-live-amd-sev-es-hung-vcpu.txt",
        "seed-kvm-hyperv-traps/1-no-hyperv-features.txt",
        "seed-kvm-hyperv-traps/2-all-hyperv-features.txt",
        "seed-kvm-hyperv-traps/3-hypervisor-cpuid-hidden.txt",
    ];
    for rel in complete {
        let text = std::fs::read_to_string(testdata(rel)).unwrap_or_default();
        let p = read(rel);
        assert_eq!(p.tables.len(), 1, "{rel}");
        let t = &p.tables[0];
        let printed = printed_total(&text);
        assert_eq!(t.printed_total.as_ref().map(|x| x.count), printed, "{rel}");
        assert_eq!(Some(t.count()), printed, "{rel}: rows vs printed total");
        assert_eq!(
            t.count(),
            independent_row_sum(&text),
            "{rel}: rows vs the file's text"
        );
        assert!(p.warnings.is_empty(), "{rel}: {:?}", p.warnings);
    }
}

#[test]
fn seed_4_is_two_samples_short_and_says_so() {
    let p = read("seed-kvm-hyperv-traps/4-all-hyperv-features-stimer-optimized.txt");
    let t = &p.tables[0];
    assert_eq!(t.count(), 306_937);
    assert_eq!(t.printed_total.as_ref().map(|x| x.count), Some(306_939));
    assert_eq!(p.warnings.len(), 1);
    assert!(p.warnings[0].message.contains("306937"), "{:?}", p.warnings);
    assert_eq!(t.rows.len(), 9);
}

#[test]
fn modern_vmx_table_is_decoded() {
    let p = read("exit-reports/13-perf-kvm-stat-vmexit-intel-msr-write-hlt.txt");
    let t = &p.tables[0];
    assert_eq!(t.kind, TableKind::Vmexit);
    assert_eq!(t.isa, Some(Isa::Vmx));
    let hlt = row(t, "HLT");
    assert_eq!(
        hlt.key,
        Key::Exit {
            name: "HLT".into(),
            code: Some(12)
        }
    );
    assert_eq!(hlt.count, 15_885);
    assert_eq!(hlt.time.min_ns, Some(630));
    assert_eq!(hlt.time.max_ns, Some(17_539_260));
    assert_eq!(hlt.time.total_ns, Some(15_885 * 8_224_340));
    let rel = hlt.time.rel_stderr_pct(hlt.count).unwrap_or(0.0);
    assert!((rel - 0.61).abs() < 1e-6, "{rel}");
    assert_eq!(row(t, "EPT_MISCONFIG").key.code(), Some(49));
    // perf's own total: the sum of all durations, which count × mean reproduces to rounding.
    let printed = t
        .printed_total
        .as_ref()
        .and_then(|x| x.time_ns)
        .unwrap_or(0) as f64;
    let ours = t.time_ns().unwrap_or(0) as f64;
    assert!(
        (ours - printed).abs() / printed < 1e-4,
        "{ours} vs {printed}"
    );
}

#[test]
fn svm_names_are_lowercase_and_recognised() {
    let p = read("exit-reports/06-perf-kvm-stat-vmexit-amd-svm-idle.txt");
    let t = &p.tables[0];
    assert_eq!(t.isa, Some(Isa::Svm));
    assert_eq!(row(t, "interrupt").key.code(), Some(0x60));
    assert_eq!(row(t, "msr").key.code(), Some(0x7c));
    assert_eq!(row(t, "vintr").count, 2);
    let live = read("exit-reports/17-perf-kvm-stat-live-amd-sev-es-hung-vcpu.txt");
    let t = &live.tables[0];
    assert_eq!(t.isa, Some(Isa::Svm));
    assert_eq!(
        t.rows.iter().map(|r| r.pid).collect::<Vec<_>>(),
        vec![Some(1_347_712); 2]
    );
    assert_eq!(
        t.window.as_ref().and_then(|w| w.start.clone()).as_deref(),
        Some("19:49:57.094070")
    );
    assert_eq!(row(t, "pause").key.code(), Some(0x77));
}

#[test]
fn old_2012_layout_keeps_min_max_unknown() {
    let p = read("exit-reports/09-perf-kvm-stat-vmexit-2012-format.txt");
    let t = &p.tables[0];
    let apic = row(t, "APIC_ACCESS");
    assert_eq!((apic.time.min_ns, apic.time.max_ns), (None, None));
    assert_eq!(apic.time.total_ns, Some(65_381 * 37_720));
    // PENDING_INTERRUPT is the 2012 name of INTERRUPT_WINDOW.
    assert_eq!(row(t, "INTERRUPT_WINDOW").count, 2_242);
    let io = read("exit-reports/11-perf-kvm-stat-ioport-2012-format.txt");
    let t = &io.tables[0];
    assert_eq!(t.kind, TableKind::Ioport);
    assert_eq!(
        t.rows[0].key,
        Key::Port {
            port: 0xc090,
            access: Some(virtlens_core::profile::Access::Out)
        }
    );
}

#[test]
fn msr_event_table_with_squeezed_columns() {
    let p = read("exit-reports/05-perf-kvm-stat-msr-event-tscdeadline.txt");
    let t = &p.tables[0];
    assert_eq!(t.kind, TableKind::Msr);
    assert_eq!(row(t, "0x6e0").count, 67_007);
    assert_eq!(row(t, "0x830").time.max_ns, Some(108_340));
    assert_eq!(
        row(t, "0x3b").key.access(),
        Some(virtlens_core::profile::Access::Read)
    );
}

#[test]
fn hists_layout_gives_two_labelled_tables() {
    let p = read("exit-reports/34-perf-kvm-stat-hists-format-riscv-before-after.txt");
    assert_eq!(p.tables.len(), 2);
    assert_eq!(p.tables[0].label.as_deref(), Some("testing without patch"));
    assert_eq!(p.tables[1].label.as_deref(), Some("testing with patch"));
    assert_eq!(row(&p.tables[0], "UNKNOWN").count, 887_514);
    // perf before 6.17 printed the causes without their prefix; both eras read as one name.
    assert_eq!(
        row(&p.tables[0], "EXC_STORE_GUEST_PAGE_FAULT")
            .time
            .total_ns,
        Some(889_612_544)
    );
    assert_eq!(p.tables[0].isa, Some(virtlens_core::decode::Isa::Riscv));
    assert_eq!(p.tables[1].isa, Some(virtlens_core::decode::Isa::Riscv));
    assert_eq!(
        row(&p.tables[1], "IRQ_S_TIMER").time.total_ns,
        Some(738_298_680_600)
    );
    assert_eq!(
        p.tables[0].count(),
        1_496_461 + 887_514 + 305_164 + 70_625 + 32_014 + 1
    );
    assert_eq!(p.tables[1].rows.len(), 7);
}

#[test]
fn tab_separated_transcriptions_read_like_perf() {
    let p = read("seed-kvm-hyperv-traps/1-no-hyperv-features.txt");
    let t = &p.tables[0];
    let ept = row(t, "EPT_MISCONFIG");
    assert_eq!(
        (ept.count, ept.time.total_ns),
        (893_519, Some(893_519 * 6_500))
    );
    assert!((ept.time.rel_stderr_pct(ept.count).unwrap_or(0.0) - 0.05).abs() < 1e-9);
    let p3 = read("seed-kvm-hyperv-traps/3-hypervisor-cpuid-hidden.txt");
    assert_eq!(p3.tables[0].kind, TableKind::Vmexit);
    assert_eq!(p3.tables[0].rows.len(), 7);
}

/// Wraps lines longer than `width` at the last space before it, as mailers do.
fn mail_wrap(text: &str, width: usize) -> String {
    let mut out = String::new();
    for line in text.lines() {
        let mut rest = line;
        while rest.len() > width {
            let cut = rest[..width].rfind(' ').filter(|&c| c > 0).unwrap_or(width);
            out.push_str(rest[..cut].trim_end());
            out.push('\n');
            rest = rest[cut..].trim_start();
        }
        out.push_str(rest);
        out.push('\n');
    }
    out
}

fn quote(text: &str, prefix: &str) -> String {
    text.lines().map(|l| format!("{prefix}{l}\n")).collect()
}

fn same_rows(a: &Profile, b: &Profile) {
    assert_eq!(a.tables.len(), b.tables.len());
    for (x, y) in a.tables.iter().zip(&b.tables) {
        assert_eq!(x.rows, y.rows);
        assert_eq!(x.printed_total, y.printed_total);
    }
}

#[test]
fn quoted_and_wrapped_mail_reads_the_same() {
    for rel in [
        "exit-reports/13-perf-kvm-stat-vmexit-intel-msr-write-hlt.txt",
        "exit-reports/09-perf-kvm-stat-vmexit-2012-format.txt",
        "exit-reports/17-perf-kvm-stat-live-amd-sev-es-hung-vcpu.txt",
    ] {
        let text = std::fs::read_to_string(testdata(rel)).unwrap_or_default();
        let original = read(rel);
        for width in [72, 78] {
            let pasted = quote(&mail_wrap(&text, width), "> ");
            let twice = quote(&pasted, "> ");
            let p = read_text(&twice);
            same_rows(&original, &p);
            assert!(p.warnings.is_empty(), "{rel} @{width}: {:?}", p.warnings);
        }
    }
}

#[test]
fn markdown_indentation_and_fences_are_ignored() {
    let rel = "exit-reports/13-perf-kvm-stat-vmexit-intel-msr-write-hlt.txt";
    let text = std::fs::read_to_string(testdata(rel)).unwrap_or_default();
    let md = format!(
        "Here is what I see:\n\n```\n{}```\n\nAny idea?\n",
        quote(&text, "    ")
    );
    same_rows(&read(rel), &read_text(&md));
}

#[test]
fn stderr_unknown_codes_attach_to_the_following_unknown_row() {
    let text = "\
Analyze events for all VMs, all VCPUs:

             VM-EXIT    Samples  Samples%     Time%    Min Time    Max Time         Avg time

                 HLT        100    50.00%    90.00%      1.00us    100.00us     50.00us ( +-   1.00% )
unknown kvm exit code:131072 on VMX
             UNKNOWN         60    30.00%     6.00%      1.00us     10.00us      5.00us ( +-   1.00% )
unknown kvm exit code:74 on VMX
             UNKNOWN         30    15.00%     3.00%      1.00us     10.00us      5.00us ( +-   1.00% )
             UNKNOWN         10     5.00%     1.00%      1.00us     10.00us      5.00us ( +-   1.00% )

Total Samples:200, Total events handled time:5500.00us.
";
    let p = read_text(text);
    let t = &p.tables[0];
    assert_eq!(t.rows.len(), 4, "unknown rows stay separate");
    let codes: Vec<Option<u64>> = t.rows.iter().map(|r| r.key.code()).collect();
    assert_eq!(codes, vec![Some(12), Some(131_072), Some(74), None]);
    // perf's table did not know 74; ours does.
    assert_eq!(t.rows[2].key.key_text(), "BUS_LOCK");
    assert!(
        t.rows[1].key.key_text().contains("0x20000"),
        "{}",
        t.rows[1].key.key_text()
    );
}

#[test]
fn live_intervals_sum_into_one_table_with_a_window() {
    let screen = |ts: &str, n: u64| {
        format!(
            "\x1b[H\x1b[2J{ts}\n\nAnalyze events for all VMs, all VCPUs:\n\n\
             {:>40}    Samples  Samples%     Time%    Min Time    Max Time         Avg time\n\n\
             {:>40} {n:>10}   100.00%   100.00%      1.00us      3.00us      2.00us ( +-   1.00% )\n\n\
             Total Samples:{n}, Total events handled time:{}.00us.\n\n",
            "VM-EXIT",
            "MSR_WRITE",
            2 * n
        )
    };
    let text: String = (0..5)
        .map(|i| screen(&format!("10:00:0{i}.000000"), 100 + i))
        .collect();
    let p = read_text(&text);
    assert_eq!(p.tables.len(), 1);
    let t = &p.tables[0];
    assert_eq!(t.count(), 100 + 101 + 102 + 103 + 104);
    let w = t.window.clone().unwrap_or_default();
    assert_eq!(w.intervals, 5);
    assert_eq!(w.duration_ns, Some(5_000_000_000));
    assert_eq!(t.printed_total.as_ref().map(|x| x.count), Some(510));
    // Pasted without the totals lines: each timestamp still ends the table above it (its
    // digits do not read as the start of a wrapped row), and the intervals still sum.
    let bare: String = text
        .lines()
        .filter(|l| !l.starts_with("Total Samples:"))
        .map(|l| format!("{l}\n"))
        .collect();
    let p = read_text(&bare);
    assert_eq!(p.tables.len(), 1, "{:?}", p.warnings);
    assert_eq!(p.tables[0].count(), 510);
    assert_eq!(p.tables[0].window.as_ref().map(|w| w.intervals), Some(5));
    assert!(p.warnings.is_empty(), "{:?}", p.warnings);
}

#[test]
fn vcpu_tables_keep_their_vcpu_and_drop_perfs_zero_min() {
    let text = "\
Analyze events for all VMs, VCPU 1:

             VM-EXIT    Samples  Samples%     Time%    Min Time    Max Time         Avg time

           MSR_WRITE         10   100.00%   100.00%      0.00us      2.00us      1.00us ( +-   1.00% )

Total Samples:10, Total events handled time:10.00us.
";
    let p = read_text(text);
    let r = &p.tables[0].rows[0];
    assert_eq!(r.vcpu, Some(1));
    assert_eq!(r.time.min_ns, None);
    assert_eq!(r.time.max_ns, Some(2_000));
    assert_eq!(p.warnings.len(), 1);
}

#[test]
fn elided_rows_warn_but_keep_what_is_there() {
    let rel = "exit-reports/13-perf-kvm-stat-vmexit-intel-msr-write-hlt.txt";
    let text = std::fs::read_to_string(testdata(rel)).unwrap_or_default();
    let cut: String = text
        .lines()
        .map(|l| {
            if l.contains("PREEMPTION_TIMER") {
                "[..]\n".to_string()
            } else {
                format!("{l}\n")
            }
        })
        .collect();
    let p = read_text(&cut);
    assert_eq!(p.tables[0].rows.len(), 8);
    assert!(p.tables[0].partial);
    // One note where the rows were cut out, one where the total says so.
    assert_eq!(p.warnings.len(), 2);
    assert!(
        p.warnings.iter().all(|w| w.message.contains("elided")),
        "{:?}",
        p.warnings
    );
}

#[test]
fn text_without_a_table_is_an_error_naming_the_line() {
    let err = sources::read_bytes(
        b"\n\nhello world\nno table here\n",
        "x.txt",
        Some(Format::PerfKvmStat),
    );
    let msg = err.map(|_| String::new()).unwrap_or_else(|e| e.to_string());
    assert!(msg.starts_with("x.txt:3:"), "{msg}");
    assert!(msg.contains("expected"), "{msg}");
    let err = sources::read_bytes(b"hello", "y.txt", None);
    assert!(err.is_err());
}

//! The perf-prof kvm-exit source on outputs of every version of `kvm-exit.c`, written here from
//! its printf formats (each input names the one it reproduces): one print at Ctrl-C, `-i`
//! intervals with `--than` event lines between them, both `--perins` styles, the p99 layout
//! of the current docs (with their `# ` prefix), `--tsc`, the early log2-histogram version, and
//! e-mail quoting.

use virtlens_core::Error;
use virtlens_core::decode::Isa;
use virtlens_core::profile::{Profile, Row, Table, TableKind};
use virtlens_core::sources::{self, Format};

fn read_text(text: &str) -> Profile {
    match sources::read_bytes(text.as_bytes(), "pasted", Some(Format::PerfProf)) {
        Ok(p) => p,
        Err(e) => panic!("pasted text: {e}"),
    }
}

fn row<'a>(t: &'a Table, key: &str) -> &'a Row {
    t.rows
        .iter()
        .find(|r| r.key.key_text() == key)
        .unwrap_or_else(|| {
            panic!(
                "no row {key} in {:?}",
                t.rows.iter().map(|r| r.key.key_text()).collect::<Vec<_>>()
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

/// One exit reason's statistics as perf-prof keeps them (ns).
#[derive(Clone, Copy)]
struct Stat {
    name: &'static str,
    n: u64,
    sum: u64,
    min: u64,
    max: u64,
}

const fn st(name: &'static str, n: u64, sum: u64, min: u64, max: u64) -> Stat {
    Stat {
        name,
        n,
        sum,
        min,
        max,
    }
}

/// `print_time()`: the wall-clock stamp on a line of its own, with a trailing space.
fn stamp(t: &str) -> String {
    format!("{t} \n")
}

/// kvm-exit.c's header and rule: `"%-*s %8s %16s %9s %9s %12s %6s\n"` (`%gsys` dropped in the
/// first versions), the name column 20 wide for VMX and 32 otherwise, after `"%s "` with
/// `[CPU]`/`[THREAD]` under `--perins`.
fn header(w: usize, perins: Option<&str>, gsys: bool) -> String {
    let mut s = String::new();
    let mut r = String::new();
    if let Some(p) = perins {
        s += &format!("{p} ");
        r += if p == "[CPU]" { "----- " } else { "-------- " };
    }
    s += &format!(
        "{:<w$} {:>8} {:>16} {:>9} {:>9} {:>12}",
        "exit_reason", "calls", "total(us)", "min(us)", "avg(us)", "max(us)"
    );
    r += &format!(
        "{} {:>8} {:>16} {:>9} {:>9} {:>12}",
        "-".repeat(w),
        "--------",
        "----------------",
        "---------",
        "---------",
        "------------"
    );
    if gsys {
        s += &format!(" {:>6}", "%gsys");
        r += " ------";
    }
    format!("{s}\n{r}\n")
}

/// A row: `"[%*d] "` (3 wide for CPUs, 6 for threads) under `--perins`, then
/// `"%-*s %8lu %16.3f %9.3f %9.3f %12.3f %6.2f\n"` with `sum/1000.0`, `min/1000.0`,
/// `sum/n/1000.0` (integer division first), `max/1000.0` and `%gsys`.
fn line(w: usize, s: Stat, inst: Option<(usize, u32)>, gsys: Option<f64>) -> String {
    let mut out = String::new();
    if let Some((width, id)) = inst {
        out += &format!("[{id:>width$}] ");
    }
    out += &format!(
        "{:<w$} {:>8} {:>16.3} {:>9.3} {:>9.3} {:>12.3}",
        s.name,
        s.n,
        s.sum as f64 / 1000.0,
        s.min as f64 / 1000.0,
        (s.sum / s.n) as f64 / 1000.0,
        s.max as f64 / 1000.0
    );
    if let Some(g) = gsys {
        out += &format!(" {g:>6.2}");
    }
    out + "\n"
}

const CTRL_C_RUN: [Stat; 4] = [
    st("HLT", 20_747, 53_004_499_016, 734, 199_989_423),
    st("MSR_WRITE", 28_853, 24_009_550, 446, 15_074),
    st("IO_INSTRUCTION", 222, 1_309_834, 1_663, 42_239),
    st("CPUID", 962, 1_071_299, 610, 13_196),
];

fn ctrl_c_run() -> String {
    let mut s = String::from("[root@kvm ~]# ./perf-prof kvm-exit -p 124604\n");
    s += &stamp("^C2024-05-06 17:34:13.858975");
    s += "kvm-exit latency\n";
    s += &header(20, None, true);
    for r in CTRL_C_RUN {
        s += &line(20, r, None, Some(100.0));
    }
    s + "\n"
}

#[test]
fn one_print_at_ctrl_c() {
    let p = read_text(&ctrl_c_run());
    assert_eq!(p.tables.len(), 1);
    let t = &p.tables[0];
    assert_eq!(t.kind, TableKind::Vmexit);
    assert_eq!(t.label.as_deref(), Some("./perf-prof kvm-exit -p 124604"));
    assert_eq!((t.isa, p.origin.isa), (Some(Isa::Vmx), Some(Isa::Vmx)));
    for s in CTRL_C_RUN {
        let r = row(t, s.name);
        assert_eq!(r.count, s.n, "{}", s.name);
        assert_eq!(r.time.total_ns, Some(s.sum), "{}", s.name);
        assert_eq!((r.time.min_ns, r.time.max_ns), (Some(s.min), Some(s.max)));
        let mean = r.time.mean_ns(r.count).unwrap();
        assert!((mean - s.sum as f64 / s.n as f64).abs() < 1e-6);
        assert!(r.latency.is_none());
    }
    assert_eq!(row(t, "HLT").key.code(), Some(12));
    let w = t.window.as_ref().unwrap();
    assert_eq!(w.start.as_deref(), Some("2024-05-06 17:34:13.858975"));
    assert_eq!(
        (w.end.clone(), w.intervals, w.duration_ns),
        (w.start.clone(), 1, None)
    );
    assert!(p.warnings.is_empty(), "{}", notes(&p));
}

#[test]
fn one_print_e_mail_quoted() {
    let quoted: String = ctrl_c_run().lines().map(|l| format!("> {l}\n")).collect();
    assert_eq!(sources::detect(quoted.as_bytes()), Some(Format::PerfProf));
    let t = &read_text(&quoted).tables[0];
    assert_eq!(t.count(), CTRL_C_RUN.iter().map(|s| s.n).sum::<u64>());
    assert_eq!(row(t, "MSR_WRITE").time.total_ns, Some(24_009_550));
}

#[test]
fn intervals_are_summed_and_slow_exit_lines_skipped() {
    // `-i 1000 --than 5ms`: a stamp and a table per interval; tep__print_event() lines after a
    // stamp for each exit slower than 5 ms.
    let first = [
        st("HLT", 1_113, 806_253_057, 816, 4_025_007),
        st("IO_INSTRUCTION", 4_188, 21_933_700, 429, 235_951),
    ];
    let second = [
        st("HLT", 1_208, 903_477_145, 1_061, 4_621_338),
        st("APIC_WRITE", 1_481, 22_191_956, 620, 11_628_216),
        st("IO_INSTRUCTION", 4_328, 22_057_770, 430, 225_165),
    ];
    let mut s = String::from("[root@kvm ~]# ./perf-prof kvm-exit -p 126934 -i 1000 --than 5ms\n");
    s += &stamp("2024-05-06 17:39:25.894653");
    s += "kvm-exit latency\n";
    s += &header(20, None, true);
    for r in first {
        s += &line(20, r, None, Some(100.0));
    }
    s += "2024-05-06 17:39:26.535148            <...> 126953 .... [078] 96822671.255015: kvm:kvm_exit: reason APIC_WRITE rip 0xfffff801b782acff info 300 0\n";
    s += "2024-05-06 17:39:26.535253            <...> 126953 d... [074] 96822671.266643: kvm:kvm_entry: vcpu 0\n";
    s += &stamp("2024-05-06 17:39:26.894654");
    s += "kvm-exit latency\n";
    s += &header(20, None, true);
    for r in second {
        s += &line(20, r, None, Some(100.0));
    }
    let p = read_text(&s);
    let t = &p.tables[0];
    let hlt = row(t, "HLT");
    assert_eq!(hlt.count, 1_113 + 1_208);
    assert_eq!(hlt.time.total_ns, Some(806_253_057 + 903_477_145));
    assert_eq!(
        (hlt.time.min_ns, hlt.time.max_ns),
        (Some(816), Some(4_621_338))
    );
    assert_eq!(row(t, "APIC_WRITE").count, 1_481);
    assert_eq!(row(t, "IO_INSTRUCTION").time.min_ns, Some(429));
    let w = t.window.as_ref().unwrap();
    assert_eq!(w.intervals, 2);
    assert_eq!(w.end.as_deref(), Some("2024-05-06 17:39:26.894654"));
    // 1.000001 s between the stamps plus one 1000 ms interval.
    assert_eq!(w.duration_ns, Some(2_000_001_000));
    assert!(
        notes(&p).contains("2 slow-exit event lines"),
        "{}",
        notes(&p)
    );
}

#[test]
fn perins_titles_of_2022_are_summed_with_a_note() {
    // 2022 `--perins`: one `kvm-exit latency THREAD %d` table per vCPU thread.
    let mut s = stamp("2024-05-06 17:47:05.729691");
    s += "kvm-exit latency THREAD 126953\n";
    s += &header(20, None, true);
    s += &line(
        20,
        st("HLT", 74, 38_394_469, 7_253, 1_075_099),
        None,
        Some(100.0),
    );
    s += &line(
        20,
        st("EXTERNAL_INTERRUPT", 1_030, 3_133_794, 330, 565_862),
        None,
        Some(43.99),
    );
    s += "kvm-exit latency THREAD 126954\n";
    s += &header(20, None, true);
    s += &line(
        20,
        st("HLT", 888, 776_830_290, 7_454, 3_914_254),
        None,
        Some(100.0),
    );
    let p = read_text(&s);
    let t = &p.tables[0];
    assert_eq!(row(t, "HLT").count, 962);
    assert_eq!(row(t, "HLT").time.min_ns, Some(7_253));
    assert_eq!(t.window.as_ref().unwrap().intervals, 1);
    assert!(
        notes(&p).contains("thread 126953, thread 126954"),
        "{}",
        notes(&p)
    );
}

#[test]
fn perins_columns_on_amd() {
    // Current `--perins` on an AMD host: `[CPU]` column, `"[%*d] "` 3 wide, 32-wide names.
    let mut s = stamp("2024-05-06 09:00:01.000100");
    s += "kvm-exit latency\n";
    s += &header(32, Some("[CPU]"), true);
    s += &line(
        32,
        st("EXIT_NPF", 5_000, 2_500_000, 300, 90_000),
        Some((3, 3)),
        Some(12.5),
    );
    s += &line(
        32,
        st("EXIT_HLT", 40, 80_000_000, 900, 9_000_000),
        Some((3, 3)),
        Some(100.0),
    );
    s += &line(
        32,
        st("EXIT_NPF", 1_000, 600_000, 250, 7_000),
        Some((3, 5)),
        Some(10.0),
    );
    let p = read_text(&s);
    let t = &p.tables[0];
    assert_eq!(t.isa, Some(Isa::Svm));
    let npf = row(t, "npf");
    assert_eq!((npf.count, npf.key.code()), (6_000, Some(0x400)));
    assert_eq!(npf.time.total_ns, Some(3_100_000));
    assert_eq!(npf.time.min_ns, Some(250));
    assert_eq!(row(t, "hlt").key.code(), Some(0x78));
    assert!(notes(&p).contains("cpu 3, cpu 5"), "{}", notes(&p));

    // `[THREAD]`, `"[%*d] "` 6 wide.
    let mut s = header(20, Some("[THREAD]"), true);
    s += &line(
        20,
        st("HLT", 10, 10_000, 500, 2_000),
        Some((6, 4321)),
        Some(100.0),
    );
    let p = read_text(&s);
    assert_eq!(row(&p.tables[0], "HLT").count, 10);
    assert!(notes(&p).contains("thread 4321"), "{}", notes(&p));
}

/// The p99 layout of docs/profilers/kvm-exit.md: `exit_reason calls total(us) min(us) avg(us)
/// p99(us) max(us) %gsys`, widths 32, 8, 16 and 12 for each time, shown behind `# `.
fn p99_doc() -> String {
    let rows = [
        (
            "EXIT_HLT",
            911,
            3_916_645_237u64,
            620u64,
            20_121_135u64,
            38_825_427u64,
        ),
        ("EXIT_MSR", 2_655, 2_412_115, 320, 2_029, 8_450),
        ("EXIT_IOIO", 62, 444_878, 1_120, 29_691, 29_691),
    ];
    let us = |ns: u64| ns as f64 / 1000.0;
    let mut s = String::from("# perf-prof kvm-exit -p 3312 -i 1000\n");
    s += &format!(
        "# {:<32} {:>8} {:>16} {:>12} {:>12} {:>12} {:>12} {:>6}\n",
        "exit_reason", "calls", "total(us)", "min(us)", "avg(us)", "p99(us)", "max(us)", "%gsys"
    );
    s += &format!(
        "# {} {} {} {} {} {} {} {}\n",
        "-".repeat(32),
        "-".repeat(8),
        "-".repeat(16),
        "-".repeat(12),
        "-".repeat(12),
        "-".repeat(12),
        "-".repeat(12),
        "-".repeat(6)
    );
    for (name, n, sum, min, p99, max) in rows {
        s += &format!(
            "# {name:<32} {n:>8} {:>16.3} {:>12.3} {:>12.3} {:>12.3} {:>12.3} {:>6.2}\n",
            us(sum),
            us(min),
            us(sum / n),
            us(p99),
            us(max),
            100.0
        );
    }
    s
}

#[test]
fn p99_layout_behind_comment_markers() {
    let text = p99_doc();
    assert_eq!(sources::detect(text.as_bytes()), Some(Format::PerfProf));
    let p = read_text(&text);
    let t = &p.tables[0];
    assert_eq!(
        t.label.as_deref(),
        Some("perf-prof kvm-exit -p 3312 -i 1000")
    );
    assert_eq!(t.isa, Some(Isa::Svm));
    let hlt = row(t, "hlt");
    assert_eq!(hlt.count, 911);
    assert_eq!(hlt.time.total_ns, Some(3_916_645_237));
    assert!(hlt.latency.is_none(), "one p99 is not a histogram");
    assert_eq!(row(t, "io").time.max_ns, Some(29_691));
    // One interval of -i 1000.
    assert_eq!(t.window.as_ref().unwrap().duration_ns, Some(1_000_000_000));
    let n = notes(&p);
    assert!(n.contains("EXIT_HLT 20121.135us"), "{n}");
    assert!(n.contains("EXIT_MSR 2.029us"), "{n}");
}

#[test]
fn tsc_units_keep_counts_only() {
    let mut s = String::from("kvm-exit latency\n");
    s += &header(20, None, true)
        .replace("(us)", "(kcyc)")
        .replace(" total(kcyc)", "total(kcyc)");
    s += &line(20, st("HLT", 5, 5_000, 900, 1_100), None, Some(100.0));
    let p = read_text(&s);
    let r = row(&p.tables[0], "HLT");
    assert_eq!((r.count, r.time.total_ns), (5, None));
    assert!(notes(&p).contains("kilocycles"), "{}", notes(&p));
}

#[test]
fn a_wrong_average_is_noted() {
    let mut s = header(20, None, true);
    s += &line(20, st("MSR_WRITE", 4, 4_000, 500, 1_500), None, Some(100.0))
        .replace("    1.000", "    9.000");
    let p = read_text(&s);
    let r = row(&p.tables[0], "MSR_WRITE");
    assert_eq!(r.time.mean_ns(r.count), Some(1_000.0));
    assert!(notes(&p).contains("avg disagrees"), "{}", notes(&p));
}

#[test]
fn early_version_with_log2_histogram_and_no_gsys() {
    // The first kvm-exit.c: print_time(), a log2 histogram of non-HLT exits titled
    // `kvm-exit latency(ns)`, then `"%-*s %8s %16s %9s %9s %12s\n"` without `%gsys`.
    let mut s = stamp("2024-05-06 08:00:00.000001");
    s += "     kvm-exit latency(ns) : count     distribution\n";
    s += "         0 -> 1          : 0        |                                        |\n";
    s += "       256 -> 511        : 12       |****                                    |\n";
    s += "       512 -> 1023       : 98       |****************************************|\n";
    s += &header(20, None, false);
    s += &line(20, st("MSR_WRITE", 98, 70_000, 512, 1_000), None, None);
    s += &line(20, st("EPT_MISCONFIG", 12, 4_000, 256, 500), None, None);
    let p = read_text(&s);
    let t = &p.tables[0];
    assert_eq!(t.count(), 110);
    assert_eq!(row(t, "EPT_MISCONFIG").time.total_ns, Some(4_000));
    assert!(p.warnings.is_empty(), "{}", notes(&p));
}

#[test]
fn two_runs_are_two_labelled_tables() {
    let mut s = ctrl_c_run();
    s += "[root@kvm ~]# ./perf-prof kvm-exit -p 124604 --tsc-offset 0\n";
    s += &stamp("^C2024-05-06 18:00:00.000000");
    s += "kvm-exit latency\n";
    s += &header(20, None, true);
    s += &line(
        20,
        st("HLT", 100, 1_000_000, 700, 90_000),
        None,
        Some(100.0),
    );
    let p = read_text(&s);
    assert_eq!(p.tables.len(), 2);
    assert_eq!(
        p.tables[1].label.as_deref(),
        Some("./perf-prof kvm-exit -p 124604 --tsc-offset 0")
    );
    assert_eq!(row(&p.tables[1], "HLT").count, 100);
    assert_eq!(row(&p.tables[0], "HLT").count, 20_747);
}

#[test]
fn detection_and_errors() {
    assert_eq!(
        sources::detect(ctrl_c_run().as_bytes()),
        Some(Format::PerfProf)
    );
    match sources::read_bytes(b"kvm exit stuff\n", "junk.txt", Some(Format::PerfProf)) {
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
        sources::read_bytes(b"", "empty.txt", Some(Format::PerfProf)),
        Err(Error::Input { .. })
    ));
}

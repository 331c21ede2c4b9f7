//! The trace-text source on the real samples (perf top 21, perf script 24, trace-cmd 30),
//! on hand-written multi-thread traces in every dialect whose timestamps imply exact
//! durations, and on one hand-written line per event text variant, written from the
//! kernel's `TP_printk` formats (cited next to each line).

use std::collections::BTreeMap;
use std::path::PathBuf;

use virtlens_core::Error;
use virtlens_core::decode::Isa;
use virtlens_core::profile::{Access, Key, Latency, Profile, Row, Table, TableKind};
use virtlens_core::sources::{self, Format, looks_like_trace_text};
use virtlens_core::testing::lookup_name;

fn data(rel: &str) -> PathBuf {
    virtlens_testkit::testdata("exit-reports").join(rel)
}

fn sample(prefix: &str) -> (PathBuf, String) {
    let dir = data("");
    let name = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().to_string())
        .find(|n| n.starts_with(prefix))
        .unwrap_or_else(|| panic!("no sample {prefix}"));
    let path = dir.join(&name);
    let text = std::fs::read_to_string(&path).unwrap();
    (path, text)
}

fn read_path(path: &std::path::Path) -> Profile {
    sources::read_path(path, None).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn read_text(text: &str) -> Profile {
    sources::read_bytes(text.as_bytes(), "trace", Some(Format::TraceText))
        .unwrap_or_else(|e| panic!("{e}\n{text}"))
}

fn table<'a>(p: &'a Profile, kind: &TableKind) -> Option<&'a Table> {
    p.tables.iter().find(|t| &t.kind == kind)
}

fn events_kind() -> TableKind {
    TableKind::Events
}

/// Count per key text, summed over VMs and vCPUs.
fn counts(t: Option<&Table>) -> BTreeMap<String, u64> {
    let mut m = BTreeMap::new();
    for r in t.map(|t| t.rows.as_slice()).unwrap_or_default() {
        *m.entry(r.key.key_text()).or_insert(0) += r.count;
    }
    m
}

/// Independent of the parser: the event name of each line (a `kvm:NAME:` or `kvm_NAME:`
/// token), and for kvm_exit the word after `reason `, for kvm_userspace_exit likewise.
fn independent(
    text: &str,
) -> (
    BTreeMap<String, u64>,
    BTreeMap<String, u64>,
    BTreeMap<String, u64>,
) {
    let (mut events, mut reasons, mut user) = (BTreeMap::new(), BTreeMap::new(), BTreeMap::new());
    for line in text.lines() {
        let Some(tok) = line
            .split_whitespace()
            .find(|t| t.ends_with(':') && (t.starts_with("kvm:") || t.starts_with("kvm_")))
        else {
            continue;
        };
        let name = tok
            .trim_start_matches("kvm:")
            .trim_end_matches(':')
            .to_string();
        *events.entry(name.clone()).or_insert(0u64) += 1;
        let word = line
            .split("reason ")
            .nth(1)
            .and_then(|r| r.split_whitespace().next())
            .map(str::to_string);
        match (name.as_str(), word) {
            ("kvm_exit", Some(w)) => *reasons.entry(w).or_insert(0u64) += 1,
            ("kvm_userspace_exit", Some(w)) => *user.entry(w).or_insert(0u64) += 1,
            _ => {}
        }
    }
    (events, reasons, user)
}

/// Reason names as printed, mapped to the canonical names the profile keys use.
fn canonical(reasons: BTreeMap<String, u64>) -> BTreeMap<String, u64> {
    let isa = virtlens_core::testing::guess_isa(reasons.keys().map(String::as_str));
    let mut m = BTreeMap::new();
    for (name, n) in reasons {
        let key = lookup_name(isa, &name).map_or(name, |i| i.name.to_string());
        *m.entry(key).or_insert(0) += n;
    }
    m
}

#[test]
fn trace_samples_hold_the_counts_of_their_lines() {
    for prefix in ["24-", "30-"] {
        let (path, text) = sample(prefix);
        assert!(looks_like_trace_text(text.as_bytes()), "{prefix}");
        let p = read_path(&path);
        assert_eq!(p.origin.format, "trace-text");
        let (events, reasons, user) = independent(&text);
        assert!(!events.is_empty());
        assert_eq!(counts(table(&p, &events_kind())), events, "{prefix} events");
        assert_eq!(
            counts(table(&p, &TableKind::Vmexit)),
            canonical(reasons),
            "{prefix} exits"
        );
        assert_eq!(
            counts(table(&p, &TableKind::UserspaceExit)),
            user,
            "{prefix} userspace exits"
        );
    }
}

#[test]
fn sample_30_trace_cmd_npf_storm_and_its_interrupted_last_line() {
    let (path, text) = sample("30-");
    let p = read_path(&path);
    assert_eq!(p.origin.isa, Some(Isa::Svm));
    let exits = table(&p, &TableKind::Vmexit).unwrap();
    assert_eq!(exits.rows.len(), 1);
    let npf = &exits.rows[0];
    assert_eq!(
        (npf.key.key_text().as_str(), npf.key.code(), npf.count),
        ("npf", Some(0x400), 10)
    );
    // Only exits, no entries: nothing to pair, so no durations are invented.
    assert_eq!(npf.time.total_ns, None);
    // 28714.545983 → 28714.546002: the window is exact.
    assert_eq!(
        exits.window.as_ref().and_then(|w| w.duration_ns),
        Some(19_000)
    );
    // The last line (`qemu-system-x86^Ctrace-cmd: Received SIGINT`) was cut by Ctrl-C: it is
    // not an event, not counted, and noted with its line number.
    let last = text.lines().count();
    let note = p.warnings.iter().find(|n| n.line == Some(last)).unwrap();
    assert!(note.message.contains("interrupted"), "{}", note.message);
    // The shell prompt on line 1 is furniture: no note.
    assert!(
        p.warnings.iter().all(|n| n.line != Some(1)),
        "{:?}",
        p.warnings
    );
    assert!(
        p.warnings
            .iter()
            .any(|n| n.message.contains("trace-cmd report"))
    );
}

#[test]
fn sample_24_perf_script_custom_fields() {
    let (path, _) = sample("24-");
    let p = read_path(&path);
    assert_eq!(p.origin.isa, Some(Isa::Vmx));
    let row = &table(&p, &TableKind::Vmexit).unwrap().rows[0];
    assert_eq!(
        (row.key.key_text().as_str(), row.vcpu),
        ("TRIPLE_FAULT", Some(0))
    );
    // `...` on line 1: the author cut lines; said so.
    assert!(
        p.warnings
            .iter()
            .any(|n| n.line == Some(1) && n.message.contains("elided"))
    );
    // No thread column: paired per CPU, and said so.
    assert!(
        p.warnings
            .iter()
            .any(|n| n.message.contains("per host CPU"))
    );
}

/// Sample 21 is perf top's percentage view: counts are estimates, round(pct × 887000).
#[test]
fn sample_21_perf_top_percentages_become_estimated_counts() {
    let (path, text) = sample("21-");
    assert!(looks_like_trace_text(text.as_bytes()));
    let p = read_path(&path);
    let mut expected: BTreeMap<String, u64> = BTreeMap::new();
    for line in text.lines().skip(2) {
        let mut w = line.split_whitespace();
        let pct = w.next().unwrap().trim_end_matches('%');
        assert_eq!(w.next(), Some("reason"));
        let reason = w.next().unwrap().to_string();
        let (int, frac) = pct.split_once('.').unwrap();
        let hundredths: u64 = int.parse::<u64>().unwrap() * 100 + frac.parse::<u64>().unwrap();
        *expected.entry(reason).or_insert(0) += hundredths;
    }
    let expected: BTreeMap<String, u64> = expected
        .into_iter()
        .map(|(k, h)| (k, (h * 887_000 + 5_000) / 10_000))
        .collect();
    let exits = table(&p, &TableKind::Vmexit).unwrap();
    assert_eq!(counts(Some(exits)), expected);
    assert_eq!(expected["MSR_WRITE"], 334_044); // (36.22 + 1.44) % of 887K
    assert_eq!(exits.printed_total.as_ref().map(|t| t.count), Some(887_000));
    assert_eq!(exits.isa, Some(Isa::Vmx));
    assert!(
        exits
            .rows
            .iter()
            .all(|r| r.time.total_ns.is_none() && r.vcpu.is_none())
    );
    let note = p.warnings.iter().find(|n| n.line == Some(1)).unwrap();
    assert!(note.message.contains("estimated"), "{}", note.message);
}

#[test]
fn perf_top_screens_and_headerless_rows() {
    // Two screens: perf top's counts are cumulative, the last one wins.
    let two = "Samples: 1K of event 'kvm:kvm_exit', 4000 Hz, Event count (approx.): 900\n\
               Overhead  Trace output\n\
               \x20 50.00%  reason HLT rip 0x1 info 0 0\n\
               \x20 50.00%  reason MSR_WRITE rip 0x2 info 0 0\n\
               Samples: 2K of event 'kvm:kvm_exit', 4000 Hz, Event count (approx.): 1500\n\
               Overhead  Trace output\n\
               \x20 75.00%  reason HLT rip 0x1 info 0 0\n\
               \x20 25.00%  reason MSR_WRITE rip 0x2 info 0 0\n";
    let p = read_text(two);
    assert_eq!(p.tables.len(), 1);
    let c = counts(p.tables.first());
    assert_eq!((c["HLT"], c["MSR_WRITE"]), (1500, 500));
    assert!(
        p.warnings
            .iter()
            .any(|n| n.line == Some(1) && n.message.contains("superseded"))
    );
    // Rows without any header: shares per 10,000, said so.
    let p = read_text("  12.50%  reason EXIT_NPF rip 0x0 info 1 2\n");
    assert_eq!(counts(p.tables.first())["npf"], 1250);
    assert!(p.warnings.iter().any(|n| n.message.contains("0.01 %")));
    // `perf report --sort trace --stdio` of kvm_pio: port keys.
    let report = "# Samples: 40  of event 'kvm:kvm_pio'\n# Event count (approx.): 40\n#\n\
                  # Overhead  Trace output\n# ........  ............\n#\n\
                  \x20   75.00%  pio_read at 0x608 size 4 count 1 val 0x1234 \n\
                  \x20   25.00%  pio_write at 0x70 size 1 count 1 val 0x0 \n";
    let p = read_text(report);
    let ports = table(&p, &TableKind::Ioport).unwrap();
    assert_eq!(
        counts(Some(ports)),
        BTreeMap::from([("0x608".into(), 30), ("0x70".into(), 10)])
    );
}

// ---------------------------------------------------------------------------------------
// Pairing, in every dialect.

/// (thread, seconds, event, text). Thread 0 is vCPU 0 (tid 4330, CPU 1), thread 1 is vCPU 1
/// (tid 4331, CPU 2), both of VMM pid 4321. Durations are implied by the timestamps, printed
/// with nanoseconds (`perf script --ns`, `trace-cmd report -t`).
const SCENARIO: &[(usize, &str, &str, &str)] = &[
    (
        0,
        "100.000000100",
        "kvm_exit",
        "vcpu 0 reason EXTERNAL_INTERRUPT rip 0xffffffff81000010 info1 0x0000000000000000 info2 0x0000000000000000 intr_info 0x800000ec error_code 0x00000000",
    ),
    (
        1,
        "100.000000200",
        "kvm_exit",
        "vcpu 1 reason EXTERNAL_INTERRUPT rip 0xffffffff81000020 info1 0x0000000000000000 info2 0x0000000000000000 intr_info 0x800000ec error_code 0x00000000",
    ),
    (
        0,
        "100.000000350",
        "kvm_entry",
        "vcpu 0, rip 0xffffffff81000010",
    ), // 250 ns
    (
        1,
        "100.000000700",
        "kvm_entry",
        "vcpu 1, rip 0xffffffff81000020",
    ), // 500 ns
    (
        1,
        "100.000000800",
        "kvm_exit",
        "vcpu 1 reason MSR_WRITE rip 0xffffffff81000030 info1 0x0000000000000000 info2 0x0000000000000000 intr_info 0x00000000 error_code 0x00000000",
    ),
    (
        1,
        "100.000000810",
        "kvm_msr",
        "msr_write 6e0 = 0x2a5b3c4d5e",
    ),
    (
        0,
        "100.000001000",
        "kvm_exit",
        "vcpu 0 reason EXTERNAL_INTERRUPT rip 0xffffffff81000010 info1 0x0000000000000000 info2 0x0000000000000000 intr_info 0x800000ec error_code 0x00000000",
    ),
    (
        1,
        "100.000001000",
        "kvm_entry",
        "vcpu 1, rip 0xffffffff81000030",
    ), // MSR_WRITE 200, msr 190
    (
        0,
        "100.000001750",
        "kvm_entry",
        "vcpu 0, rip 0xffffffff81000010",
    ), // 750 ns
    (
        0,
        "100.000002000",
        "kvm_exit",
        "vcpu 0 reason IO_INSTRUCTION rip 0xffffffff81000040 info1 0x0000000003f80000 info2 0x0000000000000000 intr_info 0x00000000 error_code 0x00000000",
    ),
    (
        0,
        "100.000002100",
        "kvm_pio",
        "pio_write at 0x3f8 size 1 count 1 val 0x41 ",
    ),
    (
        0,
        "100.000002200",
        "kvm_userspace_exit",
        "reason KVM_EXIT_IO (2)",
    ),
    (
        0,
        "100.000003000",
        "kvm_entry",
        "vcpu 0, rip 0xffffffff81000040",
    ), // IO 1000, pio 900
    (
        0,
        "100.000004000",
        "kvm_exit",
        "vcpu 0 reason EPT_MISCONFIG rip 0xffffffff81000050 info1 0x0000000000000000 info2 0x0000000000000000 intr_info 0x00000000 error_code 0x00000000",
    ),
    (
        0,
        "100.000004050",
        "kvm_mmio",
        "mmio write len 4 gpa 0xfebf1000 val 0x1",
    ),
    (
        0,
        "100.000004550",
        "kvm_entry",
        "vcpu 0, rip 0xffffffff81000050",
    ), // 550, mmio write 500
    (
        0,
        "100.000005000",
        "kvm_exit",
        "vcpu 0 reason EPT_MISCONFIG rip 0xffffffff81000060 info1 0x0000000000000000 info2 0x0000000000000000 intr_info 0x00000000 error_code 0x00000000",
    ),
    (
        0,
        "100.000005010",
        "kvm_mmio",
        "mmio unsatisfied-read len 4 gpa 0xfed000f0 val 0x0",
    ),
    (
        0,
        "100.000005020",
        "kvm_userspace_exit",
        "reason KVM_EXIT_MMIO (6)",
    ),
    (
        0,
        "100.000005800",
        "kvm_mmio",
        "mmio read len 4 gpa 0xfed000f0 val 0x1234",
    ), // read: exit → here, 800
    (
        0,
        "100.000005900",
        "kvm_entry",
        "vcpu 0, rip 0xffffffff81000060",
    ), // 900
    (
        0,
        "100.000006000",
        "kvm_exit",
        "vcpu 0 reason HLT rip 0xffffffff81000070 info1 0x0000000000000000 info2 0x0000000000000000 intr_info 0x00000000 error_code 0x00000000",
    ),
    // A new exit before an entry replaces the unfinished one: HLT gets no duration.
    (
        0,
        "100.000007000",
        "kvm_exit",
        "vcpu 0 reason MSR_READ rip 0xffffffff81000080 info1 0x0000000000000000 info2 0x0000000000000000 intr_info 0x00000000 error_code 0x00000000",
    ),
    (0, "100.000007100", "kvm_msr", "msr_read 3b = 0x0"),
    (
        0,
        "100.000007300",
        "kvm_entry",
        "vcpu 0, rip 0xffffffff81000080",
    ), // 300, msr 200
    (
        0,
        "100.000008000",
        "kvm_exit",
        "vcpu 0 reason CPUID rip 0xffffffff81000090 info1 0x0000000000000000 info2 0x0000000000000000 intr_info 0x00000000 error_code 0x00000000",
    ),
    // An entry stamped before its exit (clock skew between CPUs) is skipped.
    (
        0,
        "100.000007900",
        "kvm_entry",
        "vcpu 0, rip 0xffffffff81000090",
    ),
];

#[derive(Debug, Clone, Copy, PartialEq)]
enum Dialect {
    PerfScript,
    PerfScriptPidTid,
    PerfScriptCpuOnly,
    TraceCmd,
    Ftrace,
    FtraceTgid,
}

fn render(d: Dialect) -> String {
    let mut out = String::new();
    match d {
        Dialect::Ftrace | Dialect::FtraceTgid => out.push_str(
            "# tracer: nop\n#\n# entries-in-buffer/entries-written: 27/27   #P:4\n#\n\
             #                                _-----=> irqs-off/BH-disabled\n\
             #           TASK-PID     CPU#  |||||  TIMESTAMP  FUNCTION\n\
             #              | |         |   |||||     |         |\n",
        ),
        Dialect::TraceCmd => out.push_str("cpus=4\nversion = 7\nCPU 0 is empty\n"),
        _ => {}
    }
    for &(thread, ts, event, text) in SCENARIO {
        let comm = format!("CPU {thread}/KVM");
        let tid = 4330 + thread;
        let cpu = 1 + thread;
        let kvm_event = format!("kvm:{event}");
        let line = match d {
            Dialect::PerfScript => {
                format!("{comm:>16} {tid:>6} [{cpu:03}] {ts}: {kvm_event:>22}: {text}")
            }
            Dialect::PerfScriptPidTid => {
                format!("{comm} 4321/{tid} [{cpu:03}] {ts}: {kvm_event}: {text}")
            }
            Dialect::PerfScriptCpuOnly => format!("    [{cpu:03}]   {ts}: {kvm_event:>30}: {text}"),
            Dialect::TraceCmd => {
                format!(
                    "{comm:>16}-{tid:<5} [{cpu:03}] {ts}: {:<20} {text}",
                    format!("{event}:")
                )
            }
            Dialect::Ftrace => {
                format!("{comm:>16}-{tid:<7} [{cpu:03}] d..2. {ts:>12}: {event}: {text}")
            }
            Dialect::FtraceTgid => {
                format!("{comm:>16}-{tid:<7} (   4321) [{cpu:03}] ..... {ts:>12}: {event}: {text}")
            }
        };
        out.push_str(&line);
        out.push('\n');
    }
    out
}

fn row<'a>(p: &'a Profile, kind: TableKind, key: &str, vcpu: Option<u32>) -> &'a Row {
    let t = table(p, &kind).unwrap_or_else(|| panic!("no {kind} table"));
    t.rows
        .iter()
        .find(|r| r.key.key_text() == key && (vcpu.is_none() || r.vcpu == vcpu))
        .unwrap_or_else(|| panic!("no {key} ({vcpu:?}) in {kind}: {:?}", t.rows))
}

/// (count, total, min, max) of a row.
fn stats(r: &Row) -> (u64, Option<u64>, Option<u64>, Option<u64>) {
    (r.count, r.time.total_ns, r.time.min_ns, r.time.max_ns)
}

fn p50(r: &Row) -> Option<u64> {
    r.latency.as_ref().and_then(|l| l.quantile_ns(0.5))
}

/// The p50 the histogram reports for these durations (values above 255 ns share buckets).
fn hist_p50(values: &[u64]) -> Option<u64> {
    let mut l = Latency::new();
    for &v in values {
        l.record(v);
    }
    l.quantile_ns(0.5)
}

#[test]
fn exits_pair_with_entries_per_thread_in_every_dialect() {
    for d in [
        Dialect::PerfScript,
        Dialect::PerfScriptPidTid,
        Dialect::PerfScriptCpuOnly,
        Dialect::TraceCmd,
        Dialect::Ftrace,
        Dialect::FtraceTgid,
    ] {
        let text = render(d);
        assert!(looks_like_trace_text(text.as_bytes()), "{d:?}");
        assert_eq!(
            sources::detect(text.as_bytes()),
            Some(Format::TraceText),
            "{d:?}"
        );
        let p = read_text(&text);
        let exit = |key, vcpu| row(&p, TableKind::Vmexit, key, Some(vcpu));
        let ext0 = exit("EXTERNAL_INTERRUPT", 0);
        assert_eq!(stats(ext0), (2, Some(1_000), Some(250), Some(750)), "{d:?}");
        assert_eq!(p50(ext0), Some(250), "{d:?}");
        let ext1 = exit("EXTERNAL_INTERRUPT", 1);
        assert_eq!(stats(ext1), (1, Some(500), Some(500), Some(500)), "{d:?}");
        assert_eq!(p50(ext1), hist_p50(&[500]), "{d:?}");
        assert_eq!(
            stats(exit("MSR_WRITE", 1)),
            (1, Some(200), Some(200), Some(200))
        );
        assert_eq!(p50(exit("MSR_WRITE", 1)), Some(200));
        assert_eq!(
            stats(exit("IO_INSTRUCTION", 0)),
            (1, Some(1_000), Some(1_000), Some(1_000))
        );
        let misconfig = exit("EPT_MISCONFIG", 0);
        assert_eq!(
            stats(misconfig),
            (2, Some(1_450), Some(550), Some(900)),
            "{d:?}"
        );
        assert_eq!(p50(misconfig), hist_p50(&[550, 900]));
        assert_eq!(
            stats(exit("HLT", 0)),
            (1, None, None, None),
            "replaced: {d:?}"
        );
        assert_eq!(
            stats(exit("MSR_READ", 0)),
            (1, Some(300), Some(300), Some(300))
        );
        assert_eq!(
            stats(exit("CPUID", 0)),
            (1, None, None, None),
            "end before begin: {d:?}"
        );
        let pio = row(&p, TableKind::Ioport, "0x3f8", Some(0));
        assert_eq!(
            pio.key,
            Key::Port {
                port: 0x3f8,
                access: Some(Access::Out)
            }
        );
        assert_eq!(stats(pio), (1, Some(900), Some(900), Some(900)), "{d:?}");
        let write = row(&p, TableKind::Mmio, "0xfebf1000", Some(0));
        assert_eq!(write.key.access(), Some(Access::Write));
        assert_eq!(stats(write), (1, Some(500), Some(500), Some(500)), "{d:?}");
        let read = row(&p, TableKind::Mmio, "0xfed000f0", Some(0));
        assert_eq!(read.key.access(), Some(Access::Read));
        assert_eq!(
            stats(read),
            (1, Some(800), Some(800), Some(800)),
            "unsatisfied ignored"
        );
        assert_eq!(table(&p, &TableKind::Mmio).map(|t| t.count()), Some(2));
        let tsc = row(&p, TableKind::Msr, "0x6e0", Some(1));
        assert_eq!(
            (tsc.key.access(), stats(tsc)),
            (Some(Access::Write), (1, Some(190), Some(190), Some(190)))
        );
        let adj = row(&p, TableKind::Msr, "0x3b", Some(0));
        assert_eq!(
            (adj.key.access(), stats(adj)),
            (Some(Access::Read), (1, Some(200), Some(200), Some(200)))
        );
        let user = counts(table(&p, &TableKind::UserspaceExit));
        assert_eq!(
            user,
            BTreeMap::from([("KVM_EXIT_IO".into(), 1), ("KVM_EXIT_MMIO".into(), 1)])
        );
        let events: u64 = table(&p, &events_kind()).map_or(0, Table::count);
        assert_eq!(events, SCENARIO.len() as u64, "{d:?}");
        let window = table(&p, &TableKind::Vmexit).and_then(|t| t.window.clone());
        assert_eq!(window.and_then(|w| w.duration_ns), Some(7_900), "{d:?}");
        let pid = exit("MSR_READ", 0).pid;
        let expected_pid =
            matches!(d, Dialect::PerfScriptPidTid | Dialect::FtraceTgid).then_some(4321);
        assert_eq!(pid, expected_pid, "{d:?}");
        let dialect_note = match d {
            Dialect::TraceCmd => "trace-cmd report",
            Dialect::Ftrace | Dialect::FtraceTgid => "raw ftrace",
            _ => "perf script",
        };
        assert!(
            p.warnings.iter().any(|n| n.message.contains(dialect_note)),
            "{d:?}: {:?}",
            p.warnings
        );
        // Headers are furniture: the only line notes are about the dialect and pairing.
        assert!(
            p.warnings
                .iter()
                .all(|n| !n.message.contains("not an event")),
            "{d:?}: {:?}",
            p.warnings
        );
    }
}

#[test]
fn nanosecond_stamps_are_exact_and_raw_clocks_give_no_durations() {
    let ns = "CPU 0/KVM-77 [000] 5.000000001: kvm_exit: vcpu 0 reason HLT rip 0x1 info1 0x0 info2 0x0 intr_info 0x0 error_code 0x0\n\
              CPU 0/KVM-77 [000] 5.000000250: kvm_entry: vcpu 0, rip 0x1\n";
    let p = read_text(ns);
    assert_eq!(
        stats(row(&p, TableKind::Vmexit, "HLT", None)),
        (1, Some(249), Some(249), Some(249))
    );
    let raw = "CPU 0/KVM-77 [000] 123456: kvm_exit: vcpu 0 reason HLT rip 0x1\n\
               CPU 0/KVM-77 [000] 123999: kvm_entry: vcpu 0, rip 0x1\n";
    let p = read_text(raw);
    assert_eq!(
        stats(row(&p, TableKind::Vmexit, "HLT", None)),
        (1, None, None, None)
    );
    assert!(
        p.warnings
            .iter()
            .any(|n| n.line == Some(1) && n.message.contains("raw trace clock"))
    );
}

// ---------------------------------------------------------------------------------------
// Every event text variant, one hand-written line each.

/// `(line, table, key)`: the line read alone gives one row `key` in `table` (and the event in
/// the `events` table).
fn one(line: &str) -> Profile {
    read_text(&format!("{line}\n"))
}

fn only_key(p: &Profile, kind: TableKind) -> (String, Option<u64>, Option<u32>) {
    let t = table(p, &kind).unwrap_or_else(|| panic!("no {kind} table in {:?}", p.tables));
    assert_eq!(t.rows.len(), 1, "{:?}", t.rows);
    let r = &t.rows[0];
    (r.key.key_text(), r.key.code(), r.vcpu)
}

fn event_names(p: &Profile) -> Vec<String> {
    counts(table(p, &events_kind())).into_keys().collect()
}

#[test]
fn kvm_exit_in_every_era() {
    let pre = "qemu-kvm-1234 [000] 10.000001: kvm_exit: ";
    let cases: &[(&str, &str, Option<u64>, Option<u32>)] = &[
        // ~2010, `TP_printk("reason %s rip 0x%lx", …)` with lowercase VMX names.
        (
            "reason apic_access rip 0xc011518c",
            "APIC_ACCESS",
            Some(44),
            None,
        ),
        (
            "reason io_instruction rip 0xc011518c",
            "IO_INSTRUCTION",
            Some(30),
            None,
        ),
        // 2015–2020, `"reason %s rip 0x%lx info %llx %llx"`.
        (
            "reason EXCEPTION_NMI rip 0x1007 info 66 80000b0e",
            "EXCEPTION_NMI",
            Some(0),
            None,
        ),
        // 2020+, `"vcpu %u reason %s%s%s rip 0x%lx info1 0x%016llx info2 0x%016llx intr_info
        // 0x%08x error_code 0x%08x"`.
        (
            "vcpu 2 reason EXTERNAL_INTERRUPT rip 0xffffffff81b0759a info1 0x0000000000000000 info2 0x0000000000000000 intr_info 0x800000ec error_code 0x00000000",
            "EXTERNAL_INTERRUPT",
            Some(1),
            Some(2),
        ),
        // SVM, lowercase kernel names and libtraceevent's `EXIT_` names.
        (
            "vcpu 0 reason npf rip 0x0 info1 0x0000000100000004 info2 0x00000000fed000f0 intr_info 0x00000000 error_code 0x00000000",
            "npf",
            Some(0x400),
            Some(0),
        ),
        (
            "reason EXIT_NPF rip 0x0 info 1680000007 1729a1000",
            "npf",
            Some(0x400),
            None,
        ),
        // libtraceevent plugin, code missing from its table: `"reason UNKNOWN (%llu)"`.
        (
            "reason UNKNOWN (131072) rip 0x0 info 0 0",
            "UNKNOWN(0x20000)",
            Some(0x20000),
            None,
        ),
    ];
    for &(text, key, code, vcpu) in cases {
        let p = one(&format!("{pre}{text}"));
        assert_eq!(
            only_key(&p, TableKind::Vmexit),
            (key.to_string(), code, vcpu),
            "{text}"
        );
        assert_eq!(event_names(&p), ["kvm_exit"]);
    }
}

#[test]
fn failed_vmentry_flag_spellings() {
    // kvm_print_exit_reason(): the basic reason, " ", then __print_flags(exit_reason & ~0xffff,
    // " ", VMX_EXIT_REASON_FLAGS) → `INVALID_STATE FAILED_VMENTRY`; `|` joined also accepted.
    for text in [
        "vcpu 0 reason INVALID_STATE FAILED_VMENTRY rip 0xfff0 info1 0x0000000000000000 info2 0x0000000000000000 intr_info 0x00000000 error_code 0x00000000",
        "vcpu 0 reason INVALID_STATE|FAILED_VMENTRY rip 0xfff0 info1 0x0 info2 0x0 intr_info 0x0 error_code 0x0",
    ] {
        let p = one(&format!("CPU 0/KVM-99 [003] 1.000000: kvm_exit: {text}"));
        let (key, code, _) = only_key(&p, TableKind::Vmexit);
        assert!(key.starts_with("INVALID_STATE"), "{key}");
        assert_eq!(code.map(|c| c & 0xffff), Some(33));
        assert_eq!(p.origin.isa, Some(Isa::Vmx));
        assert!(
            p.warnings
                .iter()
                .any(|n| n.line == Some(1) && n.message.contains("FAILED_VMENTRY")),
            "{:?}",
            p.warnings
        );
    }
}

#[test]
fn cant_find_field_noise_is_never_fatal() {
    // libtraceevent's plugin lost its fields after the 2020 rename; the kernel text follows.
    let p = one(
        "qemu-system-x86-4321 [001] 50.000001: kvm_nested_vmexit: CAN'T FIND FIELD \"rip\"<CANT FIND FIELD exit_code>vcpu 0 reason npf rip 0x7f info1 0x0000000000000000 info2 0x0000000000000000 intr_info 0x00000000 error_code 0x00000000",
    );
    assert_eq!(event_names(&p), ["kvm_nested_vmexit"]);
    assert!(table(&p, &TableKind::Vmexit).is_none());
    let p = one(
        "qemu-system-x86-4321 [001] 50.000001: kvm_exit: CAN'T FIND FIELD \"exit_reason\"vcpu 3 reason npf rip 0x7f info1 0x0 info2 0x0 intr_info 0x0 error_code 0x0",
    );
    assert_eq!(
        only_key(&p, TableKind::Vmexit),
        ("npf".into(), Some(0x400), Some(3))
    );
    assert!(
        p.warnings
            .iter()
            .any(|n| n.message.contains("CAN'T FIND FIELD"))
    );
}

#[test]
fn the_other_kvm_events() {
    let pre = "CPU 1/KVM 4321 [002] 7.123456: kvm:";
    // kvm_entry: `"vcpu %u, rip 0x%lx%s"` (`[immediate exit]` since 2024), before: `"vcpu %u"`.
    for text in [
        "vcpu 1, rip 0x100146",
        "vcpu 1, rip 0x100146 [immediate exit]",
        "vcpu 1",
    ] {
        let p = one(&format!("{pre}kvm_entry: {text}"));
        assert_eq!(event_names(&p), ["kvm_entry"], "{text}");
        assert_eq!(
            table(&p, &events_kind()).unwrap().rows[0].vcpu,
            Some(1),
            "{text}"
        );
    }
    // kvm_pio: `"pio_%s at 0x%x size %d count %d val 0x%x %s"`; ~2010 without val.
    let pio: &[(&str, &str, Access)] = &[
        ("pio_read at 0xc13e size 2 count 1", "0xc13e", Access::In),
        (
            "pio_write at 0x3f8 size 1 count 1 val 0x41 ",
            "0x3f8",
            Access::Out,
        ),
        (
            "pio_write at 0x1f0 size 2 count 256 val 0x1234 (...)",
            "0x1f0",
            Access::Out,
        ),
    ];
    for &(text, key, access) in pio {
        let p = one(&format!("{pre}kvm_pio: {text}"));
        let r = &table(&p, &TableKind::Ioport).unwrap().rows[0];
        assert_eq!(
            (r.key.key_text().as_str(), r.key.access()),
            (key, Some(access)),
            "{text}"
        );
    }
    // kvm_mmio: `"mmio %s len %u gpa 0x%llx val 0x%llx"`.
    let p = one(&format!(
        "{pre}kvm_mmio: mmio unsatisfied-read len 4 gpa 0xfed000f0 val 0x0"
    ));
    assert!(
        table(&p, &TableKind::Mmio).is_none(),
        "unsatisfied reads are not accesses"
    );
    assert_eq!(event_names(&p), ["kvm_mmio"]);
    for (text, access) in [
        ("mmio read len 4 gpa 0xfed000f0 val 0x1234", Access::Read),
        ("mmio write len 4 gpa 0xfee000b0 val 0x0", Access::Write),
    ] {
        let p = one(&format!("{pre}kvm_mmio: {text}"));
        assert_eq!(
            table(&p, &TableKind::Mmio).unwrap().rows[0].key.access(),
            Some(access)
        );
    }
    // kvm_msr: `"msr_%s %x = 0x%llx%s"` (` (#GP)` on a fault).
    for (text, key, access) in [
        ("msr_write 6e0 = 0x2a5b3c4d5e", "0x6e0", Access::Write),
        ("msr_read 3b = 0x0 (#GP)", "0x3b", Access::Read),
        ("msr_write 40000070 = 0x1", "0x40000070", Access::Write),
    ] {
        let p = one(&format!("{pre}kvm_msr: {text}"));
        let r = &table(&p, &TableKind::Msr).unwrap().rows[0];
        assert_eq!(
            (r.key.key_text().as_str(), r.key.access()),
            (key, Some(access)),
            "{text}"
        );
    }
    // kvm_userspace_exit: `"reason %s (%d)"`.
    for (text, key) in [
        ("reason KVM_EXIT_IO (2)", "KVM_EXIT_IO"),
        ("reason KVM_EXIT_SHUTDOWN (8)", "KVM_EXIT_SHUTDOWN"),
        ("reason restart (4)", "restart"),
    ] {
        let p = one(&format!("{pre}kvm_userspace_exit: {text}"));
        let kind = TableKind::UserspaceExit;
        assert_eq!(only_key(&p, kind).0, key);
    }
    // kvm_hypercall: `"nr 0x%lx a0 0x%lx a1 0x%lx a2 0x%lx a3 0x%lx"`; kvm_hv_hypercall:
    // `"code 0x%x %s cnt 0x%x idx 0x%x in 0x%llx out 0x%llx"` (later `var_cnt … rep_cnt …`).
    for (line, key) in [
        ("kvm_hypercall: nr 0x5 a0 0x1 a1 0x0 a2 0x0 a3 0x0", "0x5"),
        (
            "kvm_hv_hypercall: code 0x8 fast cnt 0x0 idx 0x0 in 0x0 out 0x0",
            "0x8",
        ),
        (
            "kvm_hv_hypercall: code 0x13 slow var_cnt 0x0 rep_cnt 0x2 idx 0x0 in 0x1000 out 0x0",
            "0x13",
        ),
    ] {
        let p = one(&format!("{pre}{line}"));
        assert_eq!(only_key(&p, TableKind::Hypercall).0, key, "{line}");
    }
    // Counted by name: kvm_apic_ipi `"dst %x vec %u (%s|%s|%s|%s|%s)"`, kvm_emulate_insn `"%x:%llx:%s (%s)%s"`,
    // kvm_cpuid `"func %x idx %x rax %lx rbx %lx rcx %lx rdx %lx, cpuid entry %s%s"`,
    // kvm_set_irq `"gsi %u level %d source %d"`, kvm_nested_vmenter `"rip: 0x%016llx vmcb:
    // 0x%016llx nested_rip: …"`, kvm_fpu `"%s"`.
    for line in [
        "kvm_apic_ipi: dst 1 vec 253 (Fixed|physical|assert|edge|dst)",
        "kvm_emulate_insn: 0:ffffffff8104f5a6:0f 01 d9 (prot64)",
        "kvm_cpuid: func 40000001 idx 0 rax 1 rbx 0 rcx 0 rdx 0, cpuid entry found",
        "kvm_set_irq: gsi 11 level 1 source 0",
        "kvm_nested_vmenter: rip: 0x0000000000401000 vmcb: 0x0000000101d2a000 nested_rip: 0x0000000000001000 int_ctl: 0x01000000 event_inj: 0x00000000 nested_npt=1 guest_cr3: 0x0000000100000000",
        "kvm_fpu: unload",
    ] {
        let p = one(&format!("{pre}{line}"));
        let name = line.split(':').next().unwrap();
        assert_eq!(event_names(&p), [name], "{line}");
        assert_eq!(p.tables.len(), 1, "{line}");
    }
    // kvm_apicv_inhibit_changed `"%s reason=%u, inhibits=0x%lx%s%s"`: counted by name and by
    // reason (apicv_inhibit).
    let p = one(&format!(
        "{pre}kvm_apicv_inhibit_changed: set reason=1, inhibits=0x2 HYPERV"
    ));
    assert_eq!(event_names(&p), ["kvm_apicv_inhibit_changed"]);
    let t = table(&p, &TableKind::ApicvInhibit).unwrap();
    let keys: Vec<String> = t.rows.iter().map(|r| r.key.key_text()).collect();
    // The change, and the inhibit still set at the end (from the mask).
    assert_eq!(keys, ["held reason=1 (HYPERV)", "set reason=1 (HYPERV)"]);
    // An unreadable text of a known event: counted by name, noted, never fatal.
    let p = one(&format!("{pre}kvm_pio: something new at port 3"));
    assert_eq!(event_names(&p), ["kvm_pio"]);
    assert!(
        p.warnings
            .iter()
            .any(|n| n.line == Some(1) && n.message.contains("kvm_pio"))
    );
}

// ---------------------------------------------------------------------------------------
// Lines that are not events.

#[test]
fn lines_with_ctrl_c_are_noted_one_by_one_up_to_twenty_then_counted() {
    let mut text =
        "qemu 100 [000] 1.000000: kvm:kvm_exit: reason HLT rip 0x1 info 0 0\n".to_string();
    for i in 0..25 {
        text += &format!("qemu 100 [000] 1.{i:06}^C\n");
    }
    let p = read_text(&text);
    let interrupted = p
        .warnings
        .iter()
        .filter(|n| n.message.contains("interrupted here"))
        .count();
    assert_eq!(interrupted, 20, "{:?}", p.warnings);
    assert!(
        p.warnings
            .iter()
            .any(|n| n.message
                == "and 5 more lines cut short by `^C` (only the first 20 are listed)"),
        "{:?}",
        p.warnings
    );
}

#[test]
fn non_event_lines_are_skipped_and_the_odd_ones_noted() {
    let text = "$ sudo perf script\n\
                # ========\n\
                # captured on    : Thu Mar 16 10:00:00 2022\n\
                \n\
                qemu 100 [000] 1.000000: kvm:kvm_exit: reason HLT rip 0x1 info 0 0\n\
                ...\n\
                this line is junk\n\
                CPU:2 [LOST 12 EVENTS]\n\
                qemu 100 [000] 1.000100: kvm:kvm_entry: vcpu 0\n\
                qemu 100 [000] 1.0002^C\n";
    let p = read_text(text);
    assert_eq!(
        stats(row(&p, TableKind::Vmexit, "HLT", None)),
        (1, Some(100_000), Some(100_000), Some(100_000))
    );
    let at = |line: usize, word: &str| {
        p.warnings
            .iter()
            .any(|n| n.line == Some(line) && n.message.contains(word))
    };
    assert!(at(6, "elided"), "{:?}", p.warnings);
    assert!(at(7, "not an event"), "{:?}", p.warnings);
    assert!(at(8, "lost"), "{:?}", p.warnings);
    assert!(at(10, "interrupted"), "{:?}", p.warnings);
    for quiet in [1, 2, 3] {
        assert!(
            p.warnings.iter().all(|n| n.line != Some(quiet)),
            "{:?}",
            p.warnings
        );
    }
}

#[test]
fn an_input_without_events_is_an_error_naming_its_first_line() {
    let err = sources::read_bytes(b"\n\nhello\nworld\n", "x.txt", Some(Format::TraceText));
    match err {
        Err(Error::Parse {
            path,
            line,
            message,
        }) => {
            assert_eq!((path.as_str(), line), ("x.txt", 3));
            assert!(
                message.contains("expected") && message.contains("hello"),
                "{message}"
            );
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        sources::read_bytes(b"", "x.txt", Some(Format::TraceText)),
        Err(Error::Input { .. })
    ));
}

#[test]
fn detection_is_specific() {
    for other in [
        "05-", "06-", "09-", "11-", "13-", "17-", "34-", "01-", "18-",
    ] {
        let (_, text) = sample(other);
        assert!(!looks_like_trace_text(text.as_bytes()), "{other}");
    }
    assert!(!looks_like_trace_text(
        b"qemu 100 [000] 1.000000: sched:sched_switch: prev_comm=a\n"
    ));
    assert!(looks_like_trace_text(
        b"> qemu 100 [000] 1.0: kvm:kvm_fpu: load\n"
    ));
}

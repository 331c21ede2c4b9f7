//! `perf stat` tracepoint counts (`perf stat -e 'kvm:*'`): the real paste under
//! `testdata/readers/` (its source and its author's conclusion are in that folder's README) and
//! hand-written outputs of every mode, from the printf formats of tools/perf/util/stat-display.c
//! (`%18s` counts before the event, the `%6lu.%09lu` interval prefix, `-x,` fields).

use virtlens_core::decode::Decoder;
use virtlens_core::diagnose::{self, Options};
use virtlens_core::profile::{Profile, TableKind};
use virtlens_core::sources::{self, Format};

const ZCORE: &str = include_str!("../../../testdata/readers/perf-stat-kvm-all-zero-zcore.txt");

/// `-I 1000`: two intervals, one event not counted.
const INTERVALS: &str = "#           time             counts unit events\n\
     \x20    1.000141995            312,012      kvm:kvm_exit\n\
     \x20    1.000141995             98,100      kvm:kvm_pio\n\
     \x20    1.000141995      <not counted>      kvm:kvm_msr\n\
     \x20    2.000420051            300,988      kvm:kvm_exit\n\
     \x20    2.000420051            101,900      kvm:kvm_pio\n\
     \x20    2.000420051      <not counted>      kvm:kvm_msr\n";

/// `-x,`: count, unit, event, run time, percentage (no footer in this mode).
const CSV: &str = "612000,,kvm:kvm_exit,5001234567,100.00,,\n\
                   200000,,kvm:kvm_pio,5001234567,100.00,,\n\
                   <not supported>,,kvm:kvm_apicv_inhibit_changed,0,100.00,,\n";

/// The rows alone, pasted without header or footer.
const BARE: &str = "         1,234,567      kvm:kvm_exit\n              4,321      kvm:kvm_mmio\n";

fn read(text: &str) -> Profile {
    sources::read_bytes(text.as_bytes(), "t.txt", None).unwrap_or_else(|e| panic!("{e}"))
}

fn count(p: &Profile, table: usize, name: &str) -> Option<u64> {
    p.tables[table]
        .rows
        .iter()
        .find(|r| r.key.key_text() == name)
        .map(|r| r.count)
}

#[test]
fn every_shape_is_detected_as_perf_stat() {
    for text in [ZCORE, INTERVALS, CSV, BARE] {
        assert_eq!(
            sources::detect(text.as_bytes()),
            Some(Format::PerfStat),
            "{text}"
        );
    }
}

/// The author ran QEMU without `-accel kvm`: every KVM tracepoint counted 0 over the 10 s, so
/// the guest made no KVM exits at all. The second block (`perf stat -p` of the default events)
/// has no tracepoint, and each of its rows is noted.
#[test]
fn zcore_paste_counts_no_kvm_exit() {
    let p = read(ZCORE);
    assert_eq!(p.origin.format, "perf-stat");
    assert_eq!(p.tables.len(), 1);
    let t = &p.tables[0];
    assert_eq!(t.kind, TableKind::Events);
    assert_eq!(t.rows.len(), 88);
    assert!(t.rows.iter().all(|r| r.count == 0));
    assert_eq!(count(&p, 0, "kvm_exit"), Some(0));
    assert_eq!(t.scope.as_deref(), Some("process id '49399'"));
    assert_eq!(
        t.window.as_ref().and_then(|w| w.duration_ns),
        Some(10_010_339_406)
    );
    // task-clock, context-switches, … of the second block: not tracepoints, each noted.
    for line in 103..=110 {
        assert!(
            p.warnings
                .iter()
                .any(|w| w.line == Some(line) && w.message.contains("not a tracepoint")),
            "{line}: {:?}",
            p.warnings
        );
    }
    let d = diagnose::diagnose(&[p], None, &Decoder::builtin(), &Options::default());
    assert!(d.findings.is_empty(), "{:?}", d.findings);
}

#[test]
fn intervals_are_summed_over_their_span() {
    let p = read(INTERVALS);
    assert_eq!(count(&p, 0, "kvm_exit"), Some(613_000));
    assert_eq!(count(&p, 0, "kvm_pio"), Some(200_000));
    assert_eq!(count(&p, 0, "kvm_msr"), None);
    let w = p.tables[0].window.clone().unwrap();
    assert_eq!((w.duration_ns, w.intervals), (Some(2_000_420_051), 2));
    // One note for the event's rows without a count, at the first, naming the last.
    let missing: Vec<_> = p
        .warnings
        .iter()
        .filter(|w| w.message.contains("not counted"))
        .collect();
    assert_eq!(missing.len(), 1, "{missing:?}");
    assert_eq!(missing[0].line, Some(4));
    assert!(
        missing[0]
            .message
            .contains("on 2 lines, from here to line 7"),
        "{}",
        missing[0].message
    );
}

#[test]
fn separated_values_and_bare_rows() {
    let p = read(CSV);
    assert_eq!(count(&p, 0, "kvm_exit"), Some(612_000));
    assert!(
        p.warnings
            .iter()
            .any(|w| w.line == Some(3) && w.message.contains("not supported"))
    );
    let p = read(BARE);
    assert_eq!(count(&p, 0, "kvm_exit"), Some(1_234_567));
    assert_eq!(count(&p, 0, "kvm_mmio"), Some(4321));
    assert!(p.tables[0].window.is_none());
}

#[test]
fn output_kept_behind_hashes_and_several_blocks() {
    let text = "perf stat -e 'kvm:kvm_exit','kvm:kvm_extirq' -a sleep 1h\n\n\
                #Performance counter stats for 'system wide':\n#\n\
                #        3,358,451      kvm:kvm_exit          \n\
                #           34,863      kvm:kvm_extirq        \n#\n\
                #    107.488359198 seconds time elapsed\n\n\
                 Performance counter stats for 'system wide':\n\n\
                 \x20          500      kvm:kvm_exit\n\n\
                 \x20      1.000000000 seconds time elapsed\n";
    let p = read(text);
    assert_eq!(p.tables.len(), 2);
    assert_eq!(count(&p, 0, "kvm_exit"), Some(3_358_451));
    assert_eq!(count(&p, 0, "kvm_extirq"), Some(34_863));
    assert_eq!(
        p.tables[0].window.as_ref().and_then(|w| w.duration_ns),
        Some(107_488_359_198)
    );
    assert_eq!(count(&p, 1, "kvm_exit"), Some(500));
}

/// The counts become the counters every rule reads: the exit rate over the elapsed time, and
/// the IO exits (`kvm_pio`) leading.
#[test]
fn counts_are_diagnosed_with_their_rate() {
    let text = " Performance counter stats for 'system wide':\n\n\
                \x20       3,000,000      kvm:kvm_exit\n\
                \x20       1,500,000      kvm:kvm_pio\n\
                \x20          10,000      kvm:kvm_msr\n\n\
                \x20     10.000000000 seconds time elapsed\n";
    let p = read(text);
    let d = diagnose::diagnose(&[p], None, &Decoder::builtin(), &Options::default());
    let input = &d.inputs[0];
    assert_eq!(input.evidence.rate.window_ns, Some(10_000_000_000));
    assert_eq!(
        input.evidence.totals.as_ref().map(|t| t.count),
        Some(3_000_000)
    );
    let main = d.main_of(1).expect("a main problem");
    assert!(main.id.starts_with("io."), "{}", main.id);
}

#[test]
fn other_formats_are_not_taken_for_perf_stat() {
    let dir = virtlens_testkit::repo_root().join("testdata");
    for sub in [
        "exit-reports",
        "seed-kvm-hyperv-traps",
        "readers",
        "perfmon",
    ] {
        for entry in std::fs::read_dir(dir.join(sub)).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            if !path.is_file() || name.starts_with("perf-stat") || name.ends_with(".md") {
                continue;
            }
            let bytes = std::fs::read(&path).unwrap();
            let head = &bytes[..bytes.len().min(sources::DETECT_BYTES)];
            assert_ne!(sources::detect(head), Some(Format::PerfStat), "{name}");
        }
    }
}

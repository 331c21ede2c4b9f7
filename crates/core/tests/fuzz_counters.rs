//! Fuzzing the kvm_stat, bcc kvmexit and perf-prof sources (proptest, bounded so it runs in
//! every `cargo test`): mutated samples and random text and bytes never panic, whatever is read
//! round-trips through JSON, and every error names the input and, where a line is at fault,
//! the line.
//!
//! `PROPTEST_CASES=100000 cargo test -p virtlens-core --test tests --release -- fuzz_counters::`
//! runs a longer campaign.

use proptest::prelude::*;
use virtlens_core::sources::{self, Format};

use crate::common::{self, Edit, apply};

/// Real samples and hand-written outputs of each format (the latter from the tools' printf
/// formats, as in the per-format tests).
const SAMPLES: [(Format, &str); 9] = [
    (
        Format::BccKvmexit,
        include_str!("../../../testdata/exit-reports/01-bcc-kvmexit-all-threads.txt"),
    ),
    (
        Format::KvmStat,
        include_str!(
            "../../../testdata/exit-reports/18-kvm_stat-debugfs-legacy-haswell-io-exits.txt"
        ),
    ),
    // kvm_stat current TUI: '%-40s %10s%7s %8s' header, '%-40s %10d%7.1f %8s' rows.
    (
        Format::KvmStat,
        "kvm statistics - pid 4242 (win10)\n                 regex filter: kvm\n \
         Event                                         Total %Total CurAvg/s\n \
         kvm_exit                                      50000   37.9    16666\n   \
         kvm_exit(MSR_WRITE)                         30000   60.0    10000\n   \
         HLT                                         12000   24.0     4000\n \
         kvm_entry                                     50000   37.9    16666\n \
         Total                                        132000            43998\n",
    ),
    // kvm_stat -l: banner, then stamp + ' %9d' per field.
    (
        Format::KvmStat,
        "# kvm_stat -l -s 2\nkvm_exit kvm_exit(HLT) halt_exits \n\
         2024-03-01 10:00:07       400       100        40\n\
         2024-03-01 10:00:09       410       101        41\n",
    ),
    // kvm_stat -c and -1.
    (
        Format::KvmStat,
        "timestamp,exits,halt_exits\n2024-03-01 10:00:03,5,1\n2024-03-01 10:00:06,7,2\n\
         exits                                         500        50\n\
         halt_exits                                    100        10\n",
    ),
    // bcc -p -v and -T modes: "%-35s %-8u" and "%-8u %-35s %-8u".
    (
        Format::BccKvmexit,
        "# ./kvmexit.py -p 2024301 -v 1\nDisplay kvm exit reasons and statistics for PID \
         2024301 VCPU 1... Hit Ctrl-C to end.\nKVM_EXIT_REASON                     COUNT\n\
         ^CMSR_WRITE                           3301    \nHLT                                 977     \n\
         # ./kvmexit.py -T '1,2'\nTIDS     KVM_EXIT_REASON                     COUNT\n\
         1        HLT                                 14001   \n",
    ),
    // perf-prof: "%-*s %8lu %16.3f %9.3f %9.3f %12.3f %6.2f" rows, stamps, --than lines.
    (
        Format::PerfProf,
        "[root@kvm ~]# ./perf-prof kvm-exit -p 126934 -i 1000 --than 5ms\n\
         2024-05-06 17:39:25.894653 \nkvm-exit latency\n\
         exit_reason             calls        total(us)   min(us)   avg(us)      max(us)  %gsys\n\
         -------------------- -------- ---------------- --------- --------- ------------ ------\n\
         HLT                      1113       806253.057     0.816   724.396     4025.007 100.00\n\
         2024-05-06 17:39:26.535148            <...> 126953 .... [078] 96822671.255015: kvm:kvm_exit: reason APIC_WRITE\n\
         2024-05-06 17:39:26.894654 \nkvm-exit latency THREAD 126953\n\
         exit_reason             calls        total(us)   min(us)   avg(us)      max(us)  %gsys\n\
         APIC_WRITE               1481        22191.956     0.620    14.984    11628.216 100.00\n",
    ),
    // perf-prof --perins columns and the p99 layout behind `# `.
    (
        Format::PerfProf,
        "[CPU] exit_reason                         calls        total(us)   min(us)   avg(us)      max(us)  %gsys\n\
         [  3] EXIT_NPF                             5000         2500.000     0.300     0.500       90.000  12.50\n\
         # exit_reason                         calls        total(us)      min(us)      avg(us)      p99(us)      max(us)  %gsys\n\
         # EXIT_HLT                              911      3916645.237        0.620     4299.281    20121.135    38825.427 100.00\n",
    ),
    // perf-prof early version: log2 histogram, no %gsys.
    (
        Format::PerfProf,
        "2024-05-06 08:00:00.000001 \n     kvm-exit latency(ns) : count     distribution\n\
         512 -> 1023       : 98       |****************************************|\n\
         exit_reason             calls        total(us)   min(us)   avg(us)      max(us)\n\
         MSR_WRITE                  98           70.000     0.512     0.714        1.000\n",
    ),
];

const FORMATS: [Format; 3] = [Format::KvmStat, Format::BccKvmexit, Format::PerfProf];

fn edit() -> impl Strategy<Value = Edit> {
    common::edit(vec![
                b"^C".to_vec(),
                b"\n".to_vec(),
                b"> ".to_vec(),
                b"# ".to_vec(),
                b" G ".to_vec(),
                b"  ".to_vec(),
                b"\t".to_vec(),
                b"(".to_vec(),
                b"-".to_vec(),
                b"kvm statistics - pid 1 (x)\n".to_vec(),
                b" Event  Total %Total CurAvg/s\n".to_vec(),
                b"timestamp,exits,kvm_exit(HLT)\n".to_vec(),
                b"2024-02-30 25:61:61,1,2\n".to_vec(),
                b"KVM_EXIT_REASON COUNT\n".to_vec(),
                b"Display kvm exit reasons and statistics for PID 1 VCPU 2 after sleeping 99999999999 secs.\n".to_vec(),
                b"[THREAD] exit_reason calls total(us) p99(us)\n".to_vec(),
                b"kvm-exit latency CPU 4294967296\n".to_vec(),
                b"9999-12-31 23:59:59.999999999 \n".to_vec(),
                b"18446744073709551615".to_vec(),
                b"-9223372036854775808".to_vec(),
                b"[...]\n".to_vec(),
                b"..........\n".to_vec(),
                b"MSR_WRITE            11416\nHLT   12\n".to_vec(),
                b"\0".to_vec(),
                b"\xff".to_vec(),
                b"x#!".to_vec(),
                b"100.00MSR_WRITE  28853  24009.550  0.446  0.832  15.074 100.00".to_vec(),
                b"kvm-exit latencyexit_reason calls total(us) min(us) avg(us) max(us) %gsys\n".to_vec(),
                b"187> >>>>   irq_exits   1523   138".to_vec(),
            ])
}

/// Real samples whose rows end with their count, with the lines of those rows.
fn counted_rows() -> Vec<(Format, &'static str, Vec<usize>)> {
    SAMPLES
        .iter()
        .filter(|(f, _)| *f != Format::PerfProf)
        .map(|&(format, text)| {
            let rows = text
                .lines()
                .enumerate()
                .filter(|(_, l)| {
                    let words: Vec<&str> = l.split_whitespace().collect();
                    words.len() >= 2
                        && words.last().is_some_and(|w| w.parse::<u64>().is_ok())
                        && !words[0].starts_with(|c: char| c.is_ascii_digit() || c == '#')
                        && !l.contains("Total")
                })
                .map(|(i, _)| i)
                .collect();
            (format, text, rows)
        })
        .filter(|(_, _, rows): &(Format, &str, Vec<usize>)| rows.len() >= 2)
        .collect()
}

/// Two rows in a row: the line of the first (0-based) and the count of each.
type Pair = (usize, u64, u64);

/// Real samples of the readers that split joined lines (kvm_stat, perf-prof), with the lines of
/// two rows in a row and the count of each (kvm_stat's total and perf-prof's calls: the first
/// number after the name).
fn joinable_rows() -> Vec<(Format, &'static str, Vec<Pair>)> {
    let reliability: [(Format, &'static str); 3] = [
        (
            Format::KvmStat,
            include_str!("../../../testdata/reliability/D0-kvm_stat-intact.txt"),
        ),
        (
            Format::KvmStat,
            include_str!("../../../testdata/reliability/D0-kvm_stat-quoted-intact.txt"),
        ),
        (
            Format::PerfProf,
            include_str!("../../../testdata/reliability/D0-perf-prof-intact.txt"),
        ),
    ];
    let count = |l: &str| -> Option<u64> {
        let words: Vec<&str> = l
            .split_whitespace()
            .skip_while(|w| w.starts_with('>'))
            .collect();
        let first = words.first()?;
        let row = words.len() >= 2
            && !first.starts_with(|c: char| c.is_ascii_digit() || c == '#' || c == '[')
            && words.last().is_some_and(|w| w.parse::<f64>().is_ok())
            && !l.contains("Total")
            && !l.contains("latency");
        row.then(|| words.iter().find_map(|w| w.parse::<u64>().ok()))
            .flatten()
    };
    SAMPLES
        .iter()
        .chain(reliability.iter())
        .filter(|(f, _)| matches!(f, Format::KvmStat | Format::PerfProf))
        .map(|&(format, text)| {
            let lines: Vec<&str> = text.lines().collect();
            let pairs = lines
                .windows(2)
                .enumerate()
                .filter_map(|(i, w)| Some((i, count(w[0])?, count(w[1])?)))
                .collect();
            (format, text, pairs)
        })
        .filter(|(_, _, pairs): &(Format, &str, Vec<Pair>)| !pairs.is_empty())
        .collect()
}

/// The row keys of the profile's count tables.
fn keys(p: &virtlens_core::profile::Profile) -> std::collections::BTreeSet<String> {
    p.tables
        .iter()
        .filter(|t| !t.per_second)
        .flat_map(|t| t.rows.iter().map(|r| r.key.key_text()))
        .collect()
}

/// Every count of the profile's tables, summed, saturating.
#[test]
fn every_sample_reads_as_its_format() {
    for (format, text) in SAMPLES {
        assert_eq!(sources::detect(text.as_bytes()), Some(format), "{text}");
        let p = sources::read_bytes(text.as_bytes(), "sample", None).unwrap();
        assert!(!p.tables.is_empty());
    }
}

#[test]
fn no_other_real_sample_is_claimed_by_these_formats() {
    let dir = virtlens_testkit::repo_root().join("testdata");
    for sub in ["exit-reports", "seed-kvm-hyperv-traps"] {
        for entry in std::fs::read_dir(dir.join(sub)).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            if !name.ends_with(".txt") {
                continue;
            }
            let bytes = std::fs::read(&path).unwrap();
            let want = if name.starts_with("01-") || name.starts_with("38-") {
                Some(Format::BccKvmexit)
            } else if ["18-", "35-", "36-"].iter().any(|p| name.starts_with(p)) {
                Some(Format::KvmStat)
            } else {
                None
            };
            let got = sources::detect(&bytes).filter(|f| FORMATS.contains(f));
            assert_eq!(got, want, "{name}");
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: common::cases(1500), ..ProptestConfig::default() })]

    #[test]
    fn mutated_samples_never_panic(
        which in 0..SAMPLES.len(),
        edits in prop::collection::vec(edit(), 1..8),
        forced in any::<bool>(),
    ) {
        let (format, text) = SAMPLES[which];
        let bytes = apply(text.as_bytes().to_vec(), &edits);
        common::check_tables_read(&bytes, forced.then_some(format), &FORMATS)?;
    }

    /// Damage one row of a kvm_stat or kvmexit sample (a stretch of it replaced by typo
    /// bytes): the other rows keep their counts (the total falls by at most the damaged row's
    /// count) and the damaged row is either read or noted at its line.
    #[test]
    fn one_bad_row_never_takes_the_others(
        which in any::<prop::sample::Index>(),
        pick in any::<prop::sample::Index>(),
        at in any::<prop::sample::Index>(),
        cut in 0usize..6,
        bytes in prop::collection::vec(prop::sample::select(b"aZx09.%_- \t\0\xff".to_vec()), 0..4),
    ) {
        let samples = counted_rows();
        let (format, text, rows) = &samples[which.index(samples.len())];
        let line = rows[pick.index(rows.len())];
        let input = common::damage_line(text, line, at, cut, &bytes);
        one_bad_row_is_read_or_noted(*format, text, line, &input).map_err(TestCaseError::fail)?;
    }

    /// Two rows of a kvm_stat or perf-prof sample on one line (the line break between them
    /// lost; the whole sample mail-quoted or not, the glue with or without the blanks around
    /// it): both rows are read, or the line is noted; no row of another key appears, and the
    /// other rows keep their counts.
    #[test]
    fn two_rows_on_one_line_are_split_or_noted(
        which in any::<prop::sample::Index>(),
        pick in any::<prop::sample::Index>(),
        quoted in any::<bool>(),
        tight in any::<bool>(),
    ) {
        let samples = joinable_rows();
        let (format, text, pairs) = &samples[which.index(samples.len())];
        let (i, a, b) = pairs[pick.index(pairs.len())];
        let quote = if quoted { "> " } else { "" };
        let mut input = String::new();
        for (k, l) in text.lines().enumerate() {
            if k == i {
                let l = if tight { l.trim_end() } else { l };
                input.push_str(&format!("{quote}{l}"));
            } else if k == i + 1 {
                let l = if tight { l.trim_start() } else { l };
                input.push_str(&format!("{quote}{l}\n"));
            } else {
                input.push_str(&format!("{quote}{l}\n"));
            }
        }
        let whole: String = text.lines().map(|l| format!("{quote}{l}\n")).collect();
        let full = sources::read_bytes(whole.as_bytes(), "full.txt", Some(*format))
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        let p = sources::read_bytes(input.as_bytes(), "joined.txt", Some(*format))
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        let new: Vec<String> = keys(&p).difference(&keys(&full)).cloned().collect();
        prop_assert!(new.is_empty(), "new rows {:?}: {:?}", new, p.warnings);
        let (before, after) = (common::total(&full), common::total(&p));
        prop_assert!(after.saturating_add(a).saturating_add(b) >= before,
            "{} of {}: {:?}", after, before, p.warnings);
        let noted = p.warnings.iter().any(|w| w.line == Some(i + 1));
        prop_assert!(after == before || noted, "line {} lost {} without a note: {:?}",
            i + 1, before - after, p.warnings);
    }

    #[test]
    fn random_text_never_panics(
        text in "(\\PC|\\t|\\n|[0-9 ]{1,12}|kvm_exit\\(|\\^C|# ){0,200}",
        which in 0..FORMATS.len(),
    ) {
        common::check_tables_read(text.as_bytes(), Some(FORMATS[which]), &FORMATS)?;
    }

    #[test]
    fn random_bytes_never_panic(
        bytes in prop::collection::vec(any::<u8>(), 0..600),
        which in 0..FORMATS.len(),
    ) {
        common::check_tables_read(&bytes, Some(FORMATS[which]), &FORMATS)?;
    }
}

/// Every cut of one to five bytes anywhere in any row of the samples (the damage the proptest
/// draws at random, here all of it): the row is read or noted, and the others keep their counts.
/// Cutting `halt_` off `halt_exits` under `exits` once made a `-1` listing read as a loop.
#[test]
fn every_short_cut_of_a_row_is_read_or_noted() {
    let mut failures = Vec::new();
    for (format, text, rows) in counted_rows() {
        let lines: Vec<&str> = text.lines().collect();
        for &line in &rows {
            for start in 0..lines[line].len() {
                for cut in 1..=5 {
                    let input = common::splice_line(text, line, start, cut, &[]);
                    if let Err(e) = one_bad_row_is_read_or_noted(format, text, line, &input) {
                        failures.push(format!("{format:?}, cut {cut} at {start}: {e}"));
                    }
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The check of one damaged row (`line`, 0-based, of `text`, damaged in `input`): the other
/// rows keep their counts (the total drops by at most the row's count), and the row is read
/// or noted at its line.
fn one_bad_row_is_read_or_noted(
    format: Format,
    text: &str,
    line: usize,
    input: &[u8],
) -> Result<(), String> {
    let lines: Vec<&str> = text.lines().collect();
    // kvm_stat prints the total first (the rate after it), kvmexit the count last.
    let mut numbers = lines[line]
        .split_whitespace()
        .filter_map(|w| w.parse::<u64>().ok());
    let count = match format {
        Format::KvmStat => numbers.next(),
        _ => numbers.next_back(),
    }
    .unwrap_or(0);
    let full = sources::read_bytes(text.as_bytes(), "full.txt", Some(format))
        .map_err(|e| e.to_string())?;
    let p =
        sources::read_bytes(input, "one-bad-row.txt", Some(format)).map_err(|e| e.to_string())?;
    let (before, after) = (common::total(&full), common::total(&p));
    let damaged = input.split(|&b| b == b'\n').nth(line).unwrap_or_default();
    let damaged = String::from_utf8_lossy(damaged);
    if after.saturating_add(count) < before {
        return Err(format!(
            "`{damaged}`: total {after} of {before}: {:?}",
            p.warnings
        ));
    }
    let rows = |p: &virtlens_core::profile::Profile| -> usize {
        p.tables
            .iter()
            .filter(|t| !t.per_second)
            .map(|t| t.rows.len())
            .sum()
    };
    let read = rows(&p) >= rows(&full) || after.saturating_add(count) != before;
    let noted = p.warnings.iter().any(|w| w.line == Some(line + 1));
    if !(read || noted) {
        return Err(format!(
            "line {} `{damaged}` neither read nor noted: {:?}",
            line + 1,
            p.warnings
        ));
    }
    Ok(())
}

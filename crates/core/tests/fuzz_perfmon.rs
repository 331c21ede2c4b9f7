//! Fuzzing the performance-counter sources (PDH-CSV and pasted counter tables; proptest,
//! bounded so it runs in every `cargo test`): mutated real logs, random text built from the
//! format's pieces and random bytes never panic; whatever is read round-trips through JSON
//! and the counter analysis runs on it; every error names the input and a line it has.
//!
//! `PROPTEST_CASES=100000 cargo test -p virtlens-core --test tests --release -- fuzz_perfmon::`
//! runs a longer campaign.

use proptest::prelude::*;
use virtlens_core::counters;
use virtlens_core::sources::{self, Format};

use crate::common::{self, Edit, apply};

const SAMPLES: [(Format, &[u8]); 4] = [
    (
        Format::PerfmonCsv,
        include_bytes!("../../../testdata/perfmon/disk-queue-india-2017.csv"),
    ),
    (
        Format::PerfmonCsv,
        include_bytes!("../../../testdata/perfmon/process-bytes-edt-2021-b.csv"),
    ),
    (
        Format::PerfmonCsv,
        include_bytes!("../../../testdata/perfmon/process-bytes-edt-2021-c.csv"),
    ),
    (
        Format::CounterTable,
        include_bytes!("../../../testdata/perfmon/talk-10m-iops-vp-table.txt"),
    ),
];

const FORMATS: [Format; 2] = [Format::PerfmonCsv, Format::CounterTable];

/// Each counter's path and value (in thousandths).
type Values = Vec<(String, u64)>;

fn edit() -> impl Strategy<Value = Edit> {
    common::edit(vec![
        b"\"".to_vec(),
        b"\",\"".to_vec(),
        b"\" \"".to_vec(),
        b"\r\n".to_vec(),
        b"\n".to_vec(),
        b"\\\\".to_vec(),
        b"(".to_vec(),
        b")".to_vec(),
        b"#1".to_vec(),
        b",".to_vec(),
        b".".to_vec(),
        b"\"(PDH-CSV 4.0) (UTC)(0)\"".to_vec(),
        b"(Paris, Madrid (heure d'\xc3\xa9t\xc3\xa9))(-120)".to_vec(),
        b"\"13/45/2020 99:99:99.999\"".to_vec(),
        b"1e308".to_vec(),
        b"-1".to_vec(),
        b"NaN".to_vec(),
        b"\xff\xfe".to_vec(),
        b"\\\\h\\Hyper-V Hypervisor Virtual Processor(vm:Hv VP 0)\\Total Intercepts/sec :".to_vec(),
        b"Hyper-V Hypervisor Virtual Processor  _Total  vm:Hv VP 0\n".to_vec(),
        b"9,214,942".to_vec(),
        b"21,465".to_vec(),
        b"x#!".to_vec(),
    ])
}

fn check(bytes: &[u8], format: Option<Format>) -> Result<(), TestCaseError> {
    match sources::read_bytes(bytes, "fuzz.csv", format) {
        Ok(p) => {
            if let Some(log) = &p.counters {
                for s in &log.series {
                    if let Some(st) = s.stats {
                        prop_assert!(st.n >= 1 && st.min <= st.max && st.mean.is_finite());
                    }
                    prop_assert!(s.slices.len() <= virtlens_core::profile::SLICES);
                }
                let a = counters::analyse("fuzz", log, Some(1e6));
                prop_assert!(
                    a.findings
                        .iter()
                        .all(|f| f.facts.iter().all(|x| x.value.is_finite()))
                );
            }
            let json = serde_json::to_string(&p).map_err(|e| TestCaseError::fail(e.to_string()))?;
            let back: virtlens_core::profile::Profile =
                serde_json::from_str(&json).map_err(|e| TestCaseError::fail(e.to_string()))?;
            prop_assert_eq!(
                back.counters.map(|c| c.series.len()),
                p.counters.map(|c| c.series.len())
            );
        }
        Err(e) => common::check_error(e, "fuzz.csv", bytes)?,
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: common::cases(500), ..ProptestConfig::default() })]

    #[test]
    fn mutated_logs_never_panic(
        which in 0..SAMPLES.len(),
        edits in prop::collection::vec(edit(), 1..8),
        forced in any::<bool>(),
    ) {
        let (format, bytes) = SAMPLES[which];
        let bytes = apply(bytes.to_vec(), &edits);
        check(&bytes, forced.then_some(format))?;
    }

    /// One counter row of the pasted table damaged (its value replaced, cut, or garbled):
    /// every other counter keeps its object, instance and value, and the damaged one is read
    /// or noted at its line; none is filed anywhere else.
    #[test]
    fn one_damaged_value_never_moves_the_others(
        pick in any::<prop::sample::Index>(),
        at in any::<prop::sample::Index>(),
        cut in 0usize..12,
        bytes in prop::collection::vec(prop::sample::select(b"x#!aZ09.,%- \t".to_vec()), 0..4),
    ) {
        let text = std::str::from_utf8(SAMPLES[3].1).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let rows: Vec<usize> = text
            .lines()
            .enumerate()
            .filter(|(_, l)| l.starts_with("    "))
            .map(|(i, _)| i)
            .collect();
        let line = rows[pick.index(rows.len())];
        let input = common::damage_line(text, line, at, cut, &bytes);
        let values = |b: &[u8]| -> Result<Vec<(String, u64)>, TestCaseError> {
            let p = sources::read_bytes(b, "t.txt", Some(Format::CounterTable))
                .map_err(|e| TestCaseError::fail(e.to_string()))?;
            Ok(p.counters.iter().flat_map(|c| &c.series).map(|s| {
                (s.path.display(), s.stats.map_or(0, |st| (st.mean * 1000.0).round() as u64))
            }).collect())
        };
        let full = values(text.as_bytes())?;
        let p = sources::read_bytes(&input, "t.txt", Some(Format::CounterTable))
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        let got = values(&input)?;
        let name = text.lines().nth(line).unwrap_or_default().split("  ").find(|c| !c.trim().is_empty()).unwrap_or_default().trim();
        let damaged = String::from_utf8_lossy(input.split(|&b| b == b'\n').nth(line).unwrap_or_default()).into_owned();
        for (path, v) in &full {
            let ours = path.ends_with(&format!("\\{name}"));
            match got.iter().find(|(p, _)| p == path) {
                Some((_, w)) if w == v => {}
                _ if ours => {}
                other => prop_assert!(false, "`{}`: {:?} instead of {} after damaging `{}`: {:?}",
                    path, other, v, damaged, p.warnings),
            }
        }
        // The damaged row may be read under another name (its name damaged), or as two rows
        // when the damage looks like a lost line break (`% G<TAB>0%uest Run Time  21.465`):
        // every extra counter is named from the damaged line, and there are two at most.
        let extra: Vec<&String> = got
            .iter()
            .map(|(p, _)| p)
            .filter(|p| !full.iter().any(|(q, _)| q == *p))
            .collect();
        let from_damaged = extra
            .iter()
            .all(|p| p.rsplit('\\').next().is_some_and(|n| damaged.contains(n.trim())));
        prop_assert!(extra.len() <= 2 && from_damaged, "{:?} after damaging `{}`", got, damaged);
        let read = got.len() >= full.len();
        let noted = p.warnings.iter().any(|w| w.line == Some(line + 1));
        prop_assert!(read || noted, "`{}` neither read nor noted: {:?}", damaged, p.warnings);
    }

    /// Two counter rows of the pasted table on one line (the line break lost, the blanks
    /// around it kept or not): both read, or the line noted; no counter under a made-up name,
    /// and the others keep their values.
    #[test]
    fn two_counter_rows_on_one_line_are_split_or_noted(
        pick in any::<prop::sample::Index>(),
        tight in any::<bool>(),
    ) {
        let text = std::str::from_utf8(SAMPLES[3].1).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let lines: Vec<&str> = text.lines().collect();
        let rows: Vec<usize> = (0..lines.len().saturating_sub(1))
            .filter(|&i| lines[i].starts_with("    ") && lines[i + 1].starts_with("    "))
            .collect();
        let i = rows[pick.index(rows.len())];
        let mut input = String::new();
        for (k, l) in lines.iter().enumerate() {
            match k {
                _ if k == i && tight => input.push_str(l.trim_end()),
                _ if k == i => input.push_str(l),
                _ if k == i + 1 && tight => input.push_str(&format!("{}\n", l.trim_start())),
                _ => input.push_str(&format!("{l}\n")),
            }
        }
        let values = |b: &[u8]| -> Result<(Values, Vec<Option<usize>>), TestCaseError> {
            let p = sources::read_bytes(b, "t.txt", Some(Format::CounterTable))
                .map_err(|e| TestCaseError::fail(e.to_string()))?;
            let v = p.counters.iter().flat_map(|c| &c.series).map(|s| {
                (s.path.display(), s.stats.map_or(0, |st| (st.mean * 1000.0).round() as u64))
            }).collect();
            Ok((v, p.warnings.iter().map(|w| w.line).collect()))
        };
        let (full, _) = values(text.as_bytes())?;
        let (got, notes) = values(input.as_bytes())?;
        for (path, v) in &got {
            prop_assert!(full.iter().any(|(p, w)| p == path && w == v),
                "`{}` = {} is not in the intact table: {:?}", path, v, got);
        }
        prop_assert!(got.len() == full.len() || notes.contains(&Some(i + 1)),
            "line {} lost rows without a note: {:?}", i + 1, got);
    }

    #[test]
    fn random_text_never_panics(
        text in "(\\PC|\"|,|\\r\\n|\\n|[0-9.,]{1,12}|\\\\\\\\h\\\\|\\(PDH-CSV 4.0\\)|% Guest Run Time| ){0,200}",
        which in 0..FORMATS.len(),
    ) {
        check(text.as_bytes(), Some(FORMATS[which]))?;
    }

    #[test]
    fn random_bytes_never_panic(
        bytes in prop::collection::vec(any::<u8>(), 0..600),
        which in 0..FORMATS.len(),
    ) {
        check(&bytes, Some(FORMATS[which]))?;
    }
}

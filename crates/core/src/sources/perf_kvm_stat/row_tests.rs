//! Tests of the rows of a `perf kvm stat` table (`row`).

use super::*;

use super::super::layout::tests::FULL_2012;
use StdioColumn::*;

fn modern() -> Layout {
    Layout::Stdio {
        columns: StdioColumns::of(&[Samples, SamplesPct, TimePct, Min, Max, Avg]),
    }
}

fn old() -> Layout {
    Layout::Stdio {
        columns: StdioColumns::of(&FULL_2012),
    }
}

fn row(text: &str, layout: &Layout) -> Option<RawRow> {
    match parse(text, layout, 1) {
        Parsed::Row(r) => Some(r),
        _ => None,
    }
}

#[test]
fn modern_row() {
    let r = row(
        "           MSR_WRITE      42521    53.32%     0.06%      0.50us     52.94us      1.71us ( +-   0.48% )",
        &modern(),
    );
    let r = r.unwrap_or_else(|| RawRow {
        key: String::new(),
        count: 0,
        time: TimeStats::unknown(),
        line: 0,
    });
    assert_eq!((r.key.as_str(), r.count), ("MSR_WRITE", 42_521));
    assert_eq!(r.time.total_ns, Some(42_521 * 1_710));
    assert_eq!((r.time.min_ns, r.time.max_ns), (Some(500), Some(52_940)));
    let rel = r.time.rel_stderr_pct(r.count).unwrap_or(0.0);
    assert!((rel - 0.48).abs() < 1e-9);
}

#[test]
fn tabbed_rows_with_spread_in_either_cell() {
    let a = row(
        "EPT_MISCONFIG\t893519\t72.16%\t88.46%\t4.38us\t662.31us\t6.50us\t(+- 0.05%)",
        &modern(),
    );
    let b = row(
        "APIC_WRITE\t185817\t56.97%\t37.07%\t0.57us\t78.45us\t1.43us (+- 0.18%)",
        &modern(),
    );
    assert_eq!(a.map(|r| r.count), Some(893_519));
    assert_eq!(b.map(|r| r.time.total_ns), Some(Some(185_817 * 1_430)));
}

#[test]
fn old_layout_has_no_min_max() {
    let r = row(
        "           APIC_ACCESS      65381    66.58%     5.95%     37.72us ( +-   6.54% )",
        &old(),
    );
    assert_eq!(
        r.map(|r| (r.time.min_ns, r.time.total_ns)),
        Some((None, Some(65_381 * 37_720)))
    );
}

#[test]
fn wrapped_rows_are_incomplete() {
    assert_eq!(
        parse(
            "  EXTERNAL_INTERRUPT      16031    16.32%     3.06%     79.11us ( +-",
            &old(),
            1
        ),
        Parsed::Incomplete
    );
    assert_eq!(parse("  EXTERNAL_INTERRUPT", &old(), 1), Parsed::Incomplete);
    assert_eq!(
        parse("  HLT  15885    19.92%    99.89%      0.63us", &modern(), 1),
        Parsed::Incomplete
    );
    assert_eq!(spread_only("   7.34% )"), None);
    assert_eq!(spread_only(" ( +-   7.34% )"), Some(7.34));
}

#[test]
fn two_rows_on_one_line_read_as_both() {
    let joined = "HLT      15885    19.92%    99.89%      0.63us  17539.26us   8224.34us ( +-   0.61% )IO_INSTRUCTION      10892    13.66%     0.03%      2.14us     47.60us      3.02us ( +-   0.48% )";
    let rows = two_rows(joined, &modern(), 9).map(|(a, b)| (a.key, a.count, b.key, b.count));
    assert_eq!(
        rows,
        Some(("HLT".into(), 15_885, "IO_INSTRUCTION".into(), 10_892))
    );
    assert_eq!(
        two_rows("HLT 15885 19.92% 99.89% 0.63us 17539.26us", &modern(), 1),
        None
    );
}

#[test]
fn prose_is_not_a_row() {
    for prose in [
        "testing with patch:",
        "The guest was idle for a while",
        "after 10 minutes",
        "run 2 with 4 vCPUs",
        "between 10.00 and 12.00",
        "after applying 4 patches: 12.5% fewer exits:",
    ] {
        assert_eq!(parse(prose, &modern(), 1), Parsed::NotARow, "{prose}");
    }
}

#[test]
fn bad_rows_say_why() {
    let bad = |t: &str| match parse(t, &modern(), 1) {
        Parsed::Bad(why) => why,
        other => format!("{other:?}"),
    };
    let typo = bad(
        "HLT      1588x    19.92%    99.89%      0.63us  20072.05us   2273.31us ( +-   1.82% )",
    );
    assert!(typo.contains("`1588x` is not a count"), "{typo}");
    let big =
        bad("HLT 99999999999999999999 19.92% 99.89% 0.63us 20072.05us 2273.31us ( +- 1.82% )");
    assert!(big.contains("larger than 2^64"), "{big}");
    let nul = bad("MSR_WRITE\u{0}42521 53.32% 0.06% 0.50us 52.94us 1.71us ( +- 0.48% )");
    assert!(nul.contains("NUL"), "{nul}");
    let utf = bad("HL\u{fffd}T 15885 19.92% 99.89% 0.63us 20072.05us 2273.31us ( +- 1.82% )");
    assert!(utf.contains("UTF-8"), "{utf}");
    let cut = bad("HLT      15885    19.92%    99.89%      0.63us  20072.05us   2273.3");
    assert!(cut.contains("`2273.3`"), "{cut}");
}

#[test]
fn trimmed_columns_in_any_order() {
    let trimmed = Layout::Stdio {
        columns: StdioColumns::of(&[Samples, SamplesPct, TimePct]),
    };
    let r = row("MSR_WRITE   42521    53.32%     0.06%", &trimmed);
    assert_eq!(r.map(|r| (r.count, r.time.total_ns)), Some((42_521, None)));
    let avg_first = Layout::Stdio {
        columns: StdioColumns::of(&[Avg, Samples, TimePct]),
    };
    let r = row("HLT  2273.31us  15885  99.89%", &avg_first);
    assert_eq!(
        r.map(|r| (r.count, r.time.total_ns)),
        Some((15_885, Some(15_885 * 2_273_310)))
    );
    let max_only = Layout::Stdio {
        columns: StdioColumns::of(&[Samples, Max]),
    };
    let r = row("HLT 15885 20072.05us", &max_only);
    assert_eq!(
        r.map(|r| (r.time.max_ns, r.time.total_ns)),
        Some((Some(20_072_050), None))
    );
    assert_eq!(parse("HLT 15885", &trimmed, 1), Parsed::Incomplete);
}

#[test]
fn hists_rows_use_header_columns() {
    let cols = Layout::Hists {
        columns: vec![
            HistsColumn::Samples,
            HistsColumn::SamplePct,
            HistsColumn::TimeNs,
        ],
    };
    let r = row(
        "STORE_GUEST_PAGE_FAULT        1496461   53.00%    889612544",
        &cols,
    );
    assert_eq!(
        r.map(|r| (r.count, r.time.total_ns)),
        Some((1_496_461, Some(889_612_544)))
    );
}

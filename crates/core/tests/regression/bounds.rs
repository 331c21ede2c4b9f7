//! Issue 20's bounds on distinct keys: a trace naming endless new MMIO addresses (the B1
//! reproducer's shape, here 3× the cap) or threads, and a pasted table of more rows than the
//! cap, end as bounded tables whose totals are exact, with a note saying what was folded.
//! (Time and memory are measured in `bench/distinct_keys.py`, not asserted here.)

use virtlens_core::profile::TABLE_CAP;
use virtlens_core::profile::{Profile, TableKind};
use virtlens_core::sources::{self, Format};

fn read(text: &str, format: Format) -> Profile {
    sources::read_bytes(text.as_bytes(), "input", Some(format)).unwrap_or_else(|e| panic!("{e}"))
}

fn mmio_line(i: usize, tid: usize) -> String {
    let a = 1_000_000_000 + i * 17;
    format!(
        "     CPU 0/KVM {tid:>6} [001] {}.{:06}:           kvm:kvm_mmio: mmio write len 4 gpa {:#x} val 0x0\n",
        a / 1_000_000,
        a % 1_000_000,
        0xfe00_0000 + i * 4
    )
}

fn table(p: &Profile, kind: TableKind) -> &virtlens_core::profile::Table {
    p.tables
        .iter()
        .find(|t| t.kind == kind)
        .unwrap_or_else(|| panic!("no {kind} table"))
}

#[test]
fn endless_distinct_addresses_fold_into_a_bounded_table_with_exact_totals() {
    let n = 3 * TABLE_CAP;
    let text: String = (0..n).map(|i| mmio_line(i, 4330)).collect();
    let p = read(&text, Format::TraceText);
    let mmio = table(&p, TableKind::Mmio);
    assert!(mmio.rows.len() <= TABLE_CAP + 1, "{} rows", mmio.rows.len());
    assert_eq!(mmio.rows.iter().map(|r| r.count).sum::<u64>(), n as u64);
    let other = mmio
        .rows
        .iter()
        .find(|r| r.key.key_text().starts_with("other addresses 0xfe000000–"));
    assert!(other.is_some(), "an `other` row with the folded range");
    let note = p.warnings.iter().find(|w| w.message.contains("folded"));
    assert!(
        note.is_some_and(|n| n.message.contains("`mmio` table")),
        "{:?}",
        p.warnings
    );
}

#[test]
fn endless_new_threads_keep_every_count() {
    let n = 40_000; // past the 16,384 threads followed at once
    let text: String = (0..n).map(|i| mmio_line(i % 16, 100_000 + i)).collect();
    let p = read(&text, Format::TraceText);
    assert_eq!(
        table(&p, TableKind::Mmio)
            .rows
            .iter()
            .map(|r| r.count)
            .sum::<u64>(),
        n as u64
    );
    assert!(
        p.warnings
            .iter()
            .any(|w| w.message.contains("threads at once")),
        "{:?}",
        p.warnings
    );
}

#[test]
fn a_pasted_table_longer_than_the_cap_keeps_its_largest_rows() {
    let n = TABLE_CAP + 500;
    let mut text = String::from(
        "Analyze events for all VMs, all VCPUs:\n\n         MMIO Access    Samples  Samples%     \
         Time%    Min Time    Max Time         Avg time \n\n",
    );
    // One hot address at the end, so it cannot be kept for being early.
    for i in 0..n {
        let count = if i == n - 1 { 1_000_000 } else { 1 };
        text.push_str(&format!(
            "       {:#x}:W        {count}     0.00%     0.00%     64.73us     64.73us     64.73us ( +-   0.00% )\n",
            0xfe00_0000 + i * 4
        ));
    }
    let p = read(&text, Format::PerfKvmStat);
    let mmio = table(&p, TableKind::Mmio);
    assert_eq!(mmio.rows.len(), TABLE_CAP);
    assert_eq!(
        mmio.rows.iter().map(|r| r.count).sum::<u64>(),
        1_000_000 + n as u64 - 1
    );
    assert_eq!(mmio.rows[0].count, 1_000_000, "the hot row is kept, first");
    assert!(
        p.warnings.iter().any(|w| w.message.contains("were folded")),
        "{:?}",
        p.warnings
    );
}

#[test]
fn a_pasted_table_of_many_times_the_cap_folds_as_it_is_read() {
    let n = 3 * TABLE_CAP + 77;
    let mut text = String::from(
        "Analyze events for all VMs, all VCPUs:\n\n         MMIO Access    Samples  Samples%     \
         Time%    Min Time    Max Time         Avg time \n\n",
    );
    // Hot addresses first and last: neither is folded.
    for i in 0..n {
        let count = if i == 0 || i == n - 1 {
            1_000_000
        } else {
            1 + (i % 3)
        };
        text.push_str(&format!(
            "       {:#x}:W        {count}     0.00%     0.00%     64.73us     64.73us     64.73us ( +-   0.00% )\n",
            0xfe00_0000 + i * 4
        ));
    }
    let total: u64 = (0..n)
        .map(|i| {
            if i == 0 || i == n - 1 {
                1_000_000
            } else {
                1 + (i % 3) as u64
            }
        })
        .sum();
    let p = read(&text, Format::PerfKvmStat);
    let mmio = table(&p, TableKind::Mmio);
    assert_eq!(mmio.rows.len(), TABLE_CAP);
    assert_eq!(
        mmio.rows.iter().map(|r| r.count).sum::<u64>(),
        total,
        "totals are exact"
    );
    assert_eq!(
        (mmio.rows[0].count, mmio.rows[1].count),
        (1_000_000, 1_000_000)
    );
    let others: Vec<_> = mmio
        .rows
        .iter()
        .filter(|r| r.key.key_text().starts_with("other"))
        .collect();
    assert_eq!(others.len(), 1, "one `other` row");
    assert!(
        others[0]
            .key
            .key_text()
            .starts_with("other addresses 0xfe0"),
        "{}",
        others[0].key
    );
    let notes: Vec<_> = p
        .warnings
        .iter()
        .filter(|w| w.message.contains("folded"))
        .collect();
    assert_eq!(notes.len(), 1, "{:?}", p.warnings);
}

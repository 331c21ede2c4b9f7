//! The kvm_stat source on the real sample (18) and on every era and mode of
//! `tools/kvm/kvm_stat/kvm_stat`, written here from its format strings (each input names the
//! one it reproduces): 2012, 2017 and current screens with child rows, `Total` rows, filters and
//! pid titles; several screens in one paste; `-1`; `-l` and `-c` logs with and without
//! timestamps; e-mail quoting and pasted stray characters.

use virtlens_core::Error;
use virtlens_core::decode::Isa;
use virtlens_core::profile::{Profile, Row, Table, TableKind};
use virtlens_core::sources::{self, Format};
use virtlens_testkit::testdata;

const SAMPLE_18: &str = "exit-reports/18-kvm_stat-debugfs-legacy-haswell-io-exits.txt";

fn read_text(text: &str) -> Profile {
    match sources::read_bytes(text.as_bytes(), "pasted", Some(Format::KvmStat)) {
        Ok(p) => p,
        Err(e) => panic!("pasted text: {e}"),
    }
}

fn table<'a>(p: &'a Profile, kind: &str, label: Option<&str>) -> &'a Table {
    p.tables
        .iter()
        .find(|t| t.kind == TableKind::from_name(kind) && t.label.as_deref() == label)
        .unwrap_or_else(|| {
            panic!(
                "no {kind} table labelled {label:?} in {:?}",
                p.tables
                    .iter()
                    .map(|t| (t.kind.to_string(), t.label.clone()))
                    .collect::<Vec<_>>()
            )
        })
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

// ---- sample 18 (2017 `kvm_stat -d`, `Event Total Current`) ----

/// (name, total, current) of every row of sample 18, by plain splitting of the lines under the
/// ` Event  Total Current` header.
fn independent_18(text: &str) -> Vec<(String, u64, u64)> {
    text.lines()
        .skip_while(|l| !l.trim_start().starts_with("Event"))
        .skip(1)
        .filter_map(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            match w.as_slice() {
                [name, total, current] => {
                    Some((name.to_string(), total.parse().ok()?, current.parse().ok()?))
                }
                _ => None,
            }
        })
        .collect()
}

fn assert_matches_18(p: &Profile, text: &str) {
    let want = independent_18(text);
    assert_eq!(want.len(), 22);
    // Debugfs counters only: no per-reason breakdown, so no vmexit table.
    assert!(p.tables.iter().all(|t| t.kind != TableKind::Vmexit));
    let counts = table(p, "kvm_stat", None);
    let rates = table(p, "kvm_stat_rate", None);
    assert_eq!(counts.rows.len(), want.len());
    assert_eq!(rates.rows.len(), want.len());
    for (name, total, current) in &want {
        assert_eq!(row(counts, name).count, *total, "{name}");
        assert_eq!(row(rates, name).count, *current, "{name} rate");
        assert_eq!(row(counts, name).time.total_ns, None);
    }
    assert_eq!(counts.scope.as_deref(), Some("summary"));
    assert!(
        rates
            .scope
            .as_deref()
            .unwrap()
            .contains("events per second")
    );
    assert_eq!(counts.window, None);
}

#[test]
fn sample_18_every_row_counted_independently() {
    let text = std::fs::read_to_string(testdata(SAMPLE_18)).unwrap();
    let p = sources::read_path(&testdata(SAMPLE_18), None).unwrap();
    assert_eq!(p.origin.format, "kvm-stat");
    assert_matches_18(&p, &text);
    let counts = table(&p, "kvm_stat", None);
    assert_eq!(row(counts, "exits").count, 705_683_003);
    assert_eq!(row(counts, "io_exits").count, 15_393_558);
    assert!(p.warnings.is_empty(), "{}", notes(&p));
}

#[test]
fn sample_18_quoted_and_with_a_stray_character() {
    let text = std::fs::read_to_string(testdata(SAMPLE_18)).unwrap();
    let quoted: String = text.lines().map(|l| format!("> {l}\n")).collect();
    assert_eq!(sources::detect(quoted.as_bytes()), Some(Format::KvmStat));
    assert_matches_18(&read_text(&quoted), &text);

    // A `G` pasted after the name, as in ` halt_exits G   204769   0`.
    let stray = text.replace(
        " halt_exits                                  204769",
        " halt_exits G                                204769",
    );
    assert!(stray.contains("halt_exits G"));
    let p = read_text(&stray);
    assert_matches_18(&p, &text);
    assert!(notes(&p).contains("stray text `G`"), "{}", notes(&p));

    // Quoted twice (a reply to a reply) and indented as a Markdown code block.
    let deep: String = text.lines().map(|l| format!("> >     {l}\n")).collect();
    assert_matches_18(&read_text(&deep), &text);
}

// ---- the current TUI ----

/// Title at (0,0): `'kvm statistics - pid {0} {1}'`, the name as `'({})'`.
fn title_pid(pid: u32, name: &str) -> String {
    format!("kvm statistics - pid {pid} ({name})\n")
}

/// Header at (2,1): `'%-40s %10s%7s %8s' % (col_name, 'Total', '%Total', 'CurAvg/s')`.
fn tui_header(col: &str) -> String {
    format!(
        " {col:<40} {:>10}{:>7} {:>8}\n",
        "Total", "%Total", "CurAvg/s"
    )
}

/// A row at column 1: `'%-40s %10d%7.1f %8s' % (key, value, value * 100 / ltotal, cur)`.
fn tui_row(key: &str, value: u64, ltotal: u64, cur: &str) -> String {
    let pct = value as f64 * 100.0 / ltotal as f64;
    format!(" {key:<40} {value:>10}{pct:>7.1} {cur:>8}\n")
}

/// The `Total` row: `'%-40s %10d        %8s' % ('Total', total, tavg)`.
fn tui_total(total: u64, tavg: &str) -> String {
    format!(" {:<40} {total:>10}        {tavg:>8}\n", "Total")
}

/// An Intel host in tracepoint mode with child events shown (`x`): children are inserted under
/// their parent as `'  ' + child`, child %Total relative to the parent.
fn intel_screen(bare_children: bool) -> String {
    let (exit, entry, msr, user) = (50_000, 50_000, 30_000, 2_000);
    let total = exit + entry + msr + user;
    let child = |name: &str| {
        if bare_children {
            format!("  {name}")
        } else {
            format!("  kvm_exit({name})")
        }
    };
    let mut s = title_pid(4242, "win10");
    s += "                 regex filter: ^kvm_(exit|entry|msr|userspace_exit)\n";
    s += &tui_header("Event");
    s += &tui_row("kvm_exit", exit, total, "16666");
    s += &tui_row(&child("MSR_WRITE"), 30_000, exit, "10000");
    s += &tui_row(&child("HLT"), 12_000, exit, "4000");
    s += &tui_row(&child("EXTERNAL_INTERRUPT"), 5_000, exit, "1666");
    s += &tui_row(&child("EPT_MISCONFIG"), 3_000, exit, "1000");
    s += &tui_row("kvm_entry", entry, total, "16666");
    s += &tui_row("kvm_msr", msr, total, "10000");
    s += &tui_row("kvm_userspace_exit", user, total, "666");
    s += &tui_row("  kvm_userspace_exit(IO)", 1_500, user, "500");
    s += &tui_row("  kvm_userspace_exit(MMIO)", 500, user, "166");
    s += &tui_total(total, "43998");
    s
}

fn assert_intel_screen(p: &Profile) {
    assert_eq!(p.origin.isa, Some(Isa::Vmx));
    assert_eq!(
        p.origin.vm_names.get(&4242).map(String::as_str),
        Some("win10")
    );
    let exits = table(p, "vmexit", None);
    assert_eq!(exits.isa, Some(Isa::Vmx));
    assert_eq!(exits.rows.len(), 4);
    let hlt = row(exits, "HLT");
    assert_eq!(
        (hlt.count, hlt.key.code(), hlt.pid),
        (12_000, Some(12), Some(4242))
    );
    assert_eq!(row(exits, "EPT_MISCONFIG").key.code(), Some(49));
    assert_eq!(exits.count(), 50_000);
    assert_eq!(exits.printed_total.as_ref().map(|t| t.count), Some(50_000));
    assert_eq!(
        exits.scope.as_deref(),
        Some("pid 4242 (win10), fields matching `^kvm_(exit|entry|msr|userspace_exit)`")
    );
    let counts = table(p, "kvm_stat", None);
    assert_eq!(row(counts, "kvm_exit").count, 50_000);
    assert_eq!(row(counts, "kvm_userspace_exit(IO)").count, 1_500);
    assert_eq!(row(counts, "kvm_userspace_exit(MMIO)").count, 500);
    assert_eq!(
        counts.printed_total.as_ref().map(|t| t.count),
        Some(132_000)
    );
    let rates = table(p, "kvm_stat_rate", None);
    assert_eq!(row(rates, "HLT").count, 4_000);
    assert_eq!(row(rates, "kvm_entry").count, 16_666);
    assert_eq!(rates.printed_total.as_ref().map(|t| t.count), Some(43_998));
    assert!(p.warnings.is_empty(), "{}", notes(p));
}

#[test]
fn current_screen_with_children_filter_pid_and_total() {
    let p = read_text(&intel_screen(false));
    assert_intel_screen(&p);
}

#[test]
fn current_screen_with_bare_indented_children() {
    // Children shown as `  HLT` under `kvm_exit`: indentation alone makes them children.
    let p = read_text(&intel_screen(true));
    assert_intel_screen(&p);
}

#[test]
fn children_that_do_not_add_up_are_noted() {
    let text = intel_screen(false).replace(
        &tui_row("  kvm_exit(EPT_MISCONFIG)", 3_000, 50_000, "1000"),
        "",
    );
    let p = read_text(&text);
    assert_eq!(table(&p, "vmexit", None).count(), 47_000);
    assert!(
        notes(&p).contains("kvm_exit counts 50000 but its exit-reason rows add up to 47000"),
        "{}",
        notes(&p)
    );
}

#[test]
fn amd_children_are_svm_reasons() {
    // kvm_stat's SVM table names (`NPF`, `IOIO`, `MSR`, `VINTR`, `HLT`) on an AMD host.
    let (exit, entry) = (9_000, 9_000);
    let total = exit + entry;
    let mut s = String::from("kvm statistics - summary\n\n");
    s += &tui_header("Event");
    s += &tui_row("kvm_exit", exit, total, "3000");
    s += &tui_row("  kvm_exit(NPF)", 4_000, exit, "1333");
    s += &tui_row("  kvm_exit(MSR)", 3_000, exit, "1000");
    s += &tui_row("  kvm_exit(IOIO)", 1_200, exit, "400");
    s += &tui_row("  kvm_exit(HLT)", 600, exit, "200");
    s += &tui_row("  kvm_exit(VINTR)", 200, exit, "66");
    s += &tui_row("kvm_entry", entry, total, "3000");
    s += &tui_total(total, "6000");
    let p = read_text(&s);
    let exits = table(&p, "vmexit", None);
    assert_eq!(exits.isa, Some(Isa::Svm));
    assert_eq!(row(exits, "npf").key.code(), Some(0x400));
    assert_eq!(row(exits, "hlt").key.code(), Some(0x78));
    assert_eq!(row(exits, "io").count, 1_200);
    assert_eq!(exits.count(), 9_000);
}

#[test]
fn guest_name_screen_has_one_row_per_vm() {
    // `b` (debugfs only): the column header reads `Guest Name`, rows are guests.
    let mut s = String::from("kvm statistics - summary\n\n");
    s += &tui_header("Guest Name");
    s += &tui_row("win10 desktop", 90_000, 120_000, "3000");
    s += &tui_row("db01", 30_000, 120_000, "1000");
    s += &tui_total(120_000, "4000");
    let p = read_text(&s);
    let guests = table(&p, "kvm_stat_guest", None);
    assert_eq!(row(guests, "win10 desktop").count, 90_000);
    assert_eq!(row(guests, "db01").count, 30_000);
}

#[test]
fn several_screens_in_one_paste() {
    // Two refreshes of one session, then a pid screen: each is its own labelled run.
    let mut text = String::new();
    for scale in [1, 2] {
        text += "kvm statistics - summary\n\n";
        text += &tui_header("Event");
        text += &tui_row("kvm_exit", 1_000 * scale, 2_000 * scale, "300");
        text += &tui_row("kvm_entry", 1_000 * scale, 2_000 * scale, "300");
        text += &tui_total(2_000 * scale, "600");
        text += "\n";
    }
    text += &title_pid(77, "db01").replace('\n', "   Guest is DEAD   \n");
    text += "\n";
    text += &tui_header("Event");
    text += &tui_row("kvm_exit", 10, 20, "1");
    text += &tui_row("kvm_entry", 10, 20, "1");
    let p = read_text(&text);
    assert_eq!(
        row(table(&p, "kvm_stat", Some("screen 1")), "kvm_exit").count,
        1_000
    );
    assert_eq!(
        row(table(&p, "kvm_stat", Some("screen 2")), "kvm_exit").count,
        2_000
    );
    let third = table(&p, "kvm_stat", Some("screen 3"));
    assert_eq!(third.scope.as_deref(), Some("pid 77 (db01)"));
    assert!(third.rows.iter().all(|r| r.pid == Some(77)));
    assert!(notes(&p).contains("Guest is DEAD"), "{}", notes(&p));
    assert!(
        notes(&p).contains("later refresh of the screen on line 1"),
        "{}",
        notes(&p)
    );
}

// ---- older screens ----

#[test]
fn screen_of_2012() {
    // `screen.addstr(0, 0, 'kvm statistics')`; the header's `Event` at column 1, `Total` ending
    // at column 51 and `Current` at 59; rows: the key at column 1, `'%10d'` at 41, `'%8d'` at 51
    // (delta divided by the refresh interval). Children are plain rows `kvm_exit(NAME)`.
    let line = |key: &str, total: u64, cur: u64| format!(" {key:<40}{total:>10}{cur:>8}\n");
    let mut s = String::from("kvm statistics\n\n");
    s += &format!(" {:<45}Total Current\n", "Event");
    s += &line("kvm_exit", 17_724, 66);
    s += &line("kvm_entry", 17_724, 66);
    s += &line("kvm_exit(EXCEPTION_NMI)", 15_000, 50);
    s += &line("kvm_exit(HLT)", 2_000, 11);
    s += &line("kvm_exit(PENDING_INTERRUPT)", 724, 5);
    s += &line("kvm_page_fault", 15_000, 50);
    let p = read_text(&s);
    let exits = table(&p, "vmexit", None);
    assert_eq!(exits.scope, None);
    assert_eq!(row(exits, "EXCEPTION_NMI").count, 15_000);
    // The pre-5.6 name is decoded to today's.
    assert_eq!(row(exits, "INTERRUPT_WINDOW").key.code(), Some(7));
    assert_eq!(exits.count(), 17_724);
    assert_eq!(
        row(table(&p, "kvm_stat_rate", None), "kvm_page_fault").count,
        50
    );
    assert!(p.warnings.is_empty(), "{}", notes(&p));

    // The same screen without its header row (as quoted in some docs, with prose between).
    let no_header: String = s
        .lines()
        .filter(|l| !l.contains("Current"))
        .flat_map(|l| [l, "\n"])
        .collect::<String>()
        .replace(
            " kvm_entry",
            "  Individual exit reasons follow, see kvm_exit (NAME) for more information.\n kvm_entry",
        );
    let q = read_text(&no_header);
    assert_eq!(table(&q, "vmexit", None).count(), 17_724);
}

#[test]
fn screen_with_blank_rate_cells() {
    // 2017–2018 versions print `''` for a zero rate: rows end at %Total.
    let mut s = String::from("kvm statistics - summary\n\n");
    s += &tui_header("Event");
    s += &tui_row("exits", 5_000, 6_000, "12");
    s += &tui_row("halt_exits", 1_000, 6_000, "");
    let p = read_text(&s);
    assert_eq!(row(table(&p, "kvm_stat", None), "halt_exits").count, 1_000);
    let rates = table(&p, "kvm_stat_rate", None);
    assert_eq!(rates.rows.len(), 1);
    assert_eq!(row(rates, "exits").count, 12);
}

// ---- -1 ----

#[test]
fn batch_once() {
    // batch(): `'%-42s%10d%10d' % (key.split(' ')[0], value, delta)`, sorted by key; the
    // children's keys are `kvm_exit(HLT) kvm_exit`, printed as `kvm_exit(HLT)`.
    let line = |k: &str, v: u64, d: u64| format!("{k:<42}{v:>10}{d:>10}\n");
    let mut s = String::from("# kvm_stat -1\n");
    s += &line("kvm_entry", 5_210, 5_100);
    s += &line("kvm_exit", 5_212, 5_101);
    s += &line("kvm_exit(EPT_VIOLATION)", 12, 12);
    s += &line("kvm_exit(EXTERNAL_INTERRUPT)", 1_000, 990);
    s += &line("kvm_exit(HLT)", 1_200, 1_150);
    s += &line("kvm_exit(MSR_WRITE)", 3_000, 2_949);
    s += &line("kvm_msr", 3_000, 2_949);
    let p = read_text(&s);
    let label = Some("kvm_stat -1");
    let exits = table(&p, "vmexit", label);
    assert_eq!(exits.count(), 5_212);
    assert_eq!(row(exits, "EPT_VIOLATION").key.code(), Some(48));
    let rates = table(&p, "kvm_stat_rate", label);
    assert_eq!(row(rates, "HLT").count, 1_150);
    assert_eq!(row(rates, "kvm_exit").count, 5_101);
    assert!(rates.scope.as_deref().unwrap().contains("1 s"));
    assert_eq!(row(table(&p, "kvm_stat", label), "kvm_msr").count, 3_000);

    // 2012's `'%-22s%10d%10d'`, detected without a command line.
    let old = |k: &str, v: u64, d: u64| format!("{k:<22}{v:>10}{d:>10}\n");
    let text = old("exits", 123_456, 4_000)
        + &old("halt_exits", 2_000, 90)
        + &old("io_exits", 77_000, 1_000);
    assert_eq!(sources::detect(text.as_bytes()), Some(Format::KvmStat));
    let p = read_text(&text);
    assert_eq!(row(table(&p, "kvm_stat", None), "io_exits").count, 77_000);
    assert_eq!(
        row(table(&p, "kvm_stat_rate", None), "halt_exits").count,
        90
    );
}

// ---- -l and -c ----

fn deltas(i: u64) -> [u64; 4] {
    // kvm_exit, kvm_exit(HLT), kvm_exit(MSR_WRITE), halt_exits
    let hlt = 100 + i * 7 % 13;
    let msr = 300 + i * 11 % 17;
    [hlt + msr, hlt, msr, 40 + i % 5]
}

#[test]
fn log_with_timestamps_and_repeated_banner() {
    // log(): StdFormat banner `key.split(' ')[0] + ' '` per key, repeated every 20 lines;
    // statline `datetime.now().strftime("%Y-%m-%d %H:%M:%S")` + `' %9d' % delta` per key.
    let names = [
        "kvm_exit",
        "kvm_exit(HLT)",
        "kvm_exit(MSR_WRITE)",
        "halt_exits",
    ];
    let banner: String = names.iter().map(|n| format!("{n} ")).collect::<String>() + "\n";
    let mut s = String::from("$ sudo kvm_stat -l -s 2\n");
    let mut sums = [0u64; 4];
    for i in 0..25u64 {
        if i % 20 == 0 {
            s += &banner;
        }
        let d = deltas(i);
        for (sum, v) in sums.iter_mut().zip(d) {
            *sum += v;
        }
        let secs = 7 + 2 * i;
        s += &format!("2024-03-01 10:{:02}:{:02}", secs / 60, secs % 60);
        for v in d {
            s += &format!(" {v:>9}");
        }
        s += "\n";
    }
    let p = read_text(&s);
    let label = Some("kvm_stat -l -s 2");
    let exits = table(&p, "vmexit", label);
    assert_eq!(row(exits, "HLT").count, sums[1]);
    assert_eq!(row(exits, "MSR_WRITE").count, sums[2]);
    assert_eq!(exits.printed_total.as_ref().map(|t| t.count), Some(sums[0]));
    assert_eq!(
        row(table(&p, "kvm_stat", label), "halt_exits").count,
        sums[3]
    );
    let w = exits.window.as_ref().unwrap();
    assert_eq!(w.start.as_deref(), Some("2024-03-01 10:00:07"));
    assert_eq!(w.end.as_deref(), Some("2024-03-01 10:00:55"));
    assert_eq!(w.intervals, 25);
    // From one 2 s interval before the first stamp to the last: 25 × 2 s.
    assert_eq!(w.duration_ns, Some(50_000_000_000));
    assert!(
        p.tables
            .iter()
            .all(|t| t.kind != TableKind::from_name("kvm_stat_rate"))
    );
    assert!(p.warnings.is_empty(), "{}", notes(&p));
}

#[test]
fn csv_log_with_skipped_zero_lines() {
    // CSVFormat: banner `'timestamp'` + `',' + key.split(' ')[0]` per key; statline the stamp
    // + `',' + str(delta)` per key. `-z` left out the all-zero interval at 10:00:09.
    let mut s = String::from("timestamp,exits,halt_exits,io_exits\n");
    let mut sums = [0u64; 3];
    for secs in [3u64, 6, 12, 15] {
        let d = [1_000 + secs, 10 + secs, 100 + secs];
        for (sum, v) in sums.iter_mut().zip(d) {
            *sum += v;
        }
        s += &format!("2024-03-01 10:00:{secs:02},{},{},{}\n", d[0], d[1], d[2]);
    }
    s += "2024-03-01 10:00:18,1,2\n"; // a value short: skipped, with a note
    assert_eq!(sources::detect(s.as_bytes()), Some(Format::KvmStat));
    let p = read_text(&s);
    assert!(
        notes(&p).contains("expected 3 values as the banner names, found 2"),
        "{}",
        notes(&p)
    );
    let t = table(&p, "kvm_stat", None);
    assert_eq!(row(t, "exits").count, sums[0]);
    assert_eq!(row(t, "io_exits").count, sums[2]);
    let w = t.window.as_ref().unwrap();
    assert_eq!(w.intervals, 4);
    // 12 s between the first and last stamp, plus one 3 s interval (the smallest gap).
    assert_eq!(w.duration_ns, Some(15_000_000_000));
}

#[test]
fn old_log_without_timestamps_and_with_cut_names() {
    // 2012 log(): banner `'%10s' % k[0:9],` (Python 2 print, space-separated), statline
    // `' %9d' % delta,` per key; no timestamps, fixed 1 s sleep.
    let keys = [
        "exits",
        "halt_exits",
        "kvm_exit(HLT)",
        "kvm_exit(MSR_WRITE)",
    ];
    let banner: Vec<String> = keys
        .iter()
        .map(|k| format!("{:>10}", &k[..k.len().min(9)]))
        .collect();
    let mut s = banner.join(" ") + "\n";
    for i in 0..3u64 {
        let v: Vec<String> = (0..4u64).map(|k| format!(" {:>9}", 10 * k + i)).collect();
        s += &(v.join(" ") + "\n");
    }
    let p = read_text(&s);
    let t = table(&p, "kvm_stat", None);
    assert_eq!(row(t, "exits").count, 3);
    assert_eq!(row(t, "halt_exit").count, 33);
    assert_eq!(row(t, "kvm_exit(").count, 63);
    assert_eq!(row(t, "kvm_exit(#2").count, 93);
    let w = t.window.as_ref().unwrap();
    assert_eq!(
        (w.intervals, w.duration_ns, w.start.clone()),
        (3, None, None)
    );
    let n = notes(&p);
    assert!(n.contains("9 characters"), "{n}");
    assert!(n.contains("no timestamps"), "{n}");
}

#[test]
fn logs_and_screens_in_one_file_are_separate_runs() {
    let mut s = String::from("# kvm_stat -1\n");
    s += &format!("{:<42}{:>10}{:>10}\n", "exits", 500, 50);
    s += &format!("{:<42}{:>10}{:>10}\n", "halt_exits", 100, 10);
    s += "# kvm_stat -c\ntimestamp,exits,halt_exits\n2024-03-01 10:00:01,5,1\n";
    s += "# kvm_stat -1\n";
    s += &format!("{:<42}{:>10}{:>10}\n", "exits", 900, 40);
    let p = read_text(&s);
    assert_eq!(
        row(table(&p, "kvm_stat", Some("kvm_stat -1")), "exits").count,
        500
    );
    assert_eq!(
        row(table(&p, "kvm_stat", Some("kvm_stat -c")), "exits").count,
        5
    );
    assert_eq!(
        row(table(&p, "kvm_stat", Some("kvm_stat -1 (2)")), "exits").count,
        900
    );
}

// ---- detection and errors ----

#[test]
fn detection_and_errors() {
    let text = std::fs::read_to_string(testdata(SAMPLE_18)).unwrap();
    assert_eq!(sources::detect(text.as_bytes()), Some(Format::KvmStat));
    assert_eq!(
        sources::detect(intel_screen(false).as_bytes()),
        Some(Format::KvmStat)
    );
    let banner = "exits halt_exits \n 1 2\n";
    assert_eq!(sources::detect(banner.as_bytes()), Some(Format::KvmStat));
    // Neither bcc's nor perf-prof's samples read as kvm_stat.
    let bcc =
        std::fs::read_to_string(testdata("exit-reports/01-bcc-kvmexit-all-threads.txt")).unwrap();
    assert_eq!(sources::detect(bcc.as_bytes()), Some(Format::BccKvmexit));

    match sources::read_bytes(
        b"\nnot kvm_stat at all\n",
        "junk.txt",
        Some(Format::KvmStat),
    ) {
        Err(Error::Parse {
            path,
            line,
            message,
        }) => {
            assert_eq!((path.as_str(), line), ("junk.txt", 2));
            assert!(message.contains("expected"), "{message}");
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        sources::read_bytes(b"", "empty.txt", Some(Format::KvmStat)),
        Err(Error::Input { .. })
    ));
    // A screen with only a status line is no data, but says why.
    let err = sources::read_bytes(
        b"kvm statistics - summary\n\n Event  Total %Total CurAvg/s\n Collecting data...\n",
        "early.txt",
        Some(Format::KvmStat),
    );
    match err {
        Err(Error::Parse { line, message, .. }) => {
            assert_eq!(line, 4);
            assert!(message.contains("still collecting data"), "{message}");
        }
        other => panic!("{other:?}"),
    }
}

/// `kvm_stat -1` listings printed back to back (a shell loop): one run whose counts are the
/// sums of the listings' change column, over one second sampled per listing; memory is one
/// listing's, and one note says how the loop was read.
#[test]
fn listings_back_to_back_are_one_loop_summing_their_seconds() {
    let listing = "kvm_exit                                         100        10\n\
                   kvm_exit(HLT)                                    100        10\n\
                   kvm_pio                                           40         4\n";
    let p = read_text(&listing.repeat(30));
    let t = table(&p, "kvm_stat", None);
    assert_eq!(row(t, "kvm_pio").count, 120, "30 seconds of 4");
    assert_eq!(row(t, "kvm_exit").count, 300);
    assert_eq!(t.rows.len(), 2, "{:?}", t.rows);
    let exits = table(&p, "vmexit", None);
    assert_eq!(exits.count(), 300);
    let w = exits.window.as_ref().unwrap();
    assert_eq!((w.duration_ns, w.intervals), (Some(30_000_000_000), 30));
    assert_eq!(row(table(&p, "kvm_stat_rate", None), "kvm_pio").count, 4);
    let all = notes(&p);
    assert_eq!(p.warnings.len(), 1, "{all}");
    assert!(
        all.contains("Some(1): 30 `kvm_stat -1` listings printed one after another (a loop; the last starts on line 88)"),
        "{all}"
    );
    assert!(!exits.partial && !t.partial);
}

/// A loop that prints `date` before each listing: the stamps bound the window's start and
/// end, and no date line is taken for a damaged row; a blank line then another listing
/// starts a run of its own, as a second paste does.
#[test]
fn dated_listings_are_one_loop_and_a_listing_after_a_blank_line_is_another_run() {
    let listing = "kvm_exit                                         100        10\n\
                   kvm_pio                                           40         4\n";
    let mut text = String::new();
    for s in ["07", "12", "17"] {
        text += &format!("Mon Nov 30 08:00:{s} UTC 2026\n{listing}");
    }
    text += &format!("\n{listing}");
    let p = read_text(&text);
    let all = notes(&p);
    let looped = table(&p, "kvm_stat", Some("kvm_stat -1 1"));
    assert_eq!(row(looped, "kvm_pio").count, 12, "{all}");
    let w = looped.window.as_ref().unwrap();
    assert_eq!(
        (w.start.as_deref(), w.end.as_deref(), w.duration_ns),
        (
            Some("Mon Nov 30 08:00:07 UTC 2026"),
            Some("Mon Nov 30 08:00:17 UTC 2026"),
            Some(3_000_000_000)
        )
    );
    assert!(
        all.contains(
            "stamped from `Mon Nov 30 08:00:07 UTC 2026` to `Mon Nov 30 08:00:17 UTC 2026`"
        ),
        "{all}"
    );
    assert!(!all.contains("could not read"), "{all}");
    let second = table(&p, "kvm_stat", Some("kvm_stat -1 2"));
    assert_eq!(
        row(second, "kvm_pio").count,
        40,
        "a lone listing keeps its totals"
    );
}

/// A listing whose second row, damaged, reads as its first row's name with stray text left
/// in it: one listing still (its totals kept), not a loop of two, and the stray text noted.
/// (The fuzzer found this: a damaged `halt_exits` read as `exits`.)
#[test]
fn a_row_damaged_into_the_first_name_does_not_start_a_loop() {
    let text = "exits                                            100        10\n\
                ha lt_exits                                       40         4\n\
                io_exits                                          30         3\n";
    let p = read_text(text);
    let all = notes(&p);
    assert!(!all.contains("listings printed one after another"), "{all}");
    assert!(all.contains("ignored stray text `ha`"), "{all}");
    let t = table(&p, "kvm_stat", None);
    assert_eq!(row(t, "io_exits").count, 30, "{all}");
    assert_eq!(t.count(), 170, "every total kept: {all}");
}

/// A row cut into a clean copy of the first row (`halt_` cut off `halt_exits` under `exits`)
/// with a lower total: KVM's own counters count from the VM's start, so it is a row of the
/// listing (kept apart as `exits#2`, and noted), not a loop's next listing. Tracepoints
/// count from each listing's start, so under `kvm_exit` the same lines are a loop of two.
/// (CI's fuzzer found the first case.)
#[test]
fn a_statistic_whose_total_went_down_does_not_start_a_loop() {
    let text = "exits                                            500        50\n\
                exits                                            100        10\n";
    let p = read_text(text);
    let all = notes(&p);
    assert!(!all.contains("listings printed one after another"), "{all}");
    assert!(
        all.contains("`exits` appears again (first on line 1)"),
        "{all}"
    );
    assert_eq!(table(&p, "kvm_stat", None).count(), 600, "{all}");
    let p = read_text(&text.replace("exits   ", "kvm_exit"));
    let all = notes(&p);
    assert!(all.contains("2 `kvm_stat -1` listings"), "{all}");
    assert_eq!(
        row(table(&p, "kvm_stat", None), "kvm_exit").count,
        60,
        "{all}"
    );
}

/// `while :; do date; kvm_stat -1 -f exits; done`: listings of one row each with `date` lines
/// between them are told as kvm_stat output (the dates do not break the run of rows that
/// detection looks for) and read as one loop. (CI's proptest found dated one-row listings
/// taken for no format at all.)
#[test]
fn dated_one_row_listings_are_detected_and_read_as_a_loop() {
    let text = "Mon Nov 30 08:00:07 UTC 2026\n\
                exits                                            100        10\n\
                Mon Nov 30 08:00:12 UTC 2026\n\
                exits                                            160        12\n";
    assert_eq!(sources::detect(text.as_bytes()), Some(Format::KvmStat));
    let p = sources::read_bytes(text.as_bytes(), "loop.txt", None).unwrap();
    let t = table(&p, "kvm_stat", None);
    assert_eq!(row(t, "exits").count, 22, "{}", notes(&p));
    assert!(
        notes(&p).contains("2 `kvm_stat -1` listings"),
        "{}",
        notes(&p)
    );
}

/// A row of a loop without its change column (a counter that went down) is missing from the
/// sums: the run is partial and says how many such rows there were.
#[test]
fn a_loop_row_without_its_change_is_counted_out_and_marks_the_run_partial() {
    let good = "kvm_exit                                         100        10\n\
                kvm_pio                                           40         4\n";
    let down = "kvm_exit                                          90       -10\n\
                kvm_pio                                           44         4\n";
    let p = read_text(&format!("{good}{down}{good}"));
    let t = table(&p, "kvm_stat", None);
    let all = notes(&p);
    assert_eq!(row(t, "kvm_exit").count, 20, "{all}");
    assert_eq!(row(t, "kvm_pio").count, 12);
    assert!(t.partial);
    assert!(
        all.contains("1 rows of this loop have no change column"),
        "{all}"
    );
}

//! Issue 20's property over every real text table in `testdata/`: damaging any one line of an
//! input changes at most the row on that line (or that row's table header, and then a note says
//! so), never the other rows.
//!
//! Each input a line reader reads is damaged line by line, one damage at a time: the line cut
//! (a quarter, half or three quarters of the way), joined with the next line, each number on it
//! replaced by `x#!`, a NUL or an em dash `—` (a mailer's autocorrect of `--`) put into it at
//! those places. The damaged text is read with the
//! intact file's format, and every row of the intact profile that is not on a damaged line must
//! still be there, in the table of the same place and kind, with the same count, and a table
//! keeps its label unless the damaged line holds it — unless a note (not a note of a repair) or
//! the error names a line of the damaged span: a note may explain a bigger loss. The rows on
//! the damaged line may be lost or read differently, but then a note names that line too (a
//! name or a count cut short is the exception: it reads as a shorter name or a smaller count).
//!
//! Rows carry no line, so "the row is on a damaged line" is decided from the text: the damaged
//! line (before the damage) holds the row's key. A table without a label may gain one from a
//! damaged line (a timestamp cut in half reads as prose, and prose labels the table below).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use virtlens_core::profile::Profile;
use virtlens_core::sources::{self, Format, REPAIR_NOTE};

/// The folders of real text tables (and the lab's recorded `perf kvm stat` and kvm_stat
/// outputs). Not `kernel-logs`: a kernel log is messages, not a table's rows; a message cut in
/// half is counted among the lines not about KVM (noted as a count, without its line).
const FOLDERS: [&str; 7] = [
    "exit-reports",
    "virsh",
    "readers",
    "cases",
    "perfmon",
    "seed-kvm-hyperv-traps",
    "lab-cases",
];

/// The formats read line by line (`sources/line_reader.rs`).
const LINE_FORMATS: [Format; 11] = [
    Format::PerfKvmStat,
    Format::KvmStat,
    Format::BccKvmexit,
    Format::PerfProf,
    Format::CounterTable,
    Format::PerfStat,
    Format::QmpStats,
    Format::BhyveDtrace,
    Format::KernelLog,
    Format::VirshDomstats,
    Format::Xenalyze,
];

/// Formats that may still lose rows after a damaged line without a note: none since issue 20's
/// D1–D12 were fixed. A format put here is skipped, so this list stays empty.
const KNOWN_LOSSY: [Format; 0] = [];

/// Lines damaged per input at most (every k-th line beyond that), to keep the test short;
/// `VIRTLENS_DAMAGE_LINES=N` damages more (every line of these inputs at 300).
fn max_lines() -> usize {
    std::env::var("VIRTLENS_DAMAGE_LINES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(30)
}

/// Damage this test knows it misses, each a gap stated in issue 20's closing note: the first
/// line of a kvm_stat block without title and header, joined with the next (or cut so that
/// the block's columns are read from the rows below it), is not split or noted. (file, line,
/// damage.)
const KNOWN_GAPS: [(&str, usize, &str); 3] = [
    (
        "exit-reports/35-kvm_stat-arm64-6.16-idle-wfx-headerless.txt",
        1,
        "cut three quarters of the way",
    ),
    (
        "exit-reports/35-kvm_stat-arm64-6.16-idle-wfx-headerless.txt",
        1,
        "joined with the next line",
    ),
    (
        "cases/ml-13-kvm-stat-post-migration-timer-irq-storm/input.txt",
        1,
        "joined with the next line",
    ),
];

fn inputs() -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = FOLDERS
        .iter()
        .flat_map(|f| virtlens_testkit::files_under(&virtlens_testkit::testdata(f)))
        .filter(|p| p.extension().is_some_and(|x| x == "txt"))
        .collect();
    out.sort();
    out
}

/// A damage: the damaged text, the 1-based lines of the intact text it touched, and the lines
/// of the damaged text where it is.
struct Damage {
    what: String,
    text: Vec<u8>,
    intact_lines: Vec<usize>,
    damaged_lines: Vec<usize>,
}

/// Places in a line where it is cut or has a character put in: a quarter, half and three
/// quarters of the way.
const AT: [(usize, &str); 3] = [(1, "a quarter"), (2, "half"), (3, "three quarters")];

/// Numbers of a line replaced by `x#!`, one at a time, at most this many.
const MAX_NUMBERS: usize = 8;

fn damages(text: &[u8], lines: &[&[u8]], i: usize) -> Vec<Damage> {
    let line = lines[i];
    let n = i + 1;
    let rebuild = |with: &[u8], join: bool| {
        let mut out = Vec::with_capacity(text.len() + 8);
        for (j, l) in lines.iter().enumerate() {
            if j == i {
                out.extend_from_slice(with);
                if !join {
                    out.push(b'\n');
                }
            } else {
                out.extend_from_slice(l);
                out.push(b'\n');
            }
        }
        out
    };
    let one = |what: String, with: &[u8]| Damage {
        what,
        text: rebuild(with, false),
        intact_lines: vec![n],
        damaged_lines: vec![n],
    };
    let s = String::from_utf8_lossy(line);
    let mut out = Vec::new();
    for (quarters, name) in AT {
        let at = (0..=s.len() * quarters / 4)
            .rev()
            .find(|&k| s.is_char_boundary(k))
            .unwrap_or(0);
        let insert = |what: &str| format!("{}{what}{}", &s[..at], &s[at..]).into_bytes();
        // A cut that leaves only blanks deleted the line: nothing in the text tells a blank
        // line that was a row from any other (a printed total may, on its table's line).
        if !s[..at].trim_ascii().is_empty() || s.trim_ascii().is_empty() {
            out.push(one(format!("cut {name} of the way"), &s.as_bytes()[..at]));
        }
        out.push(one(format!("a NUL put {name} of the way"), &insert("\0")));
        out.push(one(
            format!("an em dash put {name} of the way"),
            &insert("—"),
        ));
    }
    if i + 1 < lines.len() {
        out.push(Damage {
            what: "joined with the next line".into(),
            text: rebuild(line, true),
            intact_lines: vec![n, n + 1],
            damaged_lines: vec![n],
        });
    }
    let mut start = 0;
    for k in 0..MAX_NUMBERS {
        let Some(from) = s[start..]
            .find(|c: char| c.is_ascii_digit())
            .map(|f| start + f)
        else {
            break;
        };
        let end = s[from..]
            .find(|c: char| !c.is_ascii_digit())
            .map_or(s.len(), |e| from + e);
        let garbled = format!("{}x#!{}", &s[..from], &s[end..]);
        out.push(one(
            format!("number {} replaced by `x#!`", k + 1),
            garbled.as_bytes(),
        ));
        start = end;
    }
    out
}

/// Whether the row of `key` may be printed on `line`: its key is in it (a count alone may be
/// a sum of rows, as bcc's per-thread rows summed per VM).
fn on_line(key: &str, line: &str) -> bool {
    let key = key
        .split(['#', '('])
        .next()
        .unwrap_or(key)
        .to_ascii_uppercase();
    !key.is_empty() && line.to_ascii_uppercase().contains(&key)
}

/// Whether a note on `line` saying `message` names line `n`: by its line, or as one of the
/// lines `A–B` it says a row spans.
fn names_line(line: Option<usize>, message: &str, n: usize) -> bool {
    if line == Some(n) {
        return true;
    }
    message.split("lines ").skip(1).any(|rest| {
        let mut ends = rest.splitn(2, '–').map(|e| {
            e.chars()
                .take_while(char::is_ascii_digit)
                .collect::<String>()
                .parse::<usize>()
                .ok()
        });
        matches!((ends.next(), ends.next()), (Some(Some(a)), Some(Some(b))) if a <= n && n <= b)
    })
}

/// Per table, in order: its kind, its label, and its rows' counts by (key, pid, vCPU).
type Tables = Vec<(String, Option<String>, Rows)>;
type Rows = BTreeMap<(String, Option<u32>, Option<u32>), Vec<u64>>;

fn tables(p: &Profile) -> Tables {
    p.tables
        .iter()
        .map(|t| {
            let mut rows = Rows::new();
            for r in &t.rows {
                rows.entry((r.key.key_text(), r.pid, r.vcpu))
                    .or_default()
                    .push(r.count);
            }
            (t.kind.as_str().to_string(), t.label.clone(), rows)
        })
        .collect()
}

/// What is wrong with `damaged`'s reading, if anything.
fn check(
    intact: &Tables,
    lines: &[&str],
    damage: &Damage,
    result: &Result<Profile, virtlens_core::Error>,
) -> Option<String> {
    let p = match result {
        Ok(p) => p,
        Err(e) => {
            let e = e.to_string();
            let named = damage.damaged_lines.iter().any(|&n| {
                e.contains(&format!(":{n}:"))
                    || e.contains(&format!("line {n}"))
                    || names_line(None, &e, n)
            });
            return (!named).then(|| format!("refused without naming the line: {e}"));
        }
    };
    let explained = p.warnings.iter().any(|w| {
        damage
            .damaged_lines
            .iter()
            .any(|&n| names_line(w.line, &w.message, n))
            && !w.message.starts_with(REPAIR_NOTE)
    });
    if explained {
        return None;
    }
    let got = tables(p);
    let span: Vec<&str> = damage.intact_lines.iter().map(|&n| lines[n - 1]).collect();
    let mut lost = Vec::new();
    for (i, (kind, label, rows)) in intact.iter().enumerate() {
        let Some((_, got_label, got_rows)) = got.get(i).filter(|g| &g.0 == kind) else {
            lost.push(format!("table {i} ({kind} {label:?})"));
            continue;
        };
        // A label changes only with its own line (a label cut in half reads as a label).
        if label.is_some()
            && got_label != label
            && !label
                .as_deref()
                .is_some_and(|l| span.iter().any(|s| s.contains(l)))
        {
            lost.push(format!("table {i}'s label {label:?} (now {got_label:?})"));
        }
        for (id, counts) in rows {
            // A row on the damaged line may be lost or changed, but only with a note.
            let on_damaged_line = span.iter().any(|l| on_line(&id.0, l));
            for &count in counts {
                // A name cut short reads as a shorter name: nothing tells it from one.
                let cut_name = on_damaged_line
                    && got_rows.iter().any(|(g, c)| {
                        id.0.starts_with(g.0.as_str())
                            && (g.1, g.2) == (id.1, id.2)
                            && c.contains(&count)
                    });
                // Likewise a count cut short where it ends its line (`key=value` formats): it
                // reads as a smaller count.
                let cut_count = on_damaged_line
                    && got_rows.get(id).is_some_and(|c| {
                        c.iter().any(|g| {
                            let (g, whole) = (g.to_string(), count.to_string());
                            g.len() < whole.len() && whole.starts_with(&g)
                        })
                    });
                if !cut_name && !cut_count && !got_rows.get(id).is_some_and(|c| c.contains(&count))
                {
                    let whose = if on_damaged_line {
                        "its own row"
                    } else {
                        "table"
                    };
                    lost.push(format!("{whose} {i} ({kind} {label:?}): {} {count}", id.0));
                }
            }
        }
    }
    (!lost.is_empty()).then(|| {
        format!(
            "lost without a note on the line: {}; notes: {:?}",
            lost.join(", "),
            p.warnings
                .iter()
                .map(|w| (w.line, w.message.chars().take(90).collect::<String>()))
                .collect::<Vec<_>>()
        )
    })
}

/// What damaging every sampled line of one input found: (inputs read, cases, failures).
fn damage_one_input(path: &Path) -> (usize, usize, Vec<String>) {
    let mut failures = Vec::new();
    let mut inputs_read = 0;
    let mut cases = 0;
    let Ok(bytes) = std::fs::read(path) else {
        return (0, 0, Vec::new());
    };
    let head = &bytes[..bytes.len().min(sources::DETECT_BYTES)];
    let Some(format) = sources::detect(head).filter(|f| LINE_FORMATS.contains(f)) else {
        return (0, 0, Vec::new());
    };
    if KNOWN_LOSSY.contains(&format) {
        return (0, 0, Vec::new());
    }
    let name = path.display().to_string();
    let Ok(intact) = sources::read_bytes(&bytes, &name, Some(format)) else {
        return (0, 0, Vec::new());
    };
    inputs_read += 1;
    let intact_rows = tables(&intact);
    let body = bytes.strip_suffix(b"\n").unwrap_or(&bytes);
    let raw: Vec<&[u8]> = body.split(|&b| b == b'\n').collect();
    let text: Vec<String> = raw
        .iter()
        .map(|l| String::from_utf8_lossy(l).into_owned())
        .collect();
    let text: Vec<&str> = text.iter().map(String::as_str).collect();
    let step = raw.len().div_ceil(max_lines()).max(1);
    let rel = path
        .strip_prefix(virtlens_testkit::testdata(""))
        .unwrap_or(path)
        .display()
        .to_string();
    for i in (0..raw.len()).step_by(step) {
        for damage in damages(&bytes, &raw, i) {
            if KNOWN_GAPS.contains(&(rel.as_str(), i + 1, damage.what.as_str())) {
                continue;
            }
            cases += 1;
            let result = sources::read_bytes(&damage.text, &name, Some(format));
            if let Some(why) = check(&intact_rows, &text, &damage, &result) {
                failures.push(format!(
                    "{rel} ({}) line {}, {}: {why}",
                    format.name(),
                    i + 1,
                    damage.what
                ));
            }
        }
    }
    (inputs_read, cases, failures)
}

#[test]
fn damaging_one_line_changes_at_most_its_row() {
    // The inputs are damaged on every CPU (each damaged input is read whole again).
    let inputs = inputs();
    let workers = std::thread::available_parallelism()
        .map_or(2, |n| n.get())
        .min(8);
    let results: Vec<(usize, usize, Vec<String>)> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..workers)
            .map(|w| {
                let inputs = &inputs;
                scope.spawn(move || {
                    inputs
                        .iter()
                        .skip(w)
                        .step_by(workers)
                        .map(|p| damage_one_input(p))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap_or_default())
            .collect()
    });
    let inputs_read: usize = results.iter().map(|r| r.0).sum();
    let cases: usize = results.iter().map(|r| r.1).sum();
    let failures: Vec<String> = results.into_iter().flat_map(|r| r.2).collect();
    assert!(inputs_read >= 10, "only {inputs_read} inputs were read");
    assert!(
        failures.is_empty(),
        "{} of {cases} damaged inputs ({inputs_read} files) lost rows without a note:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

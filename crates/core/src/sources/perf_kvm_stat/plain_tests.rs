//! The one-step reading of plain rows ([`LineFormat::plain`]) reads exactly what the full
//! path (split, repairs, [`LineFormat::line`]) reads: every perf kvm stat input in `testdata/`,
//! and each with its rows damaged in the ways the repairs look for, gives the same profile,
//! notes included, both ways.

use super::{Reader, looks_like};
use crate::error::Result;
use crate::profile::Profile;
use crate::sources::line_reader::{LineFormat, read_lines};

/// The reader, its one-step path taken (counting the lines it took) or not (every line
/// then takes the full path).
struct Driven<'a> {
    reader: Reader,
    took: Option<&'a mut usize>,
}

impl LineFormat for Driven<'_> {
    fn line(&mut self, n: usize, text: &str) {
        self.reader.line(n, text);
    }
    fn end(self, cut: Option<usize>) -> Result<Profile> {
        self.reader.end(cut)
    }
    fn split(&mut self, n: usize, text: &str) -> Option<usize> {
        self.reader.split(n, text)
    }
    fn plain(&mut self, n: usize, text: &str) -> bool {
        let Some(took) = &mut self.took else {
            return false;
        };
        let plain = self.reader.plain(n, text);
        **took += usize::from(plain);
        plain
    }
}

fn as_json(p: &Result<Profile>) -> String {
    match p {
        Ok(p) => serde_json::to_string(p).unwrap_or_else(|e| format!("unserialisable: {e}")),
        Err(e) => format!("error: {e}"),
    }
}

/// Reads `text` both ways; the number of lines the one-step path took.
fn same_both_ways(name: &str, text: &str) -> usize {
    let mut took = 0;
    let driven = |took| Driven {
        reader: Reader::new(name),
        took,
    };
    let fast = read_lines(text.as_bytes(), name, driven(Some(&mut took)));
    let full = read_lines(text.as_bytes(), name, driven(None));
    assert_eq!(as_json(&fast), as_json(&full), "{name}");
    took
}

/// What the repairs look for, done to a row: the text after it, or the whole line.
const DAMAGE: [&str; 8] = [
    "{row} Total Samples:5, Total events handled time:1.00us.",
    "{row}----------------------------------",
    "| {row}",
    "{row}    VM-EXIT    Samples  Samples%     Time%    Min Time    Max Time   Avg time",
    "{row} Analyze events for all VMs, all VCPUs:",
    "{row}\u{0}",
    "{row} (",
    "{row}:",
];

#[test]
fn plain_rows_read_as_the_full_path_reads_them() {
    let root = virtlens_testkit::testdata("");
    let (mut inputs, mut took) = (0, 0);
    for path in virtlens_testkit::files_under(&root) {
        if std::fs::metadata(&path).is_ok_and(|m| m.len() >= 1 << 20) {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        if !looks_like(&text.as_bytes()[..text.len().min(64 * 1024)]) {
            continue;
        }
        let name = path.display().to_string();
        inputs += 1;
        took += same_both_ways(&name, &text);
        let lines: Vec<&str> = text.lines().collect();
        let rows = lines
            .iter()
            .enumerate()
            .filter(|(_, l)| l.contains('%') || l.contains("us "))
            .take(12);
        for (i, row) in rows {
            for (d, damage) in DAMAGE.iter().enumerate() {
                let mut damaged = lines.clone();
                let line = damage.replace("{row}", row);
                damaged[i] = &line;
                let joined;
                if d == 0 && i + 1 < lines.len() {
                    // And the row joined to the line under it (their newline lost).
                    joined = format!("{row}{}", lines[i + 1]);
                    damaged[i] = &joined;
                    damaged.remove(i + 1);
                }
                same_both_ways(
                    &format!("{name}, line {} damaged {d}", i + 1),
                    &damaged.join("\n"),
                );
            }
        }
    }
    assert!(
        inputs >= 20,
        "only {inputs} perf kvm stat inputs found under {}",
        root.display()
    );
    assert!(
        took >= 200,
        "the one-step path took only {took} lines of {inputs} inputs"
    );
}

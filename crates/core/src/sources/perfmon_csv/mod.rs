//! Source for PDH-CSV: what Windows perfmon, `typeperf`, `relog -f csv`, `logman` and
//! `Export-Counter` write, and what VMware's `esxtop -b` writes in the same layout.
//!
//! The header's first cell is `(PDH-CSV 4.0) (time-zone name)(bias)`, the other cells counter
//! paths (`\\HOST\Object(Instance)\Counter`); each following row is a sample time and one
//! quoted value per counter (`" "` when there is none, e.g. the first sample of a rate).
//! `typeperf`'s console output adds a blank line before the header and closing messages after
//! the rows; both are skipped. The result is a profile whose [`CounterLog`] has one series per
//! counter with its statistics over the log and per PAL time slice ([`SLICES`] equal slices of
//! the sampled time span, by row when the times cannot be read).
//!
//! Reading is two passes over the input (sample times first, so the slices are known, then the
//! values), so memory grows with the number of counters and rows, not with the number of cells.

mod cells;
pub(crate) mod path;

use std::io::{BufRead, Seek, SeekFrom};

use crate::error::{Error, Result};
use crate::profile::{
    CounterLog, CounterPath, CounterTool, LogHeader, Note, Origin, Profile, SLICES, Series, Slice,
    Stats,
};
pub(crate) use cells::{Value, value};

/// The name of this format (`--format perfmon-csv`, `origin.format`).
pub(crate) const FORMAT: &str = "perfmon-csv";

/// Objects only `esxtop -b` writes.
const ESXTOP_OBJECTS: [&str; 6] = [
    "Group Cpu",
    "Physical Cpu",
    "Physical Cpu Load",
    "Vcpu",
    "Group Memory",
    "Network Port",
];

/// Whether `head` starts (after blank lines and a byte-order mark) with a PDH-CSV header.
pub(crate) fn looks_like(head: &[u8]) -> bool {
    let text = String::from_utf8_lossy(head);
    text.lines()
        .map(|l| l.trim().trim_start_matches('\u{feff}'))
        .find(|l| !l.is_empty())
        .is_some_and(|l| l.trim_start_matches('"').starts_with("(PDH-CSV"))
}

/// Reads a PDH-CSV log; `path` names the input in notes and errors.
pub(crate) fn read<R: BufRead + Seek>(mut reader: R, path: &str) -> Result<Profile> {
    let io = |e: std::io::Error| Error::Io {
        path: path.to_string(),
        source: e,
    };
    let start = reader.stream_position().map_err(io)?;
    let scan = scan(&mut reader, path)?;
    reader.seek(SeekFrom::Start(start)).map_err(io)?;
    let mut profile = Profile::new(Origin::new(FORMAT, Some(path)));
    let log = collect(reader, path, &scan, &mut profile.warnings)?;
    profile.counters = Some(log);
    Ok(profile)
}

/// What the first pass learns: the header and the time of every sample row.
struct Scan {
    header_line: usize,
    time_zone: Option<String>,
    bias_minutes: Option<i32>,
    paths: Vec<Option<CounterPath>>,
    times: Vec<Option<f64>>,
    first: Option<String>,
    last: Option<String>,
}

fn csv_reader<R: BufRead>(reader: R) -> csv::Reader<R> {
    csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .from_reader(reader)
}

fn cell(record: &csv::ByteRecord, i: usize) -> String {
    String::from_utf8_lossy(record.get(i).unwrap_or_default()).into_owned()
}

fn line_of(record: &csv::ByteRecord) -> usize {
    record
        .position()
        .map_or(0, |p| usize::try_from(p.line()).unwrap_or(usize::MAX))
}

fn csv_error(path: &str, e: &csv::Error) -> Error {
    let line = e
        .position()
        .map_or(0, |p| usize::try_from(p.line()).unwrap_or(usize::MAX));
    Error::Parse {
        path: path.to_string(),
        line: line.max(1),
        message: format!("not readable as CSV (expected quoted cells separated by commas): {e}"),
    }
}

/// A sample row (after the header): its first cell is a time, or it has a cell per header
/// column and its first cell has a digit (a time in a form not understood). typeperf's closing
/// messages (`Exiting, please wait...`) are neither.
fn is_sample(record: &csv::ByteRecord, columns: usize) -> bool {
    let first = cell(record, 0);
    record.len() > 1
        && (cells::time(&first).is_some()
            || (record.len() == columns + 1 && first.bytes().any(|b| b.is_ascii_digit())))
}

fn scan<R: BufRead>(reader: R, path: &str) -> Result<Scan> {
    let mut csv = csv_reader(reader);
    let mut record = csv::ByteRecord::new();
    let mut scan: Option<Scan> = None;
    let mut first_line: Option<(usize, String)> = None;
    loop {
        match csv.read_byte_record(&mut record) {
            Ok(true) => {}
            Ok(false) => break,
            Err(e) => return Err(csv_error(path, &e)),
        }
        let Some(s) = scan.as_mut() else {
            let first = cell(&record, 0);
            match cells::banner(&first) {
                Some(b) => {
                    let paths = (1..record.len())
                        .map(|i| path::parse(&cell(&record, i)))
                        .collect();
                    scan = Some(Scan {
                        header_line: line_of(&record),
                        time_zone: b.time_zone,
                        bias_minutes: b.bias_minutes,
                        paths,
                        times: Vec::new(),
                        first: None,
                        last: None,
                    });
                }
                None => {
                    first_line.get_or_insert((line_of(&record), first.chars().take(80).collect()));
                }
            }
            continue;
        };
        if !is_sample(&record, s.paths.len()) {
            continue;
        }
        let stamp = cell(&record, 0);
        s.times.push(cells::time(&stamp));
        if s.first.is_none() {
            s.first = Some(stamp.trim().to_string());
        }
        s.last = Some(stamp.trim().to_string());
    }
    scan.ok_or_else(|| {
        Error::nothing_found(
            path,
            first_line,
            "expected a PDH-CSV header: `\"(PDH-CSV 4.0) (time zone)(bias)\",\"\\\\HOST\\Object(Instance)\\Counter\",…`",
        )
    })
}

/// Running statistics of one column.
struct Column {
    all: Stats,
    slices: [Stats; SLICES],
    blank: u64,
    unreadable: u64,
    first_unreadable: Option<(usize, String)>,
}

/// The slice each sample row falls in: by time when every row has one and time moves forward,
/// else by row.
fn slice_of(times: &[Option<f64>]) -> (Vec<usize>, Option<f64>, Option<f64>) {
    let n = times.len();
    let known: Option<Vec<f64>> = times.iter().copied().collect();
    if let Some(t) = known.filter(|t| t.windows(2).all(|w| w[1] >= w[0]))
        && let (Some(&t0), Some(&t1)) = (t.first(), t.last())
        && t1 > t0
    {
        let width = (t1 - t0) / SLICES as f64;
        let idx = t
            .iter()
            .map(|&x| (((x - t0) / width) as usize).min(SLICES - 1))
            .collect();
        return (idx, Some(t1 - t0), Some(width));
    }
    let idx = (0..n).map(|i| i * SLICES / n.max(1)).collect();
    (idx, None, None)
}

fn collect<R: BufRead>(
    reader: R,
    path: &str,
    scan: &Scan,
    notes: &mut Vec<Note>,
) -> Result<CounterLog> {
    let (slice, duration_s, slice_s) = slice_of(&scan.times);
    let mut columns: Vec<Column> = (0..scan.paths.len())
        .map(|_| Column {
            all: Stats::EMPTY,
            slices: [Stats::EMPTY; SLICES],
            blank: 0,
            unreadable: 0,
            first_unreadable: None,
        })
        .collect();
    let mut csv = csv_reader(reader);
    let mut record = csv::ByteRecord::new();
    let mut row = 0usize;
    let mut ragged: Vec<usize> = Vec::new();
    let mut untimed: Vec<usize> = Vec::new();
    let mut trailer: Vec<(usize, String)> = Vec::new();
    let mut header_seen = false;
    loop {
        match csv.read_byte_record(&mut record) {
            Ok(true) => {}
            Ok(false) => break,
            Err(e) => return Err(csv_error(path, &e)),
        }
        let line = line_of(&record);
        if !header_seen {
            header_seen = cells::banner(&cell(&record, 0)).is_some();
            continue;
        }
        if !is_sample(&record, columns.len()) {
            trailer.push((line, cell(&record, 0).trim().chars().take(60).collect()));
            continue;
        }
        let Some(&s) = slice.get(row) else { break };
        if scan.times.get(row).copied().flatten().is_none() {
            untimed.push(line);
        }
        row += 1;
        if record.len() != columns.len() + 1 {
            ragged.push(line);
        }
        for (i, col) in columns.iter_mut().enumerate() {
            let raw = record.get(i + 1).unwrap_or_default();
            match value(&String::from_utf8_lossy(raw)) {
                Value::Number(v) => {
                    col.all.add(v);
                    col.slices[s].add(v);
                }
                Value::Blank => col.blank += 1,
                Value::Unreadable => {
                    col.unreadable += 1;
                    col.first_unreadable.get_or_insert_with(|| {
                        (
                            line,
                            String::from_utf8_lossy(raw).chars().take(40).collect(),
                        )
                    });
                }
            }
        }
    }
    let mut series = Vec::new();
    let mut no_path = Vec::new();
    for (i, (col, p)) in columns.into_iter().zip(&scan.paths).enumerate() {
        let Some(p) = p else {
            no_path.push(i + 2);
            continue;
        };
        if let Some((line, text)) = &col.first_unreadable {
            notes.push(Note {
                line: Some(*line),
                message: format!(
                    "{} of `{}` is not a number (`{text}`); {} such sample(s) left out",
                    if col.unreadable == 1 {
                        "the sample"
                    } else {
                        "a sample"
                    },
                    p.display(),
                    col.unreadable
                ),
            });
        }
        let slices = if slice_s.is_some() || scan.times.len() >= SLICES {
            col.slices
                .iter()
                .enumerate()
                .filter(|(_, s)| s.n > 0)
                .map(|(k, s)| Slice {
                    start_s: slice_s.map_or(k as f64, |w| k as f64 * w),
                    stats: *s,
                })
                .collect()
        } else {
            Vec::new()
        };
        series.push(Series {
            path: p.clone(),
            column: i + 2,
            stats: col.all.known(),
            blank: col.blank,
            unreadable: col.unreadable,
            slices,
        });
    }
    note_rows(notes, scan, &ragged, &untimed, &trailer, &no_path, &series);
    let tool = if series.iter().any(|s| {
        ESXTOP_OBJECTS
            .iter()
            .any(|o| s.path.object.eq_ignore_ascii_case(o))
    }) {
        CounterTool::Esxtop
    } else {
        CounterTool::Perfmon
    };
    Ok(CounterLog {
        header: LogHeader {
            tool,
            time_zone: scan.time_zone.clone(),
            bias_minutes: scan.bias_minutes,
            first: scan.first.clone(),
            last: scan.last.clone(),
            duration_s,
            samples: row as u64,
            interval_s: median_interval(&scan.times),
            slice_s,
        },
        series,
    })
}

fn median_interval(times: &[Option<f64>]) -> Option<f64> {
    let t: Vec<f64> = times.iter().copied().collect::<Option<Vec<f64>>>()?;
    let mut d: Vec<f64> = t
        .windows(2)
        .map(|w| w[1] - w[0])
        .filter(|d| *d > 0.0)
        .collect();
    d.sort_by(f64::total_cmp);
    d.get(d.len() / 2).copied()
}

fn note_rows(
    notes: &mut Vec<Note>,
    scan: &Scan,
    ragged: &[usize],
    untimed: &[usize],
    trailer: &[(usize, String)],
    no_path: &[usize],
    series: &[Series],
) {
    let mut note = |line: Option<usize>, message: String| notes.push(Note { line, message });
    if scan.times.is_empty() {
        note(
            Some(scan.header_line),
            "the header has no sample rows under it".into(),
        );
    }
    if let Some(&first) = ragged.first() {
        note(
            Some(first),
            format!(
                "{} row(s) do not have one value per header column ({}); missing cells count as blank",
                ragged.len(),
                scan.paths.len() + 1
            ),
        );
    }
    if let Some(&first) = untimed.first() {
        note(
            Some(first),
            format!(
                "{} row(s) have a sample time that is not `MM/DD/YYYY HH:MM:SS.mmm`; slices are cut by row",
                untimed.len()
            ),
        );
    }
    for (line, text) in trailer.iter().take(3) {
        note(Some(*line), format!("not a sample row, skipped: `{text}`"));
    }
    if !no_path.is_empty() {
        note(
            Some(scan.header_line),
            format!(
                "{} header cell(s) are not counter paths (`\\\\HOST\\Object(Instance)\\Counter`), first in column {}; their values are left out",
                no_path.len(),
                no_path[0]
            ),
        );
    }
    let first_blank = series.iter().filter(|s| s.blank > 0).count();
    if first_blank > 0 && scan.times.len() > 1 {
        note(
            None,
            format!(
                "{first_blank} counter(s) have blank samples (a rate's first sample has no value, or the instance was gone); blanks are not counted as zero"
            ),
        );
    }
    if scan.bias_minutes.is_none() {
        note(
            Some(scan.header_line),
            "the header gives no time-zone bias; sample times are taken as written".into(),
        );
    }
}

//! File sources: each input format is one module that reads a file (streaming) into a
//! [`Profile`]. This module picks the format (auto-detected from the first bytes, or forced
//! with `--format`) and opens files and standard input.

pub mod bcc_kvmexit;
pub mod capture;
pub mod kvm_stat;
pub mod lines;
pub mod numbers;
pub mod perf_data;
pub mod perf_kvm_stat;
pub mod perf_prof;
pub mod trace_text;

use std::fs::File;
use std::io::{BufRead, BufReader, Cursor, Read, Seek};
use std::path::Path;

use crate::error::{Error, Result};
use crate::profile::Profile;

/// The input formats virtlens reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// `perf kvm stat report` / `live` text.
    PerfKvmStat,
    /// perf.data from `perf record -e 'kvm:*'` or `perf kvm stat record`.
    PerfData,
    /// kvm_stat screens and logs.
    KvmStat,
    /// bcc's kvmexit.
    BccKvmexit,
    /// perf-prof kvm-exit tables.
    PerfProf,
    /// Event lines from perf script, trace-cmd report, ftrace, perf top.
    TraceText,
    /// A `virtlens record` capture (Parquet with the profile in its metadata).
    Capture,
}

impl Format {
    /// Every format, in detection order: the most specific signatures first.
    pub const ALL: [Format; 7] = [
        Format::Capture,
        Format::PerfData,
        Format::PerfKvmStat,
        Format::KvmStat,
        Format::BccKvmexit,
        Format::PerfProf,
        Format::TraceText,
    ];

    /// The format's name (`--format NAME`).
    pub fn name(self) -> &'static str {
        match self {
            Format::PerfKvmStat => perf_kvm_stat::FORMAT,
            Format::PerfData => perf_data::FORMAT,
            Format::KvmStat => kvm_stat::FORMAT,
            Format::BccKvmexit => bcc_kvmexit::FORMAT,
            Format::PerfProf => perf_prof::FORMAT,
            Format::TraceText => trace_text::FORMAT,
            Format::Capture => capture::FORMAT,
        }
    }

    /// The format named `name`.
    pub fn from_name(name: &str) -> Option<Format> {
        Self::ALL.into_iter().find(|f| f.name() == name)
    }

    fn looks_like(self, head: &[u8]) -> bool {
        match self {
            Format::PerfKvmStat => perf_kvm_stat::looks_like(head),
            Format::PerfData => perf_data::looks_like(head),
            Format::KvmStat => kvm_stat::looks_like(head),
            Format::BccKvmexit => bcc_kvmexit::looks_like(head),
            Format::PerfProf => perf_prof::looks_like(head),
            Format::TraceText => trace_text::looks_like(head),
            Format::Capture => capture::looks_like(head),
        }
    }

    fn read<R: BufRead + Seek>(self, reader: R, path: &str) -> Result<Profile> {
        match self {
            Format::PerfKvmStat => perf_kvm_stat::read(reader, path),
            Format::PerfData => perf_data::read(reader, path),
            Format::KvmStat => kvm_stat::read(reader, path),
            Format::BccKvmexit => bcc_kvmexit::read(reader, path),
            Format::PerfProf => perf_prof::read(reader, path),
            Format::TraceText => trace_text::read(reader, path),
            Format::Capture => capture::read(reader, path),
        }
    }
}

/// How many bytes of an input are looked at to detect its format.
pub const DETECT_BYTES: usize = 64 * 1024;

/// The format of an input that starts with `head`.
pub fn detect(head: &[u8]) -> Option<Format> {
    Format::ALL.into_iter().find(|f| f.looks_like(head))
}

/// Reads `path` (`-` for standard input) as `format`, or as the detected format.
pub fn read_path(path: &Path, format: Option<Format>) -> Result<Profile> {
    let name = path.display().to_string();
    if name == "-" {
        let mut bytes = Vec::new();
        std::io::stdin()
            .read_to_end(&mut bytes)
            .map_err(|e| Error::io(path, e))?;
        return read_bytes(&bytes, "<stdin>", format);
    }
    let file = File::open(path).map_err(|e| Error::io(path, e))?;
    let mut reader = BufReader::with_capacity(256 * 1024, file);
    let format = match format {
        Some(f) => f,
        None => {
            let head = fill_head(&mut reader).map_err(|e| Error::io(path, e))?;
            detect(head).ok_or_else(|| unknown_format(&name))?
        }
    };
    format.read(reader, &name)
}

/// Reads an in-memory input (tests, fuzzing, standard input).
pub fn read_bytes(bytes: &[u8], name: &str, format: Option<Format>) -> Result<Profile> {
    let format = match format {
        Some(f) => f,
        None => {
            detect(&bytes[..bytes.len().min(DETECT_BYTES)]).ok_or_else(|| unknown_format(name))?
        }
    };
    format.read(Cursor::new(bytes), name)
}

/// The first bytes of `reader`, without consuming them.
fn fill_head<R: Read>(reader: &mut BufReader<R>) -> std::io::Result<&[u8]> {
    let buf = reader.fill_buf()?;
    Ok(&buf[..buf.len().min(DETECT_BYTES)])
}

fn unknown_format(name: &str) -> Error {
    let known: Vec<&str> = Format::ALL.iter().map(|f| f.name()).collect();
    Error::Input {
        path: name.to_string(),
        message: format!(
            "not a format virtlens reads (looked for: {}); use --format to force one",
            known.join(", ")
        ),
    }
}

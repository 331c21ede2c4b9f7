//! File sources: each input format is one module that reads a file (streaming) into a
//! [`Profile`]. This module picks the format (auto-detected from the first bytes, or forced
//! with `--format`) and opens files and standard input.

pub mod lines;
pub mod numbers;
pub mod perf_kvm_stat;

use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;

use crate::error::{Error, Result};
use crate::profile::Profile;

/// The input formats virtlens reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// `perf kvm stat report` / `live` text.
    PerfKvmStat,
}

impl Format {
    /// Every format, in detection order.
    pub const ALL: [Format; 1] = [Format::PerfKvmStat];

    /// The format's name (`--format NAME`).
    pub fn name(self) -> &'static str {
        match self {
            Format::PerfKvmStat => perf_kvm_stat::FORMAT,
        }
    }

    /// The format named `name`.
    pub fn from_name(name: &str) -> Option<Format> {
        Self::ALL.into_iter().find(|f| f.name() == name)
    }

    fn read(self, reader: impl BufRead, path: &str) -> Result<Profile> {
        match self {
            Format::PerfKvmStat => perf_kvm_stat::read(reader, path),
        }
    }
}

/// How many bytes of an input are looked at to detect its format.
const DETECT_BYTES: usize = 64 * 1024;

/// The format of an input that starts with `head`.
pub fn detect(head: &[u8]) -> Option<Format> {
    let text = String::from_utf8_lossy(head);
    Format::ALL.into_iter().find(|f| match f {
        Format::PerfKvmStat => perf_kvm_stat::looks_like(&text),
    })
}

/// Reads `path` (`-` for standard input) as `format`, or as the detected format.
pub fn read_path(path: &Path, format: Option<Format>) -> Result<Profile> {
    let name = path.display().to_string();
    if name == "-" {
        let mut text = Vec::new();
        std::io::stdin()
            .read_to_end(&mut text)
            .map_err(|e| Error::io(path, e))?;
        return read_bytes(&text, "<stdin>", format);
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
    format.read(bytes, name)
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

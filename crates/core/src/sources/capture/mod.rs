//! Captures written by `virtlens record`: one Parquet file holding the raw events (one row
//! per tracepoint hit, one column per field; DuckDB, pandas or Spark read it directly) and,
//! in the file's key/value metadata, the Profile built while recording (`virtlens.profile`,
//! the profile JSON) and what the capture was (`virtlens.capture`, see [`CaptureMeta`]).
//!
//! Reading a capture back is reading its footer ([`footer`]) and that JSON: the raw events
//! are for other tools. The decoding shared with the live recorder (payloads into events
//! into a profile, field values for the columns) is in [`decoder`] and [`fields`].

pub(crate) mod decoder;
pub(crate) mod fields;
pub(crate) mod footer;

use std::collections::BTreeMap;
use std::io::{BufRead, Read, Seek, SeekFrom};

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::profile::{Note, Profile};

/// The name of this format (`--format capture`, `origin.format`).
pub const FORMAT: &str = "capture";
/// The key of the profile JSON in the Parquet key/value metadata.
pub const PROFILE_KEY: &str = "virtlens.profile";
/// The key of the [`CaptureMeta`] JSON.
pub const CAPTURE_KEY: &str = "virtlens.capture";
/// The version of the capture file layout (columns and metadata).
pub const SCHEMA: &str = "virtlens.capture/1";

/// What a capture was: when, how, and what was lost.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CaptureMeta {
    pub schema: String,
    /// The trace clock of `ts_ns` (`mono`: CLOCK_MONOTONIC in ns).
    pub clock: String,
    /// Add to `ts_ns` to get Unix time in ns (measured when the capture started).
    pub realtime_offset_ns: i64,
    /// First and last event time (`ts_ns`) and the capture's length.
    pub start_ns: Option<u64>,
    pub end_ns: Option<u64>,
    pub duration_ns: u64,
    /// Events written as rows, and events the kernel lost (ring buffer full).
    pub events: u64,
    pub lost_events: u64,
    /// Lost events per CPU, where any were lost.
    #[serde(default)]
    pub lost_by_cpu: BTreeMap<u32, u64>,
    /// The tracepoints that were enabled (`system:name`).
    pub enabled: Vec<String>,
    /// The kernel-side filter, when one was set (`common_pid == …`).
    pub filter: Option<String>,
    pub host: Option<String>,
    pub kernel: Option<String>,
    pub backend: Option<String>,
}

/// Whether `head` (the first bytes of an input) looks like this format: any Parquet file;
/// one without a virtlens profile is refused with a message saying so.
pub(crate) fn looks_like(head: &[u8]) -> bool {
    head.starts_with(footer::MAGIC)
}

/// Reads the profile stored in a capture; `path` names it in errors.
pub(crate) fn read<R: BufRead + Seek>(mut reader: R, path: &str) -> Result<Profile> {
    let fail = |message: String| Error::Input {
        path: path.to_string(),
        message,
    };
    let io = |e: std::io::Error| Error::Io {
        path: path.to_string(),
        source: e,
    };
    let len = reader.seek(SeekFrom::End(0)).map_err(io)?;
    let mut tail = Vec::with_capacity(8);
    if len >= 8 {
        reader.seek(SeekFrom::End(-8)).map_err(io)?;
        (&mut reader).take(8).read_to_end(&mut tail).map_err(io)?;
    }
    let (start, footer_len) = footer::locate(&tail, len).map_err(fail)?;
    reader.seek(SeekFrom::Start(start)).map_err(io)?;
    let mut bytes = Vec::new();
    (&mut reader)
        .take(footer_len)
        .read_to_end(&mut bytes)
        .map_err(io)?;
    let f = footer::parse(&bytes, start).map_err(fail)?;
    let json = f.get(PROFILE_KEY).ok_or_else(|| {
        fail(format!(
            "a Parquet file without a virtlens profile (no `{PROFILE_KEY}` key in its \
             metadata): only captures written by `virtlens record` can be read"
        ))
    })?;
    let mut profile: Profile = serde_json::from_str(json).map_err(|e| {
        fail(format!(
            "the `{PROFILE_KEY}` metadata is not a virtlens profile: {e}"
        ))
    })?;
    profile.origin.format = FORMAT.to_string();
    profile.origin.path = Some(path.to_string());
    profile.origin.reader = crate::VERSION.to_string();
    if let Some(meta) = f
        .get(CAPTURE_KEY)
        .and_then(|m| serde_json::from_str::<CaptureMeta>(m).ok())
        && let Some(rows) = f.num_rows
        && u64::try_from(rows).ok() != Some(meta.events)
    {
        profile.warnings.push(Note {
            line: None,
            message: format!(
                "the file holds {rows} raw events but its metadata says {}",
                meta.events
            ),
        });
    }
    Ok(profile)
}

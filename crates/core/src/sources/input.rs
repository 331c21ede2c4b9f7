//! Opening inputs: regular files, standard input (`-`) and pipes or devices given as paths
//! (`<(…)`, `/dev/stdin`).
//!
//! - Text formats stream from all of them: standard input is never read whole, so `report -`
//!   needs the same memory as `report FILE`. Detection looks at the first [`DETECT_BYTES`]
//!   (read in full even from a pipe that delivers them in pieces), which are then replayed in
//!   front of the rest of the stream.
//! - perf.data and captures must seek (their headers point at sections further on), so when
//!   one arrives through a pipe it is first copied to a temporary file that is unlinked as soon
//!   as it is created (nothing is left behind, even after a crash) and read from there.
//! - Inputs that are read whole (configurations, mtree dumps) go through [`read_capped`], which
//!   stops at a cap and says so instead of reading `/dev/zero` until memory runs out.
//! - A compressed (gzip, zstd, xz) or UTF-16 input is unwrapped as a stream first
//!   ([`wrapped`]) and then read as above; an empty file says it is empty.

use std::fs::File;
use std::io::{BufRead, BufReader, Cursor, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

use super::{DETECT_BYTES, Format, refusal, wrapped};
use crate::error::{Error, Result};
use crate::profile::Profile;

/// The most a configuration (libvirt XML, QEMU command line, Proxmox config) or an mtree dump
/// may weigh. The largest real ones are tens of KiB; anything near this is not one.
pub const CONFIG_CAP: u64 = 16 << 20;

/// The most of a pipe that is copied to a temporary file for a format that must seek (perf.data,
/// Parquet, perfmon CSV): far above real captures of minutes (hundreds of MiB), far below what
/// fills a disk or a tmpfs /tmp (repro C2: 6.6 GB in 10 s from /dev/zero).
pub(crate) const SPOOL_CAP: u64 = 2 << 30;

/// The buffer between the input and the line readers.
const BUFFER: usize = 256 * 1024;

/// How an input is named in notes and errors.
pub fn display_name(path: &Path) -> String {
    if is_stdin(path) {
        "<stdin>".to_string()
    } else {
        path.display().to_string()
    }
}

fn is_stdin(path: &Path) -> bool {
    path.as_os_str() == "-"
}

/// Reads `path` (`-` for standard input) as `format`, or as the detected format. A compressed
/// or UTF-16 input is unwrapped first ([`wrapped`]).
pub(crate) fn read_path(path: &Path, format: Option<Format>) -> Result<Profile> {
    let name = display_name(path);
    let io = |e| Error::io(path, e);
    if is_stdin(path) {
        return read_stream(std::io::stdin().lock(), path, &name, format, 0);
    }
    let file = File::open(path).map_err(io)?;
    if !file.metadata().map_err(io)?.is_file() {
        return read_stream(file, path, &name, format, 0);
    }
    let mut reader = BufReader::with_capacity(BUFFER, file);
    let head = reader.fill_buf().map_err(io)?;
    if head.is_empty() {
        return Err(empty(&name));
    }
    if wrapped::wrapping(head).is_some() {
        return read_stream(reader, path, &name, format, 0);
    }
    let (format, document) = refusal::choose(format, &head[..head.len().min(DETECT_BYTES)], &name)?;
    #[cfg(unix)]
    if format == Format::TraceText {
        // A trace file is read on every core (positioned reads: the buffer's place is moot).
        let read = super::trace_text::read_file(reader.get_ref(), &name).map(super::checks::settle);
        return refused(read, &name, format, document);
    }
    if format == Format::PerfKvmStat
        && let Some(mapped) = super::mapped::Mapped::new(reader.get_ref())
    {
        // A transcript is cut at its intervals and read on every core.
        let read = super::perf_kvm_stat::read_mapped(&mapped, &name).map(super::checks::settle);
        return refused(read, &name, format, document);
    }
    if format == Format::PerfData
        && let Some(mapped) = super::mapped::Mapped::new(reader.get_ref())
    {
        let read = super::perf_data::read_mapped(&mapped, &name).map(super::checks::settle);
        return refused(read, &name, format, document);
    }
    refused(format.read(reader, &name), &name, format, document)
}

/// Reads an in-memory input the way [`read_path`] reads a regular file holding the same bytes.
pub(crate) fn read_bytes(bytes: &[u8], name: &str, format: Option<Format>) -> Result<Profile> {
    if bytes.is_empty() {
        return Err(empty(name));
    }
    if wrapped::wrapping(bytes).is_some() {
        return read_stream(bytes, Path::new(name), name, format, 0);
    }
    let (format, document) =
        refusal::choose(format, &bytes[..bytes.len().min(DETECT_BYTES)], name)?;
    refused(
        format.read(Cursor::new(bytes), name),
        name,
        format,
        document,
    )
}

/// `read`, or, when it failed on a document that only quotes `format`, the error saying so.
fn refused(read: Result<Profile>, name: &str, format: Format, document: bool) -> Result<Profile> {
    read.map_err(|e| {
        if document {
            refusal::quoted_format(name, format, e)
        } else {
            e
        }
    })
}

/// Wrappings inside wrappings an input may have (UTF-16 in gzip is two).
const MAX_WRAPPINGS: usize = 3;

/// Reads a stream that cannot seek (standard input, a pipe, a device, an unwrapped input);
/// `depth` wrappings were taken off it already.
fn read_stream<R: Read>(
    mut source: R,
    path: &Path,
    name: &str,
    format: Option<Format>,
    depth: usize,
) -> Result<Profile> {
    let mut head = Vec::with_capacity(DETECT_BYTES);
    (&mut source)
        .take(DETECT_BYTES as u64)
        .read_to_end(&mut head)
        .map_err(|e| Error::io(path, e))?;
    if head.is_empty() {
        return Err(if depth == 0 {
            empty(name)
        } else {
            Error::Input {
                path: name.to_string(),
                message: "empty once unwrapped: nothing to read".into(),
            }
        });
    }
    if depth < MAX_WRAPPINGS
        && let Some(w) = wrapped::wrapping(&head)
    {
        let inner =
            wrapped::unwrap(w, Cursor::new(head).chain(source)).map_err(|e| Error::Input {
                path: name.to_string(),
                message: format!("not readable as {} ({e})", w.name()),
            })?;
        let inner = Unwrapped {
            inner,
            what: w.name(),
        };
        return read_stream(inner, path, name, format, depth + 1);
    }
    let (format, document) = refusal::choose(format, &head, name)?;
    let stream = Cursor::new(head).chain(source);
    let read = if format.needs_seek() {
        spool(stream, path, format)
            .and_then(|file| format.read(BufReader::with_capacity(BUFFER, file), name))
    } else {
        format.read_text(BufReader::with_capacity(BUFFER, stream), name)
    };
    refused(read, name, format, document)
}

/// The error for an input with no bytes at all.
fn empty(name: &str) -> Error {
    Error::Input {
        path: name.to_string(),
        message: "the file is empty: nothing to read (was the capture or the copy cut short?)"
            .into(),
    }
}

/// An unwrapped stream, whose read errors say that the wrapping broke (a gzip cut short
/// reads as an error where it ends, never as a shorter input).
struct Unwrapped<R> {
    inner: R,
    what: &'static str,
}

impl<R: Read> Read for Unwrapped<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.inner.read(buf).map_err(|e| {
            std::io::Error::new(
                e.kind(),
                format!("the {} data ends or breaks here ({e})", self.what),
            )
        })
    }
}

/// Copies `stream` into an unlinked temporary file, rewound, for a format that must seek.
fn spool<R: Read>(mut stream: R, path: &Path, format: Format) -> Result<File> {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let dir = std::env::temp_dir();
    let tmp: PathBuf = dir.join(format!(
        "virtlens-{}-{}.spool",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    let fail = |e: std::io::Error| Error::Input {
        path: display_name(path),
        message: format!(
            "a {} must be read with seeks, so virtlens copies one arriving through a pipe to a \
             temporary file first, and that failed ({}: {e}); save it to a file and give its path",
            format.name(),
            tmp.display()
        ),
    };
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .open(&tmp)
        .map_err(fail)?;
    // Unlinked at once: the open file lives on until it is dropped, and nothing is left behind.
    std::fs::remove_file(&tmp).map_err(fail)?;
    let copied = std::io::copy(&mut stream.by_ref().take(SPOOL_CAP + 1), &mut file)
        .map_err(|e| Error::io(path, e))?;
    if copied > SPOOL_CAP {
        return Err(Error::Input {
            path: display_name(path),
            message: format!(
                "a {} arriving through a pipe is copied to a temporary file to be read, and this \
                 one is over {}; save it to a file and give its path",
                format.name(),
                size(SPOOL_CAP)
            ),
        });
    }
    file.flush().map_err(fail)?;
    file.seek(SeekFrom::Start(0)).map_err(fail)?;
    Ok(file)
}

/// The whole of `path` (`-` for standard input), refused with a clear error when it holds more
/// than `cap` bytes; `what` says what the input should be ("configuration", "mtree dump").
pub fn read_capped(path: &Path, cap: u64, what: &str) -> Result<Vec<u8>> {
    let mut bytes = Vec::new();
    let read = if is_stdin(path) {
        std::io::stdin()
            .lock()
            .take(cap.saturating_add(1))
            .read_to_end(&mut bytes)
    } else {
        File::open(path).and_then(|f| f.take(cap.saturating_add(1)).read_to_end(&mut bytes))
    };
    read.map_err(|e| Error::io(path, e))?;
    if bytes.len() as u64 > cap {
        return Err(Error::Input {
            path: display_name(path),
            message: format!(
                "more than {}: larger than any {what}, so not read further (is it the right \
                 file?)",
                size(cap)
            ),
        });
    }
    Ok(bytes)
}

/// `16 MiB`, `4 KiB`, `12 bytes`.
fn size(bytes: u64) -> String {
    match bytes {
        b if b >= 1 << 20 && b % (1 << 20) == 0 => format!("{} MiB", b >> 20),
        b if b >= 1 << 10 && b % (1 << 10) == 0 => format!("{} KiB", b >> 10),
        b => format!("{b} bytes"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capped_reads_stop_at_the_cap() {
        let dir = std::env::temp_dir().join(format!("virtlens-cap-test-{}", std::process::id()));
        let _ = std::fs::create_dir_all(&dir);
        let small = dir.join("small.xml");
        let _ = std::fs::write(&small, b"<domain/>");
        assert_eq!(
            read_capped(&small, 16, "configuration").ok(),
            Some(b"<domain/>".to_vec())
        );
        let e = read_capped(&small, 4, "configuration")
            .err()
            .map(|e| e.to_string());
        assert!(e.is_some_and(|e| e.contains("larger than any configuration")));
        let e = read_capped(Path::new("/dev/zero"), CONFIG_CAP, "configuration");
        assert!(e.is_err());
        let _ = std::fs::remove_dir_all(&dir);
    }
}

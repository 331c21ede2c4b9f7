//! Source for perf.data files: `perf record -e 'kvm:*'` and `perf kvm stat record`.
//!
//! The container (header, attributes, feature sections) is walked with bounds checks in
//! [`header`]; the tracepoint formats come from the file's own `HEADER_TRACING_DATA`
//! ([`tracing_data`], [`crate::decode::trace_format`]), so payloads are decoded from the
//! recording kernel's layout ([`kvm`]). Records are read where the file is mapped (its pages
//! touched a few MiB ahead on another core, [`crate::sources::touch_ahead`]), or through one
//! buffer when it is not ([`records`]); they are put back in time order round by round
//! ([`order`]) and go to the [`ProfileBuilder`] ([`stream`]), which pairs exits with entries
//! per thread. The CPU vendor (CPUID header) picks the exit-reason ISA unless an event
//! carries its own `isa`; the kernel release and the VMM process names (COMM records, else
//! the kernel's saved cmdlines) go into the origin.
//!
//! Damage never panics: a damaged header or lost tracing data is an error naming the byte
//! and what was expected; damage among the records ends reading there, and what was read
//! before is returned with a warning.

pub(crate) mod bytes;
mod header;
pub(crate) mod kvm;
mod order;
mod records;
mod setup;
mod sink;
mod stream;
#[cfg(test)]
mod synth;
mod tracing_data;
pub(crate) mod userspace_exit;

use std::io::{BufRead, Read as _, Seek, SeekFrom};
use std::sync::mpsc;

use crate::decode::Isa;
use crate::error::{Error, Result};
use crate::events::ProfileBuilder;
use crate::profile::{Note, Origin, Profile};
use crate::sources::mapped::Mapped;
use crate::sources::touch_ahead::TouchAhead;
use header::{HEADER_SIZE, Meta};
use records::Records;
use setup::Setup;
use sink::{Outbox, Sink};
use stream::Stream;

/// The name of this format (`--format perf-data`, `origin.format`).
pub(crate) const FORMAT: &str = "perf-data";

/// Whether `head` (the first bytes of an input) looks like this format.
pub(crate) fn looks_like(head: &[u8]) -> bool {
    header::is_magic(head)
}

/// Reads the whole input into a profile; `path` names it in notes and errors.
pub(crate) fn read<R: BufRead + Seek>(reader: R, path: &str) -> Result<Profile> {
    read_from(reader, None, path)
}

/// [`read`] for a file that is mapped: its records are read where the map has them.
pub(crate) fn read_mapped(mapped: &Mapped, path: &str) -> Result<Profile> {
    read_from(std::io::Cursor::new(mapped.bytes()), Some(mapped), path)
}

/// [`read`], with the records from `mapped` when the file is mapped.
fn read_from<R: BufRead + Seek>(
    mut reader: R,
    mapped: Option<&Mapped>,
    path: &str,
) -> Result<Profile> {
    let fail = |message: String| Error::Input {
        path: path.to_string(),
        message,
    };
    let io = |e: std::io::Error| Error::Io {
        path: path.to_string(),
        source: e,
    };
    let file_len = reader.seek(SeekFrom::End(0)).map_err(io)?;
    reader.seek(SeekFrom::Start(0)).map_err(io)?;
    let mut head = Vec::with_capacity(HEADER_SIZE);
    (&mut reader)
        .take(HEADER_SIZE as u64)
        .read_to_end(&mut head)
        .map_err(io)?;
    let header = header::parse_header(&head, file_len).map_err(fail)?;
    let meta = header::read_meta(&mut reader, header, file_len).map_err(fail)?;
    let tracing = match &meta.tracing {
        Some(bytes) => Some(tracing_data::parse(bytes, meta.tracing_at).map_err(|e| {
            fail(format!(
                "{e} (in the tracing data, which holds the tracepoint formats)"
            ))
        })?),
        None => None,
    };
    if tracing.is_none() {
        let why = if meta.warnings.is_empty() {
            "byte 72: the header's feature bitmap does not list it".to_string()
        } else {
            meta.warnings.join("; ")
        };
        return Err(fail(format!(
            "the file has no tracing data (the tracepoint formats that perf stores after the \
             records), so its events cannot be decoded: {why}"
        )));
    }
    let setup = Setup::new(meta.header.endian, &meta.attrs, tracing.as_ref()).map_err(|e| {
        fail(format!(
            "byte {}: {e} (their sample_type in the attribute section)",
            meta.header.attrs.offset
        ))
    })?;

    let builder = ProfileBuilder::new(origin(path, &meta));
    reader
        .seek(SeekFrom::Start(meta.header.data.offset))
        .map_err(io)?;
    let records = Records::new(
        reader,
        mapped,
        meta.header.endian,
        meta.header.data.offset,
        meta.data_end,
    );
    let ahead = mapped.map(|m| {
        let (from, to) = (meta.header.data.offset, meta.data_end);
        TouchAhead::new(m.bytes(), from as usize, to as usize)
    });
    let records = match &ahead {
        Some(ahead) => records.touched_ahead_by(ahead),
        None => records,
    };
    // The record loop here; the profile builder on a thread of its own (see `sink`), which
    // also touches a mapped file's pages ahead of the record loop between batches.
    let (read, built) = std::thread::scope(|s| {
        let (tx, rx) = mpsc::sync_channel(sink::IN_FLIGHT);
        let (spent, spares) = mpsc::channel();
        let sink = Sink::new(&setup, builder);
        let toucher = ahead.as_ref().map(TouchAhead::toucher);
        let built = s.spawn(move || sink.run(rx, spent, toucher));
        let outbox = Outbox::new(tx, spares);
        let read = read_records(records, Stream::new(&setup, outbox));
        (read, built.join())
    });
    let Ok((builder, pids)) = built else {
        return Err(fail(
            "the thread that builds the profile stopped early".into(),
        ));
    };
    let Read {
        damage,
        samples,
        compressed,
        notes: stream_notes,
        comms,
    } = read;
    if let Some(damage) = &damage
        && samples == 0
    {
        return Err(fail(damage.clone()));
    }
    if samples == 0 && compressed > 0 {
        return Err(fail(
            "the records are zstd-compressed (perf record -z), which virtlens does not read; \
             record without -z"
                .into(),
        ));
    }
    let mut profile = builder.finish();
    for pid in pids {
        let name = comms
            .by_pid
            .get(&pid)
            .and_then(|&id| comms.get(id))
            .map(str::to_string)
            .or_else(|| {
                let t = tracing.as_ref()?;
                t.cmdlines
                    .iter()
                    .find(|(p, _)| *p == pid)
                    .map(|(_, c)| c.clone())
            });
        if let Some(name) = name {
            profile.origin.vm_names.insert(pid, name);
        }
    }
    let mut notes: Vec<String> = meta.warnings;
    notes.extend(setup.notes);
    if let Some(t) = &tracing
        && !t.bad_formats.is_empty()
    {
        notes.push(format!(
            "{} tracepoint formats could not be parsed (first: {})",
            t.bad_formats.len(),
            t.bad_formats[0]
        ));
    }
    notes.extend(stream_notes);
    if let Some(damage) = damage {
        notes.push(format!(
            "{damage}: reading stopped there; the profile holds the {samples} samples before it"
        ));
    }
    if samples == 0 {
        notes.push("the file holds no samples".into());
    }
    profile
        .warnings
        .extend(notes.into_iter().map(|message| Note {
            line: None,
            message,
        }));
    Ok(profile)
}

/// What the record loop found.
struct Read {
    /// Why reading stopped before the end of the records, if it did.
    damage: Option<String>,
    samples: u64,
    compressed: u64,
    notes: Vec<String>,
    comms: stream::Comms,
}

/// Feeds every record to `stream` until the end or the first damage, then hangs up on the
/// profile builder's thread.
fn read_records<R: BufRead>(mut records: Records<'_, R>, mut stream: Stream<'_>) -> Read {
    let damage = loop {
        match records.next() {
            Ok(Some(r)) => stream.record(&r),
            Ok(None) => break None,
            Err(e) => break Some(e),
        }
    };
    let (samples, compressed) = (stream.samples, stream.compressed());
    let (notes, comms) = stream.finish();
    Read {
        damage,
        samples,
        compressed,
        notes,
        comms,
    }
}

/// The origin: vendor and ISA from the CPUID header, the CPU's name (and whether software
/// emulated it) from the CPU description, kernel from the OS release header.
fn origin(path: &str, meta: &Meta) -> Origin {
    let mut o = Origin::new(FORMAT, Some(path));
    if let Some(cpuid) = &meta.cpuid {
        let vendor = cpuid.split(',').next().unwrap_or_default().trim();
        if !vendor.is_empty() {
            o.vendor = Some(vendor.to_string());
        }
        o.isa = vendor_isa(vendor);
    }
    o.kernel = meta.osrelease.clone();
    o.cpu = meta.cpudesc.clone();
    o.cpu_emulator = crate::facts::cpu_emulator(o.cpu.as_deref(), None);
    o
}

/// The exit-reason ISA of a CPU vendor; none for vendors KVM's tables do not cover.
fn vendor_isa(vendor: &str) -> Option<Isa> {
    match vendor {
        "GenuineIntel" => Some(Isa::Vmx),
        "AuthenticAMD" | "HygonGenuine" => Some(Isa::Svm),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn magic_and_vendors() {
        assert!(looks_like(b"PERFILE2\x68\0\0\0"));
        assert!(looks_like(b"2ELIFREP"));
        assert!(!looks_like(b"PERFFILE"));
        assert!(!looks_like(b"Analyze events for all VMs"));
        assert_eq!(vendor_isa("GenuineIntel"), Some(Isa::Vmx));
        assert_eq!(vendor_isa("HygonGenuine"), Some(Isa::Svm));
        assert_eq!(vendor_isa("CentaurHauls"), None);
    }

    #[test]
    fn garbage_is_an_error_naming_the_input() {
        let err = crate::sources::read_bytes(b"PERFILE2garbage", "x.data", None)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(err.starts_with("x.data: byte"), "{err}");
    }
}

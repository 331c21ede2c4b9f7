//! The `HEADER_TRACING_DATA` feature section of perf.data: perf's copy of what libtraceevent
//! needs to decode tracepoint payloads offline. Layout (numbers in the section's own byte
//! order, given by its endianness byte; see perf's trace-event-info.c / trace-event-read.c):
//!
//! ```text
//! "\x17\x08\x44tracing"  magic (10 bytes)
//! version                NUL-terminated ("0.5", "0.6")
//! u8  big_endian         1 when the numbers below are big-endian
//! u8  long_size          sizeof(long) of the traced kernel
//! u32 page_size
//! "header_page\0"  u64 size, bytes      ring-buffer page header format
//! "header_event\0" u64 size, bytes      (text, unused here)
//! u32 count, count × (u64 size, bytes)  ftrace's own event formats
//! u32 systems, systems × (system name NUL-terminated, u32 count, count × (u64 size, format))
//! u32 size, bytes                       /proc/kallsyms (often empty)
//! u32 size, bytes                       ftrace printk formats
//! u64 size, bytes                       saved cmdlines "PID COMM\n…" (version ≥ 0.6)
//! ```

use super::bytes::{Cursor, Endian};
use crate::decode::trace_format::{self as format, EventFormat};

const MAGIC: &[u8] = b"\x17\x08\x44tracing";

/// What the section holds that virtlens uses.
#[derive(Debug, Clone)]
pub(super) struct TracingData {
    pub version: String,
    /// The byte order of the traced kernel (and so of the tracepoint payloads).
    pub endian: Endian,
    /// Every event format of every system (ftrace's own under system `ftrace`).
    pub events: Vec<EventFormat>,
    /// Formats that could not be parsed, as "system: reason".
    pub bad_formats: Vec<String>,
    /// The kernel's saved cmdlines: thread id → comm.
    pub cmdlines: Vec<(u32, String)>,
}

/// Parses the section, which starts at file offset `base`. Errors name the byte and what
/// was expected there; a damaged tail (kallsyms, printk, cmdlines) after the event formats is
/// tolerated.
pub(super) fn parse(section: &[u8], base: u64) -> Result<TracingData, String> {
    let mut c = Cursor::new(section, Endian::Little, base);
    let magic = c.bytes(MAGIC.len() as u64, "the tracing-data magic")?;
    if magic != MAGIC {
        return Err(format!(
            "byte {base}: expected the tracing-data magic \\x17\\x08\\x44tracing"
        ));
    }
    let version = c.cstr("the tracing-data version")?.to_string();
    let big = c.u8("the endianness byte")?;
    let endian = if big != 0 {
        Endian::Big
    } else {
        Endian::Little
    };
    c.set_endian(endian);
    c.u8("the long size")?;
    c.u32("the page size")?;
    let mut out = TracingData {
        version,
        endian,
        events: Vec::new(),
        bad_formats: Vec::new(),
        cmdlines: Vec::new(),
    };
    header_file(&mut c, "header_page")?;
    header_file(&mut c, "header_event")?;

    let count = c.u32("the number of ftrace formats")?;
    for i in 0..count {
        let text = sized_text(&mut c, &format!("ftrace format #{i}"))?;
        push_format(&mut out, "ftrace", text);
    }
    let systems = c.u32("the number of event systems")?;
    for _ in 0..systems {
        let system = c.cstr("an event system name")?.to_string();
        let count = c.u32(&format!("the number of {system} formats"))?;
        for i in 0..count {
            let text = sized_text(&mut c, &format!("{system} format #{i}"))?;
            push_format(&mut out, &system, text);
        }
    }
    // The rest is optional for decoding: stop quietly where it is damaged.
    let with_cmdlines = version_at_least_0_6(&out.version);
    let _ = tail(&mut c, with_cmdlines, &mut out);
    Ok(out)
}

fn version_at_least_0_6(version: &str) -> bool {
    version.trim().parse::<f64>().is_ok_and(|v| v >= 0.6)
}

fn tail(c: &mut Cursor<'_>, with_cmdlines: bool, out: &mut TracingData) -> Result<(), String> {
    let kallsyms = c.u32("the kallsyms size")?;
    c.bytes(u64::from(kallsyms), "kallsyms")?;
    let printk = c.u32("the printk size")?;
    c.bytes(u64::from(printk), "printk formats")?;
    if with_cmdlines {
        let size = c.u64("the saved cmdlines size")?;
        let text = c.bytes(size, "saved cmdlines")?;
        out.cmdlines = String::from_utf8_lossy(text)
            .lines()
            .filter_map(|l| {
                let (pid, comm) = l.trim().split_once(' ')?;
                Some((pid.parse().ok()?, comm.to_string()))
            })
            .collect();
    }
    Ok(())
}

fn header_file(c: &mut Cursor<'_>, name: &str) -> Result<(), String> {
    let at = c.at();
    let found = c.cstr(&format!("the `{name}` tag"))?;
    if found != name {
        return Err(format!(
            "byte {at}: expected the `{name}` tag, found `{found}`"
        ));
    }
    let size = c.u64(&format!("the {name} size"))?;
    c.bytes(size, name)?;
    Ok(())
}

fn sized_text<'a>(c: &mut Cursor<'a>, what: &str) -> Result<&'a [u8], String> {
    let size = c.u64(&format!("the size of {what}"))?;
    c.bytes(size, what)
}

fn push_format(out: &mut TracingData, system: &str, text: &[u8]) {
    match format::parse(system, &String::from_utf8_lossy(text)) {
        Ok(f) => out.events.push(f),
        Err(e) => out.bad_formats.push(e),
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A tracing-data section holding `formats` of system `kvm` (little-endian, version 0.6).
    pub(crate) fn section(formats: &[&str], cmdlines: &str) -> Vec<u8> {
        let mut s = MAGIC.to_vec();
        s.extend_from_slice(b"0.6\0");
        s.push(0);
        s.push(8);
        s.extend_from_slice(&4096u32.to_le_bytes());
        for (tag, body) in [("header_page", "page"), ("header_event", "event")] {
            s.extend_from_slice(tag.as_bytes());
            s.push(0);
            s.extend_from_slice(&(body.len() as u64).to_le_bytes());
            s.extend_from_slice(body.as_bytes());
        }
        s.extend_from_slice(&0u32.to_le_bytes()); // no ftrace formats
        s.extend_from_slice(&1u32.to_le_bytes());
        s.extend_from_slice(b"kvm\0");
        s.extend_from_slice(&(formats.len() as u32).to_le_bytes());
        for f in formats {
            s.extend_from_slice(&(f.len() as u64).to_le_bytes());
            s.extend_from_slice(f.as_bytes());
        }
        s.extend_from_slice(&0u32.to_le_bytes()); // kallsyms
        s.extend_from_slice(&0u32.to_le_bytes()); // printk
        s.extend_from_slice(&(cmdlines.len() as u64).to_le_bytes());
        s.extend_from_slice(cmdlines.as_bytes());
        s
    }

    #[test]
    fn formats_and_cmdlines() {
        let f =
            "name: kvm_fpu\nID: 37\nformat:\n\tfield:u32 load;\toffset:8;\tsize:4;\tsigned:0;\n";
        let td = parse(
            &section(&[f, "garbage"], "42 qemu-system-x86\n7 CPU 0/KVM\n"),
            0,
        )
        .unwrap();
        assert_eq!((td.version.as_str(), td.endian), ("0.6", Endian::Little));
        assert_eq!(td.events.len(), 1);
        assert_eq!(td.events[0].name, "kvm_fpu");
        assert_eq!(td.bad_formats.len(), 1);
        assert_eq!(
            td.cmdlines,
            [(42, "qemu-system-x86".into()), (7, "CPU 0/KVM".into())]
        );
    }

    #[test]
    fn every_truncation_is_an_error_or_a_shorter_result() {
        let f =
            "name: kvm_fpu\nID: 37\nformat:\n\tfield:u32 load;\toffset:8;\tsize:4;\tsigned:0;\n";
        let full = section(&[f], "1 a\n");
        for cut in 0..full.len() {
            let _ = parse(&full[..cut], 0);
        }
        let err = parse(&full[..40], 1000).unwrap_err();
        assert!(
            err.starts_with("byte 10") && err.contains("expected"),
            "{err}"
        );
        assert!(parse(b"\x17\x08\x44tracinX", 0).is_err());
    }
}

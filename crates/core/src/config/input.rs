//! The bytes of a configuration input, before any format: read with the size cap every small
//! input shares ([`crate::sources::input::read_capped`]: configurations are small; `/dev/zero`
//! must end with an error, not an allocation failure), then decoded —
//! UTF-8 (a BOM dropped), UTF-16 with a BOM or an XML declaration (decoded), a QEMU process's
//! `/proc/PID/cmdline` (NUL-separated printable arguments whose first is a QEMU emulator) —
//! or refused with what the bytes are: compressed data (gzip, zstd, xz, bzip2 — refused with
//! the command that decompresses it, see [`decode`]), perf.data, an ELF binary, other binary
//! data.

use std::borrow::Cow;

use super::Format;
use super::shell;
use crate::error::{Error, Result};

/// What the bytes hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Decoded<'a> {
    Text(Cow<'a, str>),
    /// A `/proc/PID/cmdline`: the emulator and its arguments.
    Argv(Vec<String>),
}

/// Magic numbers of files people pass by mistake, and what to call them.
const MAGIC: [(&[u8], &str, Option<&str>); 12] = [
    (b"\x1f\x8b", "gzip-compressed data", Some("zcat")),
    (b"\x28\xb5\x2f\xfd", "zstd-compressed data", Some("zstdcat")),
    (b"\xfd7zXZ\x00", "xz-compressed data", Some("xzcat")),
    (b"BZh", "bzip2-compressed data", Some("bzcat")),
    (
        b"PERFILE2",
        "a perf.data file (use `virtlens report`)",
        None,
    ),
    (
        b"PERFFILE",
        "a perf.data file (use `virtlens report`)",
        None,
    ),
    (b"\x7fELF", "an ELF executable or object", None),
    (b"PK\x03\x04", "a zip archive", None),
    (b"SQLite format 3\x00", "an SQLite database", None),
    (b"PAR1", "a Parquet file", None),
    (b"QFI\xfb", "a qcow2 disk image", None),
    (b"\xd4\xc3\xb2\xa1", "a pcap capture", None),
];

const EXPECTED: &str = "expected a text configuration (libvirt domain XML, a QEMU command line or \
                        launch script, a Proxmox VM config) or a QEMU process's /proc/PID/cmdline";

fn refuse(input: &str, what: String) -> Error {
    Error::Input {
        path: input.to_string(),
        message: what,
    }
}

/// Decodes `bytes`. `forced` is the format the user asked for: a cmdline is only taken when it
/// is unset or QEMU.
///
/// Compressed inputs are refused rather than decompressed: configurations are never stored
/// compressed by libvirt, QEMU or Proxmox, decompressing would need a second size cap against
/// bombs and two more crates, and the refusal names the one-line alternative
/// (`zcat FILE | virtlens lint -`).
pub(crate) fn decode<'a>(
    bytes: &'a [u8],
    input: &str,
    forced: Option<Format>,
) -> Result<Decoded<'a>> {
    for (magic, what, tool) in MAGIC {
        if bytes.starts_with(magic) {
            let how = match tool {
                Some(t) if input != "-" => {
                    format!("; decompress it first: {t} {input} | virtlens lint -")
                }
                Some(t) => format!("; decompress it first ({t} … | virtlens lint -)"),
                None => String::new(),
            };
            return Err(refuse(input, format!("{what}{how}; {EXPECTED}")));
        }
    }
    if let Some(text) = utf16(bytes) {
        return text.map(|t| Decoded::Text(Cow::Owned(t))).ok_or_else(|| {
            refuse(
                input,
                format!("UTF-16 text that does not decode; {EXPECTED}"),
            )
        });
    }
    if let Some(at) = bytes.iter().position(|&b| b == 0) {
        if forced.is_none_or(|f| f == Format::Qemu)
            && let Some(args) = cmdline(bytes)
        {
            return Ok(Decoded::Argv(args));
        }
        let line = bytes[..at].iter().filter(|&&b| b == b'\n').count() + 1;
        let first = bytes
            .split(|&b| b == 0)
            .next()
            .and_then(|a| std::str::from_utf8(a).ok())
            .filter(|a| !a.is_empty() && !a.chars().any(char::is_control));
        let what = match first {
            _ if bytes.iter().all(|&b| b == 0) => "only NUL bytes".to_string(),
            Some(first) => format!(
                "NUL-separated words, but the first (`{}`) is not a QEMU emulator, so this is not \
                 a QEMU process's cmdline",
                first.chars().take(60).collect::<String>()
            ),
            None => format!("binary data (byte {at} is NUL)"),
        };
        return Err(Error::Parse {
            path: input.to_string(),
            line,
            message: format!("{what}; {EXPECTED}"),
        });
    }
    let text = std::str::from_utf8(bytes).map_err(|e| {
        let at = e.valid_up_to();
        let line = bytes[..at].iter().filter(|&&b| b == b'\n').count() + 1;
        Error::Parse {
            path: input.to_string(),
            line,
            message: format!("byte {at} is not UTF-8; {EXPECTED}"),
        }
    })?;
    Ok(Decoded::Text(Cow::Borrowed(
        text.strip_prefix('\u{feff}').unwrap_or(text),
    )))
}

/// UTF-16 with a byte-order mark, or without one when it starts with `<` (an XML declaration
/// or element, as XML's encoding detection does): `Some(None)` when it does not decode.
fn utf16(bytes: &[u8]) -> Option<Option<String>> {
    let (le, body) = match bytes {
        [0xff, 0xfe, rest @ ..] => (true, rest),
        [0xfe, 0xff, rest @ ..] => (false, rest),
        [b'<', 0, c, 0, ..] if *c != 0 => (true, bytes),
        [0, b'<', 0, c, ..] if *c != 0 => (false, bytes),
        _ => return None,
    };
    if body.len() % 2 != 0 {
        return Some(None);
    }
    let units = body.chunks_exact(2).map(|p| {
        if le {
            u16::from_le_bytes([p[0], p[1]])
        } else {
            u16::from_be_bytes([p[0], p[1]])
        }
    });
    Some(
        char::decode_utf16(units)
            .collect::<Result<String, _>>()
            .ok(),
    )
}

/// `/proc/PID/cmdline`: NUL-separated arguments, each printable UTF-8, the first a QEMU
/// emulator (`/usr/bin/qemu-system-x86_64`, `qemu-kvm`, `kvm`).
fn cmdline(bytes: &[u8]) -> Option<Vec<String>> {
    let body = bytes.strip_suffix(&[0]).unwrap_or(bytes);
    let mut args = Vec::new();
    for a in body.split(|&b| b == 0) {
        let s = std::str::from_utf8(a).ok()?;
        if s.chars()
            .any(|c| c.is_control() && !matches!(c, '\t' | '\n' | '\r'))
        {
            return None;
        }
        args.push(s.to_string());
    }
    args.first()
        .is_some_and(|a| shell::is_qemu_binary(a))
        .then_some(args)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(bytes: &[u8]) -> String {
        match decode(bytes, "f", None) {
            Err(e) => e.to_string(),
            Ok(d) => panic!("{d:?}"),
        }
    }

    #[test]
    fn refusals_say_what_the_bytes_are() {
        assert!(
            err(b"\x1f\x8b\x08\x00").contains("gzip-compressed data; decompress it first: zcat f")
        );
        assert!(err(b"PERFILE2\0\0").contains("perf.data"));
        assert!(err(&[0u8; 64]).contains("only NUL bytes"));
        assert!(err(b"a\0b\0").contains("the first (`a`) is not a QEMU emulator"));
        assert!(err(b"\x01\x02\0\xff").contains("binary data"));
        assert!(err(b"ok\n\xff\xfe\xfd").contains("f:2: byte 3 is not UTF-8"));
    }

    #[test]
    fn text_utf16_and_cmdline() {
        assert_eq!(
            decode(b"\xef\xbb\xbf<domain/>", "f", None).unwrap(),
            Decoded::Text("<domain/>".into())
        );
        let le: Vec<u8> = "\u{feff}<domain/>"
            .encode_utf16()
            .flat_map(u16::to_le_bytes)
            .collect();
        assert_eq!(
            decode(&le, "f", None).unwrap(),
            Decoded::Text("<domain/>".into())
        );
        let be: Vec<u8> = "<?xml?>"
            .encode_utf16()
            .flat_map(u16::to_be_bytes)
            .collect();
        assert_eq!(
            decode(&be, "f", None).unwrap(),
            Decoded::Text("<?xml?>".into())
        );
        let argv = decode(b"/usr/bin/qemu-system-x86_64\0-cpu\0host\0", "f", None).unwrap();
        assert_eq!(
            argv,
            Decoded::Argv(vec![
                "/usr/bin/qemu-system-x86_64".into(),
                "-cpu".into(),
                "host".into()
            ])
        );
        assert!(decode(b"qemu-kvm\0-m\0", "f", Some(Format::Libvirt)).is_err());
    }
}

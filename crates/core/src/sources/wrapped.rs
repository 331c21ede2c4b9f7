//! Inputs in a wrapping: compressed (gzip, zstd, xz — how captures and logs are mailed and
//! archived) or in another text encoding (a UTF-8 byte-order mark; UTF-16, which Windows tools
//! such as perfmon and PowerShell write). Each is recognised by its first bytes and unwrapped as
//! a stream, so the format inside is read exactly as the plain file would be: detected, then
//! streamed (text) or spooled to a temporary file (formats that must seek).

use std::io::{self, Read};

/// What an input is wrapped in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Wrapping {
    Gzip,
    Zstd,
    Xz,
    /// A UTF-8 byte-order mark before the text.
    Utf8Bom,
    /// UTF-16, little-endian (its byte-order mark `FF FE`).
    Utf16Le,
    /// UTF-16, big-endian (`FE FF`).
    Utf16Be,
}

impl Wrapping {
    /// How the wrapping is named in notes and errors.
    pub(super) fn name(self) -> &'static str {
        match self {
            Wrapping::Gzip => "gzip",
            Wrapping::Zstd => "zstd",
            Wrapping::Xz => "xz",
            Wrapping::Utf8Bom => "UTF-8 with a byte-order mark",
            Wrapping::Utf16Le => "UTF-16LE",
            Wrapping::Utf16Be => "UTF-16BE",
        }
    }
}

/// The wrapping an input starting with `head` is in, by its magic bytes.
pub(super) fn wrapping(head: &[u8]) -> Option<Wrapping> {
    Some(match head {
        [0x1f, 0x8b, ..] => Wrapping::Gzip,
        [0x28, 0xb5, 0x2f, 0xfd, ..] => Wrapping::Zstd,
        [0xfd, b'7', b'z', b'X', b'Z', 0x00, ..] => Wrapping::Xz,
        [0xef, 0xbb, 0xbf, ..] => Wrapping::Utf8Bom,
        [0xff, 0xfe, ..] => Wrapping::Utf16Le,
        [0xfe, 0xff, ..] => Wrapping::Utf16Be,
        _ => return None,
    })
}

/// The contents of `source` (which starts with the wrapping's magic bytes) unwrapped.
pub(super) fn unwrap<'a, R: Read + 'a>(w: Wrapping, source: R) -> io::Result<Box<dyn Read + 'a>> {
    Ok(match w {
        Wrapping::Gzip => Box::new(flate2::read::MultiGzDecoder::new(source)),
        Wrapping::Zstd => Box::new(
            ruzstd::decoding::StreamingDecoder::new(source)
                .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e.to_string()))?,
        ),
        Wrapping::Xz => Box::new(liblzma::read::XzDecoder::new_multi_decoder(source)),
        Wrapping::Utf8Bom => {
            let mut source = source;
            let mut bom = [0u8; 3];
            source.read_exact(&mut bom)?;
            Box::new(source)
        }
        Wrapping::Utf16Le => Box::new(Utf16::new(source, u16::from_le_bytes)),
        Wrapping::Utf16Be => Box::new(Utf16::new(source, u16::from_be_bytes)),
    })
}

/// UTF-16 read as UTF-8 (its byte-order mark dropped; an unpaired surrogate becomes U+FFFD,
/// which the line readers note as damage).
struct Utf16<R> {
    source: R,
    unit: fn([u8; 2]) -> u16,
    /// UTF-8 decoded and not yet handed out.
    out: Vec<u8>,
    at: usize,
    /// The code units of the chunk being decoded (reused).
    units: Vec<u16>,
    /// A high surrogate waiting for its pair.
    high: Option<u16>,
    started: bool,
    done: bool,
}

impl<R: Read> Utf16<R> {
    fn new(source: R, unit: fn([u8; 2]) -> u16) -> Self {
        Utf16 {
            source,
            unit,
            out: Vec::with_capacity(16 * 1024),
            at: 0,
            units: Vec::with_capacity(4 * 1024),
            high: None,
            started: false,
            done: false,
        }
    }

    /// Decodes the next chunk of the source into `out`.
    fn fill(&mut self) -> io::Result<()> {
        let mut raw = [0u8; 8 * 1024];
        let mut n = 0;
        // Whole code units only: read until the chunk has an even length or the input ends.
        loop {
            let got = self.source.read(&mut raw[n..])?;
            n += got;
            if got == 0 || n % 2 == 0 {
                if got == 0 {
                    self.done = true;
                }
                break;
            }
        }
        self.out.clear();
        self.at = 0;
        self.units.clear();
        self.units.extend(self.high.take());
        let mut chunk = raw[..n - n % 2]
            .chunks_exact(2)
            .map(|c| (self.unit)([c[0], c[1]]));
        if !self.started {
            self.started = true;
            match chunk.next() {
                Some(0xfeff) | None => {}
                Some(u) => self.units.push(u),
            }
        }
        self.units.extend(chunk);
        // A high surrogate at the end of the chunk waits for the next one.
        if !self.done
            && self
                .units
                .last()
                .is_some_and(|u| (0xd800..0xdc00).contains(u))
        {
            self.high = self.units.pop();
        }
        let mut buf = [0u8; 4];
        for c in char::decode_utf16(self.units.iter().copied()) {
            let c = c.unwrap_or(char::REPLACEMENT_CHARACTER);
            self.out
                .extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
        }
        if self.done && n % 2 == 1 {
            self.out.extend_from_slice("\u{fffd}".as_bytes());
        }
        Ok(())
    }
}

impl<R: Read> Read for Utf16<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        while self.at == self.out.len() {
            if self.done {
                return Ok(0);
            }
            self.fill()?;
        }
        let n = buf.len().min(self.out.len() - self.at);
        buf[..n].copy_from_slice(&self.out[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unwrapped(bytes: &[u8]) -> String {
        let w = wrapping(bytes).unwrap_or_else(|| panic!("no wrapping"));
        let mut out = String::new();
        let mut r = unwrap(w, bytes).unwrap_or_else(|e| panic!("{e}"));
        r.read_to_string(&mut out).unwrap_or_else(|e| panic!("{e}"));
        out
    }

    #[test]
    fn utf16_of_both_orders_and_a_bom_read_as_utf8() {
        let text = "Event  Total\nkvm_exit 12 \u{1f600}\n";
        let le: Vec<u8> = [0xfeffu16]
            .into_iter()
            .chain(text.encode_utf16())
            .flat_map(u16::to_le_bytes)
            .collect();
        let be: Vec<u8> = [0xfeffu16]
            .into_iter()
            .chain(text.encode_utf16())
            .flat_map(u16::to_be_bytes)
            .collect();
        assert_eq!(unwrapped(&le), text);
        assert_eq!(unwrapped(&be), text);
        let bom = [&[0xef, 0xbb, 0xbf][..], text.as_bytes()].concat();
        assert_eq!(unwrapped(&bom), text);
    }

    #[test]
    fn a_cut_utf16_input_ends_in_a_replacement_character() {
        let mut le: Vec<u8> = [0xfeffu16, u16::from(b'a')]
            .into_iter()
            .flat_map(u16::to_le_bytes)
            .collect();
        le.push(0x62);
        assert_eq!(unwrapped(&le), "a\u{fffd}");
    }
}

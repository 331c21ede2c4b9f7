//! Bounds-checked reading of little- or big-endian numbers and strings out of byte slices:
//! every read that would run past the end answers `None` (or an error naming what was being
//! read), so damaged input can never index out of range.

/// The byte order of a perf.data file (or of its embedded tracing data).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Endian {
    Little,
    Big,
}

impl Endian {
    /// The `u16` at `at`.
    #[inline]
    pub(crate) fn u16(self, buf: &[u8], at: usize) -> Option<u16> {
        let b: [u8; 2] = buf.get(at..at.checked_add(2)?)?.try_into().ok()?;
        Some(match self {
            Endian::Little => u16::from_le_bytes(b),
            Endian::Big => u16::from_be_bytes(b),
        })
    }

    /// The `u32` at `at`.
    #[inline]
    pub(crate) fn u32(self, buf: &[u8], at: usize) -> Option<u32> {
        let b: [u8; 4] = buf.get(at..at.checked_add(4)?)?.try_into().ok()?;
        Some(match self {
            Endian::Little => u32::from_le_bytes(b),
            Endian::Big => u32::from_be_bytes(b),
        })
    }

    /// The `u64` at `at`.
    #[inline]
    pub(crate) fn u64(self, buf: &[u8], at: usize) -> Option<u64> {
        let b: [u8; 8] = buf.get(at..at.checked_add(8)?)?.try_into().ok()?;
        Some(match self {
            Endian::Little => u64::from_le_bytes(b),
            Endian::Big => u64::from_be_bytes(b),
        })
    }

    /// An unsigned integer of `size` (1, 2, 4 or 8) bytes at `at`, widened to `u64`.
    // Hot: several times per sample, where the compiler had stopped inlining it.
    #[inline(always)]
    pub(crate) fn uint(self, buf: &[u8], at: usize, size: usize) -> Option<u64> {
        match size {
            1 => buf.get(at).map(|&b| u64::from(b)),
            2 => self.u16(buf, at).map(u64::from),
            4 => self.u32(buf, at).map(u64::from),
            8 => self.u64(buf, at),
            _ => None,
        }
    }
}

/// A forward reader over a byte slice that reports what it expected when it runs out.
#[derive(Debug, Clone)]
pub(crate) struct Cursor<'a> {
    buf: &'a [u8],
    pos: usize,
    endian: Endian,
    /// The file offset of `buf[0]`, for messages.
    base: u64,
}

impl<'a> Cursor<'a> {
    /// A cursor over `buf`, which starts at file offset `base` (named in messages).
    pub(crate) fn new(buf: &'a [u8], endian: Endian, base: u64) -> Self {
        Self {
            buf,
            pos: 0,
            endian,
            base,
        }
    }

    /// The file offset of the next byte.
    pub(crate) fn at(&self) -> u64 {
        self.base.saturating_add(self.pos as u64)
    }

    /// Bytes left.
    pub(crate) fn remaining(&self) -> usize {
        self.buf.len().saturating_sub(self.pos)
    }

    pub(crate) fn set_endian(&mut self, endian: Endian) {
        self.endian = endian;
    }

    fn short(&self, n: u64, what: &str) -> String {
        format!(
            "byte {}: expected {what} ({n} bytes) but only {} bytes are left",
            self.at(),
            self.remaining()
        )
    }

    /// The next `n` bytes.
    pub(crate) fn bytes(&mut self, n: u64, what: &str) -> Result<&'a [u8], String> {
        let end = usize::try_from(n)
            .ok()
            .and_then(|n| self.pos.checked_add(n))
            .filter(|&e| e <= self.buf.len())
            .ok_or_else(|| self.short(n, what))?;
        let out = &self.buf[self.pos..end];
        self.pos = end;
        Ok(out)
    }

    pub(crate) fn u8(&mut self, what: &str) -> Result<u8, String> {
        Ok(self.bytes(1, what)?[0])
    }

    pub(crate) fn u32(&mut self, what: &str) -> Result<u32, String> {
        let b = self.bytes(4, what)?;
        self.endian.u32(b, 0).ok_or_else(|| self.short(4, what))
    }

    pub(crate) fn u64(&mut self, what: &str) -> Result<u64, String> {
        let b = self.bytes(8, what)?;
        self.endian.u64(b, 0).ok_or_else(|| self.short(8, what))
    }

    /// A NUL-terminated string (the NUL is consumed, not returned).
    pub(crate) fn cstr(&mut self, what: &str) -> Result<&'a str, String> {
        let rest = self.buf.get(self.pos..).unwrap_or_default();
        let len = rest.iter().position(|&b| b == 0).ok_or_else(|| {
            format!(
                "byte {}: expected {what} (a NUL-terminated string), found no NUL",
                self.at()
            )
        })?;
        let s = std::str::from_utf8(&rest[..len])
            .map_err(|_| format!("byte {}: {what} is not UTF-8", self.at()))?;
        self.pos += len + 1;
        Ok(s)
    }
}

/// The text of a NUL-padded string field (up to the first NUL), lossily decoded.
pub(crate) fn padded_str(bytes: &[u8]) -> String {
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    String::from_utf8_lossy(&bytes[..end]).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_are_bounded_and_endian_aware() {
        let b = [1u8, 2, 3, 4, 5, 6, 7, 8];
        assert_eq!(Endian::Little.u16(&b, 0), Some(0x0201));
        assert_eq!(Endian::Big.u32(&b, 0), Some(0x0102_0304));
        assert_eq!(Endian::Little.u64(&b, 1), None);
        assert_eq!(Endian::Little.u32(&b, usize::MAX), None);
        assert_eq!(Endian::Little.uint(&b, 7, 1), Some(8));
        assert_eq!(Endian::Little.uint(&b, 0, 3), None);
    }

    #[test]
    fn cursor_names_what_it_expected() {
        let mut c = Cursor::new(b"ab\0\x01\x00\x00\x00", Endian::Little, 100);
        assert_eq!(c.cstr("name"), Ok("ab"));
        assert_eq!(c.u32("count"), Ok(1));
        let err = c.u64("size").unwrap_err();
        assert!(err.starts_with("byte 107: expected size"), "{err}");
        assert!(c.bytes(u64::MAX, "blob").is_err());
        assert_eq!(padded_str(b"6.1\0\0\0"), "6.1");
    }
}

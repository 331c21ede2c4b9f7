//! The footer of a Parquet file, read just far enough to get its key/value metadata (where a
//! capture keeps its profile) and row count, without a Parquet library:
//!
//! ```text
//! "PAR1" … column chunks … FileMetaData (Thrift compact) · u32 LE footer length · "PAR1"
//! FileMetaData: 1 version i32, 2 schema list, 3 num_rows i64, 4 row_groups list,
//!               5 key_value_metadata list<KeyValue{1 key string, 2 value string}>, …
//! ```
//!
//! The Thrift compact protocol is walked generically (every other field is skipped), with
//! every length checked against the bytes that are left and nesting bounded, so damaged
//! input is an error naming the byte, never a panic.

/// The Parquet magic, at both ends of the file.
pub(crate) const MAGIC: &[u8; 4] = b"PAR1";
/// How deep structs and lists may nest before the footer is called damaged.
const MAX_DEPTH: usize = 32;

/// What a footer says.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Footer {
    pub num_rows: Option<i64>,
    /// Key/value pairs in file order (a missing value is an empty string).
    pub key_values: Vec<(String, String)>,
}

impl Footer {
    /// The value of `key`.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.key_values
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }
}

/// Where the footer is in a file of `file_len` bytes whose last 8 bytes are `tail`: its start
/// and length.
pub fn locate(tail: &[u8], file_len: u64) -> Result<(u64, u64), String> {
    if file_len < 12 || tail.len() != 8 {
        return Err(format!(
            "a Parquet file has at least 12 bytes; this one has {file_len}"
        ));
    }
    if &tail[4..8] != MAGIC {
        return Err(format!(
            "byte {}: expected the closing `PAR1` magic (the file is truncated or not Parquet)",
            file_len - 4
        ));
    }
    let len = u64::from(u32::from_le_bytes([tail[0], tail[1], tail[2], tail[3]]));
    if len > file_len - 12 {
        return Err(format!(
            "byte {}: the footer length {len} is more than the file holds",
            file_len - 8
        ));
    }
    Ok((file_len - 8 - len, len))
}

/// Parses the FileMetaData of a footer that starts at file offset `base`.
pub fn parse(bytes: &[u8], base: u64) -> Result<Footer, String> {
    let mut r = Reader {
        buf: bytes,
        pos: 0,
        base,
    };
    let mut footer = Footer::default();
    let mut last_id = 0i16;
    loop {
        let (id, ty) = r.field_header(&mut last_id)?;
        if ty == STOP {
            break;
        }
        match (id, ty) {
            (3, I64) => footer.num_rows = Some(r.varint_signed()?),
            (5, LIST) => {
                let (n, elem) = r.list_header()?;
                for _ in 0..n {
                    if elem != STRUCT {
                        r.skip(elem, 1)?;
                        continue;
                    }
                    footer.key_values.push(r.key_value()?);
                }
            }
            _ => r.skip(ty, 1)?,
        }
    }
    Ok(footer)
}

const STOP: u8 = 0;
const TRUE: u8 = 1;
const FALSE: u8 = 2;
const BYTE: u8 = 3;
const I16: u8 = 4;
const I32: u8 = 5;
const I64: u8 = 6;
const DOUBLE: u8 = 7;
const BINARY: u8 = 8;
const LIST: u8 = 9;
const SET: u8 = 10;
const MAP: u8 = 11;
const STRUCT: u8 = 12;
const UUID: u8 = 13;

struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
    base: u64,
}

impl<'a> Reader<'a> {
    fn err(&self, what: &str) -> String {
        format!(
            "byte {}: {what} in the Parquet footer",
            self.base + self.pos as u64
        )
    }

    fn byte(&mut self) -> Result<u8, String> {
        let b = *self
            .buf
            .get(self.pos)
            .ok_or_else(|| self.err("expected another byte, found the end"))?;
        self.pos += 1;
        Ok(b)
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        let end = self
            .pos
            .checked_add(n)
            .filter(|&e| e <= self.buf.len())
            .ok_or_else(|| self.err(&format!("{n} bytes run past the end")))?;
        let out = &self.buf[self.pos..end];
        self.pos = end;
        Ok(out)
    }

    fn varint(&mut self) -> Result<u64, String> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let b = self.byte()?;
            v |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(self.err("a varint is longer than 10 bytes"))
    }

    fn varint_signed(&mut self) -> Result<i64, String> {
        let v = self.varint()?;
        Ok(((v >> 1) as i64) ^ -((v & 1) as i64))
    }

    fn field_header(&mut self, last: &mut i16) -> Result<(i16, u8), String> {
        let b = self.byte()?;
        let ty = b & 0x0f;
        if ty == STOP {
            return Ok((0, STOP));
        }
        let delta = (b >> 4) as i16;
        let id = if delta == 0 {
            i16::try_from(self.varint_signed()?).map_err(|_| self.err("a field id is too big"))?
        } else {
            last.saturating_add(delta)
        };
        *last = id;
        Ok((id, ty))
    }

    fn list_header(&mut self) -> Result<(usize, u8), String> {
        let b = self.byte()?;
        let n = match b >> 4 {
            15 => self.varint()?,
            n => u64::from(n),
        };
        // Every element takes at least one byte: a longer count is damage.
        let n = usize::try_from(n)
            .ok()
            .filter(|&n| n <= self.buf.len() - self.pos)
            .ok_or_else(|| self.err(&format!("a list of {n} elements is longer than the rest")))?;
        Ok((n, b & 0x0f))
    }

    fn binary(&mut self) -> Result<&'a [u8], String> {
        let n = self.varint()?;
        let n = usize::try_from(n).map_err(|_| self.err("a string length is too big"))?;
        self.take(n)
    }

    fn key_value(&mut self) -> Result<(String, String), String> {
        let (mut key, mut value) = (None, String::new());
        let mut last = 0i16;
        loop {
            let (id, ty) = self.field_header(&mut last)?;
            match (id, ty) {
                (_, STOP) => break,
                (1, BINARY) => key = Some(String::from_utf8_lossy(self.binary()?).into_owned()),
                (2, BINARY) => value = String::from_utf8_lossy(self.binary()?).into_owned(),
                _ => self.skip(ty, 1)?,
            }
        }
        let key = key.ok_or_else(|| self.err("a key/value pair has no key"))?;
        Ok((key, value))
    }

    /// Skips one value of type `ty` (in a list, booleans are one byte each).
    fn skip(&mut self, ty: u8, depth: usize) -> Result<(), String> {
        if depth > MAX_DEPTH {
            return Err(self.err("values nest too deep"));
        }
        match ty {
            TRUE | FALSE => {}
            BYTE => {
                self.byte()?;
            }
            I16 | I32 | I64 => {
                self.varint()?;
            }
            DOUBLE => {
                self.take(8)?;
            }
            BINARY => {
                self.binary()?;
            }
            UUID => {
                self.take(16)?;
            }
            LIST | SET => {
                let (n, elem) = self.list_header()?;
                for _ in 0..n {
                    if matches!(elem, TRUE | FALSE) {
                        self.byte()?;
                    } else {
                        self.skip(elem, depth + 1)?;
                    }
                }
            }
            MAP => {
                let n = self.varint()?;
                if n > 0 {
                    let types = self.byte()?;
                    for _ in 0..n {
                        self.skip(types >> 4, depth + 1)?;
                        self.skip(types & 0x0f, depth + 1)?;
                    }
                }
            }
            STRUCT => {
                let mut last = 0i16;
                loop {
                    let (_, t) = self.field_header(&mut last)?;
                    if t == STOP {
                        break;
                    }
                    self.skip(t, depth + 1)?;
                }
            }
            other => return Err(self.err(&format!("unknown Thrift type {other}"))),
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// FileMetaData{1: version 1, 2: [struct{4: "x"}], 3: num_rows 5, 5: [{1:"k", 2:"v"}], 6: "w"}.
    fn meta() -> Vec<u8> {
        let mut m = vec![0x15, 0x02]; // field 1 i32 zigzag(1)=2
        m.extend_from_slice(&[0x19, 0x1c]); // field 2 list, 1 struct
        m.extend_from_slice(&[0x48, 0x01, b'x', 0x00]); // struct: field 4 binary "x", stop
        m.extend_from_slice(&[0x16, 0x0a]); // field 3 i64 zigzag(5)=10
        m.extend_from_slice(&[0x29, 0x1c]); // field 5 list, 1 struct
        m.extend_from_slice(&[0x18, 0x01, b'k', 0x18, 0x01, b'v', 0x00]);
        m.extend_from_slice(&[0x18, 0x01, b'w']); // field 6 binary
        m.push(0x00);
        m
    }

    #[test]
    fn key_values_and_rows() {
        let f = parse(&meta(), 0).unwrap();
        assert_eq!(f.num_rows, Some(5));
        assert_eq!(f.get("k"), Some("v"));
        assert_eq!(f.get("x"), None);
    }

    #[test]
    fn every_cut_is_an_error_naming_a_byte() {
        let m = meta();
        for cut in 0..m.len() {
            let e = parse(&m[..cut], 100).unwrap_err();
            assert!(e.starts_with("byte 1"), "{e}");
        }
        assert!(parse(&[0x19, 0xfc, 0xff, 0xff, 0xff, 0x0f], 0).is_err());
        let deep: Vec<u8> = std::iter::repeat_n([0x19u8, 0x19], 100).flatten().collect();
        assert!(parse(&deep, 0).is_err());
    }

    #[test]
    fn locating_the_footer() {
        let mut tail = 20u32.to_le_bytes().to_vec();
        tail.extend_from_slice(MAGIC);
        assert_eq!(locate(&tail, 100), Ok((72, 20)));
        assert!(locate(&tail, 25).is_err());
        assert!(locate(b"\0\0\0\0PAR2", 100).unwrap_err().contains("PAR1"));
    }
}

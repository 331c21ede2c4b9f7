//! Every field of a tracepoint payload as a value, by the event's `format` (never by a
//! hard-coded offset): integers of 1, 2, 4 or 8 bytes (sign-extended when the format says
//! `signed:1`), fixed arrays (`__u8 insn[15]`; `char comm[16]` as text) and dynamic fields
//! (`__data_loc char[] msg`: a `u32` whose low 16 bits are the offset in the payload and high
//! 16 bits the length; `__rel_loc`: the offset counts from the end of the field). This is what
//! a capture's raw-event columns hold.

use crate::decode::trace_format::Field;

/// A field's value, borrowing from the payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Value<'a> {
    Int(i64),
    UInt(u64),
    Bytes(&'a [u8]),
    Text(&'a str),
}

/// What kind of value a field holds, to choose its column type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ValueKind {
    Int,
    UInt,
    Bytes,
    Text,
}

/// The kind of `field`'s values; `None` for fields no value can be read from (a scalar of an
/// odd size).
pub fn kind(field: &Field) -> Option<ValueKind> {
    let chars = field.ctype.contains("char") && !field.ctype.contains("unsigned");
    if field.array {
        return Some(if chars {
            ValueKind::Text
        } else {
            ValueKind::Bytes
        });
    }
    match field.size {
        1 | 2 | 4 | 8 if field.signed => Some(ValueKind::Int),
        1 | 2 | 4 | 8 => Some(ValueKind::UInt),
        _ => None,
    }
}

/// The value of `field` in `payload`; `None` when the payload is too short for it or a
/// dynamic field points outside it.
pub fn value<'a>(field: &Field, payload: &'a [u8]) -> Option<Value<'a>> {
    let k = kind(field)?;
    let at = field.offset;
    let raw = payload.get(at..at.checked_add(field.size)?)?;
    let dynamic = field.ctype.starts_with("__data_loc") || field.ctype.starts_with("__rel_loc");
    let bytes = if dynamic {
        let loc = u32::from_ne_bytes(raw.get(..4)?.try_into().ok()?);
        let (off, len) = ((loc & 0xffff) as usize, (loc >> 16) as usize);
        let base = if field.ctype.starts_with("__rel_loc") {
            at + field.size
        } else {
            0
        };
        let start = base.checked_add(off)?;
        payload.get(start..start.checked_add(len)?)?
    } else {
        raw
    };
    Some(match k {
        ValueKind::Text => {
            let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
            match std::str::from_utf8(&bytes[..end]) {
                Ok(s) => Value::Text(s),
                Err(_) => Value::Bytes(&bytes[..end]),
            }
        }
        ValueKind::Bytes => Value::Bytes(bytes),
        ValueKind::UInt => Value::UInt(uint(bytes)?),
        ValueKind::Int => {
            let v = uint(bytes)?;
            let shift = 64 - 8 * bytes.len() as u32;
            Value::Int(((v << shift) as i64) >> shift)
        }
    })
}

fn uint(b: &[u8]) -> Option<u64> {
    Some(match b.len() {
        1 => u64::from(b[0]),
        2 => u64::from(u16::from_ne_bytes(b.try_into().ok()?)),
        4 => u64::from(u32::from_ne_bytes(b.try_into().ok()?)),
        8 => u64::from_ne_bytes(b.try_into().ok()?),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode::trace_format;

    const FORMAT: &str = "name: x\nID: 1\nformat:\n\
        \tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\
        \tfield:int errno;\toffset:4;\tsize:4;\tsigned:1;\n\
        \tfield:__u8 insn[3];\toffset:8;\tsize:3;\tsigned:0;\n\
        \tfield:char comm[4];\toffset:11;\tsize:4;\tsigned:0;\n\
        \tfield:__data_loc char[] msg;\toffset:16;\tsize:4;\tsigned:0;\n\
        \tfield:__rel_loc char[] rel;\toffset:20;\tsize:4;\tsigned:0;\n";

    #[test]
    fn scalars_arrays_and_dynamic_fields() {
        let f = trace_format::parse("kvm", FORMAT).unwrap();
        let mut p = vec![0u8; 32];
        p[0..2].copy_from_slice(&7u16.to_ne_bytes());
        p[4..8].copy_from_slice(&(-4i32).to_ne_bytes());
        p[8..11].copy_from_slice(&[0x0f, 0x01, 0xc1]);
        p[11..13].copy_from_slice(b"ab");
        p[16..20].copy_from_slice(&(24u32 | (3 << 16)).to_ne_bytes());
        p[20..24].copy_from_slice(&(4u32 | (2 << 16)).to_ne_bytes());
        p[24..27].copy_from_slice(b"hi\0");
        p[28..30].copy_from_slice(b"yo");
        let get = |n: &str| f.field(n).and_then(|fl| value(fl, &p));
        assert_eq!(get("common_type"), Some(Value::UInt(7)));
        assert_eq!(get("errno"), Some(Value::Int(-4)));
        assert_eq!(get("insn"), Some(Value::Bytes(&[0x0f, 0x01, 0xc1])));
        assert_eq!(get("comm"), Some(Value::Text("ab")));
        assert_eq!(get("msg"), Some(Value::Text("hi")));
        assert_eq!(get("rel"), Some(Value::Text("yo")));
        assert_eq!(f.field("msg").and_then(|fl| value(fl, &p[..18])), None);
        let mut q = p.clone();
        q[16..20].copy_from_slice(&(30u32 | (9 << 16)).to_ne_bytes());
        let msg = f.field("msg").and_then(|fl| value(fl, &q));
        assert_eq!(msg, None, "points outside the payload");
    }
}

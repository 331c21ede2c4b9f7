//! Allocation-free helpers for the fields of event text: words, hexadecimal and decimal
//! numbers read straight from the bytes (no intermediate `String`), and name checks.

/// The hexadecimal number at the start of `s` (with or without `0x`), up to the first byte
/// that is not a hex digit; `None` when there is no digit or the value overflows 64 bits.
pub(super) fn hex(s: &str) -> Option<u64> {
    let b = s.as_bytes();
    let b = match b {
        [b'0', b'x' | b'X', rest @ ..] => rest,
        _ => b,
    };
    let mut value: u64 = 0;
    let mut digits = 0usize;
    for &c in b {
        let d = match c {
            b'0'..=b'9' => c - b'0',
            b'a'..=b'f' => c - b'a' + 10,
            b'A'..=b'F' => c - b'A' + 10,
            _ => break,
        };
        if value >> 60 != 0 {
            return None;
        }
        value = (value << 4) | u64::from(d);
        digits += 1;
    }
    (digits > 0).then_some(value)
}

/// The decimal number at the start of `s`, up to the first non-digit.
pub(super) fn dec(s: &str) -> Option<u64> {
    let mut value: u64 = 0;
    let mut digits = 0usize;
    for &c in s.as_bytes() {
        if !c.is_ascii_digit() {
            break;
        }
        value = value.checked_mul(10)?.checked_add(u64::from(c - b'0'))?;
        digits += 1;
    }
    (digits > 0).then_some(value)
}

/// [`dec`] as a `u32`.
pub(super) fn dec32(s: &str) -> Option<u32> {
    dec(s).and_then(|v| u32::try_from(v).ok())
}

/// `s` without its leading decimal digits.
pub(super) fn skip_digits(s: &str) -> &str {
    s.trim_start_matches(|c: char| c.is_ascii_digit())
}

/// The whole of `s` is a non-empty run of decimal digits.
pub(super) fn all_digits(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())
}

/// The first word of `s` (up to a space or tab).
pub(super) fn word(s: &str) -> &str {
    match s.find([' ', '\t']) {
        Some(i) => &s[..i],
        None => s,
    }
}

/// An event or subsystem name: ASCII letters, digits and `_`, not starting with a digit.
pub(super) fn is_ident(s: &str) -> bool {
    let b = s.as_bytes();
    matches!(b.first(), Some(c) if c.is_ascii_alphabetic() || *c == b'_')
        && b.iter().all(|c| c.is_ascii_alphanumeric() || *c == b'_')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers() {
        assert_eq!(hex("0x3f8 size"), Some(0x3f8));
        assert_eq!(hex("6e0 = 0x1"), Some(0x6e0));
        assert_eq!(hex("1729a1000"), Some(0x1729a1000));
        assert_eq!(hex("0xffffffffffffffff"), Some(u64::MAX));
        assert_eq!(hex("0x1ffffffffffffffff"), None);
        assert_eq!(hex("0x"), None);
        assert_eq!(hex("zz"), None);
        assert_eq!(dec("42)"), Some(42));
        assert_eq!(dec("99999999999999999999999"), None);
        assert_eq!(dec32("4294967296"), None);
        assert_eq!(word("kvm_exit rest"), "kvm_exit");
        assert!(is_ident("kvm_exit") && !is_ident("9x") && !is_ident("trace-cmd"));
    }
}

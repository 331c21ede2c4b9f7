//! Runs of blanks (spaces and tabs) skipped, and single bytes found, eight bytes at a time. The
//! columns of perf's tables are padded with runs of dozens of spaces, and walking them byte by byte
//! was most of the time of reading a row; a trace line's first `:` is forty bytes in.

const SPACES: u64 = u64::from_ne_bytes([b' '; 8]);
const TABS: u64 = u64::from_ne_bytes([b'\t'; 8]);
const ONES: u64 = u64::from_ne_bytes([0x01; 8]);
const HIGHS: u64 = u64::from_ne_bytes([0x80; 8]);

/// The eight bytes at `i`, the first in the lowest bits.
fn word(bytes: &[u8], i: usize) -> Option<u64> {
    let w: [u8; 8] = bytes.get(i..i + 8)?.try_into().ok()?;
    Some(u64::from_le_bytes(w))
}

/// The high bit of each zero byte of `v` set, and of no byte below the first zero byte (bytes
/// above it may be flagged falsely: only the lowest flag is used).
fn zero_bytes(v: u64) -> u64 {
    v.wrapping_sub(ONES) & !v & HIGHS
}

/// A space or a tab: the blanks every reader here skips between cells.
pub(crate) fn blank(b: u8) -> bool {
    b == b' ' || b == b'\t'
}

/// The index of the first byte at or after `i` that is not a blank (`bytes.len()` if none).
pub(crate) fn skip(bytes: &[u8], mut i: usize) -> usize {
    // Runs of spaces a word at a time (a tab ends the run here and is skipped below).
    while let Some(w) = word(bytes, i) {
        let other = w ^ SPACES;
        if other != 0 {
            i += (other.trailing_zeros() / 8) as usize;
            break;
        }
        i += 8;
    }
    while i < bytes.len() && blank(bytes[i]) {
        i += 1;
    }
    i
}

/// Where the run of bytes that are not blanks and that ends at `end` starts: after the last
/// blank before `end` (0 if none). A trace line's tokens are a dozen bytes, read backwards a
/// word at a time.
pub(crate) fn run_start(bytes: &[u8], mut end: usize) -> usize {
    end = end.min(bytes.len());
    while end >= 8 {
        let Some(w) = word(bytes, end - 8) else {
            break;
        };
        let blanks = exact_zero_bytes(w ^ SPACES) | exact_zero_bytes(w ^ TABS);
        if blanks != 0 {
            // The highest flagged byte is the last blank of the word.
            return end - (blanks.leading_zeros() / 8) as usize;
        }
        end -= 8;
    }
    while end > 0 && !blank(bytes[end - 1]) {
        end -= 1;
    }
    end
}

/// The high bit of each zero byte of `v` set, and of no other byte (exact, unlike
/// [`zero_bytes`], so its highest flag can be used).
fn exact_zero_bytes(v: u64) -> u64 {
    const LOWS: u64 = !HIGHS;
    !(((v & LOWS).wrapping_add(LOWS)) | v | LOWS)
}

/// The index of the first `byte` at or after `i` (`bytes.len()` if none). For the few dozen
/// bytes of a line's columns, where memchr's setup costs more than the search.
pub(crate) fn find_byte(bytes: &[u8], mut i: usize, byte: u8) -> usize {
    let splat = u64::from_ne_bytes([byte; 8]);
    while let Some(w) = word(bytes, i) {
        let hits = zero_bytes(w ^ splat);
        if hits != 0 {
            return i + (hits.trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    while i < bytes.len() && bytes[i] != byte {
        i += 1;
    }
    i
}

#[cfg(test)]
mod tests {
    proptest::proptest! {
        /// The searches agree with a byte loop from every start, wherever the blanks fall
        /// against the eight-byte words.
        #[test]
        fn as_a_byte_loop(picks in proptest::collection::vec(0usize..8, 0..70)) {
            let text: Vec<u8> = picks.iter().flat_map(|&i| [&b" "[..], b"\t", b"a", b"\xc3\xa9", b"    ", b"\x00", b"!", b"\x08"][i]).copied().collect();
            for from in 0..=text.len() {
                let skip = (from..text.len()).find(|&i| !super::blank(text[i])).unwrap_or(text.len());
                proptest::prop_assert_eq!(super::skip(&text, from), skip);
                let start = (0..from).rev().find(|&i| super::blank(text[i])).map_or(0, |i| i + 1);
                proptest::prop_assert_eq!(super::run_start(&text, from), start);
                for byte in [b' ', b'a', 0xa9, 0] {
                    let at = (from..text.len()).find(|&i| text[i] == byte).unwrap_or(text.len());
                    proptest::prop_assert_eq!(super::find_byte(&text, from, byte), at);
                }
            }
        }
    }
}

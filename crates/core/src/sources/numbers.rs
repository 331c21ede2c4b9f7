//! Exact parsing of the numbers that reports print: counts, percentages, and decimal durations
//! turned into integer nanoseconds without going through floating point.

/// A plain unsigned integer (`67007`).
pub(crate) fn count(text: &str) -> Option<u64> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

/// A percentage with its `%` sign (`98.17%`), as a number of percent.
pub(crate) fn percent(text: &str) -> Option<f64> {
    let number = text.strip_suffix('%')?;
    decimal_scaled(number, 2).map(|hundredths| hundredths as f64 / 100.0)
}

/// [`percent`] of the cell `b[at..end]`, read in place (the same rule; `percent` keeps its
/// own short body so that its callers still inline it).
// Inlined, as `decimal_at` is: a call from a transcript row's spread was 1% of reading it.
#[inline(always)]
pub(crate) fn percent_at(b: &[u8], at: usize, end: usize) -> Option<f64> {
    let d = decimal_at(b, at, 2)
        .filter(|d| d.digits > 0 && d.end + 1 == end && b.get(d.end) == Some(&b'%'))?;
    Some(d.value as f64 / 100.0)
}

/// A duration printed in microseconds (`0.59us`, `8360.34us`) as integer nanoseconds.
pub(crate) fn micros_as_ns(text: &str) -> Option<u64> {
    decimal_scaled(text.strip_suffix("us")?, 3)
}

/// A duration printed in plain nanoseconds (`889612544`).
pub(crate) fn nanos(text: &str) -> Option<u64> {
    decimal_scaled(text, 0)
}

/// A non-negative decimal number multiplied by 10^`scale` and rounded half up to an integer,
/// using integer arithmetic only (`"0.59"`, scale 3 → 590).
pub(crate) fn decimal_scaled(text: &str, scale: u32) -> Option<u64> {
    let d = decimal_at(text.as_bytes(), 0, scale)?;
    (d.end == text.len() && d.digits > 0).then_some(d.value)
}

/// A decimal number read where it starts in a line: [`decimal_at`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct Decimal {
    /// The number × 10^scale, rounded half up.
    pub value: u64,
    /// Where its digits end.
    pub end: usize,
    /// How many digits it has (none when it is empty or only a point).
    pub digits: usize,
    /// Whether it has a decimal point.
    pub point: bool,
}

/// The decimal number that starts at `at` of `b` (digits, then at most one `.` and digits;
/// it ends at any other byte), multiplied by 10^`scale` and rounded half up, with integer
/// arithmetic only. `None` when the value overflows.
// Inlined: `scale` is then a constant and the value stays in registers.
#[inline(always)]
pub(crate) fn decimal_at(b: &[u8], at: usize, scale: u32) -> Option<Decimal> {
    let rest = b.get(at..).unwrap_or_default();
    let digit = |i: usize| {
        let d = rest.get(i)?.wrapping_sub(b'0');
        (d <= 9).then_some(u64::from(d))
    };
    // The whole part, then the fraction's first `scale` digits, then the digit that rounds;
    // any digits after it only have to be digits. (Two plain loops: a per-byte state machine
    // was a twelfth of reading a transcript.) Nineteen digits always fit in a u64, so the
    // value is built unchecked and a longer number is read again with every step checked.
    let mut value: u64 = 0;
    let mut i = 0;
    while let Some(d) = digit(i) {
        value = value.wrapping_mul(10).wrapping_add(d);
        i += 1;
    }
    let whole = i;
    let mut digits = i;
    let mut have = 0;
    let mut round_up = false;
    let point = rest.get(i) == Some(&b'.');
    if point {
        i += 1;
        let first = i;
        while let Some(d) = digit(i) {
            if have < scale {
                value = value.wrapping_mul(10).wrapping_add(d);
                have += 1;
            } else if i - first == scale as usize {
                // The first dropped digit decides the rounding (half up).
                round_up = d >= 5;
            }
            i += 1;
        }
        digits += i - first;
    }
    if whole + have as usize > 19 {
        value = checked_value(rest, whole, have)?;
    }
    value = value.checked_mul(10u64.checked_pow(scale - have)?)?;
    if round_up {
        value = value.checked_add(1)?;
    }
    Some(Decimal {
        value,
        end: at + i,
        digits,
        point,
    })
}

/// The value [`decimal_at`] builds from the `whole` digits at the start of `rest` and the
/// first `have` digits after the point, each step checked for overflow.
#[cold]
fn checked_value(rest: &[u8], whole: usize, have: u32) -> Option<u64> {
    let fraction = rest.get(whole + 1..).unwrap_or_default();
    let mut kept = rest
        .get(..whole)?
        .iter()
        .chain(fraction.iter().take(have as usize));
    kept.try_fold(0u64, |value, &c| {
        value.checked_mul(10)?.checked_add(u64::from(c - b'0'))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The state machine the two-loop parser replaced: the reference it is held to.
    fn byte_by_byte(text: &str, scale: u32) -> Option<u64> {
        let mut value: u64 = 0;
        let mut digits = 0usize;
        let mut frac_digits: Option<u32> = None;
        let mut round_up = false;
        for &b in text.as_bytes() {
            match b {
                b'0'..=b'9' => {
                    digits += 1;
                    match frac_digits {
                        Some(f) if f == scale => {
                            // The first dropped digit decides the rounding (half up).
                            round_up = b >= b'5';
                            frac_digits = Some(f + 1);
                            continue;
                        }
                        Some(f) if f > scale => continue,
                        Some(f) => frac_digits = Some(f + 1),
                        None => {}
                    }
                    value = value.checked_mul(10)?.checked_add(u64::from(b - b'0'))?;
                }
                b'.' if frac_digits.is_none() => frac_digits = Some(0),
                _ => return None,
            }
        }
        if digits == 0 {
            return None;
        }
        let have = frac_digits.unwrap_or(0).min(scale);
        value = value.checked_mul(10u64.checked_pow(scale - have)?)?;
        if round_up {
            value = value.checked_add(1)?;
        }
        Some(value)
    }

    proptest::proptest! {
        /// Any text of digits, dots and a stray byte parses as the byte-by-byte reference
        /// does, at every scale.
        #[test]
        fn as_the_byte_by_byte_parser(picks in proptest::collection::vec(0usize..5, 0..30), scale in 0u32..12) {
            let text: String = picks.iter().map(|&i| ["1", "9", "0", ".", "x"][i]).collect();
            proptest::prop_assert_eq!(decimal_scaled(&text, scale), byte_by_byte(&text, scale), "{:?}", text);
        }
    }

    /// Numbers of more digits than are sure to fit, each side of the largest u64, at every
    /// scale that keeps some of their fraction.
    #[test]
    fn long_numbers_as_the_byte_by_byte_parser() {
        let texts = [
            "9999999999999999999",
            "99999999999999999999",
            "18446744073709551615",
            "18446744073709551616",
            "00000000000000000000000001",
            "1844674407370955161.5",
            "1844674407370955161.6",
            "184467440737095516.15",
            "0.00000000000000000000001",
            "12345678901234567.89012345",
        ];
        for text in texts {
            for scale in 0..6 {
                assert_eq!(
                    decimal_scaled(text, scale),
                    byte_by_byte(text, scale),
                    "{text:?} at scale {scale}"
                );
            }
        }
        assert_eq!(decimal_scaled("18446744073709551615", 0), Some(u64::MAX));
        assert_eq!(decimal_scaled("1844674407370955161.5", 1), Some(u64::MAX));
    }

    #[test]
    fn durations_are_exact() {
        assert_eq!(micros_as_ns("0.59us"), Some(590));
        assert_eq!(micros_as_ns("8360.34us"), Some(8_360_340));
        assert_eq!(micros_as_ns("41419293.63us"), Some(41_419_293_630));
        assert_eq!(micros_as_ns("1.2345us"), Some(1_235));
        assert_eq!(micros_as_ns("12us"), Some(12_000));
        assert_eq!(micros_as_ns("0.59"), None);
        assert_eq!(micros_as_ns("-1us"), None);
        assert_eq!(micros_as_ns(".us"), None);
        assert_eq!(micros_as_ns("1.2.3us"), None);
        assert_eq!(micros_as_ns("0.0005us"), Some(1));
        assert_eq!(micros_as_ns("0.0004999us"), Some(0));
        assert_eq!(decimal_scaled("5.", 2), Some(500));
        assert_eq!(nanos("889612544"), Some(889_612_544));
    }

    #[test]
    fn percents_and_counts() {
        assert_eq!(percent("98.17%"), Some(98.17));
        assert_eq!(percent("98.17"), None);
        assert_eq!(percent("%"), None);
        assert_eq!(percent("1%%"), None);
        // In place: the cell's end is where `%` must be last.
        let line = b"( +- 3.87% )";
        assert_eq!(percent_at(line, 5, 10), Some(3.87));
        assert_eq!(percent_at(line, 5, 11), None);
        assert_eq!(percent_at(line, 5, 9), None);
        for cell in [
            "98.17%", "0%", "100.005%", ".5%", "5.%", "%", "1%%", "98.17", "1.2.3%", "x%",
        ] {
            let whole = percent_at(cell.as_bytes(), 0, cell.len());
            assert_eq!(whole, percent(cell), "{cell:?}");
        }
        assert_eq!(count("67007"), Some(67007));
        assert_eq!(count("6700x"), None);
        assert_eq!(count(""), None);
        assert_eq!(count("99999999999999999999999"), None);
    }
}

//! Wall-clock timestamps as logging tools print them (`2024-03-01 10:15:07`, optionally with a
//! fraction `.894653`), turned into integer nanoseconds on a proleptic Gregorian clock without
//! a time zone: only differences between stamps of one input are ever used, and integers keep
//! them exact.

/// Nanoseconds since 1970-01-01 00:00:00 of `date` (`YYYY-MM-DD`) and `time`
/// (`HH:MM:SS[.frac]`, up to 9 fraction digits).
pub(crate) fn datetime(date: &str, time: &str) -> Option<i64> {
    let mut d = date.split('-');
    let year: i64 = digits(d.next()?, 4)?;
    let month: u32 = digits(d.next()?, 2)?;
    let day: u32 = digits(d.next()?, 2)?;
    if d.next().is_some() || !(1..=12).contains(&month) || !(1..=31).contains(&day) {
        return None;
    }
    let (hms, frac) = match time.split_once('.') {
        Some((hms, frac)) => (hms, Some(frac)),
        None => (time, None),
    };
    let mut t = hms.split(':');
    let h: u32 = digits(t.next()?, 2)?;
    let m: u32 = digits(t.next()?, 2)?;
    let s: u32 = digits(t.next()?, 2)?;
    if t.next().is_some() || h > 23 || m > 59 || s > 60 {
        return None;
    }
    let frac_ns: i64 = match frac {
        Some(f) if !f.is_empty() && f.len() <= 9 && f.bytes().all(|b| b.is_ascii_digit()) => {
            format!("{f:0<9}").parse().ok()?
        }
        Some(_) => return None,
        None => 0,
    };
    let seconds = days_from_civil(year, month, day)
        .checked_mul(86_400)?
        .checked_add(i64::from(h * 3600 + m * 60 + s))?;
    seconds.checked_mul(1_000_000_000)?.checked_add(frac_ns)
}

/// A fixed-width run of ASCII digits.
pub(super) fn digits<T: std::str::FromStr>(text: &str, width: usize) -> Option<T> {
    (text.len() == width && text.bytes().all(|b| b.is_ascii_digit()))
        .then(|| text.parse().ok())
        .flatten()
}

/// Days from 1970-01-01 to the given civil date (Howard Hinnant's algorithm).
fn days_from_civil(year: i64, month: u32, day: u32) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let m = i64::from(month);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(day) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn differences_are_right() {
        let a = datetime("2024-02-28", "23:59:58").unwrap_or(0);
        let b = datetime("2024-03-01", "00:00:01").unwrap_or(0);
        assert_eq!(b - a, 86_403_000_000_000);
        assert_eq!(datetime("1970-01-01", "00:00:00"), Some(0));
        let c = datetime("2022-04-22", "17:39:25.894653").unwrap_or(0);
        let d = datetime("2022-04-22", "17:39:26.894654").unwrap_or(0);
        assert_eq!(d - c, 1_000_001_000);
        assert_eq!(datetime("2022-4-22", "17:39:25"), None);
        assert_eq!(datetime("2022-04-22", "17:39"), None);
        assert_eq!(datetime("2022-13-22", "17:39:00"), None);
        assert_eq!(datetime("2022-12-22", "17:39:00.x"), None);
    }
}

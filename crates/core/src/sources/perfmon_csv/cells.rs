//! The cells of a PDH-CSV file other than counter paths: the header's first cell
//! (`(PDH-CSV 4.0) (Eastern Daylight Time)(240)`: format, time-zone name, bias in minutes west
//! of UTC), sample times (`MM/DD/YYYY HH:MM:SS.mmm`; esxtop drops the milliseconds), and
//! values (blank `" "` for a rate's first sample, plain or exponent numbers, a decimal comma
//! where a localized tool wrote one).

/// What the first header cell says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Banner {
    pub time_zone: Option<String>,
    pub bias_minutes: Option<i32>,
}

/// Parses the first header cell; `None` when it is not a PDH-CSV banner.
pub(super) fn banner(cell: &str) -> Option<Banner> {
    let t = cell.trim().trim_start_matches('\u{feff}');
    let rest = t.strip_prefix("(PDH-CSV")?;
    let rest = rest.trim_start();
    let rest = rest.get(rest.find(')')? + 1..)?.trim();
    // `(zone name)(bias)`: the bias is the last parenthesised group; the zone name may itself
    // hold parentheses (`(Paris, Madrid (heure d'été))`), so it is everything before it.
    let mut bias = None;
    let mut zone = rest;
    if let Some(open) = rest.rfind('(')
        && let Some(b) = rest[open + 1..]
            .strip_suffix(')')
            .and_then(|b| b.trim().parse::<i32>().ok())
    {
        bias = Some(b);
        zone = &rest[..open];
    }
    let zone = zone.trim();
    let zone = zone
        .strip_prefix('(')
        .map(|z| z.strip_suffix(')').unwrap_or(z))
        .unwrap_or(zone)
        .trim();
    Some(Banner {
        time_zone: (!zone.is_empty()).then(|| zone.to_string()),
        bias_minutes: bias,
    })
}

/// A sample time as seconds since 1970-01-01 of the clock it was written in (local time of
/// the header's zone); `None` when the text is not a time.
pub(super) fn time(cell: &str) -> Option<f64> {
    let t = cell.trim();
    let (date, clock) = t.split_once([' ', 'T'])?;
    let nums: Vec<&str> = date.split(['/', '.', '-']).collect();
    let [a, b, c] = nums.as_slice() else {
        return None;
    };
    let (a, b, c): (u32, u32, i64) = (a.parse().ok()?, b.parse().ok()?, c.parse().ok()?);
    let (year, month, day) = if a > 31 {
        (i64::from(a), b, c as u32) // YYYY-MM-DD
    } else if a > 12 {
        (c, b, a) // DD/MM/YYYY, only when the first number cannot be a month
    } else {
        (c, a, b) // MM/DD/YYYY, what PDH writes
    };
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) || !(1900..=9999).contains(&year) {
        return None;
    }
    let mut parts = clock.trim().split(':');
    let h: u32 = parts.next()?.parse().ok()?;
    let m: u32 = parts.next()?.parse().ok()?;
    let s: f64 = parts.next().unwrap_or("0").parse().ok()?;
    if parts.next().is_some() || h > 23 || m > 59 || !(0.0..61.0).contains(&s) {
        return None;
    }
    let days = days_from_civil(year, month, day);
    Some(days as f64 * 86_400.0 + f64::from(h * 3600 + m * 60) + s)
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = i64::from((m + 9) % 12);
    let doy = (153 * mp + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// A value cell.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Value {
    Number(f64),
    /// `" "` or empty: no sample.
    Blank,
    /// Not a number.
    Unreadable,
}

/// Parses a value cell.
pub(crate) fn value(cell: &str) -> Value {
    let t = cell.trim();
    if t.is_empty() {
        return Value::Blank;
    }
    let parsed = match t.parse::<f64>() {
        Ok(v) => Some(v),
        // A localized tool's decimal comma: one comma, no point.
        Err(_) if t.matches(',').count() == 1 && !t.contains('.') => {
            t.replacen(',', ".", 1).parse::<f64>().ok()
        }
        Err(_) => None,
    };
    match parsed {
        Some(v) if v.is_finite() => Value::Number(v),
        _ => Value::Unreadable,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn banners() {
        assert_eq!(
            banner("(PDH-CSV 4.0) (India Standard Time)(-330)"),
            Some(Banner {
                time_zone: Some("India Standard Time".into()),
                bias_minutes: Some(-330)
            })
        );
        assert_eq!(
            banner("(PDH-CSV 4.0)"),
            Some(Banner {
                time_zone: None,
                bias_minutes: None
            })
        );
        assert_eq!(
            banner("(PDH-CSV 4.0) (Paris, Madrid (heure d'été))(-120)").and_then(|b| b.time_zone),
            Some("Paris, Madrid (heure d'été)".into())
        );
        // A zone name cut short (seen in a Russian-localized log): kept, no bias.
        assert_eq!(
            banner("(PDH-CSV 4.0) (RTZ 2 ("),
            Some(Banner {
                time_zone: Some("RTZ 2 (".into()),
                bias_minutes: None
            })
        );
        assert_eq!(banner("Timestamp"), None);
    }

    #[test]
    fn times() {
        let a = time("09/19/2017 09:51:39.073").unwrap_or_default();
        let b = time("09/19/2017 09:51:54.050").unwrap_or_default();
        assert!((b - a - 14.977).abs() < 1e-6);
        assert_eq!(time("1970-01-02 00:00:00"), Some(86_400.0));
        assert_eq!(time("05/15/2018 02:13:06"), time("2018-05-15 02:13:06"));
        assert_eq!(time("25/12/2020 10:00:00"), time("12/25/2020 10:00:00"));
        for bad in [
            "",
            "hello",
            "13/13/2020 10:00:00",
            "01/01/2020 25:00:00",
            "01/01/2020",
        ] {
            assert_eq!(time(bad), None, "{bad}");
        }
    }

    #[test]
    fn values() {
        assert_eq!(value(" "), Value::Blank);
        assert_eq!(
            value("0.03208302352016136"),
            Value::Number(0.032_083_023_520_161_36)
        );
        assert_eq!(value("7.0625001143654654e"), Value::Unreadable);
        assert_eq!(value("1.5e3"), Value::Number(1500.0));
        assert_eq!(value("21,465"), Value::Number(21.465));
        assert_eq!(value("-1"), Value::Number(-1.0));
        assert_eq!(value("NaN"), Value::Unreadable);
    }
}

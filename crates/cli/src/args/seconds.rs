//! Durations on the command line: `10`, `10s`, `1.5m`, `500ms`, `250us`/`250µs`, `2h` — a
//! number of seconds, or a number with its unit, as users write them.

/// Seconds from `text`; an error names what was expected.
pub fn parse_seconds(text: &str) -> Result<f64, String> {
    let t = text.trim();
    let split = t
        .find(|c: char| {
            !(c.is_ascii_digit() || c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-')
        })
        .unwrap_or(t.len());
    let (number, unit) = t.split_at(split);
    let expected =
        || format!("expected a duration such as `10`, `10s`, `500ms` or `2m`, found `{text}`");
    if number.is_empty() {
        return Err(expected());
    }
    let scale = match unit.trim() {
        "" | "s" | "sec" | "secs" | "second" | "seconds" => 1.0,
        "ms" => 1e-3,
        "us" | "µs" => 1e-6,
        "ns" => 1e-9,
        "m" | "min" | "mins" | "minute" | "minutes" => 60.0,
        "h" | "hour" | "hours" => 3600.0,
        other => {
            return Err(format!(
                "`{other}` is not a unit of time: give seconds (`10`, `10s`) or `500ms`, `2m`, `1h`"
            ));
        }
    };
    let value: f64 = number.parse().map_err(|_| expected())?;
    let seconds = value * scale;
    if !(seconds.is_finite() && seconds > 0.0) {
        return Err(format!("a duration must be more than 0 (found `{text}`)"));
    }
    Ok(seconds)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds_with_and_without_units() {
        for (text, s) in [
            ("10", 10.0),
            ("10s", 10.0),
            ("1.5m", 90.0),
            ("500ms", 0.5),
            ("2h", 7200.0),
        ] {
            assert_eq!(parse_seconds(text), Ok(s), "{text}");
        }
        assert!((parse_seconds("250µs").unwrap_or(0.0) - 250e-6).abs() < 1e-12);
        assert!(parse_seconds("10 parsecs").is_err_and(|e| e.contains("not a unit")));
        assert!(parse_seconds("ten").is_err_and(|e| e.contains("expected a duration")));
        assert!(parse_seconds("0").is_err() && parse_seconds("-3s").is_err());
    }
}

//! The line shapes of `perf stat` output, as tools/perf/util/stat-display.c prints them: a
//! count right-aligned before the event name (`   1,234,567      kvm:kvm_exit`), the same after
//! an interval timestamp (`-I`), `<not counted>` / `<not supported>` in place of the count, the
//! `-x SEP` form (`count,unit,event,run time,percent,…`, the timestamp first with `-I`), the
//! `Performance counter stats for …` header and the `seconds time elapsed` footer.

use crate::sources::numbers;

/// What one row counted.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Value {
    Count(u64),
    /// `<not counted>`, `<not supported>`: printed in place of a count.
    Missing(&'static str),
}

/// One row: an event's value, after the interval timestamp (`-I`) in nanoseconds since the
/// start when there is one.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Row {
    pub stamp_ns: Option<u64>,
    pub value: Value,
    /// The event as printed (`kvm:kvm_exit`, `cycles`).
    pub event: String,
    /// A `-r N` run printed `( +- x% )`: the count is the mean of the runs.
    pub averaged: bool,
}

impl Row {
    /// A tracepoint (`group:name`).
    pub(super) fn tracepoint(&self) -> Option<(&str, &str)> {
        tracepoint(&self.event)
    }
}

/// `group:name` with both parts of tracepoint characters.
pub(super) fn tracepoint(event: &str) -> Option<(&str, &str)> {
    let (group, name) = event.split_once(':')?;
    let word = |s: &str| {
        !s.is_empty()
            && s.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
    };
    (word(group) && word(name)).then_some((group, name))
}

/// `Performance counter stats for 'system wide':` → `system wide` (what was counted).
pub(super) fn header(t: &str) -> Option<String> {
    let rest = t.trim().strip_prefix("Performance counter stats for")?;
    let rest = rest.trim().trim_end_matches(':').trim();
    let quoted = |q: char| rest.len() >= 2 && rest.starts_with(q) && rest.ends_with(q);
    let scope = if quoted('\'') || quoted('"') {
        rest.get(1..rest.len() - 1).unwrap_or(rest)
    } else {
        rest
    };
    Some(scope.to_string())
}

/// `   10.010339406 seconds time elapsed` (also `+- 0.01` with `-r`) → nanoseconds.
pub(super) fn elapsed(t: &str) -> Option<u64> {
    let t = t.trim();
    let rest = t.strip_suffix("seconds time elapsed").or_else(|| {
        let at = t.find("seconds time elapsed")?;
        t.get(at..)?.contains("( +-").then(|| t.get(..at))?
    })?;
    let first = rest.split_whitespace().next()?;
    numbers::decimal_scaled(first, 9)
}

/// `seconds user`, `seconds sys`, the `-I` column header, comment lines: lines of perf stat
/// that carry no count.
pub(super) fn chatter(t: &str) -> bool {
    let t = t.trim();
    t.ends_with("seconds user")
        || t.ends_with("seconds sys")
        || (t.starts_with('#') && t.contains("time") && t.contains("counts"))
        || t.starts_with("Some events weren't counted")
        || t.starts_with("echo 0 > ")
}

/// A count as perf prints it: digits, with thousands separators (`,`, or `.` / `'` in other
/// locales) in groups of three.
pub(super) fn count(text: &str) -> Option<u64> {
    if let Some(n) = numbers::count(text) {
        return Some(n);
    }
    let sep = text.bytes().find(|b| !b.is_ascii_digit())?;
    if !matches!(sep, b',' | b'.' | b'\'') {
        return None;
    }
    let mut groups = text.split(sep as char);
    let first = groups.next()?;
    if first.is_empty() || first.len() > 3 || !first.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let mut digits = first.to_string();
    for g in groups {
        if g.len() != 3 || !g.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        digits.push_str(g);
    }
    digits.parse().ok()
}

/// A count, or a software event's measure with decimals (`12,380.16` msec of task-clock: the
/// whole part; such rows are not read as counts, only known to be rows).
fn measure(text: &str) -> Option<u64> {
    count(text).or_else(|| {
        let (whole, frac) = text.rsplit_once('.')?;
        (!frac.is_empty() && frac.len() <= 2 && frac.bytes().all(|b| b.is_ascii_digit()))
            .then(|| count(whole))?
    })
}

/// An interval timestamp (`     1.000141995`) as nanoseconds.
fn stamp(text: &str) -> Option<u64> {
    let (whole, frac) = text.split_once('.')?;
    (!whole.is_empty() && frac.len() >= 3).then_some(())?;
    numbers::decimal_scaled(text, 9)
}

fn missing(text: &str) -> Option<&'static str> {
    match text {
        "<not counted>" => Some("not counted"),
        "<not supported>" => Some("not supported"),
        _ => None,
    }
}

/// A row in perf's own layout, `-I` or not.
pub(super) fn plain(t: &str) -> Option<Row> {
    let mut rest = t.trim_start();
    let mut stamp_ns = None;
    let first = rest.split_whitespace().next()?;
    if first.contains('.')
        && let Some(ns) = stamp(first)
        && rest
            .get(first.len()..)?
            .trim_start()
            .starts_with(|c: char| c.is_ascii_digit() || c == '<')
    {
        stamp_ns = Some(ns);
        rest = rest.get(first.len()..)?.trim_start();
    }
    let (value, rest) = if let Some(after) = rest.strip_prefix("<not counted>") {
        (Value::Missing("not counted"), after)
    } else if let Some(after) = rest.strip_prefix("<not supported>") {
        (Value::Missing("not supported"), after)
    } else {
        let word = rest.split_whitespace().next()?;
        (Value::Count(measure(word)?), rest.get(word.len()..)?)
    };
    let mut words = rest.split_whitespace();
    let mut event = words.next()?;
    // A unit column (`msec`) sits between the count and the event for software events.
    if tracepoint(event).is_none()
        && let Some(next) = words.clone().next()
        && !next.starts_with(['#', '('])
    {
        event = words.next()?;
    }
    if event.starts_with(['#', '(']) {
        return None;
    }
    let tail: Vec<&str> = words.collect();
    // After the event only a comment (`# 3.481 K/sec`), a multiplexing share `(50.00%)` or a
    // `-r` spread `( +- 1.2% )` may follow.
    let ok_tail = tail
        .first()
        .is_none_or(|w| w.starts_with('#') || w.starts_with('('));
    if !ok_tail {
        return None;
    }
    let averaged = tail.windows(2).any(|w| w[0] == "(" && w[1] == "+-")
        || tail.iter().any(|w| w.starts_with("(+-"));
    Some(Row {
        stamp_ns,
        value,
        event: event.to_string(),
        averaged,
    })
}

/// A row of `-x SEP` output (`sep` one of `,` `;` `:`… any char perf was given): `count,unit,
/// event,…`, or with `-I` `stamp,count,unit,event,…`.
pub(super) fn separated(t: &str, sep: char) -> Option<Row> {
    let fields: Vec<&str> = t.trim().split(sep).collect();
    let at = fields.iter().position(|f| tracepoint(f.trim()).is_some())?;
    let (value_at, stamp_ns) = match at {
        2 => (0, None),
        3 => (1, Some(stamp(fields.first()?.trim())?)),
        _ => return None,
    };
    let raw = fields.get(value_at)?.trim();
    let value = match missing(raw) {
        Some(m) => Value::Missing(m),
        None => Value::Count(count(raw).or_else(|| numbers::count(raw.split('.').next()?))?),
    };
    Some(Row {
        stamp_ns,
        value,
        event: fields.get(at)?.trim().to_string(),
        averaged: false,
    })
}

/// The separator of a `-x` line holding a tracepoint, when the line has that shape.
pub(super) fn separator(t: &str) -> Option<char> {
    [',', ';', '\t', '|']
        .into_iter()
        .find(|&c| t.matches(c).count() >= 2 && separated(t, c).is_some())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_rows_of_every_shape() {
        let r =
            plain("         1,234,567      kvm:kvm_exit                                 ").unwrap();
        assert_eq!(
            (r.value, r.event.as_str()),
            (Value::Count(1_234_567), "kvm:kvm_exit")
        );
        let r = plain("     1.000141995            2,744      kvm:kvm_pio").unwrap();
        assert_eq!(r.stamp_ns, Some(1_000_141_995));
        assert_eq!(r.value, Value::Count(2744));
        let r = plain("   <not counted>      kvm:kvm_msr    (0.00%)").unwrap();
        assert_eq!(r.value, Value::Missing("not counted"));
        let r = plain("         12,380.16 msec task-clock   #    1.031 CPUs utilized").unwrap();
        assert_eq!(r.event, "task-clock");
        assert_eq!(
            header("Performance counter stats for process id '49399':").as_deref(),
            Some("process id '49399'")
        );
        assert_eq!(
            header("Performance counter stats for 'system wide':").as_deref(),
            Some("system wide")
        );
        assert!(plain("   10.010339406 seconds time elapsed").is_none());
        assert_eq!(
            elapsed("      10.010339406 seconds time elapsed"),
            Some(10_010_339_406)
        );
        assert_eq!(count("1.234.567"), Some(1_234_567));
        assert_eq!(count("1,23"), None);
    }

    #[test]
    fn separated_rows() {
        let r = separated("3358451,,kvm:kvm_exit,107488359198,100.00,,", ',').unwrap();
        assert_eq!(r.value, Value::Count(3_358_451));
        let r = separated("1.000141995,<not counted>,,kvm:kvm_msr,0,0.00,,", ',').unwrap();
        assert_eq!(r.value, Value::Missing("not counted"));
        assert_eq!(separator("5;;kvm:kvm_exit;1000;100.00;;"), Some(';'));
    }
}

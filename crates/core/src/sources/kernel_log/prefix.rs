//! The prefixes a kernel log line carries before the kernel's own message: `dmesg`'s
//! `[ 12345.678901] ` (seconds since boot, with or without a `[ T123]`/`[ C1]` caller id),
//! `dmesg -T`'s `[Sat Nov 28 10:00:00 2026] `, syslog's and `journalctl -k`'s
//! `Nov 28 10:00:00 host kernel: ` (and the ISO 8601 stamp of `journalctl -o short-iso` and
//! rsyslog), each possibly followed by the monotonic stamp again. A line without any of them
//! is taken as it is (a pasted message).

/// When a line was logged, as far as its prefix says.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Stamp {
    /// Seconds since boot (`dmesg`, `journalctl -o short-monotonic`).
    Boot(f64),
    /// Seconds into the year of a wall-clock stamp (`dmesg -T`, syslog, journalctl): enough
    /// to tell the span of a log that does not cross a new year.
    Wall(f64),
}

/// A line split into its prefix's stamp (when it had one) and the kernel's message.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Split<'a> {
    pub stamp: Option<Stamp>,
    /// Whether a kernel-log prefix was found.
    pub prefixed: bool,
    pub body: &'a str,
}

const MONTHS: [&str; 12] = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];
const DAYS: [&str; 7] = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"];
/// Days before each month (a non-leap year: spans are told within days, not calendars).
const BEFORE: [u32; 12] = [0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334];

/// Splits `line` into its stamp and message.
pub(super) fn split(line: &str) -> Split<'_> {
    let t = line.trim_start();
    let mut stamp = None;
    let mut prefixed = false;
    let mut rest = t;
    if let Some((s, r)) = bracket_boot(rest) {
        stamp = Some(Stamp::Boot(s));
        prefixed = true;
        rest = r;
    } else if let Some((s, r)) = bracket_wall(rest) {
        stamp = Some(Stamp::Wall(s));
        prefixed = true;
        rest = r;
    } else if let Some((s, r)) = syslog(rest).or_else(|| iso(rest)) {
        stamp = Some(Stamp::Wall(s));
        prefixed = true;
        rest = r;
    }
    // journalctl -o short-monotonic: `[ 12.345678] host kernel: ...`.
    if matches!(stamp, Some(Stamp::Boot(_)))
        && let Some(r) = host_kernel(rest)
    {
        rest = r;
    }
    // The monotonic stamp syslog keeps inside the message, and caller ids.
    loop {
        let r = rest.trim_start();
        if let Some((s, after)) = bracket_boot(r) {
            if !matches!(stamp, Some(Stamp::Boot(_))) {
                stamp = Some(Stamp::Boot(s));
            }
            prefixed = true;
            rest = after;
        } else if let Some(after) = caller_id(r) {
            rest = after;
        } else {
            rest = r;
            break;
        }
    }
    Split {
        stamp,
        prefixed,
        body: rest.trim_end(),
    }
}

/// `[ 12345.678901] ` → seconds.
fn bracket_boot(t: &str) -> Option<(f64, &str)> {
    let inner = t.strip_prefix('[')?;
    let (num, rest) = inner.split_once(']')?;
    let num = num.trim();
    let (whole, frac) = num.split_once('.')?;
    if whole.is_empty()
        || !whole.bytes().all(|b| b.is_ascii_digit())
        || frac.is_empty()
        || !frac.bytes().all(|b| b.is_ascii_digit())
    {
        return None;
    }
    Some((num.parse().ok()?, rest))
}

/// `[    T123] ` or `[  C1] ` (CONFIG_PRINTK_CALLER) → the rest.
fn caller_id(t: &str) -> Option<&str> {
    let inner = t.strip_prefix('[')?;
    let (id, rest) = inner.split_once(']')?;
    let id = id.trim();
    let digits = id.strip_prefix('T').or_else(|| id.strip_prefix('C'))?;
    (!digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())).then_some(rest)
}

/// `[Sat Nov 28 10:00:00 2026] ` → seconds into the year.
fn bracket_wall(t: &str) -> Option<(f64, &str)> {
    let inner = t.strip_prefix('[')?;
    let (stamp, rest) = inner.split_once(']')?;
    let mut f = stamp.split_whitespace();
    let day = f.next()?;
    if !DAYS.contains(&day) {
        return None;
    }
    let secs = month_day_time(f.next()?, f.next()?, f.next()?)?;
    let year = f.next()?;
    (year.len() == 4 && year.bytes().all(|b| b.is_ascii_digit()) && f.next().is_none())
        .then_some((secs, rest))
}

/// `Nov 28 10:00:00 host kernel: ` → seconds into the year.
fn syslog(t: &str) -> Option<(f64, &str)> {
    let mut parts = t.splitn(4, char::is_whitespace).filter(|s| !s.is_empty());
    let month = parts.next()?;
    if !MONTHS.contains(&month) {
        return None;
    }
    // Days are padded with a space (`Nov  1`): take the words one by one.
    let after_month = t.get(month.len()..)?.trim_start();
    let (day, r) = after_month.split_once(' ')?;
    let r = r.trim_start();
    let (time, r) = r.split_once(' ')?;
    let secs = month_day_time(month, day, time)?;
    Some((secs, host_kernel(r)?))
}

/// `2026-06-13T15:27:19.694458+01:00 host kernel: ` → seconds into the year.
fn iso(t: &str) -> Option<(f64, &str)> {
    let (stamp, r) = t.split_once(' ')?;
    let (date, time) = stamp.split_once('T')?;
    let mut d = date.split('-');
    let (_, m, day) = (d.next()?, d.next()?, d.next()?);
    let m: usize = m.parse().ok()?;
    let month = MONTHS.get(m.checked_sub(1)?)?;
    let end = time.find(['+', 'Z', '-']).unwrap_or(time.len());
    let secs = month_day_time(month, day, &time[..end])?;
    Some((secs, host_kernel(r)?))
}

/// `host kernel: ` → the rest (the host name is one word).
fn host_kernel(t: &str) -> Option<&str> {
    let (host, r) = t.trim_start().split_once(' ')?;
    if host.is_empty() || host.contains(':') {
        return None;
    }
    r.strip_prefix("kernel:")
}

fn month_day_time(month: &str, day: &str, time: &str) -> Option<f64> {
    let m = MONTHS.iter().position(|x| *x == month)?;
    let day: u32 = day.parse().ok().filter(|d| (1..=31).contains(d))?;
    let mut hms = time.split(':');
    let h: u32 = hms.next()?.parse().ok().filter(|h| *h < 24)?;
    let min: u32 = hms.next()?.parse().ok().filter(|m| *m < 60)?;
    let s: f64 = hms
        .next()?
        .parse()
        .ok()
        .filter(|s: &f64| (0.0..61.0).contains(s))?;
    if hms.next().is_some() {
        return None;
    }
    let days = BEFORE.get(m)? + day - 1;
    Some(f64::from(days * 86_400 + h * 3600 + min * 60) + s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_prefix() {
        let s = split("[  319.406575] kvm [2415]: vcpu0 unhandled rdmsr: 0x1c9");
        assert_eq!(s.stamp, Some(Stamp::Boot(319.406575)));
        assert_eq!(s.body, "kvm [2415]: vcpu0 unhandled rdmsr: 0x1c9");
        let s = split("[Thu Mar 25 00:50:20 2021] watchdog: BUG: soft lockup");
        assert!(matches!(s.stamp, Some(Stamp::Wall(_))));
        assert_eq!(s.body, "watchdog: BUG: soft lockup");
        let s = split("Sep 04 22:56:17 PC kernel: kvm_amd: kvm [67539]: vcpu3");
        assert!(s.prefixed);
        assert_eq!(s.body, "kvm_amd: kvm [67539]: vcpu3");
        let s = split("Apr 13 12:28:25 diamond kernel: [T175479] x86/split lock detection: x");
        assert_eq!(s.body, "x86/split lock detection: x");
        let s = split("Jan 13 00:03:50 ubuntu kernel: [  153.076519] kvm [2154]: vcpu0");
        assert_eq!(s.body, "kvm [2154]: vcpu0");
        let s = split("2026-06-13T15:27:19.694458+01:00 calypso kernel: x86/split lock");
        assert!(matches!(s.stamp, Some(Stamp::Wall(_))));
        assert_eq!(s.body, "x86/split lock");
        let s = split("[    1.000000][    T1] x86/split lock detection: y");
        assert_eq!(s.body, "x86/split lock detection: y");
        let s = split("kvm: disabled by bios");
        assert!(!s.prefixed);
        assert_eq!(s.body, "kvm: disabled by bios");
        // Not prefixes.
        assert!(!split("[abc] x").prefixed);
        assert!(!split("May the force kernel: x").prefixed);
    }
}

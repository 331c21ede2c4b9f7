//! Numbers in words for causes and titles: a row as "EPT_MISCONFIG: 893,519 exits (72.2%),
//! 5.808 s (88.5%), 6.50 µs each", rates, shares. Formatting only; the numbers come from
//! [`super::view`].

use super::view::{Part, VRow};
use crate::render::format;

/// `12.3%`.
pub fn pct(share: f64) -> String {
    format::share(share)
}

/// `1,238,237`.
pub fn count(n: u64) -> String {
    format::count(n)
}

/// One row with its numbers: key (and decoded name), count and share, time and share, mean,
/// rate — as far as the input knows them.
pub fn row(part: &Part, r: &VRow) -> String {
    let e = part.evidence(r);
    let mut key = e.key.clone();
    if let Some(a) = e.access {
        key.push(' ');
        key.push_str(a);
    }
    if let Some(n) = &e.name {
        key.push_str(&format!(" ({n})"));
    }
    let unit = if part.from_counters { "" } else { " exits" };
    let mut s = format!("{key}: {}{unit}", count(e.count));
    if let Some(c) = e.count_share {
        s.push_str(&format!(" ({})", pct(c)));
    }
    if let (Some(t), Some(ts)) = (e.time_ns, e.time_share) {
        s.push_str(&format!(
            ", {} ({} of the time)",
            format::duration(t as f64),
            pct(ts)
        ));
    }
    if let Some(m) = e.mean_ns {
        s.push_str(&format!(", {} each", format::duration(m)));
    }
    if let Some(r) = e.per_second {
        s.push_str(&format!(", {}", format::rate(r)));
    }
    s
}

/// Several rows, `; `-separated.
pub fn rows(part: &Part, rs: &[&VRow]) -> String {
    rs.iter()
        .map(|r| row(part, r))
        .collect::<Vec<_>>()
        .join("; ")
}

/// `4,037/s`.
pub fn rate(per_s: f64) -> String {
    format::rate(per_s)
}

/// A duration in ns, in the unit that reads best.
pub fn duration(ns: f64) -> String {
    format::duration(ns)
}

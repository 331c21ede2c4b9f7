//! Number formatting shared by the text renderers: counts with thousands separators,
//! durations in the unit that reads best, percentages and signed changes.

use crate::decode::Isa;
use crate::profile::TableKind;

/// What a table of `kind` holds, for titles: `VM exits (VMX)`, `IO port accesses`, ….
pub(crate) fn kind_title(kind: &TableKind, isa: Option<Isa>) -> String {
    match kind {
        TableKind::Vmexit => match isa {
            Some(isa) => format!("VM exits ({})", isa.as_str().to_uppercase()),
            None => "VM exits".to_string(),
        },
        TableKind::Ioport => "IO port accesses".to_string(),
        TableKind::Mmio => "MMIO accesses".to_string(),
        TableKind::Msr => "MSR accesses".to_string(),
        TableKind::Events => "every event, by name".to_string(),
        TableKind::UserspaceExit => "returns to the VMM (kvm_userspace_exit)".to_string(),
        TableKind::Hypercall => "hypercalls".to_string(),
        TableKind::GuestRip => "exits by guest code".to_string(),
        other => format!("{other} events"),
    }
}

/// The width text renderers wrap prose at.
pub(crate) const WIDTH: usize = 100;

/// `text` wrapped at [`WIDTH`], continuation lines indented by `indent`; ends with a newline.
/// Runs of spaces (alignment) are kept.
pub(crate) fn wrap(text: &str, indent: usize) -> String {
    let mut out = String::new();
    let mut tokens = text.split(' ');
    let mut line = tokens.next().unwrap_or("").to_string();
    for t in tokens {
        let len = line.chars().count();
        if !t.is_empty() && len > indent && len + 1 + t.chars().count() > WIDTH {
            out.push_str(line.trim_end());
            out.push('\n');
            line = format!("{}{t}", " ".repeat(indent));
        } else {
            line.push(' ');
            line.push_str(t);
        }
    }
    out.push_str(line.trim_end());
    out.push('\n');
    out
}

/// `1238237` → `1,238,237`.
pub fn count(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A size in bytes, in binary units: `512 B`, `64 KiB`, `16 MiB`, `1.5 GiB`.
pub fn bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = n as f64;
    let mut unit = 0;
    while v >= 1024.0 && unit + 1 < UNITS.len() {
        v /= 1024.0;
        unit += 1;
    }
    if unit == 0 || v.fract() == 0.0 {
        format!("{v:.0} {}", UNITS[unit])
    } else {
        format!("{v:.1} {}", UNITS[unit])
    }
}

/// A duration in ns, in ns, µs, ms or s.
pub fn duration(ns: f64) -> String {
    if ns < 1_000.0 {
        format!("{ns:.0} ns")
    } else if ns < 1_000_000.0 {
        format!("{:.2} µs", ns / 1e3)
    } else if ns < 1_000_000_000.0 {
        format!("{:.2} ms", ns / 1e6)
    } else {
        format!("{:.3} s", ns / 1e9)
    }
}

/// An optional duration; `-` when unknown.
pub(crate) fn opt_duration(ns: Option<f64>) -> String {
    ns.map_or_else(|| "-".to_string(), duration)
}

/// A share (0–1) as a percentage.
pub(crate) fn share(s: f64) -> String {
    format!("{:.1}%", s * 100.0)
}

/// A change in percent with its sign (`+326%`, `−100%`); `new` when the thing appeared.
pub(crate) fn change(pct: Option<f64>, appeared: bool) -> String {
    match pct {
        Some(p) if p.abs() < 0.5 => "±0%".to_string(),
        Some(p) if p < 0.0 => format!("−{:.0}%", -p),
        Some(p) => format!("+{p:.0}%"),
        None if appeared => "new".to_string(),
        None => "-".to_string(),
    }
}

/// Events per IO: two decimals, more below 0.1 so that small figures keep two significant
/// digits (`0.0019`), at most six; zero is `0`.
pub(crate) fn per_io(v: f64) -> String {
    if !v.is_finite() || v <= 0.0 {
        return if v == 0.0 { "0".into() } else { format!("{v}") };
    }
    let magnitude = v.log10().floor() as i32;
    let decimals = (1 - magnitude).clamp(2, 6) as usize;
    format!("{v:.decimals$}")
}

/// A rate per second.
pub fn rate(per_s: f64) -> String {
    if per_s >= 100.0 {
        format!("{}/s", count(per_s.round() as u64))
    } else {
        format!("{per_s:.1}/s")
    }
}

/// A counter value: thousands separators from 1,000 on, fewer decimals as it grows.
pub(crate) fn value(v: f64) -> String {
    let a = v.abs();
    let sign = if v < 0.0 { "-" } else { "" };
    if a >= 1_000.0 {
        format!("{sign}{}", count(a.round() as u64))
    } else if a >= 100.0 {
        format!("{v:.1}")
    } else if a >= 1.0 || a == 0.0 {
        format!("{v:.3}")
    } else {
        format!("{v:.4}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats() {
        assert_eq!(count(1_238_237), "1,238,237");
        assert_eq!(bytes(512), "512 B");
        assert_eq!(bytes(16 << 20), "16 MiB");
        assert_eq!(bytes(3 << 29), "1.5 GiB");
        assert_eq!(count(999), "999");
        assert_eq!(per_io(0.25), "0.25");
        assert_eq!(per_io(2.048), "2.05");
        assert_eq!(per_io(0.0019), "0.0019");
        assert_eq!(per_io(0.05), "0.050");
        assert_eq!(per_io(0.0), "0");
        assert_eq!(duration(590.0), "590 ns");
        assert_eq!(duration(6_500.0), "6.50 µs");
        assert_eq!(duration(6_563_955_390.0), "6.564 s");
        assert_eq!(change(Some(-100.0), false), "−100%");
        assert_eq!(change(Some(326.4), false), "+326%");
        assert_eq!(change(None, true), "new");
    }
}

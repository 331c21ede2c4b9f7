//! The lines of the bhyve VM-exit DTrace summary (illumos bhyve, as printed by propolis'
//! `scripts/vm-exit-codes.d`), from the script's `printf`/`printa` formats:
//!
//! - banner `=== Exit summary, one second ending at %Y ===`, one per second;
//! - `  %8s  %s` header (`SVM code  Count`), then `  %8x  %@8u` rows: SVM exit code in hex,
//!   count;
//! - `IOIO SVM exits:`, header `Port Op OpSz Addr Count`, rows `  %4x  %3s  %4s  %4s  %@5d`:
//!   port in hex, `in`/`out`, operand size, address size, count;
//! - `NPF SVM exits:`, header `Guest PA  Guest RIP  #PF flags  Count`, rows
//!   `  %16x  %16x  %5s%s%s%s%s  %@8u`: guest-physical address, guest RIP, five flag letters
//!   (instruction/data, reserved bit, user/supervisor, write/read, present), count;
//! - `vm_run() VM_EXITCODE_BOGUS reasons:`, rows `  %20s %@8u`: reason, count;
//! - `Exits this script did not understand: %d`.

use crate::profile::Access;
use crate::sources::numbers;

/// The part of a summary a line opens.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Section {
    Exits,
    Ioio,
    Npf,
    Bogus,
}

/// What a line of the summary is.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Line<'a> {
    /// `=== Exit summary, one second ending at … ===`: a new second; the stamp.
    Banner(&'a str),
    /// A section's title or column header: the rows that follow belong to it.
    Opens(Section),
    /// A column header of the current section (after its title).
    Header,
    /// `Exits this script did not understand: N`.
    NotUnderstood(u64),
}

const BANNER: &str = "=== Exit summary, one second ending at ";

/// Classifies a trimmed line that is not a row.
pub(super) fn line(t: &str) -> Option<Line<'_>> {
    if let Some(rest) = t.strip_prefix(BANNER) {
        return Some(Line::Banner(rest.trim_end_matches('=').trim()));
    }
    let words: Vec<&str> = t.split_whitespace().collect();
    match words.as_slice() {
        ["SVM", "code", "Count"] => Some(Line::Opens(Section::Exits)),
        ["IOIO", "SVM", "exits:"] => Some(Line::Opens(Section::Ioio)),
        ["NPF", "SVM", "exits:"] => Some(Line::Opens(Section::Npf)),
        ["vm_run()", "VM_EXITCODE_BOGUS", "reasons:"] => Some(Line::Opens(Section::Bogus)),
        ["Port", "Op", "OpSz", "Addr", "Count"]
        | ["Guest", "PA", "Guest", "RIP", "#PF", "flags", "Count"] => Some(Line::Header),
        ["Exits", "this", "script", "did", "not", "understand:", n] => {
            numbers::count(n).map(Line::NotUnderstood)
        }
        _ => None,
    }
}

/// Where a banner that has more text after its closing `===` on its line ends.
pub(super) fn banner_end(t: &str) -> Option<usize> {
    let start = t.find(BANNER)?;
    let after = start + BANNER.len();
    let close = t[after..].find("===")? + after;
    let end = close + t[close..].bytes().take_while(|&b| b == b'=').count();
    (!t[end..].trim().is_empty()).then_some(end)
}

/// Whether `t` is the banner or the exit-code header (what detection looks for).
pub(super) fn signature(t: &str) -> bool {
    matches!(
        line(t.trim()),
        Some(Line::Banner(_) | Line::Opens(Section::Exits))
    )
}

/// A row read from a section.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Row {
    Exit {
        code: u64,
        count: u64,
    },
    Port {
        port: u64,
        access: Access,
        count: u64,
    },
    Npf {
        gpa: u64,
        access: Option<Access>,
        count: u64,
    },
    Bogus {
        reason: String,
        count: u64,
    },
}

impl Row {
    pub(super) fn count(&self) -> u64 {
        match self {
            Row::Exit { count, .. }
            | Row::Port { count, .. }
            | Row::Npf { count, .. }
            | Row::Bogus { count, .. } => *count,
        }
    }
}

fn hex(text: &str, what: &str) -> Result<u64, String> {
    let digits = text.strip_prefix("0x").unwrap_or(text);
    if digits.is_empty() || digits.len() > 16 || !digits.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(format!("expected {what} in hex, found `{text}`"));
    }
    u64::from_str_radix(digits, 16).map_err(|e| format!("{what} `{text}`: {e}"))
}

fn count(text: &str) -> Result<u64, String> {
    numbers::count(text).ok_or_else(|| format!("expected a count, found `{text}`"))
}

fn columns<'a>(t: &'a str, n: usize, layout: &str) -> Result<Vec<&'a str>, String> {
    let words: Vec<&str> = t.split_whitespace().collect();
    if words.len() == n {
        Ok(words)
    } else {
        Err(format!(
            "expected {n} columns ({layout}), found {}",
            words.len()
        ))
    }
}

/// The row of section `s` on trimmed line `t`, or why it cannot be read.
pub(super) fn row(s: Section, t: &str) -> Result<Row, String> {
    match s {
        Section::Exits => {
            let w = columns(t, 2, "SVM code, count")?;
            Ok(Row::Exit {
                code: hex(w[0], "an SVM exit code")?,
                count: count(w[1])?,
            })
        }
        Section::Ioio => {
            let w = columns(t, 5, "port, op, operand size, address size, count")?;
            let port = hex(w[0], "a port")?;
            if port > 0xffff {
                return Err(format!("port `{}` is beyond 0xffff", w[0]));
            }
            let access = match w[1] {
                "in" => Access::In,
                "out" => Access::Out,
                other => return Err(format!("expected `in` or `out`, found `{other}`")),
            };
            Ok(Row::Port {
                port,
                access,
                count: count(w[4])?,
            })
        }
        Section::Npf => {
            let w = columns(t, 4, "guest PA, guest RIP, #PF flags, count")?;
            let gpa = hex(w[0], "a guest-physical address")?;
            hex(w[1], "a guest RIP")?;
            Ok(Row::Npf {
                gpa,
                access: npf_access(w[2])?,
                count: count(w[3])?,
            })
        }
        Section::Bogus => {
            let w = columns(t, 2, "reason, count")?;
            if !w[0].bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
                return Err(format!("`{}` is not a reason's name", w[0]));
            }
            Ok(Row::Bogus {
                reason: w[0].to_string(),
                count: count(w[1])?,
            })
        }
    }
}

/// The access of a nested page fault from its five flag letters: `[ID][R-][US][WR][P-]`; an
/// instruction fetch is a read.
fn npf_access(flags: &str) -> Result<Option<Access>, String> {
    let f = flags.as_bytes();
    let valid = f.len() == 5
        && matches!(f[0], b'I' | b'D')
        && matches!(f[1], b'R' | b'-')
        && matches!(f[2], b'U' | b'S')
        && matches!(f[3], b'W' | b'R')
        && matches!(f[4], b'P' | b'-');
    if !valid {
        return Err(format!(
            "expected five #PF flags ([ID][R-][US][WR][P-]), found `{flags}`"
        ));
    }
    Ok(Some(if f[3] == b'W' {
        Access::Write
    } else {
        Access::Read
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_banner_joined_with_the_header_ends_after_its_equals_signs() {
        let banner = "=== Exit summary, one second ending at 2025 Feb 14 23:47:33 ===";
        assert_eq!(
            banner_end(&format!("{banner}  SVM code  Count")),
            Some(banner.len())
        );
        assert_eq!(banner_end(banner), None);
    }

    #[test]
    fn rows_of_each_section() {
        assert_eq!(
            row(Section::Exits, "7b      2611"),
            Ok(Row::Exit {
                code: 0x7b,
                count: 2611
            })
        );
        assert_eq!(
            row(Section::Ioio, "b008   in   32b   64b   2611"),
            Ok(Row::Port {
                port: 0xb008,
                access: Access::In,
                count: 2611
            })
        );
        assert_eq!(
            row(
                Section::Npf,
                "fee00300  ffffffffa8065029      D-UR-         8"
            ),
            Ok(Row::Npf {
                gpa: 0xfee0_0300,
                access: Some(Access::Read),
                count: 8
            })
        );
        assert!(row(Section::Npf, "fee00300  ffffffffa8065029  DXUR-  8").is_err());
        assert!(row(Section::Ioio, "1b008 in 32b 64b 1").is_err());
        assert!(row(Section::Exits, "7b").is_err());
    }

    #[test]
    fn lines_and_signature() {
        assert_eq!(
            line("=== Exit summary, one second ending at 2025 Feb 14 23:47:33 ==="),
            Some(Line::Banner("2025 Feb 14 23:47:33"))
        );
        assert!(signature("  SVM code  Count"));
        assert!(!signature("  Port   Op  OpSz  Addr  Count"));
        assert_eq!(
            line("Exits this script did not understand: 3"),
            Some(Line::NotUnderstood(3))
        );
    }
}

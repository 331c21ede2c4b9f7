//! The lines of a `xenalyze` summary that this reader uses, and the exit-reason names xenalyze
//! prints, mapped to their hardware codes (tools/xentrace/xenalyze.c: VMX basic exit reasons
//! of the Intel SDM under xenalyze's own spellings, and AMD's `VMEXIT_*` exit codes), so that
//! the exits key as the same reasons a `perf kvm stat` table would.
//!
//! An exit-reason row is `PRINT_SUMMARY`'s ` %-20s  %7d %5.2lfs %5.2lf%% %5lld cyc` with, when
//! xenalyze sampled, ` {p5|p50|p95}` after it: name, count, seconds (cycles at the cpu speed
//! xenalyze assumes), percent of the whole trace, mean cycles. A reason without a name prints
//! its number instead (` %20d `).

use crate::decode::Isa;

/// A line of the summary this reader acts on.
#[derive(Debug, PartialEq)]
pub(crate) enum Line<'a> {
    /// `Using VMX hardware-assisted virtualization.` (or SVM).
    Isa(Isa),
    /// `Total time: 7.49 seconds (using cpu speed 2.40 GHz)`: seconds, GHz.
    Total { seconds: f64, ghz: Option<f64> },
    /// `|-- Domain 0 --|` (`None` for `|-- Default domain --|`).
    Domain(Option<u32>),
    /// `-- v0 --`.
    Vcpu(u32),
    /// `Exit reasons:`.
    ExitReasons,
    /// A row of the summary's shape; `indent` is its leading blanks (1 for an exit reason,
    /// more for a breakdown of one under it).
    Row {
        indent: usize,
        name: &'a str,
        row: Row,
    },
}

/// The numbers of one row.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Row {
    pub count: u64,
    /// The printed seconds (two decimals).
    pub seconds: f64,
    /// The mean cycles per exit (integer division: truncated).
    pub mean_cycles: u64,
}

/// What `text` (one line, indentation kept) is, when it is anything this reader uses.
pub(crate) fn line(text: &str) -> Option<Line<'_>> {
    let t = text.trim();
    if t == "Exit reasons:" {
        return Some(Line::ExitReasons);
    }
    if let Some(rest) = t.strip_prefix("Using ") {
        return match rest.split_whitespace().next() {
            Some("VMX") => Some(Line::Isa(Isa::Vmx)),
            Some("SVM") => Some(Line::Isa(Isa::Svm)),
            _ => None,
        };
    }
    if let Some(rest) = t.strip_prefix("Total time: ") {
        let mut w = rest.split_whitespace();
        let seconds = w
            .next()?
            .parse()
            .ok()
            .filter(|s: &f64| s.is_finite() && *s >= 0.0)?;
        (w.next()? == "seconds").then_some(())?;
        let ghz = rest
            .split_once("(using cpu speed ")
            .and_then(|(_, s)| s.strip_suffix(" GHz)"))
            .and_then(|s| s.parse().ok())
            .filter(|g: &f64| *g > 0.0 && g.is_finite());
        return Some(Line::Total { seconds, ghz });
    }
    if let Some(inner) = t.strip_prefix("|-- ").and_then(|s| s.strip_suffix(" --|")) {
        if inner == "Default domain" {
            return Some(Line::Domain(None));
        }
        return inner
            .strip_prefix("Domain ")
            .and_then(|d| d.parse().ok())
            .map(|d| Line::Domain(Some(d)));
    }
    if let Some(inner) = t.strip_prefix("-- v").and_then(|s| s.strip_suffix(" --")) {
        return inner.parse().ok().map(Line::Vcpu);
    }
    let indent = text.len() - text.trim_start().len();
    let (name, row) = row(t)?;
    Some(Line::Row { indent, name, row })
}

/// A row: a name (one word), then `COUNT SECONDSs PERCENT% MEAN cyc`, then optionally the
/// sampled percentiles in braces. The name is everything before the count.
fn row(t: &str) -> Option<(&str, Row)> {
    let cyc = t.find(" cyc")?;
    let (head, tail) = t.split_at(cyc);
    let tail = tail[" cyc".len()..].trim();
    if !(tail.is_empty() || (tail.starts_with('{') && tail.ends_with('}'))) {
        return None;
    }
    let words: Vec<&str> = head.split_whitespace().collect();
    let [.., count, seconds, percent, mean] = words.as_slice() else {
        return None;
    };
    let name_end = words.len() - 4;
    if name_end == 0 {
        return None;
    }
    let seconds: f64 = seconds.strip_suffix('s')?.parse().ok()?;
    let percent: f64 = percent.strip_suffix('%')?.parse().ok()?;
    if !(seconds.is_finite() && seconds >= 0.0 && percent.is_finite()) {
        return None;
    }
    let row = Row {
        count: count.parse().ok()?,
        seconds,
        mean_cycles: mean.parse().ok()?,
    };
    // The name: the text before the count (one word for an exit reason).
    let count_at = word_starts(head).nth(name_end).unwrap_or(head.len());
    Some((head[..count_at].trim(), row))
}

/// Whether `t` (trimmed) is a `-- vN --` or `|-- Domain N --|` header damaged in transit (cut,
/// a character put in, its number garbled): dashes at its start or end, a `v` or `Domain`.
pub(crate) fn damaged_header(t: &str) -> bool {
    let dashes = |s: &str| s.starts_with(['-', '|', '\u{2014}', '\u{2013}']);
    let ends = |s: &str| s.ends_with(['-', '|', '\u{2014}', '\u{2013}']);
    (dashes(t) || ends(t)) && (t.len() <= 8 || t.contains(" v") || t.contains("Domain"))
}

/// Where `text` holds two lines joined (their newline lost), and what the first is: a header
/// followed by more text, or an exit-reason row (its name known) after other text.
pub(crate) fn joined(text: &str) -> Option<(usize, &'static str)> {
    let t = text.trim_start();
    let lead = text.len() - t.len();
    if let Some(rest) = t.strip_prefix("Exit reasons:")
        && !rest.trim().is_empty()
    {
        return Some((lead + "Exit reasons:".len(), "the `Exit reasons:` title"));
    }
    if t.starts_with("-- v") || t.starts_with("|-- ") {
        let close = if t.starts_with('|') { " --|" } else { " --" };
        let end = t[3..].find(close)? + 3 + close.len();
        return (!t[end..].trim().is_empty()).then_some((lead + end, "a vCPU or domain header"));
    }
    // A known reason's name after the first word, followed by a count: a row glued on.
    let mut starts = word_starts(text).skip(1).peekable();
    while let Some(at) = starts.next() {
        let word = text[at..].split_whitespace().next().unwrap_or("");
        let counted = starts
            .peek()
            .and_then(|&next| text[next..].split_whitespace().next())
            .is_some_and(|c| c.parse::<u64>().is_ok());
        if counted && word.parse::<u64>().is_err() && code(word, None).is_some() {
            // Keep the blank before the name: the row's indentation.
            let at = if text[..at].ends_with(' ') {
                at - 1
            } else {
                at
            };
            return (at > 0).then_some((at, "a line"));
        }
    }
    None
}

/// Whether `word` is shaped like a reason xenalyze prints: capitals, digits and `_` with two
/// capitals at least (`IO_INSTRUCTION`, `VMEXIT_NPF`), or a number (a reason without a name).
pub(crate) fn name_shaped(word: &str) -> bool {
    let capitals = word.bytes().filter(u8::is_ascii_uppercase).count();
    let shaped = word
        .bytes()
        .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_');
    !word.is_empty() && shaped && (capitals >= 2 || word.bytes().all(|b| b.is_ascii_digit()))
}

/// Whether `name` (not a reason xenalyze names) is one damaged: three capitals or more, none of
/// the brackets and marks of a breakdown's name (breakdowns are named in lower case: `cr0`,
/// `io_read`, `(no handler)`, `*[MAX]`, `fee00300:[w]`).
pub(crate) fn reason_like(name: &str) -> bool {
    name.bytes().filter(u8::is_ascii_uppercase).count() >= 3
        && !name.contains(['[', ']', '*', '(', ')', ':', '+'])
}

/// Where each blank-separated word of `s` starts.
fn word_starts(s: &str) -> impl Iterator<Item = usize> + '_ {
    s.char_indices().filter_map(move |(i, c)| {
        let after_blank = s[..i].chars().next_back().is_none_or(char::is_whitespace);
        (!c.is_whitespace() && after_blank).then_some(i)
    })
}

/// Whether `head` has a `xenalyze` summary's signature: its `Exit reasons:` title with an exit
/// row, or its `Total time: … (using cpu speed … GHz)` line.
pub(crate) fn signature(text: &str) -> bool {
    let t = text.trim();
    (t.starts_with("Total time: ") && t.contains("(using cpu speed "))
        || matches!(line(text), Some(Line::Row { indent: 1, name, .. }) if code(name, None).is_some())
}

/// The ISA and hardware code of exit reason `name` as xenalyze prints it; `isa` (when known)
/// is the ISA of the trace, for reasons printed as numbers.
pub(crate) fn code(name: &str, isa: Option<Isa>) -> Option<(Isa, u64)> {
    if let Ok(n) = name.parse::<u64>() {
        return isa.map(|i| (i, n));
    }
    if let Some(svm) = name.strip_prefix("VMEXIT_") {
        return svm_code(svm).map(|c| (Isa::Svm, c));
    }
    VMX.iter()
        .find(|(n, _)| *n == name)
        .map(|&(_, c)| (Isa::Vmx, c))
}

/// xenalyze's VMX names (`hvm_vmx_exit_reason_name`) and the SDM's basic exit reasons, with the
/// spellings older xenalyze printed (`PENDING_INTERRUPT` until 2023, `VMOFF`, `VMON`,
/// `MACHINE_CHECK`).
const VMX: [(&str, u64); 56] = [
    ("EXCEPTION_NMI", 0),
    ("EXTERNAL_INTERRUPT", 1),
    ("TRIPLE_FAULT", 2),
    ("INIT", 3),
    ("SIPI", 4),
    ("IO_SMI", 5),
    ("OTHER_SMI", 6),
    ("PENDING_VIRT_INTR", 7),
    ("PENDING_INTERRUPT", 7),
    ("PENDING_VIRT_NMI", 8),
    ("TASK_SWITCH", 9),
    ("CPUID", 10),
    ("GETSEC", 11),
    ("HLT", 12),
    ("INVD", 13),
    ("INVLPG", 14),
    ("RDPMC", 15),
    ("RDTSC", 16),
    ("RSM", 17),
    ("VMCALL", 18),
    ("VMCLEAR", 19),
    ("VMLAUNCH", 20),
    ("VMPTRLD", 21),
    ("VMPTRST", 22),
    ("VMREAD", 23),
    ("VMRESUME", 24),
    ("VMWRITE", 25),
    ("VMXOFF", 26),
    ("VMOFF", 26),
    ("VMXON", 27),
    ("VMON", 27),
    ("CR_ACCESS", 28),
    ("DR_ACCESS", 29),
    ("IO_INSTRUCTION", 30),
    ("MSR_READ", 31),
    ("MSR_WRITE", 32),
    ("INVALID_GUEST_STATE", 33),
    ("MSR_LOADING", 34),
    ("MWAIT_INSTRUCTION", 36),
    ("MONITOR_TRAP_FLAG", 37),
    ("MONITOR_INSTRUCTION", 39),
    ("PAUSE_INSTRUCTION", 40),
    ("MCE_DURING_VMENTRY", 41),
    ("MACHINE_CHECK", 41),
    ("TPR_BELOW_THRESHOLD", 43),
    ("APIC_ACCESS", 44),
    ("ACCESS_GDTR_OR_IDTR", 46),
    ("ACCESS_LDTR_OR_TR", 47),
    ("EPT_VIOLATION", 48),
    ("EPT_MISCONFIG", 49),
    ("INVEPT", 50),
    ("RDTSCP", 51),
    ("VMX_PREEMPTION_TIMER_EXPIRED", 52),
    ("INVVPID", 53),
    ("WBINVD", 54),
    ("XSETBV", 55),
];

/// AMD's exit codes from 0x60 on, in order, as xenalyze names them (after `VMEXIT_`).
const SVM_FROM_0X60: [&str; 45] = [
    "INTR",
    "NMI",
    "SMI",
    "INIT",
    "VINTR",
    "CR0_SEL_WRITE",
    "IDTR_READ",
    "GDTR_READ",
    "LDTR_READ",
    "TR_READ",
    "IDTR_WRITE",
    "GDTR_WRITE",
    "LDTR_WRITE",
    "TR_WRITE",
    "RDTSC",
    "RDPMC",
    "PUSHF",
    "POPF",
    "CPUID",
    "RSM",
    "IRET",
    "SWINT",
    "INVD",
    "PAUSE",
    "HLT",
    "INVLPG",
    "INVLPGA",
    "IOIO",
    "MSR",
    "TASK_SWITCH",
    "FERR_FREEZE",
    "SHUTDOWN",
    "VMRUN",
    "VMMCALL",
    "VMLOAD",
    "VMSAVE",
    "STGI",
    "CLGI",
    "SKINIT",
    "RDTSCP",
    "ICEBP",
    "WBINVD",
    "MONITOR",
    "MWAIT",
    "MWAIT_CONDITIONAL",
];

/// Exception mnemonics by vector (`VMEXIT_EXCEPTION_PF` is 0x40 + 14).
const EXCEPTIONS: [&str; 20] = [
    "DE", "DB", "NMI", "BP", "OF", "BR", "UD", "NM", "DF", "09", "TS", "NP", "SS", "GP", "PF",
    "15", "MF", "AC", "MC", "XF",
];

/// The code of `VMEXIT_<name>`.
fn svm_code(name: &str) -> Option<u64> {
    if name == "NPF" {
        return Some(0x400);
    }
    if let Some(i) = SVM_FROM_0X60.iter().position(|n| *n == name) {
        return Some(0x60 + i as u64);
    }
    if let Some(e) = name.strip_prefix("EXCEPTION_") {
        let vector = match EXCEPTIONS.iter().position(|n| *n == e) {
            Some(v) => v as u64,
            None => e.parse::<u64>().ok().filter(|v| *v < 32)?,
        };
        return Some(0x40 + vector);
    }
    let register = |prefix: &str, base: u64| -> Option<u64> {
        let (n, op) = name.strip_prefix(prefix)?.split_once('_')?;
        let n: u64 = n.parse().ok().filter(|n| *n < 16)?;
        match op {
            "READ" => Some(base + n),
            "WRITE" => Some(base + 16 + n),
            _ => None,
        }
    };
    register("CR", 0).or_else(|| register("DR", 32))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_of_both_layouts() {
        let l =
            line(" IO_INSTRUCTION          40647  5.48s 73.40% 323721 cyc { 8436|254469|798909}");
        let Some(Line::Row { indent, name, row }) = l else {
            panic!("{l:?}")
        };
        assert_eq!(
            (indent, name, row.count, row.mean_cycles),
            (1, "IO_INSTRUCTION", 40647, 323721)
        );
        let l = line("   (no handler)    22758  2.81s 37.61% 296248 cyc {150810|258420|468636}");
        assert!(
            matches!(
                l,
                Some(Line::Row {
                    indent: 3,
                    name: "(no handler)",
                    ..
                })
            ),
            "{l:?}"
        );
        assert!(line(" HLT     12  0.50s  1.00%  1000 cyc").is_some());
        assert!(line("  THERMAL_APIC(250): 2").is_none());
    }

    #[test]
    fn names_to_codes() {
        assert_eq!(code("HLT", None), Some((Isa::Vmx, 12)));
        assert_eq!(code("VMEXIT_NPF", None), Some((Isa::Svm, 0x400)));
        assert_eq!(code("VMEXIT_IOIO", None), Some((Isa::Svm, 0x7b)));
        assert_eq!(code("VMEXIT_HLT", None), Some((Isa::Svm, 0x78)));
        assert_eq!(code("VMEXIT_CR3_WRITE", None), Some((Isa::Svm, 0x13)));
        assert_eq!(code("VMEXIT_EXCEPTION_PF", None), Some((Isa::Svm, 0x4e)));
        assert_eq!(code("57", Some(Isa::Vmx)), Some((Isa::Vmx, 57)));
        assert_eq!(code("57", None), None);
        assert_eq!(code("cr0", None), None);
    }
}

//! The text of a `kvm_exit` event in every era's spelling (the kernel's `kvm_exit` TP_printk over the years, and libtraceevent's plugin):
//!
//! - ~2010: `reason apic_access rip 0xc011518c` (lowercase VMX names, no vCPU);
//! - 2015–2020: `reason EXCEPTION_NMI rip 0x1007 info 66 80000b0e`;
//! - 2020+ (kernel `TP_printk("vcpu %u reason %s%s%s rip 0x%lx info1 0x%016llx info2 …")`):
//!   `vcpu 0 reason EXTERNAL_INTERRUPT rip 0x… info1 0x… info2 0x… intr_info 0x… error_code 0x…`;
//! - libtraceevent's kvm plugin (`reason %s rip 0x%lx info %llx %llx`): `reason EXIT_NPF rip 0x0
//!   info 1680000007 1729a1000`, and `reason UNKNOWN (%llu)` for codes its tables lack;
//! - VMX exit-reason flags after the name: the kernel prints the basic reason, a space, then
//!   `__print_flags(exit_reason & ~0xffff, " ", VMX_EXIT_REASON_FLAGS)`, so `INVALID_STATE
//!   FAILED_VMENTRY`, with bits it has no name for in hex; `INVALID_STATE|FAILED_VMENTRY` too;
//! - an unknown code that `__print_symbolic` printed as a number (`reason 0x20000`);
//! - SVM names with a space (`PF excp`), kept whole;
//! - libtraceevent noise in front (`CAN'T FIND FIELD "rip"<CANT FIND FIELD exit_code>vcpu 0
//!   reason npf …`): the kernel text after it is read;
//! - arm64 (`TRAP: HSR_EC: 0x0016 (HVC64), PC: 0x…`): the exception class name.

use super::fields::{all_digits, dec, dec32, hex, skip_digits};
use crate::decode::Isa;
use crate::decode::exit_reason::{VMX_BASIC_MASK, VMX_FLAGS, lookup_name};
use crate::events::Reason;

/// What a `kvm_exit` text says.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct ExitText<'a> {
    pub reason: Reason<'a>,
    /// Set when the text itself proves the ISA (VMX flag names).
    pub isa: Option<Isa>,
    pub vcpu: Option<u32>,
    pub rip: Option<u64>,
    /// The VMX `FAILED_VMENTRY` flag was printed.
    pub failed_entry: bool,
    /// libtraceevent's `CAN'T FIND FIELD` blurb came first.
    pub noise: bool,
}

/// Bit 31 of a VMX exit reason.
const FAILED_VMENTRY: u64 = 1 << 31;

/// Reads a `kvm_exit` text; `None` when no reason can be found in it.
pub(super) fn parse(text: &str) -> Option<ExitText<'_>> {
    let mut vcpu = None;
    let mut noise = false;
    let body = if let Some(rest) = text.strip_prefix("vcpu ") {
        vcpu = dec32(rest);
        skip_digits(rest).strip_prefix(" reason ")?
    } else if let Some(rest) = text.strip_prefix("reason ") {
        rest
    } else {
        noise = text.contains("FIND FIELD");
        let at = text.find("reason ");
        let Some(at) = at else {
            return arm64(text, noise);
        };
        vcpu = text[..at]
            .rfind("vcpu ")
            .and_then(|v| dec32(&text[v + 5..]));
        &text[at + 7..]
    };
    let (reason_text, rip) = match rip_at(body) {
        Some(i) => (&body[..i], hex(&body[i + 5..])),
        None => (before_fields(body), None),
    };
    let reason_text = reason_text.trim_ascii();
    if reason_text.is_empty() {
        return None;
    }
    let (reason, isa, failed_entry) = reason(reason_text);
    Some(ExitText {
        reason,
        isa,
        vcpu,
        rip,
        failed_entry,
        noise,
    })
}

/// The reason of a text without ` rip ` (kernels and debugging patches that leave it out:
/// `DR_ACCESS info1 0x0000000000000216`): everything before the first field name.
fn before_fields(body: &str) -> &str {
    const FIELDS: [&str; 5] = [
        " info1 ",
        " info ",
        " info2 ",
        " intr_info ",
        " error_code ",
    ];
    let end = FIELDS
        .iter()
        .filter_map(|f| body.find(f))
        .min()
        .unwrap_or(body.len());
    &body[..end]
}

/// Where ` rip ` starts in `body`: usually at the first space (one-word reasons).
fn rip_at(body: &str) -> Option<usize> {
    let sp = memchr::memchr(b' ', body.as_bytes())?;
    if body.as_bytes()[sp..].starts_with(b" rip ") {
        return Some(sp);
    }
    body.find(" rip ")
}

/// The reason, the ISA when the spelling proves it, and whether FAILED_VMENTRY was set.
fn reason(text: &str) -> (Reason<'_>, Option<Isa>, bool) {
    if !text.bytes().any(|b| b == b' ' || b == b'|') {
        return match code(text) {
            Some(c) => (Reason::Code(c), None, false),
            None => (Reason::Name(text), None, false),
        };
    }
    // libtraceevent plugin: `UNKNOWN (131072)`.
    if let Some(n) = text
        .strip_prefix("UNKNOWN (")
        .and_then(|r| r.strip_suffix(')'))
        && let Some(c) = all_digits(n).then(|| dec(n)).flatten()
    {
        return (Reason::Code(c), None, false);
    }
    match vmx_flags(text) {
        Some(raw) => (Reason::Code(raw), Some(Isa::Vmx), raw & FAILED_VMENTRY != 0),
        None => (Reason::Name(text), None, false),
    }
}

/// A reason printed as a number: `0x20000` (kernel, unknown symbol) or `48`.
fn code(text: &str) -> Option<u64> {
    if let Some(h) = text.strip_prefix("0x") {
        return (h.len() <= 16 && h.bytes().all(|b| b.is_ascii_hexdigit()))
            .then(|| hex(h))
            .flatten();
    }
    all_digits(text).then(|| dec(text)).flatten()
}

/// `NAME FLAG…` or `NAME|FLAG…` where every FLAG is a VMX flag name or a hex number of high
/// bits: the raw exit reason (basic code | flag bits), when NAME is a VMX reason.
fn vmx_flags(text: &str) -> Option<u64> {
    let mut bits = 0u64;
    let mut base_end = text.len();
    for word in text.rsplit([' ', '|']) {
        if word.is_empty() {
            base_end = base_end.saturating_sub(1);
            continue;
        }
        let bit = VMX_FLAGS
            .iter()
            .find(|(_, name)| *name == word)
            .map(|(b, _)| 1u64 << b)
            .or_else(|| {
                word.strip_prefix("0x")
                    .and_then(hex)
                    .filter(|v| *v != 0 && v & VMX_BASIC_MASK == 0 && *v <= u64::from(u32::MAX))
            });
        match bit {
            Some(b) => {
                bits |= b;
                base_end = base_end.saturating_sub(word.len() + 1);
            }
            None => break,
        }
    }
    if bits == 0 {
        return None;
    }
    let base = text.get(..base_end)?.trim_end_matches([' ', '|']);
    let info = lookup_name(Some(Isa::Vmx), base)?;
    Some(info.code | bits)
}

/// arm64's `kvm_exit`: `%s: HSR_EC: 0x%04x (%s), PC: 0x%016lx`, the exception type then the
/// class. Only a TRAP has a class; any other type (IRQ, SERROR, ILLEGAL) prints class 0
/// (`UNKNOWN`) and is keyed by its type, as `perf kvm stat` keys it. The layout proves arm64.
fn arm64(text: &str, noise: bool) -> Option<ExitText<'_>> {
    let at = text.find("SR_EC: ")?;
    let rest = &text[at..];
    let open = rest.find('(')?;
    let close = rest[open..].find(')')?;
    let class = rest[open + 1..open + close].trim();
    let kind = text[..at]
        .trim_end()
        .strip_suffix(": H")
        .or_else(|| text[..at].trim_end().strip_suffix(": E"))
        .map(|k| k.rsplit(['>', ' ']).next().unwrap_or(k).trim());
    let name = match kind {
        Some(k) if !k.is_empty() && k != "TRAP" => k,
        _ => class,
    };
    if name.is_empty() {
        return None;
    }
    let rip = rest.find("PC: ").and_then(|p| hex(&rest[p + 4..]));
    Some(ExitText {
        reason: Reason::Name(name),
        isa: Some(Isa::Arm64),
        vcpu: None,
        rip,
        failed_entry: false,
        noise,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(text: &str) -> Option<(Reason<'_>, Option<u32>, Option<u64>)> {
        parse(text).map(|e| (e.reason, e.vcpu, e.rip))
    }

    #[test]
    fn eras() {
        assert_eq!(
            r("reason apic_access rip 0xc011518c"),
            Some((Reason::Name("apic_access"), None, Some(0xc011518c)))
        );
        assert_eq!(
            r("vcpu 3 reason EXTERNAL_INTERRUPT rip 0xffffffff81000000 info1 0x0"),
            Some((
                Reason::Name("EXTERNAL_INTERRUPT"),
                Some(3),
                Some(0xffffffff81000000)
            ))
        );
        assert_eq!(
            r("reason UNKNOWN (131072) rip 0x0 info 0 0"),
            Some((Reason::Code(131072), None, Some(0)))
        );
        assert_eq!(
            r("vcpu 0 reason 0x20000 rip 0x1"),
            Some((Reason::Code(0x20000), Some(0), Some(1)))
        );
        assert_eq!(
            r("vcpu 1 reason PF excp rip 0x10"),
            Some((Reason::Name("PF excp"), Some(1), Some(0x10)))
        );
        assert_eq!(
            r("CAN'T FIND FIELD \"rip\"<CANT FIND FIELD exit_code>vcpu 0 reason npf rip 0x5"),
            Some((Reason::Name("npf"), Some(0), Some(5)))
        );
        assert_eq!(
            r("TRAP: HSR_EC: 0x0016 (HVC64), PC: 0xffff800010"),
            Some((Reason::Name("HVC64"), None, Some(0xffff800010)))
        );
        // A non-trap exit is keyed by its type; its class is a meaningless 0.
        assert_eq!(
            r("IRQ: HSR_EC: 0x0000 (UNKNOWN), PC: 0xffff87259e30"),
            Some((Reason::Name("IRQ"), None, Some(0xffff87259e30)))
        );
        assert_eq!(
            parse("TRAP: ESR_EC: 0x24 (DABT_LOW), PC: 0x1000").map(|e| (e.reason, e.isa)),
            Some((Reason::Name("DABT_LOW"), Some(Isa::Arm64)))
        );
        assert_eq!(
            r("vcpu 23 reason DR_ACCESS info1 0x0000000000000216"),
            Some((Reason::Name("DR_ACCESS"), Some(23), None))
        );
        assert_eq!(r("garbage"), None);
        assert_eq!(r("vcpu 0 reason  rip 0x1"), None);
    }

    #[test]
    fn vmx_flag_spellings() {
        for text in [
            "vcpu 0 reason INVALID_STATE FAILED_VMENTRY rip 0x0 info1 0x0",
            "reason INVALID_STATE|FAILED_VMENTRY rip 0x0",
        ] {
            let e = parse(text).unwrap();
            assert_eq!(e.reason, Reason::Code(0x8000_0021), "{text}");
            assert_eq!((e.isa, e.failed_entry), (Some(Isa::Vmx), true));
        }
        let e = parse("reason EPT_VIOLATION 0x8000000 rip 0x1").unwrap();
        assert_eq!(e.reason, Reason::Code(0x0800_0030));
        assert!(!e.failed_entry);
        // Not a VMX name before the flag: kept as printed.
        let e = parse("reason frob FAILED_VMENTRY rip 0x1").unwrap();
        assert_eq!(e.reason, Reason::Name("frob FAILED_VMENTRY"));
    }
}

//! kvm_stat's field names: what a name token looks like, which names are tracepoint children
//! (`kvm_exit(HLT)`, whose parent is the tracepoint before the parenthesis), and which names
//! are known KVM counters (used only to recognise a `-l` banner or a `-1` listing).

/// Whether `t` can be a kvm_stat field: a debugfs file name (`halt_exits`), a tracepoint
/// (`kvm_exit`) or a filtered child (`kvm_exit(HLT)`, `kvm_userspace_exit(IRQ_WINDOW_OPEN)`).
/// Old `-l` banners cut names to 9 characters, so an unbalanced `kvm_exit(` passes too.
pub(super) fn is_field(t: &str) -> bool {
    t.as_bytes().first().is_some_and(u8::is_ascii_alphabetic)
        && t.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'(' | b')'))
}

/// Splits a child field into its parent tracepoint and the value it is filtered on:
/// `kvm_exit(HLT)` → (`kvm_exit`, `HLT`).
pub(super) fn split_child(name: &str) -> Option<(&str, &str)> {
    let (parent, rest) = name.split_once('(')?;
    let child = rest.strip_suffix(')')?;
    let ok = !parent.is_empty() && !child.is_empty() && !child.contains(['(', ')']);
    ok.then_some((parent, child))
}

/// The tracepoint whose children are VM-exit reasons.
pub(super) const EXIT_PARENT: &str = "kvm_exit";

/// Whether `name` is a KVM tracepoint (`kvm_entry`), which is never the child of another row:
/// children are the values a tracepoint is filtered on (`HLT`, `npf`, `DABT_LOW`), so a
/// tracepoint indented deeper than its neighbours (a damaged paste) is a row of its own.
pub(super) fn is_event(name: &str) -> bool {
    name.starts_with("kvm_") && !name.contains('(')
}

/// KVM's debugfs / binary-stats counters that kvm_stat shows (x86, arm64, s390, ppc), as far as
/// they do not start with one of [`PREFIXES`].
const COUNTERS: &[&str] = &[
    "exits",
    "io_exits",
    "mmio_exits",
    "signal_exits",
    "irq_exits",
    "irq_window",
    "irq_window_exits",
    "nmi_window",
    "nmi_window_exits",
    "request_irq",
    "request_irq_exits",
    "l1d_flush",
    "host_state_reload",
    "fpu_reload",
    "insn_emulation",
    "insn_emulation_fail",
    "hypercalls",
    "irq_injections",
    "nmi_injections",
    "req_event",
    "tlb_flush",
    "remote_tlb_flush",
    "invlpg",
    "largepages",
    "guest_mode",
    "blocking",
    "notify_window_exits",
    "wfe_exit_stat",
    "wfi_exit_stat",
    "mmio_exit_user",
    "mmio_exit_kernel",
    "userspace_handled",
    "exits_stat",
];

/// Prefixes of counter families (halt polling, MMU, page faults, s390 intercepts, …) and of
/// every tracepoint (`kvm_`).
const PREFIXES: &[&str] = &[
    "kvm_",
    "halt_",
    "mmu_",
    "pf_",
    "nested_",
    "directed_yield",
    "preemption_",
    "exit_",
    "instruction_",
    "diagnose_",
    "deliver_",
    "inject_",
    "pages_",
];

/// Whether `name` is a counter or tracepoint that kvm_stat is known to show.
pub(super) fn is_known(name: &str) -> bool {
    let base = split_child(name).map_or(name, |(parent, _)| parent);
    COUNTERS.contains(&base) || PREFIXES.iter().any(|p| base.starts_with(p))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_and_children() {
        assert!(is_field("halt_exits"));
        assert!(is_field("kvm_exit(HLT)"));
        assert!(is_field("kvm_exit("));
        assert!(!is_field("12"));
        assert!(!is_field("Total:"));
        assert_eq!(split_child("kvm_exit(HLT)"), Some(("kvm_exit", "HLT")));
        assert_eq!(split_child("kvm_exit("), None);
        assert_eq!(split_child("exits"), None);
        assert!(is_known("exits") && is_known("kvm_exit(NPF)") && is_known("halt_wakeup"));
        assert!(!is_known("frobnicate"));
    }
}

//! The words of the guest-code lines `diagnose` adds under a finding's exit reasons.

use crate::analysis::guest_code::{CodeRow, GuestCode, ReasonCode};

/// The remark on one guest-code line: what share of the reason's exits comes from there;
/// `of_row`: the line stands under a port, MSR or MMIO row, whose reason's exits it counts.
pub(crate) fn line(reason: &ReasonCode, row: &CodeRow, of_row: bool) -> String {
    let site = match (&row.function, row.distinct) {
        (Some(_), 1) | (None, _) => "this guest code".to_string(),
        (Some(_), n) => format!("this guest function ({n} RIPs)"),
    };
    let whose = if of_row {
        format!("all the {} exits (this row's and others')", reason.reason)
    } else {
        format!("the {} exits", reason.reason)
    };
    format!("of {whose} with a RIP come from {site}")
}

/// The notes of a diagnosis that named guest code: the map, the offset, what resolved.
pub(crate) fn notes(input: &str, code: &GuestCode) -> Vec<String> {
    code.notes()
        .into_iter()
        .map(|n| format!("{input}: {n}"))
        .collect()
}

/// The note for an input whose exits carry no RIP, when symbols were given.
pub(crate) fn no_rips(input: &str) -> String {
    format!(
        "{input}: guest code: no exit carries a guest RIP (perf kvm stat report and kvm_stat \
         print none): --guest-symbols named nothing"
    )
}

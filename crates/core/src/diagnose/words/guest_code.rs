//! The words of the guest-code lines `diagnose` adds under a finding's exit reasons.

use crate::analysis::guest_code::{CodeRow, GuestCode, ReasonCode};

/// The remark on one guest-code line: what share of the reason's exits comes from there.
pub fn line(reason: &ReasonCode, row: &CodeRow) -> String {
    let site = match (&row.function, row.distinct) {
        (Some(_), 1) | (None, _) => "this guest code".to_string(),
        (Some(_), n) => format!("this guest function ({n} RIPs)"),
    };
    format!("of the {} exits with a RIP come from {site}", reason.reason)
}

/// The notes of a diagnosis that named guest code: the map, the offset, what resolved.
pub fn notes(input: &str, code: &GuestCode) -> Vec<String> {
    code.notes()
        .into_iter()
        .map(|n| format!("{input}: {n}"))
        .collect()
}

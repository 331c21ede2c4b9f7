//! Shared by the fuzz tests: how many cases a property runs.

/// `PROPTEST_CASES` when set (a longer campaign), else `default` (what CI runs every time).
pub fn cases(default: u32) -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

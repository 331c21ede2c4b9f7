//! What every source's profile is checked for once it is read: sums that do not fit in 64
//! bits. Counts and times are `u64`; a row may hold up to 2^64−1 (a damaged or hand-edited
//! input can say anything), and the sums of a table saturate there rather than wrap. The
//! table is then noted, so a saturated total is never taken for a real one.

use crate::profile::{Note, Profile};

/// Notes every table whose counts or times add up to more than 2^64−1.
pub fn settle(mut profile: Profile) -> Profile {
    let mut notes = Vec::new();
    for table in &profile.tables {
        let count = table
            .rows
            .iter()
            .try_fold(0u64, |acc, r| acc.checked_add(r.count));
        let time = table
            .rows
            .iter()
            .try_fold(0u64, |acc, r| match r.time.total_ns {
                Some(t) => acc.checked_add(t),
                None => Some(acc),
            });
        let what = match (count, time) {
            (None, None) => "counts and times",
            (None, Some(_)) => "counts",
            (Some(_), None) => "times",
            (Some(_), Some(_)) => continue,
        };
        notes.push(Note {
            line: table.line,
            message: format!(
                "the {} table's {what} add up to more than 2^64−1 (18446744073709551615); its \
                 totals are shown saturated at that value, not as a real sum",
                table.kind
            ),
        });
    }
    profile.warnings.extend(notes);
    profile
}

//! What every source's profile is checked for once it is read: sums that do not fit in 64
//! bits. Counts and times are `u64`; a row may hold up to 2^64−1 (a damaged or hand-edited
//! input can say anything), and the sums of a table saturate there rather than wrap. The
//! table is then noted, so a saturated total is never taken for a real one. A table of more
//! rows than [`TABLE_CAP`] has its rarest folded into one `other` row
//! ([`crate::profile::Table::fold_rarest`]).

use crate::profile::fold::TABLE_CAP;
use crate::profile::{Note, Profile};

/// Folds every over-long table, and notes every table whose counts or times add up to more
/// than 2^64−1.
pub(super) fn settle(mut profile: Profile) -> Profile {
    let mut notes: Vec<Note> = profile
        .tables
        .iter_mut()
        .filter_map(|t| t.fold_rarest(TABLE_CAP))
        .collect();
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

//! The rows of a live session's intervals matched by name: each interval lists the same dozen
//! row names, so each name gets a small number once, and the number finds both the ISA
//! guessed for the interval's set of names and the row of the summed table the name's row adds
//! to. Decoding the names and searching the summed rows for each interval cost more than
//! reading its rows; this keeps exactly what they give, found by lookup.

use rustc_hash::FxHashMap;

use super::row::RawRow;
use super::table::UnknownCode;
use crate::decode::Isa;

/// The most row names numbered (a live session repeats a few dozen); past it all is dropped
/// and numbered again.
const NAMES: usize = 4096;

/// The most sets of names whose ISA guess is kept.
const SETS: usize = 4096;

/// Names numbered below this take part in a set (a bit each).
const SET_BITS: u32 = u128::BITS;

/// Row names numbered, and what the numbers find.
#[derive(Debug, Default)]
pub(super) struct Intervals {
    numbers: FxHashMap<Box<str>, u32>,
    /// The ISA guessed for each set of numbered names (a bit per name).
    guesses: FxHashMap<u128, Option<Isa>>,
    /// The numbers of the rows of the table last [`Intervals::number`]ed, in order.
    row_numbers: Vec<u32>,
    /// Their set, when each is below [`SET_BITS`] and none repeats.
    set: Option<u128>,
    /// The live table (its place among the profile's tables) and ISA `rows` is for.
    rows_for: Option<(usize, Option<Isa>)>,
    /// By name number: the row of that live table the name's rows are summed into.
    rows: Vec<Option<u32>>,
}

impl Intervals {
    /// Numbers the names of `rows` (a table's, once folded) for [`Intervals::guess`] and
    /// [`Intervals::row`].
    pub(super) fn number(&mut self, rows: &[(RawRow, Option<UnknownCode>)]) {
        if self.numbers.len() + rows.len() > NAMES {
            // Only a hostile or broken input names this many rows: start over.
            *self = Self {
                row_numbers: std::mem::take(&mut self.row_numbers),
                ..Self::default()
            };
        }
        self.row_numbers.clear();
        let mut set = Some(0u128);
        for (r, _) in rows {
            let next = self.numbers.len() as u32;
            let n = match self.numbers.get(r.key.as_str()) {
                Some(&n) => n,
                None => {
                    self.numbers.insert(r.key.as_str().into(), next);
                    next
                }
            };
            self.row_numbers.push(n);
            set = set
                .filter(|s| n < SET_BITS && s & (1 << n) == 0)
                .map(|s| s | 1 << n);
        }
        self.set = set;
    }

    /// The ISA guessed for the names last numbered: kept per set of names, made by `guess`
    /// the first time (or every time, for a set with a name repeated or numbered too high).
    pub(super) fn guess(&mut self, guess: impl FnOnce() -> Option<Isa>) -> Option<Isa> {
        let Some(set) = self.set else {
            return guess();
        };
        if let Some(&isa) = self.guesses.get(&set) {
            return isa;
        }
        if self.guesses.len() >= SETS {
            self.guesses.clear();
        }
        let isa = guess();
        self.guesses.insert(set, isa);
        isa
    }

    /// Makes [`Intervals::row`] and [`Intervals::found`] be about the rows of live table
    /// `table` (its place among the profile's tables) read under `isa`.
    pub(super) fn sum_into(&mut self, table: usize, isa: Option<Isa>) {
        if self.rows_for != Some((table, isa)) {
            self.rows_for = Some((table, isa));
            self.rows.clear();
        }
    }

    /// The row of the live table that row `i` of the table last numbered was found to sum
    /// into, if any yet.
    pub(super) fn row(&self, i: usize) -> Option<usize> {
        let n = *self.row_numbers.get(i)? as usize;
        self.rows.get(n).copied().flatten().map(|at| at as usize)
    }

    /// Row `i` of the table last numbered sums into row `at` of the live table.
    pub(super) fn found(&mut self, i: usize, at: usize) {
        let (Some(&n), Ok(at)) = (self.row_numbers.get(i), u32::try_from(at)) else {
            return;
        };
        let n = n as usize;
        if self.rows.len() <= n {
            self.rows.resize(n + 1, None);
        }
        self.rows[n] = Some(at);
    }
}

#[cfg(test)]
mod tests {
    use super::Intervals;
    use crate::decode::Isa;
    use crate::profile::TimeStats;
    use crate::sources::perf_kvm_stat::row::RawRow;

    fn rows(names: &[&str]) -> Vec<(RawRow, Option<super::UnknownCode>)> {
        names
            .iter()
            .map(|n| {
                let row = RawRow {
                    key: n.to_string(),
                    count: 1,
                    time: TimeStats::default(),
                    line: 1,
                };
                (row, None)
            })
            .collect()
    }

    /// A set of names keeps its guess whatever its order; a set with a name twice is never
    /// taken for the set without it.
    #[test]
    fn guesses_are_per_set_of_names() {
        let mut iv = Intervals::default();
        iv.number(&rows(&["HLT", "CPUID"]));
        assert_eq!(iv.guess(|| Some(Isa::Vmx)), Some(Isa::Vmx));
        iv.number(&rows(&["CPUID", "HLT"]));
        assert_eq!(iv.guess(|| panic!("guessed again")), Some(Isa::Vmx));
        iv.number(&rows(&["HLT", "HLT"]));
        assert_eq!(iv.guess(|| None), None);
        iv.number(&rows(&["HLT"]));
        assert_eq!(iv.guess(|| Some(Isa::Svm)), Some(Isa::Svm));
    }

    /// Rows found are found again by name, for the same live table and ISA only.
    #[test]
    fn rows_are_found_per_table_and_isa() {
        let mut iv = Intervals::default();
        iv.number(&rows(&["HLT", "CPUID"]));
        iv.sum_into(3, Some(Isa::Vmx));
        assert_eq!(iv.row(0), None);
        iv.found(0, 7);
        iv.found(1, 2);
        iv.number(&rows(&["CPUID", "MSR_READ", "HLT"]));
        iv.sum_into(3, Some(Isa::Vmx));
        assert_eq!((iv.row(0), iv.row(1), iv.row(2)), (Some(2), None, Some(7)));
        iv.sum_into(3, None);
        assert_eq!(iv.row(0), None);
        iv.sum_into(4, Some(Isa::Vmx));
        assert_eq!(iv.row(2), None);
    }

    /// Past the bound on names, all is numbered afresh and nothing found is kept.
    #[test]
    fn the_names_numbered_are_bounded() {
        let mut iv = Intervals::default();
        iv.number(&rows(&["HLT"]));
        iv.sum_into(0, None);
        iv.found(0, 0);
        for i in 0..super::NAMES + 10 {
            let name = format!("EXIT_{i}");
            iv.number(&rows(&[name.as_str()]));
        }
        assert!(iv.numbers.len() <= super::NAMES);
        iv.number(&rows(&["HLT"]));
        iv.sum_into(0, None);
        assert_eq!(iv.row(0), None);
    }
}

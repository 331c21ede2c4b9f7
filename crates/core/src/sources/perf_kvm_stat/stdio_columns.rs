//! The columns of perf's stdio layout that a table's header names, and what they ask of each
//! row: how many percentages it holds and in which order its times are printed.

/// The stdio columns a header names, in order (at most the six perf prints; no allocation, as
/// a live session repeats its header every interval), with what they ask of each row kept as
/// they are added: how many percentages, and the time columns in order (every row of a live
/// transcript is read against them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct StdioColumns {
    cols: [StdioColumn; 6],
    len: usize,
    percents: usize,
    times: [StdioColumn; 3],
    n_times: usize,
}

impl StdioColumns {
    /// The columns `of`, each once.
    pub(super) fn of(columns: &[StdioColumn]) -> Self {
        let mut c = Self {
            cols: [StdioColumn::Samples; 6],
            len: 0,
            percents: 0,
            times: [StdioColumn::Avg; 3],
            n_times: 0,
        };
        for &col in columns {
            c.push(col);
        }
        c
    }

    /// Adds `col` unless it is there.
    pub(super) fn push(&mut self, col: StdioColumn) {
        if !self.contains(col) && self.len < self.cols.len() {
            self.cols[self.len] = col;
            self.len += 1;
            self.percents += usize::from(col.percent());
            if col.time() && self.n_times < self.times.len() {
                self.times[self.n_times] = col;
                self.n_times += 1;
            }
        }
    }

    /// How many of the columns hold a percentage.
    pub(super) fn percents(&self) -> usize {
        self.percents
    }

    /// The time columns, in order.
    pub(super) fn times(&self) -> &[StdioColumn] {
        &self.times[..self.n_times]
    }

    pub(super) fn contains(&self, col: StdioColumn) -> bool {
        self.as_slice().contains(&col)
    }

    pub(super) fn len(&self) -> usize {
        self.len
    }

    pub(super) fn as_slice(&self) -> &[StdioColumn] {
        &self.cols[..self.len]
    }
}

/// A column of perf's stdio layout, as the header names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum StdioColumn {
    Samples,
    SamplesPct,
    TimePct,
    Min,
    Max,
    Avg,
}

impl StdioColumn {
    /// Whether the column holds a percentage.
    pub(super) fn percent(self) -> bool {
        matches!(self, StdioColumn::SamplesPct | StdioColumn::TimePct)
    }

    /// Whether the column holds a time in µs.
    pub(super) fn time(self) -> bool {
        matches!(self, StdioColumn::Min | StdioColumn::Max | StdioColumn::Avg)
    }
}

#[cfg(test)]
mod tests {
    use super::{StdioColumn, StdioColumns};

    proptest::proptest! {
        /// What is kept as columns are added is what the columns held say, whatever the order
        /// and repeats of the columns added.
        #[test]
        fn kept_as_the_columns_say(picks in proptest::collection::vec(0usize..6, 0..10)) {
            use StdioColumn::*;
            let all = [Samples, SamplesPct, TimePct, Min, Max, Avg];
            let mut columns = StdioColumns::of(&[]);
            for &i in &picks {
                columns.push(all[i]);
            }
            let held = columns.as_slice();
            let times: Vec<StdioColumn> = held.iter().copied().filter(|c| c.time()).collect();
            proptest::prop_assert_eq!(columns.percents(), held.iter().filter(|c| c.percent()).count());
            proptest::prop_assert_eq!(columns.times(), times.as_slice());
        }
    }
}

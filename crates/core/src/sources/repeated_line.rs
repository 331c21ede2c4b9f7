//! A line an input says again and again (perf's `Lost events` after every interval, an event
//! printed `<not counted>` in every interval): kept as its first line, its last and how many
//! times, so one note can stand for all of them however long the input.

/// Where and how often one kind of line was read.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RepeatedLine {
    first: usize,
    last: usize,
    times: u64,
}

impl RepeatedLine {
    /// Read once more, at line `n`.
    pub(crate) fn add(&mut self, n: usize) {
        if self.times == 0 {
            self.first = n;
        }
        self.times += 1;
        self.last = n;
    }

    /// Takes in `later`, the same line read after these.
    pub(crate) fn join(&mut self, later: RepeatedLine) {
        if later.times == 0 {
            return;
        }
        if self.times == 0 {
            *self = later;
            return;
        }
        self.times += later.times;
        self.last = later.last;
    }

    /// The first line it was read at, where its note goes; none if never read.
    pub(crate) fn first(&self) -> Option<usize> {
        (self.times > 0).then_some(self.first)
    }

    /// Where else it was read, for the note at the first line: `on N lines, from here to line
    /// L`; none if read once (or never).
    pub(crate) fn span(&self) -> Option<String> {
        (self.times > 1)
            .then(|| format!("on {} lines, from here to line {}", self.times, self.last))
    }
}

#[cfg(test)]
mod tests {
    use super::RepeatedLine;

    #[test]
    fn read_in_two_parts_as_in_one() {
        let mut all = RepeatedLine::default();
        assert_eq!((all.first(), all.span()), (None, None));
        let (mut front, mut back) = (RepeatedLine::default(), RepeatedLine::default());
        for n in (10..40).step_by(3) {
            all.add(n);
            match n < 25 {
                true => front.add(n),
                false => back.add(n),
            }
        }
        let mut later_only = RepeatedLine::default();
        later_only.join(back);
        front.join(back);
        front.join(RepeatedLine::default());
        assert_eq!(front, all);
        assert_eq!(all.first(), Some(10));
        assert_eq!(later_only.first(), Some(25));
        assert_eq!(
            all.span().as_deref(),
            Some("on 10 lines, from here to line 37")
        );
        let mut once = RepeatedLine::default();
        once.add(7);
        assert_eq!((once.first(), once.span()), (Some(7), None));
    }
}

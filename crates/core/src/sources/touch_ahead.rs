//! Touching a mapped file's pages a few MiB ahead of the thread that reads them, from a
//! thread with time to spare (a perf.data's profile builder, between batches). On a
//! virtualized host the first touch of each mapped page is dear, and a reader that meets
//! every page first pays for each; touched ahead, the other thread pays (there, the perf.data
//! record loop took about 15% less time: docs/performance.md). Touched, not just mapped: with
//! the pages mapped ahead by `MADV_POPULATE_READ` instead, the guest took a fifth of the page
//! faults and the read was no faster.
//! At most [`AHEAD`] bytes are touched ahead of where the reader said it is, so memory stays
//! flat whatever the file's size.

use std::sync::atomic::{AtomicUsize, Ordering};

/// How far ahead of the reader pages are touched.
const AHEAD: usize = 4 << 20;

/// The page size the toucher steps by (a larger page is touched more than once, harmlessly).
const PAGE: usize = 4096;

/// Where the reader is, and the bytes it reads; see the module doc.
#[derive(Debug)]
pub(crate) struct TouchAhead<'m> {
    bytes: &'m [u8],
    from: usize,
    end: usize,
    /// Where the reader is (it says so now and then: [`TouchAhead::reader_at`]).
    reached: AtomicUsize,
}

/// The toucher's side: how far it has touched.
#[derive(Debug)]
pub(crate) struct Toucher<'a, 'm> {
    ahead: &'a TouchAhead<'m>,
    touched: usize,
}

impl<'m> TouchAhead<'m> {
    /// For a reader of `bytes[from..to]`, at `from`.
    pub(crate) fn new(bytes: &'m [u8], from: usize, to: usize) -> Self {
        Self {
            bytes,
            from,
            end: to.min(bytes.len()),
            reached: AtomicUsize::new(from),
        }
    }

    /// The toucher (one is enough).
    pub(crate) fn toucher(&self) -> Toucher<'_, 'm> {
        Toucher {
            ahead: self,
            touched: self.from,
        }
    }

    /// The reader is at `at`.
    #[inline]
    pub(crate) fn reader_at(&self, at: usize) {
        self.reached.store(at, Ordering::Relaxed);
    }
}

impl Toucher<'_, '_> {
    /// Touches the pages up to [`AHEAD`] bytes past where the reader is, that are not touched
    /// yet.
    pub(crate) fn touch(&mut self) {
        let limit = self
            .ahead
            .reached
            .load(Ordering::Relaxed)
            .saturating_add(AHEAD)
            .min(self.ahead.end);
        let mut sum = 0u8;
        while self.touched < limit {
            sum = sum.wrapping_add(self.ahead.bytes[self.touched]);
            self.touched += PAGE;
        }
        std::hint::black_box(sum);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_are_touched_at_most_a_bound_ahead_of_the_reader_and_never_past_the_end() {
        let bytes = vec![1u8; 16 << 20];
        let ahead = TouchAhead::new(&bytes, 4096, 1 << 40);
        let end = bytes.len();
        let mut t = ahead.toucher();
        t.touch();
        assert_eq!(t.touched, 4096 + AHEAD);
        // The reader has not moved: nothing more is touched.
        t.touch();
        assert_eq!(t.touched, 4096 + AHEAD);
        ahead.reader_at(5 << 20);
        t.touch();
        assert!(t.touched >= (5 << 20) + AHEAD && t.touched < (5 << 20) + AHEAD + PAGE);
        ahead.reader_at(15 << 20);
        t.touch();
        assert!(t.touched >= end && t.touched < end + PAGE);
    }
}

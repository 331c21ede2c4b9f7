//! A regular input file mapped read-only into memory, so a reader can parse its bytes where
//! the page cache holds them instead of copying them into buffers first (the kernel's copy was
//! 7–14% of the samples of reading a trace text). The one place virtlens-core maps memory.
//!
//! The trade-off is the one `perf` (which maps perf.data) and ripgrep make: if another process
//! truncates the file while it is being read, touching the pages past the new end raises
//! SIGBUS and ends the process. Inputs are traces and recordings that are finished (or only
//! grow) when they are read; pipes and standard input are never mapped.
//!
//! Memory stays flat: the pages a reader is done with are dropped from the map
//! ([`Mapped::done_with`]), so resident memory does not grow with the file (the page cache
//! keeps them, shared, as it keeps a read file's).

use std::fs::File;

use memmap2::Mmap;

/// A read-only map of a whole file.
pub(crate) struct Mapped {
    map: Mmap,
}

impl Mapped {
    /// Maps `file`; `None` when it cannot be (an empty file, a file system without mmap):
    /// the caller then reads it.
    pub(crate) fn new(file: &File) -> Option<Self> {
        // SAFETY: the map is read-only and private to this process; what it cannot rule out
        // is another process truncating the file while it is read, which ends in SIGBUS (see
        // the module doc), never in reading memory that is not the file's.
        let map = unsafe { Mmap::map(file) }.ok()?;
        Some(Self { map })
    }

    /// The file's bytes.
    pub(crate) fn bytes(&self) -> &[u8] {
        &self.map
    }

    /// The reader is about to read `start..end`: its pages are mapped in one call (on Linux)
    /// rather than one fault at a time as they are touched (faults cost most on a
    /// virtualized host). A failure (an older kernel) leaves them to be faulted in.
    pub(crate) fn will_read(&self, start: usize, end: usize) {
        let end = end.min(self.map.len());
        if start >= end {
            return;
        }
        #[cfg(target_os = "linux")]
        let _ = self
            .map
            .advise_range(memmap2::Advice::PopulateRead, start, end - start);
    }

    /// The reader is done with `start..end`: its pages leave this process's memory (a page
    /// that is still needed, shared with the next range, is read in again from the page
    /// cache when touched).
    pub(crate) fn done_with(&self, start: usize, end: usize) {
        let end = end.min(self.map.len());
        if start >= end {
            return;
        }
        // SAFETY: MADV_DONTNEED on a read-only file mapping only unmaps the pages: the next
        // access maps the file's page again, with the same bytes (nothing is written through
        // this map, so nothing is lost). A failure only leaves the pages resident.
        #[cfg(unix)]
        let _ = unsafe {
            self.map
                .unchecked_advise_range(memmap2::UncheckedAdvice::DontNeed, start, end - start)
        };
    }
}

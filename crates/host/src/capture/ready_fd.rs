//! `--ready-fd N`: a capture says on an inherited file descriptor that tracing is on, so a
//! script (or a test) starts its workload exactly then instead of sleeping and hoping. When
//! tracing is on, virtlens writes `ready` and a newline to descriptor N and closes it; when
//! the capture fails before that, the descriptor is closed without a line (the reader sees
//! end of file). The protocol is the one s6 and systemd-style supervisors use for readiness:
//! `virtlens record -o cap.parquet --ready-fd 3 3>ready.fifo`.

// Taking ownership of an inherited descriptor by number needs `from_raw_fd`.
#![allow(unsafe_code)]

use std::fs::File;
use std::io::Write;
use std::os::fd::FromRawFd;
use std::sync::atomic::{AtomicBool, Ordering};

use super::error::CaptureError;

/// The descriptor, owned; closed on drop.
#[derive(Debug)]
pub struct ReadyFd(File);

impl ReadyFd {
    /// Takes descriptor `n`, which must be open and inherited (call this first, before this
    /// process opens anything, so `n` cannot be one of its own). It is made close-on-exec.
    pub fn take(n: i32) -> Result<ReadyFd, CaptureError> {
        static TAKEN: AtomicBool = AtomicBool::new(false);
        if n < 3 {
            return Err(CaptureError::Usage(format!(
                "--ready-fd {n}: 0, 1 and 2 are stdin, stdout and stderr; give a descriptor of \
                 3 or more that the caller opened (e.g. 3>ready.fifo)"
            )));
        }
        // SAFETY: F_GETFD only reads the descriptor's flags; an unused number gives EBADF.
        let flags = unsafe { libc::fcntl(n, libc::F_GETFD) };
        if flags < 0 {
            return Err(CaptureError::Usage(format!(
                "--ready-fd {n}: no such open file descriptor (the caller must open it, e.g. \
                 {n}>ready.fifo)"
            )));
        }
        if TAKEN.swap(true, Ordering::SeqCst) {
            return Err(CaptureError::Usage("--ready-fd was taken already".into()));
        }
        // SAFETY: sets the close-on-exec flag of an open descriptor.
        unsafe { libc::fcntl(n, libc::F_SETFD, flags | libc::FD_CLOEXEC) };
        // SAFETY: `n` is open (checked above) and was inherited: this process has not opened
        // anything yet that could own it, and `TAKEN` makes this the only owner.
        Ok(ReadyFd(unsafe { File::from_raw_fd(n) }))
    }

    /// Writes `ready\n` and closes the descriptor. A reader that went away is not an error
    /// of the capture.
    pub fn signal(mut self) {
        let _ = self.0.write_all(b"ready\n");
    }
}

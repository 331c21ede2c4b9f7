//! The terminal for `virtlens top`: keys are read one at a time without echo (canonical mode
//! and echo off; signals such as Ctrl-C still work, so they stop the loop through the stop
//! flag), and the saved mode is put back when the guard is dropped, on every exit path that
//! runs destructors (normal end, error, signal-flag stop, panic unwinding).

#![allow(unsafe_code)]

use std::time::Duration;

/// The terminal in key-at-a-time mode; restored on drop.
pub struct RawTerminal {
    saved: libc::termios,
}

impl RawTerminal {
    /// Switches standard input to key-at-a-time mode; `None` when it is not a terminal.
    pub fn enter() -> Option<RawTerminal> {
        // SAFETY: an all-zero termios is a valid value for tcgetattr to overwrite.
        let mut saved: libc::termios = unsafe { std::mem::zeroed() };
        // SAFETY: fd 0 may or may not be a terminal; tcgetattr only writes into `saved`.
        if unsafe { libc::tcgetattr(libc::STDIN_FILENO, &mut saved) } != 0 {
            return None;
        }
        let mut raw = saved;
        raw.c_lflag &= !(libc::ICANON | libc::ECHO);
        raw.c_cc[libc::VMIN] = 0;
        raw.c_cc[libc::VTIME] = 0;
        // SAFETY: `raw` is a valid termios derived from the current one.
        if unsafe { libc::tcsetattr(libc::STDIN_FILENO, libc::TCSANOW, &raw) } != 0 {
            return None;
        }
        Some(RawTerminal { saved })
    }

    /// Waits up to `timeout` for a key; the byte read, if any.
    pub fn key(&self, timeout: Duration) -> Option<u8> {
        let mut fds = libc::pollfd {
            fd: libc::STDIN_FILENO,
            events: libc::POLLIN,
            revents: 0,
        };
        let ms = libc::c_int::try_from(timeout.as_millis()).unwrap_or(libc::c_int::MAX);
        // SAFETY: `fds` is one valid pollfd for the duration of the call.
        let ready = unsafe { libc::poll(&mut fds, 1, ms) };
        if ready <= 0 {
            return None;
        }
        let mut byte = 0u8;
        // SAFETY: reads at most one byte into `byte`, which is valid and writable.
        let n = unsafe { libc::read(libc::STDIN_FILENO, (&mut byte as *mut u8).cast(), 1) };
        (n == 1).then_some(byte)
    }
}

impl Drop for RawTerminal {
    fn drop(&mut self) {
        // SAFETY: `saved` is the mode tcgetattr returned for this terminal.
        unsafe {
            libc::tcsetattr(libc::STDIN_FILENO, libc::TCSANOW, &self.saved);
        }
    }
}

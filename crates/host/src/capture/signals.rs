//! Stopping a capture on every signal whose default action would end the process and that a
//! process may catch ([`STOP_SIGNALS`]): the handlers only set a flag (and remember which
//! signal came), and the capture loop sees it, stops, and takes its tracefs instance, its spool
//! and its unfinished output down on its normal path. SIGKILL cannot be caught: what it leaves
//! is removed by the next run of any virtlens command ([`super::leftovers`]). SIGSTOP and the
//! terminal stops only pause; SIGSEGV, SIGBUS, SIGFPE and SIGILL are faults of the process
//! itself, not requests to stop.
//!
//! A second SIGINT, SIGTERM, SIGHUP or SIGQUIT while the first is being handled ends the
//! process at once (exit status 130), for a user who does not want to wait; what that leaves
//! is removed by the next run too. The other signals (the timers, SIGUSR1, …) may come again
//! on their own, so they only ever set the flag.
//!
//! SIGPIPE is not among them: Rust programs ignore it from the start, so it never ends
//! virtlens, and a closed pipe shows as an EPIPE error where it is written (`top` then ends
//! quietly; a `--ready-fd` reader that went away does not stop the capture). SIGHUP stays
//! ignored when virtlens started with it ignored: that is what `nohup` asks for. (Other
//! inherited ignores are not kept: a shell ignores SIGINT and SIGQUIT in its background jobs,
//! and `kill -INT` must still stop a capture started with `&` in a script.)

// Reading a signal's current disposition needs sigaction(2).
#![allow(unsafe_code)]

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use libc::{
    SIGALRM, SIGHUP, SIGINT, SIGIO, SIGPROF, SIGPWR, SIGQUIT, SIGSTKFLT, SIGTERM, SIGUSR1, SIGUSR2,
    SIGVTALRM, SIGXCPU, SIGXFSZ,
};
use signal_hook::SigId;

/// The signals that stop a capture cleanly, besides the real-time ones (SIGRTMIN..=SIGRTMAX,
/// which also end a process by default).
pub(crate) const STOP_SIGNALS: [i32; 14] = [
    SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGALRM, SIGVTALRM, SIGPROF, SIGXCPU,
    SIGXFSZ, SIGIO, SIGPWR, SIGSTKFLT,
];

/// The signals a second time of which ends the process at once.
const IMPATIENT: [i32; 4] = [SIGINT, SIGTERM, SIGHUP, SIGQUIT];

/// The installed handlers; uninstalled on drop.
#[derive(Debug)]
pub struct StopSignals {
    flag: Arc<AtomicBool>,
    which: Arc<AtomicUsize>,
    ids: Vec<SigId>,
}

impl StopSignals {
    /// Installs the handlers of `STOP_SIGNALS` and the real-time signals.
    pub fn install() -> std::io::Result<StopSignals> {
        let flag = Arc::new(AtomicBool::new(false));
        let which = Arc::new(AtomicUsize::new(0));
        let mut ids = Vec::new();
        for sig in all() {
            if sig == SIGHUP && ignored(SIGHUP) {
                continue;
            }
            if IMPATIENT.contains(&sig) {
                ids.push(signal_hook::flag::register_conditional_shutdown(
                    sig,
                    130,
                    Arc::clone(&flag),
                )?);
            }
            // The signal first, then the flag the loop looks at.
            ids.push(signal_hook::flag::register_usize(
                sig,
                Arc::clone(&which),
                usize::try_from(sig).unwrap_or(0),
            )?);
            ids.push(signal_hook::flag::register(sig, Arc::clone(&flag))?);
        }
        Ok(StopSignals { flag, which, ids })
    }

    /// The flag the handlers set.
    pub fn flag(&self) -> &AtomicBool {
        &self.flag
    }

    /// Whether a stop signal arrived.
    pub fn stopped(&self) -> bool {
        self.flag.load(Ordering::Relaxed)
    }

    /// The name of the (last) signal that arrived, e.g. `SIGQUIT`.
    pub fn which(&self) -> Option<String> {
        match self.which.load(Ordering::Relaxed) {
            0 => None,
            n => Some(name(i32::try_from(n).unwrap_or(0))),
        }
    }
}

impl Drop for StopSignals {
    fn drop(&mut self) {
        for id in self.ids.drain(..) {
            signal_hook::low_level::unregister(id);
        }
    }
}

/// Whether `sig` is ignored now (`SIG_IGN`).
fn ignored(sig: i32) -> bool {
    // SAFETY: `libc::sigaction` is a plain C struct for which all zero bytes is a valid value
    // (it is only overwritten below).
    let mut old: libc::sigaction = unsafe { std::mem::zeroed() };
    // SAFETY: sigaction(2) with a null new action changes nothing and only writes the current
    // action into `old`, a valid, exclusively borrowed `sigaction`.
    let r = unsafe { libc::sigaction(sig, std::ptr::null(), &mut old) };
    r == 0 && old.sa_sigaction == libc::SIG_IGN
}

/// Every signal handled: [`STOP_SIGNALS`] and SIGRTMIN..=SIGRTMAX.
pub(crate) fn all() -> Vec<i32> {
    let mut v = STOP_SIGNALS.to_vec();
    v.extend(libc::SIGRTMIN()..=libc::SIGRTMAX());
    v
}

/// `SIGQUIT`, `SIGRTMIN+3`, …
pub(crate) fn name(sig: i32) -> String {
    match sig {
        SIGPWR => return "SIGPWR".into(),
        SIGSTKFLT => return "SIGSTKFLT".into(),
        _ => {}
    }
    if let Some(n) = signal_hook::low_level::signal_name(sig) {
        return n.to_string();
    }
    let (min, max) = (libc::SIGRTMIN(), libc::SIGRTMAX());
    if sig == min {
        return "SIGRTMIN".into();
    }
    if sig == max {
        return "SIGRTMAX".into();
    }
    if (min..=max).contains(&sig) {
        return format!("SIGRTMIN+{}", sig - min);
    }
    format!("signal {sig}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert_eq!(name(SIGQUIT), "SIGQUIT");
        assert_eq!(name(SIGUSR1), "SIGUSR1");
        assert_eq!(name(SIGPWR), "SIGPWR");
        assert_eq!(name(libc::SIGRTMIN() + 2), "SIGRTMIN+2");
        assert_eq!(name(libc::SIGRTMAX()), "SIGRTMAX");
        let all = all();
        for forbidden in signal_hook::consts::FORBIDDEN {
            assert!(!all.contains(forbidden), "{forbidden}");
        }
        assert!(!all.contains(&libc::SIGPIPE) && all.contains(&SIGALRM));
    }

    #[test]
    fn a_signal_to_this_process_sets_the_flag_and_says_which() {
        let s = StopSignals::install().unwrap_or_else(|e| panic!("{e}"));
        assert!(!s.stopped());
        // SIGUSR2 is not one whose second arrival ends the process, and nothing else in the
        // test binary uses it.
        signal_hook::low_level::raise(SIGUSR2).unwrap_or_else(|e| panic!("{e}"));
        assert!(s.stopped());
        assert_eq!(s.which().as_deref(), Some("SIGUSR2"));
    }
}

//! Stopping a capture on SIGINT, SIGTERM and SIGHUP: the handlers only set a flag, and the
//! capture loop sees it, stops, and takes its tracefs instance down on its normal path. A
//! second signal while the first is being handled ends the process at once (exit status
//! 130); the instance it leaves behind is removed by the next run.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use signal_hook::SigId;
use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};

/// The installed handlers; uninstalled on drop.
#[derive(Debug)]
pub struct StopSignals {
    flag: Arc<AtomicBool>,
    ids: Vec<SigId>,
}

impl StopSignals {
    /// Installs the handlers.
    pub fn install() -> std::io::Result<StopSignals> {
        let flag = Arc::new(AtomicBool::new(false));
        let mut ids = Vec::new();
        for sig in [SIGINT, SIGTERM, SIGHUP] {
            ids.push(signal_hook::flag::register_conditional_shutdown(
                sig,
                130,
                Arc::clone(&flag),
            )?);
            ids.push(signal_hook::flag::register(sig, Arc::clone(&flag))?);
        }
        Ok(StopSignals { flag, ids })
    }

    /// The flag the handlers set.
    pub fn flag(&self) -> &AtomicBool {
        &self.flag
    }

    /// Whether a stop signal arrived.
    pub fn stopped(&self) -> bool {
        self.flag.load(Ordering::Relaxed)
    }
}

impl Drop for StopSignals {
    fn drop(&mut self) {
        for id in self.ids.drain(..) {
            signal_hook::low_level::unregister(id);
        }
    }
}

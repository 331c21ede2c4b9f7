//! Live capture of KVM events through a tracefs instance of virtlens's own
//! (`instances/virtlens-<pid>`), never the global buffer or another tool's instance.
//!
//! - `tracefs`: the instance and its cleanup on every path; stale instances of dead
//!   virtlens processes are removed at start.
//! - `events`: the tracepoints that exist here, their `format` files, `common_pid` filters.
//! - `pipes`, `session`: per-CPU `trace_pipe_raw` pages (decoded by
//!   `virtlens_core::decode::ring_buffer`), lost-event accounting from the `stats` files.
//! - `identity`: thread → VMM process, name and vCPU, resolved while the threads live.
//! - `spool`, `merge`, `record`: recording, then the events in time order into the
//!   profile and the capture file (`parquet_out`).
//! - `vm_stats`: KVM binary statistics of the watched VMs (pidfd_getfd + KVM_GET_STATS_FD).
//! - `live`, [`top_view`], `tty`: `virtlens top`.
//! - `output`: the capture file checked before the capture, written to a temporary file
//!   and renamed into place; `buffers`: the ring buffers' kernel memory, bounded.
//! - `signals`: every catchable terminating signal only sets a flag; the loop stops and
//!   cleans up. `leftovers`: what a killed capture leaves is found and removed by the next
//!   run of any command.
//!
//! Needs root and tracefs; [`CaptureError`] says exactly what is missing.

pub(crate) mod buffers;
pub(crate) mod clock;
pub(crate) mod error;
pub(crate) mod events;
pub(crate) mod identity;
pub(crate) mod leftovers;
pub(crate) mod live;
pub(crate) mod merge;
pub(crate) mod output;
pub(crate) mod parquet_out;
pub(crate) mod pipes;
pub(crate) mod ready_fd;
pub(crate) mod record;
pub(crate) mod session;
pub(crate) mod signals;
pub(crate) mod spool;
mod summary_text;
pub(crate) mod top_view;
pub(crate) mod tracefs;
pub(crate) mod tty;
pub(crate) mod vm_stats;

use std::path::PathBuf;
use std::time::Duration;

use buffers::BufferPlan;
use tracefs::Tracefs;

pub use error::CaptureError;
pub use output::OutputFile;
pub use ready_fd::ReadyFd;
pub use record::{
    Control, Progress, RECORD_SCHEMA, Ready, RecordSummary, record_profile, record_to_file,
};
pub use signals::StopSignals;
pub use tty::RawTerminal;

// What other crates use of this area (docs/development.md, "Public API").
pub use leftovers::sweep as sweep_leftovers;
pub use top_view::build as top_view;

/// What can be checked before anything is set up: root, tracefs, the ring buffers' size.
/// (`record` does it before it checks and creates its output, so a user who cannot capture
/// hears that first.)
pub fn preflight(opts: &CaptureOptions) -> Result<(), CaptureError> {
    Tracefs::locate(opts.tracefs.as_deref())?;
    BufferPlan::for_host(opts.buffer_kb)?;
    Ok(())
}

/// What to capture.
#[derive(Debug, Clone, PartialEq)]
pub struct CaptureOptions {
    /// How long; `None` until stopped.
    pub duration: Option<Duration>,
    /// `--events`: tracepoints or systems (`kvm`, `kvm:kvm_pio`, `kvmmmu`, `irq:*`); empty
    /// for the default (`kvm`).
    pub events: Vec<String>,
    /// Only this VMM process.
    pub pid: Option<u32>,
    /// Only the VM with this name (exact, else a unique part of it).
    pub vm: Option<String>,
    /// Ring-buffer size per CPU, in KiB (`buffers::MIN_KB`..=`buffers::MAX_KB`).
    pub buffer_kb: u32,
    /// Where tracefs is (default: /sys/kernel/tracing, then /sys/kernel/debug/tracing).
    pub tracefs: Option<PathBuf>,
    /// Read the KVM binary statistics of the watched VMs too.
    pub kvm_stats: bool,
}

impl Default for CaptureOptions {
    fn default() -> Self {
        Self {
            duration: None,
            events: Vec::new(),
            pid: None,
            vm: None,
            buffer_kb: 8192,
            tracefs: None,
            kvm_stats: true,
        }
    }
}

//! Why a capture could not be made. Missing privileges or tracefs, or a selection that
//! matches nothing, are the user's to fix (exit code 2); the messages say exactly what is
//! missing and how to get it.

use std::path::PathBuf;

/// A capture failure.
#[derive(Debug, thiserror::Error)]
pub enum CaptureError {
    /// Not running as root (tracefs instances and other processes' KVM fds need it).
    #[error(
        "live capture needs root: creating a tracefs instance under {0} and reading other \
         processes' KVM statistics are privileged (run with sudo)"
    )]
    NotRoot(PathBuf),
    /// No tracefs mounted.
    #[error(
        "tracefs is not mounted (looked at /sys/kernel/tracing and /sys/kernel/debug/tracing); \
         mount it with `mount -t tracefs nodev /sys/kernel/tracing`"
    )]
    NoTracefs,
    /// The kernel has none of the requested events.
    #[error("{0}")]
    NoEvents(String),
    /// `--pid`/`--vm` selected nothing.
    #[error("{0}")]
    Selection(String),
    /// Bad options (an event list that does not parse, a zero interval).
    #[error("{0}")]
    Usage(String),
    /// A tracefs or spool file operation failed.
    #[error("{what} ({path}): {source}")]
    Io {
        what: String,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// Writing the capture file failed.
    #[error("writing the capture file {path}: {message}")]
    Write { path: PathBuf, message: String },
    /// The kernel's trace data could not be understood.
    #[error("{0}")]
    Decode(String),
}

impl CaptureError {
    /// An I/O error while doing `what` on `path`.
    pub fn io(what: impl Into<String>, path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        CaptureError::Io {
            what: what.into(),
            path: path.into(),
            source,
        }
    }

    /// Whether the user can fix it (privileges, mounts, options): exit code 2.
    pub fn is_usage(&self) -> bool {
        matches!(
            self,
            CaptureError::NotRoot(_)
                | CaptureError::NoTracefs
                | CaptureError::NoEvents(_)
                | CaptureError::Selection(_)
                | CaptureError::Usage(_)
        )
    }
}

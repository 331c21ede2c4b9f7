//! The host's kernel log as evidence (`kernel_log` tables, see
//! [`crate::sources::kernel_log`]): its rows — lock traps and lockups of VM threads, MSRs KVM
//! does not emulate — and the span its stamps cover. It comes from the input itself when the
//! input is a kernel log, or is joined from a kernel log given in the same run
//! (`virtlens diagnose exits.txt dmesg.txt`); `hypotheses::hostlog` reads it.

use crate::profile::{Key, Row, Table, TableKind};

/// What a kernel log says.
#[derive(Debug, Clone, Default)]
pub struct HostLog {
    pub rows: Vec<Row>,
    /// The span of the log's stamps, when it has them.
    pub window_ns: Option<u64>,
    /// The log is another input's, joined with this one.
    pub joined: bool,
}

impl HostLog {
    /// The kernel-log rows of `tables`; `None` when there are none.
    pub fn of<'a>(tables: impl IntoIterator<Item = &'a Table>, joined: bool) -> Option<HostLog> {
        let mut log = HostLog {
            joined,
            ..HostLog::default()
        };
        let mut any = false;
        for t in tables
            .into_iter()
            .filter(|t| t.kind == TableKind::KernelLog)
        {
            any = true;
            log.rows.extend(t.rows.iter().cloned());
            if let Some(w) = t.window.as_ref().and_then(|w| w.duration_ns) {
                log.window_ns = Some(log.window_ns.map_or(w, |x| x.max(w)));
            }
        }
        any.then_some(log)
    }

    /// The rows of events `names`.
    pub fn events(&self, names: &[&str]) -> Vec<&Row> {
        self.rows
            .iter()
            .filter(|r| matches!(&r.key, Key::Event { name } if names.contains(&name.as_str())))
            .collect()
    }

    /// The MSR rows.
    pub fn msrs(&self) -> Vec<&Row> {
        self.rows
            .iter()
            .filter(|r| matches!(r.key, Key::Msr { .. }))
            .collect()
    }
}

//! What the line driver asks to split two kvm_stat lines joined into one (`… 187> >>>>
//! irq_exits …`): whether a line reads whole in the current run, and whether a run is open.

use super::command::command;
use super::screen::{self, Columns};
use super::{Current, Reader, headerless, log, names};
use crate::sources::lines::{self, strip_ctrl_c};

/// Whether `t` is a `-l` banner ([`log::plain_banner`] without building it).
impl Reader {
    /// Whether a run is being read (or a `-l` banner waits for its numbers): joined lines are
    /// looked for only then.
    pub(super) fn in_run(&self) -> bool {
        !matches!(self.current, Current::None) || self.pending.is_some()
    }

    /// Whether line `text` reads whole as it stands, in the current run.
    pub(super) fn reads_whole(&self, text: &str) -> bool {
        let raw = strip_ctrl_c(text);
        let t = raw.trim();
        let data = |t: &str| log::plain_data(t).is_some();
        if matches!(self.current, Current::Board(_)) && screen::cut_row(t, false).is_some() {
            return false;
        }
        if t.is_empty()
            || command(t).is_some()
            || screen::title(t).is_some()
            || log::csv_banner(t).is_some()
            || screen::header(raw).is_some()
            || log::is_banner(t)
            || lines::elision(t)
            || (self.pending.is_some() && data(t))
        {
            return true;
        }
        match &self.current {
            Current::Log(l) if l.csv => log::csv_data(t).is_some(),
            Current::Log(_) => data(t),
            Current::Board(b) => {
                screen::filter(t).is_some()
                    || screen::status(t).is_some()
                    || screen::row(raw, b.columns(), b.run.by_guest).is_some()
            }
            Current::None => {
                screen::row(raw, Columns::TotalRate, false)
                    .is_some_and(|r| r.strays.is_empty() && names::is_known(&r.name))
                    || headerless::bare_screen_row(raw).is_some()
            }
        }
    }
}

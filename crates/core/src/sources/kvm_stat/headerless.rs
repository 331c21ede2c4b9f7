//! kvm_stat blocks pasted without their title and column header: a block whose counters
//! repeat those of the block above after a blank line is another run in its columns; rows in
//! the columns of today's screen outside a block start a screen. Both are noted, and a damaged
//! first row is noted too.

use super::board::Board;
use super::build::RunKind;
use super::screen::{self, Columns};
use super::{Current, Reader, names};

/// The indentation of a row in the columns of today's screen (`name  total  %total  rate`)
/// whose name is a known counter, when `raw` is one.
pub(super) fn bare_screen_row(raw: &str) -> Option<usize> {
    let cells: Vec<&str> = raw.split_ascii_whitespace().collect();
    if cells.len() != 4 || !cells.get(2).is_some_and(|c| c.contains('.')) {
        return None;
    }
    screen::row(raw, Columns::TotalPercentRate, false)
        .filter(|r| r.strays.is_empty() && r.rate.is_some() && names::is_known(&r.name))
        .map(|r| r.indent)
}

impl Reader {
    /// A block of rows pasted without its title and column header, starting at line `n`:
    /// after a blank line, a row that repeats a counter of the board above starts another
    /// board like it; outside a board (or after a blank line, where the board's columns do not
    /// fit), a row in the columns of today's screen starts a screen. Either is read and noted.
    pub(super) fn headerless_block(&mut self, n: usize, raw: &str, after_blank: bool) -> bool {
        let again = match &self.current {
            Current::Board(b) if after_blank => {
                let columns = b.columns();
                screen::row(raw, columns, b.run.by_guest)
                    .filter(|r| r.strays.is_empty() && b.has_counter(&r.name))
                    .map(|_| (b.again(n), b.run.line))
            }
            _ => None,
        };
        if let Some((board, above)) = again {
            self.finish();
            let message = if board.run.kind == RunKind::Batch {
                format!(
                    "a counter of the `kvm_stat -1` listing on line {above} repeats after a blank \
                     line: another listing, read as a run of its own"
                )
            } else {
                format!(
                    "a block without its header, after the screen on line {above} (a counter \
                     repeats after a blank line): read as another screen in its columns"
                )
            };
            self.note(n, message);
            self.start(Current::Board(board));
            return self.board_row(n, raw);
        }
        let open = match &self.current {
            Current::None => true,
            // A listing's rows never turn into a screen's: one that does was a screen's first
            // row, damaged into a listing's shape (it stays a run of its own, counted).
            Current::Board(b) => {
                (after_blank || b.run.kind == RunKind::Batch)
                    && b.columns() != Columns::TotalPercentRate
                    && screen::row(raw, b.columns(), b.run.by_guest).is_none()
            }
            Current::Log(_) => false,
        };
        let Some(indent) = open.then(|| bare_screen_row(raw)).flatten() else {
            return false;
        };
        self.finish();
        // The line just above, damaged, was this block's first row.
        let above = self
            .unrecognised_before
            .take()
            .filter(|(m, _)| m + 1 == n)
            .and_then(|(m, text)| screen::damage(&text).map(|why| (m, text, why)));
        let mut board = Board::screen(None, above.as_ref().map_or(n, |a| a.0));
        if let Some((m, text, why)) = &above {
            board.run.partial = true;
            self.book.unreadable(*m, text.trim(), why);
        }
        board.set_header(screen::Header {
            columns: Columns::TotalPercentRate,
            by_guest: false,
            indent,
        });
        self.note(
            n,
            "a kvm_stat block without its title and header: read in the columns of today's \
             screen (`Event  Total %Total CurAvg/s`)"
                .into(),
        );
        self.start(Current::Board(board));
        self.board_row(n, raw)
    }

    /// Line `n` as a row of the current board.
    fn board_row(&mut self, n: usize, raw: &str) -> bool {
        let t = raw.trim();
        if let Current::Board(b) = &mut self.current
            && b.line(n, raw, t, &mut self.profile.warnings)
        {
            self.book.row(n);
        }
        true
    }
}

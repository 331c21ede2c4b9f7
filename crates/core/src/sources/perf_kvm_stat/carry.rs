//! Rows a mailer wrapped onto the next line (`Carry`): joined with their continuation, and
//! what a started row that was never completed was — a label, a row cut after its name, a row
//! the input ends in, or an unreadable row (noted with every line it spans).

use super::row::{self, Parsed};
use super::table::pending_code;
use super::{Carry, Reader, damaged};
use crate::sources::unread::excerpt;

impl Reader {
    /// A started row that the next line did not complete: a one-word line was prose (a label
    /// such as `Before`), anything longer an unreadable row; the last line of an input cut
    /// off inside a row is said to be so (and read when only its spread is missing).
    ///
    /// `next` is the line after it (none at a table's end): a one-word line that names an
    /// exit (`UNKNOWN`) between rows of the table is a row cut short, not a label.
    pub(super) fn unfinished(&mut self, carry: Carry, next: Option<&str>) {
        let last = carry.line + usize::from(carry.joins);
        let cut = self.cut == Some(last);
        let one_word = carry.joins == 0 && !carry.text.contains(char::is_whitespace);
        if cut {
            self.cut_row(carry);
        } else if one_word && !self.row_cut_after_name(&carry.text, next) {
            self.prose(carry.line, &carry.text);
        } else if one_word {
            self.bad_row(
                carry.line,
                &carry.text,
                "no values after its name; cut short?",
            );
        } else if carry.joins > 0 {
            let why = format!(
                "lines {}–{last}: even joined, they do not fill the header's columns",
                carry.line
            );
            self.bad_row(carry.line, &carry.text, &why);
        } else {
            self.bad_row(
                carry.line,
                &carry.text,
                "even joined with the next line, it does not fill the header's columns",
            );
        }
    }

    /// Whether `name`, alone on its line, is a row cut after its name: it names an exit the
    /// way perf prints one, and the table has rows above it or a row follows.
    pub(super) fn row_cut_after_name(&self, name: &str, next: Option<&str>) -> bool {
        let Some(b) = &self.table else {
            return false;
        };
        let next_is_row =
            next.is_some_and(|t| matches!(row::parse(t, &b.layout, 0), Parsed::Row(_)));
        // Under a header, a name alone is a row cut short even as the table's last line.
        row::name_like(name) && (!b.rows.is_empty() || next_is_row || b.header)
    }

    /// The row the input ends in.
    pub(super) fn cut_row(&mut self, carry: Carry) {
        let Some(b) = &mut self.table else {
            return;
        };
        b.partial = true;
        let whole = row::without_cut_spread(&carry.text)
            .map(|text| row::parse(text, &b.layout, carry.line));
        if let Some(Parsed::Row(r)) = whole {
            b.push(r, None);
            self.note(
                carry.line,
                "the input ends inside this row's spread `( +- …`: the row is read without it"
                    .into(),
            );
            return;
        }
        self.note(
            carry.line,
            format!(
                "the input ends inside this row (cut off?), so it is left out: `{}`",
                excerpt(&carry.text)
            ),
        );
    }

    /// Joins a wrapped row with its continuation; false when `t` does not continue it.
    pub(super) fn join_carry(&mut self, carry: &Carry, t: &str) -> bool {
        let Some(b) = &mut self.table else {
            return false;
        };
        if !damaged::continues(t) || matches!(row::parse(t, &b.layout, 0), Parsed::Row(_)) {
            // A name starts a row of its own, and a whole row is never the rest of the one
            // above it.
            return false;
        }
        let joined = format!("{} {t}", carry.text);
        match row::parse(&joined, &b.layout, carry.line) {
            Parsed::Row(r) => {
                let unknown = pending_code(&r, &mut self.unknown);
                b.push(r, unknown);
                true
            }
            Parsed::Incomplete if carry.joins < 2 => {
                self.carry = Some(Carry {
                    text: joined,
                    line: carry.line,
                    joins: carry.joins + 1,
                });
                true
            }
            _ => false,
        }
    }
}

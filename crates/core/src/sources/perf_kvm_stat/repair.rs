//! Damaged lines that are not rows: a scope line read without the characters that damaged it
//! (or noted when its pid or vCPU is lost), a header damaged or cut short, and a line between
//! rows that is neither a row nor a label (kept until the next line tells which it was).

use super::layout::{self, Scope};
use super::row::{self, Parsed};
use super::{Reader, damaged};
use crate::sources::line_repairs;
use crate::sources::unread::excerpt;

impl Reader {
    /// The line kept by [`Reader::prose`], now that line `next` follows it (none at a
    /// table's end).
    pub(super) fn settle_pending(&mut self, next: Option<&str>) {
        let Some((m, text)) = self.pending.take() else {
            return;
        };
        let row_follows = next.is_some_and(|t| {
            !t.is_empty()
                && self
                    .table
                    .as_ref()
                    .is_some_and(|b| !matches!(row::parse(t, &b.layout, 0), Parsed::NotARow))
        });
        if row_follows {
            self.bad_row(
                m,
                &text,
                "a line between rows of the table that is not a row (damaged?)",
            );
        } else {
            self.prose_now(m, &text);
        }
    }

    /// The scope of line `t`, read without characters that damaged it (noted as a repair);
    /// a scope whose pid or vCPU cannot be read, or that does not end as perf ends it, is
    /// noted (its rows then have no pid or vCPU).
    pub(super) fn checked_scope(&mut self, n: usize, t: &str, scope: Scope) -> Scope {
        let (text, scope) = match line_repairs::without_damage(t) {
            Some((clean, why)) => {
                self.book.repaired(
                    n,
                    &format!("the scope line with {why} in it, read without it"),
                );
                let scope = layout::scope(&clean).unwrap_or(scope);
                (std::borrow::Cow::Owned(clean), scope)
            }
            None => (std::borrow::Cow::Borrowed(t), scope),
        };
        let text = text.trim_ascii();
        // Searched for only where a `(` is (the scope of all VMs has none, every interval).
        let pids = memchr::memchr(b'(', text.as_bytes())
            .and_then(|_| text.split_once("pid(s) "))
            .map(|(_, r)| r.split(", ").next().unwrap_or(r));
        let lost_pid = pids.is_some_and(|p| !p.contains(',')) && scope.pid.is_none();
        let lost_vcpu =
            text.contains("VCPU ") && !text.contains("all VCPUs") && scope.vcpu.is_none();
        if lost_pid || lost_vcpu || !text.ends_with(':') {
            let what = if lost_pid {
                "its pid cannot be read"
            } else if lost_vcpu {
                "its vCPU cannot be read"
            } else {
                "it does not end with `:` (cut short?)"
            };
            self.note(
                n,
                format!("the scope line is damaged ({what}): the table's scope may be incomplete"),
            );
        }
        scope
    }

    /// A header or scope line damaged: read without the damage (noted as a repair), or, cut
    /// short, noted as lost (the rows under it then read in the layout their cells show, and
    /// the label above stays the table's).
    pub(super) fn damaged_structure(&mut self, n: usize, t: &str) -> bool {
        if let Some((clean, why)) = line_repairs::without_damage(t) {
            let clean = clean.trim_ascii();
            if let Some(header) = layout::header(clean) {
                self.book.repaired(
                    n,
                    &format!("the column header with {why} in it, read without it"),
                );
                self.start_table(n, header.kind, header.layout);
                return true;
            }
            if let Some(scope) = layout::scope(clean) {
                self.finish();
                self.scope = Some(self.checked_scope(n, t, scope));
                return true;
            }
        }
        if self.table.as_ref().is_some_and(|b| !b.rows.is_empty()) {
            return false; // inside a table, only what reads as a whole header starts another
        }
        if let Some(kind) = damaged::header_stub(t) {
            self.finish();
            if kind.is_some() {
                self.kind_hint = kind;
            }
            self.note(
                n,
                format!(
                    "a column header cut short (`{}`): the rows under it are read in the \
                     layout their cells show, or left out",
                    excerpt(t)
                ),
            );
            return true;
        }
        if damaged::scope_stub(t) {
            self.finish();
            self.note(
                n,
                format!(
                    "a scope line cut short (`{}`): the table's scope is unknown",
                    excerpt(t)
                ),
            );
            return true;
        }
        false
    }
}

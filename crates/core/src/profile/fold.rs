//! The bound on a table's rows: past [`TABLE_CAP`] rows, the rarest fold into one `other` row
//! (with the range of the addresses it holds), so time stays linear and memory bounded in the
//! number of distinct keys (ports, MMIO addresses, MSRs, names, VMs, vCPUs) whatever the input
//! holds. Totals stay exact, and the profile says what was folded.
//!
//! Event streams fold as they are read (`events::slots`); tables read whole (pasted reports)
//! fold once read ([`Table::fold_rarest`]). Both name the row with [`other_key`].

use super::{Key, Note, Row, Table, TableKind};

/// The most rows one table keeps. Real profiles have a few hundred (256 vCPUs × 30 exit
/// reasons is 7,680); only generated or hostile input reaches it.
pub const TABLE_CAP: usize = 8192;

/// What the keys of a table of `kind` are, in the `other` row's name.
fn keys_word(kind: &TableKind) -> &'static str {
    match kind {
        TableKind::Vmexit => "exit reasons",
        TableKind::Ioport => "ports",
        TableKind::Mmio | TableKind::CoalescedMmio => "addresses",
        TableKind::Msr => "MSRs",
        TableKind::Hypercall => "hypercalls",
        TableKind::GuestRip => "guest RIPs",
        _ => "names",
    }
}

/// The key of the `other` row of a table of `kind`; `range` is the lowest and highest
/// address (port, MSR) folded into it, when the keys are numbers.
pub(crate) fn other_key(kind: &TableKind, range: Option<(u64, u64)>) -> Key {
    let name = match range {
        Some((low, high)) => format!("other {} {low:#x}–{high:#x}", keys_word(kind)),
        None => format!("other {}", keys_word(kind)),
    };
    Key::Event { name }
}

/// The note saying that a table of `kind` folded `rows` rows holding `events` events into
/// its `other` row `key`.
pub(crate) fn folded_note(kind: &TableKind, cap: usize, key: &Key, rows: u64, events: u64) -> Note {
    Note {
        line: None,
        message: format!(
            "the `{kind}` table had more than {cap} rows (keys × VMs × vCPUs), so its rarest \
             {rows} rows ({events} events) were folded into one `{}` row: every total is exact",
            key.key_text()
        ),
    }
}

impl Table {
    /// Folds all but the `cap − 1` largest rows into one `other` row, when the table has more
    /// than `cap` rows; the note says so. Tables of counters that include one another
    /// ([`Table::overlapping`]) are left whole: their rows do not add up.
    pub fn fold_rarest(&mut self, cap: usize) -> Option<Note> {
        let cap = cap.max(2);
        if self.rows.len() <= cap || self.overlapping {
            return None;
        }
        let keep = cap - 1;
        self.rows
            .select_nth_unstable_by(keep, |a, b| b.count.cmp(&a.count).then(a.key.cmp(&b.key)));
        let folded = self.rows.split_off(keep);
        let (mut rows, mut events, mut range) = (0u64, 0u64, None::<(u64, u64)>);
        let mut other: Option<Row> = None;
        for row in &folded {
            rows += 1;
            events = events.saturating_add(row.count);
            if let Some(n) = numeric(&row.key) {
                range = Some(range.map_or((n, n), |(l, h)| (l.min(n), h.max(n))));
            }
            match &mut other {
                Some(o) => o.merge(row),
                None => other = Some(row.clone()),
            }
        }
        let mut other = other?;
        other.key = other_key(&self.kind, range);
        let note = folded_note(&self.kind, cap, &other.key, rows, events);
        self.rows.push(other);
        self.rows
            .sort_by(|a, b| b.count.cmp(&a.count).then_with(|| a.key.cmp(&b.key)));
        Some(Note {
            line: self.line,
            ..note
        })
    }
}

/// The number a port, MMIO or MSR key stands for.
fn numeric(key: &Key) -> Option<u64> {
    match key {
        Key::Port { port: n, .. }
        | Key::Mmio { gpa: n, .. }
        | Key::Msr { index: n, .. }
        | Key::GuestRip { rip: n, .. } => Some(*n),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mmio_table(counts: &[u64]) -> Table {
        let mut t = Table::new(TableKind::Mmio);
        for (i, &c) in counts.iter().enumerate() {
            let key = Key::Mmio {
                gpa: 0x1000 + 4 * i as u64,
                access: None,
            };
            t.rows.push(Row::new(key, c));
        }
        t
    }

    #[test]
    fn a_long_table_keeps_its_largest_rows_and_exact_total() {
        let counts: Vec<u64> = (0..100).map(|i| (i * 37) % 101 + 1).collect();
        let mut t = mmio_table(&counts);
        let note = t.fold_rarest(10);
        assert_eq!(t.rows.len(), 10);
        assert_eq!(
            t.rows.iter().map(|r| r.count).sum::<u64>(),
            counts.iter().sum::<u64>()
        );
        let mut sorted = counts.clone();
        sorted.sort_unstable_by(|a, b| b.cmp(a));
        let kept: Vec<u64> = t
            .rows
            .iter()
            .filter(|r| numeric(&r.key).is_some())
            .map(|r| r.count)
            .collect();
        assert_eq!(
            kept,
            sorted[..9].to_vec(),
            "the nine largest rows are kept as they were"
        );
        let message = note.map(|n| n.message).unwrap_or_default();
        assert!(message.contains("91 rows"), "{message}");
        assert!(
            t.rows
                .iter()
                .any(|r| r.key.key_text().starts_with("other addresses 0x"))
        );
    }

    #[test]
    fn short_and_overlapping_tables_stay_whole() {
        let mut t = mmio_table(&[5, 4, 3]);
        assert!(t.fold_rarest(10).is_none());
        let mut t = mmio_table(&[1; 50]);
        t.overlapping = true;
        assert!(t.fold_rarest(10).is_none());
        assert_eq!(t.rows.len(), 50);
    }
}

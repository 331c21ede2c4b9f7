//! The end of building: [`ProfileBuilder::finish`] turns the accumulators into a profile's
//! tables (keys decoded, rows largest first), with the inhibits still held at the end, the
//! timeline and the builder's notes.

use super::{Place, ProfileBuilder};
use crate::events::names::{MAX_NAMES, OTHER_NAMES};
use crate::events::slots::{CKey, Slot};
use crate::profile::{Key, Profile, Row, Table, Window};

impl ProfileBuilder {
    /// The profile: one table per kind that saw events, rows largest first.
    pub fn finish(mut self) -> Profile {
        self.held_inhibits();
        let isa = self.isa.or_else(|| self.reasons.guess_isa());
        let reason_keys = self.reasons.keys(isa);
        let window = self.first_ts.zip(self.last_ts).map(|(a, b)| Window {
            start: None,
            end: None,
            duration_ns: Some(b - a),
            intervals: 0,
        });
        let mut tables: Vec<Table> = Vec::new();
        let other_keys: Vec<(Slot, Key)> = Slot::ALL
            .iter()
            .map(|&s| (s, self.accs.other_key(s)))
            .collect();
        let (mut accs, notes) = self.accs.finish();
        accs.sort_by_key(|(k, _)| k.slot);
        for (sk, acc) in accs {
            let key = match sk.key {
                CKey::Reason(id) => reason_keys.get(id as usize).cloned(),
                CKey::Addr(n, access) => Some(match sk.slot {
                    Slot::Ioport => Key::Port { port: n, access },
                    Slot::Mmio => Key::Mmio { gpa: n, access },
                    Slot::Msr => Key::Msr { index: n, access },
                    _ => Key::Event {
                        name: format!("{n:#x}"),
                    },
                }),
                CKey::Rip(id, rip) => reason_keys.get(id as usize).map(|k| Key::GuestRip {
                    reason: k.key_text(),
                    rip,
                }),
                CKey::Name(id) => self.names.get(id).map(|n| Key::Event {
                    name: n.to_string(),
                }),
                CKey::Folded => other_keys
                    .iter()
                    .find(|(s, _)| *s == sk.slot)
                    .map(|(_, key)| key.clone()),
            };
            let Some(key) = key else { continue };
            let mut row = Row::new(key, acc.count);
            row.pid = sk.pid;
            row.vcpu = sk.vcpu;
            if acc.durations.count() > 0 {
                row.time = acc.durations.stats();
                if row.time.timed == Some(acc.count) {
                    row.time.timed = None;
                }
                row.latency = acc.latency;
            }
            let kind = sk.slot.kind();
            match tables.last_mut() {
                Some(t) if t.kind == kind => t.rows.push(row),
                _ => {
                    let mut t = Table::new(kind);
                    t.isa = (sk.slot == Slot::Vmexit).then_some(isa).flatten();
                    t.window = window.clone();
                    t.rows.push(row);
                    tables.push(t);
                }
            }
        }
        for t in &mut tables {
            t.rows
                .sort_by(|a, b| b.count.cmp(&a.count).then_with(|| a.key.cmp(&b.key)));
        }
        let mut origin = self.origin;
        origin.isa = origin.isa.or(isa);
        let mut profile = Profile::new(origin);
        profile.tables = tables;
        profile.warnings = notes;
        profile.timeline = self.timeline.finish(isa);
        profile.warnings.extend(self.threads.notes());
        if self.names.more > 0 {
            profile.warnings.push(crate::profile::Note {
                line: None,
                message: format!(
                    "more than {MAX_NAMES} distinct event names: {} events with later new \
                     names are counted as `{OTHER_NAMES}`",
                    self.names.more
                ),
            });
        }
        profile
    }

    /// The inhibits each VM still had set after its last change: a `held` row each, so that a
    /// reason set before the trace began and never cleared shows as sticky.
    fn held_inhibits(&mut self) {
        let mut masks: Vec<(Option<u32>, (u64, bool))> =
            self.inhibit_masks.iter().map(|(k, v)| (*k, *v)).collect();
        masks.sort_unstable();
        for (pid, (mask, legacy)) in masks {
            for bit in (0..64u32).filter(|b| mask & (1u64 << b) != 0) {
                let named = self.inhibits.get(&(pid, bit)).and_then(|s| s.named);
                let change = crate::decode::apicv_inhibit::Change {
                    set: true,
                    number: bit,
                    inhibits: None,
                    named,
                    legacy,
                    held: true,
                };
                let id = self.names.id(&change.key());
                let at = Place {
                    thread: None,
                    pid,
                    vcpu: None,
                };
                self.count(at, Slot::ApicvInhibit, CKey::Name(id));
            }
        }
    }
}

//! The end of a trace text: a wrapped line still waiting is read, the tallies of noteworthy
//! lines become notes (each with its first line), and the profile is built, or the input is
//! refused when it held no event line at all.

use super::*;

impl Reader {
    pub(super) fn finish(mut self, cut: Option<usize>) -> Result<Profile> {
        if let Some(w) = self.wrapped.take() {
            match line::split(&w.text) {
                Some(l) if w.event => self.event(w.line, l),
                _ => self.unknown_line(w.line, &w.text),
            }
        }
        let expected = "expected trace event lines such as `qemu-system-x86 1234 [002] \
                        770.850287: kvm:kvm_exit: …` (perf script), `CPU 0/KVM-1234 [002] \
                        770.850287: kvm_exit: …` (trace-cmd report, ftrace) or perf top's \
                        `Overhead  Trace output` rows";
        let events = self.event_lines();
        if let Some(n) = self.stopped
            && events > 0
        {
            let first = self
                .dialects
                .iter()
                .filter(|t| t.count > 0)
                .map(|t| t.first)
                .min();
            return Err(Error::Parse {
                path: self.path,
                line: n,
                message: format!(
                    "{expected}; found {events} event line(s) among the first {n} lines (the \
                     first on line {}) and {} lines that are not events: not a trace, so reading \
                     stopped here",
                    first.unwrap_or(0),
                    self.unknown.count.saturating_add(self.interrupted.count)
                ),
            });
        }
        if self.builder.events() == 0 && !self.top.has_rows() {
            return Err(match self.first_line {
                Some((line, text)) => Error::Parse {
                    path: self.path,
                    line,
                    message: format!("{expected}; found `{text}` and no event line after it"),
                },
                None => Error::Input {
                    path: self.path,
                    message: format!("the input is empty ({expected})"),
                },
            });
        }
        let mut notes = Vec::new();
        for d in Dialect::ALL {
            let t = self.dialects[d.index()];
            if t.count > 0 {
                notes.push(Note {
                    line: Some(t.first),
                    message: format!("read {} event lines as {}", t.count, d.describe()),
                });
            }
        }
        let mut profile = if self.builder.events() > 0 {
            self.builder.finish()
        } else {
            Profile::new(Origin::new(FORMAT, Some(&self.path)))
        };
        let (tables, isa) = self.top.finish(&mut notes);
        profile.tables.extend(tables);
        profile.origin.isa = profile.origin.isa.or(isa);
        let tallies = [
            (self.failed_entry, Self::FAILED_ENTRY),
            (self.noise, Self::NOISE),
            (self.raw_stamps, Self::RAW_STAMPS),
            (self.per_cpu, Self::PER_CPU),
            (self.unthreaded, Self::UNTHREADED),
            (self.elided, Self::ELIDED),
            (self.joined, Self::JOINED),
            (self.continued, Self::CONTINUED),
            (self.annotated, Self::ANNOTATED),
        ];
        for (t, message) in tallies {
            if t.count > 0 {
                notes.push(Note {
                    line: Some(t.first),
                    message: format!("{} line(s): {message}", t.count),
                });
            }
        }
        let cut_event = cut.is_some() && cut == self.last_event;
        if cut_event {
            notes.push(Note {
                line: cut,
                message: "the input ends inside this line (no newline after it): if it was cut \
                          off, the event read from it may be incomplete"
                    .into(),
            });
        }
        if self.elided.count > 0 || self.lost.count > 0 || cut_event {
            for t in &mut profile.tables {
                t.partial = true;
            }
        }
        if self.lost.count > 0 {
            notes.push(Note {
                line: Some(self.lost.first),
                message: format!(
                    "the tracer reported lost events ({} marker line(s), {} lost in all): the \
                     counts are incomplete",
                    self.lost.count, self.lost.sum
                ),
            });
        }
        let mut line_notes = self.line_notes;
        for (t, what) in [
            (self.unknown, "lines that were not events"),
            (self.interrupted, "lines cut short by `^C`"),
            (self.unread, "events with unreadable text"),
        ] {
            if t.count > MAX_LINE_NOTES as u64 {
                line_notes.push(Note {
                    line: None,
                    message: format!(
                        "and {} more {what} (only the first {MAX_LINE_NOTES} are listed)",
                        t.count - MAX_LINE_NOTES as u64
                    ),
                });
            }
        }
        line_notes.sort_by_key(|n| n.line.unwrap_or(usize::MAX));
        notes.extend(line_notes);
        notes.append(&mut profile.warnings);
        profile.warnings = notes;
        Ok(profile)
    }

    const FAILED_ENTRY: &'static str = "exits with the VMX `FAILED_VMENTRY` flag (the guest \
        could not be entered), first at this line; they are kept with their raw exit reason";
    const NOISE: &'static str = "libtraceevent printed `CAN'T FIND FIELD` (its kvm plugin does \
        not know this kernel's fields); the kernel's own text after it was read";
    const RAW_STAMPS: &'static str = "integer timestamps (a raw trace clock such as `counter` \
        or `x86-tsc`, unit unknown): no durations were computed from these lines";
    const PER_CPU: &'static str = "no thread id, only a CPU: exits were paired with entries \
        per host CPU (a vCPU thread seldom changes CPU between an exit and its entry)";
    const UNTHREADED: &'static str =
        "neither thread id nor CPU: events counted, no durations computed for them";
    const ELIDED: &'static str = "elided (`...`), first at this line: the counts cover only \
        the lines shown, and the tables are partial";
    const JOINED: &'static str = "wrapped by a mailer (the event's text on the next line), \
        first at this line: joined and read as one event line";
    const CONTINUED: &'static str = "wrapped continuations of the event line above them, \
        first at this line: passed over (the event is read from its first line)";
    const ANNOTATED: &'static str = "event lines behind an author's mark (`A:`), first at \
        this line: read without the mark";
}

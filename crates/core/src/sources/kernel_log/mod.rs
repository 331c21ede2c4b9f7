//! Source for a KVM host's kernel log — `dmesg`, `dmesg -T`, `journalctl -k`, syslog, or
//! messages pasted without a prefix — as evidence for `diagnose`: the KVM-relevant messages
//! become rows of one `kernel_log` table (see [`event`]), everything else is counted in a
//! note. Split-lock and bus-lock traps, soft lockups, hung tasks and RCU stalls are keyed by
//! event (`split_lock`, `soft_lockup`, …; `…_other` for threads that are not a VM's), one row
//! per thread with its vCPU when the thread name says it (`CPU 1/KVM`); MSRs KVM does not
//! emulate are MSR rows per VM (`kvm [PID]`), vCPU and direction; lockups carry the seconds
//! they state as their time. The table's window is the span of the log's stamps.
//!
//! A message of a known kind that cannot be read (a cut or damaged line) is noted with its
//! line and left out; a file in which no line has a kernel-log shape is refused.

mod event;
mod msr;
mod prefix;

use std::collections::BTreeMap;
use std::io::BufRead;

use crate::error::Result;
use crate::profile::{
    Access, Key, Note, Origin, Profile, Row, Table, TableKind, TimeStats, Window,
};
use crate::sources::line_reader::{LineBook, LineFormat, read_lines};
use crate::sources::lines::unquote;
use event::{Class, Event, Stall, Suppressed, Thread};
use prefix::Stamp;

/// The name of this format (`--format kernel-log`, `origin.format`).
pub(crate) const FORMAT: &str = "kernel-log";

/// How many lines after an RCU stall's first line its `Comm:` line may come.
const RCU_REPORT_LINES: usize = 60;

/// Whether `head` looks like a kernel log: a KVM-relevant kernel message (behind a kernel-log
/// prefix or none), or mostly lines with a kernel-log prefix (`dmesg`'s stamp, `kernel:`).
pub(crate) fn looks_like(head: &[u8]) -> bool {
    let text = String::from_utf8_lossy(head);
    let mut lines = 0usize;
    let mut prefixed = 0usize;
    for l in text
        .lines()
        .map(|l| unquote(l).trim())
        .filter(|l| !l.is_empty())
    {
        lines += 1;
        let s = prefix::split(l);
        if s.prefixed {
            prefixed += 1;
        }
        if matches!(event::event(s.body), Some(Ok(e)) if strong(&e)) {
            return true;
        }
    }
    prefixed >= 3 && prefixed * 2 > lines
}

/// Events that name a kernel log by themselves (a `Comm:` line or an unnamed `kvm:` line
/// could be in another paste).
fn strong(e: &Event) -> bool {
    !matches!(e, Event::Comm(_) | Event::Kvm("kvm_other"))
}

/// Reads the log of `reader`; `path` names the input in notes and errors.
pub(crate) fn read<R: BufRead>(reader: R, path: &str) -> Result<Profile> {
    read_lines(reader, path, Reader::new(path))
}

/// A row being counted.
#[derive(Debug, Default)]
struct Acc {
    count: u64,
    vcpu: Option<u32>,
    pid: Option<u32>,
    /// Seconds the reports state (lockups).
    secs: Vec<u64>,
}

/// What identifies a row.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum RowId {
    Event {
        name: &'static str,
        thread: Option<Thread>,
    },
    Msr {
        vm: Option<u32>,
        vcpu: Option<u32>,
        index: u64,
        write: bool,
    },
}

struct Reader {
    path: String,
    rows: BTreeMap<RowId, Acc>,
    first_line: Option<usize>,
    book: LineBook,
    notes: Vec<Note>,
    /// Lines with a kernel-log prefix, and lines without KVM relevance.
    prefixed: u64,
    unrelated: u64,
    /// First and last stamps of each kind.
    boot: Option<(f64, f64)>,
    wall: Option<(f64, f64)>,
    /// An RCU stall waiting for its `Comm:` line: (its line).
    rcu: Option<usize>,
    /// An MSR line's head waiting for the rest a wrap put on the next line: (line, text).
    wrapped: Option<(usize, String)>,
    suppressed_locks: u64,
    suppressed_msrs: u64,
    ignored_msrs: u64,
    fatal_locks: u64,
}

impl Reader {
    fn new(path: &str) -> Self {
        Self {
            path: path.to_string(),
            rows: BTreeMap::new(),
            first_line: None,
            book: LineBook::default(),
            notes: Vec::new(),
            prefixed: 0,
            unrelated: 0,
            boot: None,
            wall: None,
            rcu: None,
            wrapped: None,
            suppressed_locks: 0,
            suppressed_msrs: 0,
            ignored_msrs: 0,
            fatal_locks: 0,
        }
    }

    fn stamp(&mut self, s: Stamp) {
        let (slot, v) = match s {
            Stamp::Boot(v) => (&mut self.boot, v),
            Stamp::Wall(v) => (&mut self.wall, v),
        };
        if !v.is_finite() {
            return;
        }
        *slot = Some(match *slot {
            Some((a, b)) => (a.min(v), b.max(v)),
            None => (v, v),
        });
    }

    fn add(&mut self, n: usize, id: RowId, vcpu: Option<u32>, pid: Option<u32>, secs: Option<u64>) {
        self.first_line.get_or_insert(n);
        self.book.row(n);
        let acc = self.rows.entry(id).or_default();
        acc.count = acc.count.saturating_add(1);
        acc.vcpu = vcpu;
        acc.pid = pid;
        acc.secs.extend(secs);
    }

    fn thread_event(&mut self, n: usize, name: &'static str, thread: Thread, secs: Option<u64>) {
        let (name, vcpu) = match thread.class() {
            Class::Vcpu(v) => (name, Some(v)),
            Class::Vmm => (name, None),
            Class::Other => (other(name), None),
        };
        self.add(
            n,
            RowId::Event {
                name,
                thread: Some(thread),
            },
            vcpu,
            None,
            secs,
        );
    }

    /// An RCU stall whose thread was not named: counted as another thread's.
    fn rcu_unnamed(&mut self) {
        if let Some(at) = self.rcu.take() {
            self.add(
                at,
                RowId::Event {
                    name: "rcu_stall_other",
                    thread: None,
                },
                None,
                None,
                None,
            );
        }
    }

    fn window(&self) -> Option<Window> {
        let (kind, (a, b)) = match (self.boot, self.wall) {
            (Some(b), _) => ("s after boot", b),
            (None, Some(w)) => ("s into the year", w),
            (None, None) => return None,
        };
        Some(Window {
            start: Some(format!("{a:.6} {kind}")),
            end: Some(format!("{b:.6} {kind}")),
            // One stamp (or one second of a wall clock) tells no span.
            duration_ns: (b > a).then_some(((b - a) * 1e9) as u64),
            intervals: 0,
        })
    }
}

/// The name of an event of a thread that is not a VM's.
fn other(name: &'static str) -> &'static str {
    match name {
        "split_lock" => "split_lock_other",
        "bus_lock" => "bus_lock_other",
        "soft_lockup" => "soft_lockup_other",
        "hung_task" => "hung_task_other",
        "rcu_stall" => "rcu_stall_other",
        n => n,
    }
}

impl LineFormat for Reader {
    fn line(&mut self, n: usize, text: &str) {
        let t = unquote(text).trim();
        if t.is_empty() {
            return;
        }
        let s = prefix::split(t);
        if s.prefixed {
            self.prefixed += 1;
        }
        if let Some(stamp) = s.stamp {
            self.stamp(stamp);
        }
        if self.rcu.is_some_and(|at| n > at + RCU_REPORT_LINES) {
            self.rcu_unnamed();
        }
        // A `kvm [PID]: vcpuN, guest rIP: 0x…` line whose MSR a mail or terminal wrapped onto
        // the next line: the two read as one.
        if let Some((at, head)) = self.wrapped.take() {
            if !s.prefixed && msr::continues_msr(s.body) {
                let joined = format!("{head} {}", s.body);
                self.message(at, &joined, &joined, true);
                return;
            }
            self.message(at, &head, &head, true);
        }
        if msr::wrapped_msr(s.body) {
            self.wrapped = Some((n, s.body.to_string()));
            return;
        }
        self.message(n, t, s.body, s.prefixed);
    }

    fn end(mut self, cut: Option<usize>) -> Result<Profile> {
        if let Some((at, head)) = self.wrapped.take() {
            self.message(at, &head, &head, true);
        }
        self.finish(cut)
    }
}

impl Reader {
    /// The message `body` of line `n` (`t`, for notes), `prefixed` when it had a kernel-log
    /// prefix.
    fn message(&mut self, n: usize, t: &str, body: &str, prefixed: bool) {
        match event::event(body) {
            None => {
                self.unrelated += 1;
                if !prefixed {
                    self.book.unrecognised(n, t);
                }
            }
            Some(Err(why)) => self.book.unreadable(n, t, why),
            Some(Ok(e)) => match e {
                Event::Lock { bus, fatal, thread } => {
                    if fatal {
                        self.fatal_locks += 1;
                    }
                    let name = if bus { "bus_lock" } else { "split_lock" };
                    self.thread_event(n, name, thread, None);
                }
                Event::Suppressed { what, n: k } => match what {
                    Suppressed::Lock => {
                        self.suppressed_locks = self.suppressed_locks.saturating_add(k)
                    }
                    Suppressed::Msr => {
                        self.suppressed_msrs = self.suppressed_msrs.saturating_add(k)
                    }
                },
                Event::Msr {
                    vm,
                    vcpu,
                    index,
                    write,
                    ignored,
                } => {
                    if ignored {
                        self.ignored_msrs += 1;
                    }
                    self.add(
                        n,
                        RowId::Msr {
                            vm,
                            vcpu,
                            index,
                            write,
                        },
                        vcpu,
                        vm,
                        None,
                    );
                }
                Event::Stall { kind, thread, secs } => {
                    let name = match kind {
                        Stall::SoftLockup => "soft_lockup",
                        Stall::HungTask => "hung_task",
                    };
                    self.thread_event(n, name, thread, secs);
                }
                Event::RcuStall => {
                    self.rcu_unnamed();
                    self.rcu = Some(n);
                }
                Event::Comm(thread) => {
                    if let Some(at) = self.rcu.take() {
                        self.thread_event(at, "rcu_stall", thread, None);
                    } else {
                        self.unrelated += 1;
                    }
                }
                Event::Kvm(id) => self.add(
                    n,
                    RowId::Event {
                        name: id,
                        thread: None,
                    },
                    None,
                    None,
                    None,
                ),
            },
        }
    }

    fn finish(mut self, cut: Option<usize>) -> Result<Profile> {
        self.rcu_unnamed();
        let mut profile = Profile::new(Origin::new(FORMAT, Some(&self.path)));
        let mut table = Table::new(TableKind::KernelLog);
        table.line = self.first_line;
        table.window = self.window();
        if self.book.last_row_cut(cut, &mut profile.warnings) {
            table.partial = true;
        }
        let mut unread = Vec::new();
        self.book.note_unread(cut, &mut unread);
        if !unread.is_empty() {
            table.partial = true;
        }
        profile.warnings.extend(unread);
        if self.rows.is_empty() && self.prefixed == 0 {
            let expected = "expected a kernel log (dmesg, dmesg -T, journalctl -k) or KVM kernel \
                            messages: split-lock traps, unhandled MSRs, soft lockups";
            return Err(self.book.nothing_found(&self.path, expected));
        }
        for (id, acc) in std::mem::take(&mut self.rows) {
            let key = match id {
                RowId::Event { name, .. } => Key::Event {
                    name: name.to_string(),
                },
                RowId::Msr { index, write, .. } => Key::Msr {
                    index,
                    access: Some(if write { Access::Write } else { Access::Read }),
                },
            };
            let mut row = Row::new(key, acc.count);
            row.vcpu = acc.vcpu;
            row.pid = acc.pid;
            if !acc.secs.is_empty() {
                let ns: Vec<u64> = acc
                    .secs
                    .iter()
                    .map(|s| s.saturating_mul(1_000_000_000))
                    .collect();
                row.time = TimeStats {
                    total_ns: Some(ns.iter().fold(0u64, |a, b| a.saturating_add(*b))),
                    min_ns: ns.iter().min().copied(),
                    max_ns: ns.iter().max().copied(),
                    m2: None,
                    timed: Some(ns.len() as u64),
                };
            }
            table.rows.push(row);
        }
        self.notes(&mut profile.warnings);
        profile.warnings.extend(self.notes);
        profile.tables.push(table);
        Ok(profile)
    }
}

impl Reader {
    fn notes(&self, out: &mut Vec<Note>) {
        let note = |message: String| Note {
            line: None,
            message,
        };
        if self.unrelated > 0 {
            out.push(note(format!(
                "{} kernel lines are not about KVM, its guests' threads or their locks; they \
                 were counted, not read",
                self.unrelated
            )));
        }
        if self
            .rows
            .keys()
            .any(|k| matches!(k, RowId::Event { name, .. } if name.contains("_lock")))
        {
            out.push(note(
                "the kernel reports a split or bus lock once per thread (and at most 10 lines \
                 per 5 s): a row is a thread that trapped at least once, not a count of traps"
                    .into(),
            ));
        }
        if self.suppressed_locks > 0 {
            out.push(note(format!(
                "the kernel's ratelimit suppressed {} more lock-trap lines: the threads listed \
                 are a lower bound",
                self.suppressed_locks
            )));
        }
        if self.suppressed_msrs > 0 {
            out.push(note(format!(
                "the kernel's ratelimit suppressed {} more MSR lines: the MSR counts are lower \
                 bounds",
                self.suppressed_msrs
            )));
        }
        if self.ignored_msrs > 0 {
            out.push(note(format!(
                "{} MSR accesses were `ignored` (kvm.ignore_msrs=1): the guest read 0 or its \
                 write was dropped, without a #GP",
                self.ignored_msrs
            )));
        }
        if self.fatal_locks > 0 {
            out.push(note(format!(
                "{} lock traps were fatal (split_lock_detect=fatal): the thread got SIGBUS",
                self.fatal_locks
            )));
        }
    }
}

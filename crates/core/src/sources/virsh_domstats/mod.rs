//! Source for `virsh domstats` (libvirt ≥ 9.3 with QEMU ≥ 7.1 adds KVM's binary statistics
//! to the `--vcpu` and `--vm` groups): a `Domain: 'NAME'` line, then `key=value` lines. The
//! KVM statistics are the keys `vcpu.<n>.<stat>.sum` (a vCPU's) and `vm.<stat>.sum` (the
//! VM's); they become one `kvm_stats` table per domain, as a live capture's binary statistics
//! and QMP `query-stats` do, so the counters' rules read `exits`, `io_exits`, `halt_exits`, …
//! from it.
//!
//! Values are totals since the VM started. Times (`…_ns`), instant and peak values (`.cur`,
//! `.max`) and libvirt's own groups (state, cpu, balloon, net, block, dirtyrate, a vCPU's
//! state/time/wait/delay) are no counts of KVM events: left out, and the KVM ones among them
//! counted in a note. A `.sum` line whose value is not a number is noted ([`LineBook`]); an
//! author's elision (`vcpu.1...`) is noted and makes the table partial.
//!
//! A domain printed again is a later poll (`while sleep 10; do virsh domstats; done`, or a
//! monitor's virsh engine): its table then holds the change from its first poll to its last,
//! the activity while it was watched, and the polls between are not kept, so memory is two
//! polls per domain however long the loop ran.

use std::collections::HashMap;
use std::io::BufRead;

use crate::error::Result;
use crate::profile::{Key, Note, Origin, Profile, Row, Table, TableKind};
use crate::sources::line_reader::{LineBook, LineFormat, read_lines};

/// The name of this format (`--format virsh-domstats`, `origin.format`).
pub(crate) const FORMAT: &str = "virsh-domstats";

/// KVM exit counters, one of which a domstats output with KVM statistics shows.
const EXIT_COUNTERS: [&str; 4] = [
    ".exits.sum=",
    ".halt_exits.sum=",
    ".io_exits.sum=",
    ".mmio_exits.sum=",
];

/// Whether `head` looks like `virsh domstats` output with KVM statistics.
pub(crate) fn looks_like(head: &[u8]) -> bool {
    let text = String::from_utf8_lossy(head);
    text.lines().any(|l| l.starts_with("Domain: '"))
        && text.lines().any(|l| {
            l.trim_start().starts_with("vcpu.") && EXIT_COUNTERS.iter().any(|c| l.contains(c))
        })
}

/// Reads every domain of `reader`; `path` names the input in notes and errors.
pub(crate) fn read<R: BufRead>(reader: R, path: &str) -> Result<Profile> {
    read_lines(reader, path, Reader::new(path))
}

/// One domain's statistics.
struct Domain {
    name: String,
    line: usize,
    /// The latest poll's values.
    rows: Vec<Row>,
    elided: Option<usize>,
    /// The first poll's values, once the domain was printed again.
    first: Option<Vec<Row>>,
    polls: u32,
    /// The line of the latest poll's `Domain:` line.
    last_line: usize,
}

impl Domain {
    /// A later poll of this domain starts at line `n`: the first poll is kept, the others
    /// are dropped.
    fn poll_again(&mut self, n: usize) {
        let rows = std::mem::take(&mut self.rows);
        self.first.get_or_insert(rows);
        self.polls += 1;
        self.last_line = n;
    }

    /// The domain's table: totals since the VM started, or the change from the first poll to
    /// the last; remarks about the polls go to `notes`.
    fn table(self, notes: &mut Vec<Note>) -> Table {
        let mut t = Table::new(TableKind::KvmStats);
        t.overlapping = true;
        t.line = Some(self.line);
        t.partial = self.elided.is_some();
        let Some(first) = self.first else {
            t.label = Some(format!(
                "KVM binary statistics of '{}' (virsh domstats), totals",
                self.name
            ));
            t.rows = self.rows;
            return t;
        };
        t.label = Some(format!(
            "KVM binary statistics of '{}' (virsh domstats), change over {} polls",
            self.name, self.polls
        ));
        notes.push(Note {
            line: Some(self.line),
            message: format!(
                "'{}' was polled {} times (the last on line {}): its table is the change from \
                 the first poll to the last; rates need the time between them (give --window \
                 SECONDS)",
                self.name, self.polls, self.last_line
            ),
        });
        let before: HashMap<(&Key, Option<u32>), u64> =
            first.iter().map(|r| ((&r.key, r.vcpu), r.count)).collect();
        let mut went_down = 0;
        let mut rows = Vec::with_capacity(self.rows.len());
        for mut r in self.rows {
            match before.get(&(&r.key, r.vcpu)) {
                Some(&b) if b <= r.count => r.count -= b,
                Some(_) => {
                    went_down += 1;
                    continue;
                }
                None => {}
            }
            rows.push(r);
        }
        if went_down > 0 {
            t.partial = true;
            notes.push(Note {
                line: Some(self.last_line),
                message: format!(
                    "{went_down} values of '{}' went down between its first poll and its last \
                     (the VM restarted?): left out",
                    self.name
                ),
            });
        }
        t.rows = rows;
        t
    }
}

struct Reader {
    path: String,
    profile: Profile,
    book: LineBook,
    domains: Vec<Domain>,
    /// Domain name → index in `domains`.
    by_name: HashMap<String, usize>,
    /// The domain whose poll is being read.
    current: Option<usize>,
    left_out: u64,
}

/// What one `key=value` line of a domain holds.
enum Stat<'a> {
    /// A count of KVM events: its name, and its vCPU (`None` for the VM's own).
    Count { name: &'a str, vcpu: Option<u32> },
    /// A KVM statistic that is no count (a time, an instant or peak value).
    NotACount,
    /// One of libvirt's own values (state, cpu, balloon, net, block, …).
    Libvirt,
}

/// libvirt's own groups of `virsh domstats` (not KVM's statistics).
const LIBVIRT_GROUPS: [&str; 10] = [
    "state.",
    "cpu.",
    "balloon.",
    "net.",
    "block.",
    "dirtyrate.",
    "iothread.",
    "perf.",
    "memory.",
    "vm.guest_mode",
];

/// A vCPU's values that libvirt itself reports.
const LIBVIRT_VCPU: [&str; 5] = ["state", "time", "wait", "delay", "halted"];

/// Whether `name` is spelled as KVM names its statistics (lower case, digits, `_`).
fn kvm_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
}

/// The statistic a domstats key names; `None` when the key is damaged.
fn stat(key: &str) -> Option<Stat<'_>> {
    if LIBVIRT_GROUPS.iter().any(|g| key.starts_with(g)) {
        return Some(Stat::Libvirt);
    }
    let (scope, rest) = if let Some(rest) = key.strip_prefix("vcpu.") {
        if rest == "current" || rest == "maximum" {
            return Some(Stat::Libvirt);
        }
        let (n, rest) = rest.split_once('.')?;
        let n = n.parse::<u32>().ok()?;
        if LIBVIRT_VCPU.contains(&rest) {
            return Some(Stat::Libvirt);
        }
        (Some(n), rest)
    } else {
        (None, key.strip_prefix("vm.")?)
    };
    let (name, kind) = rest.rsplit_once('.')?;
    if !kvm_name(name) {
        return None;
    }
    match kind {
        "sum" if !name.ends_with("_ns") => Some(Stat::Count { name, vcpu: scope }),
        "sum" | "cur" | "max" => Some(Stat::NotACount),
        _ => None,
    }
}

/// Where a line holds two `key=value` pairs joined (a lost newline): the start of the second.
fn second_pair(text: &str) -> Option<usize> {
    let t = text.trim_start();
    let lead = text.len() - t.len();
    let (first, _) = t.split_once('=')?;
    if first.contains(char::is_whitespace) {
        return None;
    }
    // The value ends at the first blank; what follows must be a key of its own.
    let value_end = t.find(char::is_whitespace)?;
    let next = t[value_end..].trim_start();
    let key = next.split_once('=')?.0;
    let joined = (key.starts_with("vcpu.") || key.starts_with("vm.") || stat(key).is_some())
        && !key.contains(char::is_whitespace);
    joined.then(|| lead + t.len() - next.len())
}

impl Reader {
    fn new(path: &str) -> Self {
        Self {
            path: path.to_string(),
            profile: Profile::new(Origin::new(FORMAT, Some(path))),
            book: LineBook::default(),
            domains: Vec::new(),
            by_name: HashMap::new(),
            current: None,
            left_out: 0,
        }
    }
}

impl LineFormat for Reader {
    /// The rows read ([`LineFormat::own_lines`]).
    fn own_lines(&self) -> Option<u64> {
        Some(self.book.rows())
    }

    fn line(&mut self, n: usize, text: &str) {
        let t = text.trim();
        if t.is_empty() {
            return;
        }
        if let Some(name) = t
            .strip_prefix("Domain: '")
            .and_then(|r| r.strip_suffix('\''))
        {
            let index = match self.by_name.get(name) {
                Some(&i) => {
                    if let Some(d) = self.domains.get_mut(i) {
                        d.poll_again(n);
                    }
                    i
                }
                None => {
                    self.by_name.insert(name.to_string(), self.domains.len());
                    self.domains.push(Domain {
                        name: name.to_string(),
                        line: n,
                        rows: Vec::new(),
                        elided: None,
                        first: None,
                        polls: 1,
                        last_line: n,
                    });
                    self.domains.len() - 1
                }
            };
            self.current = Some(index);
            return;
        }
        let Some(domain) = self.current.and_then(|i| self.domains.get_mut(i)) else {
            self.book.unrecognised(n, t);
            return;
        };
        if t.ends_with("...") && !t.contains('=') {
            // `vcpu.1...`: KVM statistics left out; `block.1...` is libvirt's.
            if t.starts_with("vcpu.") || t.starts_with("vm.") {
                domain.elided.get_or_insert(n);
            }
            return;
        }
        let Some((key, value)) = t.split_once('=') else {
            self.book
                .unreadable(n, t, "a line of a domain's statistics without `=`");
            return;
        };
        match stat(key) {
            Some(Stat::Count { name, vcpu }) => match value.parse::<u64>() {
                Ok(v) => {
                    let mut row = Row::new(
                        Key::Event {
                            name: name.to_string(),
                        },
                        v,
                    );
                    row.vcpu = vcpu;
                    domain.rows.push(row);
                    self.book.row(n);
                }
                Err(_) => self
                    .book
                    .unreadable(n, t, "a KVM statistic whose value is not a count"),
            },
            // Counted in one poll: the polls of a loop print the same keys.
            Some(Stat::NotACount) if domain.polls == 1 => self.left_out += 1,
            Some(Stat::NotACount) => {}
            Some(Stat::Libvirt) => {}
            None => self.book.unreadable(
                n,
                t,
                "a key that is neither libvirt's nor a KVM statistic's",
            ),
        }
    }

    fn split(&mut self, n: usize, text: &str) -> Option<usize> {
        let at = second_pair(text)?;
        self.book.repaired(
            n,
            "two statistics on one line (a newline lost), read as two",
        );
        Some(at)
    }

    fn end(mut self, cut: Option<usize>) -> Result<Profile> {
        let cut_row = self.book.last_row_cut(cut, &mut self.profile.warnings);
        self.book.note_unread(cut, &mut self.profile.warnings);
        let unread = self
            .profile
            .warnings
            .iter()
            .any(|w| w.message.contains("left out"));
        if self.domains.iter().all(|d| d.rows.is_empty()) {
            let expected = "expected `virsh domstats` output with KVM statistics: a `Domain: \
                            'NAME'` line, then `vcpu.N.exits.sum=…`-style lines (libvirt ≥ 9.3, \
                            QEMU ≥ 7.1)";
            return Err(self.book.nothing_found(&self.path, expected));
        }
        let notes = &mut self.profile.warnings;
        let first = self
            .domains
            .iter()
            .find(|d| !d.rows.is_empty())
            .map(|d| d.line);
        if self.domains.iter().any(|d| d.first.is_none()) {
            notes.push(Note {
                line: first,
                message: "virsh domstats values are totals since the VM started: rates need its \
                          uptime (give --window SECONDS)"
                    .into(),
            });
        }
        if self.left_out > 0 {
            notes.push(Note {
                line: first,
                message: format!(
                    "{} KVM values that are not counts of events are not read (times in ns, \
                     instant or peak values)",
                    self.left_out
                ),
            });
        }
        for d in &self.domains {
            if let Some(line) = d.elided {
                notes.push(Note {
                    line: Some(line),
                    message: format!(
                        "statistics of '{}' were elided (`...`) here: its table is partial",
                        d.name
                    ),
                });
            }
        }
        for d in self.domains.into_iter().filter(|d| !d.rows.is_empty()) {
            let mut t = d.table(&mut self.profile.warnings);
            t.partial |= cut_row || unread;
            self.profile.tables.push(t);
        }
        Ok(self.profile)
    }
}

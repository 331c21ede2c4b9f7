//! One row of a table: a key, the VM and vCPU it belongs to when known, the event count, the
//! durations, and a latency histogram when individual events were seen.

use serde::{Deserialize, Serialize};

use super::Latency;
use super::key::{Access, Key};
use super::stats::{TimeStats, TimeStatsJson};

/// Counts and durations for one key.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub key: Key,
    /// The VMM process id, when known.
    pub pid: Option<u32>,
    /// The vCPU index, when known.
    pub vcpu: Option<u32>,
    pub count: u64,
    pub time: TimeStats,
    pub latency: Option<Latency>,
}

impl Row {
    /// A row of `count` events of `key` with nothing known about time.
    pub fn new(key: Key, count: u64) -> Self {
        Self {
            key,
            pid: None,
            vcpu: None,
            count,
            time: TimeStats::unknown(),
            latency: None,
        }
    }

    /// Folds `other` (same key) into this row.
    pub fn merge(&mut self, other: &Row) {
        self.add(other.count, &other.time);
        self.latency = match (self.latency.take(), &other.latency) {
            (Some(mut a), Some(b)) => {
                a.merge(b);
                Some(a)
            }
            _ => None,
        };
        if self.pid != other.pid {
            self.pid = None;
        }
        if self.vcpu != other.vcpu {
            self.vcpu = None;
        }
    }

    /// Adds `count` events of durations `time` (the count and times of [`Row::merge`]).
    pub fn add(&mut self, count: u64, time: &TimeStats) {
        self.time.merge(self.count, time, count);
        self.count = self.count.saturating_add(count);
    }
}

/// How a key is told apart in JSON: `"kind"` says which variant the other fields describe.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
enum KeyKind {
    Exit,
    Port,
    Mmio,
    Msr,
    Event,
    /// An exit reason and the guest RIP it came from: `key` is `REASON@0xRIP`, `code` the RIP.
    #[serde(rename = "guest_rip")]
    GuestRip,
}

#[derive(Serialize, Deserialize)]
struct RowJson {
    key: String,
    key_kind: KeyKind,
    code: Option<u64>,
    access: Option<Access>,
    pid: Option<u32>,
    vcpu: Option<u32>,
    count: u64,
    #[serde(flatten)]
    time: TimeStatsJson,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    latency: Option<Latency>,
}

impl Serialize for Row {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let key_kind = match self.key {
            Key::Exit { .. } => KeyKind::Exit,
            Key::Port { .. } => KeyKind::Port,
            Key::Mmio { .. } => KeyKind::Mmio,
            Key::Msr { .. } => KeyKind::Msr,
            Key::Event { .. } => KeyKind::Event,
            Key::GuestRip { .. } => KeyKind::GuestRip,
        };
        RowJson {
            key: self.key.key_text(),
            key_kind,
            code: self.key.code(),
            access: self.key.access(),
            pid: self.pid,
            vcpu: self.vcpu,
            count: self.count,
            time: TimeStatsJson {
                time_ns: self.time.total_ns,
                min_ns: self.time.min_ns,
                max_ns: self.time.max_ns,
                mean_ns: self.time.mean_ns(self.count),
                rel_stderr_pct: self.time.rel_stderr_pct(self.count),
                timed_count: self.time.timed.filter(|&t| t != self.count),
            },
            latency: self.latency.clone(),
        }
        .serialize(s)
    }
}

impl<'de> Deserialize<'de> for Row {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let j = RowJson::deserialize(d)?;
        let number = || {
            j.code
                .ok_or_else(|| D::Error::custom(format!("row `{}` has no code", j.key)))
        };
        let key = match j.key_kind {
            KeyKind::Exit => Key::Exit {
                name: j.key.clone(),
                code: j.code,
            },
            KeyKind::Port => Key::Port {
                port: number()?,
                access: j.access,
            },
            KeyKind::Mmio => Key::Mmio {
                gpa: number()?,
                access: j.access,
            },
            KeyKind::Msr => Key::Msr {
                index: number()?,
                access: j.access,
            },
            KeyKind::Event => Key::Event {
                name: j.key.clone(),
            },
            KeyKind::GuestRip => Key::GuestRip {
                reason: j
                    .key
                    .rsplit_once('@')
                    .map_or(j.key.as_str(), |(reason, _)| reason)
                    .to_string(),
                rip: number()?,
            },
        };
        let timed = j.time.timed_count;
        let m2 = match (j.time.rel_stderr_pct, j.time.mean_ns) {
            (Some(rel), Some(mean)) => {
                TimeStats::m2_from_rel_stderr(rel, mean, timed.unwrap_or(j.count))
            }
            _ => None,
        };
        Ok(Row {
            key,
            pid: j.pid,
            vcpu: j.vcpu,
            count: j.count,
            time: TimeStats {
                total_ns: j.time.time_ns,
                min_ns: j.time.min_ns,
                max_ns: j.time.max_ns,
                m2,
                timed,
            },
            latency: j.latency,
        })
    }
}

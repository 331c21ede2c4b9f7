//! How much vCPU time an input covers, so costs can be absolute: the capture window (from the
//! input, a live capture, or `--window`), printed rates (kvm_stat's `CurAvg/s`), the vCPU count
//! (`--vcpus`, the configuration, or the vCPUs a trace saw) and, for tables with neither window
//! nor rates, the total handled time including halts when the vCPUs were halted most of the
//! time (then it is about their wall time). Rows get a rate per second wherever one is known.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::profile::Key;

use super::super::model::CpuBasis;
use super::rows::{Part, rate};

/// Halts must be at least this share of all handled time for the handled time to stand for
/// the vCPUs' wall time: then the guest's own run time, which the table does not show, is at
/// most a small part of what it covers (an idle guest), and the shares it gives are upper
/// bounds of the true ones.
pub(crate) const HALTED_MOSTLY: f64 = 0.8;

/// A window the input shows is a time base only over at least this many exits: a rate from a
/// handful of events a few microseconds apart (a pasted trace excerpt) is noise.
pub(crate) const MIN_RATE_EVENTS: u64 = 100;

/// Where the window came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum WindowBasis {
    /// Timestamps or a duration in the input (trace, live capture, kvm_stat log).
    Input,
    /// `--window SECONDS`.
    Option,
}

/// Where the vCPU count came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum VcpuBasis {
    /// `--vcpus N`.
    Option,
    /// The configuration (`--config`).
    Config,
    /// The distinct vCPUs the input's rows name.
    Input,
}

/// The time base of one input.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Rate {
    pub window_ns: Option<u64>,
    pub window_basis: Option<WindowBasis>,
    /// The input carries per-second rates of its own (kvm_stat screens).
    pub printed_rates: bool,
    pub vcpus: Option<u32>,
    pub vcpus_basis: Option<VcpuBasis>,
    /// The vCPU time the input covers, when known, and how.
    pub vcpu_seconds: Option<f64>,
    pub cpu_basis: Option<CpuBasis>,
}

impl Rate {
    /// The time base from the parts (exit part first), the user's options and the printed rates.
    pub fn of(
        parts: &[Option<&Part>],
        exits: Option<&Part>,
        window_option: Option<f64>,
        vcpus: Option<(u32, VcpuBasis)>,
        printed_rates: bool,
    ) -> Rate {
        let events = parts
            .iter()
            .chain(std::iter::once(&exits))
            .flatten()
            .map(|p| p.totals.count)
            .max()
            .unwrap_or(0);
        let input_window = exits
            .and_then(|p| p.window_ns)
            .or_else(|| parts.iter().flatten().find_map(|p| p.window_ns))
            .filter(|&w| w > 0 && events >= MIN_RATE_EVENTS);
        let option_window = window_option
            .filter(|s| s.is_finite() && *s > 0.0)
            .map(|s| (s * 1e9) as u64)
            .filter(|&w| w > 0);
        let (window_ns, window_basis) = match (input_window, option_window) {
            (Some(w), _) => (Some(w), Some(WindowBasis::Input)),
            (None, Some(w)) => (Some(w), Some(WindowBasis::Option)),
            _ => (None, None),
        };
        let seen = exits.map_or(0, |p| {
            p.rows
                .iter()
                .flat_map(|r| r.vcpus.iter())
                .collect::<std::collections::BTreeSet<_>>()
                .len()
        });
        let (vcpus, vcpus_basis) = match vcpus {
            Some((n, b)) if n > 0 => (Some(n), Some(b)),
            _ if seen > 0 => (u32::try_from(seen).ok(), Some(VcpuBasis::Input)),
            _ => (None, None),
        };
        let mut r = Rate {
            window_ns,
            window_basis,
            printed_rates,
            vcpus,
            vcpus_basis,
            vcpu_seconds: None,
            cpu_basis: None,
        };
        if let Some(w) = window_ns {
            let n = f64::from(vcpus.unwrap_or(1));
            r.vcpu_seconds = Some(w as f64 / 1e9 * n);
            r.cpu_basis = Some(if vcpus.is_some() {
                CpuBasis::WindowVcpus
            } else {
                CpuBasis::WindowOneCpu
            });
        } else if printed_rates {
            r.cpu_basis = Some(if vcpus.is_some() {
                CpuBasis::WindowVcpus
            } else {
                CpuBasis::WindowOneCpu
            });
        } else if let Some(p) = exits.filter(|p| p.timed)
            && let (Some(all), Some(idle)) = (p.totals.time_ns, p.totals.idle_time_ns)
            && all > 0
            && idle as f64 >= HALTED_MOSTLY * all as f64
        {
            r.vcpu_seconds = Some(all as f64 / 1e9);
            r.cpu_basis = Some(CpuBasis::HandledWithHalts);
        }
        r
    }

    /// The number of vCPUs the costs are divided by (1 when unknown: a share of one CPU).
    pub fn divisor(&self) -> f64 {
        f64::from(self.vcpus.unwrap_or(1).max(1))
    }

    /// True when an absolute cost can be computed (a window, printed rates or halts).
    pub fn absolute(&self) -> bool {
        self.cpu_basis.is_some()
    }

    /// Rates per vCPU are real (not a total standing in for one vCPU).
    pub fn per_vcpu(&self) -> bool {
        self.vcpus.is_some() || self.cpu_basis == Some(CpuBasis::HandledWithHalts)
    }

    /// Sets the rate of every row from this time base: the window, else the printed rate
    /// (a row's own window is not a time base when the input is too short for one).
    pub fn fill(&self, part: &mut Part, printed: &BTreeMap<Key, f64>) {
        for r in &mut part.rows {
            r.per_second = rate(r.count, self.window_ns).or_else(|| printed.get(&r.key).copied());
        }
        part.totals.per_second =
            rate(part.totals.count, self.window_ns).or(if part.from_counters {
                part.totals.per_second
            } else {
                None
            });
    }

    /// Events per vCPU-second of `count` events with rate `per_second` (all vCPUs), when it
    /// can be known: the rate over the vCPUs, or the count over the halts-based vCPU time.
    pub fn per_vcpu_second(&self, count: u64, per_second: Option<f64>) -> Option<f64> {
        match (per_second, self.cpu_basis) {
            (Some(r), _) => Some(r / self.divisor()),
            (None, Some(CpuBasis::HandledWithHalts)) => self
                .vcpu_seconds
                .filter(|s| *s > 0.0)
                .map(|s| count as f64 / s),
            _ => None,
        }
    }
}

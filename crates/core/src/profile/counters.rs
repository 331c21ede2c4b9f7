//! Sampled performance counters — what Windows perfmon / `typeperf` / `relog` and VMware's
//! `esxtop -b` write (PDH-CSV), or a pasted table of counter values — as part of a profile.
//!
//! Counters are gauges and rates, not event counts, so they do not fit profile rows: each
//! counter path is a [`Series`] with its statistics over the whole log and per time slice
//! (PAL's analysis interval: the log cut into equal slices, each with its min, mean and max).
//! Values are kept as the tool cooked them (`/sec` counters are already rates, `… Cost` and
//! `… Per Dispatch` counters are already nanoseconds per event). Nothing is invented: a counter
//! that was blank in every sample has no statistics.

use serde::{Deserialize, Serialize};

/// How many equal time slices a log is cut into, as PAL's `AUTO` analysis interval does
/// (`$AutoAnalysisIntervalNumberOfTimeSlices = 30`, clinthuffman/PAL@0d22c4e5:PAL2/PALWizard/PAL.ps1).
pub const SLICES: usize = 30;

/// What wrote the counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CounterTool {
    /// Windows PDH-CSV: perfmon, `typeperf`, `relog`, `logman`, `Export-Counter`.
    Perfmon,
    /// VMware `esxtop -b` (the same PDH-CSV layout, ESXi objects).
    Esxtop,
    /// A pasted table of counter values (one sample).
    Table,
}

/// A counter path: `\\HOST\Object(Parent/Instance#Index)\Counter`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct CounterPath {
    pub host: Option<String>,
    pub object: String,
    /// The instance as written, parent and `#index` included (`VM1:Hv VP 0`, `_Total`).
    pub instance: Option<String>,
    pub counter: String,
}

impl CounterPath {
    /// The path without the host, as PAL and counter-set files write it.
    pub fn display(&self) -> String {
        match &self.instance {
            Some(i) => format!("\\{}({})\\{}", self.object, i, self.counter),
            None => format!("\\{}\\{}", self.object, self.counter),
        }
    }

    /// Whether this is the path `object` / `counter` (any instance), ignoring case as PDH does.
    pub fn is(&self, object: &str, counter: &str) -> bool {
        self.object.eq_ignore_ascii_case(object) && self.counter.eq_ignore_ascii_case(counter)
    }

    /// Whether the instance is a `_Total` aggregate.
    pub fn is_total(&self) -> bool {
        self.instance
            .as_deref()
            .is_some_and(|i| i.eq_ignore_ascii_case("_total"))
    }
}

/// Statistics of the numeric samples of a counter in a span of the log.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Stats {
    /// Numeric samples.
    pub n: u64,
    pub min: f64,
    pub max: f64,
    pub mean: f64,
}

impl Stats {
    /// Statistics of no sample.
    pub const EMPTY: Stats = Stats {
        n: 0,
        min: f64::INFINITY,
        max: f64::NEG_INFINITY,
        mean: 0.0,
    };

    /// Adds one sample (running mean, so long logs do not lose precision).
    pub fn add(&mut self, v: f64) {
        self.n += 1;
        self.min = self.min.min(v);
        self.max = self.max.max(v);
        self.mean += (v - self.mean) / self.n as f64;
    }

    /// `Some(self)` when there was a sample.
    pub fn known(self) -> Option<Stats> {
        (self.n > 0).then_some(self)
    }
}

/// One time slice of a series.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Slice {
    /// Seconds from the first sample of the log to the start of the slice.
    pub start_s: f64,
    #[serde(flatten)]
    pub stats: Stats,
}

/// One counter over the log.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Series {
    pub path: CounterPath,
    /// The 1-based column of the input (0 for pasted tables).
    pub column: usize,
    /// Statistics over every numeric sample; `None` when there was none.
    pub stats: Option<Stats>,
    /// Samples with no value (`" "` or empty: a rate's first sample, an instance that was gone).
    pub blank: u64,
    /// Samples whose text was not a number (kept out of the statistics).
    pub unreadable: u64,
    /// PAL's time slices (only slices with samples; empty for a single sample).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub slices: Vec<Slice>,
}

/// What a counter log says about itself: what wrote it, its time zone, the time it spans and
/// how often it sampled.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LogHeader {
    pub tool: CounterTool,
    /// The time-zone name of the PDH-CSV header, as printed.
    pub time_zone: Option<String>,
    /// Minutes west of UTC (`UTC = local + bias`), from the header.
    pub bias_minutes: Option<i32>,
    /// The first and last sample times as printed.
    pub first: Option<String>,
    pub last: Option<String>,
    /// Seconds from the first to the last sample, when the times could be read.
    pub duration_s: Option<f64>,
    /// Sample rows.
    pub samples: u64,
    /// The median interval between samples, in seconds.
    pub interval_s: Option<f64>,
    /// The length of one PAL time slice, in seconds.
    pub slice_s: Option<f64>,
}

/// Every counter of one input.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CounterLog {
    #[serde(flatten)]
    pub header: LogHeader,
    pub series: Vec<Series>,
}

impl CounterLog {
    /// Every series of `object` / `counter` (any instance).
    pub fn find<'a>(
        &'a self,
        object: &'a str,
        counter: &'a str,
    ) -> impl Iterator<Item = &'a Series> {
        self.series
            .iter()
            .filter(move |s| s.path.is(object, counter))
    }

    /// The mean of `object(instance)\counter`, when it was sampled.
    pub fn mean(&self, object: &str, instance: Option<&str>, counter: &str) -> Option<f64> {
        self.find(object, counter)
            .find(|s| match (instance, s.path.instance.as_deref()) {
                (None, None) => true,
                (Some(a), Some(b)) => a.eq_ignore_ascii_case(b),
                _ => false,
            })
            .and_then(|s| s.stats)
            .map(|s| s.mean)
    }
}

//! Totals of a set of rows with idle kept apart: all exits, the idle ones, and the handled
//! time without idle, which is the cost of virtualization.

use serde::Serialize;

/// Sums over rows; times are `None` when any contributing row's time is unknown.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Totals {
    pub count: u64,
    pub time_ns: Option<u64>,
    pub idle_count: u64,
    pub idle_time_ns: Option<u64>,
    /// Handled time without idle: what virtualization cost.
    pub overhead_time_ns: Option<u64>,
    pub overhead_count: u64,
    /// Events per second over the capture window, when the window is known.
    pub per_second: Option<f64>,
}

impl Totals {
    /// An empty sum (all times known, zero).
    pub fn zero() -> Self {
        Self {
            time_ns: Some(0),
            idle_time_ns: Some(0),
            overhead_time_ns: Some(0),
            ..Self::default()
        }
    }

    /// Adds one row of `count` events taking `time_ns`.
    pub fn add(&mut self, count: u64, time_ns: Option<u64>, idle: bool) {
        let plus = |a: Option<u64>| a.zip(time_ns).map(|(a, b)| a.saturating_add(b));
        self.count = self.count.saturating_add(count);
        self.time_ns = plus(self.time_ns);
        if idle {
            self.idle_count = self.idle_count.saturating_add(count);
            self.idle_time_ns = plus(self.idle_time_ns);
        } else {
            self.overhead_count = self.overhead_count.saturating_add(count);
            self.overhead_time_ns = plus(self.overhead_time_ns);
        }
    }

    /// Sets the rate from the window length.
    pub fn with_window(mut self, window_ns: Option<u64>) -> Self {
        self.per_second = window_ns
            .filter(|&w| w > 0)
            .map(|w| self.count as f64 / (w as f64 / 1e9));
        self
    }
}

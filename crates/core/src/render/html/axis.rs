//! The value axis of a bar chart: linear from zero or logarithmic, chosen from the data when a
//! chart asks ([`Scale::Auto`]: log where the values span more than two decades, so a 130 s
//! idle row does not flatten 2 ms of overhead), ending at the data's nice round bound (1-2-5
//! steps) with ticks at nice values.

/// How values map to bar lengths.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Scale {
    /// From zero.
    Linear,
    /// Decades; for values spread over orders of magnitude (a trap 1000× its fix).
    Log,
    /// Log when the positive values span more than two decades ([`DECADES`]), else linear.
    Auto,
}

/// The span (largest over smallest positive value) above which [`Scale::Auto`] draws a log
/// axis.
pub(super) const DECADES: f64 = 100.0;

impl Scale {
    /// The scale `self` means for `values`: [`Scale::Auto`] resolved.
    pub(super) fn resolve(self, values: &[f64]) -> Scale {
        if self != Scale::Auto {
            return self;
        }
        let (min, max) = positive_range(values);
        if min.is_finite() && max / min > DECADES {
            Scale::Log
        } else {
            Scale::Linear
        }
    }
}

fn positive_range(values: &[f64]) -> (f64, f64) {
    values
        .iter()
        .filter(|v| v.is_finite() && **v > 0.0)
        .fold((f64::INFINITY, 0.0_f64), |(lo, hi), &v| {
            (lo.min(v), hi.max(v))
        })
}

/// The value range on the axis and its ticks.
#[derive(Debug, Clone)]
pub(super) struct Axis {
    pub scale: Scale,
    pub lo: f64,
    pub hi: f64,
    /// Linear: the distance between ticks.
    step: f64,
}

impl Axis {
    /// The axis for `values` on `scale` ([`Scale::Auto`] resolved here).
    pub(super) fn new(scale: Scale, values: &[f64]) -> Axis {
        let scale = scale.resolve(values);
        let (min, max) = positive_range(values);
        match scale {
            Scale::Log if min.is_finite() => {
                let lo = 10f64.powf(min.log10().floor());
                let hi = nice_ceiling(max).max(lo * 10.0);
                Axis {
                    scale,
                    lo,
                    hi,
                    step: 0.0,
                }
            }
            Scale::Log => Axis {
                scale,
                lo: 1.0,
                hi: 10.0,
                step: 0.0,
            },
            Scale::Linear | Scale::Auto => {
                let step = nice_step(max / 4.0);
                let hi = ((max / step) - 1e-9).ceil().max(1.0) * step;
                Axis {
                    scale: Scale::Linear,
                    lo: 0.0,
                    hi,
                    step,
                }
            }
        }
    }

    pub(super) fn is_log(&self) -> bool {
        self.scale == Scale::Log
    }

    /// Where `v` falls, 0–1 of the plot width.
    pub(super) fn length(&self, v: f64) -> f64 {
        if !v.is_finite() || v <= 0.0 {
            return 0.0;
        }
        let at = if self.is_log() {
            // A bar on a log axis starts at the axis' lowest decade: give the smallest value a
            // visible stub instead of nothing.
            (v / self.lo).log10() / (self.hi / self.lo).log10()
        } else {
            v / self.hi
        };
        at.clamp(0.0, 1.0).max(0.004)
    }

    /// The tick values: every step from zero, or every decade and the end.
    pub(super) fn ticks(&self) -> Vec<f64> {
        let mut out = Vec::new();
        if self.is_log() {
            let mut v = self.lo;
            while v <= self.hi * 1.0001 && out.len() < 16 {
                out.push(v);
                v *= 10.0;
            }
            if out.last().is_some_and(|&l| l < self.hi * 0.9999) {
                out.push(self.hi);
            }
        } else {
            let n = (self.hi / self.step).round() as usize;
            out.extend((0..=n.min(20)).map(|i| i as f64 * self.step));
        }
        out
    }
}

/// The smallest 1, 2 or 5 × 10ⁿ at or above `v` (1 for nothing).
pub(super) fn nice_ceiling(v: f64) -> f64 {
    if !(v.is_finite() && v > 0.0) {
        return 1.0;
    }
    let decade = 10f64.powf(v.log10().floor());
    for m in [1.0, 2.0, 5.0, 10.0] {
        if m * decade >= v * 0.999_999 {
            return m * decade;
        }
    }
    10.0 * decade
}

/// Ticks at nice round values (1, 2 or 5 × 10ⁿ apart, about `n` of them) from zero up to
/// `max` and not beyond, for an axis that must end where the data ends (a time axis); with
/// the distance between them.
pub(super) fn ticks_upto(max: f64, n: f64) -> (Vec<f64>, f64) {
    let step = nice_step(max / n.max(1.0));
    let count = ((max / step) + 1e-9).floor().clamp(0.0, 50.0) as usize;
    ((0..=count).map(|i| i as f64 * step).collect(), step)
}

/// A tick distance: the 1, 2 or 5 × 10ⁿ nearest above `v`.
fn nice_step(v: f64) -> f64 {
    nice_ceiling(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn linear_axes_end_at_the_nice_bound_with_nice_ticks() {
        // 130 s: not 200 s.
        let a = Axis::new(Scale::Linear, &[130e9, 2e6]);
        assert_eq!(a.hi, 150e9);
        assert_eq!(a.ticks(), [0.0, 50e9, 100e9, 150e9]);
        // 8000: not 10000.
        let a = Axis::new(Scale::Linear, &[8000.0]);
        assert_eq!(a.hi, 8000.0);
        assert_eq!(a.ticks(), [0.0, 2000.0, 4000.0, 6000.0, 8000.0]);
        // No 0.62 / 1.88.
        let a = Axis::new(Scale::Linear, &[2.4]);
        assert_eq!(a.ticks(), [0.0, 1.0, 2.0, 3.0]);
        for t in Axis::new(Scale::Linear, &[0.37, 7.3]).ticks() {
            let m = t / 10f64.powf(t.log10().floor());
            assert!(
                t == 0.0
                    || [1.0, 2.0, 4.0, 5.0, 6.0, 8.0]
                        .iter()
                        .any(|n| (m - n).abs() < 1e-9),
                "{t}"
            );
        }
    }

    #[test]
    fn time_ticks_stay_inside_the_data() {
        assert_eq!(ticks_upto(1.3, 6.0), (vec![0.0, 0.5, 1.0], 0.5));
        let (t, step) = ticks_upto(19.7, 6.0);
        assert_eq!((t.len(), step), (4, 5.0));
        assert_eq!(ticks_upto(0.0, 6.0).0, [0.0]);
    }

    #[test]
    fn log_is_chosen_above_two_decades_only() {
        assert_eq!(Scale::Auto.resolve(&[130e9, 2e6, 40e6]), Scale::Log);
        assert_eq!(Scale::Auto.resolve(&[5.0, 400.0]), Scale::Linear);
        assert_eq!(Scale::Auto.resolve(&[5.0, 500.0, 0.0]), Scale::Linear);
        assert_eq!(Scale::Auto.resolve(&[5.0, 501.0]), Scale::Log);
        assert_eq!(Scale::Auto.resolve(&[]), Scale::Linear);
        assert_eq!(Scale::Linear.resolve(&[1.0, 1e9]), Scale::Linear);
        let a = Axis::new(Scale::Auto, &[8000.0, 3.0]);
        assert!(a.is_log());
        assert_eq!((a.lo, a.hi), (1.0, 10000.0));
        assert_eq!(a.ticks(), [1.0, 10.0, 100.0, 1000.0, 10000.0]);
        let a = Axis::new(Scale::Log, &[130.0, 0.5]);
        assert_eq!(a.ticks(), [0.1, 1.0, 10.0, 100.0, 200.0]);
    }
}

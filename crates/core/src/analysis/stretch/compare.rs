//! The stretch of one measure between two layers, with noise bounds.
//!
//! The *factor* says how many times longer the same work takes in layer B than in layer A:
//! B/A for times and costs, A/B for throughputs and scores, so a factor above 1 is always
//! "slower". The *change* is the plain change of the value, (B − A)/A, as studies print it
//! ("−4.14 %" for a score that fell). The *bounds* come from each layer's noise band (the
//! interquartile range of its samples, or the whole range under four samples): the factor of
//! the worst and best pairing of the two bands. When the bounds contain 1, the difference is
//! inside the noise and is said to be so. A published figure without a stated noise has no
//! band: its verdict says the noise is unknown.

use serde::Serialize;
use virtlens_guest::schema::Better;

use super::Value;

/// What a stretch amounts to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Slower, beyond the noise.
    Slower,
    /// Faster, beyond the noise.
    Faster,
    /// The difference is inside the noise of the two layers.
    WithinNoise,
    /// Slower, but no noise is known for the values.
    SlowerNoiseUnknown,
    /// Faster, but no noise is known for the values.
    FasterNoiseUnknown,
    /// The same value.
    Same,
}

/// One layer against another on one measure.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Stretch {
    /// The layer compared against.
    pub base: String,
    /// Times longer the work takes (above 1: slower).
    pub factor: f64,
    /// (B − A) / A of the value, in percent.
    pub change_pct: f64,
    /// The lowest and highest factor the two noise bands allow.
    pub bounds: Option<(f64, f64)>,
    pub verdict: Verdict,
}

/// The factor of value `b` against `a` for a measure whose good direction is `better`.
pub(crate) fn factor(a: f64, b: f64, better: Better) -> f64 {
    match better {
        Better::Lower => b / a,
        Better::Higher => a / b,
    }
}

/// Layer `b` against layer `a` (named `base`).
pub(crate) fn stretch(a: &Value, b: &Value, base: &str) -> Stretch {
    let f = factor(a.value, b.value, a.better);
    let bounds = a.spread.zip(b.spread).map(|(sa, sb)| {
        let ((alo, ahi), (blo, bhi)) = (sa.band(), sb.band());
        match a.better {
            Better::Lower => (blo / ahi, bhi / alo),
            Better::Higher => (alo / bhi, ahi / blo),
        }
    });
    let verdict = match bounds {
        _ if a.value == b.value => Verdict::Same,
        Some((lo, hi)) if lo <= 1.0 && 1.0 <= hi => Verdict::WithinNoise,
        Some(_) if f > 1.0 => Verdict::Slower,
        Some(_) => Verdict::Faster,
        None if f > 1.0 => Verdict::SlowerNoiseUnknown,
        None => Verdict::FasterNoiseUnknown,
    };
    Stretch {
        base: base.to_string(),
        factor: f,
        change_pct: 100.0 * (b.value - a.value) / a.value,
        bounds,
        verdict,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use virtlens_guest::stats::Spread;

    fn v(samples: &[f64], better: Better) -> Value {
        let spread = Spread::of(samples);
        Value {
            what: String::new(),
            unit: "ms".into(),
            better,
            value: spread.map_or(f64::NAN, |s| s.median),
            spread,
            detail: Default::default(),
        }
    }

    #[test]
    fn a_clear_slowdown_is_slower_and_an_overlap_is_noise() {
        let a = v(&[10.0, 10.2, 9.9, 10.1, 10.0], Better::Lower);
        let b = v(&[15.0, 15.3, 14.8, 15.1, 15.0], Better::Lower);
        let s = stretch(&a, &b, "native");
        assert_eq!(s.verdict, Verdict::Slower);
        assert!((s.factor - 1.5).abs() < 1e-9 && (s.change_pct - 50.0).abs() < 1e-9);
        let (lo, hi) = s.bounds.unwrap();
        assert!(lo > 1.4 && hi < 1.6, "{lo} {hi}");
        let c = v(&[10.1, 9.5, 10.6, 10.3, 9.8], Better::Lower);
        assert_eq!(stretch(&a, &c, "native").verdict, Verdict::WithinNoise);
    }

    #[test]
    fn throughput_that_falls_is_a_stretch_above_one_and_a_negative_change() {
        let a = Value {
            spread: None,
            value: 33.55,
            ..v(&[1.0], Better::Higher)
        };
        let b = Value {
            value: 32.16,
            ..a.clone()
        };
        let s = stretch(&a, &b, "host");
        assert!((s.change_pct - -4.143).abs() < 0.001, "{}", s.change_pct);
        assert!((s.factor - 33.55 / 32.16).abs() < 1e-12);
        assert_eq!(s.verdict, Verdict::SlowerNoiseUnknown);
        assert_eq!(s.bounds, None);
    }
}

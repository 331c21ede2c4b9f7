//! Published figures as `virtlens stretch` input, and the check of a study's stated summary
//! against its own numbers.
//!
//! The format (`virtlens.figures/1`) is a small JSON document: the study, where it was
//! published, its layers (columns) in order, and its measures with one value per layer (null
//! where the study has none); `noise_pct`, when the study states its run-to-run noise, gives
//! each value a band of ± that percentage. `stated` lists the summaries the authors wrote,
//! each as a change in percent (`"-4.14%"`) or a factor (`"4.08x"`) of one layer against
//! another; virtlens recomputes each and says whether it agrees to the precision stated.
//!
//! ```json
//! {"schema": "virtlens.figures/1", "study": "…", "source": "https://…",
//!  "layers": ["host", "VM", "nested VM"],
//!  "measures": [{"name": "cpu.chess", "unit": "score", "better": "higher",
//!                "values": [33.55, 32.16, 31.45]}],
//!  "stated": [{"measure": "cpu.chess", "layer": "VM", "base": "host", "says": "-4.14%"}]}
//! ```

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value as Json;
use virtlens_guest::schema::Better;
use virtlens_guest::stats::Spread;

use super::compare::factor;
use super::{Layer, Value};
use crate::error::{Error, Result};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Doc {
    #[allow(dead_code)]
    schema: String,
    study: String,
    source: String,
    layers: Vec<String>,
    measures: Vec<Figure>,
    #[serde(default)]
    stated: Vec<Stated>,
    #[serde(default)]
    #[allow(dead_code)]
    notes: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Figure {
    name: String,
    #[serde(default)]
    what: String,
    unit: String,
    better: Better,
    values: Vec<Option<f64>>,
    #[serde(default)]
    noise_pct: Option<f64>,
}

/// A summary the authors stated: `layer` against `base` on `measure`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Stated {
    pub measure: String,
    pub layer: String,
    pub base: String,
    /// `"-4.14%"` (a change of the value) or `"4.08x"` (a stretch factor).
    pub says: String,
    /// The authors' words, when quoted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quote: Option<String>,
    /// Where the file came from (filled in when read).
    #[serde(default, skip_deserializing)]
    pub source: String,
}

/// A stated summary, recomputed.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StatedCheck {
    pub stated: Stated,
    /// The number in `says`, and whether it is a change in percent or a factor.
    pub number: Option<f64>,
    pub is_factor: bool,
    /// The same quantity computed from the study's values.
    pub computed: Option<f64>,
    /// Whether the two agree to the precision of `says` (None when either is missing).
    pub agrees: Option<bool>,
}

fn invalid(path: &str, message: String) -> Error {
    Error::Input {
        path: path.to_string(),
        message,
    }
}

/// The layers of a figures document.
pub(crate) fn layers(path: &str, doc: Json) -> Result<Vec<Layer>> {
    let doc: Doc = serde_json::from_value(doc).map_err(|e| Error::Parse {
        path: path.to_string(),
        line: e.line(),
        message: format!("not a virtlens.figures/1 document: {e}"),
    })?;
    if doc.layers.len() < 2 {
        return Err(invalid(
            path,
            "a figures file needs at least two layers".into(),
        ));
    }
    let mut out: Vec<Layer> = doc
        .layers
        .iter()
        .map(|name| Layer {
            name: name.clone(),
            source: format!("{} ({})", doc.study, doc.source),
            fingerprint: None,
            values: BTreeMap::new(),
            stated: Vec::new(),
            quick: None,
        })
        .collect();
    for f in &doc.measures {
        if f.values.len() != doc.layers.len() {
            return Err(invalid(
                path,
                format!(
                    "measure {:?} has {} values for {} layers",
                    f.name,
                    f.values.len(),
                    doc.layers.len()
                ),
            ));
        }
        for (layer, value) in out.iter_mut().zip(&f.values) {
            let Some(v) = *value else { continue };
            if !v.is_finite() || v <= 0.0 {
                return Err(invalid(
                    path,
                    format!("measure {:?}: value {v} is not positive", f.name),
                ));
            }
            let spread = f.noise_pct.map(|p| {
                let d = v * p / 100.0;
                Spread {
                    median: v,
                    min: v - d,
                    max: v + d,
                    q1: v - d,
                    q3: v + d,
                    n: 1,
                }
            });
            layer.values.insert(
                f.name.clone(),
                Value {
                    what: f.what.clone(),
                    unit: f.unit.clone(),
                    better: f.better,
                    value: v,
                    spread,
                    detail: BTreeMap::new(),
                },
            );
        }
    }
    for s in &doc.stated {
        for name in [&s.layer, &s.base] {
            if !doc.layers.contains(name) {
                return Err(invalid(
                    path,
                    format!("stated summary names an unknown layer {name:?}"),
                ));
            }
        }
    }
    if let Some(first) = out.first_mut() {
        first.stated = doc
            .stated
            .into_iter()
            .map(|s| Stated {
                source: first.source.clone(),
                ..s
            })
            .collect();
    }
    Ok(out)
}

/// Parses `"-4.14%"` / `"+17 %"` / `"4.08x"`: (number, is a factor, decimals given).
pub(crate) fn parse_says(says: &str) -> Option<(f64, bool, usize)> {
    let t = says.trim().replace('\u{2212}', "-");
    let (num, is_factor) = if let Some(n) = t.strip_suffix('%') {
        (n.trim(), false)
    } else if let Some(n) = t.strip_suffix('x').or_else(|| t.strip_suffix('×')) {
        (n.trim(), true)
    } else {
        return None;
    };
    let decimals = num.split_once('.').map_or(0, |(_, d)| d.len());
    Some((
        num.trim_start_matches('+').parse().ok()?,
        is_factor,
        decimals,
    ))
}

/// Recomputes `s` from the layers of the file it came from.
pub(crate) fn check_stated(s: &Stated, layers: &[Layer]) -> StatedCheck {
    let parsed = parse_says(&s.says);
    let find = |name: &str| {
        layers
            .iter()
            .find(|l| l.name == name && l.source == s.source)
            .and_then(|l| l.values.get(&s.measure))
    };
    let is_factor = parsed.is_some_and(|p| p.1);
    let computed = find(&s.base).zip(find(&s.layer)).map(|(a, b)| {
        if is_factor {
            factor(a.value, b.value, a.better)
        } else {
            100.0 * (b.value - a.value) / a.value
        }
    });
    let agrees = parsed.zip(computed).map(|((n, _, decimals), c)| {
        let tolerance = 0.5 * 10f64.powi(-(decimals as i32)) + 1e-9;
        (c - n).abs() <= tolerance
    });
    StatedCheck {
        stated: s.clone(),
        number: parsed.map(|p| p.0),
        is_factor,
        computed,
        agrees,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stated_numbers_parse_with_their_precision() {
        assert_eq!(parse_says("-4.14%"), Some((-4.14, false, 2)));
        assert_eq!(parse_says("+17 %"), Some((17.0, false, 0)));
        assert_eq!(parse_says("\u{2212}21.38%"), Some((-21.38, false, 2)));
        assert_eq!(parse_says("4.08x"), Some((4.08, true, 2)));
        assert_eq!(parse_says("about a fifth"), None);
    }
}

//! `virtlens stretch A.json B.json [C.json …]`: how much slower the same work runs from one
//! layer to the next (native → VM → nested VM, or idle host → crowded host), per measure, with
//! noise bounds, the summary table nested-virtualization studies print, the likely cause of
//! each stretch from the layers' fingerprints, and — for published figures — whether the
//! summary the authors stated agrees with their own numbers.
//!
//! Inputs ([`input`]): `virtlens bench --json` (one layer each), `virtlens load --json` (one
//! layer each) and published figures ([`figures`]: several layers in one file). The maths is in
//! [`compare`], the causes in [`cause`]; the renderer is `render::stretch_text`.

pub(crate) mod cause;
pub(crate) mod compare;
pub(crate) mod figures;
pub(crate) mod input;

use std::collections::BTreeMap;

use serde::Serialize;
use virtlens_guest::schema::{Better, Fingerprint};
use virtlens_guest::stats::Spread;

pub use compare::Verdict;
pub(crate) use compare::{Stretch, stretch};
pub(crate) use figures::{StatedCheck, check_stated};
pub use input::{Layer, read_layers};

/// The schema of `virtlens stretch --json`.
pub(crate) const STRETCH_SCHEMA: &str = "virtlens.stretch/1";

/// One measure of one layer, as the analysis sees it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Value {
    pub what: String,
    pub unit: String,
    pub better: Better,
    /// The median (or the published figure).
    pub value: f64,
    /// The samples' spread; `None` for a single published figure without a stated noise.
    pub spread: Option<Spread>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub detail: BTreeMap<String, String>,
}

/// One measure across the layers.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Row {
    pub measure: String,
    pub unit: String,
    pub better: Better,
    /// The value in each layer (`None` where the layer lacks the measure).
    pub values: Vec<Option<Value>>,
    /// Each later layer against the first.
    pub vs_first: Vec<Option<Stretch>>,
    /// Each later layer against the one before it (the nested study's "then … more").
    pub vs_previous: Vec<Option<Stretch>>,
    /// The likely causes of the largest stretch, in words.
    pub causes: Vec<String>,
}

/// What `virtlens stretch` found.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StretchReport {
    pub schema: String,
    pub layers: Vec<LayerInfo>,
    pub rows: Vec<Row>,
    /// Published summaries checked against their own numbers.
    pub stated: Vec<StatedCheck>,
    /// Things to know before reading the table (software emulation, mixed quick/full runs, …).
    pub notes: Vec<String>,
}

/// A layer's name and what it is.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LayerInfo {
    pub name: String,
    pub source: String,
    pub fingerprint: Option<Fingerprint>,
}

/// Compares `layers` in the order given (the first is the baseline).
pub fn analyse(layers: &[Layer]) -> StretchReport {
    let mut names: Vec<&str> = Vec::new();
    for layer in layers {
        for m in layer.values.keys() {
            if !names.contains(&m.as_str()) {
                names.push(m);
            }
        }
    }
    let rows = names
        .into_iter()
        .filter_map(|name| row(layers, name))
        .collect();
    let stated = layers
        .iter()
        .flat_map(|l| l.stated.iter())
        .map(|s| check_stated(s, layers))
        .collect();
    StretchReport {
        schema: STRETCH_SCHEMA.to_string(),
        layers: layers
            .iter()
            .map(|l| LayerInfo {
                name: l.name.clone(),
                source: l.source.clone(),
                fingerprint: l.fingerprint.clone(),
            })
            .collect(),
        rows,
        stated,
        notes: cause::notes(layers),
    }
}

fn row(layers: &[Layer], name: &str) -> Option<Row> {
    let values: Vec<Option<Value>> = layers.iter().map(|l| l.values.get(name).cloned()).collect();
    let first = values.iter().flatten().next()?.clone();
    let vs = |base: &dyn Fn(usize) -> Option<usize>| -> Vec<Option<Stretch>> {
        (1..values.len())
            .map(|i| {
                let b = base(i)?;
                Some(stretch(
                    values[b].as_ref()?,
                    values[i].as_ref()?,
                    &layers[b].name,
                ))
            })
            .collect()
    };
    let vs_first = vs(&|_| Some(0));
    let vs_previous = vs(&|i| Some(i - 1));
    let causes = cause::causes(name, layers, &values, &vs_first);
    Some(Row {
        measure: name.to_string(),
        unit: first.unit,
        better: first.better,
        values,
        vs_first,
        vs_previous,
        causes,
    })
}

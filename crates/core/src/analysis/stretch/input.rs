//! Reading the documents `virtlens stretch` compares: `virtlens bench --json` and `virtlens
//! load --json` give one layer each, a published-figures file ([`super::figures`]) gives one
//! layer per column of the study. The kind is told by the document's `schema`; an unknown
//! schema, or a major version this build does not know, is an error naming the file (and the
//! line serde stopped at).

use std::collections::BTreeMap;

use serde_json::Value as Json;
use virtlens_guest::schema::{BenchReport, Better, Fingerprint, LoadReport};
use virtlens_guest::stats::Spread;

use super::Value;
use super::figures::{self, Stated};
use crate::error::{Error, Result};

/// One layer: a name, where it came from, its measures and, for guest-side documents, its
/// fingerprint.
#[derive(Debug, Clone, PartialEq)]
pub struct Layer {
    pub name: String,
    pub source: String,
    pub fingerprint: Option<Fingerprint>,
    pub values: BTreeMap<String, Value>,
    /// Published summaries that belong to this layer's file (only the first layer of a
    /// figures file carries them).
    pub stated: Vec<Stated>,
    /// Whether a bench document came from the quick variant.
    pub quick: Option<bool>,
}

fn bad(path: &str, e: &serde_json::Error) -> Error {
    let message = match e.classify() {
        serde_json::error::Category::Syntax | serde_json::error::Category::Eof => format!(
            "not JSON ({e}): stretch reads the JSON `virtlens bench --json` writes (one file \
             per layer: native, VM, nested) or a figures file of published numbers"
        ),
        _ => format!("not a document virtlens stretch reads: {e}"),
    };
    Error::Parse {
        path: path.to_string(),
        line: e.line(),
        message,
    }
}

/// The layers in the document `text` read from `path`.
pub fn read_layers(path: &str, text: &str) -> Result<Vec<Layer>> {
    let doc: Json = serde_json::from_str(text).map_err(|e| bad(path, &e))?;
    let schema = doc["schema"].as_str().unwrap_or_default();
    let (kind, major) = schema.split_once('/').unwrap_or((schema, ""));
    let known = |k: &str| -> Result<()> {
        if major == "1" {
            Ok(())
        } else {
            Err(Error::Input {
                path: path.to_string(),
                message: format!("schema {schema:?}: this virtlens reads {k}/1"),
            })
        }
    };
    match kind {
        "virtlens.bench" => {
            known(kind)?;
            let r: BenchReport = serde_json::from_value(doc).map_err(|e| bad(path, &e))?;
            Ok(vec![bench_layer(path, r)])
        }
        "virtlens.load" => {
            known(kind)?;
            let r: LoadReport = serde_json::from_value(doc).map_err(|e| bad(path, &e))?;
            Ok(vec![load_layer(path, &r)])
        }
        "virtlens.figures" => {
            known(kind)?;
            figures::layers(path, doc)
        }
        _ => Err(Error::Input {
            path: path.to_string(),
            message: format!(
                "schema {schema:?} is not one virtlens stretch reads (virtlens.bench/1 from \
                 `virtlens bench --json`, virtlens.load/1 from `virtlens load --json`, or \
                 virtlens.figures/1 for published figures)"
            ),
        }),
    }
}

fn bench_layer(path: &str, r: BenchReport) -> Layer {
    let values = r
        .measures
        .into_iter()
        .filter_map(|m| {
            let spread = m.spread.or_else(|| Spread::of(&m.samples))?;
            let v = Value {
                what: m.what,
                unit: m.unit,
                better: m.better,
                value: spread.median,
                spread: Some(spread),
                detail: m.detail,
            };
            Some((m.name, v))
        })
        .collect();
    Layer {
        name: r.layer,
        source: path.to_string(),
        fingerprint: Some(r.fingerprint),
        values,
        stated: Vec::new(),
        quick: Some(r.recorded.quick),
    }
}

/// A single value without samples.
fn single(what: &str, unit: &str, better: Better, value: f64) -> Value {
    Value {
        what: what.to_string(),
        unit: unit.to_string(),
        better,
        value,
        spread: None,
        detail: BTreeMap::new(),
    }
}

fn load_layer(path: &str, r: &LoadReport) -> Layer {
    let mut values = BTreeMap::new();
    let o = &r.options;
    let mut elapsed = single(
        "elapsed time of the fixed work",
        "s",
        Better::Lower,
        r.elapsed_s,
    );
    elapsed.detail.insert(
        "work".into(),
        format!(
            "{} tasks × {} iterations, {} workers, {} MiB",
            o.tasks, o.iterations, o.workers, o.footprint_mb
        ),
    );
    if o.duration_s.is_none() {
        values.insert("load.elapsed".to_string(), elapsed);
    } else {
        values.insert(
            "load.tasks_per_s".to_string(),
            single(
                "tasks completed per second",
                "tasks/s",
                Better::Higher,
                r.tasks_per_s,
            ),
        );
    }
    values.insert(
        "load.latency_p99".to_string(),
        single(
            "99th percentile task latency",
            "ms",
            Better::Lower,
            r.latency_ms.p99,
        ),
    );
    if let Some(q) = r.run_queue {
        values.insert(
            "load.ready_pct".to_string(),
            single(
                "workers' run-queue wait over their wall time",
                "%",
                Better::Lower,
                q.ready_pct,
            ),
        );
    }
    Layer {
        name: format!("load ({} workers)", o.workers),
        source: path.to_string(),
        fingerprint: None,
        values,
        stated: Vec::new(),
        quick: None,
    }
}

//! Inputs as `compare` and `diagnose` number them: one per (file, table label), in the order
//! given — a file whose tables carry several labels (`baseline:`, `with the patch:`) is several
//! inputs named `stem: label`; a file without tables is one input with none.

use crate::profile::{Profile, Table};

/// One labelled table set of one file.
#[derive(Debug)]
pub struct Labelled<'a> {
    /// `stem` or `stem: label` when the file has several labels.
    pub name: String,
    pub path: Option<String>,
    pub label: Option<String>,
    pub profile: &'a Profile,
    pub tables: Vec<&'a Table>,
}

/// Every input of `profiles`, in order.
pub fn labelled(profiles: &[Profile]) -> Vec<Labelled<'_>> {
    let mut out = Vec::new();
    for p in profiles {
        let path = p.origin.path.clone();
        let stem = path
            .as_deref()
            .map(|s| {
                std::path::Path::new(s)
                    .file_stem()
                    .map_or_else(|| s.to_string(), |f| f.to_string_lossy().into_owned())
            })
            .unwrap_or_else(|| p.origin.format.clone());
        let mut order: Vec<Option<String>> = Vec::new();
        for t in &p.tables {
            if !order.contains(&t.label) {
                order.push(t.label.clone());
            }
        }
        if order.is_empty() {
            order.push(None);
        }
        let several = order.len() > 1;
        for label in order {
            out.push(Labelled {
                name: match (&label, several) {
                    (Some(l), true) => format!("{stem}: {l}"),
                    _ => stem.clone(),
                },
                path: path.clone(),
                tables: p.tables.iter().filter(|t| t.label == label).collect(),
                label,
                profile: p,
            });
        }
    }
    out
}

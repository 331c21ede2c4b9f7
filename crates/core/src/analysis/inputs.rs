//! What an "input" is for the commands that take several: one per (file, table label), in the
//! order given. A file whose tables carry labels (`baseline:`, `with the patch:`, kvmexit
//! command lines) gives one input per label, named `stem: label`; a file without tables is one
//! input with none. `compare` and `diagnose` number and name inputs the same way through this.

use crate::profile::{Profile, Table};

/// One input: its place, its name, and the tables it holds.
#[derive(Debug, Clone)]
pub(crate) struct LabelledInput<'a> {
    /// 1-based, in the order given.
    pub number: usize,
    /// The file's stem, then `: label` when the tables carry one.
    pub name: String,
    pub path: Option<String>,
    pub label: Option<String>,
    pub profile: &'a Profile,
    pub tables: Vec<&'a Table>,
}

/// Splits `profiles` into inputs: one per (file, table label), labels in the order they first
/// appear in each file.
pub(crate) fn split(profiles: &[Profile]) -> Vec<LabelledInput<'_>> {
    let mut out = Vec::new();
    for profile in profiles {
        let path = profile.origin.path.clone();
        let stem = path
            .as_deref()
            .map(|s| {
                std::path::Path::new(s)
                    .file_stem()
                    .map_or_else(|| s.to_string(), |f| f.to_string_lossy().into_owned())
            })
            .unwrap_or_else(|| profile.origin.format.clone());
        let mut order: Vec<Option<String>> = Vec::new();
        for t in &profile.tables {
            if !order.contains(&t.label) {
                order.push(t.label.clone());
            }
        }
        if order.is_empty() {
            order.push(None);
        }
        for label in order {
            let tables = profile.tables.iter().filter(|t| t.label == label).collect();
            let name = match &label {
                Some(l) => format!("{stem}: {l}"),
                None => stem.clone(),
            };
            out.push(LabelledInput {
                number: out.len() + 1,
                name,
                path: path.clone(),
                label,
                profile,
                tables,
            });
        }
    }
    out
}

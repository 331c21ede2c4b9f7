//! `virtlens stretch FILE…`: reads bench/load documents and published figures, compares the
//! layers (the first is the baseline) and prints the stretch table, the study-style summary,
//! the likely causes and the stated summaries checked. `--lab` measures the layers first: the
//! same kernels natively and in micro-VMs on /dev/kvm.

use std::process::ExitCode;

use anyhow::Context;
use virtlens_core::analysis::{Layer, read_layers, stretch};
use virtlens_core::render;

use crate::args::StretchArgs;
use crate::output::{self, OutputOptions};

pub fn run(a: &StretchArgs) -> anyhow::Result<ExitCode> {
    let out = OutputOptions::with_html(a.json, &a.page)?;
    let layers = if a.lab {
        lab_layers(a)?
    } else {
        let mut layers: Vec<Layer> = Vec::new();
        for path in &a.files {
            let shown = path.display().to_string();
            let text = std::fs::read_to_string(path).with_context(|| format!("reading {shown}"))?;
            layers.extend(read_layers(&shown, &text)?);
        }
        layers
    };
    if layers.len() < 2 {
        anyhow::bail!(
            "stretch needs at least two layers (two bench/load documents, or a figures file)"
        );
    }
    let report = stretch(&layers);
    output::emit(&report, out)?;
    Ok(ExitCode::SUCCESS)
}

fn lab_layers(a: &StretchArgs) -> anyhow::Result<Vec<Layer>> {
    virtlens_host::lab::kvm_usable().map_err(anyhow::Error::msg)?;
    let reports =
        super::lab::with_progress(|tick| virtlens_host::lab::run_stretch(a.runs as usize, tick))?;
    let mut layers = Vec::new();
    for r in reports {
        let json = render::json(&r);
        let name = format!(
            "lab-{}.json",
            r.layer.replace(|c: char| !c.is_ascii_alphanumeric(), "-")
        );
        if let Some(dir) = &a.save {
            std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
            let path = dir.join(&name);
            std::fs::write(&path, format!("{json}\n"))
                .with_context(|| format!("writing {}", path.display()))?;
        }
        layers.extend(read_layers(&name, &json)?);
    }
    Ok(layers)
}

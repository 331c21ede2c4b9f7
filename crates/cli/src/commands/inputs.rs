//! Reading what commands are given: the exit profiles (`report`, `compare`, `diagnose`) and the
//! `--mtree` map. Profiles stream (from files, pipes or standard input); mtree dumps, like the
//! configurations `config::read_path` reads, are small and read whole through the one capped
//! read they share (`sources::input::read_capped`).

use anyhow::Context;
use virtlens_core::analysis::{Filter, apply_filter};
use virtlens_core::decode::{AddressMap, Decoder};
use virtlens_core::profile::Profile;
use virtlens_core::sources::{self, Format};
use virtlens_core::sources::{CONFIG_CAP, display_name, read_capped};

use crate::args::InputArgs;

/// Reads every file as a profile, in order, keeping the rows `--pid/--vm/--vcpu` select.
pub fn profiles(files: &[std::path::PathBuf], args: &InputArgs) -> anyhow::Result<Vec<Profile>> {
    read(files, &[], args)
}

/// [`profiles`] of the `files`, then of the `texts` (inputs given as text, as an agent pastes
/// them: each capped like a configuration and named `text N` in notes and errors).
pub fn read(
    files: &[std::path::PathBuf],
    texts: &[String],
    args: &InputArgs,
) -> anyhow::Result<Vec<Profile>> {
    let format = args.format.as_deref().and_then(Format::from_name);
    let filter = Filter {
        pid: args.pid,
        vm: args.vm.clone(),
        vcpu: args.vcpu,
    };
    let from_files = files
        .iter()
        .map(|f| Ok((sources::read_path(f, format)?, display_name(f))));
    let from_texts = texts.iter().enumerate().map(|(i, t)| {
        let name = format!("text {}", i + 1);
        if t.len() as u64 > CONFIG_CAP {
            anyhow::bail!(
                "{name}: {} bytes; an input given as text may hold at most {CONFIG_CAP} (give a file instead)",
                t.len()
            );
        }
        Ok((sources::read_bytes(t.as_bytes(), &name, format)?, name))
    });
    from_files
        .chain(from_texts)
        .map(|read: anyhow::Result<(Profile, String)>| {
            let (p, name) = read?;
            select(p, &name, &filter)
        })
        .collect()
}

/// The rows of `p` that `filter` selects; selecting nothing of an input that had rows is an error.
fn select(p: Profile, name: &str, filter: &Filter) -> anyhow::Result<Profile> {
    let had_rows = p.tables.iter().any(|t| !t.rows.is_empty());
    let before = p.warnings.len();
    let p = apply_filter(p, filter);
    if had_rows && p.tables.is_empty() {
        // Selecting nothing is a usage error, not an empty report.
        let why: Vec<&str> = p.warnings[before..]
            .iter()
            .map(|n| n.message.as_str())
            .collect();
        anyhow::bail!(
            "{name}: --pid/--vm/--vcpu select no row of this input: {}",
            if why.is_empty() {
                "no row has that VM or vCPU".to_string()
            } else {
                why.join("; ")
            }
        );
    }
    Ok(p)
}

/// The decoder: built-in names, overridden by `--mtree` when given.
pub fn decoder(args: &InputArgs) -> anyhow::Result<Decoder> {
    let Some(path) = &args.mtree else {
        return Ok(Decoder::builtin());
    };
    let bytes = read_capped(path, CONFIG_CAP, "QEMU `info mtree` dump")?;
    let name = display_name(path);
    let text = String::from_utf8(bytes)
        .with_context(|| format!("{name}: an mtree dump is text, and this is not UTF-8"))?;
    let map = AddressMap::parse(&text, &name)?;
    Ok(Decoder::with_map(map))
}

/// The guest's symbols of `--guest-symbols` (read once, shared by every input).
pub fn guest_symbols(
    args: &crate::args::GuestCodeArgs,
) -> anyhow::Result<virtlens_core::analysis::Symbols> {
    let map = match &args.guest_symbols {
        Some(path) => Some(std::sync::Arc::new(
            virtlens_core::sources::SymbolMap::read_path(path)?,
        )),
        None => None,
    };
    Ok(virtlens_core::analysis::Symbols {
        map,
        offset: args.guest_kaslr_offset,
    })
}

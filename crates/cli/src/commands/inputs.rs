//! Reading what commands are given: the exit profiles (`report`, `compare`, `diagnose`), the
//! `--mtree` map, and VM configurations (`lint`, `diagnose --config`). Profiles stream (from
//! files, pipes or standard input); configurations and mtree dumps are small and read whole,
//! through the one capped read every command shares.

use std::path::Path;

use anyhow::Context;
use virtlens_core::analysis::filter::{self, Filter};
use virtlens_core::config::{self, ReadOptions, VmConfig};
use virtlens_core::decode::{AddressMap, Decoder};
use virtlens_core::profile::Profile;
use virtlens_core::sources::input::{CONFIG_CAP, display_name, read_capped};
use virtlens_core::sources::{self, Format};

use crate::args::InputArgs;

/// Reads every file as a profile, in order, keeping the rows `--pid/--vm/--vcpu` select.
pub fn profiles(files: &[std::path::PathBuf], args: &InputArgs) -> anyhow::Result<Vec<Profile>> {
    let format = args.format.as_deref().and_then(Format::from_name);
    let filter = Filter {
        pid: args.pid,
        vm: args.vm.clone(),
        vcpu: args.vcpu,
    };
    files
        .iter()
        .map(|f| {
            let p = sources::read_path(f, format)?;
            Ok(filter::apply(p, &filter))
        })
        .collect()
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

/// The VM configurations in `path` (`-` for standard input), read with the configuration cap.
pub fn configs(path: &Path, options: &ReadOptions) -> anyhow::Result<Vec<VmConfig>> {
    let bytes = read_capped(path, CONFIG_CAP, "VM configuration")?;
    Ok(config::read_bytes(&bytes, &display_name(path), options)?)
}

//! Reading the input files and the `--mtree` map that `report` and `compare` share.

use anyhow::Context;
use virtlens_core::analysis::filter::{self, Filter};
use virtlens_core::decode::{AddressMap, Decoder};
use virtlens_core::profile::Profile;
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
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("{}: cannot read the mtree dump", path.display()))?;
    let map = AddressMap::parse(&text, &path.display().to_string())?;
    Ok(Decoder::with_map(map))
}

//! Prints docs/findings.md, the catalogue of every finding id, from the rule catalogues:
//! `cargo run -q -p virtlens-core --example findings_md > docs/findings.md`.

use virtlens_core::diagnose::{catalogue, shared_thresholds};
use virtlens_core::lint::RULES;
use virtlens_core::render::findings_md;

fn main() {
    print!(
        "{}",
        findings_md(&catalogue(), &shared_thresholds(), &RULES)
    );
}

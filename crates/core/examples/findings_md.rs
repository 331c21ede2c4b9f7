//! Prints docs/findings.md, the catalogue of every finding id, from the rule catalogues:
//! `cargo run -q -p virtlens-core --example findings_md > docs/findings.md`.

use virtlens_core::diagnose::catalogue;
use virtlens_core::lint::rules;
use virtlens_core::render::findings_md;

fn main() {
    print!(
        "{}",
        findings_md::render(
            &catalogue::entries(),
            &catalogue::shared_thresholds(),
            &rules::RULES
        )
    );
}

//! docs/findings.md is what the rule catalogues say today: it is generated (see its header) and
//! this test fails, without rewriting it, when the checked-in page differs from what the
//! generator writes. It also holds the page to what a user can open: no project notes, design
//! file or test data named anywhere in it.

use virtlens_core::diagnose::{catalogue, shared_thresholds};
use virtlens_core::lint::{RULES, rules};
use virtlens_core::render::{FINDINGS_REGENERATE, findings_md};

fn generated() -> String {
    findings_md(&catalogue(), &shared_thresholds(), &RULES)
}

#[test]
fn docs_findings_md_is_what_the_catalogue_generates() {
    let path = virtlens_testkit::repo_root().join("docs/findings.md");
    let on_disk = std::fs::read_to_string(&path).unwrap_or_default();
    let now = generated();
    if on_disk != now {
        let line = on_disk
            .lines()
            .zip(now.lines())
            .position(|(a, b)| a != b)
            .unwrap_or_else(|| on_disk.lines().count().min(now.lines().count()))
            + 1;
        panic!(
            "docs/findings.md differs from the catalogue (first at line {line}); regenerate it \
             with `{}` and review the diff",
            FINDINGS_REGENERATE
        );
    }
}

#[test]
fn every_rule_id_is_in_the_page_with_its_sources() {
    let page = generated();
    for e in catalogue() {
        assert!(page.contains(&format!("### `{}`", e.id)), "{}", e.id);
        for s in &e.sources {
            assert!(page.contains(s.reference), "{}: {}", e.id, s.reference);
        }
    }
    for r in rules() {
        assert!(page.contains(&format!("| {} |", r.id)), "{}", r.id);
    }
}

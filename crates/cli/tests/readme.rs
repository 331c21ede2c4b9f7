//! The README's examples are real: every ```console block whose first line is
//! `$ virtlens ARGS…` is run from the repository root and its output must be exactly what the
//! README shows; drift fails the test, which never rewrites the README. To change the
//! examples, `scripts/update_readme_examples.py` rewrites the blocks with today's output for a
//! human to review (`git diff README.md`) and commit.

#![allow(clippy::panic, clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Expands `dir/*.ext` the way a shell would (sorted); other words pass through.
fn expand(word: &str) -> Vec<String> {
    let Some((dir, pattern)) = word.rsplit_once('/') else {
        return vec![word.to_string()];
    };
    let Some(suffix) = pattern.strip_prefix('*') else {
        return vec![word.to_string()];
    };
    let mut files: Vec<String> = std::fs::read_dir(root().join(dir))
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.ends_with(suffix) && n != "README.md")
                .map(|n| format!("{dir}/{n}"))
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    files
}

fn run(command: &str) -> String {
    let args: Vec<String> = command
        .split_whitespace()
        .skip(1)
        .flat_map(expand)
        .collect();
    let out = Command::new(env!("CARGO_BIN_EXE_virtlens"))
        .args(&args)
        .current_dir(root())
        .env("NO_COLOR", "1")
        .output()
        .unwrap_or_else(|e| panic!("{command}: {e}"));
    let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.push_str(&String::from_utf8_lossy(&out.stderr));
    text
}

#[test]
fn readme_examples_print_what_virtlens_prints() {
    let path: &Path = &root().join("README.md");
    let readme = std::fs::read_to_string(path).unwrap();
    let mut rest = readme.as_str();
    let mut checked = 0;
    let mut stale = Vec::new();
    while let Some(start) = rest.find("```console\n$ virtlens ") {
        let body_start = start + "```console\n".len();
        let Some(len) = rest[body_start..].find("\n```") else {
            break;
        };
        let block = &rest[body_start..body_start + len];
        let (command, shown) = block.split_once('\n').unwrap_or((block, ""));
        let actual = run(command.trim_start_matches("$ "));
        let (actual, shown) = (actual.trim_end(), shown.trim_end());
        if actual != shown {
            stale.push(format!("{command}\n{}", first_difference(shown, actual)));
        }
        rest = &rest[body_start + len..];
        checked += 1;
    }
    assert!(
        checked > 0,
        "no ```console blocks starting with `$ virtlens` in README.md"
    );
    assert!(
        stale.is_empty(),
        "README output differs from what virtlens prints:\n\n{}\n\nIf the change is intended, \
         run scripts/update_readme_examples.py and review the diff.",
        stale.join("\n\n")
    );
}

/// The first line where `shown` and `actual` differ, both ways.
fn first_difference(shown: &str, actual: &str) -> String {
    let (mut s, mut a) = (shown.lines(), actual.lines());
    for n in 1.. {
        match (s.next(), a.next()) {
            (Some(x), Some(y)) if x == y => continue,
            (x, y) => {
                return format!(
                    "  line {n}\n  README:   {}\n  virtlens: {}",
                    x.unwrap_or("(end)"),
                    y.unwrap_or("(end)")
                );
            }
        }
    }
    String::new()
}

//! The README's examples are real: every ```console block whose first line is
//! `$ virtlens ARGS…` is run from the repository root and its output must be exactly what the
//! README shows. `UPDATE_README=1 cargo test -p virtlens --test readme` rewrites the blocks
//! with today's output instead of failing.

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
    let mut out = String::new();
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
        let actual = actual.trim_end();
        if actual != shown.trim_end() {
            stale.push(command.to_string());
        }
        out.push_str(&rest[..body_start]);
        out.push_str(command);
        out.push('\n');
        out.push_str(actual);
        rest = &rest[body_start + len..];
        checked += 1;
    }
    out.push_str(rest);
    assert!(
        checked > 0,
        "no ```console blocks starting with `$ virtlens` in README.md"
    );
    if std::env::var_os("UPDATE_README").is_some() {
        std::fs::write(path, out).unwrap();
    } else {
        assert!(
            stale.is_empty(),
            "README output is stale for {stale:?}; run UPDATE_README=1 cargo test -p virtlens --test readme"
        );
    }
}

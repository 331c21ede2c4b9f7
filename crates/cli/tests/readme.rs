//! The examples in README.md and docs/*.md are real: every ```console block whose first line
//! is `$ virtlens ARGS…` is run from the repository root (NO_COLOR=1) and its output must be
//! what the page shows; drift fails the test, which never rewrites a page. A block whose last
//! line is a lone `…` shows the first lines only: those must match, the rest is not shown.
//! To change the examples, `scripts/update_readme_examples.py` rewrites the blocks with
//! today's output for a human to review (`git diff README.md docs/`) and commit.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The line that ends an example shown in part.
const CUT: &str = "…";

fn root() -> PathBuf {
    virtlens_testkit::repo_root()
}

/// README.md and every page of docs/, sorted.
fn pages() -> Vec<PathBuf> {
    let mut pages: Vec<PathBuf> = std::fs::read_dir(root().join("docs"))
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    pages.sort();
    pages.insert(0, root().join("README.md"));
    pages
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
    let _g = virtlens_testkit::shared();
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

/// What `actual` should be compared with `shown`: all of it, or as many lines as `shown` has
/// before its `…`.
fn visible<'a>(shown: &'a str, actual: &'a str) -> (&'a str, String) {
    let shown = shown.trim_end();
    match shown.strip_suffix(CUT) {
        Some(head) if head.is_empty() || head.ends_with('\n') => {
            let head = head.trim_end();
            let n = head.lines().count();
            let part: Vec<&str> = actual.lines().take(n).collect();
            (head, part.join("\n").trim_end().to_string())
        }
        _ => (shown, actual.trim_end().to_string()),
    }
}

/// Checks every example of `page`; returns how many it has and the stale ones.
fn check(page: &Path, stale: &mut Vec<String>) -> usize {
    let text = std::fs::read_to_string(page).unwrap();
    let name = page
        .strip_prefix(root())
        .unwrap_or(page)
        .display()
        .to_string();
    let mut rest = text.as_str();
    let mut checked = 0;
    while let Some(start) = rest.find("```console\n$ virtlens ") {
        let body_start = start + "```console\n".len();
        let Some(len) = rest[body_start..].find("\n```") else {
            break;
        };
        let block = &rest[body_start..body_start + len];
        let (command, shown) = block.split_once('\n').unwrap_or((block, ""));
        let actual = run(command.trim_start_matches("$ "));
        let (shown, actual) = visible(shown, &actual);
        if actual != shown {
            stale.push(format!(
                "{name}: {command}\n{}",
                first_difference(shown, &actual)
            ));
        }
        rest = &rest[body_start + len..];
        checked += 1;
    }
    checked
}

#[test]
fn readme_and_docs_examples_print_what_virtlens_prints() {
    let mut stale = Vec::new();
    let mut in_readme = 0;
    let mut checked = 0;
    for page in pages() {
        let n = check(&page, &mut stale);
        if page.ends_with("README.md") {
            in_readme = n;
        }
        checked += n;
    }
    assert!(
        in_readme > 0,
        "no ```console blocks starting with `$ virtlens` in README.md"
    );
    assert!(checked > in_readme, "no examples in docs/");
    assert!(
        stale.is_empty(),
        "an example differs from what virtlens prints:\n\n{}\n\nIf the change is intended, \
         run scripts/update_readme_examples.py and review the diff.",
        stale.join("\n\n")
    );
}

#[test]
fn a_cut_example_compares_only_the_lines_it_shows() {
    let actual = "a\nb\nc\n";
    assert_eq!(visible("a\nb\n…", actual), ("a\nb", "a\nb".to_string()));
    assert_eq!(visible("a\nx\n…", actual).1, "a\nb");
    assert_eq!(
        visible("a\nb\nc", actual),
        ("a\nb\nc", "a\nb\nc".to_string())
    );
    // A `…` inside a line is output, not a cut.
    assert_eq!(visible("a …", "a …\n").0, "a …");
}

/// The first line where `shown` and `actual` differ, both ways.
fn first_difference(shown: &str, actual: &str) -> String {
    let (mut s, mut a) = (shown.lines(), actual.lines());
    for n in 1.. {
        match (s.next(), a.next()) {
            (Some(x), Some(y)) if x == y => continue,
            (x, y) => {
                return format!(
                    "  line {n}\n  page:     {}\n  virtlens: {}",
                    x.unwrap_or("(end)"),
                    y.unwrap_or("(end)")
                );
            }
        }
    }
    String::new()
}

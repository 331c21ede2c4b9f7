//! Output conventions through the one export path: colour only when wanted (a pipe gets none,
//! `NO_COLOR` wins over a forced terminal), JSON never coloured, and nothing on stderr in a
//! pipe where a terminal would show progress.

use std::process::{Command, Output};

use crate::common::data;

fn seed() -> String {
    data("seed-kvm-hyperv-traps/1-no-hyperv-features.txt")
}

fn run(args: &[&str], env: &[(&str, &str)]) -> Output {
    let _g = virtlens_testkit::shared();
    let mut c = Command::new(env!("CARGO_BIN_EXE_virtlens"));
    c.args(args)
        .env_remove("NO_COLOR")
        .env_remove("CLICOLOR_FORCE");
    for (k, v) in env {
        c.env(k, v);
    }
    c.output()
        .unwrap_or_else(|e| panic!("cannot run virtlens: {e}"))
}

fn has_escape(b: &[u8]) -> bool {
    b.contains(&0x1b)
}

#[test]
fn colour_only_when_wanted() {
    let s = seed();
    let piped = run(&["report", &s], &[]);
    assert!(!has_escape(&piped.stdout), "a pipe gets plain text");
    // The check above can fail: forcing colour does colour the same output.
    let forced = run(&["report", &s], &[("CLICOLOR_FORCE", "1")]);
    assert!(has_escape(&forced.stdout), "CLICOLOR_FORCE colours");
    let no_color = run(
        &["report", &s],
        &[("CLICOLOR_FORCE", "1"), ("NO_COLOR", "1")],
    );
    assert!(!has_escape(&no_color.stdout), "NO_COLOR wins");
    assert_eq!(no_color.stdout, piped.stdout);
    let json = run(&["report", &s, "--json"], &[("CLICOLOR_FORCE", "1")]);
    assert!(!has_escape(&json.stdout), "JSON is never coloured");
    serde_json::from_slice::<serde_json::Value>(&json.stdout).unwrap();
}

#[test]
fn no_progress_or_chatter_in_pipes() {
    let out = run(&["lab", "--offline"], &[]);
    assert_eq!(out.status.code(), Some(0));
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = run(&["compare", &seed(), &seed()], &[]);
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

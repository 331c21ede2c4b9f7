//! Every command's `--help`: its examples parse with the real parser, and it names nothing a
//! user cannot open (no repository paths, no private notes).

use clap::{CommandFactory, Parser};

use virtlens::Cli;

/// Every command's long help, by its path (`virtlens model overcommit`).
fn long_helps() -> Vec<(String, String)> {
    fn walk(cmd: &mut clap::Command, path: &str, out: &mut Vec<(String, String)>) {
        let path = format!("{path} {}", cmd.get_name()).trim().to_string();
        out.push((path.clone(), cmd.render_long_help().to_string()));
        for sub in cmd.get_subcommands_mut() {
            if sub.get_name() != "help" {
                walk(sub, &path, out);
            }
        }
    }
    let mut out = Vec::new();
    walk(&mut Cli::command(), "", &mut out);
    out
}

/// The virtlens command lines of a help's examples, comments and shell around them cut.
fn examples(help: &str) -> Vec<Vec<String>> {
    let Some((_, rest)) = help
        .split_once("Examples:\n")
        .or_else(|| help.split_once("Getting started:\n"))
    else {
        return Vec::new();
    };
    rest.lines()
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| {
            let l = l.trim();
            let l = l.split("  ").next().unwrap_or(l);
            let at = l.find("virtlens ")?;
            let cmd = &l[at..];
            let cmd = cmd.split(['>', '|']).next().unwrap_or(cmd);
            Some(cmd.split_whitespace().map(str::to_string).collect())
        })
        .collect()
}

#[test]
fn every_command_has_examples_that_parse() {
    for (path, help) in long_helps() {
        let examples = examples(&help);
        assert!(
            examples.len() >= 2,
            "`{path} --help` has {} examples",
            examples.len()
        );
        for argv in examples {
            if argv[0] != "virtlens" {
                continue; // virtlens-guest, the binary for guests
            }
            if let Err(e) = Cli::try_parse_from(&argv) {
                panic!(
                    "`{path} --help`: the example `{}` does not parse: {e}",
                    argv.join(" ")
                );
            }
        }
    }
}

#[test]
fn help_names_nothing_a_user_cannot_open() {
    for (path, help) in long_helps() {
        for private in ["testdata", "DESIGN", "reference/", "samples/", "§"] {
            assert!(!help.contains(private), "`{path} --help` names {private}");
        }
    }
}

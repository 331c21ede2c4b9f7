//! Issue 21's error messages: each says what was wrong with what the user gave, once.

use std::process::{Command, Output};

use crate::common::{BIN, data};

fn run(args: &[&str]) -> Output {
    Command::new(BIN).args(args).output().unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn seed() -> String {
    data("seed-kvm-hyperv-traps/1-no-hyperv-features.txt")
}

#[test]
fn a_vm_filter_that_selects_nothing_is_an_error_naming_the_vms_there_are() {
    let o = run(&["report", "--vm", "nosuchvm", &seed()]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(
        e.contains("no VM named `nosuchvm`") && e.contains("select no row"),
        "{e}"
    );
}

#[test]
fn a_missing_file_says_its_cause_once() {
    let o = run(&["report", "/nonexistent/virtlens.txt"]);
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    assert_eq!(e.matches("No such file").count(), 1, "{e}");
}

#[test]
fn stretch_given_text_says_what_it_reads() {
    let o = run(&["stretch", &data("README.md")]);
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    assert!(
        e.contains("not JSON") && e.contains("virtlens bench --json"),
        "{e}"
    );
}

#[test]
fn window_takes_a_unit_of_time() {
    let json = |window: &str| {
        let o = run(&["diagnose", "--json", "--window", window, &seed()]);
        assert!(
            matches!(o.status.code(), Some(0 | 1)),
            "{window}: {}",
            stderr(&o)
        );
        serde_json::from_slice::<serde_json::Value>(&o.stdout).unwrap()
    };
    let (plain, unit, minutes) = (json("10"), json("10s"), json("1m"));
    assert_eq!(plain, unit, "10 and 10s are the same window");
    assert_ne!(plain, minutes);
    let o = run(&["diagnose", "--window", "10parsecs", &seed()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("not a unit of time"), "{}", stderr(&o));
}

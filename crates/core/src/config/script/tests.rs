//! Tests of the launch-script shell model (`config::script`).

use super::*;

fn run(text: &str) -> Vec<Vec<String>> {
    let commands = shell::split(text).unwrap();
    expand(&commands)
        .unwrap_or_else(|e| panic!("{}", e.message))
        .into_iter()
        .map(|c| c.words.into_iter().map(|t| t.text).collect())
        .collect()
}

#[test]
fn variables_resolve_in_file_order() {
    let w = run(
        "CPU=host\nexport OPTS=\"-m 4G\"\nqemu -cpu $CPU $OPTS \"${NAME:-win}\" ${X:-a b}\nCPU=max\nqemu -cpu $CPU\n",
    );
    assert_eq!(w[0], ["qemu", "-cpu", "host", "-m", "4G", "win", "a", "b"]);
    assert_eq!(w[1], ["qemu", "-cpu", "max"]);
}

#[test]
fn arrays_and_ifs() {
    let w = run(
        "A=(-cpu host)\nA+=(-smp \"2,cores=2\")\nqemu \"${A[@]}\"\nIFS=,\nF=(host hv_relaxed)\nqemu -cpu \"${F[*]}\"\n",
    );
    assert_eq!(w[0], ["qemu", "-cpu", "host", "-smp", "2,cores=2"]);
    assert_eq!(w[1], ["qemu", "-cpu", "host,hv_relaxed"]);
}

#[test]
fn values_keep_the_line_they_are_written_on() {
    let c = expand(&shell::split("CPU=host,hv_relaxed\n\nqemu -cpu $CPU\n").unwrap()).unwrap();
    assert_eq!((c[0].line, c[0].words[2].line), (3, 1));
}

#[test]
fn unknowns_are_kept_as_written() {
    let commands = shell::split("qemu -cpu $CPU -smp cores=${N} \"$@\" $(id -u)\n").unwrap();
    let c = expand(&commands).unwrap();
    let t = &c[0].words;
    assert_eq!(t[2].text, "$CPU");
    assert!(t[2].unknown[0].why.contains("not set in this file"));
    assert!(t[4].has_unknown_in("cores=${N}"));
    assert!(t[5].unknown[0].why.contains("arguments"));
    assert_eq!(t[6].text, "$(id -u)");
}

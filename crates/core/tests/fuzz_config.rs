//! Fuzzing the configuration parsers (proptest, bounded so it runs in every `cargo test`):
//! mutated real configs (libvirt XML, QEMU command lines, launch scripts with shell variables
//! and arrays, Proxmox configs), random text, random shell words, and binary/compressed/UTF-16
//! heads, through input decoding, format detection, the shell model and every parser, never
//! panic; every error names the input and,
//! where a line is at fault, a line inside the input and what was expected; whatever is read
//! lints, renders and serialises.
//!
//! `PROPTEST_CASES=100000 cargo test -p virtlens-core --test tests --release -- fuzz_config::` runs
//! a longer campaign.

use proptest::prelude::*;
use virtlens_core::config::{self, Format, ReadOptions};
use virtlens_core::lint::{self, Options};
use virtlens_core::render::{self, Style};
use virtlens_core::{HostFacts, Vendor};

use crate::common::{self, Edit, apply};

/// A launch script with the shell forms the model resolves.
const SCRIPT: &str = "#!/bin/bash\nQEMU=${QEMU:-/usr/bin/qemu-system-x86_64}\nexport N=4\n\
    CPU=host,hv_relaxed,hv_vpindex\nARGS=(-machine q35,hpet=off \"-smp\" \"$N\")\nARGS+=(-rtc base=localtime)\n\
    if [ -n \"$1\" ]; then CPU=\"$CPU,hv_synic\"; fi\nexec $QEMU -enable-kvm -cpu \"$CPU\",hv_stimer \\\n\
    \"${ARGS[@]}\" -global kvm-pit.lost_tick_policy=$POLICY $(extra) \"$@\" 2>&1 | tee log\n";

const SAMPLES: [&str; 18] = [
    SCRIPT,
    include_str!("../../../testdata/configs/01-libvirt-test-hyperv.args"),
    include_str!("../../../testdata/configs/01-libvirt-test-hyperv.xml"),
    include_str!("../../../testdata/configs/04-libvirt-test-hyperv-off.args"),
    include_str!("../../../testdata/configs/04-libvirt-test-hyperv-off.xml"),
    include_str!("../../../testdata/configs/05-libvirt-test-hyperv-stimer-direct.args"),
    include_str!("../../../testdata/configs/05-libvirt-test-hyperv-stimer-direct.xml"),
    include_str!("../../../testdata/configs/06-libvirt-test-hyperv-passthrough.args"),
    include_str!("../../../testdata/configs/06-libvirt-test-hyperv-passthrough.xml"),
    include_str!("../../../testdata/configs/08-libvirt-test-clock-timer-hyperv-rtc.args"),
    include_str!("../../../testdata/configs/08-libvirt-test-clock-timer-hyperv-rtc.xml"),
    include_str!("../../../testdata/configs/10-proxmox-win11-intel-host.args"),
    include_str!("../../../testdata/configs/10-proxmox-win11-intel-host.conf.txt"),
    include_str!("../../../testdata/configs/13-proxmox-i440fx-win10-spice.args"),
    include_str!("../../../testdata/configs/13-proxmox-i440fx-win10-spice.conf.txt"),
    include_str!("../../../testdata/configs/30-virt-install-win11-default.xml"),
    include_str!("../../../testdata/configs/33-virt-install-hyperv-no-domcaps.xml"),
    include_str!("../../../testdata/configs/60-user-kevinlocke-win11.xml"),
];

fn edit() -> impl Strategy<Value = Edit> {
    let tokens: Vec<Vec<u8>> = [
        "<",
        ">",
        "/>",
        "</hyperv>",
        "<hyperv mode='passthrough'>",
        " state='off'",
        " state='x'",
        "<stimer state='on'><direct/></stimer>",
        "<timer name='pit' tickpolicy='delay'/>",
        "<domain>",
        "</domain>",
        "<!--",
        "-->",
        "&amp;",
        "&bogus;",
        "<![CDATA[",
        "'",
        "\"",
        "\\\n",
        "\\",
        "#",
        ";",
        "&&",
        " -cpu ",
        ",hv-",
        "hv_spinlocks=0x",
        "=on",
        "=maybe",
        ",,",
        " -smp ",
        "cores=0",
        " -machine hpet=",
        " -global ",
        "\n",
        "ostype: win",
        "cores: x",
        "args: -cpu '",
        "18446744073709551615",
        "\u{0}",
        "\u{feff}",
        "$",
        "$CPU",
        "${N:-4}",
        "${A[@]}",
        "${X:=y}",
        "${#X}",
        "}",
        "$(",
        ")",
        "`",
        "A=(",
        "export ",
        "QEMU=",
        "$QEMU ",
        "exec ",
        "<<EOF\n",
        "\nEOF\n",
        "2>&1",
        "<network>",
        "<domainCapabilities>",
        "= [",
        "builder = \"hvm\"\n",
        "\u{1f}\u{8b}",
    ]
    .iter()
    .map(|t| t.as_bytes().to_vec())
    .collect();
    common::edit(tokens)
}

fn format(which: u8) -> Option<Format> {
    match which % 4 {
        0 => None,
        1 => Some(Format::Libvirt),
        2 => Some(Format::Qemu),
        _ => Some(Format::Proxmox),
    }
}

fn check(bytes: &[u8], forced: Option<Format>) -> Result<(), TestCaseError> {
    let lines = bytes.iter().filter(|&&b| b == b'\n').count() + 1;
    let read = ReadOptions {
        format: forced,
        host_vendor: Some(Vendor::Intel),
    };
    match config::read_bytes(bytes, "fuzz", &read) {
        Ok(configs) => {
            prop_assert!(!configs.is_empty());
            let opts = Options {
                host: HostFacts {
                    vendor: Some(Vendor::Amd),
                    avic: Some(true),
                    clocksource: Some("hpet".into()),
                    ..HostFacts::default()
                },
                migratable: true,
                overcommitted: true,
                nested_workload: true,
                ..Options::default()
            };
            let report = lint::lint(&configs, &opts);
            for f in &report.findings {
                prop_assert!(f.element.line.is_none_or(|l| l >= 1 && l <= lines), "{f:?}");
                prop_assert!(!f.source.is_empty());
            }
            let json = render::json(&report);
            prop_assert!(serde_json::from_str::<serde_json::Value>(&json).is_ok());
            let _ = render::lint_text(&report, &Style::default());
        }
        Err(e) => common::check_error(e, "fuzz", bytes)?,
    }
    Ok(())
}

/// Cases per test: `PROPTEST_CASES` when set, else a bound that keeps `cargo test` quick.
fn config() -> ProptestConfig {
    let cases = common::cases(800);
    ProptestConfig {
        cases,
        ..ProptestConfig::default()
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn mutated_configs_never_panic(
        which in 0..SAMPLES.len(),
        edits in prop::collection::vec(edit(), 1..8),
        forced in any::<u8>(),
    ) {
        let bytes = apply(SAMPLES[which].as_bytes().to_vec(), &edits);
        check(&bytes, format(forced))?;
    }

    #[test]
    fn random_text_never_panics(text in "(\\PC|\\t|\\n|<|>|'|\"|\\\\|-|=|,){0,300}", forced in any::<u8>()) {
        check(text.as_bytes(), format(forced))?;
    }

    #[test]
    fn random_shell_words_never_panic(
        words in prop::collection::vec(
            prop::sample::select(vec![
                "qemu-system-x86_64", "$QEMU", "X=1", "export", "-cpu", "$CPU", "\"${C:-host}\"",
                "-smp", "cores=$N", "A=(", ")", "\"${A[@]}\"", "${A[*]}", "IFS=,", "exec",
                "sudo", "then", ";", "|", "&&", "\\\n", "\n", "'", "\"", "$(date)", "<<E", "E",
                ">", "2>&1", "#", "${X#y}", "$@", "-machine", "q35,pit=off", "-global",
            ]),
            0..40,
        ),
        forced in any::<u8>(),
    ) {
        check(words.join(" ").as_bytes(), format(forced))?;
    }

    #[test]
    fn binary_and_encoded_heads_never_panic(
        head in prop::sample::select(vec![
            &b"\x1f\x8b"[..], b"\x28\xb5\x2f\xfd", b"PERFILE2", b"\xff\xfe", b"\xfe\xff", b"<\0",
            b"\0<", b"qemu-kvm\0", b"/usr/bin/qemu-system-x86_64\0-cpu\0", b"\x7fELF", b"",
        ]),
        tail in prop::collection::vec(any::<u8>(), 0..300),
        forced in any::<u8>(),
    ) {
        let mut bytes = head.to_vec();
        bytes.extend(tail);
        check(&bytes, format(forced))?;
    }

    #[test]
    fn random_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..400), forced in any::<u8>()) {
        check(&bytes, format(forced))?;
    }
}

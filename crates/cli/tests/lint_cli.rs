//! `virtlens lint` end to end on the real configs: exit codes (0 clean, 1 at or above
//! `--fail-on`, 2 bad input), the JSON contract, and `--recommend` output that parses back
//! (the XML is a well-formed domain; the QEMU flags re-read to the same flag set).

use std::io::Write;
use std::process::{Command, Stdio};

use serde_json::Value;
use virtlens_core::config::{self, Format, ReadOptions};

use crate::common;
use crate::common::TempDir;
use crate::common::run as virtlens;

fn data(name: &str) -> String {
    common::data(&format!("configs/{name}"))
}

fn code(args: &[&str]) -> i32 {
    virtlens(args).status.code().unwrap_or(-1)
}

fn json(args: &[&str]) -> Value {
    common::json_of(args, &[0, 1])
}

/// `text` written to `name` in `dir` (removed with it when the test ends); its path.
fn temp(dir: &TempDir, name: &str, text: &str) -> String {
    let p = dir.path().join(name);
    std::fs::write(&p, text).unwrap();
    p.display().to_string()
}

#[test]
fn exit_codes_follow_fail_on() {
    let clean = data("60-user-kevinlocke-win11.xml");
    let dep = data("01-libvirt-test-hyperv.xml");
    let rtc = data("33-virt-install-hyperv-no-domcaps.xml");
    assert_eq!(code(&["lint", &clean]), 0);
    assert_eq!(code(&["lint", &dep]), 1, "HV-DEP-002 is an error");
    assert_eq!(
        code(&["lint", &rtc]),
        1,
        "highs fail under the default --fail-on high, as in diagnose and counters"
    );
    assert_eq!(code(&["lint", &rtc, "--fail-on", "error"]), 0, "highs only");
    assert_eq!(
        code(&["lint", &rtc, "--fail-on", "critical"]),
        0,
        "error is critical"
    );
    assert_eq!(code(&["lint", &clean, "--fail-on", "info"]), 0);
    let win11 = data("30-virt-install-win11-default.xml");
    assert_eq!(code(&["lint", &win11, "--host-vendor", "intel"]), 0);
    assert_eq!(
        code(&["lint", &win11, "--host-vendor", "amd", "--host-apicv", "on"]),
        1
    );
    assert_eq!(
        code(&[
            "lint",
            "--qemu-args",
            &data("10-proxmox-win11-intel-host.args")
        ]),
        0
    );
}

#[test]
fn bad_input_exits_2_naming_file_line_and_expectation() {
    let dir = TempDir::new("lint-bad-input");
    let broken = temp(
        &dir,
        "broken.xml",
        "<domain type='kvm'>\n  <features>\n    <hyperv>\n  </features>\n</domain>\n",
    );
    let out = virtlens(&["lint", &broken]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(&format!("{broken}:4:")), "{err}");
    assert!(err.contains("expected"), "{err}");

    let quote = temp(
        &dir,
        "quote.sh",
        "qemu-system-x86_64 \\\n  -cpu 'host,hv_relaxed\n",
    );
    let out = virtlens(&["lint", &quote]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!("{quote}:2:")) && err.contains("expected a closing"),
        "{err}"
    );

    let none = temp(&dir, "none.sh", "echo hello\nls -l\n");
    assert_eq!(code(&["lint", &none]), 2);
    assert_eq!(code(&["lint", "/nonexistent/domain.xml"]), 2);
    assert_eq!(
        code(&[
            "lint",
            &data("60-user-kevinlocke-win11.xml"),
            "--qemu-version",
            "x"
        ]),
        2
    );
    assert_eq!(code(&["lint"]), 2, "FILE is required without --recommend");
}

#[test]
fn json_contract() {
    let v = json(&[
        "lint",
        "--json",
        &data("01-libvirt-test-hyperv.xml"),
        "--host-vendor",
        "amd",
    ]);
    assert_eq!(v["schema"], "virtlens.lint/1");
    assert_eq!(v["format"], "libvirt");
    assert_eq!(v["config"]["hv"]["hv-spinlocks"], "0x2fff");
    assert_eq!(v["config"]["hv"]["hv-vendor-id"], "KVM Hv");
    assert!(v["config"]["hv"].get("hv-time").is_none());
    assert_eq!(v["guest"]["family"], "windows");
    assert_eq!(v["guest"]["source"], "heuristic");
    let findings = v["findings"].as_array().unwrap();
    let rules: Vec<&str> = findings.iter().filter_map(|f| f["rule"].as_str()).collect();
    assert_eq!(rules, vec!["HV-DEP-002", "HV-HOST-001", "HV-OPS-007"]);
    for f in findings {
        for key in ["rule", "severity", "message", "source"] {
            assert!(
                f[key].as_str().is_some_and(|s| !s.is_empty()),
                "{key} in {f}"
            );
        }
        assert!(
            f["element"]["path"]
                .as_str()
                .is_some_and(|p| p.starts_with("/domain/"))
        );
        assert!(f["element"]["line"].as_u64().is_some());
        assert!(
            f["fix"]["libvirt"].as_str().is_some() && f["fix"]["qemu"].as_str().is_some(),
            "{f}"
        );
    }
    assert_eq!(findings[0]["severity"], "error");
    assert_eq!(findings[0]["element"]["line"], 20);
    // Several documents: each finding says which.
    let v = json(&[
        "lint",
        "--json",
        &data("30-virt-install-win11-default.xml"),
        "--host-vendor",
        "amd",
    ]);
    assert_eq!(v["documents"].as_array().map(Vec::len), Some(2));
    assert!(
        v["findings"]
            .as_array()
            .unwrap()
            .iter()
            .all(|f| f["document"].as_u64().is_some())
    );
}

#[test]
fn text_is_grouped_and_plain_when_piped() {
    let out = virtlens(&[
        "lint",
        &data("33-virt-install-hyperv-no-domcaps.xml"),
        "--host-vendor",
        "intel",
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(!text.contains('\u{1b}'), "no escape codes in a pipe");
    let high = text.find("high (2)").unwrap();
    let medium = text.find("medium (1)").unwrap();
    let low = text.find("low (1)").unwrap();
    assert!(high < medium && medium < low, "{text}");
    assert!(text.contains("HV-PERF-003"));
    assert!(
        text.contains("at       /domain/clock/timer[@name='hpet'] (line 26)"),
        "{text}"
    );
    assert!(
        text.contains("4 findings: 2 high, 1 medium, 1 low"),
        "{text}"
    );
}

#[test]
fn reads_standard_input_and_probes_the_host() {
    let _g = common::shared();
    let mut child = Command::new(env!("CARGO_BIN_EXE_virtlens"))
        .args(["lint", "-", "--json", "--host-facts", "auto"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let text = std::fs::read(data("08-libvirt-test-clock-timer-hyperv-rtc.args")).unwrap();
    child.stdin.take().unwrap().write_all(&text).unwrap();
    let out = child.wait_with_output().unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["format"], "qemu");
    assert_eq!(v["config"]["hv"]["hv-time"], "on");
    assert!(
        v["host"]["kvm_device"].is_boolean(),
        "facts were probed: {}",
        v["host"]
    );
}

/// The preset's XML is a well-formed domain and its QEMU flags re-read to the same set.
#[test]
fn recommend_output_parses_back() {
    let dir = TempDir::new("lint-presets");
    let hosts: [&[&str]; 4] = [
        &[],
        &["--host-vendor", "intel", "--host-apicv", "on"],
        &["--host-vendor", "amd", "--host-apicv", "on"],
        &["--host-vendor", "amd", "--host-apicv", "off"],
    ];
    for preset in ["windows-general", "ipi-heavy", "vdi", "nested", "migration"] {
        for host in hosts {
            let mut args = vec!["lint", "--json", "--recommend", preset];
            args.extend_from_slice(host);
            let v = json(&args);
            let r = &v["recommendation"];
            assert_eq!(r["preset"], preset);
            let xml = r["libvirt_xml"].as_str().unwrap();
            let doc = config::read_str(xml, "rec.xml", &ReadOptions::default()).unwrap();
            assert_eq!(doc.len(), 1);
            assert!(doc[0].notes.is_empty(), "{xml}: {:?}", doc[0].notes);
            let qemu = r["qemu_args"].as_str().unwrap();
            let opts = ReadOptions {
                format: Some(Format::Qemu),
                host_vendor: None,
            };
            let argv = config::read_str(qemu, "rec.args", &opts).unwrap();
            let (x, q) = (doc[0].effective(), argv[0].effective());
            let want = &r["flags"];
            assert_eq!(
                &serde_json::to_value(&x.hv).unwrap(),
                want,
                "{preset} {host:?} xml"
            );
            assert_eq!(
                &serde_json::to_value(&q.hv).unwrap(),
                want,
                "{preset} {host:?} qemu"
            );
            assert_eq!((x.hpet, q.hpet), (Some(false), Some(false)));
            assert_eq!(x.pit, q.pit);
            assert!(x.rtc_catchup && q.rtc_catchup);
            let intel = host.contains(&"intel");
            let evmcs = want.get("hv-evmcs").is_some();
            assert_eq!(evmcs, intel && preset != "migration", "{preset} {host:?}");
            assert_eq!(
                want.get("hv-avic").is_some(),
                host.contains(&"on"),
                "{preset} {host:?}"
            );
            // The preset lints clean (no error or high) on the host it was made for.
            let file = temp(&dir, &format!("{preset}-{}.xml", host.len()), xml);
            let mut lint_args = vec![
                "lint",
                file.as_str(),
                "--guest",
                "windows",
                "--fail-on",
                "high",
            ];
            lint_args.extend_from_slice(host);
            assert_eq!(code(&lint_args), 0, "{preset} {host:?}");
        }
    }
}

/// Inputs that are not configurations exit 2 with what they are; `/dev/zero` ends at the cap.
#[test]
fn refusals_exit_2_and_say_what_the_input_is() {
    let dir = TempDir::new("lint-refusals");
    let cases: [(&str, &[u8], &str); 4] = [
        (
            "net.xml",
            b"<network><name>default</name></network>\n",
            "<network>",
        ),
        ("xen.cfg", b"name = \"w\"\nbuilder = \"hvm\"\n", "Xen xl"),
        (
            "d.xml.gz",
            b"\x1f\x8b\x08\x00\x00\x00\x00\x00",
            "gzip-compressed",
        ),
        ("r.bin", b"\x01\x02\x00\x03\xff", "binary data"),
    ];
    for (name, bytes, says) in cases {
        let p = dir.path().join(name);
        std::fs::write(&p, bytes).unwrap();
        let out = virtlens(&["lint", "--guest", "windows", &p.display().to_string()]);
        assert_eq!(out.status.code(), Some(2), "{name}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(says), "{name}: {err}");
    }
    let out = virtlens(&["lint", "/dev/zero"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("more than 16 MiB"));
}

/// AVIC inhibitors from the flags alone: a real Windows 11 domain (x2APIC, as every CPU model
/// has it) on an AMD AVIC host whose kernel predates x2AVIC gets HV-PERF-015 with its fix.
#[test]
fn host_kernel_flag_selects_the_avic_inhibitors() {
    let f = data("60-user-kevinlocke-win11.xml");
    let amd = ["--host-vendor", "amd", "--host-apicv", "on"];
    let rules = |extra: &[&str]| -> Vec<String> {
        let mut args = vec!["lint", "--json", &f];
        args.extend_from_slice(&amd);
        args.extend_from_slice(extra);
        json(&args)["findings"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|x| x["rule"].as_str().map(str::to_string))
            .collect()
    };
    assert!(!rules(&[]).contains(&"HV-PERF-015".to_string()));
    assert!(!rules(&["--host-kernel", "6.8.0-45-generic"]).contains(&"HV-PERF-015".to_string()));
    let old = rules(&["--host-kernel", "5.15.0-91-generic"]);
    assert!(old.contains(&"HV-PERF-015".to_string()), "{old:?}");
    assert!(
        old.contains(&"HV-PERF-007".to_string()),
        "PIT reinjection: {old:?}"
    );
    assert!(
        old.contains(&"HV-PERF-005".to_string()),
        "SynIC without hv-avic: {old:?}"
    );
}

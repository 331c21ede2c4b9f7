//! `lint` and the configuration readers (issue 10, "Why"): inputs taken for what they are not
//! (compressed, UTF-16, binary, non-domain XML, plain text, Xen configs), launch scripts with
//! shell variables, libvirt's and QEMU's semantics (hypervclock, `state='off'` children, the
//! PIT, vCPU counts, architectures, unknown `<hyperv>` children), size and time bounds, and
//! repeated findings. Only the public reading and lint API and the JSON output are used.

use serde_json::Value;
use virtlens_core::config::{self, Format, GuestFamily, ReadOptions, VmConfig};
use virtlens_core::lint::{self, LintReport, Options};
use virtlens_core::{HostFacts, Vendor};
use virtlens_testkit::testdata;

fn read(bytes: &[u8]) -> Result<Vec<VmConfig>, String> {
    config::read_bytes(bytes, "input", &ReadOptions::default()).map_err(|e| e.to_string())
}

fn refused(bytes: &[u8]) -> String {
    match read(bytes) {
        Err(e) => e,
        Ok(c) => panic!(
            "read as {} configuration(s): {:?}",
            c.len(),
            c[0].effective()
        ),
    }
}

fn lint_text(text: &str, opts: &Options) -> LintReport {
    lint::lint(&read(text.as_bytes()).unwrap(), opts)
}

fn rules(r: &LintReport) -> Vec<&'static str> {
    let mut v: Vec<&str> = r.findings.iter().map(|f| f.rule).collect();
    v.dedup();
    v
}

fn amd_avic_windows() -> Options {
    Options {
        host: HostFacts {
            vendor: Some(Vendor::Amd),
            avic: Some(true),
            ..HostFacts::default()
        },
        guest: Some(GuestFamily::Windows),
        ..Options::default()
    }
}

fn domain(features: &str, clock: &str) -> String {
    format!(
        "<domain type='kvm'>\n<name>w</name>\n<vcpu>4</vcpu>\n<os><type arch='x86_64' \
         machine='q35'>hvm</type></os>\n<features>\n<hyperv mode='custom'>\n{features}\n</hyperv>\n\
         </features>\n<clock offset='localtime'>\n{clock}\n</clock>\n</domain>\n"
    )
}

const TIMERS: &str =
    "<relaxed state='on'/><vpindex state='on'/><synic state='on'/><stimer state='on'/>";

#[test]
fn gzip_compressed_xml_is_refused_not_read_as_a_cmdline() {
    // `printf '<domain type="kvm"><name>w</name></domain>\n' | gzip -9n`
    let gz: [u8; 55] = [
        0x1f, 0x8b, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x03, 0xb3, 0x49, 0xc9, 0xcf, 0x4d,
        0xcc, 0xcc, 0x53, 0x28, 0xa9, 0x2c, 0x48, 0xb5, 0x55, 0xca, 0x2e, 0xcb, 0x55, 0xb2, 0xb3,
        0xc9, 0x4b, 0xcc, 0x4d, 0xb5, 0x2b, 0xb7, 0xd1, 0x07, 0xd3, 0x36, 0xfa, 0x10, 0x15, 0x76,
        0x5c, 0x00, 0xd8, 0xf6, 0x16, 0x01, 0x2b, 0x00, 0x00, 0x00,
    ];
    let e = refused(&gz);
    assert!(e.contains("gzip-compressed") && e.contains("zcat"), "{e}");
}

#[test]
fn utf16_domain_xml_is_decoded_and_keeps_its_error_finding() {
    let xml = std::fs::read_to_string(testdata("configs/01-libvirt-test-hyperv.xml")).unwrap();
    for little in [true, false] {
        let mut bytes: Vec<u8> = if little {
            vec![0xff, 0xfe]
        } else {
            vec![0xfe, 0xff]
        };
        for u in xml.encode_utf16() {
            bytes.extend(if little {
                u.to_le_bytes()
            } else {
                u.to_be_bytes()
            });
        }
        let c = read(&bytes).unwrap();
        assert_eq!(c[0].format, Format::Libvirt);
        let r = lint::lint(&c, &Options::default());
        assert!(rules(&r).contains(&"HV-DEP-002"), "{:?}", rules(&r));
    }
}

#[test]
fn perf_data_and_random_bytes_are_refused_as_binary() {
    let perf = std::fs::read(testdata("perf-data/pio-guest-50.perf.data")).unwrap();
    assert!(refused(&perf).contains("perf.data"));
    let mut x: u32 = 0x1234_5678;
    let random: Vec<u8> = (0..4096)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            x.to_le_bytes()[0]
        })
        .collect();
    let e = refused(&random);
    assert!(e.contains("binary data") || e.contains("not UTF-8"), "{e}");
    assert!(refused(&[0u8; 4096]).contains("only NUL bytes"));
}

#[test]
fn format_libvirt_does_not_take_plain_text_as_an_xml_fragment() {
    let opts = ReadOptions {
        format: Some(Format::Libvirt),
        host_vendor: None,
    };
    let e = config::read_str("hello world\nsecond line\n", "plain.txt", &opts).unwrap_err();
    assert!(e.to_string().contains("is not XML"), "{e}");
}

#[test]
fn non_domain_libvirt_xml_is_refused_naming_its_root() {
    let net = "<network>\n  <name>default</name>\n  <forward mode='nat'/>\n</network>\n";
    assert!(refused(net.as_bytes()).contains("<network>"));
    let caps = "<domainCapabilities>\n<path>/usr/bin/qemu-system-x86_64</path>\n<features><hyperv supported='yes'/></features>\n</domainCapabilities>\n";
    assert!(refused(caps.as_bytes()).contains("<domainCapabilities>"));
    assert!(refused(b"<pool type='dir'><name>p</name></pool>").contains("<pool>"));
    // A fragment of a domain is still read.
    assert!(read(b"<features><hyperv><relaxed state='on'/></hyperv></features>").is_ok());
}

#[test]
fn xen_xl_config_is_refused_not_read_as_a_qemu_command_line() {
    let xen = "name = \"win\"\nbuilder = \"hvm\"\nvcpus = 4\n\
               device_model_override = \"/usr/bin/qemu-system-i386\"\n\
               disk = [ 'phy:/dev/vg/win,hda,w' ]\n";
    let e = refused(xen.as_bytes());
    assert!(e.contains("Xen xl"), "{e}");
}

#[test]
fn the_qemu_line_is_the_one_that_runs_qemu_not_an_assignment() {
    let script = "#!/bin/sh\nQEMU=/usr/bin/qemu-system-x86_64\nCPU_FLAGS=hv_relaxed,hv_vapic\n\
                  $QEMU -enable-kvm \\\n  -cpu \"host,${CPU_FLAGS}\" -smp ${N:-4}\n";
    let c = read(script.as_bytes()).unwrap();
    assert_eq!(c.len(), 1);
    let e = c[0].effective();
    assert_eq!(e.qemu_cpu_flags, "hv-relaxed=on,hv-vapic=on");
    assert_eq!(e.vcpus, Some(4));
    assert_eq!(e.cpu_model.as_deref(), Some("host"));
}

#[test]
fn an_unset_cpu_variable_is_a_caveat_not_a_cpu_model() {
    let script = "qemu-system-x86_64 -enable-kvm -cpu $CPU,hv_relaxed -m 4G\n";
    let c = read(script.as_bytes()).unwrap();
    assert_eq!(c[0].effective().cpu_model, None);
    let r = lint::lint(&c, &amd_avic_windows());
    assert!(
        r.notes
            .iter()
            .any(|n| n.contains("$CPU") && n.contains("not set in this file"))
    );
    let json: Value = serde_json::from_str(&virtlens_core::render::json(&r)).unwrap();
    let caveated = json["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["caveats"].to_string().contains("$CPU"))
        .count();
    assert!(caveated > 0, "{json}");
}

#[test]
fn an_unset_smp_variable_is_a_caveat_not_an_error() {
    let c = read(b"qemu-system-x86_64 -cpu host,hv_relaxed -smp cores=$N,threads=2\n").unwrap();
    assert_eq!(c[0].effective().vcpus, None);
    let r = lint::lint(&c, &Options::default());
    assert!(r.notes.iter().any(|n| n.contains("$N")), "{:?}", r.notes);
}

#[test]
fn config_inputs_are_capped_in_size() {
    let p = std::env::temp_dir().join(format!("virtlens-regression-cap-{}", std::process::id()));
    std::fs::write(&p, vec![0u8; 17 << 20]).unwrap();
    let e = config::read_path(&p, &ReadOptions::default())
        .unwrap_err()
        .to_string();
    let _ = std::fs::remove_file(&p);
    assert!(e.contains("more than 16 MiB"), "{e}");
}

#[test]
fn an_element_with_thousands_of_attributes_is_refused_in_one_pass() {
    let attrs: String = (0..5000).map(|i| format!(" a{i}='x'")).collect();
    let e = refused(format!("<domain type='kvm'><features{attrs}/></domain>").as_bytes());
    assert!(e.contains("5000 attributes"), "{e}");
    let some: String = (0..60).map(|i| format!(" a{i}='x'")).collect();
    assert!(read(format!("<domain><features{some}/></domain>").as_bytes()).is_ok());
}

#[test]
fn duplicate_elements_give_one_finding_with_a_count() {
    let dups = "<relaxed state='on'/>".repeat(10_000);
    let r = lint_text(&domain(&dups, ""), &Options::default());
    let dup: Vec<_> = r
        .findings
        .iter()
        .filter(|f| f.rule == "HV-OPS-011")
        .collect();
    assert_eq!(dup.len(), 1);
    let json: Value = serde_json::from_str(&virtlens_core::render::json(&r)).unwrap();
    let f = json["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["rule"] == "HV-OPS-011")
        .unwrap();
    assert_eq!(f["count"], 9_999);
}

#[test]
fn hypervclock_without_present_yes_gives_no_hv_time() {
    let r = lint_text(
        &domain(TIMERS, "<timer name='hypervclock'/>"),
        &Options::default(),
    );
    assert!(rules(&r).contains(&"HV-DEP-002"), "{:?}", rules(&r));
    let ok = lint_text(
        &domain(TIMERS, "<timer name='hypervclock' present='yes'/>"),
        &Options::default(),
    );
    assert!(!rules(&ok).contains(&"HV-DEP-002"));
}

#[test]
fn children_of_switched_off_stimer_and_tlbflush_are_ignored() {
    let features = "<vpindex state='on'/><stimer state='off'><direct state='on'/></stimer>\
                    <tlbflush state='off'><direct state='on'/><extended state='on'/></tlbflush>";
    let r = lint_text(&domain(features, ""), &Options::default());
    for rule in ["HV-DEP-004", "HV-DEP-006", "HV-DEP-007"] {
        assert!(!rules(&r).contains(&rule), "{rule} in {:?}", rules(&r));
    }
}

#[test]
fn pit_present_no_keeps_reinjection_on_amd() {
    let clock = "<timer name='pit' present='no'/><timer name='hypervclock' present='yes'/>";
    let r = lint_text(&domain(TIMERS, clock), &amd_avic_windows());
    assert!(rules(&r).contains(&"HV-PERF-007"), "{:?}", rules(&r));
}

#[test]
fn hotplug_vcpus_read_the_same_from_xml_and_argv() {
    let xml = domain(TIMERS, "<timer name='hypervclock' present='yes'/>")
        .replace("<vcpu>4</vcpu>", "<vcpu current='2'>16</vcpu>");
    let argv = "qemu-system-x86_64 -enable-kvm -smp 2,maxcpus=16 \
                -cpu host,hv-relaxed=on,hv-vpindex=on,hv-synic=on,hv-stimer=on,hv-time=on\n";
    let x = read(xml.as_bytes()).unwrap();
    let a = read(argv.as_bytes()).unwrap();
    let counts = |c: &VmConfig| {
        let v = serde_json::to_value(c.effective()).unwrap();
        (v["vcpus"].clone(), v["max_vcpus"].clone())
    };
    assert_eq!(counts(&x[0]), (Value::from(2), Value::from(16)));
    assert_eq!(counts(&x[0]), counts(&a[0]));
    let opts = Options {
        guest: Some(GuestFamily::Windows),
        ..Options::default()
    };
    assert_eq!(rules(&lint::lint(&x, &opts)), rules(&lint::lint(&a, &opts)));
}

#[test]
fn hyperv_rules_apply_to_x86_domains_only() {
    for arch in ["aarch64", "s390x", "ppc64"] {
        let xml = domain(TIMERS, "").replace("arch='x86_64'", &format!("arch='{arch}'"));
        let r = lint_text(&xml, &amd_avic_windows());
        assert!(r.findings.is_empty(), "{arch}: {:?}", rules(&r));
        let argv = format!("qemu-system-{arch} -cpu host,hv-stimer=on\n");
        assert!(
            lint_text(&argv, &amd_avic_windows()).findings.is_empty(),
            "{arch}"
        );
    }
    let x86 = lint_text(&domain(TIMERS, ""), &amd_avic_windows());
    assert!(rules(&x86).contains(&"HV-DEP-002"));
}

#[test]
fn an_unknown_hyperv_child_is_an_error() {
    let r = lint_text(
        &domain("<relaxed state='on'/><turbo state='on'/>", ""),
        &Options::default(),
    );
    let f = r.findings.iter().find(|f| f.rule == "HV-DEP-009").unwrap();
    assert_eq!(f.severity, lint::Severity::Critical);
    assert!(f.message.contains("<turbo>"), "{}", f.message);
}

#[test]
fn launch_scripts_that_nest_or_grow_without_bound_are_refused_by_line() {
    // repros A1 (stack overflow at 12,000 levels) and A2/A2b (2.1 GB, then 3.9 GB and abort).
    for (file, line, says) in [
        ("A1-nested-param-12000.sh", "input:3:", "nested more than"),
        ("A2-var-doubling-22.sh", "input:", "grows past"),
        ("A2b-array-doubling-24.sh", "input:", "grows past"),
    ] {
        let bytes = std::fs::read(testdata(&format!("reliability/{file}"))).unwrap();
        let e = refused(&bytes);
        assert!(e.starts_with(line) && e.contains(says), "{file}: {e}");
    }
}

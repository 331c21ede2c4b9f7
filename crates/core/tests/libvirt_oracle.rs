//! The external oracle: libvirt's own XML → QEMU argv golden files (`tests/qemuxml2argvdata`
//! or `tests/qemuxmlconfdata` of the libvirt source package, fetched by
//! `/work/shared/tools/libvirt-testdata.sh DIR` into the directory `VIRTLENS_LIBVIRT_TESTDATA`
//! names; `.ci/run` does both). Every XML and every `.args` is read without a crash; for each
//! XML/argv pair, both forms give the same effective configuration (hv-* flags, timers, CPU,
//! vCPUs, architecture) and the same rules fire, under several host and guest assumptions.
//! The few differences that are right are listed in [`EXCEPTIONS`], each with its reason.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use virtlens_core::config::{self, Effective, GuestFamily, PitPolicy, ReadOptions, VmConfig};
use virtlens_core::lint::{self, Options, Severity};
use virtlens_core::{HostFacts, Vendor};
use virtlens_testkit::{Need, require};

/// Architecture suffixes of libvirt's `.args` names (`hyperv.x86_64-latest.args`).
const ARCHES: [&str; 9] = [
    "x86_64",
    "i686",
    "aarch64",
    "armv7l",
    "ppc64",
    "ppc64le",
    "s390x",
    "riscv64",
    "loongarch64",
];

/// What the XML/argv comparison leaves out, and why (see [`key`]); the test counts the pairs
/// each one decides.
const EXCEPTIONS: [(&str, &str); 3] = [
    (
        "cpu model",
        "without a model, with host-model, or with a named model (fallback='allow' is the \
         default) libvirt picks the -cpu model from the QEMU capabilities of the test run",
    ),
    (
        "boot vCPUs",
        "<vcpu enabled='yes' hotpluggable='yes'/> vCPUs are added by libvirt over QMP before the \
         guest runs: the argv -smp shows only the others (the maximum is compared)",
    ),
    (
        "hpet",
        "the HPET is a PC device: on other architectures libvirt writes nothing for it",
    ),
];

/// The `.xml` that `args` was generated from.
fn xml_of(args: &Path) -> Option<PathBuf> {
    let name = args.file_name()?.to_str()?.strip_suffix(".args")?;
    let mut stem = name;
    for arch in ARCHES {
        if let Some(pos) = name.rfind(&format!(".{arch}-")) {
            let suffix = &name[pos + arch.len() + 2..];
            if suffix == "latest" || suffix.chars().all(|c| c.is_ascii_digit() || c == '.') {
                stem = &name[..pos];
            }
        }
    }
    let xml = args.with_file_name(format!("{stem}.xml"));
    xml.exists().then_some(xml)
}

fn read(path: &Path) -> Result<Vec<VmConfig>, String> {
    config::read_path(path, &ReadOptions::default()).map_err(|e| e.to_string())
}

/// What both forms must agree on, given what the XML says (`xml`, and whether it hot-plugs
/// vCPUs at start-up). Two things are the test run's, not the mapping's, and do not count:
/// the CPU model unless the XML asks for the host's (`host-passthrough` → `host`, `maximum` →
/// `max`) — without a model, with `host-model`, and with a named model (whose `fallback`
/// defaults to `allow`) libvirt picks it from the QEMU capabilities of the run; and the boot
/// vCPU count when the XML has `<vcpu enabled='yes' hotpluggable='yes'/>`, which libvirt adds
/// over QMP before the guest runs, so the argv shows only the others (the maximum still counts).
fn key(e: &Effective, xml: &Effective, hotplug: bool) -> impl PartialEq + std::fmt::Debug + use<> {
    let host = matches!(
        xml.cpu_model.as_deref(),
        Some("host-passthrough" | "maximum")
    );
    let cpu = model(e).filter(|_| host);
    let x86 = xml.arch.as_deref().is_none_or(config::is_x86);
    (
        x86,
        (e.vcpus.filter(|_| !hotplug), e.max_vcpus.or(e.vcpus)),
        e.passthrough,
        e.hv.clone(),
        // Reinjection is what the PIT policy decides: absent, delay and catchup all keep it.
        // The HPET is a PC device: libvirt writes nothing for it on other architectures.
        (
            e.hpet.filter(|_| x86),
            e.pit != Some(PitPolicy::Discard),
            e.rtc_catchup,
        ),
        (e.kvm_hidden, e.hypervisor_hidden, e.kernel_irqchip.clone()),
        cpu,
    )
}

/// The `-cpu` model a configuration asks for, in QEMU's names.
fn model(e: &Effective) -> Option<String> {
    e.cpu_model.as_deref().map(|m| match m {
        "host-passthrough" => "host".to_string(),
        "maximum" => "max".to_string(),
        m => m.to_string(),
    })
}

/// Host and guest assumptions the rules run under: nothing known; a Windows guest on an AMD
/// AVIC host with every workload option (fires most rules); an Intel APICv host with a
/// non-TSC clocksource.
fn profiles() -> Vec<Options> {
    let all = Options {
        host: HostFacts {
            vendor: Some(Vendor::Amd),
            avic: Some(true),
            ..HostFacts::default()
        },
        guest: Some(GuestFamily::Windows),
        migratable: true,
        overcommitted: true,
        nested_workload: true,
        ipi_heavy: true,
        ..Options::default()
    };
    let intel = Options {
        host: HostFacts {
            vendor: Some(Vendor::Intel),
            apicv: Some(true),
            clocksource: Some("hpet".into()),
            ..HostFacts::default()
        },
        ..Options::default()
    };
    vec![Options::default(), all, intel]
}

fn verdict(c: &[VmConfig], o: &Options) -> BTreeSet<(&'static str, Severity)> {
    lint::lint(c, o)
        .findings
        .iter()
        .map(|f| (f.rule, f.severity))
        .collect()
}

#[test]
fn libvirt_xml_and_argv_agree() {
    if !require(&[Need::LibvirtTestdata]) {
        return;
    }
    let dir = PathBuf::from(std::env::var_os("VIRTLENS_LIBVIRT_TESTDATA").unwrap());
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    let (mut read_ok, mut read_err) = (0usize, 0usize);
    for f in files
        .iter()
        .filter(|f| f.extension().is_some_and(|x| x == "xml" || x == "args"))
    {
        // No crash on any file; libvirt's negative tests may be refused with an error.
        match read(f) {
            Ok(_) => read_ok += 1,
            Err(_) => read_err += 1,
        }
    }
    let mut pairs = 0;
    let mut agree = 0;
    let mut excepted = [0usize; EXCEPTIONS.len()];
    let mut failures: Vec<String> = Vec::new();
    for args in files
        .iter()
        .filter(|f| f.extension().is_some_and(|x| x == "args"))
    {
        let Some(xml) = xml_of(args) else { continue };
        pairs += 1;
        let name = args.file_name().unwrap().to_string_lossy().to_string();
        let (x, a) = match (read(&xml), read(args)) {
            (Ok(x), Ok(a)) if x.len() == 1 && a.len() == 1 => (x, a),
            (x, a) => {
                failures.push(format!(
                    "{name}: xml {:?} / args {:?}",
                    x.map(|v| v.len()),
                    a.map(|v| v.len())
                ));
                continue;
            }
        };
        let ex = x[0].effective();
        let text = std::fs::read_to_string(&xml).unwrap_or_default();
        let hotplug = text
            .lines()
            .any(|l| l.contains("hotpluggable='yes'") && l.contains("enabled='yes'"));
        let ea = a[0].effective();
        let (kx, ka) = (key(&ex, &ex, hotplug), key(&ea, &ex, hotplug));
        if kx != ka {
            failures.push(format!("{name}: effective\n  xml  {kx:?}\n  args {ka:?}"));
            continue;
        }
        let decided = [
            model(&ex) != model(&ea),
            ex.vcpus != ea.vcpus,
            ex.hpet != ea.hpet,
        ];
        for (n, d) in excepted.iter_mut().zip(decided) {
            *n += usize::from(d);
        }
        let mut same = true;
        for o in profiles() {
            let (vx, va) = (verdict(&x, &o), verdict(&a, &o));
            if vx != va {
                failures.push(format!("{name}: rules\n  xml  {vx:?}\n  args {va:?}"));
                same = false;
                break;
            }
        }
        agree += usize::from(same);
    }
    let version = std::fs::read_to_string(dir.join("VERSION")).unwrap_or_default();
    println!(
        "libvirt oracle ({}): {read_ok} files read, {read_err} refused; {pairs} XML/argv pairs, \
         {agree} agree (effective configuration and rules fired), {} differ",
        version.trim(),
        failures.len()
    );
    for ((what, why), n) in EXCEPTIONS.iter().zip(excepted) {
        println!("  not compared: {what} (decides {n} pairs): {why}");
    }
    assert!(pairs > 100, "only {pairs} pairs in {}", dir.display());
    assert!(
        failures.is_empty(),
        "{} of {pairs} pairs differ:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

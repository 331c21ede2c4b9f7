//! Probing this host's facts (see `virtlens_core::facts`): `/proc/cpuinfo`, the loaded KVM
//! modules and their parameters under `/sys/module`, the kernel release and clocksource.
//! Reading only; a fact that cannot be read stays `None`.

use std::fs;
use std::path::Path;

use virtlens_core::decode::Isa;
use virtlens_core::profile::Origin;
use virtlens_core::{Backend, HostFacts, Vendor};

/// The facts of the host this runs on, read from `root` (`/` normally; tests pass a folder),
/// with the CPUID hypervisor signature `hypervisor` (read from the CPU by [`probe`]).
pub(crate) fn probe_at(root: &Path, hypervisor: Option<&str>) -> HostFacts {
    let read = |p: &str| fs::read_to_string(root.join(p)).ok();
    let cpuinfo = read("proc/cpuinfo").unwrap_or_default();
    let field = |name: &str| {
        cpuinfo.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            (k.trim() == name).then(|| v.trim().to_string())
        })
    };
    let flags: Vec<String> = field("flags")
        .map(|f| f.split_whitespace().map(str::to_string).collect())
        .unwrap_or_default();
    let has = |f: &str| flags.iter().any(|x| x == f);
    let module = |m: &str| root.join("sys/module").join(m).exists();
    let param = |m: &str, p: &str| {
        read(&format!("sys/module/{m}/parameters/{p}")).map(|v| matches!(v.trim(), "Y" | "1" | "y"))
    };
    // arm64 has no vendor_id or model name: its MIDR fields say the CPU.
    let implementer = field("CPU implementer");
    let arm = implementer.is_some();
    let backend = if module("kvm_intel") {
        Backend::Vmx
    } else if module("kvm_amd") {
        Backend::Svm
    } else if module("kvm_pvm") {
        Backend::Pvm
    } else if arm && (module("kvm") || root.join("dev/kvm").exists()) {
        Backend::Arm64
    } else if module("kvm") {
        Backend::Other("kvm".into())
    } else {
        Backend::None
    };
    let cpu_model = field("model name").or_else(|| {
        let part = field("CPU part").unwrap_or_default();
        implementer
            .as_ref()
            .map(|i| format!("arm64 CPU, implementer {i}, part {part}"))
    });
    // MIDR implementer 0x00 is reserved for software: QEMU's emulated arm64 CPUs report it.
    let software = implementer.as_deref() == Some("0x00");
    HostFacts {
        vendor: field("vendor_id").map(|v| Vendor::from_cpuid(&v)),
        cpu_emulator: virtlens_core::cpu_emulator(cpu_model.as_deref(), hypervisor)
            .or_else(|| software.then(|| "QEMU TCG (arm64 implementer 0x00)".to_string())),
        cpu_model,
        kernel: read("proc/sys/kernel/osrelease").map(|s| s.trim().to_string()),
        hardware_virtualization: (!cpuinfo.is_empty()).then(|| has("vmx") || has("svm")),
        nested: (!cpuinfo.is_empty()).then(|| has("hypervisor")),
        apicv: param("kvm_intel", "enable_apicv"),
        avic: param("kvm_amd", "avic"),
        clocksource: read("sys/devices/system/clocksource/clocksource0/current_clocksource")
            .map(|s| s.trim().to_string()),
        kvm_device: Some(root.join("dev/kvm").exists()),
        backend: Some(backend),
        ring0_emulated: None,
    }
}

/// The facts of this host.
pub fn probe() -> HostFacts {
    // The CPUID hypervisor signature; other architectures have no such instruction.
    #[cfg(target_arch = "x86_64")]
    let hypervisor = virtlens_guest::probe_fingerprint().hypervisor_vendor;
    #[cfg(not(target_arch = "x86_64"))]
    let hypervisor: Option<String> = None;
    probe_at(Path::new("/"), hypervisor.as_deref())
}

/// The origin of a profile read live from this host by source `format`: its kernel, KVM
/// backend, CPU vendor, and the exit-reason ISA the backend implies.
pub(crate) fn origin(format: &str) -> Origin {
    let facts = probe();
    let mut origin = Origin::new(format, None);
    origin.kernel = facts.kernel.clone();
    origin.backend = facts.backend.as_ref().map(ToString::to_string);
    origin.cpu = facts.cpu_model.clone();
    origin.cpu_emulator = facts.cpu_emulator.clone();
    origin.vendor = facts.vendor.as_ref().map(|v| {
        match v {
            Vendor::Intel => "GenuineIntel",
            Vendor::Amd => "AuthenticAMD",
            Vendor::Hygon => "HygonGenuine",
            Vendor::Other(s) => s.as_str(),
        }
        .to_string()
    });
    origin.isa = match facts.backend {
        Some(Backend::Vmx) => Some(Isa::Vmx),
        Some(Backend::Svm) => Some(Isa::Svm),
        Some(Backend::Arm64) => Some(Isa::Arm64),
        _ => None,
    };
    origin
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fake root with the files the probe reads, as a real PVM host and a VMX host have them.
    fn root(name: &str, cpuinfo: &str, modules: &[(&str, &[(&str, &str)])]) -> std::path::PathBuf {
        let r = std::env::temp_dir().join(format!("virtlens-facts-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&r);
        let w = |p: &str, s: &str| {
            let path = r.join(p);
            let _ = fs::create_dir_all(path.parent().unwrap_or(&r));
            let _ = fs::write(path, s);
        };
        w("proc/cpuinfo", cpuinfo);
        w("proc/sys/kernel/osrelease", "6.18.44\n");
        w(
            "sys/devices/system/clocksource/clocksource0/current_clocksource",
            "tsc\n",
        );
        for (m, params) in modules {
            let _ = fs::create_dir_all(r.join("sys/module").join(m));
            for (p, v) in *params {
                w(&format!("sys/module/{m}/parameters/{p}"), v);
            }
        }
        r
    }

    #[test]
    fn vmx_host_with_apicv() {
        let cpu = "vendor_id\t: GenuineIntel\nmodel name\t: Intel(R) Xeon(R) Gold 6338\nflags\t\t: fpu vmx tsc\n";
        let r = root(
            "vmx",
            cpu,
            &[("kvm", &[]), ("kvm_intel", &[("enable_apicv", "Y\n")])],
        );
        let f = probe_at(&r, None);
        assert_eq!(f.backend, Some(Backend::Vmx));
        assert_eq!(f.vendor, Some(Vendor::Intel));
        assert_eq!(f.apicv, Some(true));
        assert_eq!(f.avic, None);
        assert_eq!(f.hardware_virtualization, Some(true));
        assert_eq!(f.nested, Some(false));
        let _ = fs::remove_dir_all(&r);
    }

    #[test]
    fn pvm_guest_host() {
        let cpu =
            "vendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC\nflags\t\t: fpu tsc hypervisor\n";
        let r = root("pvm", cpu, &[("kvm", &[]), ("kvm_pvm", &[])]);
        let f = probe_at(&r, Some("KVMKVMKVM"));
        assert_eq!(f.backend, Some(Backend::Pvm));
        assert!(!f.backend.as_ref().is_some_and(Backend::is_hardware));
        assert_eq!(
            (f.hardware_virtualization, f.nested),
            (Some(false), Some(true))
        );
        assert_eq!(f.kernel.as_deref(), Some("6.18.44"));
        let _ = fs::remove_dir_all(&r);
    }

    /// The lab host: Debian's kernel under QEMU TCG `-cpu max` with kvm_amd loaded.
    #[test]
    fn svm_that_qemu_tcg_emulates_is_not_hardware() {
        let cpu = "vendor_id\t: AuthenticAMD\nmodel name\t: QEMU TCG CPU version 2.5+\n\
                   flags\t\t: fpu tsc hypervisor svm npt\n";
        let r = root("tcg", cpu, &[("kvm", &[]), ("kvm_amd", &[("avic", "N\n")])]);
        let f = probe_at(&r, None);
        assert_eq!(f.backend, Some(Backend::Svm));
        assert_eq!(f.cpu_emulator.as_deref(), Some("QEMU TCG"));
        assert_eq!(f.exit_timing().name(), "emulated-cpu");
        assert!(!f.exit_timing().is_hardware());
        // Another TCG CPU model (no telling name): the hypervisor leaf still says TCG.
        let cpu = "vendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC Processor\nflags\t\t: svm\n";
        let r2 = root("tcg-epyc", cpu, &[("kvm", &[]), ("kvm_amd", &[])]);
        let f = probe_at(&r2, Some("TCGTCGTCGTCG"));
        assert_eq!(f.cpu_emulator.as_deref(), Some("QEMU TCG"));
        let _ = fs::remove_dir_all(&r);
        let _ = fs::remove_dir_all(&r2);
    }

    /// The arm64 lab host: Debian's arm64 kernel under QEMU TCG `-cpu max` (its /proc/cpuinfo
    /// as it printed it): KVM is built in, the CPU has no vendor_id, and MIDR implementer 0x00
    /// (reserved for software) says it is emulated. A hardware implementer (0x41, Arm) is not.
    #[test]
    fn arm64_kvm_on_a_software_cpu_is_not_hardware_timing() {
        let cpu = "processor\t: 0\nBogoMIPS\t: 125.00\nFeatures\t: fp asimd evtstrm aes\n\
                   CPU implementer\t: 0x00\nCPU architecture: 8\nCPU variant\t: 0x0\n\
                   CPU part\t: 0x051\nCPU revision\t: 0\n";
        let r = root("arm64-tcg", cpu, &[("kvm", &[])]);
        let f = probe_at(&r, None);
        assert_eq!(f.backend, Some(Backend::Arm64));
        assert!(f.cpu_emulator.is_some(), "{f:?}");
        assert!(!f.exit_timing().is_hardware());
        let r2 = root(
            "arm64-neoverse",
            &cpu.replace("0x00", "0x41"),
            &[("kvm", &[])],
        );
        let f = probe_at(&r2, None);
        assert_eq!(f.backend, Some(Backend::Arm64));
        assert_eq!(f.cpu_emulator, None);
        assert!(f.exit_timing().is_hardware());
        let _ = fs::remove_dir_all(&r);
        let _ = fs::remove_dir_all(&r2);
    }

    #[test]
    fn this_host_probes_without_failing() {
        let f = probe();
        // Whatever the host, the kernel release is always readable on Linux.
        assert!(f.kernel.is_some());
        println!("this host: {f:?}");
    }
}

//! The environment fingerprint of a layer: what hypervisor (if any) this code runs under, what
//! it offers (KVM paravirtual features, Hyper-V enlightenments), whether it nests, which
//! clocksource the kernel reads time from, how much time was stolen, and the plain facts (CPU,
//! kernel, vCPUs, memory, THP). `virtlens stretch` reads it to explain a stretch.

use crate::procfs;
use crate::schema::Fingerprint;
use crate::sys::cpuid;

/// KVM's paravirtual feature bits (CPUID 0x40000001 EAX), from the kernel's
/// `arch/x86/include/uapi/asm/kvm_para.h`.
const KVM_FEATURES: [(u32, &str); 18] = [
    (0, "clocksource"),
    (1, "nop_io_delay"),
    (3, "clocksource2"),
    (4, "async_pf"),
    (5, "steal_time"),
    (6, "pv_eoi"),
    (7, "pv_unhalt"),
    (9, "pv_tlb_flush"),
    (10, "async_pf_vmexit"),
    (11, "pv_send_ipi"),
    (12, "poll_control"),
    (13, "pv_sched_yield"),
    (14, "async_pf_int"),
    (15, "msi_ext_dest_id"),
    (16, "hc_map_gpa_range"),
    (17, "migration_control"),
    (24, "clocksource_stable"),
    (2, "mmu_op"),
];

/// Hyper-V partition privileges (CPUID 0x40000003 EAX), from the Hyper-V TLFS.
const HV_FEATURES: [(u32, &str); 13] = [
    (0, "vp_runtime"),
    (1, "time_ref_count"),
    (2, "synic"),
    (3, "stimer"),
    (4, "apic_msrs"),
    (5, "hypercall"),
    (6, "vp_index"),
    (7, "reset"),
    (8, "stats"),
    (9, "reference_tsc"),
    (10, "guest_idle"),
    (11, "frequency_msrs"),
    (12, "debug_msrs"),
];

fn vendor(leaf: u32) -> (u32, String) {
    let [eax, ebx, ecx, edx] = cpuid(leaf, 0);
    let bytes: Vec<u8> = [ebx, ecx, edx]
        .iter()
        .flat_map(|r| r.to_le_bytes())
        .collect();
    let text = String::from_utf8_lossy(&bytes)
        .trim_end_matches('\0')
        .to_string();
    (eax, text)
}

fn bits(word: u32, table: &[(u32, &str)]) -> Vec<String> {
    table
        .iter()
        .filter(|(bit, _)| word >> bit & 1 == 1)
        .map(|(_, name)| (*name).to_string())
        .collect()
}

/// This layer's fingerprint.
pub fn probe() -> Fingerprint {
    let hypervisor_bit = cpuid(1, 0)[2] >> 31 & 1 == 1;
    let mut f = Fingerprint {
        hypervisor_bit,
        clocksource: procfs::clocksource(),
        clocksources_available: procfs::clocksources_available(),
        steal_pct: procfs::CpuTicks::now().and_then(|t| t.steal_pct()),
        cpu_model: procfs::cpu_model(),
        kernel: procfs::kernel(),
        cpus: procfs::online_cpus(),
        memory_mb: procfs::memory_mb(),
        thp: procfs::thp_mode(),
        ..Fingerprint::default()
    };
    if hypervisor_bit {
        let (max, name) = vendor(0x4000_0000);
        if max >= 0x4000_0000 {
            f.hypervisor_max_leaf = Some(max);
            f.hypervisor_vendor = Some(name.clone());
        }
        // KVM puts its own leaves at 0x40000100 when it shows Hyper-V's at 0x40000000.
        for base in [0x4000_0000u32, 0x4000_0100] {
            let (top, who) = vendor(base);
            if who == "KVMKVMKVM" && top > base {
                f.kvm_features = bits(cpuid(base + 1, 0)[0], &KVM_FEATURES);
            }
        }
        if name == "Microsoft Hv" && max >= 0x4000_0003 {
            f.hv_features = bits(cpuid(0x4000_0003, 0)[0], &HV_FEATURES);
            if max >= 0x4000_000a && cpuid(0x4000_000a, 0)[0] != 0 {
                f.nested_hints
                    .push("Hyper-V nested features leaf (0x4000000A) is set".into());
            }
        }
    }
    let flags = procfs::cpu_flags();
    for ext in ["vmx", "svm"] {
        if hypervisor_bit && flags.iter().any(|x| x == ext) {
            f.nested_hints.push(format!(
                "{ext} is visible inside this guest: it can run nested VMs"
            ));
        }
    }
    for module in ["kvm_intel", "kvm_amd"] {
        if let Some(v) = procfs::module_param(module, "nested")
            && matches!(v.as_str(), "Y" | "1")
        {
            f.nested_hints.push(format!(
                "{module} nested={v}: this kernel can host nested guests"
            ));
        }
    }
    if procfs::module_present("kvm_pvm") {
        f.nested_hints.push(
            "kvm_pvm is loaded: KVM here uses PVM (shadow paging, no VMX/SVM), as in a \
             nested or VMX-less cloud guest"
                .into(),
        );
    }
    f
}

/// A short name for the layer from its fingerprint ("native", "KVM guest", "TCG guest", …).
pub(crate) fn default_layer(f: &Fingerprint) -> String {
    match f.hypervisor_vendor.as_deref() {
        None if !f.hypervisor_bit => "native".into(),
        None => "guest".into(),
        Some("KVMKVMKVM") => "KVM guest".into(),
        Some("TCGTCGTCGTCG") => "TCG guest".into(),
        Some("Microsoft Hv") if f.kvm_features.is_empty() => "Hyper-V guest".into(),
        Some("Microsoft Hv") => "KVM guest (Hyper-V enlightened)".into(),
        Some("VMwareVMware") => "VMware guest".into(),
        Some(other) => format!("{other} guest"),
    }
}

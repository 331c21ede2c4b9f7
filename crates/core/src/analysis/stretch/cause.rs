//! The likely cause of a stretch, per measure, from what the layers' fingerprints and the
//! measures' details say (clocksource, page size obtained, hypervisor, steal, exits per
//! operation), and the notes a reader needs before the table (software emulation, mixed
//! quick and full runs). Logic and words are kept together here because every sentence is
//! chosen by one condition; nothing in this file measures or prints.

use virtlens_guest::schema::Fingerprint;

use super::compare::{Stretch, Verdict};
use super::{Layer, Value};

/// Clocksources the vDSO cannot read.
const TRAPPING: [&str; 3] = ["acpi_pm", "hpet", "jiffies"];

fn is_tcg(f: &Fingerprint) -> bool {
    f.hypervisor_vendor.as_deref() == Some("TCGTCGTCGTCG")
}

fn steal_note(
    base: Option<&Fingerprint>,
    target: Option<&Fingerprint>,
    name: &str,
) -> Option<String> {
    let t = target?.steal_pct?;
    let b = base.and_then(|f| f.steal_pct).unwrap_or(0.0);
    (t > b + 1.0).then(|| {
        format!("{name} lost {t:.1} % of its CPU time to steal (the hypervisor ran something else), against {b:.1} % in the baseline")
    })
}

/// The likely causes of the stretch of measure `name` in the last layer that has it.
pub(crate) fn causes(
    name: &str,
    layers: &[Layer],
    values: &[Option<Value>],
    vs_first: &[Option<Stretch>],
) -> Vec<String> {
    let Some(i) = (1..values.len())
        .rev()
        .find(|&i| values[i].is_some() && vs_first[i - 1].is_some())
    else {
        return Vec::new();
    };
    let Some(s) = &vs_first[i - 1] else {
        return Vec::new();
    };
    if matches!(s.verdict, Verdict::WithinNoise | Verdict::Same) {
        return Vec::new();
    }
    let slower = matches!(s.verdict, Verdict::Slower | Verdict::SlowerNoiseUnknown);
    let (base, target) = (
        layers[0].fingerprint.as_ref(),
        layers[i].fingerprint.as_ref(),
    );
    let (bv, tv) = (values[0].as_ref(), values[i].as_ref());
    let lname = &layers[i].name;
    let mut out = Vec::new();
    let family = name.split('.').next().unwrap_or(name);
    if target.is_some_and(is_tcg) {
        // Under emulation only the clocksource says more than "it is emulated".
        out.push(format!(
            "{lname} is emulated by QEMU TCG: not a KVM stretch (see the note)"
        ));
        if family != "clock" {
            return out;
        }
    }
    if let Some(n) = tv
        .and_then(|v| v.detail.get("exits_per_op"))
        .and_then(|n| n.parse::<f64>().ok())
        && n > 0.0
    {
        out.push(format!(
            "each operation left the guest {n:.2} times in {lname} (VM exits)"
        ));
    }
    if let Some(e) = tv.and_then(|v| v.detail.get("execution")) {
        out.push(format!("{lname}: {e}"));
    }
    if !slower {
        return out;
    }
    match family {
        "cpu" | "load" => {
            out.push(
                "user-mode integer work runs at native speed under hardware virtualization, so a \
                 CPU stretch is time the vCPU did not get (steal, an over-committed host: see \
                 `virtlens model overcommit`), a different CPU, or emulation"
                    .into(),
            );
            out.extend(steal_note(base, target, lname));
            if let (Some(a), Some(b)) = (
                base.and_then(|f| f.cpu_model.as_ref()),
                target.and_then(|f| f.cpu_model.as_ref()),
            ) && a != b
            {
                out.push(format!("the CPU model differs: {a:?} against {b:?}"));
            }
        }
        "clock" => {
            let cs = |f: Option<&Fingerprint>, v: Option<&Value>| {
                v.and_then(|v| v.detail.get("clocksource").cloned())
                    .or_else(|| f.and_then(|f| f.clocksource.clone()))
            };
            match (cs(base, bv), cs(target, tv)) {
                (_, Some(t)) if TRAPPING.contains(&t.as_str()) => out.push(format!(
                    "{lname} reads time from {t}, which the vDSO cannot read: each read is a \
                     system call and, in a VM, an access to an emulated device (a VM exit); \
                     switch to kvm-clock or tsc (Windows: hv-time, the reference TSC page)"
                )),
                (Some(b), Some(t)) if b != t => out.push(format!(
                    "the clocksource differs: {b} in the baseline, {t} in {lname} (kvm-clock \
                     reads the pvclock page on top of the TSC)"
                )),
                _ => out.push(
                    "the same clocksource on both: the difference is the read path (vDSO \
                     fallbacks, TSC scaling) or noise from preemption"
                        .into(),
                ),
            }
        }
        "syscall" => out.push(
            "system calls do not exit under VMX/SVM: a stretch here comes from kernel \
             mitigations that differ between the two kernels, or from a hypervisor that \
             intercepts kernel entries (PVM and other shadow-paging designs switch to the host)"
                .into(),
        ),
        "wakeup" => {
            out.push(
                "a cross-CPU wake-up in a VM is an IPI (an exit unless posted interrupts or IPI \
                 virtualization deliver it) and the sleeping vCPU's HLT exit and re-entry: guest \
                 halt polling (cpuidle-haltpoll), the host's halt_poll_ns and PV send-IPI shorten it"
                    .into(),
            );
            if let Some(f) = target
                && f.hypervisor_vendor.as_deref() == Some("KVMKVMKVM")
            {
                for feat in ["pv_send_ipi", "pv_unhalt", "poll_control"] {
                    if !f.kvm_features.iter().any(|x| x == feat) {
                        out.push(format!("{lname} does not offer KVM's {feat}"));
                    }
                }
            }
        }
        "tlb" => {
            let pages = |v: Option<&Value>| v.and_then(|v| v.detail.get("pages_obtained").cloned());
            if let (Some(a), Some(b)) = (pages(bv), pages(tv))
                && a != b
            {
                out.push(format!(
                    "the page size obtained differs: {a} in the baseline, {b} in {lname}"
                ));
            }
            if name.ends_with("4k") {
                out.push(
                    "a TLB miss in a VM walks the guest's page tables and, for each of their \
                     levels, the host's (the 2-D walk of EPT/NPT: up to 24 memory references \
                     instead of 4; shadow paging traps page-table writes instead): back the \
                     guest with huge pages (libvirt <memoryBacking><hugepages/>, THP on the \
                     host) and use huge pages inside it"
                        .into(),
                );
            } else {
                out.push(
                    "with 2 MiB pages few walks are left: a remaining stretch means the host \
                     backs the guest with small pages (the walk's second dimension is 4 KiB)"
                        .into(),
                );
            }
        }
        "memory" => out.push(
            "memory bandwidth is shared with everything else on the host, and is lower when \
             the guest's memory is not backed by huge pages or sits on a remote NUMA node"
                .into(),
        ),
        "fio" | "storage" => out.push(
            "the storage path: virtio-blk/virtio-scsi rather than an emulated controller, the \
             disk cache mode, IO threads and polling; nested layers add an image inside an image"
                .into(),
        ),
        "net" => out.push(
            "the network path: virtio-net with vhost and multiqueue; each nested layer adds \
             another virtual switch and another copy"
                .into(),
        ),
        _ => {}
    }
    out
}

/// What a reader must know before the table.
pub(crate) fn notes(layers: &[Layer]) -> Vec<String> {
    let mut out = Vec::new();
    for l in layers {
        if l.fingerprint.as_ref().is_some_and(is_tcg) {
            out.push(format!(
                "{:?} ran under QEMU TCG, software emulation: its stretch shows what emulation \
                 costs, not what KVM costs",
                l.name
            ));
        }
    }
    let quick: Vec<bool> = layers.iter().filter_map(|l| l.quick).collect();
    if quick.iter().any(|q| *q) && quick.iter().any(|q| !*q) {
        out.push(
            "some layers ran the quick suite and some the full one: the measures are per \
             operation, so they compare, but quick runs are noisier"
                .into(),
        );
    }
    let mut seen = Vec::new();
    for l in layers {
        if seen.contains(&&l.name) {
            out.push(format!(
                "two layers are named {:?}: give them --layer names",
                l.name
            ));
        }
        seen.push(&l.name);
    }
    out
}

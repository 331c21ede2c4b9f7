//! The over-commit words every family that reads ready time shares — `sched.*` from the vCPU
//! threads' schedstat, the counter families from Hyper-V's CPU Wait Time Per Dispatch and
//! esxtop's %RDY, the lock-holder-preemption words of `spin.*`: what ready time is, and the
//! fixes that give vCPUs their CPUs back (fewer vCPUs, pinning, CPU weights, moving VMs), and
//! the guest's side (spinning vCPUs that yield). One place, so every finding says the same.

use super::W;
use super::fixes::{F, hv_fix};
use crate::config::HvFlag;
use crate::diagnose::model::{Fix, ForGuest};

/// What ready time is, in every hypervisor's words.
pub(crate) const READY_MEANS: &str = "Ready time is the time a vCPU was runnable but not running: it had \
     work and waited for a host CPU. VMware reports it as %RDY, Hyper-V as CPU Wait Time Per \
     Dispatch, and on KVM it is the vCPU thread's run-queue wait in the host scheduler \
     (schedstat). The guest sees it as steal time, or as time that ran slow.";

/// The fix summaries, for families whose fixes are plain text.
pub const FEWER_VCPUS: &str = "give the VMs fewer vCPUs (right-size them to what they use), so the \
     runnable vCPUs fit the host's CPUs";
pub const PIN: &str = "pin the vCPUs of the VMs that matter to CPUs of their own, and keep other \
     VMs and host work off those CPUs";
pub(crate) const WEIGHTS: &str = "give the VMs that matter a larger CPU weight, so they win the CPUs when \
     all are busy (it moves the wait to the others, it does not remove it)";
pub(crate) const MOVE: &str =
    "move busy VMs to a host with idle CPUs (live migration), or add CPUs";

/// A vCPU pinning in libvirt XML (one `vcpupin` per vCPU; the emulator threads elsewhere).
pub(crate) const PIN_XML: &str = "<cputune><vcpupin vcpu='0' cpuset='2'/><vcpupin vcpu='1' cpuset='3'/><emulatorpin cpuset='0-1'/></cputune>";

/// The host-side fixes of over-commit, in the order to try them.
pub(crate) fn fixes() -> Vec<Fix> {
    vec![
        F::new(ForGuest::Any, FEWER_VCPUS)
            .qemu("-smp N with N the vCPUs the guest uses")
            .libvirt("<vcpu placement='static'>N</vcpu> (live: virsh setvcpus DOMAIN N --live)")
            .advice(&["advice.fewer-vcpus"])
            .done(),
        F::new(ForGuest::Any, PIN)
            .libvirt(PIN_XML)
            .host(
                "virsh vcpupin DOMAIN VCPU HOST-CPU, or taskset -pc HOST-CPU TID for each vCPU thread \
                 (QEMU names them `CPU n/KVM`); isolate those CPUs from other work (cpuset, isolcpus)",
            )
            .advice(&["advice.pin-vcpus"])
            .done(),
        F::new(ForGuest::Any, WEIGHTS)
            .libvirt("<cputune><shares>2048</shares></cputune> (the default is 1024)")
            .host(
                "cgroup v2 cpu.weight of the VM's scope: systemctl set-property machine-qemu…scope \
                 CPUWeight=200 (the default is 100)",
            )
            .advice(&["advice.cpu-weight"])
            .done(),
        F::new(ForGuest::Any, MOVE)
            .host("virsh migrate --live DOMAIN qemu+ssh://OTHER-HOST/system")
            .advice(&["advice.move-vm"])
            .done(),
    ]
}

/// The guest's side: a vCPU that spins on a lock whose holder was preempted burns its slice;
/// paravirtual spinlocks make it yield to the hypervisor instead (per guest).
pub(crate) fn spin_fixes(w: &W<'_>) -> Vec<Fix> {
    w.fixes_by_guest(|g| match g {
        ForGuest::Windows => vec![hv_fix(
            w.ev,
            "let Windows tell the hypervisor it spins (hv-spinlocks)",
            &[HvFlag::Spinlocks],
            &["advice.hv-spinlocks"],
        )],
        _ => vec![
            F::new(
                ForGuest::Linux,
                "let Linux yield instead of spinning (PV spinlocks)",
            )
            .qemu("-cpu …,kvm-pv-unhalt=on")
            .advice(&["advice.pv-spinlocks"])
            .done(),
        ],
    })
}

//! vCPU ids from the names VMMs give their vCPU threads: QEMU `CPU 3/KVM` (with
//! `debug-threads=on`, which libvirt sets), Firecracker `fc_vcpu 3`, cloud-hypervisor
//! `vcpu3`, crosvm `crosvm_vcpu3`, kvmtool `kvm-vcpu-3`. Other names say nothing.

/// The vCPU a thread called `comm` runs, when its name says.
pub(crate) fn vcpu_of_thread(comm: &str) -> Option<u32> {
    let comm = comm.trim();
    if let Some(rest) = comm.strip_prefix("CPU ") {
        let (n, accel) = rest.split_once('/')?;
        return (accel == "KVM").then(|| n.parse().ok()).flatten();
    }
    for prefix in ["fc_vcpu", "crosvm_vcpu", "kvm-vcpu-", "vcpu"] {
        if let Some(rest) = comm.strip_prefix(prefix) {
            let digits = rest.trim_start_matches([' ', '_', '-']);
            if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
                return digits.parse().ok();
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_vmm_spelling() {
        assert_eq!(vcpu_of_thread("CPU 3/KVM"), Some(3));
        assert_eq!(vcpu_of_thread("CPU 12/KVM"), Some(12));
        assert_eq!(vcpu_of_thread("CPU 0/TCG"), None);
        assert_eq!(vcpu_of_thread("fc_vcpu 1"), Some(1));
        assert_eq!(vcpu_of_thread("vcpu0"), Some(0));
        assert_eq!(vcpu_of_thread("vcpu_7"), Some(7));
        assert_eq!(vcpu_of_thread("crosvm_vcpu2"), Some(2));
        assert_eq!(vcpu_of_thread("kvm-vcpu-5"), Some(5));
        assert_eq!(vcpu_of_thread("vcpu-thread"), None);
        assert_eq!(vcpu_of_thread("qemu-system-x86"), None);
        assert_eq!(vcpu_of_thread("vcpu"), None);
    }
}

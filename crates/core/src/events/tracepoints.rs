//! The kvm tracepoints virtlens knows by name — one list for the trace sources' builder, `top`
//! and the in-kernel (BPF) aggregation, so that adding one is one line here.

/// The tracepoints read into tables of their own (exits, ports, MMIO, MSRs, userspace exits,
/// hypercalls), not only counted: a count of them beside their table would count them twice.
pub const TABLED: [&str; 8] = [
    "kvm_exit",
    "kvm_entry",
    "kvm_pio",
    "kvm_mmio",
    "kvm_msr",
    "kvm_userspace_exit",
    "kvm_hypercall",
    "kvm_hv_hypercall",
];

/// The tracepoints that only pair or time others: `kvm_fpu` (the VMM's turn ends at the next
/// KVM_RUN), `kvm_vcpu_wakeup` and `kvm_halt_poll_ns` (a halt's wait and polling).
pub(crate) const TIMING: [&str; 3] = ["kvm_fpu", "kvm_vcpu_wakeup", "kvm_halt_poll_ns"];

/// [`TABLED`] then `TIMING`: what the in-kernel aggregation attaches to, by fixed index.
pub const AGGREGATED: [&str; TABLED.len() + TIMING.len()] = {
    let mut out = [""; TABLED.len() + TIMING.len()];
    let mut i = 0;
    while i < TABLED.len() {
        out[i] = TABLED[i];
        i += 1;
    }
    while i < out.len() {
        out[i] = TIMING[i - TABLED.len()];
        i += 1;
    }
    out
};

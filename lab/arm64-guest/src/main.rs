//! The arm64 lab's guest: a VM of one vCPU whose few instructions make a known number of exits
//! of known classes, so that a capture on the arm64 lab host can be checked count for count.
//!
//! `arm64-guest WRITES HVCS` runs, at EL1 with the MMU off:
//! - WRITES 32-bit stores to an address no memory slot backs: each is a stage-2 data abort
//!   (`kvm_exit` with `esr_ec` DABT_LOW, 0x24) that KVM hands to this program as an MMIO exit;
//! - HVCS `hvc #0` calls of PSCI_VERSION (0x84000000), each an `esr_ec` HVC64 (0x16) exit that
//!   KVM answers in the kernel;
//! - one PSCI SYSTEM_OFF, which KVM turns into a system-event exit that ends the run.
//!
//! It prints what it saw (`mmio_writes=N system_off=1`) and fails if the guest did anything
//! else. It is built for aarch64 only; elsewhere it says so.

#[cfg(target_arch = "aarch64")]
mod vm;
// On other architectures only its encodings are tested.
#[cfg_attr(not(target_arch = "aarch64"), allow(dead_code))]
mod code;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let parse = |i: usize, what: &str| -> u32 {
        match args.get(i).map(|a| a.parse::<u32>()) {
            Some(Ok(n)) if n >= 1 => n,
            _ => {
                eprintln!("arm64-guest: expected WRITES HVCS (each a count of at least 1), {what} missing or bad");
                std::process::exit(2);
            }
        }
    };
    let (writes, hvcs) = (parse(0, "WRITES"), parse(1, "HVCS"));
    #[cfg(target_arch = "aarch64")]
    match vm::run(writes, hvcs) {
        Ok(seen) => println!("mmio_writes={seen} system_off=1"),
        Err(e) => {
            eprintln!("arm64-guest: {e}");
            std::process::exit(1);
        }
    }
    #[cfg(not(target_arch = "aarch64"))]
    {
        eprintln!("arm64-guest: built for aarch64 only ({writes} writes, {hvcs} hypercalls not run)");
        std::process::exit(2);
    }
}

//! Runs a real-mode micro-VM guest that writes to an IO port N times and halts, and prints the
//! exits it took. Made to be recorded: `perf record -e 'kvm:*' -o pio.data -- pio_guest 1000`.
//!
//! Usage: `pio_guest N [PORT]` (PORT defaults to 0x80; decimal or 0x-hex).

use std::process::ExitCode;
use std::time::Duration;

use virtlens_host::microvm::{MicroVm, pio_loop};

const USAGE: &str = "usage: pio_guest N [PORT]   (N port writes; PORT defaults to 0x80)";

fn number(text: &str) -> Option<u64> {
    match text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => text.parse().ok(),
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let count = args
        .first()
        .and_then(|a| number(a))
        .and_then(|n| u32::try_from(n).ok());
    let port = match args.get(1) {
        None => Some(0x80),
        Some(p) => number(p).and_then(|n| u16::try_from(n).ok()),
    };
    let (Some(count), Some(port), true) = (count, port, args.len() <= 2) else {
        eprintln!("{USAGE}");
        return ExitCode::from(2);
    };
    let run = || -> Result<_, virtlens_host::microvm::Error> {
        let mut vm = MicroVm::new(1 << 20)?;
        vm.load_real_mode(&pio_loop(port, count)?)?;
        vm.run(Duration::from_secs(10))
    };
    match run() {
        Ok(stats) => {
            println!(
                "pio_exits={} mmio_exits={} hlt={} kvm_runs={} elapsed_ms={:.1}",
                stats.pio_exits,
                stats.mmio_exits,
                stats.hlt,
                stats.kvm_runs,
                stats.elapsed.as_secs_f64() * 1e3
            );
            for (port, n) in &stats.ports {
                println!("port {port:#x}: {n}");
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("pio_guest: {e}");
            ExitCode::FAILURE
        }
    }
}

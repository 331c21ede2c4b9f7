//! Prints the IO-path table (delivery modes × queue depths) measured on this host:
//! `cargo run --release -p virtlens-host --example io_path_table [batches]`.
//! Counts are exact; times are one run each (preliminary: medians over interleaved runs are
//! for the `lab io_path` scenario).

use std::time::Duration;

use virtlens_host::lab::io_path::{self, Config, Delivery};

fn main() {
    let batches: u32 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(200);
    println!(
        "mode        qd  k   VMM returns/IO  guest irqs/IO  kvm exits/IO  ns/IO      vCPU CPU ns/IO  device CPU ns/IO  ceiling IOPS/vCPU"
    );
    for d in Delivery::ALL {
        for qd in [1u32, 4, 16, 128] {
            let c = Config {
                delivery: d,
                qd,
                coalesce: 1,
                batches: batches.max(1) * 4 / qd.min(4),
                x2apic_eoi: false,
            };
            match io_path::run(&c, Duration::from_secs(30)) {
                Ok(m) => {
                    let n = m.ios as f64;
                    let cpu = m.vcpu_cpu_ns as f64 / n;
                    println!(
                        "{:<10} {:>3} {:>2} {:>15.2} {:>14.2} {:>13.2} {:>9.0} {:>15.0} {:>17.0} {:>18.0}",
                        d.name(),
                        qd,
                        1,
                        m.vmm_returns as f64 / n,
                        m.guest_interrupts as f64 / n,
                        m.kvm("exits").unwrap_or(0) as f64 / n,
                        m.wall_ns as f64 / n,
                        cpu,
                        m.device_cpu_ns as f64 / n,
                        1e9 / cpu.max(1.0)
                    );
                }
                Err(e) => println!("{:<10} {:>3}: {e}", d.name(), qd),
            }
        }
    }
}

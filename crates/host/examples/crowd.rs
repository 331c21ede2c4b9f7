//! Crowds this host with K busy micro-VM vCPUs (threads named `CPU n/KVM`, ring-3 compute) for
//! S seconds, to watch over-commit with `virtlens top --pid PID` or `virtlens diagnose --live
//! --pid PID`: `cargo run --release -p virtlens-host --example crowd -- K [S]` (default: three
//! per online CPU, 10 s). Prints its pid once every vCPU exists.

use std::time::Duration;

use virtlens_host::lab::Busy;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get()) as u32;
    let mut args = std::env::args().skip(1);
    let k = args.next().map_or(Ok(3 * cpus), |a| a.parse())?;
    let secs: f64 = args.next().map_or(Ok(10.0), |a| a.parse())?;
    let busy = Busy::start(k, None)?;
    println!(
        "pid {}: {k} busy vCPUs on {cpus} CPUs for {secs} s",
        std::process::id()
    );
    std::thread::sleep(Duration::from_secs_f64(secs));
    let runs = busy.stop()?;
    println!("runs per vCPU: {runs:?}");
    Ok(())
}

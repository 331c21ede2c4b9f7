//! Prints the KVM statistics per operation of every exit test in one mode (for checking what
//! the tests assert): `cargo run --release -p virtlens-host --example lab_stats MODE`.

use virtlens_core::measure::Mode;
use virtlens_host::lab;

fn main() {
    let mode = std::env::args()
        .nth(1)
        .and_then(|m| Mode::from_name(&m))
        .unwrap_or(Mode::User64);
    let opts = lab::Options {
        modes: vec![mode],
        rounds: 2,
        ops: Some(100),
        ..lab::Options::exitcost()
    };
    for t in lab::run_exitcost(&opts, &mut |_| {}).tests {
        let stats: Vec<String> = t
            .stats_per_op
            .iter()
            .map(|(k, v)| format!("{k}={v:.3}"))
            .collect();
        println!("{:18} {:11} {}", t.name, t.status.as_str(), stats.join(" "));
    }
}

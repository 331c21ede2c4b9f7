//! Runs `virtlens lab --quick` without the CLI and prints each result on one line (for
//! developing the lab: `cargo run --release -p virtlens-host --example lab_smoke [MODE]`).

use virtlens_core::measure::Mode;
use virtlens_host::lab;

fn main() {
    let mut opts = lab::Options::lab(true);
    if let Some(mode) = std::env::args().nth(1).and_then(|m| Mode::from_name(&m)) {
        opts.modes = vec![mode];
    }
    let r = lab::run_lab(&opts, &mut |_| {});
    println!("backend {:?}", r.backend);
    for t in &r.tests {
        println!(
            "{:8} {:18} {:11} median {:>10.0?} gross {:>10.0?} spread {:>5.1?} ops {:>8} user/op {:.3?} {:?}",
            t.mode.as_str(),
            t.name,
            t.status.as_str(),
            t.median_ns,
            t.gross_median_ns,
            t.spread_pct,
            t.ops_per_run,
            t.userspace_exits_per_op,
            t.reason
        );
    }
    for s in &r.scenarios {
        for v in std::iter::once(&s.trap).chain([&s.fixed]).chain(&s.also) {
            println!(
                "{:16} {:18} {:11} ns/op {:>10.0?} exits/op {:.4?} user/op {:.4?} {:?}",
                s.name,
                v.name,
                v.status.as_str(),
                v.ns_per_op,
                v.exits_per_op,
                v.userspace_exits_per_op,
                v.reason
            );
        }
    }
    println!("wall {:.1} s", r.recorded.wall_s);
}

//! Text output of `load` and `bench`: aligned, plain (the guest binary carries no colour or
//! table crates). Numbers are formatted here and nowhere else in the crate.

use std::fmt::Write;

use crate::schema::{BenchReport, LoadReport};
use crate::stats::num;

/// `virtlens load` as text.
pub fn load(r: &LoadReport) -> String {
    let o = &r.options;
    let mut s = String::new();
    let work = match o.duration_s {
        Some(d) => format!("for {} s", num(d)),
        None => format!("{} tasks × {} iterations", o.tasks, o.iterations),
    };
    let _ = writeln!(
        s,
        "load: {work}, {} workers on {} CPUs, {} MiB per task, contention {}, io wait {} ms (cv {}), seed {}",
        o.workers,
        r.cpus,
        o.footprint_mb,
        num(o.contention),
        num(o.io_wait_ms),
        num(o.io_wait_cv),
        o.seed
    );
    if let Some(h) = &r.hypervisor_vendor {
        let _ = writeln!(s, "hypervisor: {h}");
    }
    let l = &r.latency_ms;
    let _ = writeln!(s, "elapsed          {} s", num(r.elapsed_s));
    let _ = writeln!(
        s,
        "tasks            {} ({} /s)",
        r.tasks_done,
        num(r.tasks_per_s)
    );
    let _ = writeln!(
        s,
        "task latency     p50 {}  p90 {}  p99 {}  max {} ms",
        num(l.p50),
        num(l.p90),
        num(l.p99),
        num(l.max)
    );
    let _ = writeln!(
        s,
        "cpu              user {} s  sys {} s",
        num(r.cpu.user_s),
        num(r.cpu.sys_s)
    );
    let _ = writeln!(
        s,
        "context switches {} voluntary, {} involuntary",
        r.cpu.voluntary_switches, r.cpu.involuntary_switches
    );
    let steal = r
        .steal_pct
        .map_or("unknown".into(), |p| format!("{} %", num(p)));
    let _ = writeln!(s, "steal            {steal}");
    match &r.run_queue {
        Some(q) => {
            let _ = writeln!(
                s,
                "run queue        workers ran {} s, waited {} s: ready {} %",
                num(q.run_s),
                num(q.wait_s),
                num(q.ready_pct)
            );
        }
        None => {
            let _ = writeln!(s, "run queue        unknown (no schedstat in this kernel)");
        }
    }
    s
}

/// `virtlens bench` as text.
pub fn bench(r: &BenchReport) -> String {
    let f = &r.fingerprint;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "bench: layer {:?}, {} runs{} in {} s",
        r.layer,
        r.recorded.runs,
        if r.recorded.quick { " (quick)" } else { "" },
        num(r.recorded.wall_s)
    );
    let hv = f
        .hypervisor_vendor
        .as_deref()
        .unwrap_or(if f.hypervisor_bit { "unknown" } else { "none" });
    let _ = writeln!(
        s,
        "hypervisor {hv}; {} CPUs; clocksource {} (available: {}); steal {}",
        f.cpus,
        f.clocksource.as_deref().unwrap_or("?"),
        f.clocksources_available.join(" "),
        f.steal_pct.map_or("?".into(), |p| format!("{} %", num(p)))
    );
    for hint in &f.nested_hints {
        let _ = writeln!(s, "nested: {hint}");
    }
    let _ = writeln!(s);
    let _ = writeln!(
        s,
        "{:<30} {:>10} {:>10} {:>10} {:>8}  detail",
        "measure", "median", "q1", "q3", "unit"
    );
    for m in &r.measures {
        let (med, q1, q3) = m.spread.map_or(("-".into(), "-".into(), "-".into()), |sp| {
            let (lo, hi) = sp.band();
            (num(sp.median), num(lo), num(hi))
        });
        let mut detail: Vec<String> = m.detail.iter().map(|(k, v)| format!("{k}={v}")).collect();
        if let Some(c) = m.check {
            detail.push(format!(
                "answer {} ({})",
                c.got,
                if c.ok { "checked" } else { "WRONG" }
            ));
        }
        let _ = writeln!(
            s,
            "{:<30} {med:>10} {q1:>10} {q3:>10} {:>8}  {}",
            m.name,
            m.unit,
            detail.join(", ")
        );
    }
    for k in &r.skipped {
        let _ = writeln!(s, "{:<30} not measured: {}", k.name, k.why);
    }
    for fnd in &r.findings {
        let _ = writeln!(s, "\nfinding {}: {}", fnd.id, fnd.text);
    }
    s
}

/// The end line of `virtlens workload`.
pub fn workload(kind: crate::workload::Kind, d: &crate::workload::Done) -> String {
    format!(
        "workload {}: {} operations in {} s ({}/s)\n",
        kind.name(),
        d.operations,
        num(d.seconds),
        num(d.operations as f64 / d.seconds.max(1e-9))
    )
}

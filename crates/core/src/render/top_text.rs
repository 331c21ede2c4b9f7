//! `virtlens top`: the live view's data ([`TopView`], filled by the live capture, which does
//! the arithmetic) and its text screen: a header with the interval, events, lost events and
//! the backend, then per VM its busiest reasons (exit reasons, ports, MMIO addresses, MSRs,
//! returns to the VMM, other events) with rates and, where durations exist, the share of the
//! VM's handled time, and its KVM statistics counters per second.

use comfy_table::{CellAlignment, Table as Grid, presets};
use serde::Serialize;

use super::Style;
use super::diagnose_numbers::sched_line;
use super::format;
use crate::analysis::sched::SchedSummary;

/// The version of the `top --json` schema.
pub const SCHEMA: &str = "virtlens.top/1";

/// One refresh of `top`.
#[derive(Debug, Clone, Default, Serialize)]
pub struct TopView {
    pub schema: String,
    /// The length of this interval, and the time since `top` started.
    pub interval_s: f64,
    pub elapsed_s: f64,
    pub events: u64,
    pub events_per_s: f64,
    pub lost: u64,
    pub backend: Option<String>,
    /// The software that emulates the host's CPU (QEMU TCG), when it is emulated: the times
    /// shown are then the emulator's, not hardware exit costs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpu_emulator: Option<String>,
    pub notes: Vec<String>,
    pub vms: Vec<TopVm>,
    /// The vCPU threads' scheduling over the interval (ready % per VM and vCPU), when sampled.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sched: Option<SchedSummary>,
}

/// One VM (VMM process), or events of threads that belong to no VMM (`pid` empty).
#[derive(Debug, Clone, Default, Serialize)]
pub struct TopVm {
    pub pid: Option<u32>,
    pub name: Option<String>,
    pub events_per_s: f64,
    pub rows: Vec<TopRow>,
    /// KVM binary statistics that moved, per second (summed over vCPUs).
    pub counters: Vec<TopCounter>,
}

/// One reason or event of a VM.
#[derive(Debug, Clone, Default, Serialize)]
pub struct TopRow {
    /// `exit`, `port`, `mmio`, `msr`, `to-vmm`, `hypercall` or `event`.
    pub kind: String,
    /// The exit reason, `0x3f8 out`, `0xfee00030 write`, the event name….
    pub key: String,
    /// What the port, address or MSR is, when known.
    pub name: Option<String>,
    pub count: u64,
    pub per_s: f64,
    /// Share of the VM's handled time (perf's Time%), where durations exist.
    pub time_share: Option<f64>,
    pub mean_ns: Option<f64>,
}

/// One KVM statistics counter.
#[derive(Debug, Clone, Default, Serialize)]
pub struct TopCounter {
    pub name: String,
    pub per_s: f64,
}

/// The screen for `view`, at most `rows` reasons per VM.
pub(crate) fn render(view: &TopView, style: &Style, rows: usize) -> String {
    let mut out = String::new();
    let mut head = format!(
        "virtlens top · {:.1} s interval · {} events ({}) · {} lost",
        view.interval_s,
        format::count(view.events),
        format::rate(view.events_per_s),
        format::count(view.lost)
    );
    if let Some(b) = &view.backend {
        head.push_str(&format!(" · backend {b}"));
    }
    if let Some(e) = &view.cpu_emulator {
        head.push_str(&format!(
            " · CPU emulated by {e}: times are the emulator's, not hardware exit costs"
        ));
    }
    out.push_str(&Style::paint(style.title, &head));
    out.push('\n');
    if view.vms.is_empty() {
        out.push_str("no KVM events in this interval\n");
    }
    for vm in &view.vms {
        out.push('\n');
        let who = match (&vm.name, vm.pid) {
            (Some(n), Some(p)) => format!("{n} (pid {p})"),
            (None, Some(p)) => format!("pid {p}"),
            _ => "threads of no VMM".to_string(),
        };
        out.push_str(&Style::paint(
            style.title,
            &format!("{who} · events {}", format::rate(vm.events_per_s)),
        ));
        out.push('\n');
        let timed = vm.rows.iter().any(|r| r.time_share.is_some());
        let mut grid = Grid::new();
        grid.load_style(presets::NOTHING);
        let mut header = vec!["kind", "key", "name", "per second", "count"];
        if timed {
            header.extend(["time%", "mean"]);
        }
        grid.set_header(header);
        for r in vm.rows.iter().take(rows) {
            let mut cells = vec![
                r.kind.clone(),
                r.key.clone(),
                r.name.clone().unwrap_or_default(),
                format::rate(r.per_s),
                format::count(r.count),
            ];
            if timed {
                cells.push(r.time_share.map_or_else(|| "-".into(), format::share));
                cells.push(format::opt_duration(r.mean_ns));
            }
            grid.add_row(cells);
        }
        if !vm.rows.is_empty() {
            push_grid(&mut out, &mut grid, 3..(if timed { 7 } else { 5 }), style);
        }
        if vm.rows.len() > rows {
            out.push_str(&format!("  … {} more\n", vm.rows.len() - rows));
        }
        if !vm.counters.is_empty() {
            let list: Vec<String> = vm
                .counters
                .iter()
                .take(8)
                .map(|c| format!("{} {}", c.name, format::rate(c.per_s)))
                .collect();
            out.push_str(&format!("  KVM stats: {}\n", list.join(" · ")));
        }
    }
    if let Some(sc) = &view.sched {
        out.push('\n');
        out.push_str(&sched_table(sc, style));
    }
    for n in &view.notes {
        out.push_str(&Style::paint(style.note, &format!("note: {n}")));
        out.push('\n');
    }
    out
}

/// Ready % per VM and per vCPU thread: run and ready shares of wall time, wait per dispatch
/// (also what `report` shows of a capture).
pub(crate) fn sched_table(s: &SchedSummary, style: &Style) -> String {
    let mut out = String::new();
    out.push_str(&Style::paint(style.title, &sched_line(s)));
    out.push('\n');
    if s.vms.is_empty() {
        out.push_str("no vCPU threads seen\n");
        return out;
    }
    let mut grid = Grid::new();
    grid.load_style(presets::NOTHING);
    grid.set_header(vec!["VM", "vCPU", "tid", "run", "ready", "wait/dispatch"]);
    for vm in &s.vms {
        let who = match &vm.name {
            Some(n) => format!("{n} (pid {})", vm.pid),
            None => format!("pid {}", vm.pid),
        };
        grid.add_row(vec![
            who,
            "all".into(),
            String::new(),
            format::share(vm.run_share),
            format::share(vm.ready_share),
            String::new(),
        ]);
        for v in &vm.vcpus {
            let t = &v.sampled;
            grid.add_row(vec![
                String::new(),
                t.vcpu.map_or_else(|| t.comm.clone(), |n| n.to_string()),
                t.tid.to_string(),
                format::share(v.run_share),
                format::share(v.ready_share),
                format::opt_duration(v.wait_per_dispatch_ns),
            ]);
        }
    }
    push_grid(&mut out, &mut grid, 2..6, style);
    out
}

/// `grid` with columns `right` right-aligned, its header painted, lines trimmed.
fn push_grid(out: &mut String, grid: &mut Grid, right: std::ops::Range<usize>, style: &Style) {
    for i in right {
        if let Some(c) = grid.column_mut(i) {
            c.set_cell_alignment(CellAlignment::Right);
        }
    }
    for (i, line) in grid.lines().enumerate() {
        let line = line.trim_end();
        if i == 0 {
            out.push_str(&Style::paint(style.header, line));
        } else {
            out.push_str(line);
        }
        out.push('\n');
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_screen_with_one_vm() {
        let view = TopView {
            schema: SCHEMA.into(),
            interval_s: 1.0,
            elapsed_s: 3.0,
            events: 1200,
            events_per_s: 1200.0,
            lost: 0,
            backend: Some("pvm".into()),
            cpu_emulator: None,
            notes: vec!["kvm_exit did not fire".into()],
            vms: vec![TopVm {
                pid: Some(42),
                name: Some("win10".into()),
                events_per_s: 1200.0,
                rows: vec![TopRow {
                    kind: "port".into(),
                    key: "0x70 out".into(),
                    name: Some("rtc-index".into()),
                    count: 1000,
                    per_s: 1000.0,
                    time_share: None,
                    mean_ns: None,
                }],
                counters: vec![TopCounter {
                    name: "exits".into(),
                    per_s: 2000.0,
                }],
            }],
            sched: Some(crate::analysis::sched::summarize(&samples())),
        };
        let text = render(&view, &Style::default(), 10);
        let plain = String::from_utf8_lossy(&strip(text.as_bytes())).into_owned();
        assert!(plain.contains("win10 (pid 42)"), "{plain}");
        assert!(
            plain.contains("0x70 out") && plain.contains("rtc-index"),
            "{plain}"
        );
        assert!(
            plain.contains("1,000/s") && plain.contains("exits 2,000/s"),
            "{plain}"
        );
        assert!(!plain.contains("time%"), "no durations, no time column");
        // Ready % per VM and per vCPU thread.
        assert!(plain.contains("runnable vCPUs per CPU 1.50"), "{plain}");
        let vcpu = plain
            .lines()
            .find(|l| l.contains("4243"))
            .unwrap_or_default();
        assert!(
            vcpu.contains("25.0%") && vcpu.contains("70.0%") && vcpu.contains("7.00 ms"),
            "{plain}"
        );
        let vm = plain
            .lines()
            .find(|l| l.contains("win10 (pid 42)") && l.contains("all"));
        assert!(vm.is_some_and(|l| l.contains("70.0%")), "{plain}");
    }

    fn samples() -> crate::profile::SchedSamples {
        use crate::profile::sched::{SchedInterval, SchedSamples, VcpuSched};
        let vcpu = |tid, vcpu| VcpuSched {
            pid: 42,
            tid,
            vcpu: Some(vcpu),
            comm: format!("CPU {vcpu}/KVM"),
            wall_ns: 1_000_000_000,
            run_ns: 250_000_000,
            wait_ns: 700_000_000,
            dispatches: 100,
            samples: 20,
            runnable_samples: 20,
        };
        let mut s = SchedSamples {
            online_cpus: 2,
            window_ns: 1_000_000_000,
            state_samples: 20,
            vcpus: vec![vcpu(4242, 0), vcpu(4243, 1), vcpu(4244, 2)],
            ..SchedSamples::default()
        };
        s.vm_names.insert(42, "win10".into());
        s.push_interval(SchedInterval {
            duration_ns: 1_000_000_000,
            state_samples: 20,
            runnable: 60,
            ..SchedInterval::default()
        });
        s
    }

    fn strip(b: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        let mut esc = false;
        for &c in b {
            if c == 0x1b {
                esc = true;
            } else if esc {
                esc = !c.is_ascii_alphabetic();
            } else {
                out.push(c);
            }
        }
        out
    }
}

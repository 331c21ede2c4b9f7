//! Storage through fio and network through iperf3, when they are installed: the suite runs
//! them with JSON output and reads the figures that matter from it (fio: IOPS and mean
//! completion latency per job and direction; iperf3: received throughput and the sender's CPU
//! use), one sample per run.

use std::process::Command;

use serde_json::Value;

use super::Probe;
use crate::schema::{Better, Measure};

fn run_json(program: &str, args: &[String]) -> Result<Value, String> {
    let out = Command::new(program)
        .args(args)
        .output()
        .map_err(|e| format!("{program} could not be started: {e}"))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        return Err(format!("{program} failed ({}): {}", out.status, err.trim()));
    }
    // fio may print notes before its JSON.
    let text = String::from_utf8_lossy(&out.stdout);
    let json = text.find('{').map_or("", |i| &text[i..]);
    serde_json::from_str(json).map_err(|e| format!("{program}'s JSON output: {e}"))
}

/// Whether `program` can be run.
pub(super) fn installed(program: &str) -> bool {
    Command::new(program)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// fio, with the user's job arguments.
pub(super) struct Fio {
    args: Vec<String>,
    names: Vec<(String, &'static str, &'static str, Better)>,
}

/// The fio figures of one job and direction: (measure suffix, json key, unit, better).
const FIO_FIGURES: [(&str, &str, Better); 2] = [
    ("iops", "IOPS", Better::Higher),
    ("clat_mean_us", "us", Better::Lower),
];

/// The `(measure name, value)` pairs of a fio JSON document.
pub fn fio_figures(doc: &Value) -> Vec<(String, f64)> {
    let mut out = Vec::new();
    for job in doc["jobs"].as_array().into_iter().flatten() {
        let name = job["jobname"].as_str().unwrap_or("job");
        for dir in ["read", "write", "trim"] {
            let d = &job[dir];
            if d["total_ios"].as_u64().unwrap_or(0) == 0 {
                continue;
            }
            if let Some(iops) = d["iops"].as_f64() {
                out.push((format!("fio.{name}.{dir}.iops"), iops));
            }
            if let Some(ns) = d["clat_ns"]["mean"].as_f64() {
                out.push((format!("fio.{name}.{dir}.clat_mean_us"), ns / 1e3));
            }
        }
    }
    out
}

impl Fio {
    /// Runs fio once to learn which jobs and directions it reports.
    pub(super) fn new(args: &str) -> Result<(Self, Vec<f64>), String> {
        let mut args: Vec<String> = args.split_whitespace().map(str::to_string).collect();
        args.push("--output-format=json".into());
        let first = fio_figures(&run_json("fio", &args)?);
        if first.is_empty() {
            return Err("fio reported no IOs".into());
        }
        let names = first
            .iter()
            .map(|(n, _)| {
                let (_, unit, better) = FIO_FIGURES
                    .iter()
                    .find(|(suffix, _, _)| n.ends_with(suffix))
                    .copied()
                    .unwrap_or(("", "", Better::Higher));
                (n.clone(), unit, "fio job figure", better)
            })
            .collect();
        let values = first.into_iter().map(|(_, v)| v).collect();
        Ok((Fio { args, names }, values))
    }
}

impl Probe for Fio {
    fn measures(&self) -> Vec<Measure> {
        self.names
            .iter()
            .map(|(n, unit, what, better)| {
                Measure::new(n, what, unit, *better, Vec::new()).with("fio", self.args.join(" "))
            })
            .collect()
    }

    fn sample(&mut self) -> Result<Vec<f64>, String> {
        let figures = fio_figures(&run_json("fio", &self.args)?);
        self.names
            .iter()
            .map(|(n, ..)| {
                figures
                    .iter()
                    .find(|(m, _)| m == n)
                    .map(|(_, v)| *v)
                    .ok_or_else(|| format!("fio stopped reporting {n}"))
            })
            .collect()
    }
}

/// The received throughput (MB/s) and the sender's CPU use (%) of an iperf3 `-J` document.
pub fn iperf3_figures(doc: &Value) -> Option<(f64, Option<f64>)> {
    let end = &doc["end"];
    let bps = end["sum_received"]["bits_per_second"]
        .as_f64()
        .or_else(|| end["sum"]["bits_per_second"].as_f64())?;
    Some((
        bps / 8e6,
        end["cpu_utilization_percent"]["host_total"].as_f64(),
    ))
}

/// iperf3 against a server.
pub(super) struct Iperf3 {
    args: Vec<String>,
}

impl Iperf3 {
    pub(super) fn new(host: &str, quick: bool) -> Self {
        let secs = if quick { "2" } else { "5" };
        Iperf3 {
            args: ["-c", host, "-J", "-t", secs].map(str::to_string).to_vec(),
        }
    }
}

impl Probe for Iperf3 {
    fn measures(&self) -> Vec<Measure> {
        let target = self.args.get(1).cloned().unwrap_or_default();
        vec![
            Measure::new(
                "net.iperf3",
                "TCP throughput received",
                "MB/s",
                Better::Higher,
                Vec::new(),
            )
            .with("server", target.clone()),
            Measure::new(
                "net.iperf3_cpu",
                "sender CPU use during the transfer",
                "%",
                Better::Lower,
                Vec::new(),
            )
            .with("server", target),
        ]
    }

    fn sample(&mut self) -> Result<Vec<f64>, String> {
        let doc = run_json("iperf3", &self.args)?;
        let (mbs, cpu) = iperf3_figures(&doc).ok_or("iperf3 reported no throughput")?;
        Ok(vec![mbs, cpu.unwrap_or(f64::NAN)])
    }
}

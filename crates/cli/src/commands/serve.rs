//! `virtlens serve [--listen 127.0.0.1:9815] [--interval S] [--vm NAME|--pid PID] [--no-bpf]`:
//! the Prometheus exporter. Once /metrics answers it says where, and where its counts come
//! from (in-kernel aggregation, or the tracefs capture and why), on stderr (as one JSON
//! object on stdout with `--json`); it runs until SIGINT/SIGTERM/SIGHUP.

use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use virtlens_host::bpf::Limits;
use virtlens_host::capture::{ReadyFd, StopSignals};
use virtlens_host::serve::{self, ServeOptions, Started};

use super::record::options;
use crate::args::ServeArgs;
use crate::output;

/// The schema of the `--json` start line.
const SCHEMA: &str = "virtlens.serve/1";

fn seconds(name: &str, s: f64) -> anyhow::Result<Duration> {
    if s.is_finite() && s >= 0.0 {
        Ok(Duration::from_secs_f64(s))
    } else {
        anyhow::bail!("--{name} must be a number of seconds >= 0, not {s}")
    }
}

pub fn run(a: &ServeArgs) -> anyhow::Result<ExitCode> {
    let mut ready_fd = a.live.ready_fd.map(ReadyFd::take).transpose()?;
    let interval = seconds("interval", a.interval)?;
    if interval.is_zero() {
        anyhow::bail!("--interval must be more than 0 seconds");
    }
    let opts = ServeOptions {
        listen: a.listen,
        interval,
        top: a.top,
        max_vms: a.max_vms,
        keep_gone: seconds("keep-gone", a.keep_gone)?,
        window: seconds("window", a.window)?,
        bpf: !a.no_bpf,
        limits: Limits::default(),
        capture: options(&a.live)?,
        qmp: a.qmp.clone(),
        bpf_stats: a.bpf_stats,
    };
    let signals = StopSignals::install().context("installing the SIGINT/SIGTERM handlers")?;
    let json = a.json;
    let mut started = |s: &Started| {
        if let Some(fd) = ready_fd.take() {
            fd.signal();
        }
        let url = format!("http://{}/metrics", s.addr);
        if json {
            let v = serde_json::json!({
                "schema": SCHEMA,
                "listen": s.addr.to_string(),
                "url": url,
                "source": s.source,
                "notes": s.notes,
            });
            output::print(&format!("{v}\n"));
        } else {
            let mut text = format!(
                "virtlens serve: metrics at {url} (counts from {})\n",
                s.source
            );
            if !s.addr.ip().is_loopback() {
                text.push_str(
                    "note: the address is not loopback: whoever reaches it can read these metrics\n",
                );
            }
            for n in &s.notes {
                text.push_str(&format!("note: {n}\n"));
            }
            eprint!("{text}");
        }
    };
    serve::serve(&opts, signals.flag(), &mut started)?;
    Ok(ExitCode::SUCCESS)
}

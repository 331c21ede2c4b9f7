//! `virtlens diagnose FILE… [--config FILE] [--guest …] [--host-…] [--qemu-version X.Y]
//! [--window SECONDS] [--vcpus N] [--iops N | --fio FILE.json] [--json] [--fail-on SEVERITY]`:
//! reads every input `report` reads, diagnoses it (joined with the
//! configuration when given, compared when there are several inputs), prints the answer, and
//! exits 1 when a finding is at or above `--fail-on` (default high), 2 on bad input.
//!
//! [`finish`] takes profiles from any source, so a live capture goes through the same path.

use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use anyhow::Context;
use virtlens_core::analysis::{Filter, apply_filter};
use virtlens_core::config::{self, Format, GuestFamily, ReadOptions, Version, VmConfig};
use virtlens_core::diagnose;
use virtlens_core::diagnose::{Diagnosis, IoRate};
use virtlens_core::profile::Profile;
use virtlens_core::sources::{CONFIG_CAP, read_capped, read_fio_json};
use virtlens_host::capture::{self, CaptureOptions, Control, Ready, ReadyFd, StopSignals};

use super::{inputs, lint};
use crate::args::{ConfigFormatArg, DiagnoseArgs, GuestArg};
use crate::output::{self, OutputOptions};

pub fn run(a: &DiagnoseArgs) -> anyhow::Result<ExitCode> {
    // The page's file is checked before a live capture starts.
    let out = OutputOptions::with_html(a.input.json, &a.page)?;
    let profiles = if a.live {
        vec![live(a)?]
    } else {
        inputs::profiles(&a.files, &a.input)?
    };
    finish(profiles, a, out)
}

/// `--live`: records this host's KVM events for `--duration` seconds, the VM chosen by
/// `--vm`/`--pid` filtered in the kernel, and returns the profile (with the `--vcpu` filter).
fn live(a: &DiagnoseArgs) -> anyhow::Result<Profile> {
    let mut ready_fd = a.ready_fd.map(ReadyFd::take).transpose()?;
    eprintln!(
        "virtlens diagnose: capturing for {} s (Ctrl-C stops early)",
        a.duration
    );
    let signals = StopSignals::install().context("installing the signal handlers")?;
    capture_live(a, signals.flag(), &mut |_| {
        if let Some(fd) = ready_fd.take() {
            fd.signal();
        }
    })
}

/// `--live`'s capture: this host's KVM events for `--duration` seconds (or until `stop` is
/// set), the VM chosen by `--vm`/`--pid` filtered in the kernel, `ready` called when tracing
/// is on; the profile comes back with the `--vcpu` filter applied.
pub fn capture_live(
    a: &DiagnoseArgs,
    stop: &AtomicBool,
    ready: &mut dyn FnMut(&Ready),
) -> anyhow::Result<Profile> {
    let opts = CaptureOptions {
        duration: Some(Duration::from_secs_f64(a.duration)),
        pid: a.input.pid,
        vm: a.input.vm.clone(),
        ..CaptureOptions::default()
    };
    let ctl = Control {
        stop,
        ready,
        progress: &mut |_| {},
    };
    let profile = capture::record_profile(&opts, ctl)?;
    let filter = Filter {
        vcpu: a.input.vcpu,
        ..Filter::default()
    };
    Ok(apply_filter(profile, &filter))
}

/// Diagnoses `profiles` (read from files, or captured live) with the options of `a`, prints
/// the result and returns the exit code.
pub fn finish(
    profiles: Vec<Profile>,
    a: &DiagnoseArgs,
    out: OutputOptions,
) -> anyhow::Result<ExitCode> {
    let d = build(&profiles, a, None)?;
    output::emit(&d, out)?;
    let at = a.fail_on.severity();
    Ok(if d.fails(at) {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// The diagnosis of `profiles` (read from files, given as text, or captured live) with the
/// options of `a`: its configuration (`config_text`, else `--config`), host facts, window,
/// vCPUs and IO rate.
pub fn build(
    profiles: &[Profile],
    a: &DiagnoseArgs,
    config_text: Option<&str>,
) -> anyhow::Result<Diagnosis> {
    let decoder = inputs::decoder(&a.input)?;
    let h = &a.host;
    let mut host = lint::host_facts_from(
        h.host_facts,
        h.host_vendor,
        h.host_apicv,
        h.host_clocksource.as_deref(),
    );
    if let Some(k) = &h.host_kernel {
        host.kernel = Some(k.clone());
    }
    if let Some(m) = &h.host_cpu {
        host.cpu_model = Some(m.clone());
        host.cpu_emulator = virtlens_core::cpu_emulator(Some(m), None);
    }
    let qemu_version = a
        .qemu_version
        .as_deref()
        .map(|s| {
            Version::parse(s)
                .with_context(|| format!("--qemu-version `{s}`: expected X.Y (e.g. 8.2)"))
        })
        .transpose()?;
    if let Some(w) = a.window
        && !(w.is_finite() && w > 0.0 && w <= 31_536_000.0)
    {
        anyhow::bail!("--window must be a number of seconds above 0 (at most a year), not {w}");
    }
    let configs = read_config(a, &host, config_text)?;
    let io = io_rate(a)?;
    let mut d = diagnose::diagnose(
        profiles,
        configs.first(),
        &decoder,
        &diagnose::Options {
            guest: a.guest.map(|g| match g {
                GuestArg::Windows => GuestFamily::Windows,
                GuestArg::Linux => GuestFamily::Linux,
            }),
            host,
            qemu_version,
            window_s: a.window,
            vcpus: a.vcpus,
            io,
            symbols: inputs::guest_symbols(&a.guest_code)?,
        },
    );
    if configs.len() > 1 {
        d.notes.push(format!(
            "the configuration holds {} documents; document 1 was used",
            configs.len()
        ));
    }
    Ok(d)
}

/// The IO rate of `--iops` or `--fio`.
fn io_rate(a: &DiagnoseArgs) -> anyhow::Result<Option<IoRate>> {
    if let Some(n) = a.iops {
        if !(n.is_finite() && n > 0.0) {
            anyhow::bail!("--iops must be a number of IOs per second above 0, not {n}");
        }
        return Ok(Some(IoRate {
            iops: n,
            basis: "option",
            fio: None,
        }));
    }
    let Some(path) = &a.fio else {
        return Ok(None);
    };
    // Capped like every side input (repro A3: `--fio /dev/zero` grew to 24 GB).
    let bytes = read_capped(path, CONFIG_CAP, "fio JSON result")
        .with_context(|| format!("--fio {}", path.display()))?;
    let run = read_fio_json(&bytes, &path.display().to_string())?;
    if run.iops <= 0.0 {
        anyhow::bail!("{}: fio reports no IO (0 IOPS)", path.display());
    }
    Ok(Some(IoRate {
        iops: run.iops,
        basis: "fio",
        fio: Some(run),
    }))
}

fn read_config(
    a: &DiagnoseArgs,
    host: &virtlens_core::HostFacts,
    text: Option<&str>,
) -> anyhow::Result<Vec<VmConfig>> {
    let format = a.config_format.map(|f| match f {
        ConfigFormatArg::Libvirt => Format::Libvirt,
        ConfigFormatArg::Qemu => Format::Qemu,
        ConfigFormatArg::Proxmox => Format::Proxmox,
    });
    let options = ReadOptions {
        format,
        host_vendor: host.vendor.clone(),
    };
    let (configs, name) = match (text, &a.config) {
        (Some(t), _) => {
            if t.len() as u64 > CONFIG_CAP {
                anyhow::bail!(
                    "config text: {} bytes; a VM configuration may weigh at most {CONFIG_CAP}",
                    t.len()
                );
            }
            (
                config::read_bytes(t.as_bytes(), "config text", &options)?,
                "config text".to_string(),
            )
        }
        (None, Some(path)) => (
            config::read_path(path, &options)?,
            path.display().to_string(),
        ),
        (None, None) => return Ok(Vec::new()),
    };
    if configs.is_empty() {
        anyhow::bail!("{name}: no VM configuration found");
    }
    Ok(configs)
}

//! `virtlens lint FILE [--guest …] [--host-vendor …] [--host-apicv on|off] [--host-facts auto]
//! [--recommend PRESET] [--json] [--fail-on SEVERITY]`: reads a libvirt domain XML, a QEMU
//! command line or a Proxmox config, lints it with the host facts given (or probed), and exits
//! 1 when a finding is at or above `--fail-on`, 2 when the input cannot be read.

use std::process::ExitCode;

use anyhow::Context;
use virtlens_core::config::{self, Format, GuestFamily, ReadOptions, Version};
use virtlens_core::lint::{self, LintReport, Preset, recommend};
use virtlens_core::sources::CONFIG_CAP;
use virtlens_core::{HostFacts, Vendor};

use crate::args::{
    ConfigFormatArg, GuestArg, HostFactsArg, LintArgs, OnOffArg, PresetArg, VendorArg,
};
use crate::output::{self, OutputOptions};

pub fn run(a: &LintArgs) -> anyhow::Result<ExitCode> {
    let report = build(a, None)?;
    output::emit(&report, OutputOptions::with_html(a.json, &a.page)?)?;
    Ok(if report.fails(a.fail_on.severity()) {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// The lint report of `text` (a configuration given as text, named `text`) or else of the
/// file of `a`, with the host facts, versions and preset of `a`.
pub fn build(a: &LintArgs, text: Option<&str>) -> anyhow::Result<LintReport> {
    let host = host_facts(a);
    let version = |v: &Option<String>, what: &str| -> anyhow::Result<Option<Version>> {
        v.as_deref()
            .map(|s| {
                Version::parse(s)
                    .with_context(|| format!("--{what}-version `{s}`: expected X.Y (e.g. 8.2)"))
            })
            .transpose()
    };
    let options = lint::Options {
        host: host.clone(),
        guest: a.guest.map(|g| match g {
            GuestArg::Windows => GuestFamily::Windows,
            GuestArg::Linux => GuestFamily::Linux,
        }),
        migratable: a.migratable,
        overcommitted: a.overcommitted,
        nested_workload: a.nested_workload,
        ipi_heavy: a.ipi_heavy,
        qemu_version: version(&a.qemu_version, "qemu")?,
        libvirt_version: version(&a.libvirt_version, "libvirt")?,
    };
    let format = match (a.format, a.qemu_args) {
        (_, true) | (Some(ConfigFormatArg::Qemu), _) => Some(Format::Qemu),
        (Some(ConfigFormatArg::Libvirt), _) => Some(Format::Libvirt),
        (Some(ConfigFormatArg::Proxmox), _) => Some(Format::Proxmox),
        (None, false) => None,
    };
    let read = ReadOptions {
        format,
        host_vendor: host.vendor.clone(),
    };
    let configs = match (text, &a.file) {
        (Some(t), _) => {
            if t.len() as u64 > CONFIG_CAP {
                anyhow::bail!(
                    "text: {} bytes; a VM configuration may weigh at most {CONFIG_CAP}",
                    t.len()
                );
            }
            config::read_bytes(t.as_bytes(), "text", &read)?
        }
        (None, Some(path)) => config::read_path(path, &read)?,
        (None, None) => Vec::new(),
    };
    let mut report = lint::lint(&configs, &options);
    if let Some(p) = a.recommend {
        report.recommendation = Some(recommend(
            preset(p),
            &host,
            options.qemu_version,
            options.libvirt_version,
        ));
    }
    Ok(report)
}

/// Probed facts (with `--host-facts auto`), overridden by the explicit `--host-*` flags.
fn host_facts(a: &LintArgs) -> HostFacts {
    let mut h = host_facts_from(
        a.host_facts,
        a.host_vendor,
        a.host_apicv,
        a.host_clocksource.as_deref(),
    );
    if let Some(k) = &a.host_kernel {
        h.kernel = Some(k.clone());
    }
    h
}

/// Host facts from the `--host-*` options every command shares (lint, diagnose): probed with
/// `--host-facts auto`, then overridden by the explicit flags.
pub(super) fn host_facts_from(
    auto: Option<HostFactsArg>,
    vendor: Option<VendorArg>,
    apicv: Option<OnOffArg>,
    clocksource: Option<&str>,
) -> HostFacts {
    let mut h = match auto {
        Some(HostFactsArg::Auto) => virtlens_host::probe_facts(),
        None => HostFacts::default(),
    };
    if let Some(v) = vendor {
        h.vendor = Some(match v {
            VendorArg::Intel => Vendor::Intel,
            VendorArg::Amd => Vendor::Amd,
        });
    }
    if let Some(x) = apicv {
        let on = matches!(x, OnOffArg::On);
        match h.vendor {
            Some(Vendor::Intel) => h.apicv = Some(on),
            Some(Vendor::Amd | Vendor::Hygon) => h.avic = Some(on),
            _ => {
                h.apicv = Some(on);
                h.avic = Some(on);
            }
        }
    }
    if let Some(cs) = clocksource {
        h.clocksource = Some(cs.to_string());
    }
    h
}

fn preset(p: PresetArg) -> Preset {
    match p {
        PresetArg::WindowsGeneral => Preset::WindowsGeneral,
        PresetArg::IpiHeavy => Preset::IpiHeavy,
        PresetArg::Vdi => Preset::Vdi,
        PresetArg::Nested => Preset::Nested,
        PresetArg::Migration => Preset::Migration,
    }
}

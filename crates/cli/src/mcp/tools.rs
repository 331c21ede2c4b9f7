//! The tools: one per command that answers, each the command's options as input and the
//! command's `--json` output (its schema in docs/schemas) as the structured result. A call
//! parses its arguments as the command line would ([`command_line`]), then runs the same
//! functions the command runs; only the printing differs.

use std::sync::atomic::AtomicBool;

use anyhow::bail;
use serde_json::{Map, Value};
use virtlens_core::render::Export;
#[cfg(target_arch = "x86_64")]
use virtlens_core::render::LabRecording;

use super::command_line::{self, Parsed, Spec};
use super::paths::Roots;
use crate::args::Command;
use crate::commands::{compare, counters, diagnose, inputs, lint, record, report};
#[cfg(target_arch = "x86_64")]
use crate::commands::{exitcost, lab};
use crate::commands::{record_summary, top};

/// One tool.
pub struct Tool {
    pub name: &'static str,
    pub title: &'static str,
    pub description: &'static str,
    /// Its command's options.
    pub spec: Spec,
    /// The JSON Schema of its result.
    pub output_schema: &'static str,
    /// It captures this host's KVM events: offered only with `--allow-live`.
    pub live: bool,
}

/// What `--allow-live` adds to a live tool's description.
pub const LIVE_NOTE: &str = "Live tool: captures this host's KVM events (root, tracefs); \
    needs the server started with `virtlens mcp --allow-live`";

const TEXTS: Option<(&str, &str)> = Some((
    "texts",
    "Inputs given as text instead of files (pasted `perf kvm stat report`, kvm_stat, perf \
     script, dmesg, counter tables, …), read after the files",
));

const INPUT_HIDDEN: &[&str] = &[];

pub const TOOLS: &[Tool] = &[
    Tool {
        name: "report",
        title: "Exit profile report",
        description: "Read exit profiles (perf kvm stat, perf script, trace-cmd, kvm_stat, bcc, \
            perf.data, virtlens captures, …) and return them decoded and ranked, idle apart \
            (`virtlens report --json`).",
        spec: Spec {
            command: "report",
            fixed: &[],
            hidden: INPUT_HIDDEN,
            text: TEXTS,
            required: &[],
            config_text: false,
        },
        output_schema: include_str!("../../../../docs/schemas/virtlens.report/1.json"),
        live: false,
    },
    Tool {
        name: "compare",
        title: "Compare exit profiles",
        description: "Put two or more inputs side by side (the first is the baseline): deltas \
            per key, totals without idle, a verdict (`virtlens compare --json`).",
        spec: Spec {
            command: "compare",
            fixed: &[],
            hidden: INPUT_HIDDEN,
            text: TEXTS,
            required: &[],
            config_text: false,
        },
        output_schema: include_str!("../../../../docs/schemas/virtlens.compare/1.json"),
        live: false,
    },
    Tool {
        name: "diagnose",
        title: "Why is this VM slow",
        description: "Explain an exit profile: findings ranked by cost with evidence, cause, \
            fix (QEMU flags, libvirt XML) and expected effect; the first finding of an input \
            is its main problem. Several inputs are also compared (`virtlens diagnose --json`).",
        spec: Spec {
            command: "diagnose",
            fixed: &[],
            hidden: &["live", "duration"],
            text: TEXTS,
            required: &[],
            config_text: true,
        },
        output_schema: include_str!("../../../../docs/schemas/virtlens.diagnose/2.json"),
        live: false,
    },
    Tool {
        name: "counters",
        title: "Performance counters",
        description: "Analyse Hyper-V/Windows performance counters (typeperf, relog CSV, \
            esxtop -b, pasted counter tables) like PAL does (`virtlens counters --json`).",
        spec: Spec {
            command: "counters",
            fixed: &[],
            hidden: INPUT_HIDDEN,
            text: TEXTS,
            required: &[],
            config_text: false,
        },
        output_schema: include_str!("../../../../docs/schemas/virtlens.counters/1.json"),
        live: false,
    },
    Tool {
        name: "lint",
        title: "Check this configuration",
        description: "Check a VM configuration (libvirt domain XML, QEMU command line, Proxmox \
            config) for Hyper-V enlightenment and performance traps, with fixes; or the \
            recommended set for a workload (`virtlens lint --json`).",
        spec: Spec {
            command: "lint",
            fixed: &[],
            hidden: &[],
            text: Some(("text", "The configuration as text instead of a file")),
            required: &[],
            config_text: false,
        },
        output_schema: include_str!("../../../../docs/schemas/virtlens.lint/1.json"),
        live: false,
    },
    Tool {
        name: "lab",
        title: "Exit costs and traps measured",
        description: "What exits cost on this host and the classic traps against their fixes, \
            measured with micro-VMs on /dev/kvm (minutes; `quick` for less). Without a usable \
            /dev/kvm, or with `offline`, the bundled recording of a development machine, \
            labelled `\"measured\": false` (`virtlens lab --json`).",
        spec: Spec {
            command: "lab",
            fixed: &[],
            hidden: &["replay", "duration"],
            text: None,
            required: &[],
            config_text: false,
        },
        output_schema: include_str!("../../../../docs/schemas/virtlens.lab/2.json"),
        live: false,
    },
    Tool {
        name: "exitcost",
        title: "Exit costs measured",
        description: "What each kind of VM exit costs on this host, measured with micro-VMs on \
            /dev/kvm within a time budget (`virtlens exitcost --json`). Without /dev/kvm it is \
            an error: the `lab` tool returns the bundled recording instead.",
        spec: Spec {
            command: "exitcost",
            fixed: &[],
            hidden: &[],
            text: None,
            required: &[],
            config_text: false,
        },
        output_schema: include_str!("../../../../docs/schemas/virtlens.exitcost/2.json"),
        live: false,
    },
    Tool {
        name: "top_snapshot",
        title: "Live per-VM exit rates",
        description: "One interval of per-VM exit reasons, event rates and vCPU ready % on \
            this host (`virtlens top --once --json`).",
        spec: Spec {
            command: "top",
            fixed: &["--once", "--json"],
            hidden: &["once"],
            text: None,
            required: &[],
            config_text: false,
        },
        output_schema: include_str!("../../../../docs/schemas/virtlens.top/1.json"),
        live: true,
    },
    Tool {
        name: "diagnose_live",
        title: "Diagnose a running VM",
        description: "Capture this host's KVM events for `duration` seconds (the VM chosen by \
            `vm`/`pid`) and diagnose them (`virtlens diagnose --live --json`).",
        spec: Spec {
            command: "diagnose",
            fixed: &["--live"],
            hidden: &["live", "files", "format"],
            text: None,
            required: &[],
            config_text: true,
        },
        output_schema: include_str!("../../../../docs/schemas/virtlens.diagnose/2.json"),
        live: true,
    },
    Tool {
        name: "record",
        title: "Count a running VM's exits",
        description: "Count this host's KVM exits in the kernel for `duration` seconds and \
            return the profile as `report` shows it (`virtlens record --summary --json`); no \
            file is written.",
        spec: Spec {
            command: "record",
            fixed: &["--summary"],
            hidden: &["output", "summary"],
            text: None,
            required: &["duration"],
            config_text: false,
        },
        output_schema: include_str!("../../../../docs/schemas/virtlens.report/1.json"),
        live: true,
    },
];

/// What the calls share: where files may be read, whether live tools run, and the flag that
/// ends a live capture early when the server stops.
pub struct Context {
    pub roots: Roots,
    pub allow_live: bool,
    pub stop: AtomicBool,
}

/// The tool named `name`.
pub fn find(name: &str) -> Option<&'static Tool> {
    TOOLS.iter().find(|t| t.name == name)
}

/// Runs `tool` with `args`: the command's `--json` output, or the error the command gives.
pub fn call(ctx: &Context, tool: &Tool, args: &Map<String, Value>) -> anyhow::Result<String> {
    if tool.live && !ctx.allow_live {
        bail!(
            "{} is a live tool (it captures this host's KVM events); this server was started \
             without --allow-live",
            tool.name
        );
    }
    let parsed = command_line::parse(&tool.spec, args, &ctx.roots)?;
    let Parsed {
        command,
        texts,
        config_text,
        text_only,
    } = parsed;
    let config_text = config_text.as_deref();
    let json = match (tool.name, command) {
        ("report", Command::Report(mut a)) => {
            clear_placeholder(&mut a.files, text_only);
            let p = inputs::read(&a.files, &texts, &a.input)?;
            report::build(&p, &a)?.json()
        }
        ("compare", Command::Compare(mut a)) => {
            clear_placeholder(&mut a.files, text_only);
            let p = inputs::read(&a.files, &texts, &a.input)?;
            compare::build(&p, &a)?.json()
        }
        ("diagnose", Command::Diagnose(mut a)) => {
            clear_placeholder(&mut a.files, text_only);
            let p = inputs::read(&a.files, &texts, &a.input)?;
            diagnose::build(&p, &a, config_text)?.json()
        }
        ("counters", Command::Counters(mut a)) => {
            counters::check(&a)?;
            clear_placeholder(&mut a.files, text_only);
            let p = inputs::read(&a.files, &texts, &a.input)?;
            counters::build(&p, &a)?.json()
        }
        ("lint", Command::Lint(a)) => lint::build(&a, texts.first().map(String::as_str))?.json(),
        #[cfg(target_arch = "x86_64")]
        ("lab", Command::Lab(a)) => match lab::shown(&a, false)? {
            lab::Shown::Measured(r) => r.json(),
            lab::Shown::Recording { report, why } => LabRecording {
                report: &report,
                why: &why,
            }
            .json(),
        },
        #[cfg(target_arch = "x86_64")]
        ("exitcost", Command::Exitcost(a)) => exitcost::measure(&a, false)?.json(),
        ("top_snapshot", Command::Top(a)) => top::snapshot(&a, &ctx.stop)?,
        ("diagnose_live", Command::Diagnose(a)) => {
            let p = diagnose::capture_live(&a, &ctx.stop, &mut |_| {})?;
            diagnose::build(&[p], &a, config_text)?.json()
        }
        ("record", Command::Record(a)) => {
            let opts = record::capture_options(&a)?;
            record_summary::summary(&opts, &ctx.stop, &mut || {})?.json()
        }
        (name, _) => bail!("{name}: the arguments parsed as another command"),
    };
    Ok(json)
}

fn clear_placeholder(files: &mut Vec<std::path::PathBuf>, text_only: bool) {
    if text_only {
        files.clear();
    }
}

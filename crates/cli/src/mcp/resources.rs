//! Resources and prompts: the findings catalogue (docs/findings.md, made by the function that
//! writes that file), a page per finding id, and the format guide (how to collect each input,
//! the sections of the command pages that say it); and the two questions agents are asked.

use rmcp::model::{
    GetPromptResult, Prompt, PromptArgument, PromptMessage, Resource, ResourceContents, Role,
};
use virtlens_core::diagnose::{catalogue, shared_thresholds};
use virtlens_core::lint::RULES;
use virtlens_core::render::{finding_page, findings_md, lint_rule_page};

use crate::help;

/// The catalogue's address.
pub const FINDINGS: &str = "virtlens://findings";
/// A finding's page: this prefix and its id.
pub const FINDING: &str = "virtlens://findings/";
/// The format guide's address.
pub const FORMATS: &str = "virtlens://formats";

const REPORT_MD: &str = include_str!("../../../../docs/report.md");
const COUNTERS_MD: &str = include_str!("../../../../docs/counters.md");

/// Every resource: the catalogue, the guide, and a page per finding id.
pub fn list() -> Vec<Resource> {
    let mut out = vec![
        resource(
            FINDINGS,
            "findings",
            "Every finding id diagnose and lint report: meaning, thresholds, fixes, sources",
        ),
        resource(
            FORMATS,
            "formats",
            "How to collect each input virtlens reads (exit profiles, counters, configurations)",
        ),
    ];
    for e in catalogue() {
        out.push(resource(&format!("{FINDING}{}", e.id), e.id, e.title));
    }
    for r in RULES.iter() {
        out.push(resource(&format!("{FINDING}{}", r.id), r.id, r.checks));
    }
    out
}

fn resource(uri: &str, name: &str, description: &str) -> Resource {
    Resource::new(uri, name)
        .with_description(description)
        .with_mime_type("text/markdown")
}

/// The text of the resource at `uri`, if there is one.
pub fn read(uri: &str) -> Option<ResourceContents> {
    let text = if uri == FINDINGS {
        findings_md(&catalogue(), &shared_thresholds(), &RULES)
    } else if uri == FORMATS {
        formats()
    } else {
        let id = uri.strip_prefix(FINDING)?;
        match catalogue().iter().find(|e| e.id == id) {
            Some(e) => finding_page(e),
            None => lint_rule_page(RULES.iter().find(|r| r.id == id)?),
        }
    };
    Some(ResourceContents::text(text, uri).with_mime_type("text/markdown"))
}

/// The guide: what docs/report.md and docs/counters.md say about collecting inputs, and what
/// `lint --help` says about configurations.
fn formats() -> String {
    let mut out = String::from("# How to collect each input\n\n");
    out.push_str(&section(REPORT_MD, "## Every input format"));
    out.push_str(&section(
        COUNTERS_MD,
        "## Collect the counters virtlens reads (Hyper-V host)",
    ));
    out.push_str(&section(COUNTERS_MD, "## VMware"));
    out.push_str("## VM configurations (`lint`, `diagnose --config`)\n\n");
    out.push_str(help::LINT);
    out.push('\n');
    out
}

/// The section of `page` that starts with the heading `heading`, up to the next of its level.
fn section(page: &str, heading: &str) -> String {
    let Some(at) = page.find(heading) else {
        return String::new();
    };
    let rest = &page[at..];
    let end = rest[heading.len()..]
        .find("\n## ")
        .map_or(rest.len(), |e| e + heading.len() + 1);
    format!("{}\n", rest[..end].trim_end())
}

/// The prompts.
pub fn prompts() -> Vec<Prompt> {
    vec![
        Prompt::new(
            SLOW,
            Some(
                "Why is this VM slow: diagnose an exit profile, explain the main finding and its fix",
            ),
            Some(vec![
                PromptArgument::new("input")
                    .with_description("A file (under the server's roots) or pasted tool output")
                    .with_required(true),
                PromptArgument::new("guest").with_description("windows or linux, if known"),
            ]),
        ),
        Prompt::new(
            CHECK,
            Some(
                "Check this configuration: lint a libvirt XML, QEMU command line or Proxmox config",
            ),
            Some(vec![
                PromptArgument::new("config")
                    .with_description(
                        "A file (under the server's roots) or the configuration's text",
                    )
                    .with_required(true),
            ]),
        ),
    ]
}

const SLOW: &str = "why_is_this_vm_slow";
const CHECK: &str = "check_this_configuration";

/// The prompt `name` with its arguments, if there is one.
pub fn prompt(name: &str, arg: &dyn Fn(&str) -> Option<String>) -> Option<GetPromptResult> {
    let text = match name {
        SLOW => {
            let input = arg("input").unwrap_or_else(|| "(no input given)".to_string());
            let guest = arg("guest")
                .map(|g| format!(" The guest is {g}."))
                .unwrap_or_default();
            format!(
                "My VM is slow. Call the `diagnose` tool on this input (as `files` if it is a \
                 path, else as `texts`).{guest} Explain the first finding of the first input \
                 (its main problem): what it means, the evidence, and the fix as QEMU flags and \
                 libvirt XML, with the expected effect. If a finding's id needs more context, read \
                 the resource {FINDING}<id>. If the input cannot be read, read {FORMATS} and tell \
                 me how to collect one.\n\nInput:\n{input}"
            )
        }
        CHECK => {
            let config = arg("config").unwrap_or_else(|| "(no configuration given)".to_string());
            format!(
                "Check this VM configuration: call the `lint` tool (as `file` if it is a path, \
                 else as `text`). List the findings from the most severe, each with the element \
                 or flag at fault and its fix, and say which need host facts I should give \
                 (host_vendor, host_apicv, host_kernel).\n\nConfiguration:\n{config}"
            )
        }
        _ => return None,
    };
    Some(GetPromptResult::new(vec![PromptMessage::new_text(
        Role::User,
        text,
    )]))
}

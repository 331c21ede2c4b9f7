//! Inputs virtlens does not read, said for what they are: no known format, a VM
//! configuration given as a recording (it goes to `lint` or `--config`), or a document written
//! for people that only quotes a tool's output.

use super::Format;
use crate::error::Error;

pub(super) fn unknown_format(name: &str, head: &[u8]) -> Error {
    let message = match configuration(head) {
        _ if is_document(head) => format!(
            "this is a document (Markdown or HTML), not a tool's output ({})",
            what_is_read()
        ),
        Some(what) => format!(
            "this is {what}, a VM configuration, not a recording of what the VM did: `virtlens \
             lint FILE` checks it, and `virtlens diagnose --config FILE RECORDING` joins it with \
             a recording"
        ),
        None => format!(
            "not a format virtlens reads (looked for: {}); use --format to force one",
            names()
        ),
    };
    Error::Input {
        path: name.to_string(),
        message,
    }
}

/// Whether `head` starts like a document written for people (Markdown, HTML) rather than a
/// tool's output: a format found in it is an example quoted in the text.
fn is_document(head: &[u8]) -> bool {
    let text = String::from_utf8_lossy(head);
    let Some(first) = text.lines().map(str::trim).find(|l| !l.is_empty()) else {
        return false;
    };
    first.starts_with("# ")
        || first.starts_with("## ")
        || first == "---"
        || first.to_ascii_lowercase().starts_with("<!doctype html")
        || first.to_ascii_lowercase().starts_with("<html")
}

/// What configuration `head` is, when it is one: a libvirt domain, a QEMU command line or a
/// Proxmox VM config.
fn configuration(head: &[u8]) -> Option<&'static str> {
    let text = std::str::from_utf8(head)
        .ok()
        .or_else(|| std::str::from_utf8(&head[..head.len().saturating_sub(3)]).ok())?;
    match crate::config::detect::detect(text, "") {
        Ok(crate::config::Format::Libvirt) if text.contains("<domain") => Some("libvirt XML"),
        Ok(crate::config::Format::Proxmox) => Some("a Proxmox VM config"),
        Ok(crate::config::Format::Qemu)
            if text.contains("qemu-system") || text.contains("qemu-kvm") =>
        {
            Some("a QEMU command line")
        }
        _ => None,
    }
}

/// The error for a document in which `quoted` was detected (an example in its text) but the
/// read failed: what virtlens looks for, instead of one format's expectation. Read errors of
/// the file itself stay what they are.
pub(super) fn quoted_format(name: &str, quoted: Format, e: Error) -> Error {
    if matches!(e, Error::Io { .. }) {
        return e;
    }
    Error::Input {
        path: name.to_string(),
        message: format!(
            "this is a document (Markdown or HTML), not a tool's output: it quotes a {} line, \
             but holds no table virtlens can read ({})",
            quoted.name(),
            what_is_read()
        ),
    }
}

/// The format virtlens reads an input starting with `head` as — `forced`, else the one
/// detected — and whether the input is a document that only quotes it (then a failed read is
/// refused as a document: [`quoted_format`]).
pub(super) fn choose(
    forced: Option<Format>,
    head: &[u8],
    name: &str,
) -> Result<(Format, bool), Error> {
    match forced {
        Some(f) => Ok((f, false)),
        None => {
            let f = super::detect(head).ok_or_else(|| unknown_format(name, head))?;
            Ok((f, is_document(head)))
        }
    }
}

/// `capture, perfmon-csv, …`: every format's name.
fn names() -> String {
    Format::ALL.map(Format::name).join(", ")
}

/// What virtlens reads, and where to learn how to collect it.
fn what_is_read() -> String {
    format!(
        "virtlens reads: {}; docs/report.md says how to collect each",
        names()
    )
}

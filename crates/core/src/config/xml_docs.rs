//! Finding the XML documents in a file: one `<domain>`, several concatenated ones (virt-install
//! test output holds the install-time and the final domain), the `<domain>` inside a snapshot
//! or a libvirt status file, or a fragment (`<features>…`, `<hyperv>…`, or `<features/>` and
//! `<clock/>` side by side). Anything else is refused naming what it is (`<network>`,
//! `<domainCapabilities>`, plain text). Parse errors name the line and column and say what was
//! expected.
//!
//! roxmltree checks every attribute of an element against the ones before it (quadratic in the
//! attributes of one element: 100k attributes took 13 s), so a linear pre-scan first refuses
//! elements with more than [`MAX_ATTRIBUTES`].

use roxmltree::{Document, NodeId, ParsingOptions};

use crate::error::{Error, Result};

/// Byte offsets of line starts, for 1-based line numbers of nodes.
pub(super) struct Lines {
    starts: Vec<usize>,
    offset: usize,
}

impl Lines {
    /// Line starts of `text`, whose first line is line `1 + offset` of the file.
    pub(super) fn new(text: &str, offset: usize) -> Lines {
        let mut starts = vec![0];
        starts.extend(text.match_indices('\n').map(|(i, _)| i + 1));
        Lines { starts, offset }
    }

    /// The 1-based file line of byte `pos`.
    pub(super) fn line(&self, pos: usize) -> usize {
        self.starts.partition_point(|&s| s <= pos) + self.offset
    }
}

/// One parsed document, with the file line its text starts on (0-based offset).
pub(super) struct Doc<'a> {
    pub doc: Document<'a>,
    /// The `<domain>` element (the root, or the one inside a snapshot or status file), or the
    /// wrapper of a fragment.
    pub root: NodeId,
    pub line_offset: usize,
    /// The text was a fragment, wrapped in `<domain>` to parse it.
    pub fragment: bool,
}

/// The most attributes one element may have (libvirt's widest element in its whole test suite
/// has 7).
pub(super) const MAX_ATTRIBUTES: usize = 64;

/// Children of `<domain>` (libvirt's formatdomain), and the parts of them the reader looks
/// for anywhere in a fragment: what a fragment may consist of.
const DOMAIN_PARTS: [&str; 44] = [
    "name",
    "uuid",
    "genid",
    "title",
    "description",
    "metadata",
    "maxMemory",
    "memory",
    "currentMemory",
    "blkiotune",
    "memtune",
    "memoryBacking",
    "vcpu",
    "vcpus",
    "iothreads",
    "iothreadids",
    "defaultiothread",
    "cputune",
    "numatune",
    "resource",
    "sysinfo",
    "bootloader",
    "bootloader_args",
    "os",
    "idmap",
    "features",
    "cpu",
    "clock",
    "on_poweroff",
    "on_reboot",
    "on_crash",
    "on_lockfailure",
    "pm",
    "perf",
    "devices",
    "seclabel",
    "keywrap",
    "launchSecurity",
    "throttlegroups",
    "commandline",
    "hyperv",
    "kvm",
    "ioapic",
    "panic",
];

/// Documents that hold a `<domain>`.
const HOLDERS: [&str; 3] = ["domainsnapshot", "domstatus", "domaincheckpoint"];

/// What a root element other than `<domain>` is, for the refusal.
fn what_root(name: &str) -> &'static str {
    match name {
        "network" => "a libvirt network definition",
        "networkport" => "a libvirt network port",
        "domainCapabilities" => "libvirt's domain capabilities, from virsh domcapabilities",
        "capabilities" => "libvirt's host capabilities, from virsh capabilities",
        "pool" => "a libvirt storage pool",
        "volume" => "a libvirt storage volume",
        "secret" => "a libvirt secret",
        "filter" | "filterbinding" => "a libvirt network filter",
        "interface" => "a libvirt host interface",
        "device" => "a libvirt node device",
        "domainsnapshot" | "domaincheckpoint" | "domstatus" => {
            "a libvirt document without a <domain>"
        }
        "VirtualBox" => "a VirtualBox machine definition",
        "Envelope" => "an OVF appliance descriptor",
        "html" => "an HTML page",
        _ => "not a libvirt domain or a part of one",
    }
}

fn refuse_root(input: &str, line: usize, name: &str) -> Error {
    Error::Parse {
        path: input.to_string(),
        line,
        message: format!(
            "the root element is <{name}> ({}); expected a libvirt domain XML (<domain>, or a \
             part of one: <features>, <clock>, <cpu>, <devices>, …)",
            what_root(name)
        ),
    }
}

const WRAP_OPEN: &str = "<domain>";
const WRAP_CLOSE: &str = "</domain>";

fn options<'a>() -> ParsingOptions<'a> {
    ParsingOptions {
        allow_dtd: false,
        nodes_limit: 4_000_000,
        ..ParsingOptions::default()
    }
}

fn to_error(e: &roxmltree::Error, text: &str, input: &str, line_offset: usize) -> Error {
    let pos = e.pos();
    let at_end = matches!(
        e,
        roxmltree::Error::UnexpectedEndOfStream | roxmltree::Error::UnclosedRootNode
    );
    let line = if at_end {
        text.lines().count().max(1)
    } else {
        pos.row as usize
    };
    let message = if at_end {
        format!("{e}; expected the document to continue up to its closing tag")
    } else {
        format!(
            "column {}: {e}; expected well-formed libvirt domain XML",
            pos.col
        )
    };
    Error::Parse {
        path: input.to_string(),
        line: line + line_offset,
        message,
    }
}

/// Calls `each` on every document in `text` in order and collects what it returns.
pub(super) fn each_document<T>(
    text: &str,
    input: &str,
    mut each: impl FnMut(&Doc<'_>, &str) -> Result<T>,
) -> Result<Vec<T>> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let lead = text.trim_start();
    if !lead.starts_with('<') {
        let line = text[..text.len() - lead.len()].matches('\n').count() + 1;
        let start: String = lead.lines().next().unwrap_or("").chars().take(40).collect();
        return Err(Error::Parse {
            path: input.to_string(),
            line,
            message: format!(
                "`{start}` is not XML; expected a libvirt domain XML (or a part of one)"
            ),
        });
    }
    check_attributes(text, input)?;
    let first = match Document::parse_with_options(text, options()) {
        Ok(doc) => {
            let root = doc.root_element();
            let name = root.tag_name().name();
            let lines = Lines::new(text, 0);
            let (node, fragment) = if name == "domain" {
                (root.id(), false)
            } else if let Some(inner) = HOLDERS
                .contains(&name)
                .then(|| {
                    root.children()
                        .find(|n| n.is_element() && n.tag_name().name() == "domain")
                })
                .flatten()
            {
                (inner.id(), false)
            } else if DOMAIN_PARTS.contains(&name) {
                (root.id(), true)
            } else {
                return Err(refuse_root(input, lines.line(root.range().start), name));
            };
            let d = Doc {
                root: node,
                doc,
                line_offset: 0,
                fragment,
            };
            return Ok(vec![each(&d, text)?]);
        }
        Err(e) => e,
    };
    // Several domains one after the other.
    let chunks = split_domains(text);
    if chunks.len() > 1 {
        let mut parsed = Vec::new();
        for (start, chunk) in &chunks {
            match Document::parse_with_options(chunk, options()) {
                Ok(doc) if doc.root_element().tag_name().name() == "domain" => {
                    parsed.push((text[..*start].matches('\n').count(), doc, *chunk));
                }
                _ => {
                    parsed.clear();
                    break;
                }
            }
        }
        if !parsed.is_empty() {
            let mut out = Vec::new();
            for (line_offset, doc, chunk) in parsed {
                let d = Doc {
                    root: doc.root_element().id(),
                    doc,
                    line_offset,
                    fragment: false,
                };
                out.push(each(&d, chunk)?);
            }
            return Ok(out);
        }
    }
    // A fragment with several top-level elements: wrap it (same lines, line 1 shifts columns).
    if !lead.starts_with("<domain") {
        let body = blank_declaration(text);
        let wrapped = format!("{WRAP_OPEN}{body}{WRAP_CLOSE}");
        if let Ok(doc) = Document::parse_with_options(&wrapped, options()) {
            let lines = Lines::new(&wrapped, 0);
            let root = doc.root_element();
            for n in root.children() {
                let line = lines.line(n.range().start);
                if n.is_text() && n.text().is_some_and(|t| !t.trim().is_empty()) {
                    return Err(Error::Parse {
                        path: input.to_string(),
                        line,
                        message: "text outside any element; expected XML elements of a libvirt \
                                  domain"
                            .to_string(),
                    });
                }
                if n.is_element() && !DOMAIN_PARTS.contains(&n.tag_name().name()) {
                    return Err(refuse_root(input, line, n.tag_name().name()));
                }
            }
            let d = Doc {
                root: root.id(),
                doc,
                line_offset: 0,
                fragment: true,
            };
            return Ok(vec![each(&d, &wrapped)?]);
        }
    }
    Err(to_error(&first, text, input, 0))
}

/// Refuses an element with more than [`MAX_ATTRIBUTES`] attributes, in one linear pass over
/// the text (comments, CDATA, processing instructions and quoted values skipped).
fn check_attributes(text: &str, input: &str) -> Result<()> {
    let b = text.as_bytes();
    let mut i = 0;
    let mut line = 1;
    let skip_to = |i: &mut usize, line: &mut usize, end: &[u8]| {
        while *i < b.len() && !b[*i..].starts_with(end) {
            if b[*i] == b'\n' {
                *line += 1;
            }
            *i += 1;
        }
        *i += end.len();
    };
    while i < b.len() {
        match b[i] {
            b'\n' => {
                line += 1;
                i += 1;
            }
            b'<' if b[i..].starts_with(b"<!--") => skip_to(&mut i, &mut line, b"-->"),
            b'<' if b[i..].starts_with(b"<![CDATA[") => skip_to(&mut i, &mut line, b"]]>"),
            b'<' if b[i..].starts_with(b"<?") => skip_to(&mut i, &mut line, b"?>"),
            b'<' => {
                let start = line;
                let mut attributes = 0usize;
                let mut quote = None;
                i += 1;
                while i < b.len() {
                    let c = b[i];
                    match (quote, c) {
                        (_, b'\n') => line += 1,
                        (Some(q), _) if c == q => quote = None,
                        (Some(_), _) => {}
                        (None, b'"' | b'\'') => quote = Some(c),
                        (None, b'=') => attributes += 1,
                        (None, b'>') => break,
                        _ => {}
                    }
                    i += 1;
                }
                if attributes > MAX_ATTRIBUTES {
                    return Err(Error::Parse {
                        path: input.to_string(),
                        line: start,
                        message: format!(
                            "an element with {attributes} attributes; expected at most \
                             {MAX_ATTRIBUTES} (libvirt's elements have a handful)"
                        ),
                    });
                }
            }
            _ => i += 1,
        }
    }
    Ok(())
}

/// `text` cut after each top-level `</domain>`: (byte start, chunk) for every chunk that holds
/// more than white space.
fn split_domains(text: &str) -> Vec<(usize, &str)> {
    let mut out = Vec::new();
    let mut start = 0;
    for (i, m) in text.match_indices("</domain>") {
        let end = i + m.len();
        out.push((start, &text[start..end]));
        start = end;
    }
    if !text[start..].trim().is_empty() {
        out.push((start, &text[start..]));
    }
    out
}

/// `text` with a leading `<?xml …?>` declaration replaced by spaces (it may not appear inside
/// the wrapper), keeping every byte offset.
fn blank_declaration(text: &str) -> String {
    let lead = text.len() - text.trim_start().len();
    if text[lead..].starts_with("<?xml")
        && let Some(end) = text[lead..].find("?>")
    {
        let end = lead + end + 2;
        let mut s = String::with_capacity(text.len());
        s.push_str(&text[..lead]);
        s.push_str(&" ".repeat(end - lead));
        s.push_str(&text[end..]);
        return s;
    }
    text.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn roots(text: &str) -> Result<Vec<(String, usize)>> {
        each_document(text, "t.xml", |d, _| {
            Ok((
                d.doc.root_element().tag_name().name().to_string(),
                d.line_offset,
            ))
        })
    }

    #[test]
    fn one_two_and_fragments() {
        assert_eq!(roots("<domain/>").unwrap(), vec![("domain".into(), 0)]);
        let two = "<domain>\n</domain>\n<domain>\n</domain>\n";
        assert_eq!(
            roots(two).unwrap(),
            vec![("domain".into(), 0), ("domain".into(), 1)]
        );
        let frag = "<?xml version='1.0'?>\n<features/>\n<clock/>\n";
        assert_eq!(roots(frag).unwrap(), vec![("domain".into(), 0)]);
    }

    #[test]
    fn errors_name_the_line() {
        match roots("<domain>\n  <features>\n</domain>\n") {
            Err(Error::Parse { line, message, .. }) => {
                assert_eq!(line, 3);
                assert!(message.contains("expected"), "{message}");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn lines() {
        let l = Lines::new("a\nb\nc", 10);
        assert_eq!(l.line(0), 11);
        assert_eq!(l.line(2), 12);
        assert_eq!(l.line(4), 13);
    }
}

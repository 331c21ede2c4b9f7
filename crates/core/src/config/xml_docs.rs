//! Finding the XML documents in a file: one `<domain>`, several concatenated ones (virt-install
//! test output holds the install-time and the final domain), or a fragment (`<features>…`,
//! `<hyperv>…`, or `<features/>` and `<clock/>` side by side). Parse errors name the line and
//! column and say what was expected.

use roxmltree::{Document, ParsingOptions};

use crate::error::{Error, Result};

/// Byte offsets of line starts, for 1-based line numbers of nodes.
pub struct Lines {
    starts: Vec<usize>,
    offset: usize,
}

impl Lines {
    /// Line starts of `text`, whose first line is line `1 + offset` of the file.
    pub fn new(text: &str, offset: usize) -> Lines {
        let mut starts = vec![0];
        starts.extend(text.match_indices('\n').map(|(i, _)| i + 1));
        Lines { starts, offset }
    }

    /// The 1-based file line of byte `pos`.
    pub fn line(&self, pos: usize) -> usize {
        self.starts.partition_point(|&s| s <= pos) + self.offset
    }
}

/// One parsed document, with the file line its text starts on (0-based offset).
pub struct Doc<'a> {
    pub doc: Document<'a>,
    pub line_offset: usize,
    /// The text was a fragment, wrapped in `<domain>` to parse it.
    pub fragment: bool,
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
pub fn each_document<T>(
    text: &str,
    input: &str,
    mut each: impl FnMut(&Doc<'_>, &str) -> Result<T>,
) -> Result<Vec<T>> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let first = match Document::parse_with_options(text, options()) {
        Ok(doc) => {
            let fragment = doc.root_element().tag_name().name() != "domain";
            let d = Doc {
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
    if !text.trim_start().starts_with("<domain") {
        let body = blank_declaration(text);
        let wrapped = format!("{WRAP_OPEN}{body}{WRAP_CLOSE}");
        if let Ok(doc) = Document::parse_with_options(&wrapped, options()) {
            let d = Doc {
                doc,
                line_offset: 0,
                fragment: true,
            };
            return Ok(vec![each(&d, &wrapped)?]);
        }
    }
    Err(to_error(&first, text, input, 0))
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

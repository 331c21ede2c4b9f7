//! Streaming line reader for pasted text: one reused buffer, 1-based line numbers, and the
//! clean-up every pasted report needs (CR, ANSI screen codes from live views, e-mail quoting,
//! invalid UTF-8), so the format parsers see plain text.

use std::borrow::Cow;
use std::io::BufRead;

use crate::error::Error;

/// Reads cleaned lines from `R` without allocating per line (except for lines that need
/// repair: invalid UTF-8 or escape sequences).
pub struct Lines<R> {
    reader: R,
    buf: Vec<u8>,
    line_no: usize,
    path: String,
}

impl<R: BufRead> Lines<R> {
    /// Lines of `reader`; `path` names the input in errors.
    pub fn new(reader: R, path: &str) -> Self {
        Self {
            reader,
            buf: Vec::with_capacity(256),
            line_no: 0,
            path: path.to_string(),
        }
    }

    /// The next line, cleaned, with its 1-based number; `None` at the end of the input.
    pub fn next_line(&mut self) -> Result<Option<(usize, Cow<'_, str>)>, Error> {
        self.buf.clear();
        let n = self
            .reader
            .read_until(b'\n', &mut self.buf)
            .map_err(|e| Error::Io {
                path: self.path.clone(),
                source: e,
            })?;
        if n == 0 {
            return Ok(None);
        }
        self.line_no += 1;
        while matches!(self.buf.last(), Some(b'\n' | b'\r')) {
            self.buf.pop();
        }
        let text = match std::str::from_utf8(&self.buf) {
            Ok(s) => Cow::Borrowed(s),
            Err(_) => String::from_utf8_lossy(&self.buf),
        };
        Ok(Some((self.line_no, clean(text))))
    }
}

/// Removes ANSI escape sequences and e-mail quote markers (`> `, `>> `, `> > `), and turns
/// non-breaking spaces (web pages, rich-text mail) into plain ones, so parsers can split on
/// ASCII whitespace.
pub fn clean(text: Cow<'_, str>) -> Cow<'_, str> {
    let text = if memchr::memchr(0x1b, text.as_bytes()).is_some() {
        Cow::Owned(strip_ansi(&text))
    } else {
        text
    };
    let text = if memchr::memchr(0xa0, text.as_bytes()).is_some() && text.contains('\u{a0}') {
        Cow::Owned(text.replace('\u{a0}', " "))
    } else {
        text
    };
    let quoted = unquote(&text);
    if quoted.len() == text.len() {
        text
    } else {
        Cow::Owned(quoted.to_string())
    }
}

/// The line without leading e-mail quote markers.
pub fn unquote(mut line: &str) -> &str {
    let first = line.bytes().find(|&b| b != b' ' && b != b'\t');
    if first != Some(b'>') {
        return line;
    }
    loop {
        let trimmed = line.trim_start_matches([' ', '\t']);
        match trimmed.strip_prefix('>') {
            Some(rest) => line = rest.strip_prefix(' ').unwrap_or(rest),
            None => return line,
        }
    }
}

/// The line without a `^C` that a terminal echoed in front of it (after leading blanks); the
/// line itself, indentation kept, when there is none.
pub fn strip_ctrl_c(line: &str) -> &str {
    match line.trim_start().strip_prefix("^C") {
        Some(rest) => rest,
        None => line,
    }
}

/// Drops CSI (`ESC [ … final`) and two-byte escape sequences, as a terminal would not print.
fn strip_ansi(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\u{1b}' {
            out.push(c);
            continue;
        }
        if chars.next() == Some('[') {
            for c in chars.by_ref() {
                if ('@'..='~').contains(&c) {
                    break;
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strips_quotes_escapes_and_cr() {
        let input = "> > Total\u{a0}Samples:1\r\n\x1b[H\x1b[2J19:49:57.094070\n>\nplain\n";
        let mut lines = Lines::new(input.as_bytes(), "t");
        let mut got = Vec::new();
        while let Ok(Some((n, l))) = lines.next_line() {
            got.push((n, l.into_owned()));
        }
        assert_eq!(
            got,
            vec![
                (1, "Total Samples:1".to_string()),
                (2, "19:49:57.094070".to_string()),
                (3, String::new()),
                (4, "plain".to_string()),
            ]
        );
    }

    #[test]
    fn invalid_utf8_is_replaced_not_fatal() {
        let input: &[u8] = b"ok\xff\xfe\n";
        let mut lines = Lines::new(input, "t");
        assert!(matches!(lines.next_line(), Ok(Some((1, _)))));
    }
}

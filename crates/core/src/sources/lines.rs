//! Streaming line reader for pasted text: one reused buffer, 1-based line numbers, a cap on
//! the length of one line (so binary data or `/dev/zero` forced through a text format ends in a
//! clear error instead of an allocation failure), and the clean-up every pasted report needs
//! (CR, ANSI screen codes from live views, e-mail quoting, invalid UTF-8), so the format parsers
//! see plain text. It also remembers whether the last line ended without a newline (a cut-off
//! input) and recognises the marks authors use to say they cut rows out. [`each_line_in`] reads
//! the same lines from bytes already in memory (a part of a mapped file), without copying them.

use std::borrow::Cow;
use std::io::{BufRead, ErrorKind};

use crate::error::Error;

/// The longest line a text format may have. Real report and trace lines are at most a few
/// hundred bytes; a longer "line" is binary data or the wrong file.
pub(crate) const MAX_LINE: usize = 1 << 20;

/// Reads cleaned lines from `R` without allocating per line (except for lines that need
/// repair: invalid UTF-8 or escape sequences).
pub(crate) struct Lines<R> {
    reader: R,
    buf: Vec<u8>,
    line_no: usize,
    path: String,
    /// The last line read had no newline after it.
    unterminated: bool,
}

impl<R: BufRead> Lines<R> {
    /// Lines of `reader`; `path` names the input in errors.
    pub(crate) fn new(reader: R, path: &str) -> Self {
        Self {
            reader,
            buf: Vec::with_capacity(256),
            line_no: 0,
            path: path.to_string(),
            unterminated: false,
        }
    }

    /// The next line, cleaned, with its 1-based number; `None` at the end of the input. A line
    /// longer than [`MAX_LINE`] is an error naming it.
    pub(crate) fn next_line(&mut self) -> Result<Option<(usize, Cow<'_, str>)>, Error> {
        self.buf.clear();
        if !self.read_raw_line()? {
            return Ok(None);
        }
        self.line_no += 1;
        Ok(Some((self.line_no, line_text(&self.buf))))
    }

    /// The number of the last line when the input ended inside it (no newline after it): the
    /// input may have been cut off there. Meaningful once [`Lines::next_line`] returned `None`.
    pub(crate) fn cut_line(&self) -> Option<usize> {
        (self.unterminated && self.line_no > 0).then_some(self.line_no)
    }

    /// `read_until(b'\n')` with the [`MAX_LINE`] cap; false at the end of the input.
    fn read_raw_line(&mut self) -> Result<bool, Error> {
        let mut read_any = false;
        loop {
            let available = match self.reader.fill_buf() {
                Ok(b) => b,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(e) => {
                    return Err(Error::Io {
                        path: self.path.clone(),
                        source: e,
                    });
                }
            };
            if available.is_empty() {
                if read_any {
                    self.unterminated = true;
                }
                return Ok(read_any);
            }
            read_any = true;
            let (take, done) = match memchr::memchr(b'\n', available) {
                Some(i) => (i + 1, true),
                None => (available.len(), false),
            };
            if self.buf.len() + take > MAX_LINE + 2 {
                return Err(too_long(&self.path, self.line_no + 1));
            }
            self.buf.extend_from_slice(&available[..take]);
            self.reader.consume(take);
            if done {
                self.unterminated = false;
                return Ok(true);
            }
        }
    }
}

/// Every line of `bytes`, a part held in memory of an input whose first line is line `before
/// + 1`, read in place (not copied into a buffer) as [`Lines`] reads a stream: `each` gets the
/// line's number, its cleaned text and how many bytes of `bytes` are read with it. Returns the
/// number of the last line if `bytes` ended inside it (no newline after it), as
/// [`Lines::cut_line`] does, or the error for a line longer than [`MAX_LINE`].
pub(crate) fn each_line_in(
    bytes: &[u8],
    before: usize,
    path: &str,
    mut each: impl FnMut(usize, &str, usize),
) -> Result<Option<usize>, Error> {
    let mut n = before;
    let mut window_start = 0;
    while window_start < bytes.len() {
        let window_end = window_end(bytes, window_start);
        let window = bytes.get(window_start..window_end).unwrap_or_default();
        // Checked once for the whole window: valid UTF-8 and no byte of an escape sequence or
        // a non-breaking space (nearly every input), so each line needs only its ends trimmed
        // and its quote marks removed, which is what `line_text` would make of it.
        let plain = simdutf8::basic::from_utf8(window)
            .ok()
            .filter(|_| !has_escape_bytes(window));
        let mut at = 0;
        while let Some(rest) = window.get(at..).filter(|r| !r.is_empty()) {
            let len = memchr::memchr(b'\n', rest).map_or(rest.len(), |i| i + 1);
            n += 1;
            if len > MAX_LINE + 2 {
                return Err(too_long(path, n));
            }
            let line = at..at + len;
            at += len;
            match plain.and_then(|text| text.get(line)) {
                // CR and LF are ASCII: cut anywhere among them, the rest stays whole chars.
                Some(text) => each(
                    n,
                    unquote(text.trim_end_matches(['\n', '\r'])),
                    window_start + at,
                ),
                None => each(n, &line_text(&rest[..len]), window_start + at),
            }
        }
        window_start = window_end;
    }
    Ok(bytes.last().is_some_and(|&b| b != b'\n').then_some(n))
}

/// Bytes checked at once by [`each_line_in`] (then to the end of the line they end in): few
/// enough that checking them does not read far ahead of the lines given out (a caller drops
/// the pages read behind them every few MiB).
const WINDOW: usize = 256 << 10;

/// Where the window of [`each_line_in`] that starts at `start` ends: after the newline that
/// ends the line its [`WINDOW`]th byte is in, or the end of `bytes`. A line longer than
/// [`MAX_LINE`] + 2 there is cut where it is longer than that, and refused when read.
fn window_end(bytes: &[u8], start: usize) -> usize {
    let upto = (start + WINDOW).min(bytes.len());
    let limit = (upto + MAX_LINE + 3).min(bytes.len());
    let after = bytes.get(upto..limit).unwrap_or_default();
    memchr::memchr(b'\n', after).map_or(limit, |i| upto + i + 1)
}

/// The cleaned text of one raw line (its newline included or not): trailing CR and LF
/// removed, invalid UTF-8 replaced, then [`clean`]. Every reader of lines goes through this,
/// the streamed [`Lines`] and the trace reader's parallel blocks alike.
pub(crate) fn line_text(raw: &[u8]) -> Cow<'_, str> {
    let mut end = raw.len();
    while end > 0 && matches!(raw[end - 1], b'\n' | b'\r') {
        end -= 1;
    }
    let raw = &raw[..end];
    let text = match simdutf8::basic::from_utf8(raw) {
        Ok(s) => Cow::Borrowed(s),
        Err(_) => String::from_utf8_lossy(raw),
    };
    clean(text)
}

/// Whether `bytes` hold a byte that only an escape sequence or a non-breaking space puts in
/// a line. A line (valid UTF-8, no CR or LF) that has none and is not [`quoted`] is one that
/// [`clean`] leaves as it is; a reader can check this half once for many lines.
pub(crate) fn has_escape_bytes(bytes: &[u8]) -> bool {
    memchr::memchr2(0x1b, 0xa0, bytes).is_some()
}

/// Whether `line` starts, after blanks, with a mail quote mark (which [`clean`] removes).
pub(crate) fn quoted(line: &str) -> bool {
    line.bytes().find(|&c| c != b' ' && c != b'\t') == Some(b'>')
}

/// The error for a line longer than [`MAX_LINE`] (line `line` of `path`).
pub(crate) fn too_long(path: &str, line: usize) -> Error {
    Error::Parse {
        path: path.to_string(),
        line,
        message: format!(
            "expected a line of text; found more than {} MiB without a line break (binary \
             data, or the wrong --format?)",
            MAX_LINE >> 20
        ),
    }
}

/// An author's mark that rows were cut out here: `...`, `.....`, `…`, `[..]`, `[...]`, `[…]`,
/// `<snip>`, `[snip]`, `(snip)`, `<...>`, `-- snip --`.
pub(crate) fn elision(line: &str) -> bool {
    let t = line.trim_ascii();
    let inner = t
        .strip_prefix(['[', '<', '('])
        .and_then(|r| r.strip_suffix([']', '>', ')']))
        .unwrap_or(t)
        .trim_ascii()
        .trim_matches('-')
        .trim_ascii();
    let dots =
        inner.chars().all(|c| c == '.' || c == '…') && (inner.contains('…') || inner.len() >= 2);
    dots || inner.eq_ignore_ascii_case("snip") || inner.eq_ignore_ascii_case("snipped")
}

/// Removes ANSI escape sequences and e-mail quote markers (`> `, `>> `, `> > `), and turns
/// non-breaking spaces (web pages, rich-text mail) into plain ones, so parsers can split on
/// ASCII whitespace.
pub(crate) fn clean(text: Cow<'_, str>) -> Cow<'_, str> {
    // One search for the first byte of either (nearly every line has neither).
    let (escape, nbsp) = match memchr::memchr2(0x1b, 0xa0, text.as_bytes()) {
        None => (false, false),
        Some(_) => (text.contains('\x1b'), text.contains('\u{a0}')),
    };
    let text = if escape {
        Cow::Owned(strip_ansi(&text))
    } else {
        text
    };
    let text = if nbsp && text.contains('\u{a0}') {
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
pub(crate) fn unquote(mut line: &str) -> &str {
    let bytes = line.as_bytes();
    if bytes.get(super::blanks::skip(bytes, 0)) != Some(&b'>') {
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
pub(crate) fn strip_ctrl_c(line: &str) -> &str {
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

    /// [`each_line_in`] on `input` gives what [`Lines`] gives (see
    /// [`lines_read_in_place_are_the_streams`]).
    fn assert_in_place_is_the_stream(input: &[u8]) {
        for before in [0, 41] {
            let mut stream = Lines::new(input, "s");
            stream.line_no = before;
            let mut want = Vec::new();
            while let Ok(Some((n, text))) = stream.next_line() {
                want.push((n, text.into_owned()));
            }
            let (mut got, mut ends) = (Vec::new(), Vec::new());
            let cut = each_line_in(input, before, "s", |n, text, read| {
                got.push((n, text.to_string()));
                ends.push(read);
            });
            assert_eq!(got, want, "{input:?}");
            assert_eq!(cut.ok(), Some(stream.cut_line()), "{input:?}");
            assert_eq!(ends.last().copied().unwrap_or(0), input.len());
            assert!(
                ends.iter()
                    .all(|&e| e == input.len() || input[e - 1] == b'\n')
            );
        }
    }

    proptest::proptest! {
        /// Whatever mix of quote marks, CRs, escapes, non-breaking spaces and invalid bytes
        /// a part holds (a part with none is read in one pass, any other line by line).
        #[test]
        fn any_part_read_in_place_is_the_stream(picks in proptest::collection::vec(0usize..11, 0..40)) {
            let pieces: [&[u8]; 11] = [b"a", b"\n", b"\r", b">", b" ", b"\t", b"\x1b[H", b"\xc2\xa0", b"\xff", "\u{e9}".as_bytes(), b"\r\n"];
            let input: Vec<u8> = picks.iter().flat_map(|&i| pieces[i].iter().copied()).collect();
            assert_in_place_is_the_stream(&input);
        }
    }

    /// Read in place, a part gives what the stream reader gives: the same numbers, texts and
    /// cut line, and the offsets it reports end each line.
    #[test]
    fn lines_read_in_place_are_the_streams() {
        let inputs: [&[u8]; 7] = [
            b"",
            b"one\ntwo\r\n\nfour",
            b"> quoted\n\x1b[Hescaped\n",
            b"> > quoted\r\r\n  >\tx\n>\n",
            b"\xff\xfe invalid\nlast\n",
            b"\n\n",
            b"no newline at all",
        ];
        for input in inputs {
            assert_in_place_is_the_stream(input);
        }
        // Windows of plain lines, and windows with an escape or an invalid byte in them.
        let mut big = Vec::new();
        while big.len() < 3 * WINDOW {
            big.extend_from_slice(b"> HLT  5  50.00%\r\n");
            if big.len() / 1000 == WINDOW / 1000 {
                big.extend_from_slice(b"\x1b[Hx\n\xff\n");
            }
        }
        assert_in_place_is_the_stream(&big);
        let long = vec![b'x'; MAX_LINE + 3];
        let err = each_line_in(&long, 6, "s", |_, _, _| {})
            .err()
            .map(|e| e.to_string());
        assert_eq!(err, Some(too_long("s", 7).to_string()));
    }

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
    fn long_lines_are_refused_and_cut_lines_remembered() {
        let zeros = vec![0u8; MAX_LINE + 10];
        let mut lines = Lines::new(zeros.as_slice(), "t");
        assert!(matches!(
            lines.next_line(),
            Err(Error::Parse { line: 1, .. })
        ));
        let mut lines = Lines::new(&b"a\nb"[..], "t");
        while let Ok(Some(_)) = lines.next_line() {}
        assert_eq!(lines.cut_line(), Some(2));
        let mut lines = Lines::new(&b"a\nb\n"[..], "t");
        while let Ok(Some(_)) = lines.next_line() {}
        assert_eq!(lines.cut_line(), None);
    }

    #[test]
    fn elisions() {
        for e in [
            "...",
            ".....",
            "…",
            "[..]",
            "[...]",
            "[…]",
            "<snip>",
            "[snip]",
            "(snip)",
            "<...>",
            "-- snip --",
            "  [ ... ]",
        ] {
            assert!(elision(e), "{e}");
        }
        for t in [".", "snip this", "[1]", "0.5", "..x"] {
            assert!(!elision(t), "{t}");
        }
    }

    #[test]
    fn invalid_utf8_is_replaced_not_fatal() {
        let input: &[u8] = b"ok\xff\xfe\n";
        let mut lines = Lines::new(input, "t");
        assert!(matches!(lines.next_line(), Ok(Some((1, _)))));
    }
}

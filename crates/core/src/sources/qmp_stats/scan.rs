//! The JSON tokens of a `query-stats` reply that matter, read from one line: `"key": "string"`,
//! `"key": number`, a list value's brackets. Anything else on the line is passed over, so a
//! damaged stretch costs only the pairs it touches.

/// A token of one line.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Token {
    /// `"key": "string"` (`None`: the string could not be read).
    Key(&'static str, Option<String>),
    /// `"key": 123`.
    Number(&'static str, u64),
    /// `"key": true` or `false`: KVM's boolean statistics (`guest_mode`, `blocking`), which
    /// QEMU sends as JSON booleans.
    Bool(&'static str),
    /// `"value": [`: a list value (a histogram); `closed` when its `]` is on this line, `valid`
    /// when what was read of it holds numbers only.
    List { closed: bool, valid: bool },
}

/// The keys read.
const KEYS: [&str; 4] = ["provider", "qom-path", "name", "value"];

/// The tokens of `line`, in order.
pub(super) fn tokens(line: &str) -> Vec<Token> {
    let b = line.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'"' => {
                let (s, next) = string(b, i);
                i = next;
                let Some(s) = s else { continue };
                let Some(key) = KEYS.iter().find(|k| **k == s) else {
                    continue;
                };
                let mut j = skip_ws(b, i);
                if b.get(j) != Some(&b':') {
                    continue;
                }
                j = skip_ws(b, j + 1);
                match b.get(j) {
                    Some(b'"') => {
                        let (v, next) = string(b, j);
                        out.push(Token::Key(key, v));
                        i = next;
                    }
                    Some(b'[') => {
                        let end = (j + 1..b.len()).find(|&k| b[k] == b']');
                        let inner = &b[j + 1..end.unwrap_or(b.len())];
                        // After the `]` only the object's end may follow.
                        let after = end.map(|k| skip_ws(b, k + 1));
                        let ends_well =
                            after.is_none_or(|k| b.get(k).is_none_or(|c| matches!(c, b',' | b'}')));
                        out.push(Token::List {
                            closed: end.is_some(),
                            valid: numbers_only(inner) && ends_well,
                        });
                        i = end.map_or(b.len(), |k| k + 1);
                    }
                    Some(b't' | b'f') => {
                        let word = if b[j] == b't' { "true" } else { "false" };
                        let end = j + word.len();
                        let ends_well = b.get(j..end) == Some(word.as_bytes())
                            && b.get(end).is_none_or(|c| {
                                matches!(c, b',' | b'}' | b' ' | b'\t' | b'\r' | b']')
                            });
                        if ends_well {
                            out.push(Token::Bool(key));
                        }
                        i = if ends_well { end } else { j };
                    }
                    Some(c) if c.is_ascii_digit() => {
                        let end = (j..b.len())
                            .find(|&k| !b[k].is_ascii_digit())
                            .unwrap_or(b.len());
                        let ends_well = b
                            .get(end)
                            .is_none_or(|c| matches!(c, b',' | b'}' | b' ' | b'\t' | b'\r' | b']'));
                        let n = line.get(j..end).and_then(|d| d.parse::<u64>().ok());
                        if let (Some(n), true) = (n, ends_well) {
                            out.push(Token::Number(key, n));
                        }
                        i = end;
                    }
                    _ => i = j,
                }
            }
            _ => i += 1,
        }
    }
    out
}

/// Whether `b` holds only the numbers of a list (digits, commas, blanks).
pub(super) fn numbers_only(b: &[u8]) -> bool {
    b.iter()
        .all(|c| c.is_ascii_digit() || *c == b',' || c.is_ascii_whitespace())
}

fn skip_ws(b: &[u8], mut i: usize) -> usize {
    while b.get(i).is_some_and(|c| c.is_ascii_whitespace()) {
        i += 1;
    }
    i
}

/// The string starting at the quote at `at` (escapes kept as written), and where reading goes
/// on; `None` when the line ends inside it.
fn string(b: &[u8], at: usize) -> (Option<String>, usize) {
    let mut i = at + 1;
    while i < b.len() {
        match b[i] {
            b'\\' => i += 2,
            b'"' => {
                let s = std::str::from_utf8(&b[at + 1..i]).ok().map(str::to_string);
                return (s, i + 1);
            }
            _ => i += 1,
        }
    }
    (None, b.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn booleans_are_values() {
        assert_eq!(
            tokens(
                r#"{"name": "guest_mode", "value": false}, {"name": "blocking", "value": true}"#
            ),
            [
                Token::Key("name", Some("guest_mode".into())),
                Token::Bool("value"),
                Token::Key("name", Some("blocking".into())),
                Token::Bool("value")
            ]
        );
        assert_eq!(
            tokens(r#"{"name": "x", "value": fals}"#),
            [Token::Key("name", Some("x".into()))]
        );
    }

    #[test]
    fn pairs_and_lists() {
        assert_eq!(
            tokens(r#"{"name": "exits", "value": 123},"#),
            [
                Token::Key("name", Some("exits".into())),
                Token::Number("value", 123)
            ]
        );
        assert_eq!(
            tokens(r#""value": [0, 1, 2]"#),
            [Token::List {
                closed: true,
                valid: true
            }]
        );
        assert_eq!(
            tokens(r#""value": [00}"#),
            [Token::List {
                closed: false,
                valid: false
            }]
        );
        assert_eq!(tokens(r#""value": 12x3"#), []);
        assert_eq!(tokens(r#""name": "ex"#), [Token::Key("name", None)]);
    }
}

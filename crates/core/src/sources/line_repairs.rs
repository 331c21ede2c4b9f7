//! Repairs for lines damaged in transit, which every line-oriented reader can use: two lines
//! whose newline was lost, split where both halves read ([`split_joined`]); a dashed rule or a
//! blank line with a stray character in it (a NUL, a mailer's `—` for `--`), still a rule
//! ([`damaged_rule`], [`rule_joined`]); and known words (a header) read without such characters
//! ([`without_damage`]). The caller notes each repair, so no damaged line is read in silence.

/// The longest line tried as two joined lines (two rows of any of the table formats fit).
pub(crate) const MAX_JOINED: usize = 320;

/// How many halves of lines one input may have read while looking for joined lines (a try
/// reads the halves at every split point of a line): past this, no more lines are tried, so an
/// input of many unreadable lines costs at most this many short reads more.
pub(crate) const MAX_JOINED_READS: usize = 40_000;

/// Where `text`, a line that does not read whole, splits into two lines that both read by
/// `reads` (the first such point): the two halves, the second cleaned as a line is (it may
/// start with mail quote marks). Never splits inside a number (between two digits or at its
/// decimal point), so no number is made up; `None` when no split reads.
pub(crate) fn split_joined(text: &str, reads: impl Fn(&str) -> bool) -> Option<(&str, String)> {
    if text.len() > MAX_JOINED {
        return None;
    }
    let bytes = text.as_bytes();
    let numeric = |b: u8| b.is_ascii_digit() || b == b'.' || b == b',';
    let first = bytes.iter().position(|b| !b.is_ascii_whitespace())?;
    (first + 1..bytes.len()).find_map(|at| {
        let (before, after) = (bytes[at - 1], bytes[at]);
        if !text.is_char_boundary(at)
            || before.is_ascii_whitespace()
            || (numeric(before) && numeric(after))
        {
            return None;
        }
        let (left, right) = text.split_at(at);
        // Inside a word (`100.00MSR_WRITE`, `187> >>>>`, `%gsys-----`), the part after the
        // split must be a name (a letter first, three letters at least, more letters than
        // digits), a rule or a mail quote mark: `2047x9` is a damaged count, not `2047` and a
        // row named `x9`.
        let word = right
            .split(|c: char| c.is_ascii_whitespace())
            .next()
            .unwrap_or("");
        if !(after.is_ascii_whitespace() || after == b'>' || name_like(word)) {
            return None;
        }
        if right.trim_ascii().is_empty() || !reads(left) {
            return None;
        }
        let right = super::lines::clean(std::borrow::Cow::Borrowed(right)).into_owned();
        reads(&right).then_some((left, right))
    })
}

/// Whether `word` can start a line: a name (a letter first, at least three letters, and more
/// letters than digits: `MSR_WRITE`, `kvm_exit(SYS64)`; not `x9`, `x789`) or a table's rule
/// (`-----`).
fn name_like(word: &str) -> bool {
    let letters = word.bytes().filter(u8::is_ascii_alphabetic).count();
    let digits = word.bytes().filter(u8::is_ascii_digit).count();
    let rule = word.len() >= 3 && word.bytes().all(|b| b == b'-' || b == b'=');
    rule || (word.bytes().next().is_some_and(|b| b.is_ascii_alphabetic())
        && letters >= 3
        && letters > digits)
}

/// Characters that damage a line in transit: a NUL, U+FFFD (bytes that were not UTF-8), and
/// the dashes a mailer puts for `--` (`—`, `–`, `‒`, `―`, `−`).
fn damage_char(c: char) -> Option<&'static str> {
    match c {
        '\0' => Some("a NUL byte"),
        '\u{fffd}' => Some("bytes that are not UTF-8"),
        '\u{2012}'..='\u{2015}' | '\u{2212}' => Some("a dash a mailer changed (`—`)"),
        _ => None,
    }
}

/// The rule (a line of `-`, `=` or `+`, with blanks) or the blank line that `text` still is
/// although one or two characters of it are damaged ([`damage_char`]). Returns what it is and
/// what was wrong, for the note; `None` for an intact line or any other line. A rule has at
/// least ten dashes, so no short line of text reads as one.
pub(crate) fn damaged_rule(text: &str) -> Option<String> {
    let t = text.trim_ascii();
    let mut why = None;
    let mut strays = 0;
    let mut dashes = 0;
    let mut others = 0;
    for c in t.chars() {
        match c {
            '-' | '=' => dashes += 1,
            '+' | '|' => others += 1,
            ' ' | '\t' => {}
            c => {
                why = Some(damage_char(c)?);
                strays += 1;
            }
        }
    }
    let what = if dashes >= 10 {
        "a rule"
    } else if dashes == 0 && others == 0 {
        "a blank line"
    } else {
        return None;
    };
    why.filter(|_| strays <= 2)
        .map(|why| format!("{what} with {why} in it, read as {what}"))
}

/// Where `text` is a rule (ten dashes or more) joined with another line before or after it,
/// their newline lost: the byte offset where the second line starts. `None` for a whole rule
/// and for any other line.
pub(crate) fn rule_joined(text: &str) -> Option<usize> {
    const RULE: usize = 10;
    if damaged_rule(text).is_some() {
        return None; // one rule, damaged
    }
    let start = text.len() - text.trim_ascii_start().len();
    let body = text.trim_ascii();
    let lead = body
        .bytes()
        .take_while(|&b| matches!(b, b'-' | b'='))
        .count();
    if lead >= RULE && body.len() > lead {
        let after = &body[lead..];
        let rest = after.trim_ascii_start();
        if !rest
            .bytes()
            .all(|b| matches!(b, b'-' | b'=' | b' ' | b'\t'))
        {
            return Some(start + lead + (after.len() - rest.len()));
        }
    }
    let tail = body
        .bytes()
        .rev()
        .take_while(|&b| matches!(b, b'-' | b'=' | b' ' | b'\t'))
        .count();
    let dashes = body[body.len() - tail..]
        .bytes()
        .filter(|&b| matches!(b, b'-' | b'='))
        .count();
    let head = body[..body.len() - tail].trim_ascii_end();
    // The rule starts at its first dash; what comes before it is the other line.
    let first_dash = body[head.len()..].len() - body[head.len()..].trim_ascii_start().len();
    (dashes >= RULE && !head.is_empty() && !head.ends_with('+'))
        .then_some(start + head.len() + first_dash)
}

/// `text` without the characters that damaged it ([`damage_char`]), and what they were; `None`
/// when it has none. For lines whose words are known (headers, labels): never for numbers,
/// where a character taken out may have replaced a digit.
pub(crate) fn without_damage(text: &str) -> Option<(String, &'static str)> {
    let why = text.chars().find_map(damage_char)?;
    Some((
        text.chars().filter(|&c| damage_char(c).is_none()).collect(),
        why,
    ))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    #[test]
    fn damaged_rules() {
        let rule = "-".repeat(40);
        assert_eq!(damaged_rule(&rule), None);
        assert!(damaged_rule(&format!("{rule}\0{rule}")).is_some_and(|w| w.contains("NUL")));
        assert!(damaged_rule(" \0 ").is_some_and(|w| w.contains("blank")));
        assert_eq!(
            without_damage("Event\0 name"),
            Some(("Event name".into(), "a NUL byte"))
        );
        assert!(damaged_rule(&format!("{rule}—{rule}")).is_some_and(|w| w.contains('—')));
        assert_eq!(damaged_rule("a—b"), None);
        assert_eq!(damaged_rule(&format!("{rule} HLT")), None);
        assert_eq!(damaged_rule("--—--"), None);
        let joined = format!("With idle halt{rule}");
        assert_eq!(rule_joined(&joined), Some("With idle halt".len()));
        let joined = format!("{rule}|  Event name  |  Samples  |");
        assert_eq!(rule_joined(&joined), Some(rule.len()));
        assert_eq!(rule_joined(&rule), None);
        assert_eq!(rule_joined(&format!("{rule}\0{rule}")), None);
        assert_eq!(rule_joined("HLT 12 -- 3"), None);
    }

    /// A row: a name, then two whole numbers (for the line readers' tests too).
    pub(crate) fn row(t: &str) -> bool {
        let w: Vec<&str> = t.split_ascii_whitespace().collect();
        w.len() == 3
            && w[0].bytes().all(|b| b.is_ascii_alphabetic() || b == b'_')
            && w[1..].iter().all(|n| n.parse::<u64>().is_ok())
    }

    #[test]
    fn joined_rows_split_where_both_halves_read() {
        let got = split_joined("HLT 12 34MSR_WRITE 5 6", row);
        assert_eq!(got, Some(("HLT 12 34", "MSR_WRITE 5 6".to_string())));
        // Mail quote marks in front of the second half are cleaned off.
        let got = split_joined("exits 1 2> >>>>   irq_exits 3 4", row);
        assert_eq!(
            got.map(|g| g.1.trim().to_string()),
            Some("irq_exits 3 4".into())
        );
        // Never inside a number, never before a word that is no name: no number made up.
        assert_eq!(split_joined("exits 2047x9 0", row), None);
        assert_eq!(split_joined("exits 20 47 0", row), None);
        assert_eq!(split_joined(&"x ".repeat(200), row), None);
    }
}

//! The shapes of a pasted counter table's lines: a counter row (a name, then numbers), its
//! cells, rows joined on one line, and a row that has a row's shape but cannot be read.

/// Whether `name` is named like a counter (`% …`, `…/sec`, `… Cost`, `… Per Dispatch`).
pub(super) fn counter_like(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    // A name has a word in it: a lone `%` is a damaged row's stray sign, not a counter.
    let named = n.starts_with('%')
        || n.contains("/sec")
        || n.ends_with(" cost")
        || n.ends_with("per dispatch");
    named && n.bytes().any(|b| b.is_ascii_alphabetic())
}

/// Whether `t` is a number as tables print them (`9,214,942`, `21.465`, `21,5%`, `-1`).
pub(super) fn is_number_token(t: &str) -> bool {
    let t = t.trim_end_matches('%');
    !t.is_empty()
        && t.bytes()
            .next()
            .is_some_and(|b| b.is_ascii_digit() || b == b'-')
        && t.bytes()
            .all(|b| b.is_ascii_digit() || matches!(b, b',' | b'.' | b'-'))
}

/// A counter row: a name, then one or more number tokens.
pub(super) fn counter_row(l: &str) -> Option<(&str, Vec<&str>)> {
    if l.starts_with('\\') {
        return None;
    }
    let toks: Vec<&str> = l.split_whitespace().collect();
    let k = toks.iter().rev().take_while(|t| is_number_token(t)).count();
    if k == 0 || k == toks.len() {
        return None;
    }
    // The name is the line up to the first trailing number.
    let mut cut = l.len();
    let mut rest = l;
    for _ in 0..k {
        let t = rest.trim_end();
        let start = t
            .char_indices()
            .rev()
            .find(|(_, c)| c.is_whitespace())
            .map_or(0, |(i, c)| i + c.len_utf8());
        cut = start;
        rest = &t[..start];
    }
    Some((l[..cut].trim(), toks[toks.len() - k..].to_vec()))
}

/// The cells of a line: split by tabs or by two or more spaces.
pub(super) fn split_cells(l: &str) -> Vec<&str> {
    l.split('\t')
        .flat_map(|p| p.split("  "))
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .collect()
}

/// The counter rows of line `l` when it holds whole rows one after the other (a name named like
/// a counter, then `width` numbers, again and again), as two rows whose line break was lost do.
pub(super) fn tile(l: &str, width: usize) -> Option<Vec<(&str, Vec<&str>)>> {
    // A value glued to the next row's name (`20.216Total Intercepts/sec`) is two cells.
    let cells: Vec<&str> = split_cells(l)
        .into_iter()
        .flat_map(|c| {
            let end = c
                .find(|ch: char| !(ch.is_ascii_digit() || matches!(ch, ',' | '.' | '-')))
                .unwrap_or(c.len());
            match c.split_at(end) {
                (v, rest)
                    if rest.starts_with(|ch: char| !ch.is_whitespace()) && is_number_token(v) =>
                {
                    vec![v, rest]
                }
                _ => vec![c],
            }
        })
        .collect();
    let mut rows = Vec::new();
    let mut rest = cells.as_slice();
    while let Some((name, after)) = rest.split_first() {
        let values = after.get(..width)?;
        // Only names of counters: a damaged row must not tile into rows of made-up names.
        if !counter_like(name) || !values.iter().all(|v| is_number_token(v)) {
            return None;
        }
        rows.push((*name, values.to_vec()));
        rest = &after[width..];
    }
    Some(rows)
}

/// Why line `l` under an object line with `instances` instance columns is a counter row that
/// cannot be read (`None` when it is not row-shaped: then it starts a new block). A row is
/// indented deeper than the object line (`deeper`) or named like a counter; reading it as an
/// object line would file every row after it under the wrong object and instances.
pub(super) fn unread_row(l: &str, deeper: bool) -> Option<String> {
    let cells = split_cells(l);
    let (name, values) = cells.split_first()?;
    if !(deeper || counter_like(name)) {
        return None;
    }
    match values.iter().find(|v| !is_number_token(v)) {
        Some(bad) => Some(format!("`{bad}` is not a number")),
        None if values.is_empty() => {
            Some("a counter's name without its value (the row cut short?)".into())
        }
        None => None,
    }
}

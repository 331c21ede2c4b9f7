//! Text as the pages draw it: the width a label takes in an SVG (estimated from character
//! classes, generously, so that layout leaves room rather than clips), and inline Markdown in
//! advice texts made HTML (`code` and **bold**; everything else escaped).

/// The width in px of `s` drawn at `px` px in the pages' sans-serif font (DejaVu Sans widths,
/// rounded up per class of character, plus 5%).
pub(super) fn width(s: &str, px: f64) -> f64 {
    let em: f64 = s
        .chars()
        .map(|c| match c {
            'i' | 'l' | 'j' | '.' | ',' | ':' | ';' | '\'' | '|' | '!' | '·' | ' ' => 0.34,
            'f' | 't' | 'r' | '(' | ')' | '[' | ']' | '-' | '/' | 'I' => 0.44,
            'm' | 'w' | 'M' | 'W' | '%' | '@' | '…' | '—' => 1.0,
            c if c.is_ascii_uppercase() => 0.76,
            c if c.is_ascii_digit() => 0.65,
            _ => 0.64,
        })
        .sum();
    em * px * 1.05
}

/// `s` as HTML: every character escaped, then `` `code` `` made `<code>` and `**bold**`
/// `<strong>`. An unpaired marker stays as it was written.
pub(super) fn inline_markdown(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 16);
    let mut rest = s;
    while !rest.is_empty() {
        let tick = rest.find('`');
        let bold = rest.find("**");
        let (at, marker, tag) = match (tick, bold) {
            (Some(t), Some(b)) if b < t => (b, "**", "strong"),
            (Some(t), _) => (t, "`", "code"),
            (None, Some(b)) => (b, "**", "strong"),
            (None, None) => break,
        };
        let after = &rest[at + marker.len()..];
        match after.find(marker) {
            Some(end) if end > 0 => {
                escape_into(&mut out, &rest[..at]);
                out.push_str(&format!("<{tag}>"));
                escape_into(&mut out, &after[..end]);
                out.push_str(&format!("</{tag}>"));
                rest = &after[end + marker.len()..];
            }
            _ => {
                escape_into(&mut out, &rest[..at + marker.len()]);
                rest = after;
            }
        }
    }
    escape_into(&mut out, rest);
    out
}

fn escape_into(out: &mut String, s: &str) {
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#x27;"),
            c => out.push(c),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markdown_is_made_html_and_nothing_else_is() {
        assert_eq!(
            inline_markdown("Set `hv-stimer` and **reboot** <now> & `a<b>`"),
            "Set <code>hv-stimer</code> and <strong>reboot</strong> &lt;now&gt; &amp; \
             <code>a&lt;b&gt;</code>"
        );
        assert_eq!(inline_markdown("a ` b ** c"), "a ` b ** c");
        assert_eq!(
            inline_markdown("<script>alert(1)</script>"),
            "&lt;script&gt;alert(1)&lt;/script&gt;"
        );
        assert_eq!(inline_markdown("``"), "``");
    }

    #[test]
    fn wide_letters_are_wider() {
        assert!(width("WWW", 12.0) > width("iii", 12.0) * 2.0);
        assert!(width("EPT_MISCONFIG", 12.0) > 13.0 * 12.0 * 0.6);
    }
}

//! The shapes of kvm_stat's screen lines, in every era of its curses TUI and of its `-1` batch
//! listing:
//!
//! - title: `kvm statistics` (2012), `kvm statistics - summary`, `kvm statistics - pid N (name)`
//!   (with `   Guest is DEAD   ` appended once the VM is gone);
//! - `regex filter: …` under the title (`-f`);
//! - the column header: ` Event  Total Current` (2012–2017, sample 18), or the current
//!   `'%-40s %10s%7s %8s'` with `Event`|`Guest Name`, `Total`, `%Total`, `CurAvg/s`;
//! - rows: `'%-40s %10d %8d'`-like `name total current` (old), `'%-40s %10d%7.1f %8s'`
//!   `name total %total rate` (current; the rate cell is blank in 2017–2018 versions when it is
//!   0), `'%-42s%10d%10d'` `name total delta` (`-1`); children indented by two spaces under
//!   their parent; the `'%-40s %10d        %8s'` `Total` row;
//! - status lines (`Collecting data...`, `No matching events reported yet`, …).
//!
//! Numbers are taken from the right, so stray characters pasted after the name (` halt_exits G
//! 204769 0`) cost the row nothing.

/// A screen title.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Title {
    /// `summary`, `pid 4242 (win10)`, or `None` for the bare 2012 title.
    pub scope: Option<String>,
    pub pid: Option<u32>,
    pub guest: Option<String>,
    /// The `Guest is DEAD` marker: the VM exited while the screen was shown.
    pub dead: bool,
}

/// Recognises `kvm statistics[ - summary| - pid N (name)]`.
pub(super) fn title(t: &str) -> Option<Title> {
    let rest = t.strip_prefix("kvm statistics")?;
    if !(rest.is_empty() || rest.starts_with([' ', '\t', '-'])) {
        return None;
    }
    let (rest, dead) = match rest.find("Guest is DEAD") {
        Some(at) => (rest.get(..at).unwrap_or(""), true),
        None => (rest, false),
    };
    let scope = rest.trim().trim_start_matches('-').trim();
    if !(scope.is_empty() || scope == "summary" || scope.starts_with("pid ")) {
        return None;
    }
    let mut title = Title {
        scope: (!scope.is_empty()).then(|| scope.to_string()),
        pid: None,
        guest: None,
        dead,
    };
    if let Some(pid) = scope.strip_prefix("pid ") {
        let (num, name) = pid.split_once(' ').unwrap_or((pid, ""));
        title.pid = num.parse().ok();
        let name = name.trim();
        let name = name
            .strip_prefix('(')
            .and_then(|n| n.strip_suffix(')'))
            .unwrap_or(name);
        title.guest = (!name.is_empty()).then(|| name.to_string());
    }
    Some(title)
}

/// What the columns after the name hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Columns {
    /// `Total Current` (old screens) or `total delta` (`-1`): a count and a rate.
    TotalRate,
    /// `Total %Total CurAvg/s`.
    TotalPercentRate,
}

/// A column header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Header {
    pub columns: Columns,
    /// `Guest Name` instead of `Event`: one row per VM (kvm_stat's `b` key, debugfs only).
    pub by_guest: bool,
    /// Columns of indentation before the first cell: rows indented further are children.
    pub indent: usize,
}

/// Recognises the column header of any era.
pub(super) fn header(raw: &str) -> Option<Header> {
    let t = raw.trim_start();
    let indent = raw.len() - t.len();
    let toks: Vec<&str> = t.split_ascii_whitespace().collect();
    let is = |i: usize, w: &str| toks.get(i).is_some_and(|t| t.eq_ignore_ascii_case(w));
    let (by_guest, at) = if is(0, "guest") && is(1, "name") {
        (true, 2)
    } else if is(0, "event") || is(0, "name") {
        (false, 1)
    } else {
        return None;
    };
    let columns = if toks.len() == at + 2 && is(at, "total") && is(at + 1, "current") {
        Columns::TotalRate
    } else if toks.len() == at + 3 && is(at, "total") && is(at + 1, "%total") {
        Columns::TotalPercentRate
    } else {
        return None;
    };
    Some(Header {
        columns,
        by_guest,
        indent,
    })
}

/// One row as printed.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct RowText {
    pub name: String,
    /// Tokens between the name and the numbers that belong to neither (pasted junk).
    pub strays: Vec<String>,
    pub total: u64,
    /// The rate cell: CurAvg/s, Current, or the `-1` delta. `None` when blank.
    pub rate: Option<u64>,
    /// A negative rate (the counters went down: a guest went away); kvm_stat hides these rows
    /// on current versions, old versions printed them.
    pub negative: bool,
    pub indent: usize,
}

#[derive(Debug, Clone, Copy)]
enum Num {
    Int(i128),
    Dec,
}

fn num(t: &str) -> Option<Num> {
    let digits = t.strip_prefix('-').unwrap_or(t);
    if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
        return t.parse().ok().map(Num::Int);
    }
    let (a, b) = digits.split_once('.')?;
    let ok = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    (ok(a) && ok(b)).then_some(Num::Dec)
}

/// Reads a row: numbers from the right (as many as `columns` holds), the name left of them.
/// `by_guest` rows keep every word of the name (guest names may have spaces).
pub(super) fn row(raw: &str, columns: Columns, by_guest: bool) -> Option<RowText> {
    let t = raw.trim_start();
    let indent = raw.len() - t.len();
    let toks: Vec<&str> = t.split_ascii_whitespace().collect();
    let mut max = match columns {
        Columns::TotalRate => 2,
        Columns::TotalPercentRate => 3,
    };
    if matches!(toks.last().and_then(|l| num(l)), Some(Num::Dec)) {
        max = 2; // `name total %total` with a blank rate cell
    }
    let mut nums = Vec::with_capacity(3);
    let mut split = toks.len();
    while nums.len() < max && split > 0 {
        match toks.get(split - 1).and_then(|t| num(t)) {
            Some(n) => nums.push(n),
            None => break,
        }
        split -= 1;
    }
    nums.reverse();
    let (total, rate) = match nums.as_slice() {
        [Num::Int(t)] | [Num::Int(t), Num::Dec] => (*t, None),
        [Num::Int(t), Num::Int(r)] | [Num::Int(t), Num::Dec, Num::Int(r)] => (*t, Some(*r)),
        _ => return None,
    };
    let total = u64::try_from(total).ok()?;
    // `%Total` is printed `%7.1f` on every row but `Total`: two integers there are a total and
    // a `%Total` cut short, not a total and a rate.
    let percent = nums.iter().any(|n| matches!(n, Num::Dec));
    let percent_missing = columns == Columns::TotalPercentRate && !percent;
    let words = toks.get(..split)?;
    let (name, strays) = if by_guest {
        (words.join(" "), Vec::new())
    } else {
        let name = words
            .iter()
            .copied()
            .filter(|w| super::names::is_field(w))
            .fold("", |best, w| if w.len() > best.len() { w } else { best });
        let after_name = words.iter().skip_while(|w| **w != name).skip(1);
        if after_name.clone().any(|w| {
            w.bytes()
                .next()
                .is_some_and(|b| b.is_ascii_digit() || b == b'-' || b == b'.')
        }) {
            // A number after the name that did not read as one (`2047x9`) is a damaged cell.
            return None;
        }
        let strays: Vec<String> = words
            .iter()
            .filter(|w| **w != name)
            .map(|w| (*w).to_string())
            .collect();
        let junk = |w: &String| w.len() <= 3 && super::names::is_field(w);
        if !strays.is_empty() && (nums.len() < max || strays.len() > 1 || !strays.iter().all(junk))
        {
            // A cell short and text beside the name: the text is a damaged cell, and the
            // numbers would be read in the wrong columns. A number beside the name is a cell
            // of another row (two rows on one line); other text that is no short word (`x#!`,
            // a header's words) is a damaged name or another line joined to this one. What is
            // left is a letter pasted beside the name (`halt_exits G  204769  0`).
            return None;
        }
        (name.to_string(), strays)
    };
    if name.is_empty() || (percent_missing && name != "Total") {
        return None;
    }
    Some(RowText {
        name,
        strays,
        total,
        rate: rate.and_then(|r| u64::try_from(r).ok()),
        negative: rate.is_some_and(|r| r < 0),
        indent,
    })
}

/// Why a line with a row's shape (a counter name, then numbers) cannot be read as a row;
/// `None` when it is not row-shaped (no number after a word, or only numbers).
pub(super) fn damage(raw: &str) -> Option<String> {
    let toks: Vec<&str> = raw.split_ascii_whitespace().collect();
    let numeric = |w: &str| {
        w.bytes()
            .next()
            .is_some_and(|b| b.is_ascii_digit() || b == b'-' || b == b'.')
    };
    let (first, rest) = toks.split_first()?;
    if toks.iter().all(|w| num(w).is_some()) {
        return rest.first().map(|_| "no counter name in it".to_string());
    }
    if !rest.iter().any(|w| numeric(w)) || toks.len() > 6 {
        return None;
    }
    if let Some(why) = crate::sources::unread::damage(raw) {
        return Some(why.into());
    }
    if !toks.iter().any(|w| super::names::is_field(w)) {
        return Some(format!("`{first}` is not a counter name"));
    }
    if let Some(bad) = rest
        .iter()
        .take_while(|w| !numeric(w))
        .find(|w| !super::names::is_field(w))
    {
        return Some(format!(
            "`{bad}` where a count was expected (the numbers after it would shift columns)"
        ));
    }
    let numbers = rest.iter().skip_while(|w| !numeric(w));
    if let Some(bad) = numbers.clone().find(|w| num(w).is_none()) {
        return Some(crate::sources::unread::not_a_count(bad));
    }
    if let Some(big) = numbers
        .clone()
        .find(|w| matches!(num(w), Some(Num::Int(v)) if v > i128::from(u64::MAX)))
    {
        return Some(format!("the count `{big}` is larger than 2^64−1"));
    }
    Some("its numbers do not fit the columns of the header".into())
}

/// Why `t`, inside a screen or listing, is a row cut short: a counter's name alone, without
/// its numbers (a known counter's, or any name on the line right after a row, `after_row`).
pub(super) fn cut_row(t: &str, after_row: bool) -> Option<&'static str> {
    let mut toks = t.split_ascii_whitespace();
    let name = toks.next()?;
    let named = after_row || super::names::is_known(name);
    (toks.next().is_none() && super::names::is_field(name) && named)
        .then_some("a counter's name without its numbers (the row cut short?)")
}

/// A status line of the TUI, and what it means for the screen.
pub(super) fn status(t: &str) -> Option<&'static str> {
    let s = t.trim();
    if s.starts_with("Collecting data") {
        Some("kvm_stat was still collecting data: this screen has no counts yet")
    } else if s.starts_with("No matching events reported yet") {
        Some("kvm_stat reported no matching events on this screen")
    } else if s.starts_with("Guest removed") {
        Some("kvm_stat saw the guest go away while this screen was shown")
    } else if s.starts_with("Updating pid filter") {
        Some("kvm_stat was switching its pid filter: the counts restart here")
    } else {
        None
    }
}

/// The regex of a `regex filter: …` line.
pub(super) fn filter(t: &str) -> Option<&str> {
    t.trim().strip_prefix("regex filter:").map(str::trim)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn titles() {
        let t = title("kvm statistics - pid 2137740 (openeuler-20_03)");
        assert_eq!(t.as_ref().and_then(|t| t.pid), Some(2_137_740));
        assert_eq!(t.and_then(|t| t.guest), Some("openeuler-20_03".to_string()));
        assert_eq!(title("kvm statistics").map(|t| t.scope), Some(None));
        assert!(title("kvm statistics - pid 7    Guest is DEAD   ").is_some_and(|t| t.dead));
        assert!(title("kvm statisticsfoo").is_none());
    }

    #[test]
    fn headers() {
        let h = header(" Event                                         Total %Total CurAvg/s");
        assert_eq!(
            h.map(|h| (h.columns, h.indent)),
            Some((Columns::TotalPercentRate, 1))
        );
        let h = header(" Event                                        Total Current  ");
        assert_eq!(h.map(|h| h.columns), Some(Columns::TotalRate));
        assert!(header(" Guest Name  Total %Total CurAvg/s").is_some_and(|h| h.by_guest));
        assert!(header(" Event name  Samples").is_none());
    }

    #[test]
    fn rows_from_the_right() {
        let r = row(" halt_exits G   204769   0", Columns::TotalRate, false);
        assert_eq!(
            r.as_ref().map(|r| (r.name.as_str(), r.total, r.rate)),
            Some(("halt_exits", 204_769, Some(0)))
        );
        assert_eq!(r.map(|r| r.strays), Some(vec!["G".to_string()]));
        let r = row(
            "   kvm_exit(HLT)   12   40.5   3",
            Columns::TotalPercentRate,
            false,
        );
        assert_eq!(
            r.map(|r| (r.total, r.rate, r.indent)),
            Some((12, Some(3), 3))
        );
        let r = row(" kvm_exit   1234   12.5", Columns::TotalPercentRate, false);
        assert_eq!(r.map(|r| r.rate), Some(None));
        assert!(row(" 1 2 3", Columns::TotalRate, false).is_none());
        assert!(row(" halt_exits 2047x9 0", Columns::TotalRate, false).is_none());
        assert_eq!(
            damage(" halt_exits 2047x9 0").as_deref(),
            Some("`2047x9` is not a count")
        );
        assert!(damage(" halt_exits 99999999999999999999 0").is_some_and(|w| w.contains("2^64")));
        assert_eq!(damage("Collecting data..."), None);
        assert!(row(" kvm_exit -3 1", Columns::TotalRate, false).is_none());
    }
}

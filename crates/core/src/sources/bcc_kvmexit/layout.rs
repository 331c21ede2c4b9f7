//! The lines of bcc's `kvmexit.py` output (iovisor/bcc `tools/kvmexit.py`, 2021–): the command
//! line that introduces a run in pasted examples, the
//! `"Display kvm exit reasons and statistics for %s"` line with its context and
//! `" after sleeping %d secs."` / `"... Hit Ctrl-C to end."`, the header
//! `"%s%-35s %s" % (header_format, "KVM_EXIT_REASON", "COUNT")` (`header_format` is
//! `"PID      TID      "`, `"TID      "`, `"TIDS     "` or empty), and the rows of each mode:
//! `"%-8u %-8u %-35s %-8u"` (all threads), `"%-8u %-35s %-8u"` (`-p -a`, `-T`) and
//! `"%-35s %-8u"` (`-p`, `-p -v`, `-t`). Also the aarch64 port of the tool (kvmexitaarch64.py,
//! kylinos 2023): `TGID TID COMM KVM_EXIT_REASON COUNT AVG_TIME`, rows
//! `"%-8u %-8u %-16s %-16s %-8u %-11.1f"` with the thread name printed as Python bytes
//! (`b'CPU 1/KVM'`), the reason as `EC_WFx`, and the mean exit-to-entry time in ns.

/// What a run counts, from its `Display …` line or its command line.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(super) struct Context {
    /// The text after `for` in the `Display …` line (`all threads`, `PID 42 VCPU 0`, …).
    pub text: Option<String>,
    pub pid: Option<u32>,
    pub vcpu: Option<u32>,
    pub tids: Vec<u32>,
    /// `after sleeping N secs.` or the duration argument.
    pub duration_s: Option<u64>,
    /// `Hit Ctrl-C to end.`: the run lasted until an unknown moment.
    pub until_ctrl_c: bool,
}

/// A kvmexit command line (after an optional shell prompt, `sudo` or `python3`): its text from
/// the program on, and the context its arguments give.
pub(super) fn command(t: &str) -> Option<(String, Context)> {
    let toks: Vec<&str> = t.split_ascii_whitespace().collect();
    let at = toks.iter().position(|w| {
        let prog = w.rsplit('/').next().unwrap_or(w);
        prog == "kvmexit" || prog == "kvmexit.py"
    })?;
    let prompt = |w: &&str| {
        w.ends_with(['#', '$', '>', '%'])
            || w.starts_with('[')
            || matches!(*w, "sudo" | "python" | "python3" | "python2")
    };
    if !toks.get(..at)?.iter().all(prompt) {
        return None;
    }
    let args = toks.get(at + 1..).unwrap_or_default();
    let mut ctx = Context::default();
    let mut want: Option<&str> = None;
    for a in args {
        let a = a.trim_matches(['\'', '"']);
        match want.take() {
            Some("-p") => ctx.pid = a.parse().ok(),
            Some("-v") => ctx.vcpu = a.parse().ok(),
            Some("-t") => ctx.tids = a.parse().ok().into_iter().collect(),
            Some("-T") => ctx.tids = ids(a),
            Some(_) => {}
            None if a.starts_with('-') => want = option_name(a),
            None => {
                if let Ok(secs) = a.parse() {
                    ctx.duration_s = Some(secs);
                }
            }
        }
    }
    Some((toks.get(at..).unwrap_or_default().join(" "), ctx))
}

/// The short spelling of an option that takes a value; `None` for flags (`-a`, `-h`).
fn option_name(a: &str) -> Option<&'static str> {
    match a {
        "-p" | "--pid" => Some("-p"),
        "-v" | "--vcpu" => Some("-v"),
        "-t" | "--tid" => Some("-t"),
        "-T" | "--tids" => Some("-T"),
        "-m" | "--max-parallelism" => Some("-m"),
        _ => None,
    }
}

/// Every number in `text` (`['1273820', '1273819']`, `1273820,1273819`).
fn ids(text: &str) -> Vec<u32> {
    text.split(|c: char| !c.is_ascii_digit())
        .filter_map(|n| n.parse().ok())
        .collect()
}

/// The `Display kvm exit reasons and statistics for …` line.
pub(super) fn display(t: &str) -> Option<Context> {
    let rest = t
        .trim()
        .strip_prefix("Display kvm exit reasons and statistics for ")?;
    let mut ctx = Context::default();
    let text = if let Some((what, secs)) = rest.split_once(" after sleeping ") {
        ctx.duration_s = secs
            .trim_end_matches('.')
            .trim_end_matches(" secs")
            .parse()
            .ok();
        what
    } else if let Some(what) = rest.strip_suffix("... Hit Ctrl-C to end.") {
        ctx.until_ctrl_c = true;
        what
    } else {
        rest.trim_end_matches('.')
    };
    let words: Vec<&str> = text.split_ascii_whitespace().collect();
    match words.as_slice() {
        ["PID", pid, rest @ ..] => {
            ctx.pid = pid.parse().ok();
            if let ["VCPU", vcpu] = rest {
                ctx.vcpu = vcpu.parse().ok();
            }
        }
        ["TID", tid] => ctx.tids = tid.parse().ok().into_iter().collect(),
        ["TIDS", ..] => ctx.tids = ids(text),
        _ => {}
    }
    ctx.text = Some(text.trim().to_string());
    Some(ctx)
}

/// Which id columns come before the reason.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Layout {
    /// `PID TID KVM_EXIT_REASON COUNT` (all threads).
    PidTid,
    /// `TID KVM_EXIT_REASON COUNT` (`-p -a`) or `TIDS KVM_EXIT_REASON COUNT` (`-T`).
    Tid,
    /// `KVM_EXIT_REASON COUNT` (`-p`, `-p -v`, `-t`).
    Reason,
    /// `TGID TID COMM KVM_EXIT_REASON COUNT AVG_TIME` (the aarch64 port).
    TgidTidComm,
}

impl Layout {
    fn ids(self) -> usize {
        match self {
            Layout::PidTid | Layout::TgidTidComm => 2,
            Layout::Tid => 1,
            Layout::Reason => 0,
        }
    }
}

/// The column header of any mode.
pub(super) fn header(t: &str) -> Option<Layout> {
    let words: Vec<&str> = t.split_ascii_whitespace().collect();
    match words.as_slice() {
        ["PID", "TID", "KVM_EXIT_REASON", "COUNT"] => Some(Layout::PidTid),
        ["TID" | "TIDS", "KVM_EXIT_REASON", "COUNT"] => Some(Layout::Tid),
        ["KVM_EXIT_REASON", "COUNT"] => Some(Layout::Reason),
        [
            "TGID",
            "TID",
            "COMM",
            "KVM_EXIT_REASON",
            "COUNT",
            "AVG_TIME",
        ] => Some(Layout::TgidTidComm),
        _ => None,
    }
}

/// Where a header that has more text after it on its line ends (after `COUNT` or, for the
/// aarch64 port, `AVG_TIME`); `None` for a header alone and for any other line.
pub(super) fn header_end(t: &str) -> Option<usize> {
    ["AVG_TIME", "COUNT"].iter().find_map(|last| {
        let end = t.find(last)? + last.len();
        (header(&t[..end]).is_some() && !t[end..].trim_ascii().is_empty()).then_some(end)
    })
}

/// One row as printed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct RawRow {
    pub pid: Option<u32>,
    pub tid: Option<u32>,
    pub reason: String,
    pub count: u64,
    /// The exits' total handling time, from the mean the aarch64 port prints (ns).
    pub total_ns: Option<u64>,
    /// Words that fit no column (pasted junk).
    pub strays: Vec<String>,
}

/// Reads a row of `layout`: the count last, the ids first, and the reason between them (the
/// longest word there, so a stray character pasted into the row does not take its place).
pub(super) fn row(t: &str, layout: Layout) -> Option<RawRow> {
    let words: Vec<&str> = t.split_ascii_whitespace().collect();
    let (words, mean_ns) = match layout {
        Layout::TgidTidComm => {
            let (mean, rest) = words.split_last()?;
            let mean: f64 = mean
                .parse()
                .ok()
                .filter(|m: &f64| m.is_finite() && *m >= 0.0)?;
            (rest, Some(mean))
        }
        _ => (words.as_slice(), None),
    };
    let (count, rest) = words.split_last()?;
    let count: u64 = count.parse().ok()?;
    let (id_words, mut middle) = rest.split_at_checked(layout.ids())?;
    if layout == Layout::TgidTidComm {
        // The thread name (`b'CPU 1/KVM'`) comes before the reason: the reason is the last word.
        // A number among them is a second row joined to this one, not a thread name.
        if middle.iter().any(|w| w.parse::<f64>().is_ok()) {
            return None;
        }
        middle = middle.get(middle.len().checked_sub(1)?..)?;
    }
    let id_values: Vec<u32> = id_words
        .iter()
        .map(|w| w.parse().ok())
        .collect::<Option<_>>()?;
    let reason = middle
        .iter()
        .copied()
        .filter(|w| is_reason(w))
        .fold("", |best, w| if w.len() > best.len() { w } else { best });
    if reason.is_empty() {
        return None;
    }
    let (pid, tid) = match (layout, id_values.as_slice()) {
        (Layout::PidTid | Layout::TgidTidComm, [pid, tid]) => (Some(*pid), Some(*tid)),
        (Layout::Tid, [tid]) => (None, Some(*tid)),
        _ => (None, None),
    };
    Some(RawRow {
        pid,
        tid,
        reason: reason.to_string(),
        count,
        total_ns: mean_ns.map(|m| (m * count as f64).round() as u64),
        strays: middle
            .iter()
            .filter(|w| **w != reason)
            .map(|s| (*s).to_string())
            .collect(),
    })
}

/// Why a line that has a row's shape (an exit reason or a number in it, about as many words as
/// `layout` has columns) cannot be read as a row of `layout`; `None` when it is not row-shaped.
pub(super) fn damage(t: &str, layout: Layout) -> Option<String> {
    let words: Vec<&str> = t.split_ascii_whitespace().collect();
    // A count or id with a typo in it still has a digit.
    let numeric = |w: &&str| w.bytes().any(|b| b.is_ascii_digit());
    let known = |w: &&str| crate::decode::exit_reason::lookup_name(None, w).is_some();
    // A name cut short (`EXTERNAL_I`) is no longer a known one.
    let cut_name = |w: &&str| {
        is_reason(w)
            && (w.contains('_')
                || w.bytes()
                    .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit()))
    };
    let shaped = words.iter().any(numeric)
        || words.iter().any(known)
        || words.len() <= layout.ids() + 2 && words.iter().any(cut_name);
    if words.iter().filter(|w| known(w)).count() >= 2 && words.iter().any(numeric) {
        return Some("two exit reasons on one line (two rows joined?)".into());
    }
    // The aarch64 port's thread name has a blank in it (`b'CPU 1/KVM'`).
    let most = layout.ids() + 5 + usize::from(layout == Layout::TgidTidComm);
    if !shaped || words.len() > most {
        return None;
    }
    if let Some(why) = crate::sources::unread::damage(t) {
        return Some(why.into());
    }
    let words = match (layout, words.split_last()) {
        (Layout::TgidTidComm, Some((mean, rest))) => {
            if mean.parse::<f64>().is_err() {
                return Some(format!("`{mean}` is not a mean time in ns"));
            }
            rest
        }
        _ => words.as_slice(),
    };
    let (count, rest) = words.split_last()?;
    if rest.is_empty() {
        return Some(if known(count) {
            "no count after the exit reason".into()
        } else {
            "no exit reason in it".into()
        });
    }
    if count.parse::<u64>().is_err() {
        return Some(crate::sources::unread::not_a_count(count));
    }
    let Some((ids, middle)) = rest.split_at_checked(layout.ids()) else {
        return Some(format!(
            "expected {} id column(s) before the exit reason",
            layout.ids()
        ));
    };
    if let Some(bad) = ids.iter().find(|w| w.parse::<u32>().is_err()) {
        return Some(format!("`{bad}` is not a process or thread id"));
    }
    (!middle.iter().any(|w| is_reason(w))).then(|| "no exit reason in it".to_string())
}

/// A word that can be an exit-reason name: `EXIT_REASON_HLT`, `MSR_WRITE`, `N/A`,
/// `TPAUSEN/A` (a missing comma in bcc's table), `npf`.
fn is_reason(w: &str) -> bool {
    w.bytes().any(|b| b.is_ascii_alphabetic())
        && w.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'/' | b'-'))
}

/// The layout that a row without a header above it most likely has, from its word count.
pub(super) fn guess_layout(t: &str) -> Option<Layout> {
    let layout = match t.split_ascii_whitespace().count() {
        4 => Layout::PidTid,
        3 => Layout::Tid,
        2 => Layout::Reason,
        _ => return None,
    };
    row(t, layout).map(|_| layout)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_and_contexts() {
        let (label, ctx) = command("# ./kvmexit.py -p 1273795 -v 0 4").unwrap_or_default();
        assert_eq!(label, "./kvmexit.py -p 1273795 -v 0 4");
        assert_eq!(
            (ctx.pid, ctx.vcpu, ctx.duration_s),
            (Some(1_273_795), Some(0), Some(4))
        );
        let (_, ctx) = command("$ sudo kvmexit -T '1273820,1273819'").unwrap_or_default();
        assert_eq!(ctx.tids, vec![1_273_820, 1_273_819]);
        assert!(command("see kvmexit.py for details").is_none());
        let d = display(
            "Display kvm exit reasons and statistics for PID 1273795 VCPU 0 after sleeping 4 secs.",
        );
        assert_eq!(
            d.map(|c| (c.pid, c.vcpu, c.duration_s)),
            Some((Some(1_273_795), Some(0), Some(4)))
        );
        let d = display(
            "Display kvm exit reasons and statistics for TIDS ['1273820', '1273819']... Hit Ctrl-C to end.",
        );
        assert_eq!(
            d.map(|c| (c.tids, c.until_ctrl_c)),
            Some((vec![1_273_820, 1_273_819], true))
        );
    }

    #[test]
    fn rows() {
        let r = row(
            "1273551  1273568  EXIT_REASON_HLT                     12",
            Layout::PidTid,
        );
        assert_eq!(
            r.map(|r| (r.pid, r.tid, r.reason, r.count)),
            Some((
                Some(1_273_551),
                Some(1_273_568),
                "EXIT_REASON_HLT".into(),
                12
            ))
        );
        assert_eq!(
            header("TIDS     KVM_EXIT_REASON                     COUNT"),
            Some(Layout::Tid)
        );
        assert_eq!(guess_layout("MSR_WRITE      2076"), Some(Layout::Reason));
        assert!(row("HLT x", Layout::Reason).is_none());
        let r = row("1273551  1273568  EXIT_REASON_HLT G   12", Layout::PidTid);
        assert_eq!(
            r.map(|r| (r.reason, r.strays)),
            Some(("EXIT_REASON_HLT".into(), vec!["G".into()]))
        );
        assert!(row("12 34", Layout::Reason).is_none());
        let joined = "PID      TID      KVM_EXIT_REASON                     COUNT^C1273551  1273568  EXIT_REASON_HLT                     12";
        assert_eq!(header_end(joined), joined.find("^C"));
        assert_eq!(
            header_end("PID      TID      KVM_EXIT_REASON     COUNT   "),
            None
        );
        assert_eq!(
            header("TGID     TID      COMM             KVM_EXIT_REASON  COUNT    AVG_TIME    "),
            Some(Layout::TgidTidComm)
        );
        let r = row(
            "24919    24938    b'CPU 1/KVM'     EC_SYS64         8        8545.0     ",
            Layout::TgidTidComm,
        );
        assert_eq!(
            r.map(|r| (r.pid, r.tid, r.reason, r.count, r.total_ns, r.strays.len())),
            Some((
                Some(24_919),
                Some(24_938),
                "EC_SYS64".into(),
                8,
                Some(68_360),
                0
            ))
        );
        assert!(damage("24919 24938 b'CPU 1/KVM' EC_SYS64 8 x", Layout::TgidTidComm).is_some());
        let joined = "24919 24938 b'CPU 1/KVM' EC_WFx 143 34780751.4 24919 24938 b'CPU 1/KVM' EC_SYS64 8 8545.0";
        assert!(row(joined, Layout::TgidTidComm).is_none());
        assert!(damage(joined, Layout::TgidTidComm).is_some_and(|w| w.contains("two")));
    }
}

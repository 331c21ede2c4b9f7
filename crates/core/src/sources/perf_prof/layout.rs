//! The lines of perf-prof's `kvm-exit` profiler (OpenCloudOS/perf-prof `kvm-exit.c`, 2022–):
//!
//! - the interval stamp `print_time()` writes, `YYYY-MM-DD HH:MM:SS.uuuuuu ` (a `^C` glued in
//!   front of the last one), which also starts each `--than` slow-exit event line;
//! - the title `kvm-exit latency`, in 2022 per instance `kvm-exit latency THREAD 126953`, and
//!   the early `kvm-exit latency(ns)` log2 histogram (skipped);
//! - the header `"%-*s %8s %16s %9s %9s %12s %6s"` (`exit_reason calls total(us) min(us)
//!   avg(us) max(us) %gsys`, the name column 20 wide for VMX and 32 otherwise), later with
//!   `p99(us)`, without `%gsys` in the first versions, `(kcyc)` units with `--tsc`, and a
//!   leading `[CPU]` or `[THREAD]` column with `--perins`;
//! - the dashed rule under it;
//! - rows `"%-*s %8lu %16.3f %9.3f %9.3f %12.3f %6.2f"`, after `"[%*d] "` with `--perins`;
//! - the command line that introduces a run in pasted examples.
//!
//! The docs show the same lines behind a `# ` (a shell comment in a Markdown block): callers
//! strip it with [`uncomment`].

use crate::sources::kvm_stat::clock;

/// A line without the `#` comment marker of Markdown-pasted output.
pub(super) fn uncomment(t: &str) -> &str {
    match t.strip_prefix('#') {
        Some(rest) => rest.trim_start(),
        None => t,
    }
}

/// A leading `YYYY-MM-DD HH:MM:SS.frac`: its text, its nanoseconds, and the rest of the line.
pub(super) fn stamp(t: &str) -> Option<(&str, i64, &str)> {
    let mut words = t.splitn(3, ' ');
    let date = words.next()?;
    let time = words.next()?;
    let ns = clock::datetime(date, time)?;
    let text = t.get(..date.len() + 1 + time.len())?;
    Some((text, ns, words.next().unwrap_or("").trim()))
}

/// Which instances `--perins` rows belong to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(super) enum Instance {
    Cpu,
    Thread,
}

impl Instance {
    /// The word for notes.
    pub(super) fn word(self) -> &'static str {
        match self {
            Instance::Cpu => "cpu",
            Instance::Thread => "thread",
        }
    }
}

/// The `kvm-exit latency` title: `Some(None)` plain, `Some(Some(..))` naming an instance (2022
/// `--perins`). The log2 histogram title `kvm-exit latency(ns)` is not a title.
pub(super) fn title(t: &str) -> Option<Option<(Instance, u32)>> {
    let rest = t.strip_prefix("kvm-exit latency")?;
    if rest.starts_with('(') {
        return None;
    }
    let words: Vec<&str> = rest.split_ascii_whitespace().collect();
    match words.as_slice() {
        [] => Some(None),
        ["THREAD", n] => Some(n.parse().ok().map(|n| (Instance::Thread, n))),
        ["CPU", n] => Some(n.parse().ok().map(|n| (Instance::Cpu, n))),
        _ => None,
    }
}

/// Lines of the early versions' log2 histogram (`kvm-exit latency(ns)`, `ns : count
/// distribution`, `256 -> 511 : 12 |**** |`).
pub(super) fn histogram(t: &str) -> bool {
    t.starts_with("kvm-exit latency(")
        || t.contains("latency(ns)")
        || (t.contains(':') && t.contains("distribution"))
        || (t.contains(" -> ") && t.contains(':') && t.contains('|'))
}

/// A column after `exit_reason`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Column {
    Calls,
    Total,
    Min,
    Avg,
    P99,
    Max,
    Gsys,
    Other,
}

/// A column header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Header {
    pub instance: Option<Instance>,
    pub columns: Vec<Column>,
    /// Times in microseconds; `false` with `--tsc` (kilocycles), which cannot become ns.
    pub micros: bool,
}

/// Recognises the header of any version.
pub(super) fn header(t: &str) -> Option<Header> {
    let mut words = t.split_ascii_whitespace().peekable();
    let instance = match words.peek().copied() {
        Some("[CPU]") => Some(Instance::Cpu),
        Some("[THREAD]") => Some(Instance::Thread),
        _ => None,
    };
    if instance.is_some() {
        words.next();
    }
    if words.next()? != "exit_reason" {
        return None;
    }
    if t.contains("--") {
        return None; // the rule glued to it: two lines, not a header
    }
    let mut micros = true;
    let columns: Vec<Column> = words
        .map(|w| {
            let (name, unit) = match w.split_once('(') {
                Some((n, u)) => (n, Some(u.trim_end_matches(')'))),
                None => (w, None),
            };
            if unit.is_some_and(|u| u != "us") {
                micros = false;
            }
            match name {
                "calls" => Column::Calls,
                "total" => Column::Total,
                "min" => Column::Min,
                "avg" => Column::Avg,
                "p99" => Column::P99,
                "max" => Column::Max,
                "%gsys" => Column::Gsys,
                _ => Column::Other,
            }
        })
        .collect();
    columns.contains(&Column::Calls).then_some(Header {
        instance,
        columns,
        micros,
    })
}

/// How many columns the dashed rule `t` draws (one dash group per column, the name and an
/// instance column included).
pub(super) fn rule_columns(t: &str) -> usize {
    t.split_ascii_whitespace().count()
}

/// How many columns `h` has, as its rule draws them.
pub(super) fn header_columns(h: &Header) -> usize {
    h.columns.len() + 1 + usize::from(h.instance.is_some())
}

/// The dashed rule under a header.
pub(super) fn rule(t: &str) -> bool {
    !t.is_empty() && t.bytes().all(|b| b == b'-' || b == b' ')
}

/// A perf-prof kvm-exit command line (after an optional prompt or `sudo`): its text from the
/// program on, and its `-i` interval in ms.
pub(super) fn command(t: &str) -> Option<(String, Option<u64>)> {
    let toks: Vec<&str> = t.split_ascii_whitespace().collect();
    let at = toks
        .iter()
        .position(|w| w.rsplit('/').next().is_some_and(|p| p == "perf-prof"))?;
    if toks.get(at + 1) != Some(&"kvm-exit") {
        return None;
    }
    let prompt = |w: &&str| w.ends_with(['#', '$', '>', '%']) || w.starts_with('[') || *w == "sudo";
    if !toks.get(..at)?.iter().all(prompt) {
        return None;
    }
    let mut interval = None;
    let mut args = toks.iter().skip(at + 2);
    while let Some(a) = args.next() {
        if let Some(v) = a
            .strip_prefix("--interval=")
            .or_else(|| a.strip_prefix("-i").filter(|v| !v.is_empty()))
        {
            interval = v.parse().ok();
        } else if matches!(*a, "-i" | "--interval") {
            interval = args.next().and_then(|v| v.parse().ok());
        }
    }
    Some((toks.get(at..).unwrap_or_default().join(" "), interval))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes() {
        let h = header(
            "[THREAD] exit_reason       calls   total(us)     min(us)     avg(us)     p99(us)     max(us)  %gsys",
        );
        assert_eq!(h.as_ref().and_then(|h| h.instance), Some(Instance::Thread));
        assert_eq!(h.map(|h| h.columns.len()), Some(7));
        assert!(header("exit_reason calls total(kcyc) min(kcyc)").is_some_and(|h| !h.micros));
        assert_eq!(
            title("kvm-exit latency THREAD 126953"),
            Some(Some((Instance::Thread, 126_953)))
        );
        assert_eq!(title("kvm-exit latency(ns)"), None);
        assert!(rule("-------------------- -------- ----"));
        let s = stamp("2022-04-22 17:39:26.535148            <...> 126953 .... [078]");
        assert_eq!(s.map(|s| s.0), Some("2022-04-22 17:39:26.535148"));
        assert_eq!(
            command("[root@kvm ~]# ./perf-prof kvm-exit -p 126934 -i 1000 --than 5ms"),
            Some((
                "./perf-prof kvm-exit -p 126934 -i 1000 --than 5ms".into(),
                Some(1000)
            ))
        );
        assert_eq!(uncomment("# EXIT_HLT  911"), "EXIT_HLT  911");
    }
}

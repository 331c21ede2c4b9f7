//! Lines that are not events: which are expected furniture (ftrace's `#` header block,
//! trace-cmd's `cpus=`/`version =` preamble, shell prompts, perf's banners) and are skipped
//! quietly, and which say something about the input (elisions, an interrupted last line, lost
//! events, unreadable lines) and are noted with their line number.

use super::fields::{all_digits, dec};

/// What a non-event line is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Skip {
    /// Furniture: nothing to say.
    Quiet,
    /// `...`: the author cut lines out.
    Elision,
    /// `^C` in the line: the capture was interrupted (and the line may be cut short).
    Interrupted,
    /// The tool says it lost events (`CPU:2 [LOST 12 EVENTS]`, `lost 3 chunks`).
    Lost(Option<u64>),
    /// Something else that does not read as an event.
    Unknown,
}

/// Classifies a trimmed, non-empty line that is not an event.
pub(super) fn classify(t: &str) -> Skip {
    if t.contains("^C") || t.contains('\u{3}') {
        return Skip::Interrupted;
    }
    if t.starts_with('#') {
        return Skip::Quiet;
    }
    if crate::sources::lines::elision(t) {
        return Skip::Elision;
    }
    if let Some(at) = t.find("[LOST ") {
        return Skip::Lost(dec(&t[at + 6..]));
    }
    if let Some(at) = t.find(" lost ")
        && t.contains(" chunks")
    {
        return Skip::Lost(dec(&t[at + 6..]));
    }
    if quiet(t) {
        return Skip::Quiet;
    }
    Skip::Unknown
}

/// Preambles, banners and prompts that every capture of these tools may carry.
fn quiet(t: &str) -> bool {
    // Shell prompts and the commands typed at them.
    if t.starts_with("$ ") || t.starts_with("% ") || t == "$" || prompt(t) {
        return true;
    }
    // trace-cmd report's preamble: `cpus=4`, `version = 7`, `CPU 3 is empty`,
    // `CPU0 data recorded at offset=0x…`, `    1234 bytes in size`.
    if let Some(v) = t.strip_prefix("cpus=") {
        return all_digits(v);
    }
    if t.starts_with("version =") || t.starts_with("version=") {
        return true;
    }
    if t.starts_with("CPU") && (t.ends_with(" is empty") || t.contains(" data recorded at ")) {
        return true;
    }
    if t.ends_with(" bytes in size") {
        return true;
    }
    // perf's banners and rules: `PerfTop: …`, `-----`, `Warning:`, `[ perf record: … ]`.
    t.starts_with("PerfTop:")
        || t.bytes().all(|b| b == b'-' || b == b'=' || b == b' ')
        || t.starts_with("Warning:")
        || t.starts_with("[ perf record:")
        || t.starts_with("perf ")
        || t.starts_with("sudo ")
        || t.starts_with("trace-cmd ")
}

/// `user@host:~/dir$ cmd` / `[root@host dir]# cmd` / `root@host:~# cmd`.
fn prompt(t: &str) -> bool {
    let head = match t.find(['$', '#']) {
        Some(i) if t[i + 1..].is_empty() || t[i + 1..].starts_with(' ') => &t[..i],
        _ => return false,
    };
    (head.contains('@') && !head.contains(' ')) || (head.starts_with('[') && head.ends_with(']'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_of_lines() {
        assert_eq!(classify("# tracer: nop"), Skip::Quiet);
        assert_eq!(
            classify("$ sudo ./scripts/trace-kvm.sh --report"),
            Skip::Quiet
        );
        assert_eq!(classify("root@host:~# perf script"), Skip::Quiet);
        assert_eq!(classify("[root@host ~]# trace-cmd report"), Skip::Quiet);
        assert_eq!(classify("cpus=64"), Skip::Quiet);
        assert_eq!(classify("CPU 3 is empty"), Skip::Quiet);
        assert_eq!(classify("..."), Skip::Elision);
        assert_eq!(
            classify("qemu-system-x86^Ctrace-cmd: Received SIGINT"),
            Skip::Interrupted
        );
        assert_eq!(classify("CPU:2 [LOST 12 EVENTS]"), Skip::Lost(Some(12)));
        assert_eq!(
            classify("Processed 7378132 events and lost 1 chunks!"),
            Skip::Lost(Some(1))
        );
        assert_eq!(classify("hello world"), Skip::Unknown);
    }
}

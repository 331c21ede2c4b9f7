//! The `kvm_stat …` command line that introduces a run in a paste: its label, and the pid and
//! delay it names.

/// What a `kvm_stat …` command line says about the output under it.
#[derive(Debug, Clone, Default)]
pub(super) struct Hint {
    pub label: String,
    pub pid: Option<u32>,
    pub delay: Option<f64>,
}

/// Recognises a kvm_stat command line (after an optional shell prompt or `sudo`).
pub(super) fn command(t: &str) -> Option<Hint> {
    let toks: Vec<&str> = t.split_ascii_whitespace().collect();
    let at = toks
        .iter()
        .position(|w| *w == "kvm_stat" || w.ends_with("/kvm_stat"))?;
    let prompt = |w: &&str| w.ends_with(['#', '$', '>', '%']) || *w == "sudo" || w.starts_with('[');
    if !toks.get(..at)?.iter().all(prompt) {
        return None;
    }
    let args = toks.get(at + 1..).unwrap_or_default();
    let mut hint = Hint {
        label: toks.get(at..).unwrap_or_default().join(" "),
        ..Hint::default()
    };
    let mut want: Option<char> = None;
    for a in args {
        match want.take() {
            Some('p') => hint.pid = a.parse().ok(),
            Some('s') => hint.delay = a.parse().ok(),
            _ => {}
        }
        if let Some(v) = a.strip_prefix("--pid=") {
            hint.pid = v.parse().ok();
        } else if let Some(v) = a.strip_prefix("--set-delay=") {
            hint.delay = v.parse().ok();
        } else if *a == "--pid" {
            want = Some('p');
        } else if *a == "--set-delay" {
            want = Some('s');
        } else if let Some(flags) = a.strip_prefix('-').filter(|f| !f.starts_with('-')) {
            want = flags.chars().last().filter(|c| matches!(c, 'p' | 's'));
        }
    }
    Some(hint)
}

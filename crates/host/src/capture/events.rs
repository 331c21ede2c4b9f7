//! Which tracepoints a capture enables: the `--events` list (`kvm`, `kvm:*`, `kvm:kvm_pio`,
//! `kvm_pio`, `kvmmmu`, `irq:irq_handler_*`; default `kvm`) matched against the kernel's
//! `available_events`, so only events that exist here are asked for; their `format` files
//! (decoded at run time, so a changed layout is read correctly); and the `common_pid` filter
//! that keeps only the selected VMMs' threads in the kernel.

use std::path::Path;

use virtlens_core::decode::{EventFormat, parse_event_format};

use super::error::CaptureError;

/// The events captured when `--events` is not given.
pub(crate) const DEFAULT: &str = "kvm";
/// More threads than this and the kernel filter gets too long: filter in userspace instead.
pub(crate) const MAX_FILTER_THREADS: usize = 256;

/// `(system, name)` of each event `spec` selects among `available` (the text of
/// `available_events`, `system:name` per line), in the kernel's order.
pub(crate) fn select(
    available: &str,
    spec: &[String],
) -> Result<Vec<(String, String)>, CaptureError> {
    let all: Vec<(&str, &str)> = available
        .lines()
        .filter_map(|l| l.trim().split_once(':'))
        .collect();
    let items: Vec<&str> = if spec.is_empty() {
        vec![DEFAULT]
    } else {
        spec.iter()
            .flat_map(|s| s.split(','))
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .collect()
    };
    if items.is_empty() {
        return Err(CaptureError::Usage("--events names no event".into()));
    }
    let mut chosen = vec![false; all.len()];
    for item in &items {
        let (sys_pat, name_pat) = match item.split_once(':') {
            Some((s, n)) => (s, n),
            // A bare word is a system (`kvm`) if one is called so, else an event name.
            None if all.iter().any(|(s, _)| s == item) => (*item, "*"),
            None => ("*", *item),
        };
        let mut any = false;
        for (i, (s, n)) in all.iter().enumerate() {
            if glob(sys_pat, s) && glob(name_pat, n) {
                chosen[i] = true;
                any = true;
            }
        }
        if !any {
            let hint = if sys_pat == "kvm" || name_pat.starts_with("kvm") {
                " (is the kvm module loaded?)"
            } else {
                ""
            };
            return Err(CaptureError::NoEvents(format!(
                "no tracepoint on this kernel matches `{item}`{hint}; see {}",
                "/sys/kernel/tracing/available_events"
            )));
        }
    }
    Ok(all
        .iter()
        .zip(chosen)
        .filter(|(_, c)| *c)
        .map(|((s, n), _)| (s.to_string(), n.to_string()))
        .collect())
}

/// `pattern` with `*` matching any run of characters.
fn glob(pattern: &str, text: &str) -> bool {
    match pattern.split_once('*') {
        None => pattern == text,
        Some((head, tail)) => {
            let Some(rest) = text.strip_prefix(head) else {
                return false;
            };
            if tail.is_empty() {
                return true;
            }
            (0..=rest.len())
                .filter(|&i| rest.is_char_boundary(i))
                .any(|i| glob(tail, &rest[i..]))
        }
    }
}

/// The formats of `events`, read from `events_dir/SYSTEM/NAME/format`; events whose format
/// cannot be read or parsed are left out with a note.
pub(crate) fn formats(
    events_dir: &Path,
    events: &[(String, String)],
) -> (Vec<EventFormat>, Vec<String>) {
    let mut out = Vec::with_capacity(events.len());
    let mut notes = Vec::new();
    for (system, name) in events {
        let path = events_dir.join(system).join(name).join("format");
        match super::tracefs::read(&path) {
            Ok(text) => match parse_event_format(system, &text) {
                Ok(f) => out.push(f),
                Err(e) => notes.push(format!("{system}:{name} is left out: {e}")),
            },
            Err(e) => notes.push(format!(
                "{system}:{name} is left out: {}: {e}",
                path.display()
            )),
        }
    }
    (out, notes)
}

/// The filter keeping only events of threads `tids`: `common_pid == 1 || common_pid == 2`.
pub(crate) fn pid_filter(tids: &[u32]) -> String {
    tids.iter()
        .map(|t| format!("common_pid == {t}"))
        .collect::<Vec<_>>()
        .join(" || ")
}

#[cfg(test)]
mod tests {
    use super::*;

    const AVAILABLE: &str = "kvm:kvm_pio\nkvm:kvm_exit\nkvmmmu:kvm_mmu_pagetable_walk\nirq:irq_handler_entry\nirq:softirq_entry\n";

    fn sel(spec: &[&str]) -> Result<Vec<String>, String> {
        let spec: Vec<String> = spec.iter().map(|s| s.to_string()).collect();
        select(AVAILABLE, &spec)
            .map(|v| v.into_iter().map(|(s, n)| format!("{s}:{n}")).collect())
            .map_err(|e| e.to_string())
    }

    #[test]
    fn event_lists() {
        assert_eq!(sel(&[]).unwrap(), ["kvm:kvm_pio", "kvm:kvm_exit"]);
        assert_eq!(sel(&["kvm_exit"]).unwrap(), ["kvm:kvm_exit"]);
        assert_eq!(
            sel(&["kvm:kvm_pio,kvmmmu"]).unwrap(),
            ["kvm:kvm_pio", "kvmmmu:kvm_mmu_pagetable_walk"]
        );
        assert_eq!(sel(&["irq:*handler*"]).unwrap(), ["irq:irq_handler_entry"]);
        assert_eq!(sel(&["kvm", "kvm:kvm_pio"]).unwrap().len(), 2);
        let e = sel(&["kvm:kvm_nope"]).unwrap_err();
        assert!(
            e.contains("kvm:kvm_nope") && e.contains("kvm module"),
            "{e}"
        );
        assert!(sel(&[","]).is_err());
        assert!(select("", &[]).is_err());
    }

    #[test]
    fn globs_and_filters() {
        assert!(glob("*", "x"));
        assert!(glob("kvm_*", "kvm_pio"));
        assert!(glob("*_entry", "irq_handler_entry"));
        assert!(!glob("kvm_*", "irq"));
        assert_eq!(pid_filter(&[5, 7]), "common_pid == 5 || common_pid == 7");
    }
}

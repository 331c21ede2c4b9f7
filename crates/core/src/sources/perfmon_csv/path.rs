//! Counter paths as PDH writes them (relog's grammar): `\\computer\Object(Parent/Instance#Index)\Counter`
//! and its reduced forms without the computer, the instance, or both. Instance names may hold
//! backslashes, colons and spaces (`VM1:Hv VP 0`, storage devices named after file paths), so
//! the counter is what follows the last backslash outside the instance's parentheses.

use crate::profile::CounterPath;

/// Parses a counter path; `None` when `text` is not one (no object or no counter, or bytes no
/// name has: see [`is_name_text`]; random bytes under a forced format read as paths otherwise).
pub(crate) fn parse(text: &str) -> Option<CounterPath> {
    let t = text.trim();
    if !is_name_text(t) {
        return None;
    }
    let (host, rest) = match t.strip_prefix("\\\\") {
        Some(r) => {
            let (h, rest) = r.split_once('\\')?;
            (Some(h.to_string()).filter(|h| !h.is_empty()), rest)
        }
        None => (None, t.strip_prefix('\\')?),
    };
    // The counter starts after the last backslash that is not inside parentheses.
    let mut depth = 0i32;
    let mut split = None;
    for (i, c) in rest.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth = (depth - 1).max(0),
            '\\' if depth == 0 => split = Some(i),
            _ => {}
        }
    }
    let at = split?;
    let (object_part, counter) = (&rest[..at], rest[at + 1..].trim());
    if counter.is_empty() {
        return None;
    }
    let (object, instance) = match object_part.find('(') {
        Some(open) if object_part.ends_with(')') => (
            object_part[..open].trim(),
            Some(object_part[open + 1..object_part.len() - 1].to_string()),
        ),
        _ => (object_part.trim(), None),
    };
    if object.is_empty() {
        return None;
    }
    Some(CounterPath {
        host,
        object: object.to_string(),
        instance,
        counter: counter.to_string(),
    })
}

/// Whether `t` can be (part of) a counter's, object's or instance's name: no control
/// characters other than a tab, and no bytes that were not text (which arrive as U+FFFD).
pub(crate) fn is_name_text(t: &str) -> bool {
    !t.chars()
        .any(|c| c == char::REPLACEMENT_CHARACTER || (c.is_control() && c != '\t'))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(t: &str) -> (Option<String>, String, Option<String>, String) {
        let c = parse(t).unwrap_or_else(|| CounterPath {
            host: None,
            object: "<none>".into(),
            instance: None,
            counter: String::new(),
        });
        (c.host, c.object, c.instance, c.counter)
    }

    #[test]
    fn full_and_reduced_forms() {
        assert_eq!(
            p(r"\\HV01\Hyper-V Hypervisor Virtual Processor(sql01:Hv VP 3)\Total Intercepts/sec"),
            (
                Some("HV01".into()),
                "Hyper-V Hypervisor Virtual Processor".into(),
                Some("sql01:Hv VP 3".into()),
                "Total Intercepts/sec".into()
            )
        );
        assert_eq!(
            p(r"\Memory\Available MBytes"),
            (None, "Memory".into(), None, "Available MBytes".into())
        );
        assert_eq!(
            p(r"\\h\Process(svchost#12)\% Processor Time").2,
            Some("svchost#12".into())
        );
        // A backslash inside the instance does not end the object.
        assert_eq!(
            p(r"\\h\Hyper-V Virtual Storage Device(D:\VMs\a.vhdx)\Read Bytes/sec").2,
            Some(r"D:\VMs\a.vhdx".into())
        );
        assert_eq!(
            p(r"\\localhost\Group Cpu(2012201:FlowMonitor-csy)\% Ready").1,
            "Group Cpu"
        );
    }

    #[test]
    fn not_paths() {
        for t in [
            "",
            "Memory",
            r"\\host",
            r"\\host\Memory\",
            "(PDH-CSV 4.0)",
            r"\(x)\y",
            "\\Memory\\Pages\u{fffd}/sec",
            "\\Mem\u{3}ory\\Pages/sec",
        ] {
            assert!(parse(t).is_none(), "{t}");
        }
    }
}

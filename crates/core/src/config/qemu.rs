//! QEMU command line → [`VmConfig`]: finds the `qemu-system-*` (or `qemu-kvm`, or Proxmox's
//! `kvm`) invocation in a file holding a command line or a launch script (several commands,
//! continuations, quotes, comments — see [`super::shell`]) and reads `-cpu`, `-machine` /
//! `-M`, `-accel` / `-enable-kvm`, `-no-hpet`, `-rtc`, `-global kvm-pit.lost_tick_policy`,
//! `-smp`, `-name`, `-action panic=` and `-device vmbus-bridge`. Every fact keeps the flag
//! and line it came from. A file with several invocations gives one configuration each.

use super::shell::{self, Token};
use super::{Accel, Format, Origin, PitPolicy, Setting, VmConfig, qemu_cpu};
use crate::error::{Error, Result};

/// QEMU options that take no argument (the rest take the next word).
const NO_ARG: [&str; 34] = [
    "-S",
    "-s",
    "-enable-kvm",
    "-no-kvm",
    "-no-hpet",
    "-no-shutdown",
    "-no-reboot",
    "-nodefaults",
    "-no-user-config",
    "-nodefconfig",
    "-daemonize",
    "-snapshot",
    "-nographic",
    "-no-acpi",
    "-no-kvm-pit-reinjection",
    "-no-kvm-irqchip",
    "-full-screen",
    "-no-fd-bootchk",
    "-no-quit",
    "-version",
    "-help",
    "-h",
    "-enable-fips",
    "-only-migratable",
    "-preconfig",
    "-win2k-hack",
    "-rtc-td-hack",
    "-localtime",
    "-usb",
    "-no-frame",
    "-alt-grab",
    "-ctrl-grab",
    "-semihosting",
    "-xen-domid-restrict",
];

/// Reads every QEMU invocation in `text`.
pub fn parse(text: &str, input: &str) -> Result<Vec<VmConfig>> {
    let commands = shell::split(text).map_err(|e| Error::Parse {
        path: input.to_string(),
        line: e.line,
        message: e.message,
    })?;
    let mut invocations: Vec<(Option<Token>, Vec<Token>)> = Vec::new();
    for cmd in &commands {
        if let Some(i) = cmd.iter().position(|t| shell::is_qemu_binary(&t.text)) {
            invocations.push((Some(cmd[i].clone()), cmd[i + 1..].to_vec()));
        }
    }
    if invocations.is_empty() {
        // A file holding only the arguments (one or several lines of them).
        let args: Vec<Token> = commands
            .iter()
            .filter(|c| c.first().is_some_and(|t| t.text.starts_with('-')))
            .flatten()
            .cloned()
            .collect();
        if args.iter().any(|t| is_known_option(&t.text)) {
            invocations.push((None, args));
        }
    }
    if invocations.is_empty() {
        let first = commands
            .first()
            .and_then(|c| c.first())
            .map(|t| (t.line, t.text.chars().take(60).collect::<String>()));
        return Err(Error::nothing_found(
            input,
            first,
            "expected a qemu-system-* (or qemu-kvm / kvm) command line",
        ));
    }
    let mut out = Vec::new();
    for (i, (binary, args)) in invocations.iter().enumerate() {
        let first_line = binary.as_ref().or(args.first()).map_or(1, |t| t.line);
        let mut c = VmConfig::new(Format::Qemu, input, i + 1, first_line);
        if let Some(b) = binary {
            implied_accel(&mut c, b);
        }
        apply_options(&mut c, args).map_err(|(line, message)| Error::Parse {
            path: input.to_string(),
            line,
            message,
        })?;
        out.push(c);
    }
    Ok(out)
}

/// Reads an argv (e.g. from `/proc/PID/cmdline`): the binary first, then its arguments.
pub fn from_argv(argv: &[String], input: &str) -> Result<VmConfig> {
    let tokens: Vec<Token> = argv
        .iter()
        .map(|a| Token {
            text: a.clone(),
            line: 1,
        })
        .collect();
    let start = tokens.iter().position(|t| shell::is_qemu_binary(&t.text));
    let mut c = VmConfig::new(Format::Qemu, input, 1, 1);
    let args = match start {
        Some(i) => {
            implied_accel(&mut c, &tokens[i]);
            &tokens[i + 1..]
        }
        None => &tokens[..],
    };
    apply_options(&mut c, args).map_err(|(line, message)| Error::Parse {
        path: input.to_string(),
        line,
        message,
    })?;
    Ok(c)
}

fn implied_accel(c: &mut VmConfig, binary: &Token) {
    let base = binary.text.rsplit('/').next().unwrap_or(&binary.text);
    if base == "kvm" || base == "qemu-kvm" {
        c.accel = Some(Setting::new(
            Accel::Kvm,
            Origin::at(binary.text.clone(), binary.line),
        ));
    }
}

fn is_known_option(o: &str) -> bool {
    matches!(
        o.trim_start_matches('-'),
        "cpu" | "machine" | "M" | "accel" | "enable-kvm" | "smp" | "global" | "rtc" | "no-hpet"
    )
}

/// Splits a QemuOpts value at commas (`,,` is a literal comma).
pub fn split_opts(value: &str) -> Vec<String> {
    let mut out = vec![String::new()];
    let mut chars = value.chars().peekable();
    while let Some(c) = chars.next() {
        if c == ',' {
            if chars.peek() == Some(&',') {
                chars.next();
                if let Some(last) = out.last_mut() {
                    last.push(',');
                }
            } else {
                out.push(String::new());
            }
        } else if let Some(last) = out.last_mut() {
            last.push(c);
        }
    }
    out
}

/// Applies QEMU options to `c`. Errors carry the line and what was expected.
pub fn apply_options(c: &mut VmConfig, args: &[Token]) -> Result<(), (usize, String)> {
    let mut i = 0;
    while i < args.len() {
        let t = &args[i];
        i += 1;
        if !t.text.starts_with('-') || t.text == "-" {
            continue; // a positional argument (disk image)
        }
        let opt = format!("-{}", t.text.trim_start_matches('-'));
        let at = |text: String| Origin::at(text, t.line);
        match opt.as_str() {
            "-enable-kvm" => c.accel = Some(Setting::new(Accel::Kvm, at(opt.clone()))),
            "-no-kvm" => c.accel = Some(Setting::new(Accel::Tcg, at(opt.clone()))),
            "-no-hpet" => c.timers.hpet = Some(Setting::new(false, at(opt.clone()))),
            "-no-kvm-pit-reinjection" => {
                c.timers.pit = Some(Setting::new(PitPolicy::Discard, at(opt.clone())));
            }
            "-no-kvm-irqchip" => {
                c.timers.kernel_irqchip = Some(Setting::new("off".into(), at(opt.clone())));
            }
            "-localtime" => {
                c.timers.rtc_base = Some(Setting::new("localtime".into(), at(opt.clone())));
            }
            o if NO_ARG.contains(&o) => {}
            _ => {
                let Some(v) = args.get(i) else {
                    return Err((
                        t.line,
                        format!("{opt} has no value; expected an argument after it"),
                    ));
                };
                i += 1;
                option(c, &opt, v).map_err(|m| (v.line, m))?;
            }
        }
    }
    Ok(())
}

/// Applies one option that takes a value.
fn option(c: &mut VmConfig, opt: &str, v: &Token) -> Result<(), String> {
    let at = |text: &str| Origin::at(format!("{opt} {text}"), v.line);
    match opt {
        "-cpu" => qemu_cpu::apply(c, v)?,
        "-machine" | "-M" => {
            for (k, val) in props(&v.text, "type") {
                match (k.as_str(), val) {
                    ("type", Some(t)) => {
                        c.machine = Some(Setting::new(t.clone(), at(&format!("type={t}"))))
                    }
                    ("hpet", Some(b)) => {
                        let on = qemu_cpu::parse_bool(&b)
                            .ok_or_else(|| format!("{opt} hpet={b}; expected on or off"))?;
                        c.timers.hpet = Some(Setting::new(on, at(&format!("hpet={b}"))));
                    }
                    ("accel", Some(a)) => {
                        let first = a.split(':').next().unwrap_or("").to_string();
                        c.accel = Some(Setting::new(accel(&first), at(&format!("accel={a}"))));
                    }
                    ("kernel-irqchip" | "kernel_irqchip", Some(k2)) => {
                        c.timers.kernel_irqchip = Some(Setting::new(
                            k2.clone(),
                            at(&format!("kernel-irqchip={k2}")),
                        ));
                    }
                    _ => {}
                }
            }
        }
        "-accel" => {
            if let Some((_, Some(a))) = props(&v.text, "accel")
                .into_iter()
                .find(|(k, _)| k == "accel")
            {
                c.accel = Some(Setting::new(accel(&a), at(&a)));
            }
        }
        "-rtc" => {
            for (k, val) in props(&v.text, "base") {
                match (k.as_str(), val) {
                    ("base", Some(b)) => {
                        c.timers.rtc_base = Some(Setting::new(b.clone(), at(&format!("base={b}"))))
                    }
                    ("driftfix", Some(d)) => {
                        c.timers.rtc_catchup =
                            Some(Setting::new(d == "slew", at(&format!("driftfix={d}"))));
                    }
                    _ => {}
                }
            }
        }
        "-global" => global(c, v, &at),
        "-smp" => {
            let ps = props(&v.text, "cpus");
            let get = |name: &str| -> Option<u32> {
                ps.iter()
                    .find(|(k, _)| k == name)
                    .and_then(|(_, val)| val.as_ref()?.parse().ok())
            };
            let n = get("cpus").or_else(|| {
                let topo = ["sockets", "dies", "clusters", "cores", "threads"];
                topo.iter()
                    .any(|k| get(k).is_some())
                    .then(|| topo.iter().map(|k| get(k).unwrap_or(1)).product())
            });
            match n {
                Some(n) => c.vcpus = Some(Setting::new(n, at(&v.text))),
                None => return Err(format!("-smp {}: expected a vCPU count", v.text)),
            }
        }
        "-name" => {
            if let Some((_, Some(n))) = props(&v.text, "guest")
                .into_iter()
                .find(|(k, _)| k == "guest")
            {
                c.name = Some(Setting::new(n, at(&v.text)));
            }
        }
        "-action" => {
            if let Some((_, Some(a))) = props(&v.text, "").into_iter().find(|(k, _)| k == "panic") {
                c.panic.action = Some(Setting::new(a.clone(), at(&format!("panic={a}"))));
            }
        }
        "-device" => {
            let driver = if v.text.trim_start().starts_with('{') {
                serde_json::from_str::<serde_json::Value>(&v.text)
                    .ok()
                    .and_then(|j| j.get("driver")?.as_str().map(str::to_string))
            } else {
                split_opts(&v.text).into_iter().next()
            };
            if driver.as_deref() == Some("vmbus-bridge") {
                c.panic.vmbus_bridge = Some(at(&v.text));
            }
        }
        "-readconfig" => c.notes.push(format!(
            "line {}: options in {} (-readconfig) are not read",
            v.line, v.text
        )),
        _ => {}
    }
    Ok(())
}

fn global(c: &mut VmConfig, v: &Token, at: &dyn Fn(&str) -> Origin) {
    let ps = props(&v.text, "");
    let pit =
        if let Some((_, Some(value))) = ps.iter().find(|(k, _)| k == "kvm-pit.lost_tick_policy") {
            Some(value.clone())
        } else {
            let get = |n: &str| ps.iter().find(|(k, _)| k == n).and_then(|(_, v)| v.clone());
            (get("driver").as_deref() == Some("kvm-pit")
                && get("property").as_deref() == Some("lost_tick_policy"))
            .then(|| get("value"))
            .flatten()
        };
    if let Some(p) = pit {
        let policy = match p.as_str() {
            "discard" => PitPolicy::Discard,
            "delay" => PitPolicy::Delay,
            _ => PitPolicy::Other,
        };
        c.timers.pit = Some(Setting::new(policy, at(&v.text)));
    }
}

fn accel(name: &str) -> Accel {
    match name {
        "kvm" => Accel::Kvm,
        "tcg" => Accel::Tcg,
        _ => Accel::Other,
    }
}

/// `q35,hpet=off` → `[(type, q35), (hpet, off)]`: a leading bare word is the `implied` key.
fn props(value: &str, implied: &str) -> Vec<(String, Option<String>)> {
    split_opts(value)
        .into_iter()
        .enumerate()
        .filter(|(_, p)| !p.is_empty())
        .map(|(i, p)| match p.split_once('=') {
            Some((k, v)) => (k.to_string(), Some(v.to_string())),
            None if i == 0 && !implied.is_empty() => (implied.to_string(), Some(p)),
            None => (p, None),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn opts() {
        assert_eq!(split_opts("a,b=c,,d"), vec!["a", "b=c,d"]);
        assert_eq!(
            props("q35,hpet=off", "type"),
            vec![
                ("type".into(), Some("q35".into())),
                ("hpet".into(), Some("off".into()))
            ]
        );
    }

    #[test]
    fn script_with_several_commands() {
        let text = "#!/bin/sh\nqemu-img create -f qcow2 d.img 10G\nexec qemu-system-x86_64 -enable-kvm \\\n  -smp cores=2,threads=2 -cpu host,hv_relaxed,-hv-vapic,hv-time=on -machine q35,hpet=off\n";
        let c = parse(text, "t.sh").unwrap();
        assert_eq!(c.len(), 1);
        let e = c[0].effective();
        assert_eq!(e.vcpus, Some(4));
        assert_eq!(e.hpet, Some(false));
        assert_eq!(e.accel, Some(Accel::Kvm));
        assert_eq!(e.qemu_cpu_flags, "hv-relaxed=on,hv-time=on");
    }

    #[test]
    fn bad_values_name_the_line() {
        match parse("qemu-system-x86_64 \\\n -cpu host,hv-relaxed=maybe", "t") {
            Err(Error::Parse { line, message, .. }) => {
                assert_eq!(line, 2);
                assert!(message.contains("expected on or off"), "{message}");
            }
            other => panic!("{other:?}"),
        }
        assert!(parse("echo hello\n", "t").is_err());
    }
}

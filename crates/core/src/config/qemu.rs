//! QEMU command line → [`VmConfig`]: finds the command that runs QEMU in a file holding a
//! command line or a launch script (see [`super::script`]: variables resolved where the file
//! sets them, wrappers like `exec`/`sudo`/`taskset`, continuations, quotes, comments) and
//! reads `-cpu`, `-machine` / `-M`, `-accel` / `-enable-kvm`, `-no-hpet`, `-rtc`,
//! `-global kvm-pit.lost_tick_policy`, `-smp`, `-name`, `-action panic=` and `-device`
//! (vmbus-bridge, hot-plugged vCPUs). Every fact keeps the flag and line it came from; a value
//! the file leaves open (`-cpu $CPU`) becomes a [`super::Caveat`], not a value. A file with
//! several invocations gives one configuration each.

use super::script::{self, Token};
use super::{Accel, Area, Format, Origin, PitPolicy, Setting, VmConfig, qemu_options, shell};
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
pub(crate) fn parse(text: &str, input: &str) -> Result<Vec<VmConfig>> {
    let words = shell::split(text).map_err(|e| Error::Parse {
        path: input.to_string(),
        line: e.line,
        message: e.message,
    })?;
    let commands = script::expand(&words).map_err(|e| Error::Parse {
        path: input.to_string(),
        line: e.line,
        message: e.message,
    })?;
    let mut invocations: Vec<(usize, Option<Token>, Vec<Token>)> = script::invocations(&commands)
        .into_iter()
        .map(|i| (i.line, Some(i.binary), i.args))
        .collect();
    if invocations.is_empty() {
        // A file holding only the arguments (one or several lines of them).
        let lines: Vec<&script::Command> = commands
            .iter()
            .filter(|c| c.words.first().is_some_and(|t| t.text.starts_with('-')))
            .collect();
        let args: Vec<Token> = lines.iter().flat_map(|c| c.words.iter().cloned()).collect();
        if args.iter().any(|t| script::is_qemu_option(&t.text)) {
            invocations.push((lines.first().map_or(1, |c| c.line), None, args));
        }
    }
    if invocations.is_empty() {
        let first = words.first().and_then(|c| c.first()).map(|w| {
            (
                w.line,
                shell::literal(w).chars().take(60).collect::<String>(),
            )
        });
        return Err(Error::nothing_found(
            input,
            first,
            "expected a qemu-system-* (or qemu-kvm / kvm) command line",
        ));
    }
    let mut out = Vec::new();
    for (i, (first_line, binary, args)) in invocations.iter().enumerate() {
        let mut c = VmConfig::new(Format::Qemu, input, i + 1, *first_line);
        if let Some(b) = binary {
            emulator(&mut c, b);
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
pub(crate) fn from_argv(argv: &[String], input: &str) -> Result<VmConfig> {
    let tokens: Vec<Token> = argv.iter().map(|a| Token::known(a.clone(), 1)).collect();
    let start = tokens.iter().position(|t| shell::is_qemu_binary(&t.text));
    let mut c = VmConfig::new(Format::Qemu, input, 1, 1);
    let args = match start {
        Some(i) => {
            emulator(&mut c, &tokens[i]);
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

/// What the emulator's name says: KVM for `kvm`/`qemu-kvm`, the architecture for
/// `qemu-system-ARCH` (QEMU's names mapped to libvirt's: `i386` → `i686`, `arm` → `armv7l`).
fn emulator(c: &mut VmConfig, binary: &Token) {
    let origin = Origin::at(binary.text.clone(), binary.line);
    if !binary.unknown.is_empty() {
        let why = binary.unknown.first().map_or("", |u| u.why.as_str());
        c.caveat(
            Area::Emulator,
            origin,
            format!(
                "the emulator is {}: {why}; taken as an x86 QEMU",
                binary.text
            ),
        );
        return;
    }
    let base = binary.text.rsplit('/').next().unwrap_or(&binary.text);
    if base == "kvm" || base == "qemu-kvm" {
        c.accel = Some(Setting::new(Accel::Kvm, origin.clone()));
    }
    if let Some(arch) = base.strip_prefix("qemu-system-") {
        let arch = match arch {
            "i386" => "i686",
            "arm" => "armv7l",
            a => a,
        };
        c.arch = Some(Setting::new(arch.to_string(), origin));
    }
}

/// Splits a QemuOpts value at commas (`,,` is a literal comma).
pub(crate) fn split_opts(value: &str) -> Vec<String> {
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

/// True when `t` is nothing but an expansion the file does not set (`$EXTRA_ARGS`).
fn wholly_unknown(t: &Token) -> bool {
    !t.unknown.is_empty() && t.unknown.iter().all(|u| t.text == u.written)
}

/// Applies QEMU options to `c`. Errors carry the line and what was expected.
pub(crate) fn apply_options(c: &mut VmConfig, args: &[Token]) -> Result<(), (usize, String)> {
    let mut i = 0;
    let mut cpu_devices = 0u32;
    while i < args.len() {
        let t = &args[i];
        i += 1;
        if wholly_unknown(t) {
            let why = t.unknown.first().map_or("", |u| u.why.as_str());
            c.caveat(
                Area::Any,
                Origin::at(t.text.clone(), t.line),
                format!(
                    "{} (line {}): {why}; the options it holds are not seen",
                    t.text, t.line
                ),
            );
            continue;
        }
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
                if opt == "-device" && qemu_options::is_cpu_device(v) {
                    cpu_devices += 1;
                }
                qemu_options::option(c, &opt, v).map_err(|m| (v.line, m))?;
            }
        }
    }
    // vCPUs added with -device at start-up are online at boot (libvirt's hot-pluggable vCPUs).
    if cpu_devices > 0
        && let Some(v) = c.vcpus.as_mut()
    {
        v.value = v.value.saturating_add(cpu_devices);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn opts() {
        assert_eq!(split_opts("a,b=c,,d"), vec!["a", "b=c,d"]);
        let p = qemu_options::props(&Token::known("q35,hpet=off", 1), "type");
        let kv: Vec<(&str, Option<&str>)> = p
            .iter()
            .map(|p| (p.key.as_str(), p.value.as_deref()))
            .collect();
        assert_eq!(kv, vec![("type", Some("q35")), ("hpet", Some("off"))]);
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

//! The QEMU options that take a value and matter to the rules: `-cpu` (in [`super::qemu_cpu`]),
//! `-machine`, `-accel`, `-rtc`, `-global kvm-pit.lost_tick_policy`, `-smp` (boot and maximum
//! vCPU counts as QEMU's `machine_parse_smp_config` derives them), `-name`, `-action` and
//! `-device`. A part of a value the file leaves open (`cores=$N`) becomes a caveat on the
//! area it could change; the known parts still count.

use super::script::Token;
use super::{Accel, Area, Origin, PitPolicy, Setting, VmConfig, qemu::split_opts, qemu_cpu};

/// One `key=value` of a QemuOpts value, with the text it came from and whether an unknown
/// expansion is in it.
pub(super) struct Prop {
    pub key: String,
    pub value: Option<String>,
    pub raw: String,
    pub unknown: bool,
}

/// `q35,hpet=off` → `[(type, q35), (hpet, off)]`: a leading bare word is the `implied` key.
pub(super) fn props(v: &Token, implied: &str) -> Vec<Prop> {
    split_opts(&v.text)
        .into_iter()
        .enumerate()
        .filter(|(_, p)| !p.is_empty())
        .map(|(i, p)| {
            let unknown = v.has_unknown_in(&p);
            let (key, value) = match p.split_once('=') {
                Some((k, x)) => (k.to_string(), Some(x.to_string())),
                None if i == 0 && !implied.is_empty() => (implied.to_string(), Some(p.clone())),
                None => (p.clone(), None),
            };
            Prop {
                key,
                value,
                raw: p,
                unknown,
            }
        })
        .collect()
}

/// Records `raw` (part of `opt`'s value `v`) as unknown, leaving `area` open.
pub(super) fn open(c: &mut VmConfig, area: Area, opt: &str, v: &Token, raw: &str, what: &str) {
    let why: Vec<String> = v
        .unknown_in(raw)
        .iter()
        .map(|u| format!("{}: {}", u.written, u.why))
        .collect();
    c.caveat(
        area,
        Origin::at(format!("{opt} {raw}"), v.line),
        format!(
            "{opt} {raw} (line {}): {}; {what} unknown",
            v.line,
            why.join("; ")
        ),
    );
}

/// Applies one option that takes a value.
pub(super) fn option(c: &mut VmConfig, opt: &str, v: &Token) -> Result<(), String> {
    let at = |text: &str| Origin::at(format!("{opt} {text}"), v.line);
    match opt {
        "-cpu" => qemu_cpu::apply(c, v)?,
        "-machine" | "-M" => {
            for p in props(v, "type") {
                if p.unknown {
                    open(
                        c,
                        Area::Machine,
                        opt,
                        v,
                        &p.raw,
                        "the machine settings it makes are",
                    );
                    continue;
                }
                match (p.key.as_str(), p.value) {
                    ("type", Some(t)) => {
                        c.machine = Some(Setting::new(t.clone(), at(&format!("type={t}"))));
                    }
                    ("hpet", Some(b)) => {
                        let on = qemu_cpu::parse_bool(&b)
                            .ok_or_else(|| format!("{opt} hpet={b}; expected on or off"))?;
                        c.timers.hpet = Some(Setting::new(on, at(&format!("hpet={b}"))));
                    }
                    ("pit", Some(b)) => {
                        let on = qemu_cpu::parse_bool(&b)
                            .ok_or_else(|| format!("{opt} pit={b}; expected on or off"))?;
                        c.timers.pit_present = Some(Setting::new(on, at(&format!("pit={b}"))));
                    }
                    ("accel", Some(a)) => {
                        let first = a.split(':').next().unwrap_or("").to_string();
                        c.accel = Some(Setting::new(accel(&first), at(&format!("accel={a}"))));
                    }
                    ("kernel-irqchip" | "kernel_irqchip", Some(k)) => {
                        let origin = at(&format!("kernel-irqchip={k}"));
                        c.timers.kernel_irqchip = Some(Setting::new(k, origin));
                    }
                    _ => {}
                }
            }
        }
        "-accel" => {
            for p in props(v, "accel") {
                if p.unknown && p.key == "accel" {
                    open(c, Area::Machine, opt, v, &p.raw, "the accelerator is");
                } else if let ("accel", Some(a)) = (p.key.as_str(), p.value) {
                    c.accel = Some(Setting::new(accel(&a), at(&a)));
                }
            }
        }
        "-rtc" => {
            for p in props(v, "base") {
                if p.unknown {
                    open(c, Area::Timers, opt, v, &p.raw, "the RTC setting is");
                    continue;
                }
                match (p.key.as_str(), p.value) {
                    ("base", Some(b)) => {
                        c.timers.rtc_base = Some(Setting::new(b.clone(), at(&format!("base={b}"))));
                    }
                    ("driftfix", Some(d)) => {
                        let origin = at(&format!("driftfix={d}"));
                        c.timers.rtc_catchup = Some(Setting::new(d == "slew", origin));
                    }
                    _ => {}
                }
            }
        }
        "-global" => global(c, v, &at),
        "-smp" => smp(c, v)?,
        "-name" => {
            if let Some(p) = props(v, "guest").into_iter().find(|p| p.key == "guest")
                && let Some(n) = p.value
            {
                c.name = Some(Setting::new(n, at(&v.text)));
            }
        }
        "-action" => {
            if let Some(p) = props(v, "").into_iter().find(|p| p.key == "panic") {
                if p.unknown {
                    open(c, Area::Panic, opt, v, &p.raw, "the panic action is");
                } else if let Some(a) = p.value {
                    c.panic.action = Some(Setting::new(a.clone(), at(&format!("panic={a}"))));
                }
            }
        }
        "-device" => match device_driver(v) {
            Some(d) if v.has_unknown_in(&d) => {
                open(c, Area::Devices, opt, v, &d, "the device is");
            }
            Some(d) if d == "vmbus-bridge" => c.panic.vmbus_bridge = Some(at(&v.text)),
            _ => {}
        },
        "-readconfig" => c.notes.push(format!(
            "line {}: options in {} (-readconfig) are not read",
            v.line, v.text
        )),
        _ => {}
    }
    Ok(())
}

/// The driver of a `-device` value (`driver,opt=…` or JSON).
fn device_driver(v: &Token) -> Option<String> {
    if v.text.trim_start().starts_with('{') {
        serde_json::from_str::<serde_json::Value>(&v.text)
            .ok()
            .and_then(|j| j.get("driver")?.as_str().map(str::to_string))
    } else {
        split_opts(&v.text).into_iter().next()
    }
}

/// A vCPU added at start-up (`-device host-x86_64-cpu,…`, libvirt's hot-pluggable vCPUs).
pub(super) fn is_cpu_device(v: &Token) -> bool {
    device_driver(v).is_some_and(|d| d.ends_with("-cpu") && !v.has_unknown_in(&d))
}

fn global(c: &mut VmConfig, v: &Token, at: &dyn Fn(&str) -> Origin) {
    let ps = props(v, "");
    let get = |n: &str| ps.iter().find(|p| p.key == n);
    let pit = match get("kvm-pit.lost_tick_policy") {
        Some(p) => Some(p),
        None if get("driver").and_then(|p| p.value.as_deref()) == Some("kvm-pit")
            && get("property").and_then(|p| p.value.as_deref()) == Some("lost_tick_policy") =>
        {
            get("value")
        }
        None => None,
    };
    let could_be_pit = v.text.contains("kvm-pit") || ps.iter().all(|p| p.unknown);
    if could_be_pit && (pit.is_some_and(|p| p.unknown) || (pit.is_none() && !v.unknown.is_empty()))
    {
        open(
            c,
            Area::Timers,
            "-global",
            v,
            &v.text,
            "the PIT policy it may set is",
        );
        return;
    }
    if let Some(p) = pit.and_then(|p| p.value.as_deref()) {
        let policy = match p {
            "discard" => PitPolicy::Discard,
            "delay" => PitPolicy::Delay,
            _ => PitPolicy::Other,
        };
        c.timers.pit = Some(Setting::new(policy, at(&v.text)));
    }
}

/// `-smp` as qemu/qemu@01782d6b294f:hw/core/machine-smp.c `machine_parse_smp_config` reads it:
/// the maximum is `maxcpus`, else `cpus`, else the product of the topology; the boot count is
/// `cpus`, else the maximum.
fn smp(c: &mut VmConfig, v: &Token) -> Result<(), String> {
    const TOPOLOGY: [&str; 8] = [
        "drawers", "books", "sockets", "dies", "clusters", "modules", "cores", "threads",
    ];
    let ps = props(v, "cpus");
    // Some(Some(n)): given; Some(None): given but unknown; None: not given.
    let get = |name: &str| -> Result<Option<Option<u32>>, String> {
        let Some(p) = ps.iter().find(|p| p.key == name) else {
            return Ok(None);
        };
        if p.unknown {
            return Ok(Some(None));
        }
        match p.value.as_deref().map(str::parse::<u32>) {
            Some(Ok(n)) => Ok(Some(Some(n))),
            _ => Err(format!(
                "-smp {}: `{}`; expected a vCPU count",
                v.text, p.raw
            )),
        }
    };
    let cpus = get("cpus")?;
    let maxcpus = get("maxcpus")?;
    let mut product = None;
    for k in TOPOLOGY {
        if let Some(n) = get(k)? {
            product = Some(match (product.unwrap_or(Some(1u32)), n) {
                (Some(a), Some(b)) => a.checked_mul(b),
                _ => None,
            });
        }
    }
    if cpus.is_none() && maxcpus.is_none() && product.is_none() {
        return Err(format!("-smp {}: expected a vCPU count", v.text));
    }
    let max = maxcpus.or(cpus).or(product).flatten();
    let boot = match cpus {
        Some(n) => n,
        None => max,
    };
    let origin = Origin::at(format!("-smp {}", v.text), v.line);
    if boot.is_none() || max.is_none() {
        open(c, Area::Vcpus, "-smp", v, &v.text, "the vCPU count is");
    }
    c.vcpus = boot.map(|n| Setting::new(n, origin.clone()));
    c.max_vcpus = max.map(|n| Setting::new(n, origin));
    Ok(())
}

fn accel(name: &str) -> Accel {
    match name {
        "kvm" => Accel::Kvm,
        "tcg" => Accel::Tcg,
        _ => Accel::Other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Format;

    fn smp_of(text: &str) -> (Option<u32>, Option<u32>) {
        let mut c = VmConfig::new(Format::Qemu, "t", 1, 1);
        smp(&mut c, &Token::known(text, 1)).unwrap();
        (c.vcpus.map(|s| s.value), c.max_vcpus.map(|s| s.value))
    }

    #[test]
    fn smp_follows_qemu() {
        assert_eq!(smp_of("2,maxcpus=16"), (Some(2), Some(16)));
        assert_eq!(smp_of("4"), (Some(4), Some(4)));
        assert_eq!(smp_of("cores=2,threads=2"), (Some(4), Some(4)));
        assert_eq!(smp_of("maxcpus=8,sockets=8"), (Some(8), Some(8)));
        assert_eq!(
            smp_of("1,sockets=1,cores=4,threads=1,maxcpus=4"),
            (Some(1), Some(4))
        );
    }
}

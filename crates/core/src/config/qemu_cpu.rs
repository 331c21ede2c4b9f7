//! QEMU's `-cpu MODEL,prop,…` value: the `hv-*` properties in every spelling QEMU accepts
//! (`hv_relaxed`, `hv-vapic`, `+hv-x`, `-hv-x`, `hv-x=on|off`, `hv_spinlocks=0x1fff`,
//! `hv-passthrough`, `hv-vendor-id=…`), `kvm=off`, `-hypervisor`, `vmx`/`svm` and
//! `tsc-frequency`. A later `-cpu` replaces an earlier one, as in QEMU. A property whose name
//! QEMU does not know (`hv-foo`) is kept: QEMU refuses to start with it ("Property … not
//! found", the properties being those of qemu/qemu@d45f24fe7525:target/i386/cpu.c
//! `x86_cpu_properties`). A part the file leaves open (`-cpu $CPU`) is a caveat.

use super::script::Token;
use super::{
    Area, Cpu, HvFlag, Hyperv, Origin, Repeated, Setting, VmConfig, effective, qemu, qemu_options,
};

/// A `-cpu` property split into its sign (`+`/`-`), name and value.
struct Prop<'a> {
    raw: &'a str,
    sign: Option<bool>,
    name: String,
    value: Option<&'a str>,
}

fn prop(raw: &str) -> Prop<'_> {
    if let Some(rest) = raw.strip_prefix('+') {
        return Prop {
            raw,
            sign: Some(true),
            name: rest.replace('_', "-"),
            value: None,
        };
    }
    if let Some(rest) = raw.strip_prefix('-') {
        return Prop {
            raw,
            sign: Some(false),
            name: rest.replace('_', "-"),
            value: None,
        };
    }
    match raw.split_once('=') {
        Some((n, v)) => Prop {
            raw,
            sign: None,
            name: n.replace('_', "-"),
            value: Some(v),
        },
        None => Prop {
            raw,
            sign: None,
            name: raw.replace('_', "-"),
            value: None,
        },
    }
}

/// `on`/`off` in QEMU's spellings.
pub(super) fn parse_bool(v: &str) -> Option<bool> {
    match v {
        "on" | "yes" | "true" | "y" => Some(true),
        "off" | "no" | "false" | "n" => Some(false),
        _ => None,
    }
}

impl Prop<'_> {
    fn bool(&self) -> Result<bool, String> {
        match (self.sign, self.value) {
            (Some(s), _) => Ok(s),
            (None, None) => Ok(true),
            (None, Some(v)) => parse_bool(v).ok_or_else(|| {
                format!(
                    "-cpu property `{}` has value `{v}`; expected on or off",
                    self.name
                )
            }),
        }
    }
}

/// Applies the value of one `-cpu` option.
pub(super) fn apply(c: &mut VmConfig, token: &Token) -> Result<(), String> {
    let parts = qemu::split_opts(&token.text);
    let Some(model) = parts.first() else {
        return Ok(());
    };
    let seen = c.cpu.model.is_some() || c.caveats.iter().any(|x| x.area == Area::Cpu);
    if seen || !c.hyperv.flags.is_empty() || c.hyperv.passthrough.is_some() {
        c.notes.push(format!(
            "line {}: -cpu given again; QEMU uses only the last one",
            token.line
        ));
        c.cpu = Cpu::default();
        c.hyperv = Hyperv::default();
        c.timers.tsc_frequency = None;
    }
    let at = |text: &str| Origin::at(format!("-cpu {text}"), token.line);
    c.caveats.retain(|x| x.area != Area::Cpu);
    if token.has_unknown_in(model) {
        qemu_options::open(c, Area::Cpu, "-cpu", token, model, "the CPU model is");
    } else {
        c.cpu.model = Some(Setting::new(model.clone(), at(model)));
    }
    c.hyperv.anchor = Some(Origin::at("-cpu", token.line));
    for raw in &parts[1..] {
        if token.has_unknown_in(raw) {
            let what = "the CPU properties (hv-* flags) it sets are";
            qemu_options::open(c, Area::Cpu, "-cpu", token, raw, what);
            continue;
        }
        let p = prop(raw);
        let origin = at(p.raw);
        match p.name.as_str() {
            "hv-passthrough" => {
                c.hyperv.passthrough = p.bool()?.then_some(origin);
            }
            "kvm" => c.cpu.kvm_hidden = (!p.bool()?).then_some(origin),
            "hypervisor" => c.cpu.hypervisor_hidden = (!p.bool()?).then_some(origin),
            "vmx" => c.cpu.nested_virt = Some(Setting::new(p.bool()?, origin)),
            "svm" => {
                let on = p.bool()?;
                c.cpu.nested_virt = Some(Setting::new(on, origin.clone()));
                c.cpu.svm = Some(Setting::new(on, origin));
            }
            "x2apic" => c.cpu.x2apic = Some(Setting::new(p.bool()?, origin)),
            "tsc-frequency" | "tsc-freq" => {
                if let Some(v) = p.value {
                    c.timers.tsc_frequency = Some(Setting::new(v.to_string(), origin));
                }
            }
            "hv-spinlocks" => {
                let value = match p.value {
                    Some(v) => Some(effective::parse_number(v).ok_or_else(|| {
                        format!(
                            "-cpu {}: `{v}` is not a number; expected a retry count (0x1fff or 8191)",
                            p.raw
                        )
                    })?),
                    None => None,
                };
                let on = p.sign.unwrap_or(true) && value != Some(effective::SPINLOCKS_NEVER);
                set(
                    c,
                    HvFlag::Spinlocks,
                    on,
                    value.map(|n| format!("{n:#x}")),
                    origin,
                );
            }
            "hv-vendor-id" => {
                let on = p.sign.unwrap_or(true) && p.value.is_some_and(|v| !v.is_empty());
                set(c, HvFlag::VendorId, on, p.value.map(str::to_string), origin);
            }
            "hv-no-nonarch-coresharing" => {
                let value = match p.value {
                    Some(v @ ("on" | "off" | "auto")) => v.to_string(),
                    Some(v) => {
                        return Err(format!("-cpu {}: `{v}`; expected on, off or auto", p.raw));
                    }
                    None => if p.sign == Some(false) { "off" } else { "on" }.to_string(),
                };
                let on = value != "off";
                set(c, HvFlag::NoNonarchCoresharing, on, Some(value), origin);
            }
            name if name.starts_with("hv-version-id") => {}
            name if name.starts_with("hv-") => match HvFlag::from_qemu(name) {
                Some(flag) => set(c, flag, p.bool()?, None, origin),
                None => c
                    .hyperv
                    .unknown
                    .push(Setting::new(p.raw.to_string(), origin)),
            },
            _ => {}
        }
    }
    Ok(())
}

fn set(c: &mut VmConfig, flag: HvFlag, on: bool, value: Option<String>, origin: Origin) {
    if c.hyperv.flags.contains_key(&flag) {
        // At most one entry per flag QEMU knows: a linear search stays short.
        match c
            .hyperv
            .duplicates
            .iter_mut()
            .find(|d| d.what == flag.qemu())
        {
            Some(d) => d.count += 1,
            None => c.hyperv.duplicates.push(Repeated {
                what: flag.qemu().to_string(),
                origin: origin.clone(),
                count: 1,
            }),
        }
    }
    c.set_flag(flag, on, value, origin);
}

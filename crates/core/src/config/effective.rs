//! The effective configuration: the Hyper-V flag set QEMU would run with (defaults applied,
//! `state='off'` and `=off` dropped, spinlocks in QEMU's hex, `hv-passthrough` standing for
//! "whatever the host supports"), with the timer and CPU facts the rules and the JSON output
//! use. Two configurations that QEMU would run the same way have equal `Effective`s — that is
//! what the XML → argv mapping test compares.

use std::collections::BTreeMap;

use serde::Serialize;

use super::{Accel, Format, HvFlag, PitPolicy, VmConfig};

/// QEMU's default spinlock retry count: never notify (same as not setting it).
pub(crate) const SPINLOCKS_NEVER: u64 = 0xffff_ffff;

/// What QEMU would run with.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Effective {
    pub format: Format,
    pub name: Option<String>,
    pub accel: Option<Accel>,
    pub machine: Option<String>,
    /// The architecture (libvirt's names), when the file says.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub arch: Option<String>,
    /// vCPUs online at boot.
    pub vcpus: Option<u32>,
    /// The most vCPUs without a restart (equal to `vcpus` unless hot-plug is configured).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_vcpus: Option<u32>,
    pub cpu_model: Option<String>,
    /// `hv-passthrough`: every enlightenment the host's KVM supports (host-dependent).
    pub passthrough: bool,
    /// The flags that are on, by QEMU name, with their value (`on`, `0x1fff`, a vendor id).
    pub hv: BTreeMap<HvFlag, String>,
    /// The `-cpu` properties QEMU gets for them (`hv-relaxed=on,hv-spinlocks=0x1fff,…`).
    pub qemu_cpu_flags: String,
    pub kvm_hidden: bool,
    pub hypervisor_hidden: bool,
    /// HPET present (`None`: machine default, present).
    pub hpet: Option<bool>,
    /// PIT lost-tick policy (`None`: KVM default, delay = reinjection on).
    pub pit: Option<PitPolicy>,
    pub rtc_catchup: bool,
    pub kernel_irqchip: Option<String>,
}

impl Effective {
    /// The effective configuration of `c`.
    pub fn of(c: &VmConfig) -> Effective {
        let passthrough = c.hyperv.passthrough.is_some();
        let mut hv = BTreeMap::new();
        for (&flag, s) in &c.hyperv.flags {
            if !s.on || (passthrough && flag.in_passthrough()) {
                continue;
            }
            let value = match flag {
                HvFlag::Spinlocks => match s.value.as_deref().and_then(parse_number) {
                    Some(SPINLOCKS_NEVER) | None => continue,
                    Some(n) => format!("{n:#x}"),
                },
                HvFlag::NoNonarchCoresharing => match s.value.as_deref() {
                    Some("off") => continue,
                    Some(v) => v.to_string(),
                    None => "on".to_string(),
                },
                _ => s.value.clone().unwrap_or_else(|| "on".to_string()),
            };
            hv.insert(flag, value);
        }
        let mut props: Vec<String> = Vec::new();
        if passthrough {
            props.push("hv-passthrough=on".to_string());
        }
        props.extend(hv.iter().map(|(f, v)| format!("{}={v}", f.qemu())));
        Effective {
            format: c.format,
            name: c.name.as_ref().map(|s| s.value.clone()),
            accel: c.accel.as_ref().map(|s| s.value),
            machine: c.machine.as_ref().map(|s| s.value.clone()),
            arch: c.arch.as_ref().map(|s| s.value.clone()),
            vcpus: c.vcpus.as_ref().map(|s| s.value),
            max_vcpus: c.max_vcpus.as_ref().map(|s| s.value),
            cpu_model: c.cpu.model.as_ref().map(|s| s.value.clone()),
            passthrough,
            hv,
            qemu_cpu_flags: props.join(","),
            kvm_hidden: c.cpu.kvm_hidden.is_some(),
            hypervisor_hidden: c.cpu.hypervisor_hidden.is_some(),
            hpet: c.timers.hpet.as_ref().map(|s| s.value),
            pit: c.timers.pit.as_ref().map(|s| s.value),
            rtc_catchup: c.timers.rtc_catchup.as_ref().is_some_and(|s| s.value),
            kernel_irqchip: c.timers.kernel_irqchip.as_ref().map(|s| s.value.clone()),
        }
    }

    /// True when any enlightenment is on (explicitly or through passthrough); the vendor id
    /// and the policy knobs do not count.
    pub fn any_enlightenment(&self) -> bool {
        self.passthrough || self.hv.keys().any(|f| f.is_enlightenment())
    }
}

/// `0x1fff`, `8191`, `0X1FFF` → the number.
pub(crate) fn parse_number(text: &str) -> Option<u64> {
    let t = text.trim();
    match t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => t.parse().ok(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers() {
        assert_eq!(parse_number("0x1fff"), Some(8191));
        assert_eq!(parse_number("12287"), Some(0x2fff));
        assert_eq!(parse_number("x"), None);
    }
}

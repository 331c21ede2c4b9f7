//! Workload presets: the recommended Hyper-V set for general Windows, IPI-heavy,
//! dense VDI, nested and migration-fleet VMs, adapted to the host (hv-evmcs only on Intel,
//! hv-avic only with APICv/AVIC, versions the target cannot take left out) and written both as
//! a libvirt domain XML skeleton and as QEMU options.

use std::collections::BTreeMap;
use std::fmt::Write;

use serde::Serialize;

use super::fix::{SPINLOCK_RETRIES, qemu_on};
use crate::config::{HvFlag, Version};
use crate::facts::{HostFacts, Vendor};

/// A workload preset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Preset {
    WindowsGeneral,
    IpiHeavy,
    Vdi,
    Nested,
    Migration,
}

impl Preset {
    pub const ALL: [Preset; 5] = [
        Preset::WindowsGeneral,
        Preset::IpiHeavy,
        Preset::Vdi,
        Preset::Nested,
        Preset::Migration,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Preset::WindowsGeneral => "windows-general",
            Preset::IpiHeavy => "ipi-heavy",
            Preset::Vdi => "vdi",
            Preset::Nested => "nested",
            Preset::Migration => "migration",
        }
    }

    pub fn parse(s: &str) -> Option<Preset> {
        Preset::ALL.into_iter().find(|p| p.name() == s)
    }
}

/// A preset made concrete for one host.
#[derive(Debug, Clone, Serialize)]
pub struct Recommendation {
    pub preset: &'static str,
    /// The flags, by QEMU name, with their value (as [`crate::config::Effective::hv`]).
    pub flags: BTreeMap<HvFlag, String>,
    pub hpet: bool,
    pub pit: &'static str,
    pub rtc_catchup: bool,
    /// A libvirt domain skeleton holding `<features>`, `<cpu>` and `<clock>` to merge.
    pub libvirt_xml: String,
    /// QEMU options (`-cpu host,…` — keep your CPU model).
    pub qemu_args: String,
    /// Why flags were added or left out for this host.
    pub notes: Vec<String>,
}

const GENERAL: [HvFlag; 13] = [
    HvFlag::Relaxed,
    HvFlag::Vapic,
    HvFlag::Spinlocks,
    HvFlag::Vpindex,
    HvFlag::Runtime,
    HvFlag::Synic,
    HvFlag::Stimer,
    HvFlag::StimerDirect,
    HvFlag::Frequencies,
    HvFlag::Tlbflush,
    HvFlag::TlbflushExt,
    HvFlag::Ipi,
    HvFlag::Time,
];

const NESTED: [HvFlag; 3] = [HvFlag::EmsrBitmap, HvFlag::TlbflushDirect, HvFlag::XmmInput];

/// The preset for `host`, leaving out what `qemu`/`libvirt` (when given) cannot take.
pub fn recommend(
    preset: Preset,
    host: &HostFacts,
    qemu: Option<Version>,
    libvirt: Option<Version>,
) -> Recommendation {
    let mut flags: Vec<HvFlag> = GENERAL.to_vec();
    let mut notes = Vec::new();
    let intel = host.vendor == Some(Vendor::Intel);
    let amd = matches!(host.vendor, Some(Vendor::Amd | Vendor::Hygon));
    let apic = match host.vendor {
        Some(Vendor::Intel) => host.apicv,
        Some(Vendor::Amd | Vendor::Hygon) => host.avic,
        _ => host.apicv.or(host.avic),
    };
    match apic {
        Some(true) => flags.push(HvFlag::Avic),
        Some(false) => notes.push(
            "hv-avic left out: the host has no APICv/AVIC (it would hurt); turn APICv/AVIC on and add it"
                .to_string(),
        ),
        None => notes.push(
            "hv-avic left out: unknown whether the host has APICv/AVIC; add <avic state='on'/> / \
             hv-avic=on if it does (kvm_intel enable_apicv / kvm_amd avic)"
                .to_string(),
        ),
    }
    let evmcs_ok = intel && preset != Preset::Migration;
    if evmcs_ok {
        flags.push(HvFlag::Evmcs);
    } else if preset == Preset::Migration && intel {
        notes
            .push("hv-evmcs left out: only add it if every host in the fleet is Intel".to_string());
    } else if amd {
        notes.push(
            "hv-evmcs left out: Intel-only, the VM would not start on this AMD host".to_string(),
        );
    } else {
        notes.push(
            "hv-evmcs left out: the host vendor is unknown; add it on Intel hosts only (--host-vendor)"
                .to_string(),
        );
    }
    match preset {
        Preset::WindowsGeneral => {}
        Preset::IpiHeavy => notes.push(
            "check at run time that APICv/AVIC stays active (kvm_apicv_inhibit_changed: HYPERV, \
             PIT_REINJ, IRQWIN); pin vCPUs; hv-ipi and hv-tlbflush are in"
                .to_string(),
        ),
        Preset::Vdi => {
            notes.push("hv-stimer is mandatory for idle-heavy desktops; hv-time needs the host clocksource tsc".to_string());
            if let Some(cs) = host.clocksource.as_deref().filter(|c| *c != "tsc") {
                notes.push(format!(
                    "this host's clocksource is {cs}: hv-time's TSC page will be invalid until it is tsc"
                ));
            }
        }
        Preset::Nested => {
            flags.extend(NESTED);
            notes.push(
                "expose VMX/SVM to the guest (host CPU model with the kvm module's nested=1); \
                 hv-reenlightenment left out: add it only with a fixed tsc-frequency and TSC scaling"
                    .to_string(),
            );
        }
        Preset::Migration => notes.push(
            "use the same list on every host: no hv-passthrough, no hv-no-nonarch-coresharing=auto, \
             no hv-reenlightenment without TSC scaling"
                .to_string(),
        ),
    }
    flags.retain(|f| {
        let too_new = |have: Option<Version>, need: Option<Version>| {
            matches!((have, need), (Some(h), Some(n)) if h < n)
        };
        let drop = too_new(qemu, f.qemu_since()) || too_new(libvirt, f.libvirt_since());
        if drop {
            notes.push(format!("{} left out: the target QEMU/libvirt is too old", f.qemu()));
        }
        !drop
    });
    flags.sort();
    let map: BTreeMap<HvFlag, String> = flags
        .iter()
        .map(|&f| {
            let v = match f {
                HvFlag::Spinlocks => format!("{SPINLOCK_RETRIES:#x}"),
                _ => "on".to_string(),
            };
            (f, v)
        })
        .collect();
    Recommendation {
        preset: preset.name(),
        libvirt_xml: libvirt_xml(&flags, preset == Preset::Nested),
        qemu_args: qemu_args(&flags),
        flags: map,
        hpet: false,
        pit: "discard",
        rtc_catchup: true,
        notes,
    }
}

fn libvirt_xml(flags: &[HvFlag], nested: bool) -> String {
    let has = |f: HvFlag| flags.contains(&f);
    let mut x = String::from("<domain type='kvm'>\n  <features>\n    <hyperv mode='custom'>\n");
    for &f in flags {
        let line = match f {
            HvFlag::Time | HvFlag::StimerDirect | HvFlag::TlbflushExt | HvFlag::TlbflushDirect => {
                continue;
            }
            HvFlag::Spinlocks => format!("<spinlocks state='on' retries='{SPINLOCK_RETRIES}'/>"),
            HvFlag::Stimer if has(HvFlag::StimerDirect) => {
                "<stimer state='on'>\n        <direct state='on'/>\n      </stimer>".to_string()
            }
            HvFlag::Tlbflush if has(HvFlag::TlbflushExt) || has(HvFlag::TlbflushDirect) => {
                let mut s = String::from("<tlbflush state='on'>\n");
                if has(HvFlag::TlbflushDirect) {
                    s.push_str("        <direct state='on'/>\n");
                }
                if has(HvFlag::TlbflushExt) {
                    s.push_str("        <extended state='on'/>\n");
                }
                s.push_str("      </tlbflush>");
                s
            }
            _ => match f.libvirt() {
                Some(name) => format!("<{name} state='on'/>"),
                None => continue,
            },
        };
        let _ = writeln!(x, "      {line}");
    }
    x.push_str("    </hyperv>\n  </features>\n");
    if nested {
        x.push_str("  <cpu mode='host-passthrough'/>\n");
    }
    x.push_str("  <clock offset='localtime'>\n");
    if has(HvFlag::Time) {
        x.push_str("    <timer name='hypervclock' present='yes'/>\n");
    }
    x.push_str(
        "    <timer name='hpet' present='no'/>\n    <timer name='pit' tickpolicy='discard'/>\n    \
         <timer name='rtc' tickpolicy='catchup'/>\n  </clock>\n</domain>\n",
    );
    x
}

fn qemu_args(flags: &[HvFlag]) -> String {
    let props: Vec<String> = flags.iter().map(|&f| qemu_on(f, None)).collect();
    format!(
        "-cpu host,{} \\\n  -machine hpet=off \\\n  -global kvm-pit.lost_tick_policy=discard \\\n  -rtc base=localtime,driftfix=slew",
        props.join(",")
    )
}

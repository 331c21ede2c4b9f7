//! Fixes as both a libvirt XML snippet and the QEMU `-cpu`/option flags, for adding or removing
//! Hyper-V flags; shared by the rules and the workload presets.

use serde::Serialize;

use crate::config::HvFlag;

/// How to fix a finding: in words, as libvirt XML and as QEMU flags.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Fix {
    pub summary: String,
    pub libvirt: Option<String>,
    pub qemu: Option<String>,
}

impl Fix {
    /// A fix in words with both snippets.
    pub fn new(
        summary: impl Into<String>,
        libvirt: impl Into<String>,
        qemu: impl Into<String>,
    ) -> Fix {
        Fix {
            summary: summary.into(),
            libvirt: Some(libvirt.into()),
            qemu: Some(qemu.into()),
        }
    }

    /// A fix that is not a configuration change (host settings, a decision).
    pub fn words(summary: impl Into<String>) -> Fix {
        Fix {
            summary: summary.into(),
            libvirt: None,
            qemu: None,
        }
    }
}

/// The spinlock retry count the fixes and presets use (0x1fff, as PVE, NOVA and virt-install).
pub(crate) const SPINLOCK_RETRIES: u32 = 8191;

/// The libvirt XML that turns `flag` on (`value` for the vendor id).
pub(crate) fn libvirt_on(flag: HvFlag, value: Option<&str>) -> Option<String> {
    Some(match flag {
        HvFlag::Time => "<timer name='hypervclock' present='yes'/>".to_string(),
        HvFlag::Crash => "<panic model='hyperv'/>".to_string(),
        HvFlag::Spinlocks => format!("<spinlocks state='on' retries='{SPINLOCK_RETRIES}'/>"),
        HvFlag::VendorId => format!(
            "<vendor_id state='on' value='{}'/>",
            value.unwrap_or("KVM Hv")
        ),
        HvFlag::StimerDirect => "<stimer state='on'><direct state='on'/></stimer>".to_string(),
        HvFlag::TlbflushExt => "<tlbflush state='on'><extended state='on'/></tlbflush>".to_string(),
        HvFlag::TlbflushDirect => {
            "<tlbflush state='on'><direct state='on'/></tlbflush>".to_string()
        }
        _ => format!("<{} state='on'/>", flag.libvirt()?),
    })
}

/// The libvirt XML that turns `flag` off.
pub(crate) fn libvirt_off(flag: HvFlag) -> Option<String> {
    Some(match flag {
        HvFlag::Time => {
            "<timer name='hypervclock' present='no'/> (or remove the timer)".to_string()
        }
        HvFlag::Crash => "remove <panic model='hyperv'/>".to_string(),
        HvFlag::StimerDirect => "<stimer state='on'><direct state='off'/></stimer>".to_string(),
        HvFlag::TlbflushExt => {
            "<tlbflush state='on'><extended state='off'/></tlbflush>".to_string()
        }
        HvFlag::TlbflushDirect => {
            "<tlbflush state='on'><direct state='off'/></tlbflush>".to_string()
        }
        _ => format!("<{} state='off'/>", flag.libvirt()?),
    })
}

/// The QEMU `-cpu` property that turns `flag` on.
pub(crate) fn qemu_on(flag: HvFlag, value: Option<&str>) -> String {
    match flag {
        HvFlag::Spinlocks => format!("hv-spinlocks={SPINLOCK_RETRIES:#x}"),
        HvFlag::VendorId => format!("hv-vendor-id={}", value.unwrap_or("KVM Hv")),
        _ => format!("{}=on", flag.qemu()),
    }
}

/// The fix that adds `flags` (libvirt children of `<hyperv>` / `<clock>` / `<devices>`, QEMU
/// `-cpu` properties).
pub(crate) fn add(summary: impl Into<String>, flags: &[HvFlag]) -> Fix {
    let xml: Vec<String> = flags.iter().filter_map(|&f| libvirt_on(f, None)).collect();
    let qemu: Vec<String> = flags.iter().map(|&f| qemu_on(f, None)).collect();
    let only_qemu: Vec<&str> = flags
        .iter()
        .filter(|f| libvirt_on(**f, None).is_none())
        .map(|f| f.qemu())
        .collect();
    let libvirt = if xml.is_empty() {
        format!(
            "libvirt has no element for {}; pass it with <qemu:commandline>",
            only_qemu.join(", ")
        )
    } else {
        xml.join("\n")
    };
    Fix {
        summary: summary.into(),
        libvirt: Some(libvirt),
        qemu: Some(format!("-cpu …,{}", qemu.join(","))),
    }
}

/// The fix that removes `flag`.
pub(crate) fn remove(summary: impl Into<String>, flag: HvFlag) -> Fix {
    Fix {
        summary: summary.into(),
        libvirt: Some(
            libvirt_off(flag)
                .unwrap_or_else(|| format!("remove {} from <qemu:commandline>", flag.qemu())),
        ),
        qemu: Some(format!(
            "drop {} from -cpu (or {}=off)",
            flag.qemu(),
            flag.qemu()
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snippets() {
        assert_eq!(
            libvirt_on(HvFlag::Synic, None).as_deref(),
            Some("<synic state='on'/>")
        );
        assert_eq!(qemu_on(HvFlag::Spinlocks, None), "hv-spinlocks=0x1fff");
        let f = add("x", &[HvFlag::Vpindex, HvFlag::Time]);
        assert_eq!(f.qemu.as_deref(), Some("-cpu …,hv-vpindex=on,hv-time=on"));
        assert!(libvirt_on(HvFlag::Syndbg, None).is_none());
    }
}

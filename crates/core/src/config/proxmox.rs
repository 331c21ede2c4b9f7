//! Proxmox VE VM config (`/etc/pve/qemu-server/ID.conf`) → [`VmConfig`]: `ostype`, `cores`,
//! `sockets`, `vcpus`, `cpu` (type, `hidden`, `hv-vendor-id`, `flags`), `machine`, `bios`,
//! `kvm`, `tdf`, `localtime`, `affinity`, `hostpci*` (`x-vga`) and `args`. Proxmox derives the
//! Hyper-V flags and timers from these (qemu-server `CPUConfig.pm::get_hyperv_enlightenments`
//! and `Cfg2Cmd/Timer.pm`); that derivation is reproduced here so a `.conf` lints like the
//! command line Proxmox generates from it. Snapshot sections (`[name]`) are not read.

use std::collections::BTreeMap;

use super::{
    Accel, Format, Guest, HvFlag, Origin, PitPolicy, Setting, Version, VmConfig, WinGen, qemu,
};
use super::{script, shell};
use crate::error::{Error, Result};
use crate::facts::Vendor;

fn valid_key(k: &str) -> bool {
    k.starts_with(|c: char| c.is_ascii_lowercase())
        && k.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-')
}

/// True when every line before the first `[section]` is `key: value` or a `#` comment.
pub(crate) fn looks_like(text: &str) -> bool {
    let mut any = false;
    for line in text.lines() {
        let t = line.trim();
        if t.is_empty() || t.starts_with('#') {
            continue;
        }
        if t.starts_with('[') {
            break;
        }
        match t.split_once(':') {
            Some((k, _)) if valid_key(k) => any = true,
            _ => return false,
        }
    }
    any
}

/// Proxmox's Windows version number (`windows_version`): 5 for XP/2003, 6 for Vista/2008, 7…11.
fn winversion(g: &Guest) -> u32 {
    match g.windows {
        Some(WinGen::PreVista) => 5,
        Some(WinGen::Vista) => 6,
        Some(WinGen::Win7) => 7,
        Some(WinGen::Win8) => 8,
        Some(WinGen::Win10) => 10,
        Some(WinGen::Win11) => 11,
        None => 0,
    }
}

/// A machine type's version and pve revision; `None` for an unversioned type (latest).
fn machine_version(machine: Option<&str>) -> Option<(Version, u32)> {
    let m = machine?;
    let (base, pve) = match m.split_once("+pve") {
        Some((b, p)) => (b, p.parse().unwrap_or(0)),
        None => (m, 0),
    };
    let v = base.rsplit('-').next()?;
    Version::parse(v).map(|v| (v, pve))
}

/// `min_version`: an unversioned machine is the newest.
fn at_least(mv: Option<(Version, u32)>, major: u32, minor: u32) -> bool {
    mv.is_none_or(|(v, _)| v >= Version(major, minor))
}

/// Reads a Proxmox VM config. `host_vendor` decides Proxmox's Intel-only hv-evmcs.
pub(crate) fn parse(text: &str, input: &str, host_vendor: Option<&Vendor>) -> Result<VmConfig> {
    let mut kv: BTreeMap<&str, (&str, usize)> = BTreeMap::new();
    for (i, line) in text.lines().enumerate() {
        let t = line.trim();
        if t.is_empty() || t.starts_with('#') {
            continue;
        }
        if t.starts_with('[') {
            break;
        }
        match t.split_once(':') {
            Some((k, v)) if valid_key(k) => {
                kv.insert(k, (v.trim(), i + 1));
            }
            _ => {
                return Err(Error::Parse {
                    path: input.to_string(),
                    line: i + 1,
                    message: format!(
                        "`{}`; expected `key: value` (a Proxmox VM config line)",
                        t.chars().take(60).collect::<String>()
                    ),
                });
            }
        }
    }
    let mut c = VmConfig::new(Format::Proxmox, input, 1, 1);
    let at = |key: &str| -> Option<(String, Origin)> {
        kv.get(key)
            .map(|(v, l)| (v.to_string(), Origin::at(format!("{key}: {v}"), *l)))
    };
    let number = |key: &str| -> Result<Option<u32>> {
        match kv.get(key) {
            None => Ok(None),
            Some((v, l)) => v.parse().map(Some).map_err(|_| Error::Parse {
                path: input.to_string(),
                line: *l,
                message: format!("{key}: `{v}`; expected a number"),
            }),
        }
    };
    if let Some((v, o)) = at("name") {
        c.name = Some(Setting::new(v, o));
    }
    let kvm = kv.get("kvm").is_none_or(|(v, _)| *v != "0");
    c.accel = Some(match at("kvm") {
        Some((_, o)) => Setting::new(if kvm { Accel::Kvm } else { Accel::Tcg }, o),
        None => Setting::new(Accel::Kvm, Origin::implied("kvm: 1 (Proxmox default)")),
    });
    let machine = at("machine").map(|(v, o)| {
        let t = v.split(',').find_map(|p| match p.split_once('=') {
            Some(("type", t)) => Some(t.to_string()),
            Some(_) => None,
            None => Some(p.to_string()),
        });
        (t.unwrap_or(v), o)
    });
    if let Some((m, o)) = &machine {
        c.machine = Some(Setting::new(m.clone(), o.clone()));
    }
    let mv = machine_version(machine.as_ref().map(|(m, _)| m.as_str()));
    if let Some((v, o)) = at("bios") {
        let fw = if v == "ovmf" { "efi" } else { "bios" };
        c.firmware = Some(Setting::new(fw.to_string(), o));
    }
    if let Some((v, o)) = at("ostype") {
        c.guest = Guest::from_ostype(&v, o);
    }
    let cores = number("cores")?.unwrap_or(1);
    let sockets = number("sockets")?.unwrap_or(1);
    c.vcpus = Some(match (number("vcpus")?, at("vcpus")) {
        (Some(n), Some((_, o))) => Setting::new(n, o),
        _ => Setting::new(
            cores * sockets,
            at("cores")
                .or_else(|| at("sockets"))
                .map_or_else(|| Origin::implied("cores: 1 (default)"), |(_, o)| o),
        ),
    });
    if let Some((v, o)) = at("arch") {
        c.arch = Some(Setting::new(v, o));
    }
    if let Some((_, o)) = at("affinity") {
        c.pinned = Some(o);
    }
    let cpu = cpu(&mut c, at("cpu"));
    let gpu = kv
        .iter()
        .any(|(k, (v, _))| k.starts_with("hostpci") && v.contains("x-vga=1"));
    let win = winversion(&c.guest);
    if kvm {
        hyperv(&mut c, win, mv, cpu, gpu, host_vendor);
    }
    timers(&mut c, &kv, win, mv);
    if let Some((v, l)) = kv.get("args") {
        let words = shell::split(v).map_err(|e| Error::Parse {
            path: input.to_string(),
            line: *l,
            message: format!("args: {}", e.message),
        })?;
        let tokens: Vec<script::Token> = script::expand(&words)
            .map_err(|e| Error::Parse {
                path: input.to_string(),
                line: *l,
                message: format!("args: {}", e.message),
            })?
            .into_iter()
            .flat_map(|c| c.words)
            .map(|t| script::Token { line: *l, ..t })
            .collect();
        qemu::apply_options(&mut c, &tokens).map_err(|(line, message)| Error::Parse {
            path: input.to_string(),
            line,
            message: format!("args: {message}"),
        })?;
    }
    Ok(c)
}

/// What the `cpu:` line says beyond the model: an explicit hv vendor id.
struct CpuLine {
    vendor_id: Option<(String, Origin)>,
}

fn cpu(c: &mut VmConfig, line: Option<(String, Origin)>) -> CpuLine {
    let mut out = CpuLine { vendor_id: None };
    let Some((v, o)) = line else {
        c.cpu.model = Some(Setting::new(
            "kvm64".into(),
            Origin::implied("cpu: kvm64 (Proxmox default)"),
        ));
        return out;
    };
    for (i, part) in v.split(',').enumerate() {
        match part.split_once('=') {
            None if i == 0 => c.cpu.model = Some(Setting::new(part.to_string(), o.clone())),
            Some(("cputype", t)) => c.cpu.model = Some(Setting::new(t.to_string(), o.clone())),
            Some(("hidden", "1")) => c.cpu.kvm_hidden = Some(o.clone()),
            Some(("hv-vendor-id", id)) => out.vendor_id = Some((id.to_string(), o.clone())),
            Some(("flags", flags)) => {
                for f in flags.split(';') {
                    let (on, name) = match f.split_at_checked(1) {
                        Some(("+", n)) => (true, n),
                        Some(("-", n)) => (false, n),
                        _ => (true, f),
                    };
                    if let Some(flag) = HvFlag::from_qemu(name) {
                        c.set_flag(flag, on, None, o.clone());
                    }
                }
            }
            _ => {}
        }
    }
    out
}

/// `get_hyperv_enlightenments`, plus hv-evmcs for Windows 11/2022/2025 on Intel hosts with
/// machine ≥ 11.0+pve2 (qemu-server commit 30531026). Flags set in `cpu: flags=` win.
fn hyperv(
    c: &mut VmConfig,
    win: u32,
    mv: Option<(Version, u32)>,
    cpu: CpuLine,
    gpu: bool,
    host: Option<&Vendor>,
) {
    let ovmf = c.firmware.as_ref().is_some_and(|f| f.value == "efi");
    if win < 6 || (ovmf && win < 8) {
        return;
    }
    let ostype = c
        .guest
        .origin
        .clone()
        .unwrap_or_else(|| Origin::implied("ostype"));
    if c.hyperv.anchor.is_none() {
        c.hyperv.anchor = Some(ostype.clone());
    }
    let add = |c: &mut VmConfig, flag: HvFlag, value: Option<String>, why: Option<Origin>| {
        if c.hyperv.flags.contains_key(&flag) {
            return;
        }
        let o = why.unwrap_or_else(|| ostype.clone());
        let origin = Origin {
            path: format!("{} → {}", o.path, flag.qemu()),
            line: o.line,
        };
        c.set_flag(flag, true, value, origin);
    };
    if let Some((id, o)) = cpu.vendor_id {
        add(c, HvFlag::VendorId, Some(id), Some(o));
    } else if gpu {
        add(c, HvFlag::VendorId, Some("proxmox".into()), None);
    }
    if at_least(mv, 2, 3) {
        add(c, HvFlag::Spinlocks, Some("0x1fff".into()), None);
        add(c, HvFlag::Vapic, None, None);
        add(c, HvFlag::Time, None, None);
    } else {
        add(c, HvFlag::Spinlocks, Some("0xffff".into()), None);
    }
    if at_least(mv, 2, 6) {
        add(c, HvFlag::Reset, None, None);
        add(c, HvFlag::Vpindex, None, None);
        add(c, HvFlag::Runtime, None, None);
    }
    if win >= 7 {
        add(c, HvFlag::Relaxed, None, None);
        if at_least(mv, 2, 12) {
            add(c, HvFlag::Synic, None, None);
            add(c, HvFlag::Stimer, None, None);
        }
        if at_least(mv, 3, 1) {
            add(c, HvFlag::Ipi, None, None);
        }
    }
    let evmcs_machine =
        mv.is_none_or(|(v, pve)| v > Version(11, 0) || (v == Version(11, 0) && pve >= 2));
    if win >= 11 && evmcs_machine {
        match host {
            Some(Vendor::Intel) => add(c, HvFlag::Evmcs, None, None),
            Some(_) => {}
            None => c.notes.push(
                "Proxmox adds hv-evmcs for this guest on Intel hosts only; the host vendor is unknown \
                 (pass --host-vendor), so it was left out"
                    .to_string(),
            ),
        }
    }
}

/// `Cfg2Cmd/Timer.pm`: Windows ≥ Vista gets PIT discard and no HPET; Windows gets the RTC at
/// localtime with drift fix (when ACPI is on); Linux on machine ≥ 10.1 gets no HPET.
fn timers(
    c: &mut VmConfig,
    kv: &BTreeMap<&str, (&str, usize)>,
    win: u32,
    mv: Option<(Version, u32)>,
) {
    let ostype = c
        .guest
        .origin
        .clone()
        .unwrap_or_else(|| Origin::implied("ostype"));
    let why = |what: &str| Origin {
        path: format!("{} → {what}", ostype.path),
        line: ostype.line,
    };
    let flag = |k: &str| {
        kv.get(k)
            .map(|(v, l)| (*v != "0", Origin::at(format!("{k}: {v}"), *l)))
    };
    if win >= 6 {
        c.timers.pit = Some(Setting::new(
            PitPolicy::Discard,
            why("-global kvm-pit.lost_tick_policy=discard"),
        ));
        c.timers.hpet = Some(Setting::new(false, why("-machine hpet=off")));
    } else if c.guest.family == super::GuestFamily::Linux && at_least(mv, 10, 1) {
        c.timers.hpet = Some(Setting::new(false, why("-machine hpet=off")));
    }
    let acpi = flag("acpi").is_none_or(|(on, _)| on);
    match flag("tdf") {
        Some((on, o)) => c.timers.rtc_catchup = Some(Setting::new(on, o)),
        None if win >= 5 && acpi => {
            c.timers.rtc_catchup = Some(Setting::new(true, why("-rtc driftfix=slew")));
        }
        None => {}
    }
    match flag("localtime") {
        Some((true, o)) => c.timers.rtc_base = Some(Setting::new("localtime".into(), o)),
        Some((false, _)) => {}
        None if win >= 5 => {
            c.timers.rtc_base = Some(Setting::new("localtime".into(), why("-rtc base=localtime")));
        }
        None => {}
    }
}

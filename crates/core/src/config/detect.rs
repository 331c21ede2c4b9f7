//! Which configuration format a text is in — XML (a libvirt domain or a part of one), a
//! Proxmox VM config, or a QEMU command line / launch script — and, for texts virtlens does not
//! read, what they look like (a Xen `xl` config, a VMware `.vmx`, JSON, YAML, an INI file, a
//! Vagrantfile), so the refusal says so instead of "no QEMU command found".

use super::{Format, proxmox};
use crate::error::{Error, Result};

/// Keys of Xen's `xl.cfg(5)`.
const XL_KEYS: [&str; 16] = [
    "builder",
    "type",
    "kernel",
    "ramdisk",
    "viridian",
    "vif",
    "disk",
    "device_model_version",
    "device_model_override",
    "device_model_args",
    "device_model_args_hvm",
    "on_reboot",
    "on_crash",
    "hap",
    "vnc",
    "pci",
];

/// Keys every Proxmox VM config has some of (qemu-server's option names).
const PROXMOX_KEYS: [&str; 20] = [
    "boot", "bootdisk", "cores", "sockets", "memory", "name", "net0", "ostype", "scsihw",
    "smbios1", "vmgenid", "scsi0", "virtio0", "sata0", "ide2", "cpu", "machine", "bios", "args",
    "efidisk0",
];

/// The format of `text` (named `input` in errors), or why virtlens does not read it.
pub(crate) fn detect(text: &str, input: &str) -> Result<Format> {
    let t = text.trim_start_matches('\u{feff}').trim_start();
    if t.starts_with('<') {
        return Ok(Format::Libvirt);
    }
    if let Some(what) = foreign(text) {
        return Err(refusal(input, &what));
    }
    if proxmox::looks_like(text) && proxmox_keys(text) {
        return Ok(Format::Proxmox);
    }
    Ok(Format::Qemu)
}

/// A "nothing found" error from the QEMU reader, with what the text looks like when it looks
/// like something else.
pub(crate) fn explain(e: Error, text: &str) -> Error {
    let (path, nothing_found) = match &e {
        Error::Parse { path, message, .. } | Error::Input { path, message } => {
            (path.clone(), message.contains("expected a qemu-system-*"))
        }
        Error::Io { .. } => return e,
    };
    match foreign(text) {
        Some(what) if nothing_found => refusal(&path, &what),
        _ => e,
    }
}

fn refusal(input: &str, what: &str) -> Error {
    Error::Input {
        path: input.to_string(),
        message: format!(
            "this looks like {what}; expected a libvirt domain XML, a QEMU command line or launch \
             script, or a Proxmox VM config"
        ),
    }
}

fn proxmox_keys(text: &str) -> bool {
    text.lines()
        .filter_map(|l| l.split_once(':'))
        .any(|(k, _)| PROXMOX_KEYS.contains(&k.trim()) || k.trim().starts_with("hostpci"))
}

/// Meaningful lines: not blank, not a `#` comment.
fn lines(text: &str) -> impl Iterator<Item = &str> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#') && !l.starts_with(';'))
}

/// What `text` is when it is a kind of file virtlens does not read.
fn foreign(text: &str) -> Option<String> {
    let first = lines(text).next()?;
    if (first.starts_with('{') || first.starts_with('['))
        && serde_json::from_str::<serde_json::Value>(text).is_ok()
    {
        return Some("JSON".to_string());
    }
    if first == "---" || first.starts_with("apiVersion:") {
        return Some("a YAML document (a Kubernetes or KubeVirt manifest?)".to_string());
    }
    if lines(text).any(|l| l.starts_with("Vagrant.configure")) {
        return Some("a Vagrantfile".to_string());
    }
    if first.starts_with('[') && first.ends_with(']') && !first.contains(' ') {
        let section = &first[1..first.len() - 1];
        return Some(match section {
            "Unit" | "Service" | "Install" => "a systemd unit".to_string(),
            _ => format!("an INI-style file (section [{section}])"),
        });
    }
    key_value(text)
}

/// `key = value` lines (with blanks around `=`, which no shell assignment has) or `key = "…"`:
/// a Xen `xl` config, a VMware `.vmx`, or another `key = value` file.
fn key_value(text: &str) -> Option<String> {
    let mut keys: Vec<&str> = Vec::new();
    let mut open_list = false;
    for l in lines(text) {
        if open_list {
            open_list = !l.contains(']');
            continue;
        }
        let (k, v) = l.split_once('=')?;
        let key = k.trim();
        let spaced = k.ends_with([' ', '\t']) || v.starts_with([' ', '\t']);
        let valid = !key.is_empty()
            && key
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | ':'));
        let v = v.trim();
        if !valid || !(spaced || v.starts_with('"') && v.ends_with('"') || v.starts_with('[')) {
            return None;
        }
        open_list = v.starts_with('[') && !v.contains(']');
        keys.push(key);
    }
    let has = |k: &str| keys.iter().any(|x| x.eq_ignore_ascii_case(k));
    if has("config.version") || has("virtualHW.version") || has("displayName") {
        return Some("a VMware .vmx file".to_string());
    }
    if let Some(k) = keys.iter().find(|k| XL_KEYS.contains(k)) {
        return Some(format!("a Xen xl domain config (`{k} = …`)"));
    }
    (!keys.is_empty()).then(|| "a `key = value` configuration file".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(text: &str) -> String {
        match detect(text, "f") {
            Err(e) => e.to_string(),
            Ok(f) => panic!("{f:?}"),
        }
    }

    #[test]
    fn formats() {
        assert_eq!(detect("<domain/>", "f").unwrap(), Format::Libvirt);
        assert_eq!(
            detect("ostype: win11\ncores: 4\n", "f").unwrap(),
            Format::Proxmox
        );
        assert_eq!(
            detect("qemu-system-x86_64 -m 1G\n", "f").unwrap(),
            Format::Qemu
        );
        assert_eq!(detect("X=1\nqemu-kvm $X\n", "f").unwrap(), Format::Qemu);
        assert_eq!(detect("[ -f x ] && qemu-kvm\n", "f").unwrap(), Format::Qemu);
    }

    #[test]
    fn foreign_files_are_named() {
        let xen = "name = \"w\"\nbuilder = \"hvm\"\ndisk = [ 'a',\n  'b' ]\n";
        assert!(refused(xen).contains("a Xen xl domain config (`builder = …`)"));
        assert!(refused("config.version = \"8\"\ndisplayName = \"w\"\n").contains("VMware"));
        assert!(refused("{\"a\": 1}").contains("JSON"));
        assert!(refused("[Unit]\nDescription=x\n").contains("systemd unit"));
        assert!(refused("apiVersion: kubevirt.io/v1\nkind: VirtualMachine\n").contains("YAML"));
    }
}

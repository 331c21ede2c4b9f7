//! The guest operating system a configuration is for: from libvirt's libosinfo metadata, a
//! Proxmox `ostype`, or the user (`--guest`); otherwise unknown, and lint infers it (any hv-*
//! flag → Windows) and says so.

use std::fmt;

use serde::Serialize;

use super::Origin;

/// The guest's OS family.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum GuestFamily {
    Windows,
    Linux,
    Other,
    #[default]
    Unknown,
}

/// A Windows generation, grouped the way the enlightenment advice differs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum WinGen {
    /// NT 5.x: 2000, XP, Server 2003 — no enlightenment use.
    PreVista,
    /// NT 6.0: Vista, Server 2008.
    Vista,
    /// NT 6.1: 7, Server 2008 R2.
    Win7,
    /// NT 6.2/6.3: 8, 8.1, Server 2012 (R2).
    Win8,
    /// 10, Server 2016/2019.
    Win10,
    /// 11, Server 2022/2025.
    Win11,
}

impl fmt::Display for WinGen {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            WinGen::PreVista => "XP/2003",
            WinGen::Vista => "Vista/2008",
            WinGen::Win7 => "7/2008 R2",
            WinGen::Win8 => "8/2012",
            WinGen::Win10 => "10/2016/2019",
            WinGen::Win11 => "11/2022/2025",
        })
    }
}

/// How the guest OS was determined.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum GuestSource {
    /// libvirt `<libosinfo:os id=…/>`.
    Libosinfo,
    /// Proxmox `ostype:`.
    Ostype,
    /// The user said so (`--guest`).
    Option,
    /// Inferred: Hyper-V enlightenments are set, so most likely Windows.
    Heuristic,
    #[default]
    Unknown,
}

/// The guest OS.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Guest {
    pub family: GuestFamily,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub windows: Option<WinGen>,
    pub source: GuestSource,
    /// The id or value it was read from, and where.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub origin: Option<Origin>,
}

impl Guest {
    /// True when the guest is (taken as) Windows.
    pub fn is_windows(&self) -> bool {
        self.family == GuestFamily::Windows
    }

    /// A guest from a libosinfo id (`http://microsoft.com/win/11`).
    pub fn from_libosinfo(id: &str, origin: Origin) -> Guest {
        let lower = id.to_ascii_lowercase();
        let (family, windows) = if let Some(v) = lower.split("microsoft.com/win/").nth(1) {
            (GuestFamily::Windows, win_from_libosinfo(v))
        } else if is_linux_id(&lower) {
            (GuestFamily::Linux, None)
        } else {
            (GuestFamily::Other, None)
        };
        Guest {
            family,
            windows,
            source: GuestSource::Libosinfo,
            id: Some(id.to_string()),
            origin: Some(origin),
        }
    }

    /// A guest from a Proxmox `ostype` (`win11`, `l26`, `wxp`, …).
    pub fn from_ostype(ostype: &str, origin: Origin) -> Guest {
        let windows = match ostype {
            "wxp" | "w2k" | "w2k3" => Some(WinGen::PreVista),
            "w2k8" | "wvista" => Some(WinGen::Vista),
            "win7" => Some(WinGen::Win7),
            "win8" => Some(WinGen::Win8),
            "win10" => Some(WinGen::Win10),
            "win11" => Some(WinGen::Win11),
            _ => None,
        };
        let family = if windows.is_some() {
            GuestFamily::Windows
        } else if ostype.starts_with('l') {
            GuestFamily::Linux
        } else {
            GuestFamily::Other
        };
        Guest {
            family,
            windows,
            source: GuestSource::Ostype,
            id: Some(ostype.to_string()),
            origin: Some(origin),
        }
    }

    /// What the guest is, in words (`Windows 11/2022/2025 (libosinfo http://…)`).
    pub fn describe(&self) -> String {
        let what = match (self.family, self.windows) {
            (GuestFamily::Windows, Some(g)) => format!("Windows {g}"),
            (GuestFamily::Windows, None) => "Windows".to_string(),
            (GuestFamily::Linux, _) => "Linux".to_string(),
            (GuestFamily::Other, _) => "non-Windows".to_string(),
            (GuestFamily::Unknown, _) => "unknown".to_string(),
        };
        let how = match (self.source, &self.id) {
            (GuestSource::Libosinfo, Some(id)) => format!(" (libosinfo {id})"),
            (GuestSource::Ostype, Some(id)) => format!(" (ostype: {id})"),
            (GuestSource::Option, _) => " (--guest)".to_string(),
            (GuestSource::Heuristic, _) => " (inferred from the hv-* flags)".to_string(),
            _ => String::new(),
        };
        format!("{what}{how}")
    }
}

fn win_from_libosinfo(v: &str) -> Option<WinGen> {
    let v = v.trim_end_matches('/');
    Some(match v {
        "nt" | "2k" | "xp" | "2k3" | "2k3r2" => WinGen::PreVista,
        "vista" | "2k8" => WinGen::Vista,
        "7" | "2k8r2" => WinGen::Win7,
        "8" | "8.1" | "2k12" | "2k12r2" => WinGen::Win8,
        "10" | "2k16" | "2k19" => WinGen::Win10,
        "11" | "2k22" | "2k25" => WinGen::Win11,
        _ => return None,
    })
}

fn is_linux_id(id: &str) -> bool {
    const LINUX: [&str; 18] = [
        "linux",
        "fedoraproject.org",
        "ubuntu.com",
        "redhat.com",
        "debian.org",
        "centos.org",
        "opensuse.org",
        "suse.com",
        "archlinux.org",
        "almalinux.org",
        "rockylinux.org",
        "alpinelinux.org",
        "gentoo.org",
        "mageia.org",
        "oracle.com",
        "mandriva.com",
        "slackware.com",
        "novell.com",
    ];
    LINUX.iter().any(|k| id.contains(k))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn libosinfo_ids() {
        let g = Guest::from_libosinfo("http://microsoft.com/win/11", Origin::implied("x"));
        assert_eq!(g.windows, Some(WinGen::Win11));
        let g = Guest::from_libosinfo("http://microsoft.com/win/2k8r2", Origin::implied("x"));
        assert_eq!(g.windows, Some(WinGen::Win7));
        let g = Guest::from_libosinfo("http://fedoraproject.org/fedora/39", Origin::implied("x"));
        assert_eq!(g.family, GuestFamily::Linux);
        let g = Guest::from_ostype("l26", Origin::implied("x"));
        assert_eq!(g.family, GuestFamily::Linux);
    }
}

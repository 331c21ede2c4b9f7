//! The configuration model: what a VM is configured to get from KVM/QEMU (Hyper-V
//! enlightenments, timers, CPU model, guest OS, vCPUs and pinning), read from a libvirt domain
//! XML, a QEMU command line (or a launch script holding one) or a Proxmox VM config. Every fact
//! keeps where it came from ([`Origin`]), so lint findings can point at the element or flag.
//!
//! Reading starts with the bytes (`input`: compressed, binary, UTF-16 or a
//! `/proc/PID/cmdline`), then the kind of text (`detect`: which format, or a clear refusal
//! for what virtlens does not read). Parsers live one per format (`libvirt`, `qemu` with
//! the shell model of `script`, `proxmox`); `effective` computes the flag set QEMU would
//! actually run with; the lint rules in [`crate::lint`] read only this model.

pub(crate) mod detect;
pub(crate) mod effective;
pub(crate) mod flags;
pub(crate) mod guest;
pub(crate) mod input;
pub(crate) mod libvirt;
pub(crate) mod proxmox;
pub(crate) mod qemu;
mod qemu_cpu;
mod qemu_options;
pub(crate) mod script;
pub(crate) mod shell;
mod xml_docs;

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::path::Path;

use serde::Serialize;

use crate::error::Result;
use crate::facts::Vendor;
pub use effective::Effective;
pub use flags::{HvFlag, Version};
pub use guest::{Guest, GuestFamily, GuestSource, WinGen};

/// Where a fact came from: an XML element path (`/domain/features/hyperv/stimer`), an argv
/// flag (`-cpu hv_stimer`), a config key (`ostype: win11`), with its 1-based line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Origin {
    pub path: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<usize>,
}

impl Origin {
    /// An origin at `line`.
    pub fn at(path: impl Into<String>, line: usize) -> Origin {
        Origin {
            path: path.into(),
            line: Some(line),
        }
    }

    /// An origin without a line (a default, or something implied).
    pub fn implied(path: impl Into<String>) -> Origin {
        Origin {
            path: path.into(),
            line: None,
        }
    }
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            Some(l) => write!(f, "{} (line {l})", self.path),
            None => f.write_str(&self.path),
        }
    }
}

/// A value and where it was set.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Setting<T> {
    pub value: T,
    pub origin: Origin,
}

impl<T> Setting<T> {
    pub fn new(value: T, origin: Origin) -> Self {
        Setting { value, origin }
    }
}

/// The kinds of configuration file virtlens reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    /// A libvirt domain XML (or a fragment of one).
    Libvirt,
    /// A QEMU command line or a launch script holding one.
    Qemu,
    /// A Proxmox VE VM config (`/etc/pve/qemu-server/ID.conf`).
    Proxmox,
}

impl Format {
    /// The format's name (`--format NAME`).
    pub fn name(self) -> &'static str {
        match self {
            Format::Libvirt => "libvirt",
            Format::Qemu => "qemu",
            Format::Proxmox => "proxmox",
        }
    }
}

/// One explicit setting of a Hyper-V flag: on/off, its value (spinlock retries as hex,
/// vendor id, `on|off|auto` for no-nonarch-coresharing) and where it was set.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FlagSetting {
    pub on: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    pub origin: Origin,
}

/// Something written more than once: what, where first, how many times (kept once, so a
/// million repeated elements cost one entry).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Repeated {
    pub what: String,
    pub origin: Origin,
    pub count: usize,
}

impl Repeated {
    /// Counts `what` at `origin` in `list`, using `index` (what → position) to stay linear.
    pub fn count(
        list: &mut Vec<Repeated>,
        index: &mut HashMap<String, usize>,
        what: String,
        origin: Origin,
    ) {
        match index.get(&what) {
            Some(&i) => {
                if let Some(r) = list.get_mut(i) {
                    r.count += 1;
                }
            }
            None => {
                index.insert(what.clone(), list.len());
                list.push(Repeated {
                    what,
                    origin,
                    count: 1,
                });
            }
        }
    }
}

/// The Hyper-V part of a configuration, as written (the last setting of a flag wins, as in
/// QEMU; libvirt duplicates are kept in `duplicates`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Hyperv {
    /// `hv-passthrough` / `<hyperv mode='passthrough'/>`.
    pub passthrough: Option<Origin>,
    pub flags: BTreeMap<HvFlag, FlagSetting>,
    /// Flags written more than once: each name once, at its first repeat, with the number of
    /// repeats.
    pub duplicates: Vec<Repeated>,
    /// `hv-*` names (or `<hyperv>` children) QEMU/libvirt do not know, kept as written: they
    /// reject the configuration.
    pub unknown: Vec<Setting<String>>,
    /// Settings libvirt rejects for their form (a `<hyperv>` child without `state='on|off'`):
    /// why and how they were taken, once per distinct reason, with the number of times.
    pub invalid: Vec<Repeated>,
    /// Where the Hyper-V settings live (`/domain/features/hyperv`, `-cpu`), for findings about
    /// something missing.
    pub anchor: Option<Origin>,
}

/// The in-kernel PIT's lost-tick policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum PitPolicy {
    /// Reinjection on (KVM's default).
    Delay,
    /// Reinjection off.
    Discard,
    /// Another policy as written (`catchup`, `merge`).
    Other,
}

/// Clock and timer devices.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Timers {
    /// HPET present (`None`: the machine's default, present on pc/q35).
    pub hpet: Option<Setting<bool>>,
    /// PIT lost-tick policy (`None`: KVM's default, reinjection on).
    pub pit: Option<Setting<PitPolicy>>,
    /// A PIT present (`Some(false)`: removed with `-machine pit=off`). libvirt has no way to
    /// remove the PIT: it ignores `present` on the PIT timer, so its XML never sets this.
    pub pit_present: Option<Setting<bool>>,
    /// RTC drift fix (`catchup` / `driftfix=slew`).
    pub rtc_catchup: Option<Setting<bool>>,
    /// RTC base (`utc`, `localtime`).
    pub rtc_base: Option<Setting<String>>,
    /// `kernel-irqchip` (`on`, `off`, `split`); `None` is QEMU's default (on).
    pub kernel_irqchip: Option<Setting<String>>,
    /// A fixed TSC frequency (`tsc-frequency=`, `<timer name='tsc' frequency=…/>`).
    pub tsc_frequency: Option<Setting<String>>,
    /// Where clock settings live (`/domain/clock`), for findings about something missing.
    pub anchor: Option<Origin>,
}

/// The virtual CPU.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Cpu {
    /// Model or mode (`host`, `host-passthrough`, `qemu64`, `Skylake-Client`).
    pub model: Option<Setting<String>>,
    /// The `hypervisor` CPUID bit is hidden.
    pub hypervisor_hidden: Option<Origin>,
    /// KVM's signature is hidden (`kvm=off`, `<kvm><hidden state='on'/>`).
    pub kvm_hidden: Option<Origin>,
    /// VMX/SVM explicitly exposed (`true`) or removed (`false`).
    pub nested_virt: Option<Setting<bool>>,
    /// SVM (AMD's) explicitly exposed or removed: what an AMD host's AVIC reacts to (a CPU
    /// model's `vmx` means nothing there).
    pub svm: Option<Setting<bool>>,
    /// x2APIC explicitly exposed (`true`) or removed (`false`); KVM's CPU models and `host`
    /// have it unless removed.
    pub x2apic: Option<Setting<bool>>,
}

/// What happens when the guest panics.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Panic {
    /// `<on_crash>`, or `-action panic=`.
    pub action: Option<Setting<String>>,
    /// A `vmbus-bridge` device (needed by hv-syndbg).
    pub vmbus_bridge: Option<Origin>,
}

/// How the VM is accelerated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Accel {
    Kvm,
    Tcg,
    Other,
}

/// Which part of a configuration a value the file leaves open (a shell variable it does not
/// set) could change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Area {
    /// The emulator binary (and so the architecture).
    Emulator,
    /// `-cpu`: the CPU model and the hv-* flags.
    Cpu,
    /// `-smp`: the vCPU counts.
    Vcpus,
    /// `-machine` / `-accel`: machine type, HPET, accelerator, irqchip.
    Machine,
    /// `-global` / `-rtc`: PIT and RTC policies.
    Timers,
    /// `-action`: the panic action.
    Panic,
    /// `-device`: devices (vmbus-bridge, hot-plugged vCPUs).
    Devices,
    /// A whole argument: any option may hide in it.
    Any,
}

/// A value the file does not determine, where it is and what it leaves open.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Caveat {
    pub area: Area,
    pub origin: Origin,
    pub message: String,
}

/// One VM's configuration as read from one document of a file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct VmConfig {
    pub format: Format,
    /// The input's name (file path).
    pub input: String,
    /// Which document of the file (1-based; a file may hold several domains or commands).
    pub document: usize,
    /// The line the document starts on.
    pub first_line: usize,
    pub name: Option<Setting<String>>,
    pub accel: Option<Setting<Accel>>,
    /// Machine type (`q35`, `pc-q35-6.1`, `pc-i440fx-4.0+pve0`).
    pub machine: Option<Setting<String>>,
    /// Firmware (`efi`, `bios`).
    pub firmware: Option<Setting<String>>,
    /// The architecture (`x86_64`, `i686`, `aarch64`, …: libvirt's names); `None` when the
    /// file does not say (taken as the host's, x86).
    pub arch: Option<Setting<String>>,
    /// vCPUs online at boot (`-smp N`, `<vcpu current='N'>`).
    pub vcpus: Option<Setting<u32>>,
    /// The most vCPUs the VM can have without a restart (`maxcpus=`, `<vcpu>M</vcpu>`).
    pub max_vcpus: Option<Setting<u32>>,
    /// vCPUs pinned to host CPUs (`cputune/vcpupin`, Proxmox `affinity`).
    pub pinned: Option<Origin>,
    pub cpu: Cpu,
    pub hyperv: Hyperv,
    pub timers: Timers,
    pub panic: Panic,
    pub guest: Guest,
    /// Remarks from reading (assumptions made, things kept but not understood).
    pub notes: Vec<String>,
    /// Values the file leaves open (unset shell variables): caveats on the findings.
    pub caveats: Vec<Caveat>,
}

impl VmConfig {
    /// An empty configuration of `format` for document `document` of `input`.
    pub fn new(format: Format, input: &str, document: usize, first_line: usize) -> VmConfig {
        VmConfig {
            format,
            input: input.to_string(),
            document,
            first_line,
            name: None,
            accel: None,
            machine: None,
            firmware: None,
            arch: None,
            vcpus: None,
            max_vcpus: None,
            pinned: None,
            cpu: Cpu::default(),
            hyperv: Hyperv::default(),
            timers: Timers::default(),
            panic: Panic::default(),
            guest: Guest::default(),
            notes: Vec::new(),
            caveats: Vec::new(),
        }
    }

    /// Records that `origin` leaves `area` open, saying why.
    pub fn caveat(&mut self, area: Area, origin: Origin, message: String) {
        let c = Caveat {
            area,
            origin,
            message,
        };
        if !self.caveats.contains(&c) {
            self.caveats.push(c);
        }
    }

    /// True unless the architecture is known to be something other than x86 (the Hyper-V
    /// enlightenments and the PC timers exist on x86 only).
    pub fn is_x86(&self) -> bool {
        self.arch.as_ref().is_none_or(|a| is_x86(&a.value))
    }

    /// Sets `flag` (the last setting wins, as on QEMU's command line).
    pub fn set_flag(&mut self, flag: HvFlag, on: bool, value: Option<String>, origin: Origin) {
        self.hyperv
            .flags
            .insert(flag, FlagSetting { on, value, origin });
    }

    /// The flag set QEMU would run with.
    pub fn effective(&self) -> Effective {
        Effective::of(self)
    }
}

/// What the reader needs to know besides the text.
#[derive(Debug, Clone, Default)]
pub struct ReadOptions {
    /// Force a format instead of detecting it.
    pub format: Option<Format>,
    /// The host's CPU vendor: Proxmox derives some flags from it (hv-evmcs on Intel).
    pub host_vendor: Option<Vendor>,
}

/// True for libvirt's and QEMU's names of the x86 architectures.
pub fn is_x86(arch: &str) -> bool {
    matches!(arch, "x86_64" | "i686" | "i386" | "i586" | "x86")
}

/// Reads every document in `bytes` (named `input` in errors): decodes them (`input`), then
/// reads the text in the format given or detected (`detect`).
pub fn read_bytes(bytes: &[u8], input: &str, options: &ReadOptions) -> Result<Vec<VmConfig>> {
    match input::decode(bytes, input, options.format)? {
        input::Decoded::Argv(args) => qemu::from_argv(&args, input).map(|c| vec![c]),
        input::Decoded::Text(text) => read_str(&text, input, options),
    }
}

/// Reads every document in `text`.
pub fn read_str(text: &str, input: &str, options: &ReadOptions) -> Result<Vec<VmConfig>> {
    let format = match options.format {
        Some(f) => f,
        None => detect::detect(text, input)?,
    };
    match format {
        Format::Libvirt => libvirt::parse(text, input),
        Format::Qemu => qemu::parse(text, input).map_err(|e| detect::explain(e, text)),
        Format::Proxmox => {
            proxmox::parse(text, input, options.host_vendor.as_ref()).map(|c| vec![c])
        }
    }
}

/// Reads the file at `path` (`-` for standard input), refusing more than
/// [`crate::sources::input::CONFIG_CAP`].
pub fn read_path(path: &Path, options: &ReadOptions) -> Result<Vec<VmConfig>> {
    let name = path.display().to_string();
    let bytes = crate::sources::input::read_capped(
        path,
        crate::sources::input::CONFIG_CAP,
        "VM configuration",
    )?;
    read_bytes(&bytes, &name, options)
}

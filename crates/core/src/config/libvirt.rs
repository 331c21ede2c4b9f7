//! libvirt domain XML → [`VmConfig`]: `features/hyperv` (every child with its `state`,
//! `mode='passthrough'`, spinlock `retries`, `vendor_id` `value`, `stimer/direct`,
//! `tlbflush/direct|extended`), `features/kvm/hidden`, clock timers (hypervclock → hv-time, hpet,
//! pit, rtc, tsc), `cpu` mode and features, `panic model='hyperv'` (→ hv-crash), `on_crash`,
//! `os` (arch, machine, firmware), libosinfo metadata, `vcpu`/`vcpus`, `cputune/vcpupin` and
//! `qemu:commandline` arguments. Every fact keeps its element path and line.
//!
//! What libvirt does with them follows its source, libvirt/libvirt@v9.0.0:
//! `src/conf/domain_conf.c` (`virDomainFeaturesHyperVDefParse`: an unknown `<hyperv>` child or a
//! `state` other than on/off rejects the domain; the children of `<stimer>` are read only when
//! it is on) and `src/qemu/qemu_command.c` (`qemuBuildCpuCommandLine`: hv-time only for
//! `<timer name='hypervclock' present='yes'/>`; `qemuBuildClockCommandLine`: any PIT timer
//! element without `tickpolicy='discard'` emits `-global kvm-pit.lost_tick_policy=delay`,
//! `present` is ignored; `qemuBuildSmpCommandLine`: `-smp CURRENT,maxcpus=MAX`).

use std::collections::{HashMap, HashSet};

use roxmltree::Node;

use super::script::Token;
use super::xml_docs::{self, Doc, Lines};
use super::{
    Accel, Format, Guest, HvFlag, Origin, PitPolicy, Repeated, Setting, VmConfig, effective, qemu,
};
use crate::error::Result;

const LIBOSINFO_NS: &str = "http://libosinfo.org/xmlns/libvirt/domain/1.0";
const QEMU_NS: &str = "http://libvirt.org/schemas/domain/qemu/1.0";

/// Reads every domain in `text`.
pub(crate) fn parse(text: &str, input: &str) -> Result<Vec<VmConfig>> {
    let mut index = 0;
    xml_docs::each_document(text, input, |d, t| {
        index += 1;
        Ok(domain(d, t, input, index))
    })
}

/// Where things are in one document.
struct Ctx<'a, 'i> {
    lines: Lines,
    root: Node<'a, 'i>,
    fragment: bool,
}

impl<'a, 'i> Ctx<'a, 'i> {
    fn origin(&self, n: Node<'_, '_>) -> Origin {
        Origin::at(path(n), self.lines.line(n.range().start))
    }

    /// The element at `names` below the root; in a fragment, also the first element named like
    /// the last of `names` anywhere.
    fn find(&self, names: &[&str]) -> Option<Node<'a, 'i>> {
        let mut node = self.root;
        let mut exact = true;
        for name in names {
            match child(node, name) {
                Some(c) => node = c,
                None => {
                    exact = false;
                    break;
                }
            }
        }
        if exact {
            return Some(node);
        }
        let last = names.last()?;
        if self.fragment {
            self.root
                .descendants()
                .find(|n| n.is_element() && n.tag_name().name() == *last)
        } else {
            None
        }
    }
}

fn child<'a, 'i>(n: Node<'a, 'i>, name: &str) -> Option<Node<'a, 'i>> {
    n.children()
        .find(|c| c.is_element() && c.tag_name().name() == name)
}

fn children<'a, 'i>(n: Node<'a, 'i>, name: &'static str) -> impl Iterator<Item = Node<'a, 'i>> {
    n.children()
        .filter(move |c| c.is_element() && c.tag_name().name() == name)
}

/// `/domain/features/hyperv/stimer`, `/domain/clock/timer[@name='hpet']`.
fn path(n: Node<'_, '_>) -> String {
    let mut names: Vec<String> = n
        .ancestors()
        .filter(|a| a.is_element())
        .map(|a| {
            let tag = a.tag_name().name();
            match (tag, a.attribute("name"), a.attribute("model")) {
                ("timer" | "feature", Some(name), _) => format!("{tag}[@name='{name}']"),
                ("panic", _, Some(model)) => format!("{tag}[@model='{model}']"),
                _ => tag.to_string(),
            }
        })
        .collect();
    names.reverse();
    format!("/{}", names.join("/"))
}

fn text_of(n: Node<'_, '_>) -> String {
    n.text().unwrap_or("").trim().to_string()
}

fn domain(d: &Doc<'_>, text: &str, input: &str, index: usize) -> VmConfig {
    let root = d
        .doc
        .get_node(d.root)
        .unwrap_or_else(|| d.doc.root_element());
    let ctx = Ctx {
        lines: Lines::new(text, d.line_offset),
        root,
        fragment: d.fragment,
    };
    let first_line = ctx.lines.line(root.range().start);
    let mut c = VmConfig::new(Format::Libvirt, input, index, first_line);
    if d.fragment {
        c.notes.push(
            "the file is a fragment of a domain XML; what it leaves out is taken as libvirt's default"
                .to_string(),
        );
    }
    if let Some(t) = root.attribute("type") {
        let accel = match t {
            "kvm" => Accel::Kvm,
            "qemu" => Accel::Tcg,
            _ => Accel::Other,
        };
        c.accel = Some(Setting::new(accel, ctx.origin(root)));
    }
    if let Some(n) = ctx.find(&["name"]) {
        c.name = Some(Setting::new(text_of(n), ctx.origin(n)));
    }
    vcpus(&ctx, &mut c);
    if let Some(n) = ctx.find(&["cputune"])
        && let Some(pin) = children(n, "vcpupin").next()
    {
        c.pinned = Some(ctx.origin(pin));
    }
    os(&ctx, &mut c);
    if let Some(meta) = ctx.find(&["metadata"])
        && let Some(n) = meta.descendants().find(|n| {
            n.is_element()
                && n.tag_name().name() == "os"
                && n.tag_name().namespace() == Some(LIBOSINFO_NS)
        })
        && let Some(id) = n.attribute("id")
    {
        c.guest = Guest::from_libosinfo(id, ctx.origin(n));
    }
    if let Some(h) = ctx.find(&["features", "hyperv"]) {
        hyperv(&ctx, h, &mut c);
    } else if let Some(f) = ctx.find(&["features"]) {
        c.hyperv.anchor = Some(ctx.origin(f));
    }
    if let Some(k) = ctx.find(&["features", "kvm"])
        && let Some(h) = child(k, "hidden")
        && state(h) == Some(true)
    {
        c.cpu.kvm_hidden = Some(ctx.origin(h));
    }
    if let Some(io) = ctx.find(&["features", "ioapic"])
        && io.attribute("driver") == Some("qemu")
    {
        c.timers.kernel_irqchip = Some(Setting::new("split".into(), ctx.origin(io)));
    }
    cpu(&ctx, &mut c);
    clock(&ctx, &mut c);
    if let Some(devices) = ctx.find(&["devices"]) {
        for p in children(devices, "panic") {
            if p.attribute("model") == Some("hyperv") {
                c.set_flag(HvFlag::Crash, true, None, ctx.origin(p));
            }
        }
    }
    if let Some(n) = ctx.find(&["on_crash"]) {
        c.panic.action = Some(Setting::new(text_of(n), ctx.origin(n)));
    }
    qemu_commandline(&ctx, &mut c);
    c
}

/// `<vcpu current='N'>MAX</vcpu>` (and `<vcpus>`, whose enabled vCPUs are the current ones):
/// libvirt starts QEMU with `-smp N,maxcpus=MAX`.
fn vcpus(ctx: &Ctx<'_, '_>, c: &mut VmConfig) {
    let Some(n) = ctx.find(&["vcpu"]) else {
        if !ctx.fragment {
            // libvirt's default when <vcpu> is left out.
            let o = super::Origin::implied("/domain/vcpu (absent: libvirt's default, 1)");
            c.vcpus = Some(Setting::new(1, o.clone()));
            c.max_vcpus = Some(Setting::new(1, o));
        }
        return;
    };
    let max = match text_of(n).parse::<u32>() {
        Ok(v) => v,
        Err(_) => {
            c.notes.push(format!(
                "{}: vcpu count `{}` is not a number; ignored",
                ctx.origin(n),
                text_of(n)
            ));
            return;
        }
    };
    let enabled = ctx.find(&["vcpus"]).map(|v| {
        children(v, "vcpu")
            .filter(|x| x.attribute("enabled") == Some("yes"))
            .count()
    });
    let current = match (n.attribute("current").map(str::parse::<u32>), enabled) {
        (Some(Ok(cur)), _) => cur,
        (_, Some(e)) if e > 0 => u32::try_from(e).unwrap_or(max),
        _ => max,
    };
    c.vcpus = Some(Setting::new(current, ctx.origin(n)));
    c.max_vcpus = Some(Setting::new(max, ctx.origin(n)));
}

fn os(ctx: &Ctx<'_, '_>, c: &mut VmConfig) {
    let Some(os) = ctx.find(&["os"]) else { return };
    if let Some(t) = child(os, "type") {
        if let Some(m) = t.attribute("machine") {
            c.machine = Some(Setting::new(m.to_string(), ctx.origin(t)));
        }
        if let Some(a) = t.attribute("arch") {
            c.arch = Some(Setting::new(a.to_string(), ctx.origin(t)));
        }
    }
    if let Some(f) = os.attribute("firmware") {
        c.firmware = Some(Setting::new(f.to_string(), ctx.origin(os)));
    } else if let Some(l) = child(os, "loader")
        && l.attribute("type") == Some("pflash")
    {
        c.firmware = Some(Setting::new("efi".into(), ctx.origin(l)));
    }
}

/// `state='on'|'off'` (also yes/no); `None` when absent or unreadable.
fn state(n: Node<'_, '_>) -> Option<bool> {
    match n.attribute("state")? {
        "on" | "yes" => Some(true),
        "off" | "no" => Some(false),
        _ => None,
    }
}

/// `state='on'|'off'` of a `<hyperv>` child: libvirt requires it and knows no other value
/// (`virXMLPropTristateSwitch(…, VIR_XML_PROP_REQUIRED, …)`). Anything else is recorded as
/// invalid (libvirt rejects the domain) and taken as on when absent, off otherwise.
/// Positions in `hyperv.duplicates` and `hyperv.invalid` by what they are, so repeats count
/// in constant time.
#[derive(Default)]
struct Seen {
    duplicates: HashMap<String, usize>,
    invalid: HashMap<String, usize>,
}

fn switch(
    ctx: &Ctx<'_, '_>,
    seen: &mut Seen,
    e: Node<'_, '_>,
    name: &str,
    c: &mut VmConfig,
) -> bool {
    let (on, why) = match e.attribute("state") {
        Some("on") => return true,
        Some("off") => return false,
        None => (
            true,
            "has no state attribute; libvirt requires state='on' or 'off' (taken as on)"
                .to_string(),
        ),
        Some(s) => (
            false,
            format!("has state `{s}`; libvirt accepts only 'on' or 'off' (taken as off)"),
        ),
    };
    let what = format!("<{name}> {why}");
    Repeated::count(
        &mut c.hyperv.invalid,
        &mut seen.invalid,
        what,
        ctx.origin(e),
    );
    on
}

fn hyperv(ctx: &Ctx<'_, '_>, h: Node<'_, '_>, c: &mut VmConfig) {
    c.hyperv.anchor = Some(ctx.origin(h));
    match h.attribute("mode") {
        Some("passthrough") => c.hyperv.passthrough = Some(ctx.origin(h)),
        None | Some("custom") => {}
        Some(other) => c.hyperv.invalid.push(Repeated {
            what: format!("mode `{other}`; libvirt accepts only custom or passthrough"),
            origin: ctx.origin(h),
            count: 1,
        }),
    }
    let mut names: HashSet<&str> = HashSet::new();
    let mut seen = Seen::default();
    for e in h.children().filter(|n| n.is_element()) {
        let name = e.tag_name().name();
        let origin = ctx.origin(e);
        if !names.insert(name) {
            let (list, index) = (&mut c.hyperv.duplicates, &mut seen.duplicates);
            Repeated::count(list, index, name.to_string(), origin.clone());
        }
        let flag = match name {
            "stimer" | "tlbflush" | "spinlocks" | "vendor_id" => None,
            _ => match HvFlag::from_libvirt(name) {
                Some(f) => Some(f),
                None => {
                    c.hyperv
                        .unknown
                        .push(Setting::new(name.to_string(), origin));
                    continue;
                }
            },
        };
        let on = switch(ctx, &mut seen, e, name, c);
        match name {
            "spinlocks" => {
                let value = e
                    .attribute("retries")
                    .and_then(effective::parse_number)
                    .map(|n| format!("{n:#x}"));
                if on && value.is_none() {
                    c.notes.push(format!(
                        "{origin}: spinlocks without a numeric retries attribute"
                    ));
                }
                c.set_flag(HvFlag::Spinlocks, on, value, origin);
            }
            "vendor_id" => {
                let value = e.attribute("value").map(str::to_string);
                c.set_flag(HvFlag::VendorId, on, value, origin);
            }
            "stimer" | "tlbflush" => {
                let flag = if name == "stimer" {
                    HvFlag::Stimer
                } else {
                    HvFlag::Tlbflush
                };
                c.set_flag(flag, on, None, origin);
                // libvirt reads the children only when the parent is on.
                if on {
                    sub_flags(ctx, &mut seen, e, name, c);
                }
            }
            _ => {
                if let Some(f) = flag {
                    c.set_flag(f, on, None, origin);
                }
            }
        }
    }
}

/// `<stimer><direct/></stimer>`, `<tlbflush><direct/><extended/></tlbflush>`.
fn sub_flags(ctx: &Ctx<'_, '_>, seen: &mut Seen, e: Node<'_, '_>, name: &str, c: &mut VmConfig) {
    for sub in e.children().filter(|n| n.is_element()) {
        let sub_name = sub.tag_name().name();
        let sub_flag = match (name, sub_name) {
            ("stimer", "direct") => HvFlag::StimerDirect,
            ("tlbflush", "direct") => HvFlag::TlbflushDirect,
            ("tlbflush", "extended") => HvFlag::TlbflushExt,
            (_, other) => {
                c.hyperv
                    .unknown
                    .push(Setting::new(format!("{name}/{other}"), ctx.origin(sub)));
                continue;
            }
        };
        let on = switch(ctx, seen, sub, &format!("{name}/{sub_name}"), c);
        c.set_flag(sub_flag, on, None, ctx.origin(sub));
    }
}

fn cpu(ctx: &Ctx<'_, '_>, c: &mut VmConfig) {
    let Some(cpu) = ctx.find(&["cpu"]) else {
        return;
    };
    let model = child(cpu, "model").map(text_of).filter(|m| !m.is_empty());
    let mode = cpu.attribute("mode");
    let shown = match (mode, model) {
        (Some("host-passthrough" | "host-model" | "maximum"), _) | (Some(_), None) => {
            mode.map(str::to_string)
        }
        (_, Some(m)) => Some(m),
        (None, None) => None,
    };
    if let Some(m) = shown {
        c.cpu.model = Some(Setting::new(m, ctx.origin(cpu)));
    }
    for f in children(cpu, "feature") {
        let policy = f.attribute("policy").unwrap_or("require");
        let enabled = !matches!(policy, "disable" | "forbid");
        match f.attribute("name") {
            Some("hypervisor") if !enabled => c.cpu.hypervisor_hidden = Some(ctx.origin(f)),
            Some(name @ ("vmx" | "svm")) => {
                c.cpu.nested_virt = Some(Setting::new(enabled, ctx.origin(f)));
                if name == "svm" {
                    c.cpu.svm = Some(Setting::new(enabled, ctx.origin(f)));
                }
            }
            Some("x2apic") => c.cpu.x2apic = Some(Setting::new(enabled, ctx.origin(f))),
            _ => {}
        }
    }
}

fn clock(ctx: &Ctx<'_, '_>, c: &mut VmConfig) {
    let Some(clock) = ctx.find(&["clock"]) else {
        return;
    };
    c.timers.anchor = Some(ctx.origin(clock));
    if let Some(offset) = clock.attribute("offset") {
        c.timers.rtc_base = Some(Setting::new(offset.to_string(), ctx.origin(clock)));
    }
    for t in children(clock, "timer") {
        let origin = ctx.origin(t);
        let present = match t.attribute("present") {
            Some("yes") => Some(true),
            Some("no") => Some(false),
            _ => None,
        };
        match t.attribute("name") {
            // hv-time only for present='yes'; without it the timer element does nothing.
            Some("hypervclock") => c.set_flag(HvFlag::Time, present == Some(true), None, origin),
            Some("hpet") => {
                if let Some(p) = present {
                    c.timers.hpet = Some(Setting::new(p, origin));
                }
            }
            Some("pit") => pit(t, origin, c),
            Some("rtc") => {
                if let Some(policy) = t.attribute("tickpolicy") {
                    c.timers.rtc_catchup = Some(Setting::new(policy == "catchup", origin));
                }
            }
            Some("tsc") => {
                if let Some(f) = t.attribute("frequency") {
                    c.timers.tsc_frequency = Some(Setting::new(f.to_string(), origin));
                }
            }
            _ => {}
        }
    }
}

/// The PIT timer as libvirt emits it: no tickpolicy or `delay` → `lost_tick_policy=delay`,
/// `discard` → `discard`, `catchup` → nothing (QEMU's default, delay); `present` ignored.
fn pit(t: Node<'_, '_>, origin: super::Origin, c: &mut VmConfig) {
    if t.attribute("present") == Some("no") {
        c.notes.push(format!(
            "{origin}: present='no' on the PIT is ignored by libvirt, which cannot remove the PIT"
        ));
    }
    let policy = match t.attribute("tickpolicy") {
        None | Some("delay") => PitPolicy::Delay,
        Some("discard") => PitPolicy::Discard,
        Some("catchup") => return,
        Some(_) => PitPolicy::Other,
    };
    c.timers.pit = Some(Setting::new(policy, origin));
}

/// `<qemu:commandline><qemu:arg value='-cpu'/>…` — extra QEMU arguments, read like argv.
fn qemu_commandline(ctx: &Ctx<'_, '_>, c: &mut VmConfig) {
    let Some(cl) = ctx.root.children().find(|n| {
        n.is_element()
            && n.tag_name().name() == "commandline"
            && n.tag_name().namespace() == Some(QEMU_NS)
    }) else {
        return;
    };
    let tokens: Vec<Token> = children(cl, "arg")
        .filter_map(|a| {
            Some(Token::known(
                a.attribute("value")?,
                ctx.lines.line(a.range().start),
            ))
        })
        .collect();
    if let Err((line, message)) = qemu::apply_options(c, &tokens) {
        c.notes
            .push(format!("line {line}: qemu:commandline: {message}"));
    }
}

//! The kernel's KVM-relevant messages, recognised in a line's message (its prefix gone): split
//! and bus lock traps (arch/x86/kernel/cpu/bus_lock.c), MSR accesses KVM does not emulate
//! (`vcpu_unimpl`: [`super::msr`]), soft lockups, hung tasks and RCU stalls with the
//! thread they name, and KVM's own module warnings. Each recogniser returns `None` for a
//! message that is not its kind and `Some(Err(why))` for one that is but is damaged.

/// What kind of thread a message names, by its `comm`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Class {
    /// A vCPU thread that says its index: QEMU's `CPU n/KVM` (named threads, as libvirt
    /// and Proxmox start it), VirtualBox's `EMT-n`.
    Vcpu(u32),
    /// A VMM process's thread that does not say which (`qemu-system-x86`, `qemu-kvm`).
    Vmm,
    /// Any other process.
    Other,
}

/// A thread as a message names it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct Thread {
    pub comm: String,
    pub tid: Option<u32>,
}

impl Thread {
    pub(super) fn class(&self) -> Class {
        classify(&self.comm)
    }
}

/// The class of a thread named `comm`.
pub(super) fn classify(comm: &str) -> Class {
    if let Some(n) = comm
        .strip_prefix("CPU ")
        .and_then(|r| r.strip_suffix("/KVM"))
        .and_then(|n| n.parse().ok())
    {
        return Class::Vcpu(n);
    }
    if let Some(n) = comm.strip_prefix("EMT-").and_then(|n| n.parse().ok()) {
        return Class::Vcpu(n);
    }
    if comm.starts_with("qemu-system") || comm == "qemu-kvm" || comm == "kvm" {
        return Class::Vmm;
    }
    Class::Other
}

/// The kinds of lockup the kernel reports of a thread.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Stall {
    /// `BUG: soft lockup - CPU#N stuck for Ss! [comm:tid]` (kernel/watchdog.c).
    SoftLockup,
    /// `INFO: task comm:tid blocked for more than S seconds.` (kernel/hung_task.c).
    HungTask,
}

/// One recognised message.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Event {
    /// A split-lock (`#AC`) or bus-lock (`#DB`) trap of a thread.
    Lock {
        bus: bool,
        /// `fatal` / `bogus`: the thread got SIGBUS instead of a warning.
        fatal: bool,
        thread: Thread,
    },
    /// `split_lock_warn: N callbacks suppressed`: messages the ratelimit dropped.
    Suppressed { what: Suppressed, n: u64 },
    /// An MSR access KVM does not emulate.
    Msr {
        vm: Option<u32>,
        vcpu: Option<u32>,
        index: u64,
        write: bool,
        /// `ignored …` (ignore_msrs=1): the guest got 0 / the write was dropped, no #GP.
        ignored: bool,
    },
    /// A lockup report naming its thread, and the seconds it states.
    Stall {
        kind: Stall,
        thread: Thread,
        secs: Option<u64>,
    },
    /// An RCU stall report (its thread follows on a `Comm:` line).
    RcuStall,
    /// `CPU: 3 PID: 4321 Comm: CPU 0/KVM Tainted: …`: the thread of the report above.
    Comm(Thread),
    /// A KVM module warning, by id.
    Kvm(&'static str),
}

/// What a `callbacks suppressed` line dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Suppressed {
    Lock,
    Msr,
}

/// The event of message `body`: `None` when it is not KVM-relevant, `Some(Err(why))` when it
/// has the start of one but not the rest.
pub(super) fn event(body: &str) -> Option<Result<Event, &'static str>> {
    lock(body)
        .or_else(|| super::msr::msr(body))
        .or_else(|| soft_lockup(body))
        .or_else(|| hung_task(body))
        .or_else(|| rcu(body))
        .or_else(|| comm(body).map(|t| Ok(Event::Comm(t))))
        .or_else(|| suppressed(body))
        .or_else(|| kvm(body).map(|id| Ok(Event::Kvm(id))))
}

pub(super) fn hex(t: &str) -> Option<u64> {
    let t = t.trim();
    let h = t
        .strip_prefix("0x")
        .or_else(|| t.strip_prefix("0X"))
        .unwrap_or(t);
    let end = h.find(|c: char| !c.is_ascii_hexdigit()).unwrap_or(h.len());
    if end == 0 {
        return None;
    }
    u64::from_str_radix(&h[..end], 16).ok()
}

/// `comm/tid` (comm may hold `/`: `CPU 1/KVM/12345`).
fn comm_slash_tid(t: &str) -> Option<Thread> {
    let (comm, tid) = t.rsplit_once('/')?;
    let tid = tid.parse().ok()?;
    (!comm.is_empty()).then(|| Thread {
        comm: comm.to_string(),
        tid: Some(tid),
    })
}

/// `comm:tid` (comm may hold `:`).
fn comm_colon_tid(t: &str) -> Option<Thread> {
    let (comm, tid) = t.rsplit_once(':')?;
    let tid = tid.parse().ok()?;
    (!comm.is_empty()).then(|| Thread {
        comm: comm.to_string(),
        tid: Some(tid),
    })
}

/// `x86/split lock detection: #AC: comm/tid took a split_lock trap at address: 0x…` and the
/// `#DB: … bus_lock trap` and `fatal`/`bogus` variants (the setup lines are not traps).
fn lock(body: &str) -> Option<Result<Event, &'static str>> {
    let r = body.strip_prefix("x86/split lock detection:")?.trim_start();
    let (bus, r) = if let Some(r) = r.strip_prefix("#AC:") {
        (false, r)
    } else if let Some(r) = r.strip_prefix("#DB:") {
        (true, r)
    } else {
        return None;
    };
    let r = r.trim_start();
    // Boot-time lines: `#AC: crashing the kernel on kernel split_locks and …`.
    if r.starts_with("crashing the kernel")
        || r.contains(" on user-space ")
        || r.starts_with("setting ")
    {
        return None;
    }
    let (who, fatal) = if let Some((who, _)) = r.split_once(" took a ") {
        (who, false)
    } else if let Some((who, _)) = r
        .split_once(" fatal split_lock")
        .or_else(|| r.split_once(" bogus split_lock"))
    {
        (who, true)
    } else {
        return Some(Err("a lock trap without `took a … trap at address`"));
    };
    Some(
        comm_slash_tid(who)
            .map(|thread| Event::Lock { bus, fatal, thread })
            .ok_or("a lock trap whose thread is not `name/tid`"),
    )
}

/// `BUG: soft lockup - CPU#3 stuck for 22s! [CPU 0/KVM:4321]`.
fn soft_lockup(body: &str) -> Option<Result<Event, &'static str>> {
    let at = body.find("BUG: soft lockup")?;
    let r = &body[at..];
    let secs = r
        .split_once("stuck for ")
        .and_then(|(_, s)| s.split_once('s'))
        .and_then(|(n, _)| n.parse().ok());
    let thread = r
        .rsplit_once('[')
        .and_then(|(_, t)| t.strip_suffix(']'))
        .and_then(comm_colon_tid);
    Some(match (secs, thread) {
        (Some(secs), Some(thread)) => Ok(Event::Stall {
            kind: Stall::SoftLockup,
            thread,
            secs: Some(secs),
        }),
        _ => Err("a soft lockup without `stuck for Ns! [thread:tid]`"),
    })
}

/// `INFO: task CPU 1/KVM:1234 blocked for more than 120 seconds.`
fn hung_task(body: &str) -> Option<Result<Event, &'static str>> {
    let r = body.strip_prefix("INFO: task ")?;
    let Some((who, rest)) = r.split_once(" blocked for more than ") else {
        return Some(Err("a hung task without `blocked for more than N seconds`"));
    };
    let secs = rest.split_whitespace().next().and_then(|n| n.parse().ok());
    Some(
        comm_colon_tid(who)
            .map(|thread| Event::Stall {
                kind: Stall::HungTask,
                thread,
                secs,
            })
            .ok_or("a hung task whose thread is not `name:tid`"),
    )
}

/// The first line of an RCU stall report.
fn rcu(body: &str) -> Option<Result<Event, &'static str>> {
    let r = body.strip_prefix("rcu: ").unwrap_or(body);
    let r = r.strip_prefix("INFO: ")?;
    (r.starts_with("rcu_") && (r.contains("self-detected stall") || r.contains("detected stalls")))
        .then_some(Ok(Event::RcuStall))
}

/// `CPU: 3 PID: 4321 Comm: CPU 0/KVM Tainted: G …` (also `UID: 0 PID:` and `Not tainted`).
fn comm(body: &str) -> Option<Thread> {
    let r = body.strip_prefix("CPU: ")?;
    let (before, after) = r.split_once(" Comm: ")?;
    let tid = before
        .split_once("PID: ")
        .and_then(|(_, p)| p.split_whitespace().next())
        .and_then(|p| p.parse().ok());
    let end = [" Tainted:", " Not tainted"]
        .iter()
        .filter_map(|m| after.find(m))
        .min()
        .unwrap_or(after.len());
    let comm = after[..end].trim();
    (!comm.is_empty()).then(|| Thread {
        comm: comm.to_string(),
        tid,
    })
}

/// `split_lock_warn: 3 callbacks suppressed` and the MSR ratelimits'.
fn suppressed(body: &str) -> Option<Result<Event, &'static str>> {
    let (func, r) = body.split_once(": ")?;
    let n = r
        .strip_suffix(" callbacks suppressed")?
        .trim()
        .parse()
        .ok()?;
    let what = if func.contains("split_lock") || func.contains("bus_lock") {
        Suppressed::Lock
    } else if func.contains("msr") || func.contains("unimpl") {
        Suppressed::Msr
    } else {
        return None;
    };
    Some(Ok(Event::Suppressed { what, n }))
}

/// KVM's module warnings: (what the message holds, its id). The words say what each means.
pub(super) const KVM_MESSAGES: &[(&str, &str)] = &[
    ("emulating exchange as write", "kvm_xchg_emulated_as_write"),
    ("disabled by bios", "kvm_disabled_by_bios"),
    ("not enabled (by bios)", "kvm_disabled_by_bios"),
    ("vmx not supported", "kvm_no_hardware_support"),
    ("svm not supported", "kvm_no_hardware_support"),
    ("no hardware support", "kvm_no_hardware_support"),
    ("already loaded vendor module", "kvm_vendor_module_loaded"),
    ("tsc rate", "kvm_tsc_rate"),
    ("tsc scaling", "kvm_tsc_rate"),
    ("mmio generation wraparound", "kvm_mmio_generation_wrap"),
    ("lapic timer period limited", "kvm_lapic_timer_limited"),
    ("*** guest state ***", "kvm_vmentry_failed"),
];

/// KVM warnings that older kernels printed without a `kvm:` prefix, distinct enough to know
/// by themselves.
const UNPREFIXED: &[&str] = &[
    "user requested tsc rate below hardware speed",
    "invalid tsc scaling ratio",
];

/// The id of a KVM module warning: a message of `kvm`, `kvm_intel`, `kvm_amd`, `SVM`/`VMX`.
fn kvm(body: &str) -> Option<&'static str> {
    let lower = body.to_ascii_lowercase();
    let kvm_line = [
        "kvm:",
        "kvm_intel:",
        "kvm_amd:",
        "kvm [",
        "svm:",
        "vmx:",
        "*** guest state",
    ]
    .iter()
    .any(|p| lower.starts_with(p));
    // x86.c printed its TSC warnings without a prefix before KVM's modules got one (6.x).
    let unprefixed = UNPREFIXED.iter().any(|n| lower.starts_with(n));
    if !kvm_line && !unprefixed {
        return None;
    }
    Some(
        KVM_MESSAGES
            .iter()
            .find(|(needle, _)| lower.contains(needle))
            .map_or("kvm_other", |(_, id)| *id),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(body: &str) -> Event {
        match event(body) {
            Some(Ok(e)) => e,
            other => panic!("{body}: {other:?}"),
        }
    }

    #[test]
    fn lock_traps() {
        let e = ok(
            "x86/split lock detection: #AC: CPU 1/KVM/175479 took a split_lock trap at address: 0x7efb5050",
        );
        let Event::Lock { bus, fatal, thread } = e else {
            panic!()
        };
        assert!(!bus && !fatal);
        assert_eq!(thread.class(), Class::Vcpu(1));
        assert_eq!(thread.tid, Some(175_479));
        let e = ok(
            "x86/split lock detection: #DB: qemu-system-x86/4185 took a bus_lock trap at address: 0x1",
        );
        assert!(matches!(e, Event::Lock { bus: true, .. }));
        assert!(event("x86/split lock detection: #AC: crashing the kernel on kernel split_locks and warning on user-space split_locks").is_none());
        assert!(matches!(
            event("x86/split lock detection: #AC: CPU 1/KVM/17"),
            Some(Err(_))
        ));
    }

    #[test]
    fn stalls() {
        let e = ok("watchdog: BUG: soft lockup - CPU#1 stuck for 2471s! [CPU 0/KVM:31664]");
        let Event::Stall { kind, thread, secs } = e else {
            panic!()
        };
        assert_eq!((kind, secs), (Stall::SoftLockup, Some(2471)));
        assert_eq!(thread.class(), Class::Vcpu(0));
        let e = ok("INFO: task CPU 1/KVM:1234 blocked for more than 120 seconds.");
        assert!(matches!(
            e,
            Event::Stall {
                kind: Stall::HungTask,
                secs: Some(120),
                ..
            }
        ));
        assert_eq!(
            ok("rcu: INFO: rcu_sched detected stalls on CPUs/tasks:"),
            Event::RcuStall
        );
        let Event::Comm(t) = ok("CPU: 3 PID: 4321 Comm: CPU 0/KVM Tainted: G        W") else {
            panic!()
        };
        assert_eq!((t.comm.as_str(), t.tid), ("CPU 0/KVM", Some(4321)));
        assert_eq!(classify("qemu-system-x86"), Class::Vmm);
        assert_eq!(classify("EMT-3"), Class::Vcpu(3));
        assert_eq!(classify("kworker/3:1"), Class::Other);
    }

    #[test]
    fn kvm_messages() {
        assert_eq!(
            ok("kvm: disabled by bios"),
            Event::Kvm("kvm_disabled_by_bios")
        );
        assert_eq!(
            ok("kvm: emulating exchange as write"),
            Event::Kvm("kvm_xchg_emulated_as_write")
        );
        assert_eq!(
            ok("kvm: zapping shadow pages for mmio generation wraparound"),
            Event::Kvm("kvm_mmio_generation_wrap")
        );
        assert_eq!(
            ok("user requested TSC rate below hardware speed"),
            Event::Kvm("kvm_tsc_rate")
        );
        assert!(event("usb 1-1: new high-speed USB device").is_none());
        assert!(event("EXT4-fs (sda1): mounted filesystem").is_none());
    }
}

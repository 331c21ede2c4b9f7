//! The text of each kvm event turned into an [`EventKind`], from the kernel's `TP_printk`
//! formats (arch/x86/kvm/trace.h and virt/kvm, every era):
//!
//! | event | text |
//! |---|---|
//! | `kvm_exit` | see `exit.rs` |
//! | `kvm_entry` | `vcpu %u, rip 0x%lx%s` (`[immediate exit]`); before 2020 `vcpu %u` |
//! | `kvm_pio` | `pio_%s at 0x%x size %d count %d val 0x%x %s` (`(...)` when count > 1); ~2010 without `val` |
//! | `kvm_mmio` | `mmio %s len %u gpa 0x%llx val 0x%llx`, `%s` = `unsatisfied-read`, `read`, `write` |
//! | `kvm_msr` | `msr_%s %x = 0x%llx%s` (` (#GP)` on a fault) |
//! | `kvm_userspace_exit` | `reason %s (%d)` (`KVM_EXIT_IO (2)`; old kernels `restart`/`error`) |
//! | `kvm_hypercall` | `nr 0x%lx a0 0x%lx a1 0x%lx a2 0x%lx a3 0x%lx` |
//! | `kvm_hv_hypercall` | `code 0x%x %s [var_cnt 0x%x] rep_cnt/cnt 0x%x idx 0x%x in 0x%llx out 0x%llx` |
//! | `kvm_apicv_inhibit_changed`, `kvm_apicv_update_request` | see [`apicv_inhibit`] |
//!
//! `sched_switch` and `sched_wakeup` are read in `sched.rs`. Every other event (`kvm_fpu`, `kvm_apic_ipi`, `kvm_nested_vmexit`, `sched_switch`, …) is
//! [`EventKind::Other`], counted by name.

use super::exit::{self, ExitText};
use super::fields::{dec32, hex, word};
use crate::decode::apicv_inhibit;
use crate::events::{EventKind, MmioAccess};

/// An event text read into its kind, with what `kvm_exit` noticed on the way.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Decoded<'a> {
    pub kind: EventKind<'a>,
    /// The `kvm_exit` details, when it was one.
    pub exit: Option<ExitText<'a>>,
}

/// The kind of event `event` (name without subsystem) with text `text`; `None` when the
/// event is one virtlens reads but its text has none of the shapes above.
pub(super) fn decode<'a>(event: &'a str, text: &'a str) -> Option<Decoded<'a>> {
    let plain = |kind| Decoded { kind, exit: None };
    let kind = match event {
        "kvm_exit" => {
            let e = exit::parse(text)?;
            return Some(Decoded {
                kind: EventKind::Exit {
                    reason: e.reason,
                    isa: e.isa,
                    vcpu: e.vcpu,
                    rip: e.rip,
                },
                exit: Some(e),
            });
        }
        "kvm_entry" => entry(text),
        "kvm_pio" => pio(text)?,
        "kvm_mmio" => mmio(text)?,
        "kvm_msr" => msr(text)?,
        "kvm_userspace_exit" => userspace_exit(text)?,
        "kvm_hypercall" => EventKind::Hypercall {
            nr: hex(text.strip_prefix("nr ")?)?,
            hyperv: false,
        },
        "kvm_hv_hypercall" => EventKind::Hypercall {
            nr: hex(text.strip_prefix("code ")?)?,
            hyperv: true,
        },
        "kvm_apicv_inhibit_changed" | "kvm_apicv_update_request" => {
            let mut change = apicv_inhibit::parse(text)?;
            change.legacy |= event == "kvm_apicv_update_request";
            if change.legacy && change.named.is_none() {
                change.named = apicv_inhibit::candidates(change.number, true)
                    .first()
                    .copied();
            }
            EventKind::ApicvInhibit {
                name: event,
                change,
                names: apicv_inhibit::names_text(text),
            }
        }
        "sched_switch" => super::sched::switch(text)?,
        "sched_wakeup" | "sched_wakeup_new" => super::sched::wakeup(event, text)?,
        name => EventKind::Other { name },
    };
    Some(plain(kind))
}

fn entry(text: &str) -> EventKind<'_> {
    let vcpu = match text.strip_prefix("vcpu ") {
        Some(rest) => dec32(rest),
        None => text.find("vcpu ").and_then(|i| dec32(&text[i + 5..])),
    };
    EventKind::Entry { vcpu }
}

fn pio(text: &str) -> Option<EventKind<'_>> {
    let rest = text.strip_prefix("pio_")?;
    let (write, rest) = if let Some(r) = rest.strip_prefix("write") {
        (true, r)
    } else {
        (false, rest.strip_prefix("read")?)
    };
    let port = hex(rest.strip_prefix(" at ")?)?;
    Some(EventKind::Pio { write, port })
}

fn mmio(text: &str) -> Option<EventKind<'_>> {
    let rest = text.strip_prefix("mmio ")?;
    let access = match word(rest) {
        "unsatisfied-read" | "0" => MmioAccess::UnsatisfiedRead,
        "read" | "1" => MmioAccess::Read,
        "write" | "2" => MmioAccess::Write,
        _ => return None,
    };
    let at = rest.find(" gpa ")?;
    let gpa = hex(&rest[at + 5..])?;
    Some(EventKind::Mmio { access, gpa })
}

fn msr(text: &str) -> Option<EventKind<'_>> {
    let rest = text.strip_prefix("msr_")?;
    let (write, rest) = if let Some(r) = rest.strip_prefix("write ") {
        (true, r)
    } else {
        (false, rest.strip_prefix("read ")?)
    };
    Some(EventKind::Msr {
        write,
        index: hex(rest)?,
    })
}

fn userspace_exit(text: &str) -> Option<EventKind<'_>> {
    let rest = text.strip_prefix("reason ")?;
    let reason = match rest.find(" (") {
        Some(i) => &rest[..i],
        None => rest,
    }
    .trim_matches([' ', '\t']);
    (!reason.is_empty()).then_some(EventKind::UserspaceExit { reason })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn k<'a>(event: &'a str, text: &'a str) -> Option<EventKind<'a>> {
        decode(event, text).map(|d| d.kind)
    }

    #[test]
    fn kernel_formats() {
        assert_eq!(
            k("kvm_entry", "vcpu 0, rip 0x100146 [immediate exit]"),
            Some(EventKind::Entry { vcpu: Some(0) })
        );
        assert_eq!(
            k("kvm_entry", "vcpu 7"),
            Some(EventKind::Entry { vcpu: Some(7) })
        );
        assert_eq!(
            k("kvm_pio", "pio_write at 0x3f8 size 1 count 1 val 0x41 "),
            Some(EventKind::Pio {
                write: true,
                port: 0x3f8
            })
        );
        assert_eq!(
            k("kvm_pio", "pio_read at 0xc13e size 2 count 1"),
            Some(EventKind::Pio {
                write: false,
                port: 0xc13e
            })
        );
        assert_eq!(
            k(
                "kvm_mmio",
                "mmio unsatisfied-read len 4 gpa 0xfed000f0 val 0x0"
            ),
            Some(EventKind::Mmio {
                access: MmioAccess::UnsatisfiedRead,
                gpa: 0xfed000f0
            })
        );
        assert_eq!(
            k("kvm_msr", "msr_read 3b = 0x0 (#GP)"),
            Some(EventKind::Msr {
                write: false,
                index: 0x3b
            })
        );
        assert_eq!(
            k("kvm_userspace_exit", "reason KVM_EXIT_SHUTDOWN (8)"),
            Some(EventKind::UserspaceExit {
                reason: "KVM_EXIT_SHUTDOWN"
            })
        );
        assert_eq!(
            k(
                "kvm_hv_hypercall",
                "code 0x8 fast 1 rep_cnt 0x0 idx 0x0 in 0x0 out 0x0"
            ),
            Some(EventKind::Hypercall {
                nr: 8,
                hyperv: true
            })
        );
        assert_eq!(
            k("kvm_fpu", "unload"),
            Some(EventKind::Other { name: "kvm_fpu" })
        );
        assert_eq!(k("kvm_pio", "pio_sideways at 0x1"), None);
        assert_eq!(k("kvm_msr", "msr_write zz = 0x1"), None);
    }
}

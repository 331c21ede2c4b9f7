//! The MSR lines of `vcpu_unimpl` and `kvm_pr_unimpl`: guest accesses to MSRs KVM does not
//! emulate, in every spelling since 3.x, and the wrap a mail or terminal may put in them.

use super::event::{Event, hex};

/// Every spelling of `vcpu_unimpl`'s MSR lines: `kvm: PID: cpuN …` (3.x), `kvm [PID]: vcpuN …`,
/// `kvm [PID]: vcpuN, guest rIP: 0x… …`, `kvm_pr_unimpl`'s `kvm [PID]: ` (no vCPU), each
/// followed by `unhandled rdmsr: 0xI`,
/// `unhandled wrmsr: 0xI data 0xD`, `ignored rdmsr/wrmsr: …`, `Unhandled RDMSR(0xI)`,
/// `Unhandled WRMSR(0xI) = 0xD` (6.x), or a perfctr spelling; a module prefix (`kvm_amd: `)
/// may come first.
pub(super) fn msr(body: &str) -> Option<Result<Event, &'static str>> {
    let lower = body.to_ascii_lowercase();
    let at = lower.find("rdmsr").or_else(|| lower.find("wrmsr"))?;
    let start = lower.find("kvm [").or_else(|| lower.find("kvm: "))?;
    if start > at {
        return None;
    }
    let head = &body[start..at];
    // `kvm_pr_unimpl` (5.x `ignored …` lines) names the VM but not the vCPU.
    let (vm, vcpu) = vm_vcpu(head);
    if vm.is_none() && vcpu.is_none() {
        return None;
    }
    let write = lower[at..].starts_with("wrmsr");
    let ignored = lower[..at].contains("ignored");
    let after = &body[at + 5..];
    let index = if let Some(r) = after.strip_prefix('(') {
        hex(r)
    } else if let Some(r) = after.strip_prefix(':') {
        hex(r)
    } else {
        None
    };
    Some(
        index
            .map(|index| Event::Msr {
                vm,
                vcpu,
                index,
                write,
                ignored,
            })
            .ok_or("an MSR line without its MSR index"),
    )
}

/// Whether `body` is the head of an MSR line cut after its guest rIP (`kvm [PID]: vcpuN,
/// guest rIP: 0x…`), its MSR wrapped onto the next line.
pub(super) fn wrapped_msr(body: &str) -> bool {
    let Some((head, rip)) = body.rsplit_once(" guest rIP: ") else {
        return false;
    };
    let lower = head.to_ascii_lowercase();
    !lower.contains("msr")
        && vm_vcpu(&body[body.find("kvm").unwrap_or(0)..]).1.is_some()
        && rip
            .strip_prefix("0x")
            .is_some_and(|h| !h.is_empty() && h.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// Whether `body` is the rest of a wrapped MSR line (`unhandled rdmsr: 0x…`).
pub(super) fn continues_msr(body: &str) -> bool {
    let lower = body.to_ascii_lowercase();
    ["unhandled ", "ignored "]
        .iter()
        .any(|p| lower.starts_with(p))
        && lower.contains("msr")
}

/// The VMM pid and vCPU of `kvm [PID]: vcpuN` / `kvm: PID: cpuN`.
fn vm_vcpu(head: &str) -> (Option<u32>, Option<u32>) {
    let digits = |t: &str| -> Option<u32> {
        let end = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
        t[..end].parse().ok()
    };
    if let Some(r) = head.strip_prefix("kvm [") {
        let vm = digits(r);
        let vcpu = r
            .find("]: vcpu")
            .and_then(|i| digits(r[i + 7..].trim_start()));
        return (vm, vcpu);
    }
    if let Some(r) = head.strip_prefix("kvm: ") {
        let vm = digits(r);
        let vcpu = r.find(": cpu").and_then(|i| digits(&r[i + 5..]));
        return (vm, vcpu);
    }
    (None, None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sources::kernel_log::event::event;

    fn ok(body: &str) -> Event {
        match event(body) {
            Some(Ok(e)) => e,
            other => panic!("{body}: {other:?}"),
        }
    }

    #[test]
    fn msr_spellings() {
        for (line, vm, vcpu, index, write) in [
            (
                "kvm [12633]: vcpu0 unhandled rdmsr: 0x1c9",
                12633,
                0,
                0x1c9,
                false,
            ),
            (
                "kvm [3412]: vcpu0, guest rIP: 0xfffff8019c8d6103 unhandled rdmsr: 0x611",
                3412,
                0,
                0x611,
                false,
            ),
            (
                "kvm [2154]: vcpu0, guest rIP: 0xfff0 unhandled wrmsr: 0x38d data 0x0",
                2154,
                0,
                0x38d,
                true,
            ),
            (
                "kvm_amd: kvm [67539]: vcpu3, guest rIP: 0xfffff8547ad7624d Unhandled WRMSR(0xc0010115) = 0x0",
                67539,
                3,
                0xc001_0115,
                true,
            ),
            (
                "kvm [1]: vcpu2, guest rIP: 0x1 Unhandled RDMSR(0x1a0)",
                1,
                2,
                0x1a0,
                false,
            ),
            (
                "kvm [9]: vcpu1, guest rIP: 0x1 ignored rdmsr: 0x34 data 0x0",
                9,
                1,
                0x34,
                false,
            ),
            (
                "kvm: 2345: cpu1 unhandled rdmsr: 0xce",
                2345,
                1,
                0xce,
                false,
            ),
        ] {
            assert_eq!(
                ok(line),
                Event::Msr {
                    vm: Some(vm),
                    vcpu: Some(vcpu),
                    index,
                    write,
                    ignored: line.contains("ignored"),
                },
                "{line}"
            );
        }
        assert!(matches!(
            event("kvm [1]: vcpu0 unhandled rdmsr: zz"),
            Some(Err(_))
        ));
    }

    #[test]
    fn wrapped_msr_lines() {
        assert!(wrapped_msr(
            "kvm [3412]: vcpu0, guest rIP: 0xfffff8019c8d6103"
        ));
        assert!(!wrapped_msr(
            "kvm [3412]: vcpu0, guest rIP: 0xfff0 unhandled rdmsr: 0x1"
        ));
        assert!(!wrapped_msr("guest rIP: 0x1"));
        assert!(continues_msr("unhandled rdmsr: 0x611"));
        assert!(!continues_msr("unhandled page fault"));
    }
}

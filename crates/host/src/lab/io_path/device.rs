//! The device side of the IO path: the ring indices in guest memory, the device that lives in
//! the VMM thread (port-notify exits, interrupts injected from userspace, EOI exits), and the
//! device thread that waits on the notify ioeventfd and signals completions by irqfd (or not at
//! all, for a polling driver).

use std::sync::atomic::{AtomicBool, Ordering};

use vmm_sys_util::eventfd::EventFd;

use super::guest::{self, CQ_TAIL, IRQS, NOTIFY_PORT, SQ_TAIL, VECTOR};
use crate::microvm::{Devices, Error, MicroVm, RamWord, thread_cpu_ns, wait_readable};

/// The ring's indices, shared with the guest.
#[derive(Debug, Clone, Copy)]
pub struct Ring {
    sq: RamWord,
    cq: RamWord,
    irqs: RamWord,
}

impl Ring {
    /// The ring at `gpa` of `vm`'s RAM.
    pub fn new(vm: &MicroVm, gpa: u64) -> Result<Ring, Error> {
        let word = |off: i32| {
            vm.ram_word(gpa + off as u64)
                .ok_or_else(|| Error::Memory(format!("ring word at {:#x}", gpa + off as u64)))
        };
        Ok(Ring {
            sq: word(SQ_TAIL)?,
            cq: word(CQ_TAIL)?,
            irqs: word(IRQS)?,
        })
    }

    /// Completes every submitted request, one by one; returns how many interrupts `coalesce`
    /// completions per interrupt asks for.
    fn complete(&self, coalesce: u32, mut raise: impl FnMut()) -> u32 {
        let sq = self.sq.load();
        let mut cq = self.cq.load();
        let mut since = 0;
        let mut raised = 0;
        while cq != sq {
            cq = cq.wrapping_add(1);
            self.cq.store(cq);
            since += 1;
            if since >= coalesce.max(1) || cq == sq {
                raise();
                raised += 1;
                since = 0;
            }
        }
        raised
    }

    /// Interrupts the driver's handler has taken.
    pub fn irqs(&self) -> u32 {
        self.irqs.load()
    }
}

/// The device in the VMM thread: completes at the notify exit, asks the run loop to inject one
/// interrupt per `coalesce` completions, and takes the EOI exits.
pub struct VmmDevice {
    ring: Ring,
    coalesce: u32,
    pending: u32,
    pub eois: u64,
}

impl VmmDevice {
    pub fn new(ring: Ring, coalesce: u32) -> Self {
        Self {
            ring,
            coalesce,
            pending: 0,
            eois: 0,
        }
    }
}

impl Devices for VmmDevice {
    fn pio_out(&mut self, port: u16, _data: &[u8]) {
        if port == NOTIFY_PORT {
            let n = self.ring.complete(self.coalesce, || {});
            self.pending += n;
        }
    }
    fn mmio_write(&mut self, gpa: u64, _data: &[u8]) {
        if gpa == guest::APIC_BASE + 0xb0 {
            self.eois += 1;
        }
    }
    fn halt_ends_run(&self) -> bool {
        false
    }
    fn pending_interrupt(&self) -> Option<u8> {
        (self.pending > 0).then_some(VECTOR)
    }
    fn interrupt_injected(&mut self) {
        self.pending = self.pending.saturating_sub(1);
    }
}

/// The vCPU side when the device is a thread: nothing exits to it but the end of the run.
pub struct Passive;

impl Devices for Passive {
    fn halt_ends_run(&self) -> bool {
        false
    }
}

/// The device thread: waits for notifies, completes, signals `irqfd` per `coalesce`
/// completions; returns its CPU time. Stops when `stop` is set (and the notify fd woken).
pub fn serve(
    ring: &Ring,
    notify: &EventFd,
    irqfd: Option<&EventFd>,
    coalesce: u32,
    stop: &AtomicBool,
) -> u64 {
    let cpu0 = thread_cpu_ns();
    while !stop.load(Ordering::Acquire) {
        match wait_readable(crate::microvm::borrow_fd(notify), 100) {
            Ok(true) => {
                let _ = notify.read();
            }
            Ok(false) => continue,
            Err(_) => break,
        }
        ring.complete(coalesce, || {
            if let Some(fd) = irqfd {
                let _ = fd.write(1);
            }
        });
    }
    thread_cpu_ns().saturating_sub(cpu0)
}

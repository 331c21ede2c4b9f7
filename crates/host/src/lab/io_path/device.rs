//! The device side of the IO path. The device completes a batch's requests a group of
//! `coalesce` at a time and raises one interrupt per group; it completes the next group only
//! once the driver has taken the previous one — the regime of a device whose requests finish
//! one after another, slower than the guest takes an interrupt, so no interrupt merges with
//! another and the counts per IO are exact (1 / `coalesce` interrupts per IO at any depth).
//!
//! - [`VmmDevice`] lives in the VMM thread (`vmm-inject`): it completes at the notify exit,
//!   plays the interrupt controller (KVM_INTERRUPT through the run loop), and sees the EOI
//!   exit, where it completes the next group.
//! - [`serve`] is a device thread (`irqfd`, `poll`): it polls the notify ioeventfd,
//!   completes, signals the irqfd (or not: a polling driver), and waits for the driver to
//!   reap before the next group. Only its work is counted as its CPU: the wait for the
//!   driver stands for the time a real device takes to finish the next request.

use std::sync::atomic::{AtomicBool, Ordering};

use vmm_sys_util::eventfd::EventFd;

use super::guest::{APIC_EOI, CQ_TAIL, HALTS, IRQS, NOTIFY_PORT, REAPED, SQ_TAIL, VECTOR};
use crate::microvm::{Devices, Error, MicroVm, RamWord, thread_cpu_ns, wait_readable};

/// The ring's words, shared with the guest.
#[derive(Debug, Clone, Copy)]
pub(super) struct Ring {
    sq: RamWord,
    cq: RamWord,
    irqs: RamWord,
    reaped: RamWord,
    halts: RamWord,
}

/// The guest's own counts at one moment.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct GuestCounts {
    pub submitted: u32,
    pub interrupts: u32,
    pub halts: u32,
}

impl GuestCounts {
    /// What moved since `before` (the words wrap).
    pub(super) fn since(self, before: GuestCounts) -> GuestCounts {
        GuestCounts {
            submitted: self.submitted.wrapping_sub(before.submitted),
            interrupts: self.interrupts.wrapping_sub(before.interrupts),
            halts: self.halts.wrapping_sub(before.halts),
        }
    }
}

impl Ring {
    /// The ring at `gpa` of `vm`'s RAM.
    pub(super) fn new(vm: &MicroVm, gpa: u64) -> Result<Ring, Error> {
        let word = |off: i32| {
            let at = gpa + off as u64;
            vm.ram_word(at)
                .ok_or_else(|| Error::Memory(format!("ring word at {at:#x}")))
        };
        Ok(Ring {
            sq: word(SQ_TAIL)?,
            cq: word(CQ_TAIL)?,
            irqs: word(IRQS)?,
            reaped: word(REAPED)?,
            halts: word(HALTS)?,
        })
    }

    /// The submission tail now: what a notify tells the device is there to complete.
    fn submitted(&self) -> u32 {
        self.sq.load()
    }

    /// Completes the next group of at most `coalesce` of the requests up to `upto` (a
    /// submission tail the device was notified of); whether there was anything to complete.
    fn complete_group(&self, coalesce: u32, upto: u32) -> bool {
        let cq = self.cq.load();
        let open = upto.wrapping_sub(cq);
        if open == 0 || open > u32::MAX / 2 {
            return false;
        }
        self.cq.store(cq.wrapping_add(open.min(coalesce.max(1))));
        true
    }

    /// Whether the driver has reaped everything completed so far.
    fn reaped_all(&self) -> bool {
        self.reaped.load() == self.cq.load()
    }

    pub(super) fn counts(&self) -> GuestCounts {
        GuestCounts {
            submitted: self.sq.load(),
            interrupts: self.irqs.load(),
            halts: self.halts.load(),
        }
    }
}

/// What the VMM thread saw of the IO path.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct VmmCounts {
    pub notifies: u64,
    pub eois: u64,
}

/// The device in the VMM thread: completes a group at the notify exit and at each EOI exit
/// while requests are open, and asks the run loop to inject one interrupt per group.
pub(super) struct VmmDevice {
    ring: Ring,
    coalesce: u32,
    /// The submission tail of the last notify.
    upto: u32,
    pending: bool,
    pub seen: VmmCounts,
}

impl VmmDevice {
    pub(super) fn new(ring: Ring, coalesce: u32) -> Self {
        Self {
            ring,
            coalesce,
            upto: ring.cq.load(),
            pending: false,
            seen: VmmCounts::default(),
        }
    }

    fn complete(&mut self) {
        if self.ring.complete_group(self.coalesce, self.upto) {
            self.pending = true;
        }
    }
}

impl Devices for VmmDevice {
    fn pio_out(&mut self, port: u16, _data: &[u8]) {
        if port == NOTIFY_PORT {
            self.seen.notifies += 1;
            self.upto = self.ring.submitted();
            self.complete();
        }
    }
    fn mmio_write(&mut self, gpa: u64, _data: &[u8]) {
        if gpa == APIC_EOI {
            self.seen.eois += 1;
            self.complete();
        }
    }
    fn halt_ends_run(&self) -> bool {
        false
    }
    fn pending_interrupt(&self) -> Option<u8> {
        self.pending.then_some(VECTOR)
    }
    fn interrupt_injected(&mut self) {
        self.pending = false;
    }
}

/// The vCPU side when the device is a thread: nothing exits to it but the end of the run.
pub(super) struct Passive;

impl Devices for Passive {
    fn halt_ends_run(&self) -> bool {
        false
    }
}

/// What the device thread did.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct ThreadCounts {
    /// Notifies read from the ioeventfd (its counter summed).
    pub notifies: u64,
    pub signals: u64,
    /// CPU time of its work (waking, completing, signalling), ns.
    pub busy_cpu_ns: u64,
    /// CPU time spent waiting for the driver to reap, ns (a lab artefact, see the module doc).
    pub wait_cpu_ns: u64,
}

/// How long the device thread polls for the next notify before it blocks.
pub(super) const POLL_FOR: std::time::Duration = std::time::Duration::from_micros(50);

/// The device thread: polls for notifies, completes a group, signals `irqfd` (when there is
/// one), waits for the driver to reap it, and so on until the batch is done. Stops when
/// `stop` is set.
pub(super) fn serve(
    ring: &Ring,
    notify: &EventFd,
    irqfd: Option<&EventFd>,
    coalesce: u32,
    stop: &AtomicBool,
) -> ThreadCounts {
    let mut c = ThreadCounts::default();
    let stopped = || stop.load(Ordering::Acquire);
    let mut w0 = thread_cpu_ns();
    let mut idle_since: Option<std::time::Instant> = None;
    while !stopped() {
        // Poll the notify (the fd is non-blocking) for up to POLL_FOR, then block on it — as
        // QEMU's iothreads do with poll-max-ns: polling saves the wake-up latency while IOs
        // come back to back, blocking saves the CPU when they stop.
        let n = match notify.read() {
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                let since = *idle_since.get_or_insert_with(std::time::Instant::now);
                if since.elapsed() < POLL_FOR {
                    std::hint::spin_loop();
                } else if wait_readable(crate::microvm::borrow_fd(notify), 100).is_err() {
                    break;
                }
                continue;
            }
            Err(_) => break,
        };
        idle_since = None;
        let t0 = thread_cpu_ns();
        c.wait_cpu_ns += t0.saturating_sub(w0);
        c.notifies += n;
        let upto = ring.submitted();
        let mut waited = 0;
        while ring.complete_group(coalesce, upto) {
            if let Some(fd) = irqfd {
                let _ = fd.write(1);
                c.signals += 1;
            }
            if ring.cq.load() == upto {
                break;
            }
            let w0 = thread_cpu_ns();
            // Spin, never yield: on a busy host a yield gives the CPU away for a whole time
            // slice, and the driver would wait for the device instead of the device for it.
            while !ring.reaped_all() && !stopped() {
                std::hint::spin_loop();
            }
            waited += thread_cpu_ns().saturating_sub(w0);
            if stopped() {
                break;
            }
        }
        let t1 = thread_cpu_ns();
        c.busy_cpu_ns += t1.saturating_sub(t0).saturating_sub(waited);
        c.wait_cpu_ns += waited;
        w0 = t1;
    }
    c.wait_cpu_ns += thread_cpu_ns().saturating_sub(w0);
    c
}

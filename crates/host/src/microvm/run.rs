//! The run loop of a [`MicroVm`]: `KVM_RUN` under the watchdog until the guest writes to
//! [`DONE_PORT`] (or halts, for devices that end on HLT), each exit answered by a [`Devices`]
//! model and counted in [`RunStats`], the coalesced-MMIO ring drained after every exit.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use kvm_ioctls::VcpuExit;
use virtlens_core::measure::Mode;

use super::error::Error;
use super::guest::{self, EXCEPTION_PORT};
use super::layout::DONE_PORT;
use super::sys;
use super::tables;
use super::vm::MicroVm;
use super::watchdog::{StopOnDrop, Watchdog};

/// The VMM side of a guest's exits: answers port, MMIO, MSR and hypercall exits. Every
/// method has a default (reads give zeros, writes are dropped, MSRs read 0).
pub trait Devices {
    fn pio_in(&mut self, _port: u16, data: &mut [u8]) {
        data.fill(0);
    }
    fn pio_out(&mut self, _port: u16, _data: &[u8]) {}
    fn mmio_read(&mut self, _gpa: u64, data: &mut [u8]) {
        data.fill(0);
    }
    /// Also receives the writes drained from the coalesced-MMIO ring.
    fn mmio_write(&mut self, _gpa: u64, _data: &[u8]) {}
    /// The value of an MSR that KVM sent to userspace; `None` makes the guest take a #GP.
    fn rdmsr(&mut self, _index: u32) -> Option<u64> {
        Some(0)
    }
    /// Whether an MSR write that KVM sent to userspace succeeds (else #GP).
    fn wrmsr(&mut self, _index: u32, _value: u64) -> bool {
        true
    }
    /// The return value of a hypercall KVM sent to userspace.
    fn hypercall(&mut self, _nr: u64, _args: [u64; 6]) -> u64 {
        0
    }
    /// Whether a HLT exit ends the run (else the guest is resumed after its HLT).
    fn halt_ends_run(&self) -> bool {
        true
    }
    /// An interrupt vector the VMM wants to inject (VMs without an in-kernel irqchip): the run
    /// loop injects it with KVM_INTERRUPT as soon as the guest can take it, asking for an
    /// interrupt-window exit until then, and calls [`Devices::interrupt_injected`].
    fn pending_interrupt(&self) -> Option<u8> {
        None
    }
    /// The pending interrupt was injected.
    fn interrupt_injected(&mut self) {}
}

/// Devices that answer zeros and end the run on HLT.
#[derive(Debug, Default, Clone, Copy)]
pub struct Zeros;

impl Devices for Zeros {}

/// What the guest touched, as its exits (and the coalesced ring) showed it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Access {
    PortIn(u16),
    PortOut(u16),
    MmioRead(u64),
    MmioWrite(u64),
    Rdmsr(u32),
    Wrmsr(u32),
    Hypercall(u64),
    Halt,
    /// A write to a coalesced-MMIO zone, found in the ring (not an exit).
    Coalesced(u64),
}

/// What one run saw. The exit that ends the run (the write to [`DONE_PORT`] or the final
/// HLT) is not counted in the exit fields.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunStats {
    /// KVM_EXIT_IO exits.
    pub pio_exits: u64,
    /// KVM_EXIT_MMIO exits.
    pub mmio_exits: u64,
    /// KVM_EXIT_HLT exits the guest was resumed from.
    pub hlt_exits: u64,
    /// KVM_EXIT_X86_RDMSR / KVM_EXIT_X86_WRMSR exits.
    pub msr_exits: u64,
    /// KVM_EXIT_HYPERCALL exits.
    pub hypercall_exits: u64,
    /// Entries drained from the coalesced-MMIO ring.
    pub coalesced: u64,
    /// Whether the run ended with the guest's HLT.
    pub hlt: bool,
    /// Whether the run ended with the guest's write to [`DONE_PORT`].
    pub done: bool,
    /// `KVM_RUN` calls made (exits plus interrupted runs that were resumed).
    pub kvm_runs: u64,
    /// Interrupts injected from userspace (KVM_INTERRUPT).
    pub injected: u64,
    /// KVM_EXIT_IRQ_WINDOW_OPEN exits (the guest became able to take an interrupt).
    pub irq_window_exits: u64,
    /// Port accesses by port number.
    pub ports: BTreeMap<u16, u64>,
    /// Every access, by kind and address.
    pub accesses: BTreeMap<Access, u64>,
    /// Wall time from the first `KVM_RUN` to the end of the run.
    pub elapsed: Duration,
}

impl RunStats {
    /// Returns to userspace that the guest caused (the final one excluded).
    pub fn userspace_exits(&self) -> u64 {
        self.pio_exits
            + self.mmio_exits
            + self.hlt_exits
            + self.msr_exits
            + self.hypercall_exits
            + self.irq_window_exits
    }

    fn note(&mut self, access: Access) {
        *self.accesses.entry(access).or_default() += 1;
        match access {
            Access::PortIn(p) | Access::PortOut(p) => {
                self.pio_exits += 1;
                *self.ports.entry(p).or_default() += 1;
            }
            Access::MmioRead(_) | Access::MmioWrite(_) => self.mmio_exits += 1,
            Access::Rdmsr(_) | Access::Wrmsr(_) => self.msr_exits += 1,
            Access::Hypercall(_) => self.hypercall_exits += 1,
            Access::Halt => self.hlt_exits += 1,
            Access::Coalesced(_) => self.coalesced += 1,
        }
    }
}

/// What an exit asks of the run loop, taken out of the exit so the vCPU can be used again.
enum Step {
    Continue,
    Done,
    Halt,
    Exception(u8),
    Interrupted,
    Fail(Error),
    Unexpected(String),
    Internal,
}

impl MicroVm {
    /// Runs the guest until it halts, answering port and MMIO exits with zeros. Every
    /// `KVM_RUN` must return within `watchdog`, else the run fails with [`Error::Hung`].
    pub fn run(&mut self, watchdog: Duration) -> Result<RunStats, Error> {
        self.run_with(&mut Zeros, watchdog)
    }

    /// Runs the guest until it writes to [`DONE_PORT`] (or halts, if `devices` say HLT ends
    /// the run), with `devices` answering its exits. Uses a watchdog thread, joined before
    /// returning.
    pub fn run_with(
        &mut self,
        devices: &mut dyn Devices,
        watchdog: Duration,
    ) -> Result<RunStats, Error> {
        let signal = sys::kick_signal().map_err(Error::Watchdog)?;
        let dog = Watchdog::for_current_thread(watchdog, signal);
        std::thread::scope(|scope| {
            let thread = std::thread::Builder::new()
                .name("kvm-watchdog".into())
                .spawn_scoped(scope, || dog.watch())
                .map_err(|e| Error::Watchdog(format!("spawning the watchdog thread: {e}")))?;
            // Not joined: the scope returns once the watchdog's closure is done, and its OS
            // thread finishes exiting meanwhile (joining it made `lab --quick` 15-30% slower
            // on the development machine, where a thread's exit takes milliseconds).
            let _stop = StopOnDrop {
                watchdog: &dog,
                thread: thread.thread().clone(),
            };
            self.run_loop(devices, &dog)
        })
    }

    fn run_loop(&mut self, devices: &mut dyn Devices, dog: &Watchdog) -> Result<RunStats, Error> {
        let start = Instant::now();
        let mut stats = RunStats::default();
        loop {
            self.offer_interrupt(devices, &mut stats)?;
            let token = dog.arm();
            let result = self.vcpu.run();
            dog.disarm();
            stats.kvm_runs += 1;
            let step = match result {
                Ok(exit) => handle(exit, devices, &mut stats),
                Err(e) if e.errno() == libc::EINTR => Step::Interrupted,
                Err(e) => Step::Fail(Error::Kvm {
                    op: "KVM_RUN",
                    source: e,
                }),
            };
            self.drain_coalesced(devices, &mut stats);
            match step {
                Step::Continue => {}
                Step::Done => {
                    stats.done = true;
                    stats.elapsed = start.elapsed();
                    return Ok(stats);
                }
                Step::Halt if devices.halt_ends_run() => {
                    stats.hlt = true;
                    stats.elapsed = start.elapsed();
                    return Ok(stats);
                }
                Step::Halt => stats.note(Access::Halt),
                Step::Interrupted if dog.fired_for(token) => {
                    return Err(Error::Hung {
                        limit: dog.limit(),
                        rip: self.rip(),
                    });
                }
                Step::Interrupted => {} // another signal: resume
                Step::Exception(vector) => {
                    let rip = self.rip();
                    let stub = match self.mode {
                        Mode::Real => guest::in_stubs(rip),
                        _ => tables::in_stubs32(rip),
                    };
                    if stub {
                        return Err(self.exception(vector));
                    }
                    // The program itself wrote to the stubs' port: an ordinary port write.
                    stats.note(Access::PortOut(EXCEPTION_PORT));
                    devices.pio_out(EXCEPTION_PORT, &[vector]);
                }
                Step::Fail(Error::Shutdown { .. }) => {
                    return Err(Error::Shutdown { rip: self.rip() });
                }
                Step::Fail(e) => return Err(e),
                Step::Internal => {
                    let (suberror, data) = sys::internal_error(self.vcpu.get_kvm_run());
                    return Err(Error::Internal {
                        suberror,
                        data,
                        rip: self.rip(),
                    });
                }
                Step::Unexpected(exit) => {
                    return Err(Error::UnexpectedExit {
                        exit,
                        rip: self.rip(),
                    });
                }
            }
        }
    }

    /// Injects the devices' pending interrupt when the guest can take it, else asks KVM for
    /// an exit as soon as it can.
    fn offer_interrupt(
        &mut self,
        devices: &mut dyn Devices,
        stats: &mut RunStats,
    ) -> Result<(), Error> {
        let Some(vector) = devices.pending_interrupt() else {
            self.vcpu.get_kvm_run().request_interrupt_window = 0;
            return Ok(());
        };
        let run = self.vcpu.get_kvm_run();
        let ready = run.ready_for_interrupt_injection != 0 && run.if_flag != 0;
        if ready {
            sys::inject_interrupt(&self.vcpu, u32::from(vector))
                .map_err(Error::kvm("KVM_INTERRUPT"))?;
            devices.interrupt_injected();
            stats.injected += 1;
        }
        let more = !ready || devices.pending_interrupt().is_some();
        self.vcpu.get_kvm_run().request_interrupt_window = u8::from(more);
        Ok(())
    }

    fn drain_coalesced(&mut self, devices: &mut dyn Devices, stats: &mut RunStats) {
        if !self.coalesced_ring {
            return;
        }
        while let Ok(Some(entry)) = self.vcpu.coalesced_mmio_read() {
            let len = (entry.len as usize).min(entry.data.len());
            devices.mmio_write(entry.phys_addr, &entry.data[..len]);
            stats.note(Access::Coalesced(entry.phys_addr));
        }
    }

    fn rip(&self) -> u64 {
        self.vcpu.get_regs().map_or(0, |r| r.rip)
    }

    /// The error for an exception stub's report, from the exception frame on the guest stack.
    fn exception(&self, vector: u8) -> Error {
        let (word, has_code) = match self.mode {
            Mode::Real => (2, false),
            Mode::Prot32 => (4, tables::has_error_code(vector)),
            Mode::Long64 | Mode::User64 => (8, tables::has_error_code(vector)),
        };
        let frame = self
            .vcpu
            .get_regs()
            .ok()
            .zip(self.vcpu.get_sregs().ok())
            .and_then(|(r, s)| {
                let sp = match self.mode {
                    Mode::Real => s.ss.base.wrapping_add(r.rsp & 0xffff),
                    _ => s.ss.base.wrapping_add(r.rsp),
                };
                let read = |i: u64| {
                    let b = self.read_mem(sp + i * word, word as usize)?;
                    let mut v = [0u8; 8];
                    v[..b.len()].copy_from_slice(b);
                    Some(u64::from_le_bytes(v))
                };
                let skip = u64::from(has_code);
                let code = if has_code { read(0) } else { None };
                Some((read(skip)?, read(skip + 1)?, code))
            });
        let (ip, cs, error_code) = frame.unwrap_or((0, 0, None));
        Error::GuestException {
            vector,
            cs: cs as u16,
            ip,
            error_code,
        }
    }
}

fn handle(exit: VcpuExit<'_>, devices: &mut dyn Devices, stats: &mut RunStats) -> Step {
    match exit {
        VcpuExit::IoOut(port, data) => {
            if port == EXCEPTION_PORT && data.len() == 1 {
                // A stub's report, if rip is in the stubs (checked by the run loop).
                return Step::Exception(data[0]);
            }
            if port == DONE_PORT {
                return Step::Done;
            }
            stats.note(Access::PortOut(port));
            devices.pio_out(port, data);
            Step::Continue
        }
        VcpuExit::IoIn(port, data) => {
            stats.note(Access::PortIn(port));
            devices.pio_in(port, data);
            Step::Continue
        }
        VcpuExit::MmioRead(gpa, data) => {
            stats.note(Access::MmioRead(gpa));
            devices.mmio_read(gpa, data);
            Step::Continue
        }
        VcpuExit::MmioWrite(gpa, data) => {
            stats.note(Access::MmioWrite(gpa));
            devices.mmio_write(gpa, data);
            Step::Continue
        }
        VcpuExit::X86Rdmsr(msr) => {
            stats.note(Access::Rdmsr(msr.index));
            match devices.rdmsr(msr.index) {
                Some(v) => *msr.data = v,
                None => *msr.error = 1,
            }
            Step::Continue
        }
        VcpuExit::X86Wrmsr(msr) => {
            stats.note(Access::Wrmsr(msr.index));
            if !devices.wrmsr(msr.index, msr.data) {
                *msr.error = 1;
            }
            Step::Continue
        }
        VcpuExit::Hypercall(call) => {
            stats.note(Access::Hypercall(call.nr));
            *call.ret = devices.hypercall(call.nr, call.args);
            Step::Continue
        }
        VcpuExit::Hlt => Step::Halt,
        VcpuExit::IrqWindowOpen => {
            stats.irq_window_exits += 1;
            Step::Continue
        }
        VcpuExit::Intr => Step::Interrupted,
        VcpuExit::Shutdown => Step::Fail(Error::Shutdown { rip: 0 }),
        VcpuExit::FailEntry(reason, cpu) => Step::Fail(Error::FailEntry { reason, cpu }),
        VcpuExit::InternalError => Step::Internal,
        other => Step::Unexpected(format!("{other:?}")),
    }
}

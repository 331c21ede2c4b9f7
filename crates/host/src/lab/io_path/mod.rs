//! The IO path: a micro-VM driver submits requests through a ring in guest memory and
//! notifies the device; virtlens plays the device and completes them; completions reach the
//! driver in one of three ways ([`Delivery`]):
//!
//! - `vmm-inject` — the notify is a port write that exits to the VMM, which completes the
//!   requests and injects the interrupt itself (KVM_INTERRUPT: no in-kernel irqchip, the VMM is
//!   the interrupt controller); the driver's EOI to the xAPIC page exits to the VMM too;
//! - `irqfd` — the notify is caught in the kernel by an ioeventfd, a device thread completes
//!   the requests and signals an irqfd routed as an MSI to the in-kernel LAPIC; HLT and EOI stay
//!   in the kernel;
//! - `poll` — ioeventfd notify and device thread as for `irqfd`, no interrupt: the driver
//!   spins on the completion tail.
//!
//! The device completes `coalesce` requests per interrupt, one group after the other (see
//! `device`). A [`Live`] configuration keeps its VM between runs; each run counts what its IOs
//! cost: the guest's own counts (interrupts, halts), returns to the VMM by reason, KVM's
//! statistics, wall time and the CPU time of the vCPU thread and of the device's work.
//! Interleaved rounds and their statistics are in `rounds`.

mod device;
pub(crate) mod guest;
pub(crate) mod profile;
pub(crate) mod rounds;

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use kvm_bindings::{
    KVM_IRQ_ROUTING_MSI, KvmIrqRouting, kvm_irq_routing_entry, kvm_irq_routing_msi,
};
use kvm_ioctls::IoEventAddress;
use virtlens_core::measure::Mode;
pub(crate) use virtlens_core::measure::{Delivery, Eoi};
use vmm_sys_util::eventfd::EventFd;

use crate::kvm_stats::StatsFd;
use crate::microvm::{Error, MicroVm, VmConfig, thread_cpu_ns};
use device::{Ring, VmmDevice};
use guest::{NOTIFY_PORT, RING, Wait};

/// One IO-path configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Config {
    pub delivery: Delivery,
    /// Requests submitted per notify.
    pub qd: u32,
    /// Completions per interrupt (coalescing); 1 = an interrupt per completion.
    pub coalesce: u32,
    /// EOI through the x2APIC MSR instead of the xAPIC page (in-kernel LAPIC only).
    pub x2apic_eoi: bool,
}

impl Config {
    pub fn eoi(&self) -> Eoi {
        match (self.delivery, self.x2apic_eoi) {
            (Delivery::Poll, _) => Eoi::None,
            (_, true) => Eoi::X2apic,
            _ => Eoi::Xapic,
        }
    }

    /// `irqfd qd 32 k 8 x2apic`.
    pub fn label(&self) -> String {
        let mut s = format!("{} qd {}", self.delivery.name(), self.qd);
        if self.coalesce > 1 {
            s.push_str(&format!(" k {}", self.coalesce));
        }
        if self.x2apic_eoi {
            s.push_str(" x2apic");
        }
        s
    }
}

/// What one run cost, in total.
#[derive(Debug, Clone, Default)]
pub struct RunCounts {
    pub ios: u64,
    pub notifies: u64,
    pub interrupts: u64,
    pub halts: u64,
    pub eois: u64,
    /// Returns to the VMM, by reason (the run's final one excluded).
    pub vmm_notify: u64,
    pub vmm_eoi: u64,
    pub vmm_halt: u64,
    pub vmm_window: u64,
    pub vmm_total: u64,
    /// Interrupts virtlens injected from userspace (KVM_INTERRUPT).
    pub injections: u64,
    /// KVM's vCPU statistics that moved.
    pub kvm: Vec<(String, u64)>,
    pub wall_ns: u64,
    pub vcpu_cpu_ns: u64,
    pub device_cpu_ns: u64,
    pub device_wait_cpu_ns: u64,
}

impl RunCounts {
    /// A KVM statistic's delta over the run.
    pub fn kvm(&self, name: &str) -> Option<u64> {
        self.kvm.iter().find(|(n, _)| n == name).map(|(_, v)| *v)
    }
}

/// The KVM statistics the IO path reads.
pub(crate) const KVM_STATS: [&str; 8] = [
    "exits",
    "irq_injections",
    "halt_exits",
    "halt_wakeup",
    "irq_window_exits",
    "request_irq_exits",
    "irq_exits",
    "insn_emulation",
];

/// A configuration's VM, ready to run.
pub(crate) struct Live {
    pub config: Config,
    vm: MicroVm,
    ring: Ring,
    stats: Option<StatsFd>,
    notify: Option<EventFd>,
    irqfd: Option<EventFd>,
}

fn msi_route(vm: &MicroVm, gsi: u32) -> Result<(), Error> {
    let mut e = kvm_irq_routing_entry {
        gsi,
        type_: KVM_IRQ_ROUTING_MSI,
        ..kvm_irq_routing_entry::default()
    };
    e.u.msi = kvm_irq_routing_msi {
        address_lo: guest::APIC_BASE as u32,
        data: u32::from(guest::VECTOR),
        ..kvm_irq_routing_msi::default()
    };
    let routing = KvmIrqRouting::from_entries(&[e])
        .map_err(|e| Error::Unsupported(format!("GSI routing table: {e:?}")))?;
    vm.vm_fd()
        .set_gsi_routing(&routing)
        .map_err(Error::kvm("KVM_SET_GSI_ROUTING"))
}

/// An eventfd routed as an MSI of [`guest::VECTOR`] to the in-kernel LAPIC (GSI `gsi`).
pub(crate) fn msi_irqfd(vm: &MicroVm, gsi: u32, fd: &EventFd) -> Result<(), Error> {
    msi_route(vm, gsi)?;
    vm.vm_fd()
        .register_irqfd(fd, gsi)
        .map_err(Error::kvm("KVM_IRQFD"))
}

impl Live {
    /// Builds the VM of `c` and loads its driver.
    pub(crate) fn new(c: Config) -> Result<Live, Error> {
        let wait = match (c.delivery, c.x2apic_eoi) {
            (Delivery::Poll, _) => Wait::Poll,
            (_, true) => Wait::InterruptX2apic,
            _ => Wait::InterruptXapic,
        };
        let irqchip = c.delivery != Delivery::VmmInject;
        let mut vm = MicroVm::with_config(&VmConfig {
            mem_bytes: crate::microvm::layout::DEFAULT_MEMORY,
            irqchip,
            ..VmConfig::default()
        })?;
        vm.load(Mode::Long64, &guest::program(c.qd, wait, irqchip)?)?;
        let ring = Ring::new(&vm, RING)?;
        let (mut notify, mut irqfd) = (None, None);
        if c.delivery != Delivery::VmmInject {
            let i = vm.add_ioeventfd(IoEventAddress::Pio(u64::from(NOTIFY_PORT)))?;
            notify = vm.ioeventfd(i).and_then(|fd| fd.try_clone().ok());
            if notify.is_none() {
                return Err(Error::Unsupported("cloning the notify eventfd".into()));
            }
        }
        if c.delivery == Delivery::Irqfd {
            let fd = EventFd::new(0).map_err(|e| Error::Memory(format!("eventfd: {e}")))?;
            msi_irqfd(&vm, 1, &fd)?;
            irqfd = Some(fd);
        }
        Ok(Live {
            config: c,
            stats: vm.vcpu_stats().ok(),
            vm,
            ring,
            notify,
            irqfd,
        })
    }

    /// Runs `batches` notify rounds of `qd` requests; `watchdog` bounds each KVM_RUN.
    pub(crate) fn run(&mut self, batches: u32, watchdog: Duration) -> Result<RunCounts, Error> {
        let c = self.config;
        self.vm.restart_with(|r| r.rdi = u64::from(batches))?;
        let before = self.stats.as_ref().and_then(|s| s.snapshot().ok());
        let g0 = self.ring.counts();
        let mut out = RunCounts::default();
        let ring = self.ring;
        let (run, wall, vcpu_cpu) = match (&self.notify, c.delivery) {
            (Some(notify), Delivery::Irqfd | Delivery::Poll) => {
                let stop = AtomicBool::new(false);
                let irqfd = self.irqfd.as_ref();
                let vm = &mut self.vm;
                std::thread::scope(|s| -> Result<_, Error> {
                    let dev = s.spawn(|| device::serve(&ring, notify, irqfd, c.coalesce, &stop));
                    let (cpu0, t0) = (thread_cpu_ns(), Instant::now());
                    let result = vm.run_with(&mut device::Passive, watchdog);
                    let (wall, cpu) = (t0.elapsed(), thread_cpu_ns().saturating_sub(cpu0));
                    stop.store(true, Ordering::Release);
                    let d = dev.join().unwrap_or_default();
                    out.notifies = d.notifies;
                    out.device_cpu_ns = d.busy_cpu_ns;
                    out.device_wait_cpu_ns = d.wait_cpu_ns;
                    Ok((result?, wall, cpu))
                })?
            }
            _ => {
                let mut dev = VmmDevice::new(ring, c.coalesce);
                let (cpu0, t0) = (thread_cpu_ns(), Instant::now());
                let run = self.vm.run_with(&mut dev, watchdog)?;
                let (wall, cpu) = (t0.elapsed(), thread_cpu_ns().saturating_sub(cpu0));
                out.notifies = dev.seen.notifies;
                out.eois = dev.seen.eois;
                (run, wall, cpu)
            }
        };
        if !run.done {
            return Err(Error::UnexpectedExit {
                exit: "the driver halted instead of finishing its batches".into(),
                rip: 0,
            });
        }
        let g = self.ring.counts().since(g0);
        out.ios = u64::from(g.submitted);
        out.interrupts = u64::from(g.interrupts);
        out.halts = u64::from(g.halts);
        if c.delivery == Delivery::Irqfd {
            // The handler ends every interrupt it takes with one EOI, in the kernel.
            out.eois = out.interrupts;
        }
        out.vmm_notify = run.pio_exits;
        out.vmm_eoi = run.mmio_exits;
        out.vmm_halt = run.hlt_exits;
        out.vmm_window = run.irq_window_exits;
        out.vmm_total = run.userspace_exits();
        out.injections = run.injected;
        out.wall_ns = u64::try_from(wall.as_nanos()).unwrap_or(u64::MAX);
        out.vcpu_cpu_ns = vcpu_cpu;
        let after = self.stats.as_ref().and_then(|s| s.snapshot().ok());
        if let (Some(fd), Some(b), Some(a)) = (&self.stats, &before, &after) {
            out.kvm = KVM_STATS
                .iter()
                .filter_map(|n| {
                    let d = a
                        .get(fd.layout(), n)?
                        .saturating_sub(b.get(fd.layout(), n)?);
                    Some(((*n).to_string(), d))
                })
                .collect();
        }
        Ok(out)
    }
}

/// Builds `c` and runs it once (`batches` notify rounds): the one-shot form the tests and
/// the capture use.
pub fn run(c: &Config, batches: u32, watchdog: Duration) -> Result<RunCounts, Error> {
    Live::new(*c)?.run(batches, watchdog)
}

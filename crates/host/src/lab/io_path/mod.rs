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
//! Every run counts what each IO cost: returns to the VMM, interrupts the guest took, KVM's own
//! exit and injection counters, wall time, and the CPU time of the vCPU thread and of the
//! device thread. Counts are exact; times depend on the backend (on PVM, ring-0 guest code is
//! emulated instruction by instruction, so guest-side times are the emulator's).

mod device;
pub mod guest;

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use kvm_bindings::{
    KVM_IRQ_ROUTING_MSI, KvmIrqRouting, kvm_irq_routing_entry, kvm_irq_routing_msi,
};
use kvm_ioctls::IoEventAddress;
use serde::Serialize;
use virtlens_core::measure::Mode;
use vmm_sys_util::eventfd::EventFd;

use crate::microvm::{Error, MicroVm, VmConfig, thread_cpu_ns};
use device::{Ring, VmmDevice};
use guest::{NOTIFY_PORT, RING, Wait};

/// How completions reach the driver.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Delivery {
    VmmInject,
    Irqfd,
    Poll,
}

impl Delivery {
    pub const ALL: [Delivery; 3] = [Delivery::VmmInject, Delivery::Irqfd, Delivery::Poll];

    pub fn name(self) -> &'static str {
        match self {
            Delivery::VmmInject => "vmm-inject",
            Delivery::Irqfd => "irqfd",
            Delivery::Poll => "poll",
        }
    }
}

/// One IO-path configuration.
#[derive(Debug, Clone, Copy)]
pub struct Config {
    pub delivery: Delivery,
    /// Requests submitted per notify.
    pub qd: u32,
    /// Completions per interrupt (coalescing); 1 = an interrupt per completion.
    pub coalesce: u32,
    /// Notify rounds (batches of `qd` requests).
    pub batches: u32,
    /// EOI through the x2APIC MSR instead of the xAPIC page (in-kernel LAPIC only).
    pub x2apic_eoi: bool,
}

/// What one configuration cost, in total (divide by `ios` for per-IO figures).
#[derive(Debug, Clone, Serialize)]
pub struct Measured {
    pub delivery: Delivery,
    pub qd: u32,
    pub coalesce: u32,
    pub ios: u64,
    /// Returns to the VMM (KVM_RUN returning to virtlens), the run's final one excluded.
    pub vmm_returns: u64,
    /// Interrupts the driver's handler took.
    pub guest_interrupts: u64,
    /// Interrupts virtlens injected from userspace (KVM_INTERRUPT).
    pub vmm_injections: u64,
    /// KVM's vCPU counters over the run (binary stats): `exits`, `irq_injections`,
    /// `halt_exits`, `irq_window_exits`, `insn_emulation`.
    pub kvm: Vec<(String, u64)>,
    pub wall_ns: u64,
    pub vcpu_cpu_ns: u64,
    pub device_cpu_ns: u64,
}

impl Measured {
    /// A KVM counter's delta over the run.
    pub fn kvm(&self, name: &str) -> Option<u64> {
        self.kvm.iter().find(|(n, _)| n == name).map(|(_, v)| *v)
    }
}

const KVM_COUNTERS: [&str; 5] = [
    "exits",
    "irq_injections",
    "halt_exits",
    "irq_window_exits",
    "insn_emulation",
];

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

/// Runs one configuration; `watchdog` bounds each KVM_RUN.
pub fn run(c: &Config, watchdog: Duration) -> Result<Measured, Error> {
    let wait = match (c.delivery, c.x2apic_eoi) {
        (Delivery::Poll, _) => Wait::Poll,
        (Delivery::Irqfd, true) => Wait::InterruptX2apic,
        _ => Wait::InterruptXapic,
    };
    let irqchip = c.delivery == Delivery::Irqfd;
    let mut vm = MicroVm::with_config(&VmConfig {
        mem_bytes: crate::microvm::layout::DEFAULT_MEMORY,
        irqchip,
        ..VmConfig::default()
    })?;
    vm.load(Mode::Long64, &guest::program(c.qd, wait, irqchip)?)?;
    vm.restart_with(|r| r.rdi = u64::from(c.batches))?;
    let ring = Ring::new(&vm, RING)?;
    let stats = vm.vcpu_stats().ok();
    let before = stats.as_ref().and_then(|s| s.snapshot().ok());
    let stop = AtomicBool::new(false);
    let (run, device_cpu_ns) = match c.delivery {
        Delivery::VmmInject => {
            let mut dev = VmmDevice::new(ring, c.coalesce);
            let cpu0 = thread_cpu_ns();
            let t0 = Instant::now();
            let run = vm.run_with(&mut dev, watchdog)?;
            let wall = t0.elapsed();
            // The device is the vCPU thread here: its CPU is in the vCPU figure.
            ((run, wall, thread_cpu_ns().saturating_sub(cpu0)), 0)
        }
        Delivery::Irqfd | Delivery::Poll => {
            let notify_index = vm.add_ioeventfd(IoEventAddress::Pio(u64::from(NOTIFY_PORT)))?;
            let notify = vm
                .ioeventfd(notify_index)
                .and_then(|fd| fd.try_clone().ok())
                .ok_or_else(|| Error::Unsupported("cloning the notify eventfd".into()))?;
            let waker = notify
                .try_clone()
                .map_err(|e| Error::Memory(format!("eventfd: {e}")))?;
            let irqfd = if c.delivery == Delivery::Irqfd {
                let fd = EventFd::new(0).map_err(|e| Error::Memory(format!("eventfd: {e}")))?;
                msi_route(&vm, 1)?;
                vm.vm_fd()
                    .register_irqfd(&fd, 1)
                    .map_err(Error::kvm("KVM_IRQFD"))?;
                Some(fd)
            } else {
                None
            };
            std::thread::scope(|s| -> Result<_, Error> {
                let dev =
                    s.spawn(|| device::serve(&ring, &notify, irqfd.as_ref(), c.coalesce, &stop));
                let cpu0 = thread_cpu_ns();
                let t0 = Instant::now();
                let result = vm.run_with(&mut device::Passive, watchdog);
                let wall = t0.elapsed();
                let cpu = thread_cpu_ns().saturating_sub(cpu0);
                stop.store(true, Ordering::Release);
                let _ = waker.write(1);
                let device_cpu = dev.join().unwrap_or(0);
                Ok(((result?, wall, cpu), device_cpu))
            })?
        }
    };
    let ((run, wall, vcpu_cpu), device_cpu_ns) = (run, device_cpu_ns);
    let after = stats.as_ref().and_then(|s| s.snapshot().ok());
    let kvm = match (&stats, &before, &after) {
        (Some(fd), Some(b), Some(a)) => KVM_COUNTERS
            .iter()
            .filter_map(|n| {
                let d = a
                    .get(fd.layout(), n)?
                    .saturating_sub(b.get(fd.layout(), n)?);
                Some(((*n).to_string(), d))
            })
            .collect(),
        _ => Vec::new(),
    };
    Ok(Measured {
        delivery: c.delivery,
        qd: c.qd,
        coalesce: c.coalesce,
        ios: u64::from(c.qd) * u64::from(c.batches),
        vmm_returns: run.userspace_exits(),
        guest_interrupts: u64::from(ring.irqs()),
        vmm_injections: run.injected,
        kvm,
        wall_ns: u64::try_from(wall.as_nanos()).unwrap_or(u64::MAX),
        vcpu_cpu_ns: vcpu_cpu,
        device_cpu_ns,
    })
}

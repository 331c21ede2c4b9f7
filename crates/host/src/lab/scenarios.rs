//! The trap scenarios: pairs of 64-bit guest programs that do the same logical work, one the
//! way a guest that hits a known trap does it, one the way the fixed guest does it (plus, for
//! the clock, a variant in between). They run in ring 0 (a guest kernel as KVM sees it) and in
//! ring 3 (where a PVM backend runs guest code natively, as it runs PVM guest kernels):
//!
//! | scenario | trap | fixed |
//! |---|---|---|
//! | `clock_read` | ACPI PM timer: `in eax, 0x608`, answered by the VMM | TSC-page read: seqlock, `rdtsc`, scale and offset from RAM (also: `rdmsr` IA32_TSC, in the kernel) |
//! | `timer_program` | HPET-like MMIO at 0xfed00000: read the counter, write a comparator, both in the VMM | in-kernel LAPIC timer: write TMICT |
//! | `apic_eoi` | EOI to an xAPIC page emulated by the VMM (no in-kernel irqchip) | the same EOI to the in-kernel LAPIC |
//! | `serial_console` | 16550: poll LSR (0x3fd) until THRE, then write THR, per byte | append to a RAM buffer, one flush to the VMM per 64 bytes |
//! | `virtio_notify` | bump the avail index, notify by a port write to the VMM | the same, the port caught in the kernel by an ioeventfd |

use iced_x86::code_asm::{
    al, ax, byte_ptr, dword_ptr, dx, eax, ecx, esi, qword_ptr, rax, rbx, rcx, rdx,
};
use kvm_ioctls::IoEventAddress;
use virtlens_core::measure::Mode;
use virtlens_core::profile::Profile;

use super::asm::{Prog, looped};
use super::bench::{self, Item, Plan};
use super::catalog::{USER_PORT, program_error};
use super::devices::{APIC_BASE, HPET_BASE, PM_TIMER_PORT, UART_BASE};
use crate::microvm::layout::{DATA_PAGE, DEFAULT_MEMORY};
use crate::microvm::{Error, VmConfig};

/// The modes the scenarios run in.
pub(crate) const MODES: [Mode; 2] = [Mode::Long64, Mode::User64];
/// The port of the virtio-style queue notification.
pub(crate) const NOTIFY_PORT: u16 = 0xc050;
/// Bytes the buffered console collects before one flush.
pub(crate) const CONSOLE_BUFFER: u32 = 64;

type EmitFn = fn(&mut Prog) -> Result<(), Error>;

/// One way of doing a scenario's logical operation.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Variant {
    pub name: &'static str,
    pub what: &'static str,
    irqchip: bool,
    ioeventfd: Option<u16>,
    /// Uses a privileged instruction (RDMSR): ring 0 only.
    kernel_only: bool,
    setup: EmitFn,
    body: EmitFn,
    expect_user_exits: Option<u64>,
}

/// A trap and its fix.
#[derive(Debug, Clone)]
pub(crate) struct Scenario {
    pub name: &'static str,
    pub title: &'static str,
    pub op: &'static str,
    pub trap: Variant,
    pub fixed: Variant,
    pub also: Vec<Variant>,
}

impl Scenario {
    /// Every variant, trap first, then fixed, then the others.
    pub(crate) fn variants(&self) -> Vec<Variant> {
        let mut v = vec![self.trap, self.fixed];
        v.extend(self.also.iter().copied());
        v
    }
}

/// The name of a variant's bench item.
pub(crate) fn item_name(scenario: &str, variant: &str) -> String {
    format!("{scenario}/{variant}")
}

fn nothing(_: &mut Prog) -> Result<(), Error> {
    Ok(())
}

/// The TSC page the fixed clock reads: sequence, scale (a plausible 0.4 ns per tick in
/// 64.64 fixed point; the guest never checks it) and offset.
fn tsc_page() -> Vec<u8> {
    let mut page = vec![0u8; 24];
    page[0..4].copy_from_slice(&2u32.to_le_bytes());
    page[8..16].copy_from_slice(&(((1u128 << 64) * 2 / 5) as u64).to_le_bytes());
    page[16..24].copy_from_slice(&1_000_000u64.to_le_bytes());
    page
}

/// Every scenario.
pub(crate) fn all() -> Vec<Scenario> {
    vec![
        Scenario {
            name: "clock_read",
            title: "clock reads through the ACPI PM timer (port IO emulated in the VMM)",
            op: "one clock read",
            trap: Variant {
                name: "acpi_pm_timer",
                what: "in eax, 0x608: the ACPI PM timer, answered by the VMM",
                irqchip: false,
                ioeventfd: None,
                kernel_only: false,
                setup: |p| Ok(p.a.mov(dx, u32::from(PM_TIMER_PORT))?),
                body: |p| Ok(p.a.in_(eax, dx)?),
                expect_user_exits: Some(1),
            },
            fixed: Variant {
                name: "tsc_page",
                what: "TSC-page read: sequence, rdtsc, scale and offset from RAM, no exit",
                irqchip: false,
                ioeventfd: None,
                kernel_only: false,
                setup: |p| p.point_at(DATA_PAGE),
                body: |p| {
                    let mut again = p.a.create_label();
                    p.a.mov(esi, dword_ptr(rbx))?;
                    p.a.set_label(&mut again)?;
                    p.a.rdtsc()?;
                    p.a.shl(rdx, 32)?;
                    p.a.or(rax, rdx)?;
                    p.a.mul(qword_ptr(rbx + 8))?;
                    p.a.mov(rax, rdx)?;
                    p.a.add(rax, qword_ptr(rbx + 16))?;
                    p.a.mov(ecx, dword_ptr(rbx))?;
                    p.a.cmp(ecx, esi)?;
                    p.a.mov(esi, ecx)?;
                    p.a.jne(again)?;
                    Ok(())
                },
                expect_user_exits: Some(0),
            },
            also: vec![Variant {
                name: "msr_tsc",
                what: "rdmsr 0x10 (IA32_TSC): an MSR handled in the kernel",
                irqchip: false,
                ioeventfd: None,
                kernel_only: true,
                setup: |p| Ok(p.a.mov(ecx, 0x10u32)?),
                body: |p| Ok(p.a.rdmsr()?),
                expect_user_exits: Some(0),
            }],
        },
        Scenario {
            name: "timer_program",
            title: "a timer programmed through an HPET-like MMIO device emulated in the VMM",
            op: "one timer re-arm",
            trap: Variant {
                name: "hpet_mmio",
                what: "read the HPET counter (0xfed000f0), write comparator 0 (0xfed00108): VMM",
                irqchip: false,
                ioeventfd: None,
                kernel_only: false,
                setup: |p| p.point_at(HPET_BASE),
                body: |p| {
                    p.a.mov(eax, dword_ptr(rbx + 0xf0))?;
                    p.a.add(eax, 100_000)?;
                    p.a.mov(dword_ptr(rbx + 0x108), eax)?;
                    Ok(())
                },
                expect_user_exits: Some(2),
            },
            fixed: Variant {
                name: "lapic_timer",
                what: "write the LAPIC timer's initial count (0xfee00380): in-kernel LAPIC",
                irqchip: true,
                ioeventfd: None,
                kernel_only: false,
                setup: |p| p.point_at(APIC_BASE),
                body: |p| Ok(p.a.mov(dword_ptr(rbx + 0x380), 100_000u32)?),
                expect_user_exits: Some(0),
            },
            also: Vec::new(),
        },
        Scenario {
            name: "apic_eoi",
            title: "interrupt-controller accesses (EOI) to an APIC page emulated in the VMM",
            op: "one EOI",
            trap: Variant {
                name: "apic_page_vmm",
                what: "write 0 to EOI (0xfee000b0) with the APIC emulated by the VMM",
                irqchip: false,
                ioeventfd: None,
                kernel_only: false,
                setup: |p| p.point_at(APIC_BASE),
                body: |p| Ok(p.a.mov(dword_ptr(rbx + 0xb0), 0u32)?),
                expect_user_exits: Some(1),
            },
            fixed: Variant {
                name: "apic_in_kernel",
                what: "the same EOI write, handled by the in-kernel LAPIC (KVM_CREATE_IRQCHIP)",
                irqchip: true,
                ioeventfd: None,
                kernel_only: false,
                setup: |p| p.point_at(APIC_BASE),
                body: |p| Ok(p.a.mov(dword_ptr(rbx + 0xb0), 0u32)?),
                expect_user_exits: Some(0),
            },
            also: Vec::new(),
        },
        Scenario {
            name: "serial_console",
            title: "a serial console that polls the line-status port (0x3fd) per byte",
            op: "one byte written to the console",
            trap: Variant {
                name: "uart_lsr_poll",
                what: "in al, 0x3fd until THRE, then out 0x3f8, al: two VMM exits per byte",
                irqchip: false,
                ioeventfd: None,
                kernel_only: false,
                setup: nothing,
                body: |p| {
                    let mut poll = p.a.create_label();
                    p.a.mov(dx, u32::from(UART_BASE + 5))?;
                    p.a.set_label(&mut poll)?;
                    p.a.in_(al, dx)?;
                    p.a.test(al, 0x20)?;
                    p.a.jz(poll)?;
                    p.a.mov(dx, u32::from(UART_BASE))?;
                    p.a.mov(al, u32::from(b'x'))?;
                    p.a.out(dx, al)?;
                    Ok(())
                },
                expect_user_exits: Some(2),
            },
            fixed: Variant {
                name: "buffered_write",
                what: "append the byte to a RAM buffer; one flush to the VMM per 64 bytes",
                irqchip: false,
                ioeventfd: None,
                kernel_only: false,
                setup: |p| {
                    p.point_at(DATA_PAGE + 0x100)?;
                    p.a.xor(ecx, ecx)?;
                    p.a.mov(dx, u32::from(USER_PORT))?;
                    Ok(())
                },
                body: |p| {
                    let mut kept = p.a.create_label();
                    p.a.mov(al, u32::from(b'x'))?;
                    p.a.mov(byte_ptr(rbx + rcx), al)?;
                    p.a.inc(ecx)?;
                    p.a.cmp(ecx, CONSOLE_BUFFER as i32)?;
                    p.a.jne(kept)?;
                    p.a.xor(ecx, ecx)?;
                    p.a.out(dx, al)?;
                    p.a.set_label(&mut kept)?;
                    Ok(())
                },
                expect_user_exits: None,
            },
            also: Vec::new(),
        },
        Scenario {
            name: "virtio_notify",
            title: "virtio-style queue notifications by a port write to the VMM",
            op: "one queue notification",
            trap: Variant {
                name: "notify_pio_vmm",
                what: "bump the avail index in RAM, out 0xc050, ax: answered by the VMM",
                irqchip: false,
                ioeventfd: None,
                kernel_only: false,
                setup: notify_setup,
                body: notify_body,
                expect_user_exits: Some(1),
            },
            fixed: Variant {
                name: "notify_ioeventfd",
                what: "the same, the port caught in the kernel by an ioeventfd",
                irqchip: false,
                ioeventfd: Some(NOTIFY_PORT),
                kernel_only: false,
                setup: notify_setup,
                body: notify_body,
                expect_user_exits: Some(0),
            },
            also: Vec::new(),
        },
    ]
}

fn notify_setup(p: &mut Prog) -> Result<(), Error> {
    p.point_at(DATA_PAGE + 0x800)?;
    p.a.mov(dx, u32::from(NOTIFY_PORT))?;
    p.a.xor(eax, eax)?;
    Ok(())
}

fn notify_body(p: &mut Prog) -> Result<(), Error> {
    p.a.inc(eax)?;
    p.a.mov(dword_ptr(rbx), eax)?;
    p.a.out(dx, ax)?;
    Ok(())
}

/// The bench item of one variant in `mode` (a 64-bit mode).
pub(crate) fn item(scenario: &Scenario, v: &Variant, mode: Mode) -> Item {
    let program = looped(mode, &|p| (v.setup)(p), &|p| (v.body)(p));
    Item {
        name: item_name(scenario.name, v.name),
        mode,
        what: v.what.to_string(),
        config: VmConfig {
            mem_bytes: DEFAULT_MEMORY,
            irqchip: v.irqchip,
            ..VmConfig::default()
        },
        program: program.map_err(program_error),
        unsupported: (v.kernel_only && mode.is_user())
            .then(|| "RDMSR at CPL3 raises #GP (a privileged instruction)".to_string()),
        ioeventfds: v
            .ioeventfd
            .map(|port| IoEventAddress::Pio(u64::from(port)))
            .into_iter()
            .collect(),
        coalesced: None,
        irqfd_port: None,
        data: if scenario.name == "clock_read" {
            vec![(DATA_PAGE, tsc_page())]
        } else {
            Vec::new()
        },
        expect_user_exits: v.expect_user_exits,
        baseline: false,
        fault_is_unsupported: false,
    }
}

/// Every variant's item in `mode`.
pub(crate) fn items(mode: Mode) -> Vec<Item> {
    all()
        .iter()
        .flat_map(|s| s.variants().into_iter().map(move |v| item(s, &v, mode)))
        .collect()
}

/// Replays one variant (`SCENARIO/VARIANT`, e.g. `clock_read/trap`) in 64-bit ring 0 until
/// `duration` has passed, calling `started` once it runs; returns the operations made.
pub fn replay(
    name: &str,
    duration: std::time::Duration,
    started: &mut dyn FnMut(),
) -> Result<u64, String> {
    let (scenario, variant) = name
        .split_once('/')
        .ok_or_else(|| format!("`{name}` is not SCENARIO/VARIANT (e.g. clock_read/trap)"))?;
    let (s, v) = find(scenario, variant)?;
    bench::replay(
        &item(&s, &v, Mode::Long64),
        std::time::Instant::now() + duration,
        started,
    )
}

/// A scenario and one of its variants, by name.
fn find(scenario: &str, variant: &str) -> Result<(Scenario, Variant), String> {
    let all = all();
    let names = || all.iter().map(|s| s.name).collect::<Vec<_>>().join(", ");
    let s = all
        .iter()
        .find(|s| s.name == scenario)
        .ok_or_else(|| format!("no scenario `{scenario}` (there are {})", names()))?;
    let v = match variant {
        "trap" => Some(s.trap),
        "fixed" => Some(s.fixed),
        _ => s.variants().into_iter().find(|v| v.name == variant),
    }
    .ok_or_else(|| {
        let vs: Vec<&str> = s.variants().iter().map(|v| v.name).collect();
        format!(
            "scenario `{scenario}` has no variant `{variant}` (it has trap, fixed, {})",
            vs.join(", ")
        )
    })?;
    Ok((s.clone(), v))
}

/// The seam for capture and `diagnose`: runs one variant of one scenario once (`ops`
/// logical operations, in a fresh micro-VM that is closed afterwards) and returns its exit
/// profile.
pub fn variant_profile(
    scenario: &str,
    variant: &str,
    mode: Mode,
    ops: u64,
) -> Result<Profile, String> {
    let (s, v) = find(scenario, variant)?;
    let plan = Plan {
        rounds: 1,
        ops: Some(ops),
        target_run: std::time::Duration::from_millis(1),
        probe_limit: std::time::Duration::from_millis(500),
        run_limit: std::time::Duration::from_secs(5),
        until: None,
    };
    let measured = bench::measure(&[item(&s, &v, mode)], &plan, &mut |_| {}, &mut Vec::new());
    let m = measured.first().ok_or("nothing was measured")?;
    match &m.reason {
        Some(why) => Err(why.clone()),
        None => Ok(super::profile::profile(m, &super::host_label())),
    }
}

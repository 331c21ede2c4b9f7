//! Two small costs every guest pays all the time: reading the clock (through the vDSO when
//! the clocksource allows it — tsc, kvm-clock, hyperv_clocksource_tsc_page — else through a
//! system call that reads an emulated device: acpi_pm, hpet, or the tick counter jiffies) and
//! entering the kernel (a raw `getppid`, which no libc caches).

use std::time::Instant;

use super::Probe;
use crate::schema::{Better, Measure};
use crate::{procfs, sys};

/// Clocksources whose reads cannot use the vDSO: each read is a system call, and in a VM
/// acpi_pm and hpet reads are port or MMIO accesses to an emulated device (a VM exit each).
pub(crate) const TRAPPING_CLOCKSOURCES: [&str; 3] = ["acpi_pm", "hpet", "jiffies"];

/// Clock-read cost.
pub(super) struct ClockRead {
    reads: u32,
}

impl ClockRead {
    pub(super) fn new(quick: bool) -> Self {
        ClockRead {
            reads: if quick { 20_000 } else { 200_000 },
        }
    }
}

impl Probe for ClockRead {
    fn measures(&self) -> Vec<Measure> {
        let current = procfs::clocksource().unwrap_or_else(|| "unknown".into());
        vec![
            Measure::new(
                "clock.read",
                "one clock_gettime(CLOCK_MONOTONIC)",
                "ns",
                Better::Lower,
                Vec::new(),
            )
            .with("clocksource", current)
            .with("available", procfs::clocksources_available().join(" ")),
        ]
    }

    fn sample(&mut self) -> Result<Vec<f64>, String> {
        let t = Instant::now();
        let mut last = t;
        for _ in 0..self.reads {
            last = std::hint::black_box(Instant::now());
        }
        let ns = last.duration_since(t).as_nanos() as f64 / f64::from(self.reads);
        Ok(vec![ns])
    }
}

/// System-call cost.
pub(super) struct Syscall {
    calls: u32,
}

impl Syscall {
    pub(super) fn new(quick: bool) -> Self {
        Syscall {
            calls: if quick { 20_000 } else { 200_000 },
        }
    }
}

impl Probe for Syscall {
    fn measures(&self) -> Vec<Measure> {
        vec![Measure::new(
            "syscall.getppid",
            "one raw getppid system call (kernel entry and exit)",
            "ns",
            Better::Lower,
            Vec::new(),
        )]
    }

    fn sample(&mut self) -> Result<Vec<f64>, String> {
        let t = Instant::now();
        for _ in 0..self.calls {
            std::hint::black_box(sys::raw_getppid());
        }
        Ok(vec![t.elapsed().as_nanos() as f64 / f64::from(self.calls)])
    }
}

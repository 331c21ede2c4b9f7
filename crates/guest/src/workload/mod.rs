//! `virtlens-guest workload KIND`: one known cause of VM exits, switched on inside a guest and
//! kept running for a while, so that the host sees that cause's exits and nothing else of note.
//! The causal lab (lab/ in the repository) boots guests that run one of these each; anyone can
//! run them in their own guest to see what a cause looks like from the host.
//!
//! Every kind prints one line when its loop starts (`workload KIND: running …`), which a
//! harness waits for, and one line at the end with the operations done and their rate.

mod cpus;
mod devices;
mod timing;

use std::io::Write;
use std::time::{Duration, Instant};

/// The kinds of workload, each one cause of exits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
pub enum Kind {
    /// Read the clock (CLOCK_MONOTONIC) in a loop: exits when the clocksource is a device
    ClockRead,
    /// Two threads on two CPUs wake each other through a futex: halt and wake-up per hand-over
    PingPong,
    /// Periodic interrupts from the RTC (/dev/rtc0) at --hz, each one read
    RtcIrq,
    /// Arithmetic on every CPU, no system calls: nothing for the host to do
    Compute,
    /// Threads take turns on one spin lock (PAUSE while waiting): lock-holder preemption when
    /// vCPUs outnumber host CPUs
    SpinLock,
    /// Write blocks to --path (e.g. a serial port) in a loop
    Write,
    /// Read --path with O_DIRECT in --block sizes, one request at a time (a disk)
    ReadDirect,
    /// Send UDP datagrams of --block bytes to --to in a loop (a NIC)
    UdpSend,
}

impl Kind {
    /// The name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Kind::ClockRead => "clock-read",
            Kind::PingPong => "ping-pong",
            Kind::RtcIrq => "rtc-irq",
            Kind::Compute => "compute",
            Kind::SpinLock => "spin-lock",
            Kind::Write => "write",
            Kind::ReadDirect => "read-direct",
            Kind::UdpSend => "udp-send",
        }
    }
}

/// What a workload is asked to do.
#[derive(Debug, Clone)]
pub(crate) struct Options {
    pub kind: Kind,
    pub duration: Duration,
    /// Threads (compute, spin-lock; default: one per online CPU).
    pub threads: usize,
    /// The device or file (write, read-direct).
    pub path: Option<String>,
    /// The destination (udp-send), `ADDR:PORT`.
    pub to: Option<String>,
    /// Interrupt rate (rtc-irq).
    pub hz: u64,
    /// Bytes per operation (write, read-direct, udp-send).
    pub block: usize,
}

/// What a workload did.
#[derive(Debug, Clone, Copy)]
pub struct Done {
    pub operations: u64,
    pub seconds: f64,
}

/// When a workload stops: `duration` after it started its loop.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Deadline(Instant);

impl Deadline {
    fn after(d: Duration) -> Self {
        Deadline(Instant::now() + d)
    }

    /// Checked every `every` operations (a clock read per operation would change what some
    /// workloads measure: the clock is what clock-read exercises).
    pub(crate) fn passed(self, ops: u64, every: u64) -> bool {
        ops.is_multiple_of(every) && Instant::now() >= self.0
    }
}

/// Runs the workload, printing the start line to `out` once its loop runs.
pub(crate) fn run(o: &Options, out: &mut dyn Write) -> Result<Done, String> {
    if o.threads == 0 || o.block == 0 {
        return Err("--threads and --block must be at least 1".into());
    }
    let started = Instant::now();
    let mut announce = |what: &str| {
        let _ = writeln!(
            out,
            "workload {}: running for {} s ({what})",
            o.kind.name(),
            o.duration.as_secs_f64()
        );
        let _ = out.flush();
    };
    let deadline = Deadline::after(o.duration);
    let operations = match o.kind {
        Kind::ClockRead => timing::clock_read(deadline, &mut announce),
        Kind::RtcIrq => timing::rtc_irq(o.hz, deadline, &mut announce)?,
        Kind::PingPong => cpus::ping_pong(deadline, &mut announce)?,
        Kind::Compute => cpus::compute(o.threads, deadline, &mut announce),
        Kind::SpinLock => cpus::spin_lock(o.threads, deadline, &mut announce),
        Kind::Write => devices::write(need(&o.path, "--path")?, o.block, deadline, &mut announce)?,
        Kind::ReadDirect => {
            devices::read_direct(need(&o.path, "--path")?, o.block, deadline, &mut announce)?
        }
        Kind::UdpSend => devices::udp_send(need(&o.to, "--to")?, o.block, deadline, &mut announce)?,
    };
    Ok(Done {
        operations,
        seconds: started.elapsed().as_secs_f64(),
    })
}

fn need<'a>(v: &'a Option<String>, flag: &str) -> Result<&'a str, String> {
    v.as_deref()
        .ok_or_else(|| format!("this workload needs {flag}"))
}

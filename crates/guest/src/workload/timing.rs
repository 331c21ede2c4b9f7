//! Workloads of the guest's time keeping: reading the clock, and periodic RTC interrupts.

use std::fs::File;
use std::io::Read;
use std::os::fd::AsRawFd;
use std::time::Instant;

use super::Deadline;
use crate::{procfs, sys};

/// Reads CLOCK_MONOTONIC (through the vDSO, or a system call when the clocksource cannot be
/// read from user space) until the deadline.
pub(super) fn clock_read(deadline: Deadline, announce: &mut dyn FnMut(&str)) -> u64 {
    let cs = procfs::clocksource().unwrap_or_else(|| "clocksource unknown".into());
    announce(&format!("clocksource {cs}"));
    let mut n = 0u64;
    loop {
        // Kept observable so the loop cannot be folded away. (It returned when the clock
        // stepped back: a nested guest's HPET did, and its workload ended after 5 s of the
        // 100,000 asked for.)
        std::hint::black_box(Instant::now());
        n += 1;
        if deadline.passed(n, 256) {
            return n;
        }
    }
}

/// Turns on the RTC's periodic interrupt at `hz` and reads `/dev/rtc0` once per interrupt.
pub(super) fn rtc_irq(
    hz: u64,
    deadline: Deadline,
    announce: &mut dyn FnMut(&str),
) -> Result<u64, String> {
    let mut rtc = File::open("/dev/rtc0").map_err(|e| format!("opening /dev/rtc0: {e}"))?;
    sys::rtc_periodic(rtc.as_raw_fd(), hz)
        .map_err(|e| format!("periodic RTC interrupts at {hz} Hz: {e}"))?;
    announce(&format!("RTC periodic interrupt at {hz} Hz"));
    let mut n = 0u64;
    let mut word = [0u8; 8];
    loop {
        rtc.read_exact(&mut word)
            .map_err(|e| format!("reading /dev/rtc0: {e}"))?;
        n += 1;
        if deadline.passed(n, 1) {
            let _ = sys::rtc_periodic_off(rtc.as_raw_fd());
            return Ok(n);
        }
    }
}

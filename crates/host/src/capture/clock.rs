//! The clocks a capture relates: the trace clock `mono` is CLOCK_MONOTONIC, so reading
//! CLOCK_MONOTONIC and the wall clock together gives the offset that turns event times into
//! Unix times (stored in the capture's metadata).

#![allow(unsafe_code)]

use std::time::{SystemTime, UNIX_EPOCH};

/// CLOCK_MONOTONIC now, in ns.
pub(crate) fn monotonic_ns() -> Option<u64> {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec for the duration of the call.
    let r = unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    if r != 0 {
        return None;
    }
    let secs = u64::try_from(ts.tv_sec).ok()?;
    let nanos = u64::try_from(ts.tv_nsec).ok()?;
    secs.checked_mul(1_000_000_000)?.checked_add(nanos)
}

/// Unix time minus CLOCK_MONOTONIC, in ns (add it to a `mono` event time for Unix time).
pub(crate) fn realtime_offset_ns() -> i64 {
    let mono = monotonic_ns().unwrap_or(0);
    let wall = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i64);
    wall - mono as i64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn monotonic_moves_forward_and_the_offset_is_recent() {
        let a = monotonic_ns().unwrap_or(0);
        let b = monotonic_ns().unwrap_or(0);
        assert!(a > 0 && b >= a);
        // after 2020-01-01
        assert!(realtime_offset_ns() > 1_577_836_800_000_000_000 - a as i64);
    }
}

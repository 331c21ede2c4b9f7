//! What share of a cause's exits its fix removes: the fractions behind the "expect −N exits"
//! lines users read, named here with the reason for each size. Rules pick the one that fits
//! their fix; a rule with a better estimate computes it from the input (`sched`: the
//! over-commit model's prediction; `halt`: whether polling already works).

/// The fix takes the cause away and nothing of it is left: a bug fixed, a fault storm's
/// pages mapped, a guest no longer spinning.
pub(crate) const REMOVED: f64 = 1.0;

/// The device or path is replaced by one that does not exit — the TSC page or kvm-clock for a
/// clock port, virtio for an emulated device, APICv for EOIs and ICR writes through MSRs — and a
/// tenth is left for boot, calibration and fallbacks.
pub(crate) const REPLACED: f64 = 0.9;

/// The fix stops most of the exits; the rest are the workload's own: timer re-arms left once
/// the tick stops when idle, notifications left at queue depth one.
pub(crate) const MOSTLY: f64 = 0.8;

/// The fix makes most of them rarer or cheaper, but the guest keeps a part it needs: IPIs
/// that paravirtual IPIs or posted interrupts absorb, NPFs once huge pages back the memory,
/// MSR accesses of which the hot ones go.
pub(crate) const LARGELY: f64 = 0.7;

/// The fix treats one of several causes; the guest's contention or workload decides the rest
/// (hypercalls, pause loops behind lock waits, a hot MSR, nested exits).
pub(crate) const HALF: f64 = 0.5;

/// The fix moves only part of them: host interrupts steered off the vCPUs' CPUs still tick.
pub(crate) const PART: f64 = 0.3;

/// Nothing to remove: context (idle, polling), a crash, or a reading whose effect is not a
/// count of exits (performance counters, names virtlens cannot read).
pub(crate) const NOTHING: f64 = 0.0;

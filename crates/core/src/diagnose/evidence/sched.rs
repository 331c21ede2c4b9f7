//! Scheduler evidence: the vCPU threads' schedstat samples a live capture took on the host
//! (`Profile::sched`), as shares — each vCPU's ready share (runnable, not running, over wall
//! time) and wait per dispatch, each VM's mean, the runnable vCPUs per host CPU, the host's
//! busy CPUs, other load and its own steal. A profile's samples go to its first input only (a
//! file of several labelled runs would otherwise count them once per run).

use crate::analysis::sched::{SchedSummary, summarize};
use crate::profile::{Profile, Table};

/// The scheduler evidence of the input made of `tables` of `profile`.
pub(crate) fn of(profile: &Profile, tables: &[&Table]) -> Option<SchedSummary> {
    let samples = profile.sched.as_ref().filter(|s| !s.is_empty())?;
    let first = match (profile.tables.first(), tables.first()) {
        (None, _) => true,
        (Some(a), Some(b)) => std::ptr::eq(a, *b),
        (Some(_), None) => false,
    };
    first.then(|| summarize(samples))
}

//! Hyper-V (and esxtop) performance counters as evidence: the per-VM VP metrics, esxtop's
//! ready / co-stop per VM and the `hv.*` readings of [`crate::counters::hv`], with the IO rate
//! when given (intercepts and interrupts per IO). `hypotheses::hv` turns the readings into
//! hypotheses; this file only gathers.

use crate::counters::hv::{self, EsxVm, HvFinding, VpMetrics};
use crate::profile::Profile;

/// What a counter log says.
#[derive(Debug, Clone)]
pub struct HvEvidence {
    pub vps: Vec<VpMetrics>,
    pub esx: Vec<EsxVm>,
    pub readings: Vec<HvFinding>,
    /// Samples in the log, and the time they span.
    pub samples: u64,
    pub duration_s: Option<f64>,
}

impl HvEvidence {
    /// The counters of `profile`, when it carries any.
    pub fn of(profile: &Profile, iops: Option<f64>) -> Option<HvEvidence> {
        let log = profile.counters.as_ref()?;
        Some(HvEvidence {
            vps: hv::vp_metrics(log),
            esx: hv::esx_vms(log),
            readings: hv::findings(log, iops),
            samples: log.header.samples,
            duration_s: log.header.duration_s,
        })
    }

    /// Whether the log holds anything the rules read.
    pub fn is_empty(&self) -> bool {
        self.vps.is_empty() && self.esx.is_empty()
    }
}

//! The words of `cpuid.*`: CPUID in a hot loop.

use super::fixes::F;
use super::sources::*;
use super::{Description, W, Words};
use crate::diagnose::hypotheses::CpuidRule;
use crate::diagnose::model::ForGuest;
pub(super) fn describe(id: CpuidRule) -> Description {
    match id {
        CpuidRule::Storm => Description {
            title: "CPUID leads the exit handling",
            meaning: "Every CPUID exits: a guest running it in a hot loop (timing code, feature checks on every \
                      call) pays an exit each time.",
            sources: &[PERF_KVM],
        },
    }
}

pub(super) fn write(_w: &W<'_>, id: CpuidRule) -> Words {
    match id {
        CpuidRule::Storm => Words {
            cause: "Every CPUID instruction exits. A guest running it in a hot loop — timing code that \
                    serializes with CPUID, a runtime re-checking features, a VM-detection loop — pays an \
                    exit each time."
                .into(),
            fixes: vec![F::new(
                ForGuest::Any,
                "find the code (guest perf on the exiting rip) and cache the feature checks; use RDTSCP or \
                 LFENCE instead of CPUID to serialize timing",
            )
            .done()],
            effect: "CPUID exits fall to what boot and feature discovery need".into(),
            ..Words::default()
        },
    }
}

//! The words of `hv.*` in diagnose: the prose of [`crate::counters::words`] (what `virtlens
//! counters` prints), as diagnose's causes and fixes, with public sources. The over-commit
//! fixes (esxtop ready / co-stop, Hyper-V CPU wait) are in [`overcommit::fixes`], one function,
//! so that they can be shared with the KVM ready-time findings (`sched.*`).

use super::fixes::F;
use super::overcommit::{self, READY_MEANS};
use super::sources::*;
use super::{Description, W, Words};
use crate::counters::words;
use crate::diagnose::hypotheses::HvRule;
use crate::diagnose::model::ForGuest;

pub(super) fn describe(id: HvRule) -> Description {
    let (meaning, sources): (&'static str, &'static [crate::diagnose::model::Source]) = match id {
        HvRule::HypervisorTime => (
            "The VPs' `% Hypervisor Run Time` is a large share of their run time: intercepts (interrupts, \
             EOIs, IPIs, emulated IO, hypercalls) take time from the guest.",
            &[MS_HYPERV_BOTTLENECKS, PAL_HYPERV],
        ),
        HvRule::InterruptDelivery => (
            "Most of the VPs' intercepts are external interrupts, EOI accesses and IPIs: interrupt \
             delivery without hardware help, two or more intercepts per IO at high IO rates.",
            &[SNIA_10M_IOPS, ELI_2012, MS_HYPERV_BOTTLENECKS],
        ),
        HvRule::Overcommit => (
            READY_MEANS,
            &[
                VMWARE_READY_KB,
                HYPERV_DISPATCH_WAIT,
                IBM_CPU_READY,
                MS_HYPERV_BOTTLENECKS,
            ],
        ),
        HvRule::CpuLimit => (
            "esxtop's %MLMTD: the VM was ready but held back by its CPU limit.",
            &[VMWARE_READY_KB],
        ),
    };
    Description {
        title: words::of(id).title,
        meaning,
        sources,
    }
}

pub(super) fn write(_: &W<'_>, id: HvRule) -> Words {
    let prose = words::of(id);
    let fixes = match id {
        HvRule::Overcommit => overcommit::fixes(),
        HvRule::HypervisorTime | HvRule::InterruptDelivery | HvRule::CpuLimit => prose
            .fix
            .iter()
            .map(|f| F::new(ForGuest::Any, f.trim_end_matches('.')).done())
            .collect(),
    };
    Words {
        cause: prose.cause.to_string(),
        fixes,
        effect: match id {
            HvRule::InterruptDelivery => {
                "interrupts delivered without intercepts: fewer intercepts per IO, more IOPS per VP"
                    .into()
            }
            HvRule::HypervisorTime => "VP time returns to the guest".into(),
            HvRule::Overcommit | HvRule::CpuLimit => "vCPUs run when they are ready".into(),
        },
        confirm: None,
        check: None,
        title: None,
    }
}

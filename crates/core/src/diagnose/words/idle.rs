//! The words of `idle.*`: the guest waiting, which is not overhead.

use super::fixes::F;
use super::sources::*;
use super::{Description, W, Words};
use crate::decode::Isa;
use crate::diagnose::hypotheses::IdleRule;
use crate::diagnose::model::ForGuest;
pub(super) fn describe(id: IdleRule) -> Description {
    match id {
        IdleRule::Hlt => Description {
            title: "the guest is mostly idle: halts dominate",
            meaning: "HLT means the vCPU had nothing to run; KVM counts the time until the next interrupt as \
                      the exit's handling time, so halts dominate an idle guest's Time%. It is the guest \
                      waiting, not the cost of virtualization.",
            sources: &[PERF_KVM, HALT_POLL_DOC],
        },
    }
}

pub(super) fn write(w: &W<'_>, id: IdleRule) -> Words {
    let halt = match w.ev.isa() {
        Some(Isa::Arm64) => "WFI (WFx exits)",
        Some(Isa::Riscv) => "WFI",
        _ => "HLT",
    };
    match id {
        IdleRule::Hlt => Words {
            cause: format!(
                "{halt} means the vCPU had nothing to run and halted; KVM counts the time until the next \
                 interrupt as the exit's handling time, so halts dominate the Time% of an idle guest. \
                 virtlens keeps it apart from the cost of virtualization."
            ),
            fixes: vec![
                F::new(
                    ForGuest::Any,
                    "nothing to fix; only when wake-up latency matters, poll instead of halting",
                )
                .host("halt polling: kvm.halt_poll_ns (trades host CPU for wake-up latency)")
                .done(),
            ],
            effect: "no change in throughput".into(),
            ..Words::default()
        },
    }
}

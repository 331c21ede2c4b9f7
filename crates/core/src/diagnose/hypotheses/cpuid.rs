//! `cpuid.*`: CPUID, which exits on every call, in a guest's hot loop (it runs at boot and
//! now and then; it is a cause only when it leads the exit handling).

use super::hypercall::{SHARE, dominating};
use super::{Ctx, rules};

rules! {
    /// The rules of `cpuid.*`.
    pub enum CpuidRule in Cpuid {
        Storm {
            id: "cpuid.storm",
            tag: "cpuid.storm",
            role: Problem,
            thresholds: SHARE,
        },
    }
}

pub(crate) fn check(ctx: &mut Ctx<'_>) {
    dominating(ctx, CpuidRule::Storm.into(), &["CPUID", "cpuid"]);
}

//! Exit-reason names: every era's spelling mapped to the canonical entry, and a guess of the ISA
//! from the names a capture prints.
//!
//! # Name lookup
//!
//! A name is matched, per ISA, at one of three ranks (lower is better):
//! 0. exactly the canonical name (`APIC_ACCESS` for VMX, `npf` for SVM, `HC_WRMSR` for PVM);
//! 1. exactly another known spelling: `EXIT_REASON_HLT` (bcc), `PENDING_INTERRUPT` (Linux before
//!    5.6, libtraceevent), the ~2010 lowercase VMX names (`ext_irq`, `halt`, `io_instruction`),
//!    libtraceevent's SVM names (`EXIT_NPF`, `EXIT_IOIO`), the kernel `#define`s (`SVM_EXIT_NPF`,
//!    `PVM_EXIT_REASONS_ERETS`);
//! 2. any of the above ignoring ASCII case (`apic_access`, `external_interrupt`, `Npf`).
//!
//! With an ISA given, the best match under that ISA wins. Without one, the ISA whose best match
//! has the strictly lowest rank wins, and a tie returns `None`. So the case the kernel uses
//! decides: `HLT` is VMX, `hlt` is SVM; `cpuid`, `wbinvd`, `task_switch` and `hypercall` are
//! SVM (today's SVM spelling beats the 2010 VMX spelling; both mean the same class of exit),
//! and names that are canonical in two ISAs (`PF excp` in SVM and PVM, `Cpuid` in mixed case)
//! stay unresolved until the caller knows the ISA.

use std::collections::HashMap;
use std::sync::LazyLock;

use super::exit_arm64::{ARM64_ALIASES, ARM64_EXITS, ARM64_PREFIXES};
use super::exit_pvm::{PVM_EXITS, PVM_PREFIXES};
use super::exit_reason::{ExitReasonInfo, Isa, lookup_code};
use super::exit_riscv::{RISCV_EXITS, RISCV_PREFIXES};
use super::exit_svm::{SVM_ALIASES, SVM_DEFINES, SVM_EXITS};
use super::exit_vmx::{VMX_ALIASES, VMX_EXITS, VMX_PREFIXES};

/// The reason with this name in any era's spelling (see the module docs for how ties between
/// ISAs are broken when `isa` is `None`).
pub fn lookup_name(isa: Option<Isa>, name: &str) -> Option<&'static ExitReasonInfo> {
    let ranks = resolve(name);
    match isa {
        Some(isa) => ranks[isa.index()].map(|(info, _)| info),
        None if generic(name) => None,
        None => unique_best(&ranks)
            .map(|i| ranks[i])
            .and_then(|r| r.map(|(info, _)| info)),
    }
}

/// The ISA that the given names most likely come from, or `None` when no name resolves or two
/// ISAs score the same. A name that resolves under one ISA only counts 3 for it; a name that
/// resolves under several counts 1 for each, plus 2 for the one where it matches best (if one
/// does). So `EXIT_NPF`, `npf`, `vintr`, `msr`, `io`, `interrupt` point to SVM, uppercase kernel
/// names and `EXIT_REASON_*` to VMX, `HC_*`, `ERETU`, `SYSCALL` to PVM.
pub fn guess_isa<'a>(names: impl IntoIterator<Item = &'a str>) -> Option<Isa> {
    let mut score = [0u64; Isa::ALL.len()];
    for name in names.into_iter().filter(|n| !generic(n)) {
        let ranks = resolve(name);
        let hits = ranks.iter().filter(|r| r.is_some()).count();
        match hits {
            0 => {}
            1 => {
                if let Some(i) = ranks.iter().position(Option::is_some) {
                    score[i] += 3;
                }
            }
            _ => {
                for (i, r) in ranks.iter().enumerate() {
                    if r.is_some() {
                        score[i] += 1;
                    }
                }
                if let Some(i) = unique_best(&ranks) {
                    score[i] += 2;
                }
            }
        }
    }
    let max = score.iter().copied().max().unwrap_or(0);
    if max == 0 || score.iter().filter(|&&s| s == max).count() > 1 {
        return None;
    }
    score.iter().position(|&s| s == max).map(|i| Isa::ALL[i])
}

/// Names too common to say which ISA a capture is from (arm64's class 0 `UNKNOWN` is also what
/// tools print for codes they cannot name; `IRQ` is a word of every architecture): they resolve
/// only under an ISA known otherwise, and do not count for [`guess_isa`].
fn generic(name: &str) -> bool {
    let name = name.trim();
    name.eq_ignore_ascii_case("UNKNOWN") || name.eq_ignore_ascii_case("IRQ")
}

type Ranked = Option<(&'static ExitReasonInfo, u8)>;

/// The index of the ISA with the strictly best (lowest) rank.
fn unique_best(ranks: &[Ranked; Isa::ALL.len()]) -> Option<usize> {
    let best = ranks.iter().filter_map(|r| r.map(|(_, k)| k)).min()?;
    let mut at = ranks
        .iter()
        .enumerate()
        .filter(|(_, r)| r.map(|(_, k)| k) == Some(best));
    let first = at.next().map(|(i, _)| i);
    if at.next().is_some() { None } else { first }
}

/// The best match of `name` under each ISA.
fn resolve(name: &str) -> [Ranked; Isa::ALL.len()] {
    let name = name.trim();
    let mut out: [Ranked; Isa::ALL.len()] = [None; Isa::ALL.len()];
    if name.is_empty() {
        return out;
    }
    let Some(cands) = INDEX.get(&name.to_ascii_lowercase()) else {
        return out;
    };
    for c in cands {
        let rank = if c.spelling == name { c.rank } else { 2 };
        let slot = &mut out[c.info.isa.index()];
        if slot.is_none_or(|(_, r)| rank < r) {
            *slot = Some((c.info, rank));
        }
    }
    out
}

/// One known spelling of one reason.
struct Candidate {
    info: &'static ExitReasonInfo,
    spelling: String,
    rank: u8,
}

/// Lowercased spelling → every reason spelled that way.
static INDEX: LazyLock<HashMap<String, Vec<Candidate>>> = LazyLock::new(build_index);

fn build_index() -> HashMap<String, Vec<Candidate>> {
    let mut map: HashMap<String, Vec<Candidate>> = HashMap::new();
    let mut add = |info: &'static ExitReasonInfo, spelling: String, rank: u8| {
        map.entry(spelling.to_ascii_lowercase())
            .or_default()
            .push(Candidate {
                info,
                spelling,
                rank,
            });
    };
    let by_code = |isa: Isa, code: u64| lookup_code(isa, code);

    for info in VMX_EXITS {
        add(info, info.name.to_string(), 0);
        for p in VMX_PREFIXES {
            add(info, format!("{p}{}", info.name), 1);
        }
    }
    for (alias, code) in VMX_ALIASES {
        if let Some(info) = by_code(Isa::Vmx, *code) {
            add(info, (*alias).to_string(), 1);
            for p in VMX_PREFIXES {
                add(info, format!("{p}{alias}"), 1);
            }
        }
    }

    for info in SVM_EXITS {
        add(info, info.name.to_string(), 0);
    }
    for (code, define) in SVM_DEFINES {
        if let Some(info) = by_code(Isa::Svm, *code) {
            add(info, (*define).to_string(), 1);
            add(info, format!("SVM_{define}"), 1);
            if let Some(bare) = define.strip_prefix("EXIT_") {
                add(info, bare.to_string(), 1);
            }
        }
    }
    for (alias, code) in SVM_ALIASES {
        if let Some(info) = by_code(Isa::Svm, *code) {
            add(info, (*alias).to_string(), 1);
        }
    }

    for info in PVM_EXITS {
        add(info, info.name.to_string(), 0);
        for p in PVM_PREFIXES {
            add(info, format!("{p}{}", info.name), 1);
        }
    }

    for info in ARM64_EXITS {
        add(info, info.name.to_string(), 0);
        for p in ARM64_PREFIXES {
            add(info, format!("{p}{}", info.name), 1);
        }
    }
    for (alias, code) in ARM64_ALIASES {
        if let Some(info) = by_code(Isa::Arm64, *code) {
            add(info, (*alias).to_string(), 1);
        }
    }

    for info in RISCV_EXITS {
        add(info, info.name.to_string(), 0);
        // perf before Linux 6.17 printed the names without their prefix.
        if let Some(bare) = RISCV_PREFIXES
            .iter()
            .find_map(|p| info.name.strip_prefix(p))
        {
            add(info, bare.to_string(), 1);
        }
    }
    map
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode::exit_reason::ExitClass;

    fn name(isa: Option<Isa>, n: &str) -> Option<(Isa, &'static str)> {
        lookup_name(isa, n).map(|i| (i.isa, i.name))
    }

    #[test]
    fn classes_of_note() {
        let class = |isa, n| lookup_name(Some(isa), n).map(|i| i.class);
        assert_eq!(class(Isa::Vmx, "HLT"), Some(ExitClass::Idle));
        assert_eq!(class(Isa::Vmx, "MWAIT_INSTRUCTION"), Some(ExitClass::Idle));
        assert_eq!(class(Isa::Vmx, "EPT_MISCONFIG"), Some(ExitClass::Mmio));
        assert_eq!(class(Isa::Vmx, "EPT_VIOLATION"), Some(ExitClass::Mmu));
        assert_eq!(class(Isa::Vmx, "APIC_WRITE"), Some(ExitClass::Apic));
        assert_eq!(class(Isa::Vmx, "EOI_INDUCED"), Some(ExitClass::Apic));
        assert_eq!(
            class(Isa::Vmx, "TPR_BELOW_THRESHOLD"),
            Some(ExitClass::Apic)
        );
        assert_eq!(class(Isa::Vmx, "PAUSE_INSTRUCTION"), Some(ExitClass::Spin));
        assert_eq!(class(Isa::Vmx, "VMCALL"), Some(ExitClass::Hypercall));
        assert_eq!(class(Isa::Vmx, "TDCALL"), Some(ExitClass::Hypercall));
        assert_eq!(class(Isa::Vmx, "CPUID"), Some(ExitClass::Cpuid));
        assert_eq!(class(Isa::Vmx, "PML_FULL"), Some(ExitClass::Mmu));
        assert_eq!(class(Isa::Vmx, "NMI_WINDOW"), Some(ExitClass::Interrupt));
        assert_eq!(class(Isa::Svm, "mwait"), Some(ExitClass::Idle));
        assert_eq!(class(Isa::Svm, "vmgexit"), Some(ExitClass::Hypercall));
    }

    #[test]
    fn every_spelling() {
        let vmx = Some(Isa::Vmx);
        let svm = Some(Isa::Svm);
        // Today's kernel, uppercase VMX.
        assert_eq!(name(None, "APIC_ACCESS"), Some((Isa::Vmx, "APIC_ACCESS")));
        assert_eq!(
            name(None, "EXTERNAL_INTERRUPT"),
            Some((Isa::Vmx, "EXTERNAL_INTERRUPT"))
        );
        // Linux < 5.6 and libtraceevent.
        assert_eq!(
            name(None, "PENDING_INTERRUPT"),
            Some((Isa::Vmx, "INTERRUPT_WINDOW"))
        );
        assert_eq!(
            name(None, "pending_interrupt"),
            Some((Isa::Vmx, "INTERRUPT_WINDOW"))
        );
        // ~2010 lowercase VMX.
        for (old, new) in [
            ("apic_access", "APIC_ACCESS"),
            ("io_instruction", "IO_INSTRUCTION"),
            ("external_interrupt", "EXTERNAL_INTERRUPT"),
            ("ext_irq", "EXTERNAL_INTERRUPT"),
            ("exception", "EXCEPTION_NMI"),
            ("cr_access", "CR_ACCESS"),
            ("ept_violation", "EPT_VIOLATION"),
            ("mwait_instruction", "MWAIT_INSTRUCTION"),
            ("halt", "HLT"),
            ("interrupt_window", "INTERRUPT_WINDOW"),
            ("tpr_below_thres", "TPR_BELOW_THRESHOLD"),
            ("rdmsr", "MSR_READ"),
            ("wrmsr", "MSR_WRITE"),
        ] {
            assert_eq!(name(None, old), Some((Isa::Vmx, new)), "{old}");
        }
        assert_eq!(name(vmx, "wbinvd"), Some((Isa::Vmx, "WBINVD")));
        assert_eq!(name(vmx, "hypercall"), Some((Isa::Vmx, "VMCALL")));
        // bcc.
        assert_eq!(name(None, "EXIT_REASON_HLT"), Some((Isa::Vmx, "HLT")));
        assert_eq!(
            name(None, "EXIT_REASON_PENDING_INTERRUPT"),
            Some((Isa::Vmx, "INTERRUPT_WINDOW"))
        );
        assert_eq!(name(None, "TPAUSEN/A"), Some((Isa::Vmx, "TPAUSE")));
        assert_eq!(name(svm, "EXIT_REASON_HLT"), None);
        // libtraceevent SVM.
        for (old, new) in [
            ("EXIT_NPF", "npf"),
            ("EXIT_MSR", "msr"),
            ("EXIT_IOIO", "io"),
            ("EXIT_HLT", "hlt"),
            ("EXIT_INTR", "interrupt"),
            ("EXIT_VINTR", "vintr"),
            ("EXIT_PAUSE", "pause"),
            ("EXIT_RSM", "rsm"),
            ("EXIT_READ_CR0", "read_cr0"),
            ("EXIT_EXCP_BASE", "DE excp"),
            ("EXIT_TR_READ", "read_rt"),
            ("EXIT_MWAIT_COND", "mwait_cond"),
            ("EXIT_ERR", "invalid_guest_state"),
        ] {
            assert_eq!(name(None, old), Some((Isa::Svm, new)), "{old}");
        }
        // Kernel SVM lowercase and #defines.
        for (old, new) in [
            ("npf", "npf"),
            ("io", "io"),
            ("msr", "msr"),
            ("interrupt", "interrupt"),
            ("intr", "interrupt"),
            ("vintr", "vintr"),
            ("hlt", "hlt"),
            ("ioio", "io"),
            ("vmmcall", "hypercall"),
            ("idle-halt", "idle-halt"),
            ("mwait_conditional", "mwait_cond"),
            ("avic_incomplete_ipi", "avic_incomplete_ipi"),
            ("SVM_EXIT_NPF", "npf"),
            (
                "SVM_EXIT_AVIC_UNACCELERATED_ACCESS",
                "avic_unaccelerated_access",
            ),
            ("SVM_VMGEXIT_PSC", "vmgexit_page_state_change"),
            ("NPF", "npf"),
        ] {
            assert_eq!(name(None, old), Some((Isa::Svm, new)), "{old}");
        }
        // PVM.
        assert_eq!(name(None, "HC_IRQ_HALT"), Some((Isa::Pvm, "HC_IRQ_HALT")));
        assert_eq!(
            name(None, "PVM_EXIT_REASONS_ERETS"),
            Some((Isa::Pvm, "ERETS"))
        );
        assert_eq!(name(None, "INTERRUPT"), Some((Isa::Pvm, "INTERRUPT")));
        // Whitespace is ignored; unknown stays unknown.
        assert_eq!(name(None, "  HLT "), Some((Isa::Vmx, "HLT")));
        assert_eq!(name(None, "UNKNOWN"), None);
        assert_eq!(name(None, "UNKNOWN(0x20000)"), None);
        assert_eq!(name(None, ""), None);
    }

    #[test]
    fn ambiguity_rules() {
        // The case the kernel prints decides.
        assert_eq!(name(None, "HLT"), Some((Isa::Vmx, "HLT")));
        assert_eq!(name(None, "hlt"), Some((Isa::Svm, "hlt")));
        assert_eq!(name(None, "CPUID"), Some((Isa::Vmx, "CPUID")));
        // Today's SVM spelling beats the 2010 VMX one.
        assert_eq!(name(None, "cpuid"), Some((Isa::Svm, "cpuid")));
        assert_eq!(name(None, "hypercall"), Some((Isa::Svm, "hypercall")));
        // Canonical in two ISAs, or mixed case matching two: unresolved without an ISA.
        assert_eq!(name(None, "PF excp"), None);
        assert_eq!(name(None, "Cpuid"), None);
        assert_eq!(name(Some(Isa::Svm), "PF excp"), Some((Isa::Svm, "PF excp")));
        assert_eq!(name(Some(Isa::Pvm), "PF excp"), Some((Isa::Pvm, "PF excp")));
        // With the ISA given, case does not matter.
        assert_eq!(name(Some(Isa::Svm), "HLT"), Some((Isa::Svm, "hlt")));
        assert_eq!(name(Some(Isa::Vmx), "hlt"), Some((Isa::Vmx, "HLT")));
        assert_eq!(name(Some(Isa::Vmx), "npf"), None);
    }

    #[test]
    fn guess_isa_on_samples() {
        // 06: perf kvm stat on AMD.
        assert_eq!(guess_isa(["interrupt", "msr", "vintr"]), Some(Isa::Svm));
        // 17: perf kvm stat live, SEV-ES.
        assert_eq!(guess_isa(["interrupt", "pause"]), Some(Isa::Svm));
        // 13: modern Intel.
        let s13 = [
            "MSR_WRITE",
            "HLT",
            "IO_INSTRUCTION",
            "APIC_WRITE",
            "EXTERNAL_INTERRUPT",
            "PREEMPTION_TIMER",
            "EPT_MISCONFIG",
            "MSR_READ",
            "PAUSE_INSTRUCTION",
        ];
        assert_eq!(guess_isa(s13), Some(Isa::Vmx));
        // 30: trace-cmd with libtraceevent's SVM names.
        assert_eq!(guess_isa(["EXIT_NPF"]), Some(Isa::Svm));
        // 01: bcc.
        let s01 = [
            "EXIT_REASON_HLT",
            "EXIT_REASON_MSR_WRITE",
            "EXIT_REASON_EXTERNAL_INTERRUPT",
        ];
        assert_eq!(guess_isa(s01), Some(Isa::Vmx));
        // 09: 2012 perf.
        let s09 = [
            "APIC_ACCESS",
            "EXTERNAL_INTERRUPT",
            "CPUID",
            "HLT",
            "EPT_VIOLATION",
            "PENDING_INTERRUPT",
            "EXCEPTION_NMI",
            "IO_INSTRUCTION",
            "CR_ACCESS",
        ];
        assert_eq!(guess_isa(s09), Some(Isa::Vmx));
        // 21 and 24.
        assert_eq!(
            guess_isa(["MSR_WRITE", "HLT", "EPT_MISCONFIG"]),
            Some(Isa::Vmx)
        );
        assert_eq!(guess_isa(["TRIPLE_FAULT"]), Some(Isa::Vmx));
        // virt-pvm issue #10.
        let pvm = ["HC_WRMSR", "PF excp", "ERETS", "HC_IRQ_HALT", "HC_RDMSR"];
        assert_eq!(guess_isa(pvm), Some(Isa::Pvm));
        // Nothing resolves, or a true tie.
        assert_eq!(guess_isa(["UNKNOWN", "frobnicate"]), None);
        assert_eq!(guess_isa(std::iter::empty::<&str>()), None);
        assert_eq!(guess_isa(["PF excp"]), None);
        // arm64 (perf kvm stat, kvm_stat, the bcc aarch64 script) and RISC-V (both perf eras).
        let arm = ["DABT_LOW", "IRQ", "WFx", "IABT_LOW", "SYS64", "HVC64"];
        assert_eq!(guess_isa(arm), Some(Isa::Arm64));
        assert_eq!(guess_isa(["EC_WFx", "EC_SYS64"]), Some(Isa::Arm64));
        assert_eq!(
            name(Some(Isa::Arm64), "UNKNOWN"),
            Some((Isa::Arm64, "UNKNOWN"))
        );
        assert_eq!(name(Some(Isa::Arm64), "IRQ"), Some((Isa::Arm64, "IRQ")));
        assert_eq!(name(None, "IRQ"), None);
        let old = [
            "STORE_GUEST_PAGE_FAULT",
            "UNKNOWN",
            "VIRTUAL_INST_FAULT",
            "SUPERVISOR_SYSCALL",
        ];
        assert_eq!(guess_isa(old), Some(Isa::Riscv));
        assert_eq!(
            name(Some(Isa::Riscv), "STORE_GUEST_PAGE_FAULT"),
            Some((Isa::Riscv, "EXC_STORE_GUEST_PAGE_FAULT"))
        );
        assert_eq!(
            guess_isa(["IRQ_S_TIMER", "EXC_LOAD_GUEST_PAGE_FAULT"]),
            Some(Isa::Riscv)
        );
        assert_eq!(name(Some(Isa::Riscv), "UNKNOWN"), None);
    }
}

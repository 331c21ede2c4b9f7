//! `unknown.*`: exits virtlens cannot name — codes no exit table knows, rows the tool itself
//! printed as `UNKNOWN`, names of another architecture — kept and shown, with what they may be
//! and how to get them named; the nested-SVM `rsm`-then-#GP signature; and a guest that
//! triple-faulted (a crash whose cause the exits cannot tell).
//! Reference: DESIGN.md (unknown codes kept numerically), testdata/exit-reports/34 (RISC-V
//! UNKNOWN events were interrupts), exit-tools §4 (nested SVM EXIT_RSM then #GP).

use super::context::Ctx;
use super::finding::{Confidence, Finding, Fix, Severity};
use super::grade;
use super::view::{VRow, known_exit};
use super::words;
use crate::profile::Key;

const SRC_UNKNOWN: &str = "DESIGN.md (unknown exit codes are kept numerically); testdata/exit-reports/34 \
     (ruyisdk/linux-xuantie-kernel PR #247, backport of upstream 3b7270c76622 \"RISC-V: perf/kvm: Add \
     reporting of interrupt events\")";
const SRC_RSM: &str = "exit-tools §4 (nested SVM, WS2016/Hyper-V boot: EXIT_RSM then #GP; Vitaly Kuznetsov, \
     kvm@ 2021-06-28, 20210628104425.391276-5-vkuznets@redhat.com)";

/// RISC-V KVM's exit and interrupt names, as perf kvm stat prints them.
fn riscv(name: &str) -> bool {
    [
        "GUEST_PAGE_FAULT",
        "VIRTUAL_INST_FAULT",
        "SUPERVISOR_SYSCALL",
        "IRQ_S_",
        "IRQ_VS_",
    ]
    .iter()
    .any(|k| name.contains(k))
}

pub fn check(ctx: &Ctx<'_>, out: &mut Vec<Finding>) {
    rsm(ctx, out);
    triple(ctx, out);
    let Some(ex) = ctx.exits().filter(|p| !p.from_counters) else {
        return;
    };
    let foreign: Vec<&VRow> = ex
        .rows
        .iter()
        .filter(|r| matches!(r.key, Key::Exit { .. }) && !known_exit(&r.key, ctx.view.isa))
        .collect();
    let unnamed: Vec<&VRow> = foreign
        .iter()
        .copied()
        .filter(|r| r.exit_name().is_some_and(|n| n.starts_with("UNKNOWN")))
        .collect();
    let is_riscv = foreign.iter().any(|r| r.exit_name().is_some_and(riscv));
    let rows = if unnamed.is_empty() {
        &foreign
    } else {
        &unnamed
    };
    if rows.is_empty() {
        return;
    }
    let value = ex.share_of(rows);
    let severity = if value >= grade::SECONDARY {
        Severity::Low
    } else {
        Severity::Info
    };
    let (cause, fix) = if is_riscv && !unnamed.is_empty() {
        (
            "These are RISC-V KVM's exit names (virtlens's rules know x86: VMX, SVM, PVM). The rows printed \
             as UNKNOWN are exits the tool could not name: perf kvm stat on RISC-V printed interrupt exits \
             as UNKNOWN until commit 3b7270c76622 taught it the interrupt causes (IRQ_S_TIMER, IRQ_VS_EXT, …)."
                .to_string(),
            Fix::words("use a perf with 3b7270c76622 (\"RISC-V: perf/kvm: Add reporting of interrupt events\") \
                        to see which interrupts they are"),
        )
    } else if !unnamed.is_empty() {
        (
            "Exit codes no table knows: a newer CPU or kernel than virtlens's tables, or another \
             hypervisor's codes (PVM, TDX) read under the wrong ISA. They are kept as numbers; no rule can \
             say what they cost."
                .to_string(),
            Fix::words("check the host's exit-reason list (arch/x86/include/uapi/asm/vmx.h, svm.h) and the \
                        capture's ISA (--format, origin)"),
        )
    } else {
        (
            "Exit names of an architecture virtlens's rules do not cover (they know x86: VMX, SVM, PVM); \
             the rows are reported, but no cause is derived from them."
                .to_string(),
            Fix::words("read the rows with the architecture's KVM documentation"),
        )
    };
    let mut f = Finding::new("unknown.exit-codes", severity, "exits virtlens cannot name")
        .why(format!(
            "{severity}: {} of the {}",
            words::pct(value),
            ex.basis()
        ))
        .share(Some(ex.share_struct(value)))
        .evidence(rows.iter().map(|r| ex.evidence(r)).collect())
        .cause(format!("{}. {cause}", words::rows(ex, rows)))
        .fix(fix)
        .effect("named exits can be diagnosed")
        .source(SRC_UNKNOWN);
    if !unnamed.is_empty() && is_riscv {
        f = f.unconfirmed(
            Confidence::Likely,
            "compare with the same run under a newer perf: the UNKNOWN rows turn into IRQ_* rows",
        );
    }
    out.push(f);
}

/// Nested SVM: `rsm` exits followed by #GP intercepts.
fn rsm(ctx: &Ctx<'_>, out: &mut Vec<Finding>) {
    let Some(ex) = ctx.exits() else {
        return;
    };
    let rsm = ex.named(&["rsm"]);
    let gp = ex.named(&["GP excp"]);
    if rsm.iter().all(|r| r.count == 0) || gp.iter().all(|r| r.count == 0) {
        return;
    }
    let rows: Vec<&VRow> = rsm.iter().chain(&gp).copied().collect();
    out.push(
        Finding::new(
            "unknown.nested-rsm-gp",
            Severity::Medium,
            "RSM exits followed by #GP: the nested-SVM SMM state bug",
        )
        .why("medium: a known KVM bug that breaks booting Hyper-V/WS2016 as a nested guest")
        .share(Some(ex.share_struct(ex.share_of(&rows))))
        .evidence(rows.iter().map(|r| ex.evidence(r)).collect())
        .cause(format!(
            "{}. On nested SVM, returning from SMM (RSM) lost L1 state because of the VMCB split, and the \
             guest then takes #GP: seen booting Windows Server 2016 with the Hyper-V role.",
            words::rows(ex, &rows)
        ))
        .fix(Fix::words("use a host kernel with the fix that saves L1 state in HSAVE across SMM")
            .host("KVM fix 20210628104425.391276-5-vkuznets@redhat.com (2021)"))
        .effect("the nested guest boots")
        .source(SRC_RSM)
        .unconfirmed(Confidence::Possible, "check that the guest runs a hypervisor (nested) and the host kernel predates mid-2021"),
    );
}

/// A triple fault: the guest crashed; the exits say that, not why.
fn triple(ctx: &Ctx<'_>, out: &mut Vec<Finding>) {
    let Some(ex) = ctx.exits() else {
        return;
    };
    let rows: Vec<&VRow> = ex
        .named(&["TRIPLE_FAULT", "shutdown"])
        .into_iter()
        .filter(|r| r.count > 0)
        .collect();
    if rows.is_empty() {
        return;
    }
    out.push(
        Finding::new(
            "unknown.triple-fault",
            Severity::Medium,
            "the guest triple-faulted: KVM shut it down",
        )
        .why("medium: a guest crash (reset or stop), not an overhead; its cause is not in the exits")
        .share(Some(ex.share_struct(ex.share_of(&rows))))
        .evidence(rows.iter().map(|r| ex.evidence(r)).collect())
        .cause(format!(
            "{}. A triple fault is a fault while delivering a double fault: the CPU gives up and KVM \
             reports KVM_EXIT_SHUTDOWN, after which QEMU resets or stops the guest. The exits cannot say \
             why; in a nested setup an L1 hypervisor bug is as likely as a guest bug (the sample's author \
             left it an open question).",
            words::rows(ex, &rows)
        ))
        .fix(Fix::words("find the faulting state before the shutdown").guest(
            "trace the last exits before it (kvm:kvm_exit with info1/info2/intr_info, kvm:kvm_inj_exception), \
             or stop instead of resetting (QEMU -no-reboot / -action reboot=shutdown) and read the \
             registers",
        ))
        .effect("with the fault found and fixed the guest keeps running")
        .source("exit-tools §1.1 (kvm_exit, kvm_userspace_exit); testdata/exit-reports/24 (Lorenz Bauer, kvm@ 2022-03-16)"),
    );
}

//! The micro-VM on a real /dev/kvm: every mode runs a program, reports guest faults with the
//! vector and the faulting rip, and a hung `KVM_RUN` (a guest spinning without exits on every
//! backend; VMCALL in ring 0 on PVM) is reported once the watchdog's limit has passed. Needs
//! /dev/kvm; and without it, a test that needs it fails loudly when `VIRTLENS_REQUIRE` says
//! kvm (checked here by re-running one in a namespace where /dev/kvm is /dev/null).

use std::time::{Duration, Instant};

use virtlens_testkit::{Need, require, rerun_without_kvm};

use iced_x86::code_asm::CodeAssembler;
use virtlens_host::microvm::{CODE_ADDR, DONE_PORT};
use virtlens_host::microvm::{Error, MicroVm, Mode, pio_loop};

#[track_caller]
fn kvm_usable() -> bool {
    require(&[Need::Kvm])
}

fn program(mode: Mode, build: impl FnOnce(&mut CodeAssembler)) -> Vec<u8> {
    let mut a = CodeAssembler::new(mode.bitness()).unwrap();
    build(&mut a);
    a.assemble(CODE_ADDR).unwrap()
}

fn pvm() -> bool {
    std::path::Path::new("/sys/module/kvm_pvm").exists()
}

#[test]
fn real_mode_pio_loop_counts_every_exit() {
    if !kvm_usable() {
        return;
    }
    let _g = virtlens_testkit::shared();
    let mut vm = MicroVm::new(1 << 16).unwrap();
    vm.load_real_mode(&pio_loop(0x80, 250).unwrap()).unwrap();
    let stats = vm.run(Duration::from_secs(10)).unwrap();
    assert_eq!(
        (stats.pio_exits, stats.mmio_exits, stats.hlt),
        (250, 0, true)
    );
    assert_eq!(stats.ports.get(&0x80), Some(&250));
    assert_eq!(stats.kvm_runs, 251);
}

#[test]
fn every_mode_runs_and_reports_faults_with_vector_and_rip() {
    if !kvm_usable() {
        return;
    }
    let _g = virtlens_testkit::shared();
    for mode in Mode::ALL {
        let mut vm = MicroVm::new(0x8_0000).unwrap();
        vm.load(
            mode,
            &program(mode, |a| {
                a.mov(iced_x86::code_asm::dx, u32::from(DONE_PORT)).unwrap();
                a.out(iced_x86::code_asm::dx, iced_x86::code_asm::al)
                    .unwrap();
            }),
        )
        .unwrap();
        let stats = vm.run(Duration::from_secs(5)).unwrap();
        assert!(stats.done, "{mode}: {stats:?}");

        let mut vm = MicroVm::new(0x8_0000).unwrap();
        vm.load(mode, &program(mode, |a| a.ud2().unwrap())).unwrap();
        let err = vm.run(Duration::from_secs(5)).unwrap_err();
        assert!(
            matches!(err, Error::GuestException { vector: 6, ip, error_code: None, .. } if ip == CODE_ADDR),
            "{mode}: {err}"
        );
    }
    // HLT at CPL3 is a #GP with error code 0, reported from the ring-3 frame
    let mut vm = MicroVm::new(0x8_0000).unwrap();
    vm.load(Mode::User64, &program(Mode::User64, |a| a.hlt().unwrap()))
        .unwrap();
    let err = vm.run(Duration::from_secs(5)).unwrap_err();
    assert!(
        matches!(err, Error::GuestException { vector: 13, cs: 0x2b, ip, error_code: Some(0) } if ip == CODE_ADDR),
        "{err}"
    );
    assert!(err.to_string().contains("#13 (GP)"), "{err}");
}

#[test]
fn a_hung_kvm_run_is_reported_once_the_watchdog_limit_passed() {
    if !kvm_usable() {
        return;
    }
    let _g = virtlens_testkit::shared();
    let limit = Duration::from_millis(300);
    for mode in Mode::ALL {
        // A guest spinning in place never exits, on any backend.
        let mut vm = MicroVm::new(0x8_0000).unwrap();
        vm.load(
            mode,
            &program(mode, |a| {
                let mut here = a.create_label();
                a.set_label(&mut here).unwrap();
                a.jmp(here).unwrap();
            }),
        )
        .unwrap();
        let t = Instant::now();
        let result = vm.run(limit);
        let took = t.elapsed();
        match &result {
            Err(Error::Hung { limit: l, .. }) => assert_eq!(*l, limit),
            other => panic!("{mode}: a spinning guest gave {other:?}"),
        }
        assert!(took >= limit, "{mode}: reported after {took:?}");
    }
}

#[test]
fn vmcall_in_ring_0_hangs_on_pvm_and_returns_elsewhere() {
    if !kvm_usable() {
        return;
    }
    let _g = virtlens_testkit::shared();
    for mode in [Mode::Prot32, Mode::Long64] {
        let mut vm = MicroVm::new(0x8_0000).unwrap();
        let code = program(mode, |a| {
            a.vmcall().unwrap();
            a.mov(iced_x86::code_asm::dx, u32::from(DONE_PORT)).unwrap();
            a.out(iced_x86::code_asm::dx, iced_x86::code_asm::al)
                .unwrap();
        });
        vm.load(mode, &code).unwrap();
        let result = vm.run(Duration::from_millis(300));
        if pvm() {
            assert!(
                matches!(result, Err(Error::Hung { .. })),
                "{mode}: {result:?}"
            );
        } else {
            // KVM answers an unknown hypercall with -KVM_ENOSYS in rax and the guest goes on.
            assert!(result.is_ok(), "{mode}: {result:?}");
        }
    }
}

/// The test [`without_kvm_a_test_that_needs_it_fails_loudly`] re-runs without /dev/kvm (its
/// name in the test binary: module, then function).
const PROBE: &str = "lab_microvm::real_mode_pio_loop_counts_every_exit";

#[test]
fn without_kvm_a_test_that_needs_it_fails_loudly() {
    // Root for the mount namespace; /dev/kvm so that hiding it is what makes the difference.
    if !require(&[Need::Root, Need::Kvm]) {
        return;
    }
    let me = std::env::current_exe().unwrap();
    let loud = rerun_without_kvm(&me, PROBE, true);
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&loud.stdout),
        String::from_utf8_lossy(&loud.stderr)
    );
    assert!(!loud.status.success(), "passed without /dev/kvm: {text}");
    assert!(
        text.contains(&format!("{PROBE}: needs kvm"))
            && text.contains("not the KVM device")
            && text.contains("VIRTLENS_REQUIRE says this machine must have it"),
        "{text}"
    );
    assert!(text.contains("1 failed"), "{text}");
    let quiet = rerun_without_kvm(&me, PROBE, false);
    let text = String::from_utf8_lossy(&quiet.stdout);
    assert!(quiet.status.success(), "{text}");
    assert!(
        text.contains(&format!("SKIP({PROBE}): needs kvm")) && text.contains("1 passed"),
        "{text}"
    );
}

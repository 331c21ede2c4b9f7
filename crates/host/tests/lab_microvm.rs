#![allow(clippy::panic, clippy::unwrap_used, clippy::expect_used)]
//! The micro-VM on a real /dev/kvm: every mode runs a program, reports guest faults with the
//! vector and the faulting rip, and a hung `KVM_RUN` (VMCALL in ring 0 on PVM) is reported
//! within the watchdog time. Prints a SKIP line where /dev/kvm is not usable.

use std::time::{Duration, Instant};

use iced_x86::code_asm::CodeAssembler;
use virtlens_host::microvm::layout::{CODE_ADDR, DONE_PORT};
use virtlens_host::microvm::{Error, MicroVm, Mode, guest};

fn kvm_usable() -> bool {
    let ok = virtlens_host::lab::kvm_usable().is_ok();
    if !ok {
        println!("SKIP: /dev/kvm is not usable here");
    }
    ok
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
    let mut vm = MicroVm::new(1 << 16).unwrap();
    vm.load_real_mode(&guest::pio_loop(0x80, 250).unwrap())
        .unwrap();
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
fn a_hung_kvm_run_is_reported_within_the_watchdog_time() {
    if !kvm_usable() {
        return;
    }
    for mode in [Mode::Prot32, Mode::Long64] {
        let mut vm = MicroVm::new(0x8_0000).unwrap();
        vm.load(mode, &program(mode, |a| a.vmcall().unwrap()))
            .unwrap();
        let limit = Duration::from_millis(300);
        let t = Instant::now();
        let result = vm.run(limit);
        let took = t.elapsed();
        if pvm() {
            assert!(
                matches!(result, Err(Error::Hung { .. })),
                "{mode}: {result:?}"
            );
        }
        if let Err(Error::Hung { limit: l, .. }) = &result {
            assert_eq!(*l, limit);
            assert!(
                took >= limit && took < Duration::from_secs(2),
                "{mode}: took {took:?}"
            );
        }
    }
}

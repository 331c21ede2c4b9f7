//! Tests of the split of one trace line (`line`).

use super::*;

#[test]
fn every_prefix_shape() {
    let l = split("qemu-system-x86 12345 [002] 770.850287: kvm:kvm_exit: reason HLT");
    let l = l.unwrap();
    assert_eq!(
        (l.comm, l.tid, l.cpu, l.stamp, l.event, l.text),
        (
            Some("qemu-system-x86"),
            Some(12345),
            Some(2),
            Stamp::Ns(770_850_287_000),
            "kvm_exit",
            "reason HLT"
        )
    );
    assert_eq!(l.dialect, Dialect::PerfScript);
    let l = split("CPU 0/KVM 4321/4325 [001] 1.5: kvm:kvm_entry: vcpu 0").unwrap();
    assert_eq!(
        (l.comm, l.pid, l.tid),
        (Some("CPU 0/KVM"), Some(4321), Some(4325))
    );
    let l = split("    [001]   770.850287:        kvm:kvm_entry: vcpu 0, rip 0x1").unwrap();
    assert_eq!((l.comm, l.tid, l.cpu), (None, None, Some(1)));
    let l = split(" qemu-system-x86-310143 [064] 28714.545983: kvm_exit:   reason X").unwrap();
    assert_eq!((l.comm, l.tid), (Some("qemu-system-x86"), Some(310_143)));
    assert_eq!((l.dialect, l.text), (Dialect::TraceCmd, "reason X"));
    let l = split("  CPU 1/KVM-4322  [003] d..2.  12.000000100: kvm_entry: vcpu 1").unwrap();
    assert_eq!(
        (l.comm, l.tid, l.dialect),
        (Some("CPU 1/KVM"), Some(4322), Dialect::Ftrace)
    );
    assert_eq!(l.stamp, Stamp::Ns(12_000_000_100));
    let l = split("  <...>-77 (   70) [000] .....  1.0: kvm_pio: pio_read").unwrap();
    assert_eq!((l.comm, l.pid, l.tid), (None, Some(70), Some(77)));
    let l = split("  <idle>-0  (-------) [000] d.h1. 5: kvm_fpu: load").unwrap();
    assert_eq!(
        (l.comm, l.pid, l.tid, l.stamp),
        (Some("<idle>"), None, Some(0), Stamp::Raw)
    );
    assert_eq!(
        split("kvm:kvm_exit: reason HLT").map(|l| l.event),
        Some("kvm_exit")
    );
}

#[test]
fn timestamps() {
    for (token, stamp) in [
        ("770.850287", Some(Stamp::Ns(770_850_287_000))),
        ("1.5", Some(Stamp::Ns(1_500_000_000))),
        ("0.000000001", Some(Stamp::Ns(1))),
        ("123456789", Some(Stamp::Raw)),
        ("99999999999999999999999", Some(Stamp::Raw)),
        ("99999999999999999999999.5", None),
        ("18446744073.709551615", Some(Stamp::Ns(u64::MAX))),
        ("18446744073.709551616", None),
        ("1.5x", None),
        ("1x.5", None),
        ("12a", None),
        ("x1.5", None),
        ("", None),
    ] {
        assert_eq!(timestamp(token), stamp, "{token}");
    }
}

#[test]
fn the_memo_answers_as_the_columns_would() {
    let lines = [
        "qemu-system-x86 12345 [002] 770.850287: kvm:kvm_exit: reason HLT",
        "qemu-system-x86 12345 [002] 770.850290: kvm:kvm_entry: vcpu 0",
        "qemu-system-x86 12346 [002] 770.850291: kvm:kvm_entry: vcpu 1",
        "CPU 0/KVM 4321/4325 [001] 1.5: kvm:kvm_entry: vcpu 0",
        "CPU 0/KVM 4321/4325 [001] 1.6: kvm:kvm_entry: vcpu 0",
        "CPU 0/KVM 4321/4325 [001] 1.7: kvm_exit: reason X",
        "  <...>-77 (   70) [000] .....  1.0: kvm_pio: pio_read",
        "  <...>-77 (   70) [000] .....  1.0: kvm_pio: pio_read",
        "  kvm_exit:             reason EXIT_RSM rip 0x7ffbb280 info 0 0",
        "  kvm_exit:             reason EXIT_RSM rip 0x7ffbb280 info 0 0",
        "qemu-system-x86-5665 kvm_exit: reason HLT",
        "qemu-system-x86-5665 kvm_exit: reason HLT",
        "Note: kvm_exit: is an event",
        "    [001]   770.850287:        kvm:kvm_entry: vcpu 0, rip 0x1",
        "    [001]   770.850288:        kvm:kvm_entry: vcpu 0, rip 0x1",
    ];
    let mut memo = PrefixMemo::default();
    for line in lines.iter().chain(lines.iter().rev()) {
        assert_eq!(split_with(line, &mut memo), split(line), "{line}");
    }
}

#[test]
fn bare_lines_and_wrapped_prefixes() {
    let l = split("  kvm_exit:             reason EXIT_RSM rip 0x7ffbb280 info 0 0").unwrap();
    assert_eq!(
        (l.dialect, l.event, l.text, l.tid, l.stamp),
        (
            Dialect::Bare,
            "kvm_exit",
            "reason EXIT_RSM rip 0x7ffbb280 info 0 0",
            None,
            Stamp::Missing
        )
    );
    assert_eq!(
        split("    nrip: 0xffffffffffbbe119 int_ctl: 0x01020000"),
        None
    );
    assert_eq!(split("Note: kvm_exit: is an event"), None);
    assert!(prefix_only(
        "qemu-system-x86-5665  [000] ....   280.971121:"
    ));
    assert!(prefix_only("     CPU 0/KVM  699876 [020] 18136.763622:"));
    assert!(!prefix_only("Samples: 887K of event"));
    assert!(!prefix_only("with the patch:"));
}

#[test]
fn not_events() {
    for line in [
        "Samples: 887K of event 'kvm:kvm_exit', 1 Hz, Event count (approx.): 47982",
        " qemu-system-x86^Ctrace-cmd: Received SIGINT",
        "$ sudo ./scripts/trace-kvm.sh --report",
        "CPU:2 [LOST 12 EVENTS]",
        "  <idle>-0 [001] d.h1. 123.456789: do_IRQ <-ret_from_intr",
        "Note: something: else: here: too",
        "",
    ] {
        assert_eq!(split(line), None, "{line}");
    }
}

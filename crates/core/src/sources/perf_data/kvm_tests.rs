//! Tests of the tracepoint decoders: every kernel's field layout of the kvm events, the
//! APICv inhibit events, the scheduler's events, and the size of a decoded kind.

use super::*;

mod exits {
    use super::*;
    use crate::decode::trace_format as format;

    fn fmt(name: &str, fields: &str) -> EventFormat {
        format::parse("kvm", &format!("name: {name}\nID: 1\nformat:\n{fields}")).unwrap()
    }

    #[test]
    fn new_svm_exit_code_is_u64_and_isa_wins() {
        let f = fmt(
            "kvm_exit",
            "\tfield:u64 exit_code;\toffset:8;\tsize:8;\tsigned:0;\n\
             \tfield:unsigned long rip;\toffset:16;\tsize:8;\tsigned:0;\n\
             \tfield:u32 isa;\toffset:24;\tsize:4;\tsigned:0;\n\
             \tfield:unsigned int vcpu_id;\toffset:28;\tsize:4;\tsigned:0;\n",
        );
        let (d, note) = Decoder::for_format(&f);
        assert!(note.is_none());
        let mut p = vec![0u8; 32];
        p[8..16].copy_from_slice(&0x8000_0010u64.to_le_bytes());
        p[16..24].copy_from_slice(&0xfff0u64.to_le_bytes());
        p[24] = 2;
        p[28] = 3;
        assert_eq!(
            d.decode(Endian::Little, &p, 0),
            Some(Kind::Exit {
                code: 0x8000_0010,
                rip: 0xfff0,
                vcpu: 3,
                isa: Some(Isa::Svm),
                has_rip: true,
            })
        );
        assert_eq!(d.decode(Endian::Little, &p[..12], 0), None, "short payload");
    }

    #[test]
    fn arm64_exit_is_its_class_for_a_trap_and_its_type_otherwise() {
        // arch/arm64/kvm/trace_arm.h: int ret; unsigned int esr_ec; unsigned long vcpu_pc.
        let f = fmt(
            "kvm_exit",
            "\tfield:int ret;\toffset:8;\tsize:4;\tsigned:1;\n\
             \tfield:unsigned int esr_ec;\toffset:12;\tsize:4;\tsigned:0;\n\
             \tfield:unsigned long vcpu_pc;\toffset:16;\tsize:8;\tsigned:0;\n",
        );
        let (d, note) = Decoder::for_format(&f);
        assert!(note.is_none());
        let exit = |ret: u32, ec: u32| {
            let mut p = vec![0u8; 24];
            p[8..12].copy_from_slice(&ret.to_le_bytes());
            p[12..16].copy_from_slice(&ec.to_le_bytes());
            p[16..24].copy_from_slice(&0xffff_8000_1020u64.to_le_bytes());
            match d.decode(Endian::Little, &p, 0) {
                Some(Kind::Exit { code, isa, rip, .. }) => Some((code, isa, rip)),
                _ => None,
            }
        };
        let name = |code| crate::decode::exit_reason::lookup_code(Isa::Arm64, code).map(|i| i.name);
        let (code, isa, rip) = exit(2, 0x24).unwrap_or_default();
        assert_eq!(
            (name(code), isa, rip),
            (Some("DABT_LOW"), Some(Isa::Arm64), 0xffff_8000_1020)
        );
        assert_eq!(exit(0, 0).map(|(c, ..)| name(c)), Some(Some("IRQ")));
        assert_eq!(exit(2, 0x01).map(|(c, ..)| name(c)), Some(Some("WFx")));
        assert_eq!(
            exit(0x0bad_ca11, 0).map(|(c, ..)| name(c)),
            Some(Some("HYP_GONE"))
        );
    }

    #[test]
    fn signed_errno_and_missing_fields() {
        let f = fmt(
            "kvm_userspace_exit",
            "\tfield:__u32 reason;\toffset:8;\tsize:4;\tsigned:0;\n\
             \tfield:int errno;\toffset:12;\tsize:4;\tsigned:1;\n",
        );
        let (d, _) = Decoder::for_format(&f);
        let mut p = vec![0u8; 16];
        p[8] = 2;
        p[12..16].copy_from_slice(&(-4i32).to_le_bytes());
        let k = d.decode(Endian::Little, &p, 0).unwrap();
        assert_eq!(
            k,
            Kind::UserspaceExit {
                reason: 2,
                errno: -4
            }
        );
        let mut buf = String::new();
        assert_eq!(
            k.to_event_kind(&[], &mut buf),
            EventKind::UserspaceExit { reason: "restart" }
        );
        let (d, note) =
            Decoder::for_format(&fmt("kvm_pio", "\tfield:u32 rw;\toffset:8;\tsize:4;\n"));
        assert_eq!(d, Decoder::Other);
        assert!(note.is_some_and(|n| n.contains("kvm_pio")));
        let other = format::parse("kvmmmu", "name: kvm_pio\nID: 1\n").unwrap();
        assert_eq!(Decoder::for_format(&other), (Decoder::Other, None));
    }
}

mod apicv {
    use super::*;
    use crate::decode::apicv_inhibit::Inhibit;
    use crate::decode::trace_format as format;

    /// `kvm_apicv_inhibit_changed` (5.18+: reason, set, inhibits) and
    /// `kvm_apicv_update_request` (before: reason, activate — activate clears the inhibit).
    #[test]
    fn both_events_decode_to_changes() {
        let f = format::parse(
            "kvm",
            "name: kvm_apicv_inhibit_changed\nID: 1\nformat:\n\
             \tfield:int reason;\toffset:8;\tsize:4;\tsigned:1;\n\
             \tfield:bool set;\toffset:12;\tsize:1;\tsigned:0;\n\
             \tfield:unsigned long inhibits;\toffset:16;\tsize:8;\tsigned:0;\n",
        )
        .unwrap();
        let (d, note) = Decoder::for_format(&f);
        assert!(note.is_none());
        let mut p = vec![0u8; 24];
        p[8] = 9;
        p[12] = 1;
        p[16] = 0x2;
        p[17] = 0x2;
        let k = d.decode(Endian::Little, &p, 3).unwrap();
        let names: Vec<String> = ["", "", "", "kvm_apicv_inhibit_changed"]
            .map(String::from)
            .to_vec();
        let mut buf = String::new();
        let EventKind::ApicvInhibit { name, change, .. } = k.to_event_kind(&names, &mut buf) else {
            panic!("{k:?}");
        };
        assert_eq!(name, "kvm_apicv_inhibit_changed");
        assert_eq!((change.set, change.number, change.named), (true, 9, None));
        assert!(d.decode(Endian::Little, &p[..12], 3).is_none(), "cut");
        let old = format::parse(
            "kvm",
            "name: kvm_apicv_update_request\nID: 2\nformat:\n\
             \tfield:int reason;\toffset:8;\tsize:4;\tsigned:1;\n\
             \tfield:bool activate;\toffset:12;\tsize:1;\tsigned:0;\n",
        )
        .unwrap();
        let (d, _) = Decoder::for_format(&old);
        let mut p = vec![0u8; 16];
        p[8] = 4;
        let k = d.decode(Endian::Little, &p, 0).unwrap();
        let EventKind::ApicvInhibit { change, .. } = k.to_event_kind(&[], &mut buf) else {
            panic!("{k:?}");
        };
        assert!(change.set && change.legacy, "deactivate: set");
        assert_eq!(change.named, Some(Inhibit::PitReinj));
    }
}

mod sched {
    use super::*;
    use crate::decode::trace_format as format;

    /// sched_switch's format as Linux 6.x's tracefs shows it.
    const SWITCH: &str = "name: sched_switch\nID: 316\nformat:\n\
        \tfield:char prev_comm[16];\toffset:8;\tsize:16;\tsigned:0;\n\
        \tfield:pid_t prev_pid;\toffset:24;\tsize:4;\tsigned:1;\n\
        \tfield:int prev_prio;\toffset:28;\tsize:4;\tsigned:1;\n\
        \tfield:long prev_state;\toffset:32;\tsize:8;\tsigned:1;\n\
        \tfield:char next_comm[16];\toffset:40;\tsize:16;\tsigned:0;\n\
        \tfield:pid_t next_pid;\toffset:56;\tsize:4;\tsigned:1;\n\
        \tfield:int next_prio;\toffset:60;\tsize:4;\tsigned:1;\n";

    #[test]
    fn switches_say_who_left_runnable_or_blocked() {
        let f = format::parse("sched", SWITCH).unwrap();
        let (d, note) = Decoder::for_format(&f);
        assert!(
            note.is_none() && matches!(d, Decoder::SchedSwitch { .. }),
            "{d:?}"
        );
        let mut buf = String::new();
        for (state, runnable) in [
            (0u64, true),
            (0x100, true),
            (1, false),
            (2, false),
            (0x80, false),
        ] {
            let mut p = vec![0u8; 64];
            p[24..28].copy_from_slice(&4242u32.to_le_bytes());
            p[32..40].copy_from_slice(&state.to_le_bytes());
            p[56..60].copy_from_slice(&77u32.to_le_bytes());
            let k = d.decode(Endian::Little, &p, 0).unwrap();
            assert_eq!(
                k.to_event_kind(&[], &mut buf),
                EventKind::SchedSwitch {
                    prev: 4242,
                    prev_runnable: runnable,
                    next: 77
                },
                "state {state:#x}"
            );
        }
        let wake = "name: sched_wakeup\nID: 318\nformat:\n\
            \tfield:char comm[16];\toffset:8;\tsize:16;\tsigned:0;\n\
            \tfield:pid_t pid;\toffset:24;\tsize:4;\tsigned:1;\n";
        let (d, _) = Decoder::for_format(&format::parse("sched", wake).unwrap());
        let mut p = vec![0u8; 28];
        p[24..28].copy_from_slice(&4242u32.to_le_bytes());
        let k = d.decode(Endian::Little, &p, 3).unwrap();
        let names: Vec<String> = ["a", "b", "c", "sched_wakeup"].map(String::from).to_vec();
        assert_eq!(
            k.to_event_kind(&names, &mut buf),
            EventKind::SchedWakeup {
                name: "sched_wakeup",
                tid: 4242
            }
        );
    }
}

mod size {
    #[test]
    fn kind_stays_small() {
        assert!(std::mem::size_of::<super::Kind>() <= 24);
    }
}

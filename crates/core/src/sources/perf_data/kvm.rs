//! From a tracepoint payload to an event: each event format gets a [`Decoder`] whose field
//! positions come from the format itself (never hard-coded offsets), so every kernel's layout
//! and naming works (`exit_reason` or the 64-bit `exit_code`, `guest_rip` or `rip`, with or
//! without `isa`/`vcpu_id`). Events of other names, or whose format lacks a needed field, are
//! counted by name ([`Kind::Other`]).
//!
//! Decoding yields a compact, owned [`Kind`] that can wait in the time-ordering buffer; it
//! becomes a borrowed [`EventKind`] only when it is handed to the profile builder.

use super::bytes::Endian;
use super::userspace_exit;
use crate::decode::trace_format::{EventFormat, Field};
use crate::decode::{Isa, apicv_inhibit, arm64_code};
use crate::events::{EventKind, MmioAccess, Reason};

/// Where a scalar field sits in the payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FieldRef {
    offset: usize,
    size: usize,
    signed: bool,
}

impl FieldRef {
    fn of(f: &Field) -> Option<Self> {
        (!f.array && matches!(f.size, 1 | 2 | 4 | 8)).then_some(Self {
            offset: f.offset,
            size: f.size,
            signed: f.signed,
        })
    }

    /// The value, zero-extended.
    #[inline]
    pub(crate) fn get(self, e: Endian, payload: &[u8]) -> Option<u64> {
        e.uint(payload, self.offset, self.size)
    }

    /// The value, sign-extended when the format says the field is signed.
    #[inline]
    pub(crate) fn get_i64(self, e: Endian, payload: &[u8]) -> Option<i64> {
        let v = self.get(e, payload)?;
        let bits = self.size * 8;
        Some(if self.signed && bits < 64 {
            let shift = 64 - bits;
            ((v << shift) as i64) >> shift
        } else {
            v as i64
        })
    }
}

/// How one tracepoint's payload is decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Decoder {
    Exit {
        reason: FieldRef,
        isa: Option<FieldRef>,
        vcpu: Option<FieldRef>,
        rip: Option<FieldRef>,
    },
    /// arm64's `kvm_exit`: the exception type (`ret`) and, for a trap, its class (`esr_ec`).
    Arm64Exit {
        ret: FieldRef,
        esr_ec: FieldRef,
        pc: Option<FieldRef>,
    },
    Entry {
        vcpu: Option<FieldRef>,
    },
    Pio {
        rw: FieldRef,
        port: FieldRef,
    },
    Mmio {
        kind: FieldRef,
        gpa: FieldRef,
    },
    Msr {
        write: FieldRef,
        ecx: FieldRef,
    },
    UserspaceExit {
        reason: FieldRef,
        errno: Option<FieldRef>,
    },
    Hypercall {
        nr: FieldRef,
        hyperv: bool,
    },
    /// `kvm_apicv_inhibit_changed` (`set`, `inhibits`) or, before 5.18,
    /// `kvm_apicv_update_request` (`activate`: the inhibit cleared).
    ApicvInhibit {
        reason: FieldRef,
        set: Option<FieldRef>,
        activate: Option<FieldRef>,
        inhibits: Option<FieldRef>,
    },
    /// `sched_switch`: who left the CPU and in what state, who got it.
    SchedSwitch {
        prev_pid: FieldRef,
        prev_state: FieldRef,
        next_pid: FieldRef,
    },
    /// `sched_wakeup` / `sched_wakeup_new`: who became runnable.
    SchedWakeup {
        pid: FieldRef,
    },
    /// Counted by name only.
    Other,
}

impl Decoder {
    /// The decoder for `format`; with a note when a kvm event lacks the fields it needs.
    pub(crate) fn for_format(format: &EventFormat) -> (Decoder, Option<String>) {
        let f = |names: &[&str]| {
            names
                .iter()
                .find_map(|n| format.field(n).and_then(FieldRef::of))
        };
        if format.system == "sched" {
            // For the timeline's scheduler strip; without the fields, counted by name.
            let d = match format.name.as_str() {
                "sched_switch" => f(&["prev_pid"])
                    .zip(f(&["prev_state"]))
                    .zip(f(&["next_pid"]))
                    .map(|((prev_pid, prev_state), next_pid)| Decoder::SchedSwitch {
                        prev_pid,
                        prev_state,
                        next_pid,
                    }),
                "sched_wakeup" | "sched_wakeup_new" => {
                    f(&["pid"]).map(|pid| Decoder::SchedWakeup { pid })
                }
                _ => None,
            };
            return (d.unwrap_or(Decoder::Other), None);
        }
        if format.system != "kvm" {
            return (Decoder::Other, None);
        }
        let decoder = match format.name.as_str() {
            "kvm_exit" => f(&["exit_reason", "exit_code"])
                .map(|reason| Decoder::Exit {
                    reason,
                    isa: f(&["isa"]),
                    vcpu: f(&["vcpu_id"]),
                    rip: f(&["guest_rip", "rip"]),
                })
                .or_else(|| {
                    f(&["ret"])
                        .zip(f(&["esr_ec"]))
                        .map(|(ret, esr_ec)| Decoder::Arm64Exit {
                            ret,
                            esr_ec,
                            pc: f(&["vcpu_pc"]),
                        })
                }),
            "kvm_entry" => Some(Decoder::Entry {
                vcpu: f(&["vcpu_id"]),
            }),
            "kvm_pio" => f(&["rw"])
                .zip(f(&["port"]))
                .map(|(rw, port)| Decoder::Pio { rw, port }),
            "kvm_mmio" => f(&["type"])
                .zip(f(&["gpa"]))
                .map(|(kind, gpa)| Decoder::Mmio { kind, gpa }),
            "kvm_msr" => f(&["write"])
                .zip(f(&["ecx", "index"]))
                .map(|(write, ecx)| Decoder::Msr { write, ecx }),
            "kvm_userspace_exit" => f(&["reason"]).map(|reason| Decoder::UserspaceExit {
                reason,
                errno: f(&["errno"]),
            }),
            "kvm_hypercall" => f(&["nr"]).map(|nr| Decoder::Hypercall { nr, hyperv: false }),
            "kvm_hv_hypercall" => f(&["code"]).map(|nr| Decoder::Hypercall { nr, hyperv: true }),
            "kvm_apicv_inhibit_changed" | "kvm_apicv_update_request" => {
                let (set, activate) = (f(&["set"]), f(&["activate"]));
                f(&["reason", "bit"])
                    .filter(|_| set.is_some() || activate.is_some())
                    .map(|reason| Decoder::ApicvInhibit {
                        reason,
                        set,
                        activate,
                        inhibits: f(&["inhibits"]),
                    })
            }
            _ => return (Decoder::Other, None),
        };
        match decoder {
            Some(d) => (d, None),
            None => (
                Decoder::Other,
                Some(format!(
                    "the format of kvm:{} (ID {}) lacks the fields virtlens decodes; its events \
                     are counted by name only",
                    format.name, format.id
                )),
            ),
        }
    }

    /// Decodes a payload; `None` when it is too short for the fields (damaged).
    // Hot: once per record; with two callers (perf.data, live capture) the compiler stops
    // inlining it, which cost ~8% of a perf.data read.
    #[inline(always)]
    pub(crate) fn decode(&self, e: Endian, p: &[u8], target: u32) -> Option<Kind> {
        Some(match *self {
            Decoder::Exit {
                reason,
                isa,
                vcpu,
                rip,
            } => {
                let rip = rip.and_then(|f| f.get(e, p));
                Kind::Exit {
                    code: reason.get(e, p)?,
                    isa: isa.and_then(|f| f.get(e, p)).and_then(|v| match v {
                        1 => Some(Isa::Vmx),
                        2 => Some(Isa::Svm),
                        _ => None,
                    }),
                    vcpu: vcpu_of(vcpu, e, p),
                    rip: rip.unwrap_or(0),
                    has_rip: rip.is_some(),
                }
            }
            Decoder::Arm64Exit { ret, esr_ec, pc } => {
                let rip = pc.and_then(|f| f.get(e, p));
                Kind::Exit {
                    code: arm64_code(ret.get(e, p)?, esr_ec.get(e, p)?),
                    isa: Some(Isa::Arm64),
                    vcpu: NONE,
                    rip: rip.unwrap_or(0),
                    has_rip: rip.is_some(),
                }
            }
            Decoder::Entry { vcpu } => Kind::Entry {
                vcpu: vcpu_of(vcpu, e, p),
            },
            Decoder::Pio { rw, port } => Kind::Pio {
                write: rw.get(e, p)? != 0,
                port: port.get(e, p)?,
            },
            Decoder::Mmio { kind, gpa } => Kind::Mmio {
                access: match kind.get(e, p)? {
                    0 => MmioAccess::UnsatisfiedRead,
                    1 => MmioAccess::Read,
                    _ => MmioAccess::Write,
                },
                gpa: gpa.get(e, p)?,
            },
            Decoder::Msr { write, ecx } => Kind::Msr {
                write: write.get(e, p)? != 0,
                index: ecx.get(e, p)?,
            },
            Decoder::UserspaceExit { reason, errno } => Kind::UserspaceExit {
                reason: reason.get(e, p)? as u32,
                errno: match errno {
                    Some(f) => f.get_i64(e, p)?.clamp(i64::from(i32::MIN), 0) as i32,
                    None => 0,
                },
            },
            Decoder::Hypercall { nr, hyperv } => Kind::Hypercall {
                nr: nr.get(e, p)?,
                hyperv,
            },
            Decoder::ApicvInhibit {
                reason,
                set,
                activate,
                inhibits: _,
            } => Kind::ApicvInhibit {
                target,
                number: u32::try_from(reason.get(e, p)?).unwrap_or(u32::MAX),
                set: match (set, activate) {
                    (Some(s), _) => s.get(e, p)? != 0,
                    (None, Some(a)) => a.get(e, p)? == 0,
                    (None, None) => return None,
                },
                legacy: set.is_none(),
            },
            Decoder::SchedSwitch {
                prev_pid,
                prev_state,
                next_pid,
            } => Kind::SchedSwitch {
                prev: u32::try_from(prev_pid.get(e, p)?).ok()?,
                // The low byte holds the blocked states (S, D, T, t, X, Z, P, I); none set is
                // TASK_RUNNING, with or without the preempted flag above it (`R+`).
                prev_runnable: prev_state.get(e, p)? & 0xff == 0,
                next: u32::try_from(next_pid.get(e, p)?).ok()?,
            },
            Decoder::SchedWakeup { pid } => Kind::SchedWakeup {
                target,
                tid: u32::try_from(pid.get(e, p)?).ok()?,
            },
            Decoder::Other => Kind::Other { target },
        })
    }
}

/// A vCPU id that fits; [`NONE`] when absent.
fn vcpu_of(f: Option<FieldRef>, e: Endian, p: &[u8]) -> u32 {
    f.and_then(|f| f.get(e, p))
        .and_then(|v| u32::try_from(v).ok())
        .filter(|&v| v != NONE)
        .unwrap_or(NONE)
}

/// "Absent" in the compact `u32` fields.
pub(crate) const NONE: u32 = u32::MAX;

fn opt(v: u32) -> Option<u32> {
    (v != NONE).then_some(v)
}

/// A decoded event kind that owns everything (names by index) and is small (24 bytes), to
/// wait cheaply for ordering. Absent `u32`s are [`NONE`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Kind {
    Exit {
        code: u64,
        rip: u64,
        vcpu: u32,
        isa: Option<Isa>,
        has_rip: bool,
    },
    Entry {
        vcpu: u32,
    },
    Pio {
        write: bool,
        port: u64,
    },
    Mmio {
        access: MmioAccess,
        gpa: u64,
    },
    Msr {
        write: bool,
        index: u64,
    },
    UserspaceExit {
        reason: u32,
        /// Negative errno of an interrupted or failed KVM_RUN, else 0.
        errno: i32,
    },
    Hypercall {
        nr: u64,
        hyperv: bool,
    },
    /// An APICv inhibit change (`legacy`: `kvm_apicv_update_request`, whose numbering is
    /// certain); the event's name is `names[target]`. The binary record has no names.
    ApicvInhibit {
        target: u32,
        number: u32,
        set: bool,
        legacy: bool,
    },
    SchedSwitch {
        prev: u32,
        prev_runnable: bool,
        next: u32,
    },
    /// A wakeup of thread `tid`; the event's name is `names[target]`.
    SchedWakeup {
        target: u32,
        tid: u32,
    },
    /// Another event: its name is `names[target]`.
    Other {
        target: u32,
    },
}

impl Kind {
    /// The borrowed form; `names` are the event names by target, `buf` holds a numeric name.
    // Inlined: returned through memory, the kind was copied into the event with wide loads
    // right after its narrow stores, a stall `perf annotate` put at a sixth of `Sink::run`.
    #[inline(always)]
    pub(crate) fn to_event_kind<'a>(
        self,
        names: &'a [String],
        buf: &'a mut String,
    ) -> EventKind<'a> {
        match self {
            Kind::Exit {
                code,
                rip,
                vcpu,
                isa,
                has_rip,
            } => EventKind::Exit {
                reason: Reason::Code(code),
                isa,
                vcpu: opt(vcpu),
                rip: has_rip.then_some(rip),
            },
            Kind::Entry { vcpu } => EventKind::Entry { vcpu: opt(vcpu) },
            Kind::Pio { write, port } => EventKind::Pio { write, port },
            Kind::Mmio { access, gpa } => EventKind::Mmio { access, gpa },
            Kind::Msr { write, index } => EventKind::Msr { write, index },
            Kind::UserspaceExit { reason, errno } => EventKind::UserspaceExit {
                reason: userspace_exit::name(reason, i64::from(errno), buf),
            },
            Kind::Hypercall { nr, hyperv } => EventKind::Hypercall { nr, hyperv },
            Kind::ApicvInhibit {
                target,
                number,
                set,
                legacy,
            } => EventKind::ApicvInhibit {
                name: names
                    .get(target as usize)
                    .map_or("kvm_apicv_inhibit_changed", String::as_str),
                change: apicv_inhibit::Change {
                    set,
                    number,
                    inhibits: None,
                    named: if legacy {
                        apicv_inhibit::candidates(number, true).first().copied()
                    } else {
                        None
                    },
                    legacy,
                    held: false,
                },
                names: "",
            },
            Kind::SchedSwitch {
                prev,
                prev_runnable,
                next,
            } => EventKind::SchedSwitch {
                prev,
                prev_runnable,
                next,
            },
            Kind::SchedWakeup { target, tid } => EventKind::SchedWakeup {
                name: names
                    .get(target as usize)
                    .map_or("sched_wakeup", String::as_str),
                tid,
            },
            Kind::Other { target } => EventKind::Other {
                name: names.get(target as usize).map_or("unknown", String::as_str),
            },
        }
    }
}

#[cfg(test)]
#[path = "kvm_tests.rs"]
mod tests;

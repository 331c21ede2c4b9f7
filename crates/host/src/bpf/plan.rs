//! What each kvm tracepoint's program does, decided from the tracepoint's `format` file: which
//! payload fields key its count (the reason, port, address, MSR, hypercall number), which
//! events open and close a latency pair, and which field is a duration of its own. Field
//! offsets and sizes come from the running kernel's format, so a changed layout is read
//! right; a field this kernel lacks is left out with a note, never guessed.
//!
//! Latency pairs, per host thread:
//! - [`Pair::Exit`]: `kvm_exit` → next `kvm_entry`, keyed by exit reason: the time KVM took
//!   to handle an exit (what `perf kvm stat` reports), on VMX/SVM hosts.
//! - [`Pair::Vmm`]: `kvm_userspace_exit` → next `kvm_fpu` with `load=1`, keyed by the
//!   userspace exit reason: the time from KVM_RUN returning to the VMM until the VMM calls
//!   KVM_RUN again (`kvm_load_guest_fpu` is the first traced step of KVM_RUN). It fires on
//!   every backend, including PVM, where `kvm_exit`/`kvm_entry` never do.
//! - [`Pair::Halt`]: the `ns` field of `kvm_vcpu_wakeup` (time polled or waited in a halt),
//!   keyed by `waited`.

use virtlens_core::decode::EventFormat;
use virtlens_core::events::AGGREGATED;

use super::insn::Size;

/// The events the aggregation knows, by their fixed index (the `event` of a map key).
pub(crate) const EVENTS: [&str; 11] = AGGREGATED;

/// The index of `name` in `EVENTS`.
pub fn event_index(name: &str) -> Option<u32> {
    EVENTS.iter().position(|e| *e == name).map(|i| i as u32)
}

/// A latency histogram's pair; see the module doc.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Pair {
    Exit = 0,
    Vmm = 1,
    Halt = 2,
}

impl Pair {
    pub const ALL: [Pair; 3] = [Pair::Exit, Pair::Vmm, Pair::Halt];

    pub fn from_index(i: u32) -> Option<Pair> {
        Pair::ALL.get(i as usize).copied()
    }

    /// The name used in labels and JSON.
    pub fn name(self) -> &'static str {
        match self {
            Pair::Exit => "exit",
            Pair::Vmm => "vmm",
            Pair::Halt => "halt",
        }
    }
}

/// A payload field a program loads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FieldRef {
    pub offset: i16,
    pub size: Size,
}

/// The count an event keeps: by `sub` (direction, ISA, type) and `detail` (reason, port,
/// address, MSR, number); a missing field counts as 0.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Count {
    pub sub: Option<FieldRef>,
    pub detail: Option<FieldRef>,
}

/// The program of one event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Plan {
    pub event: String,
    pub index: u32,
    /// The tracepoint id (`ID:` of its format).
    pub id: u32,
    pub count: Option<Count>,
    /// Opens `pair` for this thread, remembering `detail`.
    pub begin: Option<(Pair, Option<FieldRef>)>,
    /// A second field the start keeps, in the detail's high 32 bits (arm64's exception type
    /// beside its class: together they name the exit).
    pub begin_high: Option<FieldRef>,
    /// Closes `pair` for this thread, when `field == value` if a condition is given.
    pub end: Option<(Pair, Option<(FieldRef, i32)>)>,
    /// Records the value of a field (ns) in `pair`'s histogram, keyed by `detail`.
    pub value: Option<(Pair, FieldRef, Option<FieldRef>)>,
}

/// Where a program reads the event's fields: its context.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ctx {
    /// A perf event of the tracepoint: the payload, at the `format` file's offsets.
    Format,
    /// A raw tracepoint: the tracepoint's arguments, 8 bytes each ([`raw_args`]).
    Raw,
}

/// The arguments of the raw tracepoint of `event`, in order, named by the `format` field each
/// is stored in (`TP_PROTO` of include/trace/events/kvm.h and arch/x86/kvm/trace.h, the same
/// since Linux 4.x for the arguments used); `None` where a field the plan uses is not an
/// argument (`kvm_exit` reads its reason through the vCPU) or the order changed between
/// versions (`kvm_hv_hypercall`). Only the leading arguments the plan reads are listed: the
/// kernel refuses to attach a program that reads past the tracepoint's arguments, and the
/// format-file program is used then.
pub(crate) fn raw_args(event: &str) -> Option<&'static [&'static str]> {
    Some(match event {
        "kvm_entry" => &[],
        "kvm_pio" => &["rw", "port"],
        "kvm_mmio" => &["type", "len", "gpa"],
        "kvm_msr" => &["write", "ecx"],
        "kvm_userspace_exit" => &["reason", "errno"],
        "kvm_fpu" => &["load"],
        "kvm_hypercall" => &["nr"],
        "kvm_vcpu_wakeup" => &["ns", "waited"],
        "kvm_halt_poll_ns" => &["grow"],
        _ => return None,
    })
}

/// The plan for the event of format `f`, or `None` if the aggregation does not use it; the
/// notes say what this kernel's format lacks. With [`Ctx::Raw`], `None` also when a field it
/// needs is not a raw argument (then the [`Ctx::Format`] plan is the one to use).
pub(crate) fn plan(f: &EventFormat, ctx: Ctx, notes: &mut Vec<String>) -> Option<Plan> {
    let index = event_index(&f.name)?;
    let args = match ctx {
        Ctx::Raw if cfg!(target_endian = "little") => Some(raw_args(&f.name)?),
        // A narrow load of an 8-byte argument reads its low bytes only on little-endian.
        Ctx::Raw => return None,
        Ctx::Format => None,
    };
    let mut missing_arg = false;
    let mut field = |name: &str| -> Option<FieldRef> {
        let found = f.field(name).and_then(|fl| {
            let size = Size::of_bytes(fl.size).filter(|_| !fl.array)?;
            if let Some(args) = args {
                let Some(i) = args.iter().position(|a| *a == name) else {
                    missing_arg = true;
                    return None;
                };
                return Some(FieldRef {
                    offset: i16::try_from(i * 8).ok()?,
                    size,
                });
            }
            let offset = i16::try_from(fl.offset).ok()?;
            (fl.offset % fl.size == 0).then_some(FieldRef { offset, size })
        });
        if found.is_none() {
            notes.push(format!(
                "{}:{} has no usable field `{name}` on this kernel: it counts as 0",
                f.system, f.name
            ));
        }
        found
    };
    let count = |sub: Option<FieldRef>, detail: Option<FieldRef>| Some(Count { sub, detail });
    let mut p = Plan {
        event: f.name.clone(),
        index,
        id: f.id,
        count: None,
        begin: None,
        begin_high: None,
        end: None,
        value: None,
    };
    match f.name.as_str() {
        // arm64: the exception type (`ret`) and, for a trap, its class (`esr_ec`); the count
        // keeps the type as its `sub`.
        "kvm_exit" if f.field("esr_ec").is_some() => {
            let (ret, class) = (field("ret"), field("esr_ec"));
            p.count = count(ret, class);
            p.begin = Some((Pair::Exit, class));
            p.begin_high = ret;
        }
        "kvm_exit" => {
            let reason = field("exit_reason");
            p.count = count(field("isa"), reason);
            p.begin = Some((Pair::Exit, reason));
        }
        "kvm_entry" => p.end = Some((Pair::Exit, None)),
        "kvm_pio" => p.count = count(field("rw"), field("port")),
        "kvm_mmio" => p.count = count(field("type"), field("gpa")),
        "kvm_msr" => p.count = count(field("write"), field("ecx")),
        "kvm_userspace_exit" => {
            let reason = field("reason");
            p.count = count(field("errno"), reason);
            p.begin = Some((Pair::Vmm, reason));
        }
        "kvm_fpu" => {
            let load = field("load")?;
            p.end = Some((Pair::Vmm, Some((load, 1))));
        }
        "kvm_hypercall" => p.count = count(None, field("nr")),
        "kvm_hv_hypercall" => p.count = count(field("fast"), field("code")),
        "kvm_vcpu_wakeup" => {
            let waited = field("waited");
            p.count = count(waited, None);
            if let Some(ns) = field("ns") {
                p.value = Some((Pair::Halt, ns, waited));
            }
        }
        "kvm_halt_poll_ns" => p.count = count(field("grow"), None),
        _ => return None,
    }
    (!missing_arg).then_some(p)
}

#[cfg(test)]
mod tests {
    use super::*;
    use virtlens_core::decode::parse_event_format;

    fn format(text: &str) -> EventFormat {
        parse_event_format("kvm", text).unwrap()
    }

    const COMMON: &str = "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\
        \tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n";

    /// kvm_pio's format: direction and port after the common fields.
    fn pio() -> EventFormat {
        format(&format!(
            "name: kvm_pio\nID: 110\nformat:\n{COMMON}\
             \tfield:unsigned int rw;\toffset:8;\tsize:4;\tsigned:0;\n\
             \tfield:unsigned int port;\toffset:12;\tsize:4;\tsigned:0;\n"
        ))
    }

    #[test]
    fn pio_counts_by_direction_and_port_at_the_format_s_offsets() {
        let f = pio();
        let mut notes = Vec::new();
        let p = plan(&f, Ctx::Format, &mut notes).unwrap();
        assert_eq!((p.index, p.id), (2, 110));
        let c = p.count.unwrap();
        assert_eq!(c.sub.map(|f| f.offset), Some(8));
        assert_eq!(
            c.detail,
            Some(FieldRef {
                offset: 12,
                size: Size::W
            })
        );
        assert!(notes.is_empty());
    }

    #[test]
    fn raw_plans_read_the_tracepoint_s_arguments() {
        let f = pio();
        let mut notes = Vec::new();
        let c = plan(&f, Ctx::Raw, &mut notes)
            .and_then(|p| p.count)
            .unwrap();
        // rw is the first argument, port the second: 8 bytes each.
        assert_eq!(c.sub.map(|f| (f.offset, f.size)), Some((0, Size::W)));
        assert_eq!(c.detail.map(|f| (f.offset, f.size)), Some((8, Size::W)));
        // kvm_exit's reason is no argument: only the format plan reads it.
        let exit = format(&format!(
            "name: kvm_exit\nID: 3\nformat:\n{COMMON}\
             \tfield:unsigned int exit_reason;\toffset:8;\tsize:4;\tsigned:0;\n"
        ));
        assert!(plan(&exit, Ctx::Raw, &mut notes).is_none());
        assert!(plan(&exit, Ctx::Format, &mut notes).is_some());
    }

    #[test]
    fn a_missing_field_is_a_note_and_an_unknown_event_no_plan() {
        let f = format(&format!(
            "name: kvm_exit\nID: 3\nformat:\n{COMMON}\
             \tfield:unsigned int exit_reason;\toffset:8;\tsize:4;\tsigned:0;\n"
        ));
        let mut notes = Vec::new();
        let p = plan(&f, Ctx::Format, &mut notes).unwrap();
        assert_eq!(p.begin.map(|b| b.0), Some(Pair::Exit));
        assert!(notes[0].contains("`isa`"), "{notes:?}");
        let other = format("name: kvm_cr\nID: 9\nformat:\n");
        assert!(plan(&other, Ctx::Format, &mut notes).is_none());
        // kvm_fpu without `load` cannot tell load from unload: no program.
        let fpu = format("name: kvm_fpu\nID: 37\nformat:\n");
        assert!(plan(&fpu, Ctx::Format, &mut notes).is_none());
    }

    /// arm64's kvm_exit, as Debian's 6.1 arm64 kernel has it: counted by type (`ret`) and
    /// class (`esr_ec`), both kept by the start for the exit's duration; read from the format
    /// only (the raw arguments are not yet masked as the record's fields are).
    #[test]
    fn arm64_exits_are_counted_by_type_and_class() {
        let f = format(include_str!(
            "../../../../testdata/arm64-lab/formats/kvm_exit"
        ));
        let mut notes = Vec::new();
        assert!(plan(&f, Ctx::Raw, &mut notes).is_none());
        let p = plan(&f, Ctx::Format, &mut notes).unwrap();
        let c = p.count.unwrap();
        assert_eq!(c.sub.map(|f| f.offset), Some(8), "ret");
        assert_eq!(c.detail.map(|f| f.offset), Some(12), "esr_ec");
        assert_eq!(p.begin.and_then(|b| b.1).map(|f| f.offset), Some(12));
        assert_eq!(p.begin_high.map(|f| f.offset), Some(8));
        assert!(notes.is_empty(), "{notes:?}");
    }
}

//! Exit reasons as a trace gives them (raw codes with or without their ISA, or names of any
//! era), interned once each, and decoded into canonical keys when the profile is finished and
//! the ISA is settled. Unknown codes and names stay as they are, never merged.

use rustc_hash::FxHashMap as HashMap;

use super::Reason;
use crate::decode::{Isa, exit_reason};
use crate::profile::Key;

/// An exit reason as first seen, to be decoded when the ISA is settled.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(super) enum RawReason {
    Code(u64, Option<Isa>),
    Name(String),
}

/// The distinct exit reasons of a trace, by id.
#[derive(Debug, Default)]
pub(super) struct Reasons {
    list: Vec<RawReason>,
    codes: HashMap<(u64, Option<Isa>), u32>,
    names: HashMap<String, u32>,
}

impl Reasons {
    /// The id of `reason` (with the ISA the event carried), interned on first sight.
    pub(super) fn id(&mut self, reason: Reason<'_>, isa: Option<Isa>) -> u32 {
        let id = self.list.len() as u32;
        match reason {
            Reason::Code(c) => *self.codes.entry((c, isa)).or_insert_with(|| {
                self.list.push(RawReason::Code(c, isa));
                id
            }),
            Reason::Name(n) => {
                if let Some(&known) = self.names.get(n) {
                    return known;
                }
                self.list.push(RawReason::Name(n.to_string()));
                self.names.insert(n.to_string(), id);
                id
            }
        }
    }

    /// The ISA the reasons come from: an event's own, else the one their names fit best.
    pub(super) fn guess_isa(&self) -> Option<Isa> {
        if let Some(isa) = self.list.iter().find_map(|r| match r {
            RawReason::Code(_, isa) => *isa,
            RawReason::Name(_) => None,
        }) {
            return Some(isa);
        }
        exit_reason::guess_isa(self.list.iter().filter_map(|r| match r {
            RawReason::Name(n) => Some(n.as_str()),
            RawReason::Code(..) => None,
        }))
    }

    /// The reason of id `id` as first seen.
    pub(super) fn raw(&self, id: u32) -> Option<&RawReason> {
        self.list.get(id as usize)
    }

    /// The canonical key of every reason, by id, under `isa`.
    pub(super) fn keys(&self, isa: Option<Isa>) -> Vec<Key> {
        self.list.iter().map(|r| decode(r, isa)).collect()
    }
}

/// The canonical key of a raw reason under `isa`; unknown codes and names stay as they are.
pub(super) fn decode(raw: &RawReason, isa: Option<Isa>) -> Key {
    match raw {
        RawReason::Code(code, own) => {
            let isa = own.or(isa);
            match isa.and_then(|i| exit_reason::lookup_code(i, *code)) {
                // VMX flag bits (FAILED_VMENTRY, …) make a key of their own and keep the raw code.
                Some(info) => {
                    let name = exit_reason::display_key(isa, *code);
                    let code = if name == info.name { info.code } else { *code };
                    Key::Exit {
                        name,
                        code: Some(code),
                    }
                }
                None => Key::Exit {
                    name: exit_reason::unknown_key(isa, *code),
                    code: Some(*code),
                },
            }
        }
        RawReason::Name(name) => Key::exit_named(isa, name),
    }
}

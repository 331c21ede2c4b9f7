//! The exit names of a transcript decoded once: the key each name stands for under an ISA,
//! and the ISA each set of names a table lists is guessed to be of (a live session repeats
//! the same dozen names in every interval).

use rustc_hash::FxHashMap;

use crate::decode::{Isa, exit_reason};
use crate::profile::Key;

/// Exit names already decoded, by ISA: a live session repeats the same dozen names.
#[derive(Debug, Default)]
pub(super) struct NameCache {
    /// Where in `decoded` each name's key is, by ISA. (Fx-hashed: looked up once per row,
    /// where SipHash was 6% of a transcript's reading.)
    keys: FxHashMap<Option<Isa>, FxHashMap<String, usize>>,
    decoded: Vec<Key>,
    /// The ISA guessed for each set of names seen (the names sorted: live intervals list the
    /// same names in another order), filed by a hash of the set and compared in full.
    isas: FxHashMap<u64, Vec<(NameSet, Option<Isa>)>>,
    /// The sets in `isas`: cleared at [`ISA_SETS`] so memory stays bounded.
    isa_sets: usize,
}

/// The names of a table, sorted.
type NameSet = Box<[Box<str>]>;

/// The most exit names whose key is kept (KVM knows about a hundred per ISA).
const EXIT_NAMES: usize = 4096;

/// The most name sets whose guessed ISA is kept (a live session repeats a handful).
const ISA_SETS: usize = 4096;

impl NameCache {
    /// The canonical key of exit name `name` under `isa` (the name itself when unknown).
    pub(super) fn exit_key(&mut self, isa: Option<Isa>, name: &str) -> &Key {
        let names = self.keys.entry(isa).or_default();
        let at = match names.get(name) {
            Some(&at) => at,
            None => {
                if self.decoded.len() >= EXIT_NAMES {
                    // Only a hostile or broken input names this many exits: start over.
                    self.decoded.clear();
                    self.keys.clear();
                }
                let names = self.keys.entry(isa).or_default();
                names.insert(name.to_string(), self.decoded.len());
                self.decoded.push(Key::exit_named(isa, name));
                self.decoded.len() - 1
            }
        };
        &self.decoded[at]
    }

    /// The ISA the names of a table most likely come from.
    pub(super) fn guess_isa<'a>(&mut self, names: impl Iterator<Item = &'a str>) -> Option<Isa> {
        use std::hash::BuildHasher;
        let mut sorted: Vec<&str> = names.collect();
        sorted.sort_unstable();
        let hash = rustc_hash::FxBuildHasher.hash_one(&sorted);
        let same = |set: &[Box<str>]| set.iter().map(|n| &**n).eq(sorted.iter().copied());
        if let Some((_, isa)) = self
            .isas
            .get(&hash)
            .and_then(|sets| sets.iter().find(|(set, _)| same(set)))
        {
            return *isa;
        }
        let isa = exit_reason::guess_isa(sorted.iter().copied());
        if self.isa_sets >= ISA_SETS {
            self.isas.clear();
            self.isa_sets = 0;
        }
        self.isa_sets += 1;
        let set = sorted.iter().map(|&n| Box::from(n)).collect();
        self.isas.entry(hash).or_default().push((set, isa));
        isa
    }
}

#[cfg(test)]
mod tests {
    use super::NameCache;
    use crate::decode::Isa;

    /// Each set of names keeps its own guess, whatever the order it is listed in.
    #[test]
    fn isa_guesses_are_per_set_of_names() {
        let mut names = NameCache::default();
        let vmx = ["EPT_VIOLATION", "HLT", "MSR_WRITE"];
        let svm = ["npf", "hlt", "msr"];
        assert_eq!(names.guess_isa(vmx.into_iter()), Some(Isa::Vmx));
        assert_eq!(names.guess_isa(svm.into_iter()), Some(Isa::Svm));
        assert_eq!(names.guess_isa(vmx.into_iter().rev()), Some(Isa::Vmx));
        assert_eq!(names.guess_isa(svm.into_iter().rev()), Some(Isa::Svm));
        // Every subset of the two, mixed, in two orders: the same guess as made afresh.
        let all: Vec<&str> = vmx.iter().chain(&svm).copied().collect();
        for pass in 0..2 {
            for bits in 1u32..1 << all.len() {
                let mut set: Vec<&str> = (0..all.len())
                    .filter(|i| bits & (1 << i) != 0)
                    .map(|i| all[i])
                    .collect();
                if pass == 1 {
                    set.reverse();
                }
                let fresh = crate::decode::exit_reason::guess_isa(set.iter().copied());
                assert_eq!(names.guess_isa(set.into_iter()), fresh, "set {bits:b}");
            }
        }
    }

    /// Past the bound the guesses are dropped and made again, the same.
    #[test]
    fn the_guesses_kept_are_bounded() {
        let mut names = NameCache::default();
        for i in 0..super::ISA_SETS + 10 {
            let own = format!("EXIT_{i}");
            assert_eq!(
                names.guess_isa(["EPT_VIOLATION", own.as_str()].into_iter()),
                Some(Isa::Vmx)
            );
        }
        assert!(names.isa_sets <= super::ISA_SETS);
    }

    /// Millions of distinct exit names (a hostile transcript) keep a bounded cache, and every
    /// name still gets its own key.
    #[test]
    fn the_exit_keys_kept_are_bounded() {
        let mut names = NameCache::default();
        for i in 0..3 * super::EXIT_NAMES {
            let own = format!("EXIT_{i}");
            assert_eq!(
                names.exit_key(Some(Isa::Vmx), &own),
                &crate::profile::Key::exit_named(Some(Isa::Vmx), &own)
            );
            assert_eq!(
                names.exit_key(Some(Isa::Vmx), "HLT"),
                &crate::profile::Key::exit_named(Some(Isa::Vmx), "HLT")
            );
        }
        assert!(names.decoded.len() <= super::EXIT_NAMES);
        assert!(names.keys.values().map(|k| k.len()).sum::<usize>() <= super::EXIT_NAMES);
    }
}

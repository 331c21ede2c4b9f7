//! The event names a profile builder has seen, interned: each distinct name is stored once and
//! known by a small id from then on. Memory is bounded: after [`MAX_NAMES`] distinct names,
//! new names are counted under one (endless new names are garbage read under a forced format).

use rustc_hash::FxHashMap as HashMap;

/// The most distinct event names kept; later new names are counted as [`OTHER_NAMES`].
pub(super) const MAX_NAMES: usize = 65_536;

/// The name counting the events whose names came after [`MAX_NAMES`] others.
pub(super) const OTHER_NAMES: &str = "other event names";

/// Ways of the cache of recently looked-up names.
const RECENT: usize = 8;

/// Interned event names; see the module doc.
#[derive(Debug)]
pub(super) struct EventNames {
    names: Vec<String>,
    ids: HashMap<String, u32>,
    /// Lookups of a new name after [`MAX_NAMES`] others.
    pub more: u64,
    recent: [(usize, u32); RECENT],
}

impl Default for EventNames {
    fn default() -> Self {
        Self {
            names: Vec::new(),
            ids: HashMap::default(),
            more: 0,
            recent: [(0, 0); RECENT],
        }
    }
}

impl EventNames {
    /// The id of `name`, interned on first sight.
    pub(super) fn id(&mut self, name: &str) -> u32 {
        // Binary sources hand the same `&str` for every event of a kind: a small cache keyed
        // by its address, checked against the content (text sources reuse line buffers, so an
        // address alone proves nothing), skips the hash map.
        let addr = name.as_ptr() as usize;
        let way = ((addr >> 3) ^ name.len()) % RECENT;
        let (cached_addr, cached_id) = self.recent[way];
        if cached_addr == addr
            && self
                .names
                .get(cached_id as usize)
                .is_some_and(|n| n == name)
        {
            return cached_id;
        }
        let id = match self.ids.get(name) {
            Some(&id) => id,
            None if self.names.len() >= MAX_NAMES => {
                self.more += 1;
                match self.ids.get(OTHER_NAMES) {
                    Some(&id) => id,
                    None => self.add(OTHER_NAMES),
                }
            }
            None => self.add(name),
        };
        self.recent[way] = (addr, id);
        id
    }

    /// The name of id `id`.
    pub(super) fn get(&self, id: u32) -> Option<&str> {
        self.names.get(id as usize).map(String::as_str)
    }

    fn add(&mut self, name: &str) -> u32 {
        let id = self.names.len() as u32;
        self.names.push(name.to_string());
        self.ids.insert(name.to_string(), id);
        id
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_interned_once_and_bounded() {
        let mut n = EventNames::default();
        let a = n.id("kvm_exit");
        // Same content at another address: the cache checks the content, the map finds it.
        let other = String::from("kvm_exit");
        assert_eq!(n.id(&other), a);
        assert_eq!(n.get(a), Some("kvm_exit"));
        for i in 1..MAX_NAMES {
            n.id(&format!("e{i}"));
        }
        assert_eq!(n.more, 0);
        let over = n.id("one too many");
        assert_eq!(n.get(over), Some(OTHER_NAMES));
        assert_eq!(n.id("and another"), over);
        assert_eq!(n.more, 2);
        // Names seen before the bound keep their ids.
        assert_eq!(n.id("e7"), 7);
    }
}

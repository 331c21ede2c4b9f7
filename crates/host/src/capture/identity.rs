//! Who hit each event: thread ids (`common_pid`) are resolved while the threads still live,
//! the first time a capture sees them: their process (kept only when it is a VMM, see
//! `discovery`), name and vCPU. VMMs are looked at once each; their names fill the profile's
//! `origin.vm_names`.

use std::collections::{BTreeMap, HashMap};

use virtlens_core::capture::ThreadInfo;

use crate::discovery::{self, Vmm, vcpus};

/// What a VMM process contributes to its threads' identities.
#[derive(Debug, Clone)]
struct VmmName {
    name: String,
}

/// Thread and VMM identities seen by one capture.
#[derive(Debug, Default)]
pub(crate) struct Identities {
    threads: HashMap<u32, ThreadInfo>,
    vmms: HashMap<u32, Option<VmmName>>,
    /// The last thread looked up, since events come in runs from one thread.
    last: Option<u32>,
}

impl Identities {
    /// Identities already known from a scan of the host's VMMs.
    pub(crate) fn from_scan(vmms: &[Vmm]) -> Self {
        let mut ids = Identities::default();
        for v in vmms {
            ids.add_vmm(v);
        }
        ids
    }

    fn add_vmm(&mut self, v: &Vmm) {
        self.vmms.insert(
            v.pid,
            Some(VmmName {
                name: v.name.clone(),
            }),
        );
        for t in &v.threads {
            self.threads.insert(
                t.tid,
                ThreadInfo::new(Some(v.pid), Some(t.comm.clone()), t.vcpu),
            );
        }
    }

    /// Resolves thread `tid` if it is new.
    #[inline]
    pub(crate) fn see(&mut self, tid: u32) {
        if self.last == Some(tid) {
            return;
        }
        self.last = Some(tid);
        if !self.threads.contains_key(&tid) {
            let info = self.resolve(tid);
            self.threads.insert(tid, info);
        }
    }

    fn resolve(&mut self, tid: u32) -> ThreadInfo {
        if tid == 0 {
            return ThreadInfo::default();
        }
        let Some((tgid, comm)) = discovery::thread_owner(tid) else {
            return ThreadInfo::default();
        };
        if let std::collections::hash_map::Entry::Vacant(slot) = self.vmms.entry(tgid) {
            match discovery::probe(tgid) {
                Some(v) => {
                    self.add_vmm(&v);
                    if let Some(known) = self.threads.get(&tid) {
                        return known.clone();
                    }
                }
                None => {
                    slot.insert(None);
                }
            }
        }
        match self.vmms.get(&tgid) {
            Some(Some(_)) => {
                let vcpu = vcpus::vcpu_of_thread(&comm);
                ThreadInfo::new(Some(tgid), Some(comm), vcpu)
            }
            _ => ThreadInfo::new(None, Some(comm), None),
        }
    }

    /// What is known of thread `tid`.
    #[inline]
    pub(crate) fn get(&self, tid: u32) -> Option<&ThreadInfo> {
        self.threads.get(&tid)
    }

    /// The names of the VMMs whose threads were seen (or were known at the start).
    pub(crate) fn vm_names(&self) -> BTreeMap<u32, String> {
        self.vmms
            .iter()
            .filter_map(|(pid, v)| Some((*pid, v.as_ref()?.name.clone())))
            .collect()
    }

    /// The names of the VMMs among `pids`.
    pub(crate) fn names_of(&self, pids: impl Iterator<Item = u32>) -> BTreeMap<u32, String> {
        let all = self.vm_names();
        pids.filter_map(|p| Some((p, all.get(&p)?.clone())))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_thread_is_resolved_once() {
        let me = std::process::id();
        let mut ids = Identities::default();
        ids.see(me);
        ids.see(me);
        let t = ids.get(me).cloned().unwrap_or_default();
        assert!(t.comm.is_some());
        ids.see(0);
        assert_eq!(ids.get(0), Some(&ThreadInfo::default()));
    }
}

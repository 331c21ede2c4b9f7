//! Who hit each event: thread ids (`common_pid`) are resolved while the threads still live,
//! the first time a capture sees them: their process (kept only when it is a VMM, see
//! `discovery`), name and vCPU. VMMs are looked at once each; their names fill the profile's
//! `origin.vm_names`.
//!
//! A VMM that ran and exited between two reads of the buffers is gone from /proc by the time
//! its events are read. Its threads are then found in what the kernel kept while tracing
//! (`saved_tgids`, filled because the capture's instance sets `record-tgid`, and
//! `saved_cmdlines`). One caught as it exits is still in /proc, but without its KVM files
//! open, so it is not taken for a VMM. Either way a thread that hit a `kvm` event belongs to
//! a process that used KVM, so that process counts as the VMM, without a name.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;

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
    /// The last thread looked up, since events come in runs from one thread, and whether its
    /// process is settled (else a `kvm` event may still give it one, see [`Self::see`]).
    last: Option<(u32, bool)>,
    /// The tracefs root whose `saved_tgids`/`saved_cmdlines` name exited threads.
    saved: Option<PathBuf>,
    /// Threads with their process not taken for a VMM (exited, or exiting), not yet seen
    /// hitting a `kvm` event.
    unsettled: HashMap<u32, u32>,
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

    /// Exited threads are looked up in `saved_tgids` and `saved_cmdlines` under `root`.
    pub(crate) fn with_saved(mut self, root: PathBuf) -> Self {
        self.saved = Some(root);
        self
    }

    /// Resolves thread `tid` if it is new; `kvm`: the event it hit is a `kvm` one.
    #[inline]
    pub(crate) fn see(&mut self, tid: u32, kvm: bool) {
        if let Some((t, settled)) = self.last
            && t == tid
            && (settled || !kvm)
        {
            return;
        }
        if !self.threads.contains_key(&tid) {
            let info = self.resolve(tid);
            self.threads.insert(tid, info);
        }
        if kvm
            && let Some(tgid) = self.unsettled.remove(&tid)
            && let Some(t) = self.threads.get_mut(&tid)
        {
            t.pid = Some(tgid);
        }
        self.last = Some((tid, !self.unsettled.contains_key(&tid)));
    }

    fn resolve(&mut self, tid: u32) -> ThreadInfo {
        if tid == 0 {
            return ThreadInfo::default();
        }
        let Some((tgid, comm)) = discovery::thread_owner(tid) else {
            return self.exited_thread(tid);
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
            _ => {
                self.unsettled.insert(tid, tgid);
                ThreadInfo::new(None, Some(comm), None)
            }
        }
    }

    /// A thread gone from /proc: its process and name as the kernel saved them while tracing
    /// (its process is set once it is seen hitting a `kvm` event).
    fn exited_thread(&mut self, tid: u32) -> ThreadInfo {
        let Some(root) = &self.saved else {
            return ThreadInfo::default();
        };
        let tgid = saved_entry(&root.join("saved_tgids"), tid).and_then(|v| v.parse().ok());
        let comm = saved_entry(&root.join("saved_cmdlines"), tid);
        if let Some(tgid) = tgid {
            self.unsettled.insert(tid, tgid);
        }
        let vcpu = comm.as_deref().and_then(vcpus::vcpu_of_thread);
        ThreadInfo::new(None, comm, vcpu)
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

/// The value after `tid` in a `TID VALUE` listing of tracefs (`saved_tgids`,
/// `saved_cmdlines`).
fn saved_entry(path: &std::path::Path, tid: u32) -> Option<String> {
    let text = std::fs::read_to_string(path).ok()?;
    let key = tid.to_string();
    text.lines().find_map(|l| {
        let (t, v) = l.split_once(' ')?;
        (t == key).then(|| v.trim().to_string())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_thread_is_resolved_once() {
        let me = std::process::id();
        let mut ids = Identities::default();
        ids.see(me, false);
        ids.see(me, false);
        let t = ids.get(me).cloned().unwrap_or_default();
        assert!(t.comm.is_some());
        ids.see(0, true);
        assert_eq!(ids.get(0), Some(&ThreadInfo::default()));
    }

    /// A process that is no VMM when looked at (as a VMM that is exiting, its KVM files
    /// closed, is not) gets its threads' process once one of them hits a `kvm` event.
    #[test]
    fn a_thread_hitting_a_kvm_event_gets_its_process_though_no_vmm() {
        use std::io::{Read, Write};

        let mut children: Vec<std::process::Child> = (0..2)
            .map(|_| {
                let mut c = std::process::Command::new("cat")
                    .stdin(std::process::Stdio::piped())
                    .stdout(std::process::Stdio::piped())
                    .spawn()
                    .unwrap();
                // A line echoed back says `cat` runs: before its exec the child still has
                // this thread's name.
                let (input, output) = (c.stdin.as_mut().unwrap(), c.stdout.as_mut().unwrap());
                input.write_all(b"up\n").unwrap();
                let mut echo = [0u8; 3];
                output.read_exact(&mut echo).unwrap();
                assert_eq!(&echo, b"up\n");
                c
            })
            .collect();
        let (kvm, plain) = (children[0].id(), children[1].id());
        let mut ids = Identities::default();
        ids.see(kvm, false);
        assert_eq!(
            ids.get(kvm).and_then(|t| t.pid),
            None,
            "no VMM, no kvm event yet"
        );
        ids.see(kvm, true);
        ids.see(plain, false);
        assert_eq!(ids.get(kvm).and_then(|t| t.pid), Some(kvm));
        assert_eq!(ids.get(plain).and_then(|t| t.pid), None);
        assert_eq!(
            ids.get(kvm).and_then(|t| t.comm.clone()).as_deref(),
            Some("cat")
        );
        for c in &mut children {
            drop(c.stdin.take());
            c.wait().unwrap();
        }
    }
}

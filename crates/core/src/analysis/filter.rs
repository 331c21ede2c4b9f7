//! `--pid`, `--vm` and `--vcpu`: keeping only the rows of one VM or vCPU. Works on any
//! profile; when an input cannot tell VMs or vCPUs apart, its rows are dropped and a note
//! says why, rather than showing data that may belong to other guests.

use crate::profile::{Note, Profile};

/// Which rows to keep; `None` fields do not filter.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Filter {
    pub pid: Option<u32>,
    /// A VM name, matched against the input's VM names (exact, else a unique substring).
    pub vm: Option<String>,
    pub vcpu: Option<u32>,
}

impl Filter {
    /// True when nothing is filtered.
    pub fn is_empty(&self) -> bool {
        *self == Filter::default()
    }
}

/// `profile` with only the rows `filter` keeps; tables left empty are removed.
pub fn apply(mut profile: Profile, filter: &Filter) -> Profile {
    if filter.is_empty() {
        return profile;
    }
    let mut pids: Option<Vec<u32>> = filter.pid.map(|p| vec![p]);
    if let Some(name) = &filter.vm {
        let names = &profile.origin.vm_names;
        let exact: Vec<u32> = names
            .iter()
            .filter(|(_, n)| *n == name)
            .map(|(p, _)| *p)
            .collect();
        let by_name = if exact.is_empty() {
            names
                .iter()
                .filter(|(_, n)| n.contains(name.as_str()))
                .map(|(p, _)| *p)
                .collect()
        } else {
            exact
        };
        if by_name.is_empty() {
            profile.warnings.push(Note {
                line: None,
                message: format!(
                    "no VM named `{name}` in this input (it names: {})",
                    list(&profile)
                ),
            });
        }
        pids = Some(match pids {
            Some(p) => p.into_iter().filter(|x| by_name.contains(x)).collect(),
            None => by_name,
        });
    }
    let mut notes = Vec::new();
    for t in &mut profile.tables {
        let before = t.rows.len();
        if let Some(pids) = &pids {
            if t.rows.iter().all(|r| r.pid.is_none()) && before > 0 {
                notes.push(format!(
                    "{} table{}: no per-VM breakdown, so it cannot be filtered by VM",
                    t.kind,
                    t.label
                        .as_deref()
                        .map(|l| format!(" `{l}`"))
                        .unwrap_or_default()
                ));
            }
            t.rows.retain(|r| r.pid.is_some_and(|p| pids.contains(&p)));
        }
        if let Some(vcpu) = filter.vcpu {
            if t.rows.iter().all(|r| r.vcpu.is_none()) && !t.rows.is_empty() {
                notes.push(format!(
                    "{} table{}: no per-vCPU breakdown, so it cannot be filtered by vCPU",
                    t.kind,
                    t.label
                        .as_deref()
                        .map(|l| format!(" `{l}`"))
                        .unwrap_or_default()
                ));
            }
            t.rows.retain(|r| r.vcpu == Some(vcpu));
        }
    }
    profile.tables.retain(|t| !t.rows.is_empty());
    // The timeline keeps the lanes of the VMs and vCPU kept (a lane of folded vCPUs, or one
    // whose VM or vCPU is unknown, cannot be told to be theirs).
    if let Some(t) = &mut profile.timeline {
        t.lanes.retain(|l| {
            l.folded == 0
                && pids
                    .as_ref()
                    .is_none_or(|p| l.pid.is_some_and(|x| p.contains(&x)))
                && filter.vcpu.is_none_or(|v| l.vcpu == Some(v))
        });
    }
    if profile
        .timeline
        .as_ref()
        .is_some_and(|t| t.lanes.is_empty())
    {
        profile.timeline = None;
    }
    profile
        .warnings
        .extend(notes.into_iter().map(|message| Note {
            line: None,
            message,
        }));
    profile
}

fn list(p: &Profile) -> String {
    if p.origin.vm_names.is_empty() {
        return "none".into();
    }
    p.origin
        .vm_names
        .iter()
        .map(|(pid, n)| format!("{n} (pid {pid})"))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::{Key, Origin, Row, Table, TableKind};

    fn profile() -> Profile {
        let mut p = Profile::new(Origin::new("test", None));
        p.origin.vm_names.insert(10, "win10".into());
        p.origin.vm_names.insert(20, "linux-db".into());
        let mut t = Table::new(TableKind::Vmexit);
        for (pid, vcpu) in [(10, 0), (10, 1), (20, 0)] {
            let mut r = Row::new(
                Key::Exit {
                    code: Some(12),
                    name: "HLT".into(),
                },
                5,
            );
            r.pid = Some(pid);
            r.vcpu = Some(vcpu);
            t.rows.push(r);
        }
        p.tables.push(t);
        p
    }

    #[test]
    fn by_vm_name_and_vcpu() {
        let f = Filter {
            vm: Some("win".into()),
            vcpu: Some(1),
            ..Filter::default()
        };
        let p = apply(profile(), &f);
        assert_eq!(p.tables[0].rows.len(), 1);
        assert_eq!(
            (p.tables[0].rows[0].pid, p.tables[0].rows[0].vcpu),
            (Some(10), Some(1))
        );
        let p = apply(
            profile(),
            &Filter {
                pid: Some(20),
                ..Filter::default()
            },
        );
        assert_eq!(p.tables[0].count(), 5);
    }

    #[test]
    fn unknown_vm_and_missing_breakdown_are_explained() {
        let p = apply(
            profile(),
            &Filter {
                vm: Some("nope".into()),
                ..Filter::default()
            },
        );
        assert!(p.tables.is_empty());
        assert!(
            p.warnings[0].message.contains("win10 (pid 10)"),
            "{:?}",
            p.warnings
        );
        let mut q = profile();
        q.tables[0].rows.iter_mut().for_each(|r| r.pid = None);
        let q = apply(
            q,
            &Filter {
                pid: Some(10),
                ..Filter::default()
            },
        );
        assert!(q.tables.is_empty());
        assert!(q.warnings[0].message.contains("no per-VM breakdown"));
    }
}

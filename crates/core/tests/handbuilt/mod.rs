//! Hand-built evidence for the per-rule tests: profiles made in code — exit tables with counts
//! and mean times, port/MMIO/MSR tables, kvm_stat counters with printed rates, trace events,
//! userspace exits, capture windows, vCPU scheduler samples — and a diagnosis of them under given options, with the
//! lookups the tests use.

use virtlens_core::config::GuestFamily;
use virtlens_core::decode::{Decoder, Isa};
use virtlens_core::diagnose::{self, Diagnosis, Finding, Options};
use virtlens_core::profile::{
    Access, Key, Origin, Profile, Row, SchedSamples, Table, TableKind, TimeStats, Window,
};

/// One profile under construction.
pub struct P {
    profile: Profile,
    window_ns: Option<u64>,
}

/// A new empty profile.
pub fn profile() -> P {
    P {
        profile: Profile::new(Origin::new("handbuilt", Some("handbuilt.txt"))),
        window_ns: None,
    }
}

fn row(key: Key, count: u64, mean_us: Option<f64>) -> Row {
    let mut r = Row::new(key, count);
    r.time = TimeStats {
        total_ns: mean_us.map(|m| (m * 1000.0 * count as f64) as u64),
        ..TimeStats::unknown()
    };
    r
}

impl P {
    /// Every table after this call covers `seconds`.
    pub fn window(mut self, seconds: f64) -> P {
        self.window_ns = Some((seconds * 1e9) as u64);
        for t in &mut self.profile.tables {
            t.window = Some(Window {
                duration_ns: self.window_ns,
                ..Window::default()
            });
        }
        self
    }

    fn table(mut self, kind: TableKind, isa: Option<Isa>, rows: Vec<Row>) -> P {
        let mut t = Table::new(kind);
        t.isa = isa;
        t.rows = rows;
        t.window = self.window_ns.map(|w| Window {
            duration_ns: Some(w),
            ..Window::default()
        });
        self.profile.tables.push(t);
        self
    }

    /// VMX exit reasons `(name, count, mean µs)`.
    pub fn vmx(self, rows: &[(&str, u64, f64)]) -> P {
        self.exits(Isa::Vmx, rows, true)
    }

    /// SVM exit reasons `(name, count, mean µs)`.
    pub fn svm(self, rows: &[(&str, u64, f64)]) -> P {
        self.exits(Isa::Svm, rows, true)
    }

    fn exits(self, isa: Isa, rows: &[(&str, u64, f64)], timed: bool) -> P {
        let rows = rows
            .iter()
            .map(|(n, c, m)| {
                let key = Key::Exit {
                    code: None,
                    name: n.to_string(),
                };
                row(key, *c, timed.then_some(*m))
            })
            .collect();
        self.table(TableKind::Vmexit, Some(isa), rows)
    }

    /// Ports `(port, access, count, mean µs)`.
    pub fn ports(self, rows: &[(u64, Access, u64, f64)]) -> P {
        let rows = rows
            .iter()
            .map(|(p, a, c, m)| {
                let key = Key::Port {
                    port: *p,
                    access: Some(*a),
                };
                row(key, *c, Some(*m))
            })
            .collect();
        self.table(TableKind::Ioport, None, rows)
    }

    /// MMIO addresses `(gpa, access, count, mean µs)`.
    pub fn mmio(self, rows: &[(u64, Access, u64, f64)]) -> P {
        let rows = rows
            .iter()
            .map(|(g, a, c, m)| {
                let key = Key::Mmio {
                    gpa: *g,
                    access: Some(*a),
                };
                row(key, *c, Some(*m))
            })
            .collect();
        self.table(TableKind::Mmio, None, rows)
    }

    /// MSRs `(index, access, count, mean µs)`.
    pub fn msrs(self, rows: &[(u64, Access, u64, f64)]) -> P {
        let rows = rows
            .iter()
            .map(|(i, a, c, m)| {
                let key = Key::Msr {
                    index: *i,
                    access: Some(*a),
                };
                row(key, *c, Some(*m))
            })
            .collect();
        self.table(TableKind::Msr, None, rows)
    }

    fn named(self, kind: &str, rows: &[(&str, u64)]) -> P {
        let rows = rows
            .iter()
            .map(|(n, c)| {
                Row::new(
                    Key::Event {
                        name: n.to_string(),
                    },
                    *c,
                )
            })
            .collect();
        self.table(TableKind::from_name(kind), None, rows)
    }

    /// kvm_stat counters `(name, total, printed rate per second)`.
    pub fn kvm_stat(self, rows: &[(&str, u64, u64)]) -> P {
        let totals: Vec<(&str, u64)> = rows.iter().map(|(n, t, _)| (*n, *t)).collect();
        let rates: Vec<(&str, u64)> = rows.iter().map(|(n, _, r)| (*n, *r)).collect();
        let mut p = self.named("kvm_stat", &totals);
        if let Some(t) = p.profile.tables.last_mut() {
            t.overlapping = true;
        }
        let mut p = p.named("kvm_stat_rate", &rates);
        if let Some(t) = p.profile.tables.last_mut() {
            t.overlapping = true;
            t.per_second = true;
            t.window = None;
        }
        p
    }

    /// KVM binary statistics a capture read (`kvm_stats`): increments `(name, count)` over the
    /// window.
    pub fn kvm_stats(self, rows: &[(&str, u64)]) -> P {
        let mut p = self.named(virtlens_core::profile::KVM_STATS_KIND, rows);
        if let Some(t) = p.profile.tables.last_mut() {
            t.overlapping = true;
        }
        p
    }

    /// The KVM backend the input names (`vmx`, `svm`, `pvm`).
    pub fn backend(mut self, name: &str) -> P {
        self.profile.origin.backend = Some(name.to_string());
        self
    }

    /// Trace events counted by name.
    pub fn events(self, rows: &[(&str, u64)]) -> P {
        self.named("events", rows)
    }

    /// Exits to userspace by reason.
    pub fn userspace(self, rows: &[(&str, u64)]) -> P {
        self.named("userspace_exit", rows)
    }

    /// The vCPU threads' scheduler samples of a live capture.
    pub fn sched(mut self, samples: SchedSamples) -> P {
        self.profile.sched = Some(samples);
        self
    }

    pub fn build(self) -> Profile {
        self.profile
    }
}

/// The options of a diagnosis.
#[derive(Default, Clone)]
pub struct O {
    pub options: Options,
}

pub fn opts() -> O {
    O::default()
}

impl O {
    pub fn windows(mut self) -> O {
        self.options.guest = Some(GuestFamily::Windows);
        self
    }

    pub fn linux(mut self) -> O {
        self.options.guest = Some(GuestFamily::Linux);
        self
    }

    pub fn vcpus(mut self, n: u32) -> O {
        self.options.vcpus = Some(n);
        self
    }

    pub fn iops(mut self, n: f64) -> O {
        self.options.io = Some(virtlens_core::diagnose::IoRate {
            iops: n,
            basis: "option",
            fio: None,
        });
        self
    }

    pub fn apicv(mut self, on: bool) -> O {
        self.options.host.apicv = Some(on);
        self.options.host.avic = Some(on);
        self
    }
}

/// The diagnosis of `p` under `o`.
pub fn run(p: P, o: &O) -> Diagnosis {
    diagnose::diagnose(&[p.build()], None, &Decoder::builtin(), &o.options)
}

/// The finding `id`, or a panic listing what was found.
pub fn get<'a>(d: &'a Diagnosis, id: &str) -> &'a Finding {
    d.findings
        .iter()
        .find(|f| f.id == id)
        .unwrap_or_else(|| panic!("no {id}: {:?}", ids(d)))
}

pub fn has(d: &Diagnosis, id: &str) -> bool {
    d.findings.iter().any(|f| f.id == id)
}

pub fn ids(d: &Diagnosis) -> Vec<(String, String)> {
    d.findings
        .iter()
        .map(|f| (f.id.clone(), f.severity.name().to_string()))
        .collect()
}

/// The main problem's id, `-` without one.
pub fn main_id(d: &Diagnosis) -> String {
    d.main_of(1)
        .map_or_else(|| "-".to_string(), |f| f.id.clone())
}

/// Every advice tag any finding gives.
pub fn advice(d: &Diagnosis) -> Vec<&'static str> {
    d.findings
        .iter()
        .flat_map(|f| f.advice.iter().copied())
        .collect()
}

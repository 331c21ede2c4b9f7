//! The `sched.*` rules on hand-built scheduler samples, positive and negative: vCPUs that
//! outnumber the host's CPUs (`sched.overcommit`, its fix predicted by the over-commit model),
//! vCPUs that wait behind other load (`sched.vcpu-ready`), long waits per dispatch, a short
//! window, bursts that are not sustained, the host's own steal as context, and a mostly halted
//! vCPU that raises nothing.

use virtlens_core::diagnose::{Measure, Role, Scenario, Severity, Verdict};
use virtlens_core::diagnose::{READY_SHARE as READY, model_effect};
use virtlens_core::profile::{HostTicks, SchedInterval, SchedSamples, VcpuSched};

use crate::handbuilt::{advice, get, has, ids, main_id, opts, profile, run};

/// Samples under construction: shares are of the window.
struct S {
    s: SchedSamples,
    intervals: u64,
    burst: bool,
}

fn host(cpus: u32, window_s: f64, readings: u64) -> S {
    S {
        s: SchedSamples {
            online_cpus: cpus,
            window_ns: (window_s * 1e9) as u64,
            state_samples: readings,
            ..SchedSamples::default()
        },
        intervals: 3,
        burst: false,
    }
}

impl S {
    /// A vCPU of VMM `pid`: run and wait shares of the window, dispatches, and the share of
    /// readings that saw it runnable.
    fn vcpu(mut self, pid: u32, run: f64, wait: f64, dispatches: u64, runnable: f64) -> S {
        let n = self.s.vcpus.len() as u32;
        let w = self.s.window_ns as f64;
        self.s.vm_names.insert(pid, format!("vm{pid}"));
        self.s.vcpus.push(VcpuSched {
            pid,
            tid: pid * 100 + n,
            vcpu: Some(n),
            comm: format!("CPU {n}/KVM"),
            wall_ns: self.s.window_ns,
            run_ns: (run * w) as u64,
            wait_ns: (wait * w) as u64,
            dispatches,
            samples: self.s.state_samples,
            runnable_samples: (runnable * self.s.state_samples as f64) as u64,
        });
        self
    }

    /// `k` identical vCPUs of VMM `pid`.
    fn vcpus(mut self, k: u32, pid: u32, run: f64, wait: f64, runnable: f64) -> S {
        for _ in 0..k {
            self = self.vcpu(pid, run, wait, 100, runnable);
        }
        self
    }

    /// The host's busy and steal shares of all its ticks.
    fn busy(mut self, busy: f64, steal: f64) -> S {
        let total = f64::from(self.s.online_cpus) * self.s.window_ns as f64 / 1e9 * 100.0;
        self.s.host = HostTicks {
            busy: (busy * total) as u64,
            steal: (steal * total) as u64,
            idle: ((1.0 - busy - steal).max(0.0) * total) as u64,
            hz: 100,
        };
        self
    }

    /// All runnable readings in the first interval: a burst, not sustained.
    fn burst(mut self) -> S {
        self.burst = true;
        self
    }

    fn done(mut self) -> SchedSamples {
        let runnable: u64 = self.s.vcpus.iter().map(|v| v.runnable_samples).sum();
        let n = self.intervals;
        for i in 0..n {
            let share = if self.burst {
                u64::from(i == 0) * runnable
            } else {
                runnable / n
            };
            self.s.push_interval(SchedInterval {
                start_ns: i * self.s.window_ns / n,
                duration_ns: self.s.window_ns / n,
                state_samples: self.s.state_samples / n,
                runnable: share,
                vcpus: self.s.vcpus.len() as u32,
                ..SchedInterval::default()
            });
        }
        self.s
    }
}

/// Six busy vCPUs on two CPUs: each runs a third of the time and waits the rest.
fn crowded() -> SchedSamples {
    host(2, 3.0, 60)
        .vcpus(6, 41, 0.33, 0.64, 1.0)
        .busy(1.0, 0.0)
        .done()
}

#[test]
fn vcpus_that_outnumber_the_cpus_are_overcommit_with_the_fix_the_model_predicts() {
    let d = run(profile().sched(crowded()), &opts());
    assert_eq!(main_id(&d), "sched.overcommit", "{:?}", ids(&d));
    assert!(!has(&d, "sched.vcpu-ready"), "one cause, one finding");
    let f = get(&d, "sched.overcommit");
    assert_eq!(f.severity, Severity::High);
    assert_eq!(f.grade.measure, Measure::ReadyShare);
    assert!((f.grade.value.unwrap() - 0.64).abs() < 1e-6);
    assert_eq!(f.tag, "sched.overcommit");
    // One row per vCPU thread, each with its ready share.
    let rows: Vec<_> = f.evidence.iter().filter(|e| e.explains).collect();
    assert_eq!(rows.len(), 6);
    assert!(
        rows.iter()
            .all(|e| e.time_share.is_some_and(|r| (r - 0.64).abs() < 1e-6))
    );
    let cost = f.cost.as_ref().unwrap();
    assert!(cost.cpu_share.is_some_and(|c| (c - 0.64).abs() < 1e-6));
    // The model: six vCPUs each wanting 97% of a CPU on two CPUs wait about two thirds of the
    // time; cut to the most vCPUs that wait under 5%, the wait is gone.
    let m = f.effect.model.as_ref().expect("a model prediction");
    assert_eq!((m.pcpus, m.vcpus), (2, 6));
    assert!((m.ready_predicted - 0.64).abs() < 0.05, "{m:?}");
    assert!(matches!(m.scenario, Scenario::FewerVcpus { vcpus } if vcpus < 6));
    assert!(m.ready_after < READY[0]);
    assert!(f.effect.removes > 0.9 && f.effect.cpu_share_saved.unwrap() > 0.5);
    for tag in [
        "advice.fewer-vcpus",
        "advice.pin-vcpus",
        "advice.cpu-weight",
        "advice.move-vm",
    ] {
        assert!(advice(&d).contains(&tag), "{tag}: {:?}", advice(&d));
    }
    let libvirt: Vec<_> = f
        .fixes
        .iter()
        .filter_map(|x| x.libvirt.as_deref())
        .collect();
    assert!(libvirt.iter().any(|x| x.contains("<vcpupin")));
    assert!(libvirt.iter().any(|x| x.contains("<shares>")));
    assert_eq!(d.inputs[0].verdict, Verdict::Problem);
    assert!(d.inputs[0].evidence.tables.contains(&"sched"));
}

#[test]
fn vcpus_that_fit_but_wait_behind_other_load_are_vcpu_ready() {
    // Two vCPUs on two CPUs, but a CPU's worth of other work: each waits 30%.
    let s = host(2, 3.0, 60)
        .vcpus(2, 7, 0.5, 0.3, 0.8)
        .busy(1.0, 0.0)
        .done();
    let d = run(profile().sched(s), &opts().linux());
    assert!(!has(&d, "sched.overcommit"), "{:?}", ids(&d));
    let f = get(&d, "sched.vcpu-ready");
    assert_eq!(f.severity, Severity::High);
    assert_eq!(f.fix_summary(), "find the other load and move or limit it");
    let m = f.effect.model.as_ref().unwrap();
    assert_eq!(m.scenario, Scenario::NoOtherLoad);
    assert!(m.background_cpus > 0.9, "{m:?}");
    assert!(m.ready_after < m.ready_predicted);
    // The Linux guest's words only.
    assert!(
        f.fixes
            .iter()
            .all(|x| x.guest != virtlens_core::diagnose::ForGuest::Windows)
    );
}

#[test]
fn a_mostly_halted_vcpu_raises_nothing() {
    let s = host(2, 3.0, 60)
        .vcpu(9, 0.02, 0.001, 300, 0.02)
        .busy(0.3, 0.0)
        .done();
    let d = run(profile().sched(s), &opts());
    assert!(
        d.findings.iter().all(|f| !f.id.starts_with("sched.")),
        "{:?}",
        ids(&d)
    );
    assert_eq!(d.inputs[0].verdict, Verdict::NothingAlarming);
}

#[test]
fn a_short_window_is_low_at_most() {
    let s = host(2, 0.3, 5)
        .vcpus(6, 41, 0.33, 0.64, 1.0)
        .busy(1.0, 0.0)
        .done();
    let d = run(profile().sched(s), &opts());
    let f = get(&d, "sched.overcommit");
    assert_eq!(f.severity, Severity::Low);
    assert_eq!(f.grade.capped_at, Some(Severity::Low));
}

#[test]
fn long_waits_per_dispatch_raise_a_small_ready_share() {
    // 3% ready, but 3,000 dispatches each waiting 150 µs (0.45 s over 15 s).
    let many = host(2, 15.0, 300)
        .vcpu(5, 0.2, 0.03, 3_000, 0.25)
        .busy(0.4, 0.0)
        .done();
    let d = run(profile().sched(many), &opts());
    let f = get(&d, "sched.vcpu-ready");
    assert_eq!(f.severity, Severity::Medium, "{:?}", f.grade);
    // The same mean over too few dispatches is no evidence.
    let few = host(2, 15.0, 300)
        .vcpu(5, 0.2, 0.003, 300, 0.25)
        .busy(0.4, 0.0)
        .done();
    assert!(!has(
        &run(profile().sched(few), &opts()),
        "sched.vcpu-ready"
    ));
}

#[test]
fn a_burst_of_runnable_vcpus_is_not_sustained_overcommit() {
    let s = host(2, 3.0, 60)
        .vcpus(6, 41, 0.2, 0.2, 0.5)
        .busy(0.8, 0.0)
        .burst()
        .done();
    let d = run(profile().sched(s), &opts());
    assert!(!has(&d, "sched.overcommit"), "{:?}", ids(&d));
    assert!(has(&d, "sched.vcpu-ready"));
}

#[test]
fn the_hosts_own_steal_is_context_apart() {
    let s = host(2, 3.0, 60)
        .vcpu(9, 0.02, 0.001, 300, 0.02)
        .busy(0.3, 0.15)
        .done();
    let d = run(profile().sched(s), &opts());
    let f = get(&d, "sched.host-steal");
    assert_eq!(f.role, Role::Context);
    assert_eq!(f.severity, Severity::Low);
    assert!(
        f.evidence[0]
            .time_share
            .is_some_and(|x| (x - 0.15).abs() < 0.01)
    );
    let calm = host(2, 3.0, 60)
        .vcpu(9, 0.02, 0.001, 300, 0.02)
        .busy(0.3, 0.01)
        .done();
    assert!(!has(
        &run(profile().sched(calm), &opts()),
        "sched.host-steal"
    ));
}

#[test]
fn samples_go_to_the_first_input_of_a_file_and_survive_json() {
    let p = profile()
        .vmx(&[("HLT", 1000, 500.0)])
        .sched(crowded())
        .build();
    let json = serde_json::to_string(&p).unwrap();
    let back: virtlens_core::profile::Profile = serde_json::from_str(&json).unwrap();
    assert_eq!(back.sched, p.sched);
    // A profile without samples reads as before.
    let old = json.replace(
        &format!(",\"sched\":{}", serde_json::to_string(&p.sched).unwrap()),
        "",
    );
    let old: virtlens_core::profile::Profile = serde_json::from_str(&old).unwrap();
    assert!(old.sched.is_none());
    // Two labelled runs in one file: the samples are counted once, with the first.
    let mut two = p.clone();
    two.tables[0].label = Some("before".into());
    let mut second = two.tables[0].clone();
    second.label = Some("after".into());
    two.tables.push(second);
    let d = virtlens_core::diagnose::diagnose(
        &[two],
        None,
        &virtlens_core::decode::Decoder::builtin(),
        &virtlens_core::diagnose::Options::default(),
    );
    assert_eq!(d.inputs.len(), 2);
    let sched_of = |n: usize| d.of_input(n).filter(|f| f.id.starts_with("sched.")).count();
    assert_eq!((sched_of(1), sched_of(2)), (1, 0), "{:?}", ids(&d));
}

#[test]
fn the_model_effect_is_shared_and_honest_about_what_cannot_fit() {
    // Other load alone fills the host: no vCPU count gets the wait under 5%.
    let m = model_effect(2, 4, 1.0, 2.5, 0.8, true).unwrap();
    assert_eq!(m.scenario, Scenario::FewerVcpus { vcpus: 1 });
    assert!(m.ready_after > READY[0]);
    assert!(model_effect(0, 4, 1.0, 0.0, 0.5, true).is_none());
    assert!(model_effect(2, 4, 0.0, 0.0, 0.5, true).is_none());
}

//! `virtlens model overcommit`: how much longer vCPUs take, and how much of the time they wait
//! for a physical CPU ("ready %"), when `n` vCPUs, each busy a share `u` of the time, share `c`
//! physical CPUs (plus `b` CPUs' worth of other host load). Two models, as in the literature:
//!
//! - **Joint probability** (the simple argument of the Hyper-V capacity literature): a vCPU's
//!   dispatch is delayed only when all `c` pCPUs are busy; with each busy with probability
//!   ρ = A/c, independently, that is ρ^c. The argument gives only the probability; we take the
//!   wait to last until the first of the `c` busy pCPUs frees, S/c for exponential bursts of
//!   mean S.
//! - **M/M/c (Erlang C)**: vCPU bursts arrive as a Poisson stream with offered load A = n·u + b
//!   CPUs; the probability of waiting is Erlang's C(c, A) and the mean wait W = S·C/(c − A).
//!
//! Both hold only below saturation (A < c). At or above it the pCPUs are shared fairly and
//! each runnable vCPU gets c/A of a CPU: the stretch is A/c. A vCPU can only wait when the
//! others can fill every pCPU: with fewer than `c` other runnables (n − 1 vCPUs plus the
//! background rounded up), it never waits. The stretch of a vCPU's work is 1 + u·W/S (only
//! its busy share waits), and its ready % is the waiting over its new wall time,
//! (stretch − 1)/stretch.

use serde::Serialize;

/// What the model is given.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Inputs {
    /// Physical CPUs (host cores or threads the vCPUs may run on).
    pub pcpus: u32,
    /// vCPUs sharing them.
    pub vcpus: u32,
    /// The share of time each vCPU wants a CPU (0..=1).
    pub util: f64,
    /// Other host load, in CPUs (0 for a host that runs only the VMs).
    pub background: f64,
}

/// One model's prediction.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Prediction {
    /// The probability that a vCPU wanting a CPU has to wait.
    pub p_wait: f64,
    /// Mean wait over mean burst (W/S).
    pub wait_over_burst: f64,
    /// Times longer the vCPU's work takes.
    pub stretch: f64,
    /// Waiting over wall time, in percent.
    pub ready_pct: f64,
}

/// Both models' predictions with the assumptions that produced them.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Overcommit {
    pub schema: String,
    pub inputs: Inputs,
    /// Offered load A = n·u + b, in CPUs.
    pub offered_load: f64,
    /// A / c.
    pub rho: f64,
    /// A ≥ c: the queueing formulas do not apply; fair sharing does.
    pub saturated: bool,
    /// Fewer than c other runnables: nobody can make this vCPU wait.
    pub never_waits: bool,
    pub joint: Prediction,
    pub erlang_c: Prediction,
    pub assumptions: Vec<String>,
}

/// The schema of `virtlens model overcommit --json`.
pub(crate) const SCHEMA: &str = "virtlens.model.overcommit/1";

/// Erlang's C formula: the probability of waiting in an M/M/c queue with offered load `a`
/// (< c), by the stable recursion through Erlang's B.
pub(crate) fn erlang_c(c: u32, a: f64) -> f64 {
    let mut b = 1.0;
    for k in 1..=c {
        b = a * b / (f64::from(k) + a * b);
    }
    let c = f64::from(c);
    c * b / (c - a * (1.0 - b))
}

fn finish(p_wait: f64, wait_over_burst: f64, util: f64) -> Prediction {
    let stretch = 1.0 + util * wait_over_burst;
    Prediction {
        p_wait,
        wait_over_burst,
        stretch,
        ready_pct: 100.0 * (stretch - 1.0) / stretch,
    }
}

/// Why the inputs cannot be modelled, if they cannot.
pub(crate) fn check(i: &Inputs) -> Result<(), String> {
    if i.pcpus == 0 || i.vcpus == 0 {
        return Err("--pcpus and --vcpus must be at least 1".into());
    }
    if !(i.util > 0.0 && i.util <= 1.0) {
        return Err(format!("--util {} is not in (0, 1]", i.util));
    }
    if !(i.background >= 0.0 && i.background.is_finite()) {
        return Err(format!("--background {} is not 0 or more", i.background));
    }
    Ok(())
}

/// Both models for `i` (checked with `check` first).
pub fn predict(i: Inputs) -> Result<Overcommit, String> {
    check(&i)?;
    let c = f64::from(i.pcpus);
    let a = f64::from(i.vcpus) * i.util + i.background;
    let rho = a / c;
    let others = f64::from(i.vcpus - 1) + i.background.ceil();
    let never_waits = others < c;
    let saturated = !never_waits && rho >= 1.0;
    let (joint, erlang) = if never_waits {
        (finish(0.0, 0.0, i.util), finish(0.0, 0.0, i.util))
    } else if saturated {
        // Fair sharing: the work takes A/c times as long; every extra moment is waiting.
        let w = (rho - 1.0) / i.util;
        (finish(1.0, w, i.util), finish(1.0, w, i.util))
    } else {
        let p = rho.powf(c);
        let ec = erlang_c(i.pcpus, a);
        (finish(p, p / c, i.util), finish(ec, ec / (c - a), i.util))
    };
    let mut assumptions = vec![
        format!(
            "offered load A = vCPUs × utilization + background = {} × {} + {} = {a:.3} CPUs on {} pCPUs (ρ = {rho:.3})",
            i.vcpus, i.util, i.background, i.pcpus
        ),
        "a vCPU's busy periods are independent of the others' (no lock-step, no co-scheduling)"
            .into(),
        "the host scheduler is work-conserving and fair (CFS/EEVDF with equal weights)".into(),
        "the stretch applies to the busy share only: 1 + u·W/S; ready % = (stretch − 1)/stretch"
            .into(),
    ];
    if never_waits {
        assumptions.push(format!(
            "{} other runnables cannot fill {} pCPUs: this vCPU never waits (host threads \
             outside `background` are not modelled)",
            others, i.pcpus
        ));
    } else if saturated {
        assumptions.push(
            "A ≥ c: no queueing steady state; the pCPUs are shared fairly, each runnable vCPU \
             gets c/A of a CPU, so the work takes A/c times as long (both models)"
                .into(),
        );
    } else {
        assumptions.push(
            "joint probability: each pCPU is busy with probability ρ independently, so a \
             dispatch waits with probability ρ^c; the wait lasts until the first of the c busy \
             pCPUs frees (S/c for exponential bursts)"
                .into(),
        );
        assumptions.push(
            "Erlang C: bursts arrive as a Poisson stream and last an exponential time (M/M/c, \
             an open model: it ignores that a waiting vCPU offers no new load, so it \
             over-predicts near saturation with few vCPUs)"
                .into(),
        );
    }
    Ok(Overcommit {
        schema: SCHEMA.to_string(),
        inputs: i,
        offered_load: a,
        rho,
        saturated,
        never_waits,
        joint,
        erlang_c: erlang,
        assumptions,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    #[test]
    fn erlang_c_matches_hand_computed_values() {
        // M/M/1: C = ρ.
        assert!(close(erlang_c(1, 0.5), 0.5));
        // c = 2, A = 1: B(1) = 1/2, B(2) = 0.5/2.5 = 0.2, C = 2·0.2 / (2 − 0.8) = 1/3.
        assert!(close(erlang_c(2, 1.0), 1.0 / 3.0));
        // c = 4, A = 2: B = (2^4/24) / (1 + 2 + 2 + 4/3 + 2/3) = (2/3)/7 = 2/21;
        // C = 4·(2/21) / (4 − 2·19/21) = (8/21) / (46/21) = 4/23.
        assert!(close(erlang_c(4, 2.0), 4.0 / 23.0));
    }

    #[test]
    fn two_pcpus_at_half_load_by_both_models() {
        // Four vCPUs a quarter busy: A = 1 CPU on 2 pCPUs.
        let m = predict(Inputs {
            pcpus: 2,
            vcpus: 4,
            util: 0.25,
            background: 0.0,
        })
        .unwrap();
        assert!(!m.saturated && !m.never_waits);
        // Joint: ρ = 0.5, P = 0.25, W/S = 0.125, stretch = 1 + 0.25·0.125 = 1.03125.
        assert!(close(m.joint.p_wait, 0.25));
        assert!(close(m.joint.stretch, 1.03125));
        assert!(close(m.joint.ready_pct, 100.0 * 0.03125 / 1.03125));
        // Erlang C: C = 1/3, W/S = (1/3)/(2 − 1) = 1/3, stretch = 1 + 0.25/3.
        assert!(close(m.erlang_c.p_wait, 1.0 / 3.0));
        assert!(close(m.erlang_c.stretch, 1.0 + 0.25 / 3.0));
        // Two vCPUs on two pCPUs never wait, whatever their load.
        let alone = predict(Inputs {
            pcpus: 2,
            vcpus: 2,
            util: 0.5,
            background: 0.0,
        })
        .unwrap();
        assert!(alone.never_waits && close(alone.erlang_c.stretch, 1.0));
    }

    #[test]
    fn the_literature_example_four_cpus_a_quarter_busy() {
        // Each CPU busy 25 % of the time: the chance all four are busy is 0.25^4 ≈ 0.4 %.
        let m = predict(Inputs {
            pcpus: 4,
            vcpus: 8,
            util: 0.125,
            background: 0.0,
        })
        .unwrap();
        assert!(close(m.joint.p_wait, 0.25f64.powi(4)));
    }

    #[test]
    fn busy_vcpus_on_two_cores_share_them_fairly_beyond_two() {
        for (k, stretch) in [(1, 1.0), (2, 1.0), (3, 1.5), (4, 2.0), (8, 4.0)] {
            let m = predict(Inputs {
                pcpus: 2,
                vcpus: k,
                util: 1.0,
                background: 0.0,
            })
            .unwrap();
            assert!(
                close(m.joint.stretch, stretch),
                "k={k}: {}",
                m.joint.stretch
            );
            assert!(close(m.erlang_c.stretch, stretch));
            assert!(close(m.erlang_c.ready_pct, 100.0 * (1.0 - 1.0 / stretch)));
        }
        // Background load makes even two vCPUs wait: A = 2.5 on 2 pCPUs.
        let m = predict(Inputs {
            pcpus: 2,
            vcpus: 2,
            util: 1.0,
            background: 0.5,
        })
        .unwrap();
        assert!(m.saturated && close(m.joint.stretch, 1.25));
    }

    #[test]
    fn nonsense_inputs_are_refused() {
        assert!(
            predict(Inputs {
                pcpus: 0,
                vcpus: 1,
                util: 0.5,
                background: 0.0
            })
            .is_err()
        );
        assert!(
            predict(Inputs {
                pcpus: 1,
                vcpus: 1,
                util: 1.5,
                background: 0.0
            })
            .is_err()
        );
        assert!(
            predict(Inputs {
                pcpus: 1,
                vcpus: 1,
                util: 0.5,
                background: f64::NAN
            })
            .is_err()
        );
    }
}

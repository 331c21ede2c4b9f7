//! The Prometheus rules of `deploy/prometheus/` on what `virtlens serve` exported in a real
//! run: a micro-VM polls a serial port's line status (the lab's `serial_console` trap, run by
//! `virtlens lab --replay`), the exporter diagnoses it, and twelve of its expositions, scraped
//! one collection apart, become the input series of a `promtool test rules` file. Their values
//! and labels are the scraped ones; only the time grid is promtool's (one scrape a minute), so
//! the expected exit rate is computed from the scraped counts the way Prometheus computes a
//! 5-minute `rate()` over that grid. promtool must find the recording rule's exit rate and the
//! high-severity alert with the finding's own `severity` label.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::process::Command;

use virtlens_testkit::{Need, TempDir, require};

use crate::common::wait_for;
use crate::common::{Replay, serve_vm_label};
use crate::serve_prometheus::{http_get, start_serve};

/// Scrapes taken, one a minute on promtool's grid: the alert's `for: 10m` needs eleven.
const SCRAPES: usize = 12;

/// The instance label Prometheus would add when scraping the exporter.
const INSTANCE: &str = "host1:9815";

/// The trap the guest runs, and the finding it should raise.
const TRAP: &str = "serial_console/uart_lsr_poll";
const FINDING: &str = "io.serial-pio-storm";

/// The value of `virtlens_collects_total` in an exposition.
fn collects(text: &str) -> Option<u64> {
    text.lines()
        .find_map(|l| l.strip_prefix("virtlens_collects_total "))?
        .trim()
        .parse()
        .ok()
}

/// The lines of the families the rules under test read, for the VM labelled `vm`: series
/// (name and labels, as exported) → value.
fn series_of(text: &str, vm: &str) -> BTreeMap<String, f64> {
    const FAMILIES: [&str; 3] = [
        "virtlens_exits_total{",
        "virtlens_userspace_exits_total{",
        "virtlens_finding{",
    ];
    text.lines()
        .filter(|l| FAMILIES.iter().any(|f| l.starts_with(f)) && l.contains(vm))
        .filter_map(|l| {
            let (series, value) = l.rsplit_once(' ')?;
            Some((series.to_string(), value.parse().ok()?))
        })
        .collect()
}

/// `name{labels}` with the labels Prometheus adds at scrape time.
fn as_scraped(series: &str) -> String {
    let (name, labels) = series.split_once('{').unwrap();
    format!("{name}{{instance=\"{INSTANCE}\",job=\"virtlens\",{labels}")
}

/// A 5-minute `rate()` half a minute after the last of `v` (one sample a minute), as
/// Prometheus computes it: the window holds the last five samples, 4 minutes apart end to end
/// (evaluated between two samples, so Prometheus 2's closed and 3's open window start agree);
/// the half minutes at either end are extrapolated (less than 1.1 sample intervals, and the
/// counter is far from zero), so the increase is scaled by 5/4 and divided by the 300 s range.
fn prometheus_rate5m(v: &[f64]) -> f64 {
    let n = v.len();
    let (first, last) = (v[n - 5], v[n - 1]);
    let (sampled, extrapolated) = (240.0, 300.0);
    assert!(
        sampled * first / (last - first) > 60.0,
        "the counter is far enough from zero for a full extrapolation"
    );
    (last - first) * (extrapolated / sampled) / 300.0
}

#[test]
fn the_deployed_rules_alert_and_record_on_a_real_runs_expositions() {
    if !require(&[
        Need::Root,
        Need::Kvm,
        Need::Bpf,
        Need::Tracefs,
        Need::Prometheus,
    ]) {
        return;
    }
    let _g = virtlens_testkit::shared();
    let replay = Replay::start(TRAP, 300);
    let (mut serve, addr) = start_serve(&[]);
    let scrape = || http_get(addr, "/metrics").map(|(_, t)| t);
    let vm = wait_for("the exporter to see the replayed guest", || {
        serve_vm_label(&scrape()?, replay.pid())
    });
    // From the first exposition with the finding, one scrape per collection.
    let finding = format!("id=\"{FINDING}\"");
    let mut text = wait_for("the exporter to diagnose the trap", || {
        scrape().filter(|t| series_of(t, &vm).keys().any(|s| s.contains(&finding)))
    });
    let mut scrapes = Vec::new();
    for _ in 0..SCRAPES {
        let seen = collects(&text).unwrap();
        scrapes.push(series_of(&text, &vm));
        text = wait_for("the next collection", || {
            scrape().filter(|t| collects(t).is_some_and(|c| c > seen))
        });
    }
    serve.kill().unwrap();
    serve.wait().unwrap();
    drop(replay);

    // Every series in every scrape (a gap would make the expected rate a different formula).
    let names: Vec<String> = scrapes[0].keys().cloned().collect();
    for (i, s) in scrapes.iter().enumerate() {
        assert_eq!(
            s.keys().collect::<Vec<_>>(),
            names.iter().collect::<Vec<_>>(),
            "scrape {i} has other series than the first"
        );
    }
    let values = |name: &String| -> Vec<f64> { scrapes.iter().map(|s| s[name]).collect() };
    // The recording rule takes the in-kernel exits where there are any (VMX/SVM), else the
    // returns to the VMM (a backend without kvm_exit, such as this machine's PVM).
    let family = if names.iter().any(|n| n.starts_with("virtlens_exits_total{")) {
        "virtlens_exits_total{"
    } else {
        "virtlens_userspace_exits_total{"
    };
    let rate: f64 = names
        .iter()
        .filter(|n| n.starts_with(family))
        .map(|n| prometheus_rate5m(&values(n)))
        .sum();
    assert!(rate > 0.0, "the guest exits: {names:?}");
    let alerting: Vec<&String> = names
        .iter()
        .filter(|n| n.starts_with("virtlens_finding{") && n.contains(&finding))
        .collect();
    assert_eq!(alerting.len(), 1, "{names:?}");
    assert!(alerting[0].contains("severity=\"high\""), "{}", alerting[0]);
    assert!(values(alerting[0]).iter().all(|&v| v == 1.0));

    let rules = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../deploy/prometheus/virtlens-rules.yml")
        .canonicalize()
        .unwrap();
    let mut yaml = format!(
        "# Input series: {SCRAPES} expositions of `virtlens serve` scraped one collection apart,\n\
         # placed one minute apart.\nrule_files:\n  - {}\nevaluation_interval: 30s\ntests:\n  \
         - interval: 1m\n    input_series:\n",
        rules.display()
    );
    for n in &names {
        let v: Vec<String> = values(n).iter().map(|x| format!("{x}")).collect();
        writeln!(
            yaml,
            "      - series: '{}'\n        values: '{}'",
            as_scraped(n),
            v.join(" ")
        )
        .unwrap();
    }
    let at = format!("{}m30s", SCRAPES - 1);
    // Prometheus sums the reasons' rates in its own order: equal to a billionth, not to the bit.
    let tolerance = rate * 1e-9;
    let vm_value = vm.trim_start_matches("vm=\"").trim_end_matches('"');
    writeln!(
        yaml,
        "    promql_expr_test:\n      - expr: 'abs(virtlens:vm_exits:rate5m - {rate:?}) < bool {tolerance:?}'\n        \
         eval_time: {at}\n        exp_samples:\n          - labels: '{{instance=\"{INSTANCE}\",{vm}}}'\n            \
         value: 1\n    alert_rule_test:\n      - eval_time: {at}\n        alertname: \
         VirtlensHighSeverityFinding\n        exp_alerts:\n          - exp_labels:\n              \
         instance: \"{INSTANCE}\"\n              vm: \"{vm_value}\"\n              id: {FINDING}\n              \
         severity: high\n            exp_annotations:\n              summary: \"{vm_value} on {INSTANCE}: \
         high finding {FINDING}\"\n              description: \"virtlens has diagnosed {FINDING} for VM \
         {vm_value} for 10 minutes. Run `virtlens diagnose` on a capture of it for the evidence and \
         the fix.\""
    )
    .unwrap();
    let dir = TempDir::new("rules");
    let file = dir.0.join("real-run.test.yml");
    std::fs::write(&file, &yaml).unwrap();
    let out = Command::new("promtool")
        .args(["test", "rules"])
        .arg(&file)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "promtool test rules on the real run's expositions:\n{yaml}\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

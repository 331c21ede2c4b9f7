//! The dashboard and the alert rules in `deploy/` query only metrics `serve` exports, and
//! Prometheus's own checker accepts the rules and every dashboard query.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use virtlens_host::testing::State;
use virtlens_host::testing::{classic_exposition, encode_exposition, exposition_registry};
use virtlens_testkit::{Need, require};

fn deploy(rel: &str) -> PathBuf {
    virtlens_testkit::repo_root().join("deploy").join(rel)
}

/// The metric families `serve` declares (every family is declared, with or without series),
/// with the sample names a histogram adds.
fn exported() -> BTreeSet<String> {
    let reg = exposition_registry(Arc::new(Mutex::new(State::new(
        20,
        10,
        Duration::ZERO,
        "bpf",
    ))));
    let text = classic_exposition(&encode_exposition(&reg).unwrap());
    let mut out = BTreeSet::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, kind) = rest.split_once(' ').unwrap();
            out.insert(name.to_string());
            if kind == "histogram" {
                for s in ["_bucket", "_sum", "_count"] {
                    out.insert(format!("{name}{s}"));
                }
            }
        }
    }
    out
}

/// Every `virtlens_…` metric name in `text` (recording rules are `virtlens:…`).
fn referenced(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut rest = text;
    while let Some(i) = rest.find("virtlens_") {
        let tail = &rest[i..];
        let end = tail
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(tail.len());
        let before = rest[..i].chars().last();
        if !before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_') {
            out.insert(tail[..end].to_string());
        }
        rest = &tail[end..];
    }
    out
}

/// The PromQL of every dashboard target and variable.
fn dashboard_queries() -> Vec<String> {
    let text = std::fs::read_to_string(deploy("grafana/virtlens-dashboard.json")).unwrap();
    let d: serde_json::Value = serde_json::from_str(&text).unwrap();
    let mut out = Vec::new();
    for p in d["panels"].as_array().unwrap() {
        for t in p["targets"].as_array().into_iter().flatten() {
            out.push(t["expr"].as_str().unwrap().to_string());
        }
    }
    for v in d["templating"]["list"].as_array().unwrap() {
        if let Some(q) = v["query"]["query"].as_str() {
            out.push(q.to_string());
        }
    }
    assert!(out.len() > 10, "{out:?}");
    out
}

#[test]
fn the_dashboard_and_rules_query_only_exported_metrics() {
    let have = exported();
    assert!(have.contains("virtlens_pio_exits_total"), "{have:?}");
    let rules = std::fs::read_to_string(deploy("prometheus/virtlens-rules.yml")).unwrap();
    let mut wanted = referenced(&rules);
    for q in dashboard_queries() {
        wanted.extend(referenced(&q));
    }
    assert!(wanted.len() > 10, "{wanted:?}");
    let missing: Vec<&String> = wanted.iter().filter(|m| !have.contains(*m)).collect();
    assert!(missing.is_empty(), "queried but not exported: {missing:?}");
}

fn promtool_check_rules(path: &std::path::Path) {
    let out = Command::new("promtool")
        .args(["check", "rules"])
        .arg(path)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "promtool check rules {}: {}{}",
        path.display(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn promtool_accepts_the_rules_and_every_dashboard_query() {
    if !require(&[Need::Prometheus]) {
        return;
    }
    promtool_check_rules(&deploy("prometheus/virtlens-rules.yml"));
    // The dashboard's queries as recording rules, with Grafana's variables filled in, so
    // promtool parses each one.
    let mut yaml = String::from("groups:\n  - name: dashboard\n    rules:\n");
    for (i, q) in dashboard_queries().iter().enumerate() {
        if q.starts_with("label_values(") {
            continue;
        }
        let q = q
            .replace("$__rate_interval", "1m")
            .replace("$instance", ".*")
            .replace("$vm", ".*");
        yaml.push_str(&format!(
            "      - record: dashboard:q{i}\n        expr: {}\n",
            serde_json::to_string(&q).unwrap()
        ));
    }
    let path = std::env::temp_dir().join(format!("virtlens-dash-{}.yml", std::process::id()));
    std::fs::write(&path, yaml).unwrap();
    promtool_check_rules(&path);
    let _ = std::fs::remove_file(&path);
}

#[test]
fn promtool_unit_tests_of_the_rules_pass() {
    // The finding alert keeps the finding's severity; the exit-rate rule picks in-kernel exits
    // where they exist, else returns to the VMM.
    if !require(&[Need::Prometheus]) {
        return;
    }
    let out = Command::new("promtool")
        .args(["test", "rules"])
        .arg(deploy("prometheus/virtlens-rules.test.yml"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "promtool test rules: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

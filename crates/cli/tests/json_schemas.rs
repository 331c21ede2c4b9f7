//! Every `--json` output validates against its JSON Schema in docs/schemas/, the file named by
//! the output's own `schema` field (`virtlens.diagnose/2` → docs/schemas/virtlens.diagnose/2.json),
//! and so do the two JSON documents a capture file carries in its metadata. The outputs are the
//! real binary's on the real inputs of testdata/ (every format, every case, every configuration),
//! on micro-VMs of /dev/kvm (lab, exitcost, stretch --lab, model --measure) and on live captures
//! of a micro-VM of this process (record, top, serve). The schemas forbid unknown fields, so a
//! renamed field fails here: a breaking change needs a new version (docs/json.md).

use std::collections::BTreeSet;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;
use virtlens_core::capture::{CAPTURE_KEY, PROFILE_KEY, locate_footer, parse_footer};
use virtlens_testkit::{Need, require};

use crate::common::*;

fn root() -> PathBuf {
    virtlens_testkit::repo_root()
}

/// Every schema of docs/schemas, compiled, by the name its file stands for.
struct Schemas {
    compiled: boon::Schemas,
    index: Vec<(String, boon::SchemaIndex)>,
}

impl Schemas {
    fn load() -> Schemas {
        let dir = root().join("docs/schemas");
        let mut files = Vec::new();
        collect(&dir, &mut files);
        assert!(!files.is_empty(), "no schemas in {}", dir.display());
        let mut compiled = boon::Schemas::new();
        let mut compiler = boon::Compiler::new();
        let mut index = Vec::new();
        for f in files {
            let name = f
                .strip_prefix(&dir)
                .unwrap()
                .to_string_lossy()
                .trim_end_matches(".json")
                .to_string();
            let doc: Value = serde_json::from_slice(&std::fs::read(&f).unwrap())
                .unwrap_or_else(|e| panic!("{}: {e}", f.display()));
            assert_eq!(doc["title"], name.as_str(), "{}: title", f.display());
            assert_eq!(
                doc["properties"]["schema"]["const"],
                name.as_str(),
                "{}: the document's schema field",
                f.display()
            );
            let url = format!("file://{}", f.display());
            compiler.add_resource(&url, doc).unwrap();
            let i = compiler
                .compile(&url, &mut compiled)
                .unwrap_or_else(|e| panic!("{}: {e:#}", f.display()));
            index.push((name, i));
        }
        Schemas { compiled, index }
    }

    /// Validates `doc` against the schema its `schema` field names; returns that name.
    fn check(&self, what: &str, doc: &Value) -> Result<String, String> {
        let name = doc["schema"]
            .as_str()
            .ok_or_else(|| format!("{what}: no \"schema\" field"))?;
        let (_, i) = self
            .index
            .iter()
            .find(|(n, _)| n == name)
            .ok_or_else(|| format!("{what}: no docs/schemas/{name}.json"))?;
        self.compiled
            .validate(doc, *i)
            .map_err(|e| format!("{what}: {e}"))?;
        Ok(name.to_string())
    }

    fn validate(&self, what: &str, doc: &Value, seen: &mut BTreeSet<String>) {
        match self.check(what, doc) {
            Ok(name) => {
                seen.insert(name);
            }
            Err(e) => panic!("{e}"),
        }
    }
}

fn collect(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            collect(&p, out);
        } else if p.extension().is_some_and(|x| x == "json") {
            out.push(p);
        }
    }
    out.sort();
}

/// `virtlens ARGS…` from the repository root; its stdout as JSON documents (one, or one per
/// line for `top`). Exit statuses other than `ok` fail.
fn json_of(args: &[&str], ok: &[i32]) -> Vec<Value> {
    let _g = shared();
    let out = Command::new(BIN)
        .args(args)
        .current_dir(root())
        .output()
        .unwrap();
    let code = out.status.code().unwrap_or(-1);
    assert!(
        ok.contains(&code),
        "virtlens {args:?} exited {code}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    documents(&out.stdout, &format!("{args:?}"))
}

fn documents(stdout: &[u8], what: &str) -> Vec<Value> {
    let text = String::from_utf8_lossy(stdout);
    let whole: Result<Value, _> = serde_json::from_str(&text);
    match whole {
        Ok(v) => vec![v],
        Err(_) => text
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{what}: {e}: {l}")))
            .collect(),
    }
}

/// The files of `dir` (relative to the repository root) with one of `exts`, recursively.
fn files(dir: &str, exts: &[&str]) -> Vec<String> {
    let mut all = Vec::new();
    fn walk(d: &Path, exts: &[&str], out: &mut Vec<PathBuf>) {
        for e in std::fs::read_dir(d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(&p, exts, out);
            } else if exts
                .iter()
                .any(|x| p.to_string_lossy().ends_with(&format!(".{x}")))
            {
                out.push(p);
            }
        }
    }
    walk(&root().join(dir), exts, &mut all);
    all.sort();
    all.iter()
        .map(|p| {
            p.strip_prefix(root())
                .unwrap()
                .to_string_lossy()
                .into_owned()
        })
        .collect()
}

#[test]
fn outputs_on_every_input_file_validate() {
    let schemas = Schemas::load();
    let mut seen = BTreeSet::new();
    let mut check = |args: &[&str], ok: &[i32]| {
        for doc in json_of(args, ok) {
            schemas.validate(&format!("virtlens {}", args.join(" ")), &doc, &mut seen);
        }
    };
    let mut profiles = files("testdata/exit-reports", &["txt"]);
    profiles.extend(files("testdata/seed-kvm-hyperv-traps", &["txt"]));
    profiles.extend(files("testdata/perf-data", &["data"]));
    profiles.extend(files("testdata/capture", &["parquet"]));
    for p in &profiles {
        check(&["report", "--json", p], &[0]);
        check(&["report", "--json", "--top", "2", "--by", "vcpu", p], &[0]);
        check(&["diagnose", "--json", "--guest", "windows", p], &[0, 1]);
    }
    // Guest code: exits by guest function, and the findings naming it.
    let lab = "testdata/lab-cases/linux-halt-churn-pingpong/perf.data";
    let map = "testdata/guest-symbols/System.map-6.1.0-56-amd64.xz";
    check(&["report", "--json", "--by", "rip", lab], &[0]);
    check(
        &[
            "report",
            "--json",
            "--by",
            "rip",
            "--guest-symbols",
            map,
            lab,
        ],
        &[0],
    );
    check(
        &["diagnose", "--json", "--guest-symbols", map, lab],
        &[0, 1],
    );
    // Performance counters: report, diagnose (with an IO rate) and counters.
    let counters = files("testdata/perfmon", &["csv", "txt"]);
    for p in &counters {
        check(&["report", "--json", p], &[0]);
        check(&["diagnose", "--json", "--iops", "4500000", p], &[0, 1]);
    }
    let mut all_counters = vec!["counters", "--json", "--iops", "4500000"];
    all_counters.extend(counters.iter().map(String::as_str));
    check(&all_counters, &[0, 1]);
    let mut compare_counters = vec!["compare", "--json"];
    compare_counters.extend(counters.iter().map(String::as_str));
    check(&compare_counters, &[0]);
    for fio in files("testdata/fio", &["json"]) {
        check(
            &[
                "diagnose",
                "--json",
                "--window",
                "10",
                "--fio",
                &fio,
                "testdata/exit-reports/11-perf-kvm-stat-ioport-2012-format.txt",
            ],
            &[0, 1],
        );
    }
    let seeds = files("testdata/seed-kvm-hyperv-traps", &["txt"]);
    let mut compare = vec!["compare", "--json"];
    compare.extend(seeds.iter().map(String::as_str));
    check(&compare, &[0]);
    let mut diagnose = vec!["diagnose", "--json", "--window", "10", "--vcpus", "4"];
    diagnose.extend(seeds.iter().map(String::as_str));
    check(&diagnose, &[0, 1]);
    for case in files("testdata/cases", &["txt", "data"]) {
        // A case no reader takes yet is bad input (exit 2) and prints no JSON.
        check(&["diagnose", "--json", &case], &[0, 1, 2]);
    }
    for config in files("testdata/configs", &["xml", "args", "txt"]) {
        check(&["lint", "--json", &config], &[0, 1]);
        check(
            &[
                "lint",
                "--json",
                "--host-vendor",
                "intel",
                "--host-apicv",
                "on",
                "--migratable",
                "--ipi-heavy",
                &config,
            ],
            &[0, 1],
        );
        check(
            &["diagnose", "--json", "--config", &config, &seeds[1]],
            &[0, 1],
        );
    }
    for preset in ["windows-general", "ipi-heavy", "vdi", "nested", "migration"] {
        check(&["lint", "--json", "--recommend", preset], &[0]);
    }
    let stretch = files("testdata/stretch", &["json"]);
    for s in &stretch {
        if s.contains("friedman") || s.contains("nested") {
            check(&["stretch", "--json", s], &[0]);
        }
    }
    check(
        &[
            "stretch",
            "--json",
            "testdata/stretch/native.json",
            "testdata/stretch/tcg-vm.json",
        ],
        &[0],
    );
    check(
        &[
            "model",
            "overcommit",
            "--json",
            "--pcpus",
            "2",
            "--vcpus",
            "6",
            "--util",
            "0.7",
            "--background",
            "0.5",
        ],
        &[0],
    );
    check(&["lab", "--offline", "--json"], &[3]);
    check(
        &["load", "--json", "--tasks", "4", "--iterations", "2"],
        &[0],
    );
    check(&["bench", "--json", "--quick", "--runs", "1"], &[0]);
    let want = [
        "virtlens.report/1",
        "virtlens.compare/1",
        "virtlens.counters/1",
        "virtlens.diagnose/2",
        "virtlens.lint/1",
        "virtlens.stretch/1",
        "virtlens.model.overcommit/1",
        "virtlens.lab/2",
        "virtlens.load/1",
        "virtlens.bench/1",
    ];
    for w in want {
        assert!(
            seen.contains(w),
            "no output validated against {w}: {seen:?}"
        );
    }
}

#[test]
fn micro_vm_measurements_validate() {
    if !require(&[Need::Kvm]) {
        return;
    }
    let schemas = Schemas::load();
    let mut seen = BTreeSet::new();
    for args in [
        &["exitcost", "--json", "--runs", "2", "--mode", "user64"][..],
        &["lab", "--json", "--quick"][..],
        &["stretch", "--json", "--lab", "--runs", "1"][..],
        &[
            "model",
            "overcommit",
            "--json",
            "--measure",
            "--max-vcpus",
            "2",
            "--runs",
            "1",
        ][..],
    ] {
        for doc in json_of(args, &[0]) {
            schemas.validate(&format!("virtlens {}", args.join(" ")), &doc, &mut seen);
        }
    }
    assert_eq!(seen.len(), 4, "{seen:?}");
}

/// The JSON value of `key` in the Parquet key/value metadata of the capture `file`.
fn capture_metadata(file: &Path, key: &str) -> Value {
    let mut f = std::fs::File::open(file).unwrap();
    let len = f.seek(SeekFrom::End(0)).unwrap();
    let mut tail = [0u8; 8];
    f.seek(SeekFrom::End(-8)).unwrap();
    f.read_exact(&mut tail).unwrap();
    let (start, footer_len) = locate_footer(&tail, len).unwrap();
    let mut bytes = vec![0u8; usize::try_from(footer_len).unwrap()];
    f.seek(SeekFrom::Start(start)).unwrap();
    f.read_exact(&mut bytes).unwrap();
    let footer = parse_footer(&bytes, start).unwrap();
    serde_json::from_str(footer.get(key).unwrap()).unwrap()
}

#[test]
fn capture_file_metadata_validates() {
    let schemas = Schemas::load();
    let mut seen = BTreeSet::new();
    for file in files("testdata/capture", &["parquet"]) {
        for key in [CAPTURE_KEY, PROFILE_KEY] {
            let doc = capture_metadata(&root().join(&file), key);
            schemas.validate(&format!("{file} {key}"), &doc, &mut seen);
        }
    }
    assert!(seen.contains("virtlens.capture/1") && seen.contains("virtlens.profile/1"));
}

#[test]
fn live_capture_outputs_validate() {
    if !require(&[Need::Root, Need::Tracefs, Need::Kvm]) {
        return;
    }
    let _g = shared();
    let schemas = Schemas::load();
    let mut seen = BTreeSet::new();
    let me = std::process::id().to_string();
    let dir = TempDir::new("schemas");
    let file = dir.0.join("cap.parquet");
    let path = file.to_string_lossy().into_owned();

    let vcpu = Vcpu::new(0x5f1, 500);
    let rec = record(&file, &["--pid", &me, "--json"]);
    assert_eq!(vcpu.run(), 500);
    signal(&rec, "INT");
    let out = finish(rec);
    for doc in documents(&out.stdout, "record --json") {
        schemas.validate("record -o --json", &doc, &mut seen);
    }
    for key in [CAPTURE_KEY, PROFILE_KEY] {
        schemas.validate(key, &capture_metadata(&file, key), &mut seen);
    }
    for doc in json_of(&["report", "--json", &path], &[0]) {
        schemas.validate("report of a new capture", &doc, &mut seen);
    }
    for doc in json_of(&["diagnose", "--json", &path], &[0, 1]) {
        schemas.validate("diagnose of a new capture", &doc, &mut seen);
    }

    let vcpu = Vcpu::new(0x5f2, 500);
    let summary = start_ready(&["record", "--summary", "--json", "--pid", &me]);
    assert_eq!(vcpu.run(), 500);
    signal(&summary, "INT");
    let out = finish(summary);
    for doc in documents(&out.stdout, "record --summary --json") {
        schemas.validate("record --summary --json", &doc, &mut seen);
    }

    let vcpu = Vcpu::new(0x5f3, 500);
    let top = start_ready(&["top", "--once", "--json", "--interval", "1", "--pid", &me]);
    assert_eq!(vcpu.run(), 500);
    let out = finish(top);
    for doc in documents(&out.stdout, "top --json") {
        schemas.validate("top --once --json", &doc, &mut seen);
    }

    let _vm = own_vm();
    let serve = start_ready(&["serve", "--json", "--listen", "127.0.0.1:0", "--pid", &me]);
    signal(&serve, "INT");
    let out = finish_any(serve);
    for doc in documents(&out.stdout, "serve --json") {
        schemas.validate("serve --json", &doc, &mut seen);
    }
    for want in [
        "virtlens.record/1",
        "virtlens.capture/1",
        "virtlens.profile/1",
        "virtlens.report/1",
        "virtlens.diagnose/2",
        "virtlens.top/1",
        "virtlens.serve/1",
    ] {
        assert!(seen.contains(want), "{want} not validated: {seen:?}");
    }
}

/// The schemas are strict enough to notice a renamed, a missing or a retyped field.
#[test]
fn a_renamed_missing_or_retyped_field_fails() {
    let schemas = Schemas::load();
    let docs = json_of(
        &[
            "diagnose",
            "--json",
            "testdata/seed-kvm-hyperv-traps/1-no-hyperv-features.txt",
        ],
        &[1],
    );
    let good = &docs[0];
    assert!(schemas.check("as printed", good).is_ok());

    let mut renamed = good.clone();
    let finding = renamed["findings"][0].as_object_mut().unwrap();
    let severity = finding.remove("severity").unwrap();
    finding.insert("level".into(), severity);
    assert!(
        schemas.check("renamed", &renamed).is_err(),
        "a renamed field"
    );

    let mut missing = good.clone();
    missing.as_object_mut().unwrap().remove("findings");
    assert!(
        schemas.check("missing", &missing).is_err(),
        "a missing field"
    );

    let mut retyped = good.clone();
    retyped["findings"][0]["cost"]["exits"] = Value::String("many".into());
    assert!(
        schemas.check("retyped", &retyped).is_err(),
        "a retyped field"
    );

    let mut other = good.clone();
    other["schema"] = Value::String("virtlens.diagnose/999".into());
    assert!(schemas.check("unknown version", &other).is_err());
}

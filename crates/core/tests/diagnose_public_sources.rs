//! Everything diagnose prints cites public material only: no rule's title, meaning or source,
//! and no finding's words on any real input (samples, seeds, the case corpus) under any guest,
//! name the project's reference notes, its design file or its test data — they are not in the
//! binary and mean nothing to a user. Every source is a Message-ID, a commit, a bug, a document
//! or a talk, and every URL is https. The lint rules' sources and the generated finding
//! catalogue (docs/findings.md) are held to the same.

use std::path::{Path, PathBuf};

use virtlens_core::config::GuestFamily;
use virtlens_core::decode::Decoder;
use virtlens_core::diagnose::{self, Diagnosis, Options, Source, catalogue, shared_thresholds};
use virtlens_core::lint::{RULES, rules};
use virtlens_core::render::findings_md;
use virtlens_core::sources;

/// What a user cannot open.
const PRIVATE: [&str; 11] = [
    "testdata",
    "DESIGN",
    "exit-tools",
    "hyperv-enlightenments",
    "counters-bench-models",
    "kvm-on-dev-machines",
    "reference/",
    "samples/",
    "§",
    "ANCHOR",
    "seed table",
];

fn check(what: &str, text: &str) {
    for p in PRIVATE {
        assert!(!text.contains(p), "{what} names `{p}`: {text}");
    }
}

fn check_source(what: &str, s: &Source) {
    check(what, s.reference);
    check(what, s.title);
    assert!(
        ["lore", "commit", "doc", "bug", "talk", "post", "code"].contains(&s.kind),
        "{what}: source kind {}",
        s.kind
    );
    if let Some(u) = s.url {
        assert!(u.starts_with("https://"), "{what}: {u}");
    }
    if s.kind == "lore" {
        assert!(
            s.reference.contains('@'),
            "{what}: a lore source is a Message-ID"
        );
    }
}

#[test]
fn the_catalogue_cites_public_material() {
    for e in catalogue() {
        check(e.id, e.title);
        check(e.id, e.meaning);
        assert!(!e.sources.is_empty(), "{}: no source", e.id);
        for s in &e.sources {
            check_source(e.id, s);
        }
    }
}

/// The reference notes' short names for their sources, which mean nothing outside them.
const SHORTHAND: [&str; 9] = [
    "QEMU-DOC",
    "QEMU-KVM.C",
    "LIBVIRT-DOC",
    "LINUX-GUEST",
    "NOVA",
    "DOCKUR",
    "VIRTINST",
    "PVE ",
    "PVE/",
];

#[test]
fn the_lint_rules_cite_public_material() {
    for r in rules() {
        for text in [r.checks, r.needs, r.source] {
            check(r.id, text);
            for s in SHORTHAND {
                assert!(!text.contains(s), "{} names `{s}`: {text}", r.id);
            }
        }
        assert!(!r.source.is_empty(), "{}: no source", r.id);
    }
}

#[test]
fn the_generated_finding_catalogue_cites_public_material() {
    let page = findings_md(&catalogue(), &shared_thresholds(), &RULES);
    for (n, line) in page.lines().enumerate() {
        check(&format!("docs/findings.md line {}", n + 1), line);
    }
}

fn words(d: &Diagnosis) {
    for f in &d.findings {
        let id = f.id.as_str();
        for t in [&f.title, &f.cause, &f.effect.text, &f.grade.why] {
            check(id, t);
        }
        for t in [&f.confirm, &f.check].into_iter().flatten() {
            check(id, t);
        }
        for x in &f.fixes {
            check(id, &x.summary);
            for t in [&x.qemu, &x.libvirt, &x.host, &x.in_guest]
                .into_iter()
                .flatten()
            {
                check(id, t);
            }
        }
        for r in &f.competing {
            check(id, &r.why);
        }
        for e in f.evidence.iter().chain(&f.against) {
            check(id, e.note.as_deref().unwrap_or(""));
        }
        for s in &f.sources {
            check_source(id, s);
        }
    }
    for n in &d.notes {
        // Notes name the input the user gave, which may live anywhere: only the words count.
        let words: String = n.split(": ").skip(1).collect::<Vec<_>>().join(": ");
        check("note", &words);
    }
}

fn inputs(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            inputs(&p, out);
        } else if p
            .extension()
            .is_some_and(|x| x == "txt" || x == "data" || x == "csv")
        {
            out.push(p);
        }
    }
}

#[test]
fn findings_on_every_real_input_cite_public_material() {
    let root = virtlens_testkit::repo_root().join("testdata");
    let mut files = Vec::new();
    for dir in [
        "exit-reports",
        "seed-kvm-hyperv-traps",
        "cases",
        "perf-data",
        "perfmon",
    ] {
        inputs(&root.join(dir), &mut files);
    }
    assert!(files.len() > 40, "{} inputs", files.len());
    let mut read = 0;
    for p in files {
        let Ok(profile) = sources::read_path(&p, None) else {
            continue;
        };
        read += 1;
        // With and without an IO rate: the IO-path findings speak only when it is given.
        let io = Some(virtlens_core::diagnose::IoRate {
            iops: 50_000.0,
            basis: "option",
            fio: None,
        });
        for (guest, io) in [
            (None, None),
            (Some(GuestFamily::Windows), None),
            (Some(GuestFamily::Linux), None),
            (Some(GuestFamily::Windows), io.clone()),
            (Some(GuestFamily::Linux), io.clone()),
        ] {
            let options = Options {
                guest,
                io,
                ..Options::default()
            };
            words(&diagnose::diagnose(
                std::slice::from_ref(&profile),
                None,
                &Decoder::builtin(),
                &options,
            ));
        }
    }
    assert!(read > 30, "only {read} inputs read");
}

#[test]
fn findings_joined_with_real_configurations_cite_public_material() {
    let root = virtlens_testkit::repo_root().join("testdata");
    let seed = sources::read_path(
        &root.join("seed-kvm-hyperv-traps/1-no-hyperv-features.txt"),
        None,
    )
    .unwrap();
    let mut n = 0;
    for e in std::fs::read_dir(root.join("configs")).unwrap().flatten() {
        let Ok(configs) = virtlens_core::config::read_path(&e.path(), &Default::default()) else {
            continue;
        };
        for c in configs.iter().take(1) {
            n += 1;
            words(&diagnose::diagnose(
                std::slice::from_ref(&seed),
                Some(c),
                &Decoder::builtin(),
                &Options::default(),
            ));
        }
    }
    assert!(n > 5, "{n} configurations");
}

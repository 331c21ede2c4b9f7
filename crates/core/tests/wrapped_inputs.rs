//! Inputs that arrive compressed or re-encoded read exactly as the plain files: each sample is
//! wrapped by the tool a user has (gzip, xz, zstd, iconv to UTF-16, a UTF-8 byte-order mark),
//! and the profile read from it has the same tables and notes as the plain file's — a
//! perf.data (which must seek, so it is spooled), perf script text and a kvm_stat log. An
//! empty file, a configuration given as a recording and a cut gzip say what they are.

use std::path::{Path, PathBuf};
use std::process::Command;

use virtlens_core::profile::Profile;
use virtlens_core::sources;
use virtlens_testkit::{TempDir, testdata};

/// The samples: a perf.data, perf script text, a kvm_stat log.
fn samples() -> Vec<PathBuf> {
    vec![
        testdata("perf-data/pio-guest-50.perf.data"),
        testdata("exit-reports/24-perf-script-kvm-events-nested-triple-fault.txt"),
        testdata("exit-reports/18-kvm_stat-debugfs-legacy-haswell-io-exits.txt"),
    ]
}

/// `tool args… < input > output`.
fn wrap(tool: &str, args: &[&str], input: &Path, output: &Path) {
    let status = Command::new(tool)
        .args(args)
        .stdin(std::fs::File::open(input).unwrap())
        .stdout(std::fs::File::create(output).unwrap())
        .status()
        .unwrap_or_else(|e| panic!("{tool}: {e}"));
    assert!(status.success(), "{tool} {args:?} failed");
}

/// What must be the same: every table and every note.
fn content(p: &Profile) -> String {
    let tables = serde_json::to_string(&p.tables).unwrap();
    let notes = serde_json::to_string(&p.warnings).unwrap();
    format!("{tables}\n{notes}")
}

#[test]
fn compressed_and_reencoded_inputs_read_as_the_plain_files() {
    let dir = TempDir::new("wrapped");
    let tools: [(&str, &str, &[&str]); 3] = [
        ("gz", "gzip", &["-c"]),
        ("xz", "xz", &["-c"]),
        ("zst", "zstd", &["-c", "-q"]),
    ];
    for sample in samples() {
        let plain = sources::read_path(&sample, None).unwrap_or_else(|e| panic!("{e}"));
        let file = sample.file_name().unwrap().to_string_lossy().to_string();
        for (ext, tool, args) in tools {
            let wrapped = dir.0.join(format!("{file}.{ext}"));
            wrap(tool, args, &sample, &wrapped);
            let got =
                sources::read_path(&wrapped, None).unwrap_or_else(|e| panic!("{file}.{ext}: {e}"));
            assert_eq!(content(&got), content(&plain), "{file}.{ext}");
        }
        if file.ends_with(".txt") {
            for (ext, to) in [("utf16le", "UTF-16LE"), ("utf16", "UTF-16")] {
                let wrapped = dir.0.join(format!("{file}.{ext}"));
                wrap("iconv", &["-f", "UTF-8", "-t", to], &sample, &wrapped);
                if to == "UTF-16LE" {
                    // iconv writes no byte-order mark for an explicit order: add what Windows
                    // tools write.
                    let body = std::fs::read(&wrapped).unwrap();
                    std::fs::write(&wrapped, [&[0xff, 0xfe][..], &body].concat()).unwrap();
                }
                let got = sources::read_path(&wrapped, None)
                    .unwrap_or_else(|e| panic!("{file}.{ext}: {e}"));
                assert_eq!(content(&got), content(&plain), "{file}.{ext}");
            }
            let bom = dir.0.join(format!("{file}.bom"));
            let body = std::fs::read(&sample).unwrap();
            std::fs::write(&bom, [&[0xef, 0xbb, 0xbf][..], &body].concat()).unwrap();
            let got = sources::read_path(&bom, None).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(content(&got), content(&plain), "{file} with a BOM");
            // Two wrappings: UTF-16 text in gzip.
            let gz16 = dir.0.join(format!("{file}.utf16.gz"));
            wrap("gzip", &["-c"], &dir.0.join(format!("{file}.utf16")), &gz16);
            let got = sources::read_path(&gz16, None).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(content(&got), content(&plain), "{file}.utf16.gz");
        }
    }
}

#[test]
fn odd_inputs_say_what_they_are() {
    let dir = TempDir::new("odd-inputs");
    let error = |p: &Path| {
        sources::read_path(p, None)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_else(|| panic!("{} was read", p.display()))
    };
    let empty = dir.0.join("empty.txt");
    std::fs::write(&empty, b"").unwrap();
    assert!(
        error(&empty).contains("the file is empty"),
        "{}",
        error(&empty)
    );
    let empty_gz = dir.0.join("empty.txt.gz");
    wrap("gzip", &["-c"], &empty, &empty_gz);
    assert!(error(&empty_gz).contains("empty once unwrapped"));

    let xml = testdata("configs/01-libvirt-test-hyperv.xml");
    let e = error(&xml);
    assert!(
        e.contains("libvirt XML") && e.contains("virtlens lint"),
        "{e}"
    );
    let argv = testdata("configs/01-libvirt-test-hyperv.args");
    let e = error(&argv);
    assert!(
        e.contains("QEMU command line") && e.contains("--config"),
        "{e}"
    );

    // A document that quotes a tool's output: what virtlens looked for, not one format's
    // expectation.
    let readme = virtlens_testkit::repo_root().join("README.md");
    let e = error(&readme);
    assert!(
        e.contains("this is a document") && e.contains("perf-kvm-stat"),
        "{e}"
    );

    // A gzip cut in the middle: an error that says the compressed data breaks, never a
    // profile that silently lacks the rest.
    let sample = testdata("exit-reports/24-perf-script-kvm-events-nested-triple-fault.txt");
    let gz = dir.0.join("cut.txt.gz");
    wrap("gzip", &["-c"], &sample, &gz);
    let bytes = std::fs::read(&gz).unwrap();
    let cut = dir.0.join("cut-short.txt.gz");
    std::fs::write(&cut, &bytes[..bytes.len() / 2]).unwrap();
    let e = error(&cut);
    assert!(e.contains("the gzip data ends or breaks"), "{e}");
}

//! `--mtree` with real QEMU `info mtree` dumps names ports the built-in map cannot (device
//! BARs), and `--pid/--vm/--vcpu` filter rows or explain why they cannot.

use std::process::Command;

use serde_json::Value;

use crate::common::{TempDir, data};

fn virtlens(args: &[&str]) -> (Option<i32>, String, String) {
    let _g = virtlens_testkit::shared();
    let out = Command::new(env!("CARGO_BIN_EXE_virtlens"))
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A `perf kvm stat report --event=ioport` table from a q35 guest with a legacy virtio-blk.
const IOPORT_TABLE: &str = "\
Analyze events for all VMs, all VCPUs:

      IO Port Access    Samples  Samples%     Time%    Min Time    Max Time         Avg time

         0xc010:POUT       5000    50.00%    70.00%      9.00us     80.00us     14.00us ( +-   1.00% )
          0x608:PIN        4000    40.00%    25.00%      4.00us     30.00us      6.25us ( +-   1.00% )
           0x70:POUT       1000    10.00%     5.00%      3.00us     10.00us      5.00us ( +-   1.00% )

Total Samples:10000, Total events handled time:100000.00us.
";

fn names(json: &str) -> Vec<(String, Option<String>)> {
    let v: Value = serde_json::from_str(json).unwrap();
    v["tables"][0]["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["key"].as_str().unwrap().to_string(),
                r["name"].as_str().map(str::to_string),
            )
        })
        .collect()
}

#[test]
fn mtree_names_device_bars_from_a_real_dump() {
    let tmp = TempDir::new("mtree");
    let dir = tmp.path();
    let table = dir.join("ioport.txt");
    std::fs::write(&table, IOPORT_TABLE).unwrap();
    let t = table.display().to_string();

    let (code, out, err) = virtlens(&["report", "--json", &t]);
    assert_eq!(code, Some(0), "{err}");
    let builtin = names(&out);
    assert_eq!(
        builtin[0],
        ("0xc010".into(), None),
        "a BAR is unknown without a map"
    );
    assert_eq!(builtin[1].1.as_deref(), Some("acpi-pm-timer"));
    assert_eq!(builtin[2].1.as_deref(), Some("rtc-index"));

    for machine in ["q35", "pc"] {
        let mtree = data(&format!("mtree/{machine}-info-mtree.txt"));
        let (code, out, err) = virtlens(&["report", "--json", "--mtree", &mtree, &t]);
        assert_eq!(code, Some(0), "{machine}: {err}");
        let mapped = names(&out);
        assert_eq!(mapped[0].1.as_deref(), Some("virtio-pci"), "{machine}");
        assert_eq!(
            mapped[1].1.as_deref(),
            Some("acpi-tmr: acpi-pm-timer"),
            "{machine}"
        );
    }

    let bad = dir.join("bad.mtree");
    std::fs::write(
        &bad,
        "address-space: I/O\n  0000-zzzz (prio 0, i/o): broken\n",
    )
    .unwrap();
    let (code, _, err) = virtlens(&["report", "--mtree", &bad.display().to_string(), &t]);
    assert_eq!(code, Some(2));
    assert!(err.contains("bad.mtree:2:"), "{err}");
}

#[test]
fn filters_keep_matching_rows_or_say_why_not() {
    let live = data("exit-reports/17-perf-kvm-stat-live-amd-sev-es-hung-vcpu.txt");
    let (code, out, _) = virtlens(&["report", "--json", "--pid", "1347712", &live]);
    assert_eq!(code, Some(0));
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["tables"][0]["total"]["count"], 156);
    // A filter that selects nothing is a usage error (issue 21: it exited 0 with an empty
    // report), and says why.
    let (code, _, err) = virtlens(&["report", "--json", "--pid", "1", &live]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("select no row"), "{err}");

    let all_vms = data("exit-reports/13-perf-kvm-stat-vmexit-intel-msr-write-hlt.txt");
    let (code, _, err) = virtlens(&["report", "--vcpu", "0", &all_vms]);
    assert_eq!(code, Some(2));
    assert!(err.contains("no per-vCPU breakdown"), "{err}");
}

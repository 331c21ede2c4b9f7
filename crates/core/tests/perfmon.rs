//! Performance-counter inputs: real perfmon logs (testdata/perfmon, sources in its README),
//! the talk's per-VP table, and Hyper-V / esxtop logs built here to the documented PDH-CSV
//! layout (no public log with those counters could be found; these are labelled synthetic).

use virtlens_core::counters::{self, Condition, Level};
use virtlens_core::profile::{CounterLog, CounterTool, Profile};
use virtlens_core::sources::{self, Format};

fn read(bytes: &[u8], name: &str) -> Profile {
    sources::read_bytes(bytes, name, None).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn log(p: &Profile) -> &CounterLog {
    p.counters.as_ref().expect("counters")
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * b.abs().max(1.0)
}

#[test]
fn real_log_with_blank_first_sample_and_negative_bias() {
    let bytes = include_bytes!("../../../testdata/perfmon/disk-queue-india-2017.csv");
    assert_eq!(sources::detect(bytes), Some(Format::PerfmonCsv));
    let p = read(bytes, "india.csv");
    let l = log(&p);
    assert_eq!(l.header.tool, CounterTool::Perfmon);
    assert_eq!(l.header.time_zone.as_deref(), Some("India Standard Time"));
    assert_eq!(l.header.bias_minutes, Some(-330));
    assert_eq!(l.header.samples, 21);
    assert_eq!(l.series.len(), 12);
    assert!(l.header.interval_s.is_some_and(|i| (i - 15.0).abs() < 0.1));
    let c = l
        .series
        .iter()
        .find(|s| {
            s.path.instance.as_deref() == Some("C:")
                && s.path.counter == "Avg. Disk Read Queue Length"
        })
        .unwrap();
    let st = c.stats.unwrap();
    assert_eq!((st.n, c.blank), (20, 1));
    assert!(close(st.mean, 0.017_284_125_128_328_22), "{}", st.mean);
    assert!(close(st.max, 0.107_590_000_585_345_6));
    // Instantaneous counters have a value in the first row too.
    let q = l
        .series
        .iter()
        .find(|s| s.path.counter == "Current Disk Queue Length")
        .unwrap();
    assert_eq!((q.stats.unwrap().n, q.blank), (21, 0));
    // Slices: every sample falls in one of PAL's 30 slices of the 15-minute span.
    assert_eq!(c.slices.iter().map(|s| s.stats.n).sum::<u64>(), 20);
    assert!(p.warnings.iter().any(|w| w.message.contains("blank")));
}

#[test]
fn real_logs_with_crlf_and_numbered_instances() {
    for (bytes, samples) in [
        (
            &include_bytes!("../../../testdata/perfmon/process-bytes-edt-2021-b.csv")[..],
            30,
        ),
        (
            &include_bytes!("../../../testdata/perfmon/process-bytes-edt-2021-c.csv")[..],
            26,
        ),
    ] {
        let p = read(bytes, "edt.csv");
        let l = log(&p);
        assert_eq!(
            (l.header.samples, l.header.bias_minutes),
            (samples, Some(240))
        );
        assert_eq!(l.header.time_zone.as_deref(), Some("Eastern Daylight Time"));
        assert!(
            l.series
                .iter()
                .any(|s| s.path.instance.as_deref() == Some("AnyDesk#2"))
        );
        assert!(l.series.iter().all(|s| s.blank == 0 && s.unreadable == 0));
        assert_eq!(l.series[0].path.host.as_deref(), Some("7702-48817743"));
    }
    let p = read(
        include_bytes!("../../../testdata/perfmon/process-bytes-edt-2021-b.csv"),
        "b.csv",
    );
    let total = log(&p).series[0].stats.unwrap();
    assert_eq!(
        (total.max, total.min),
        (242_539_898_949_632.0, 238_133_030_289_408.0)
    );
}

#[test]
fn the_talks_vp_table_is_interrupt_delivery_at_two_intercepts_per_io() {
    let bytes = include_bytes!("../../../testdata/perfmon/talk-10m-iops-vp-table.txt");
    assert_eq!(sources::detect(bytes), Some(Format::CounterTable));
    let p = read(bytes, "talk.txt");
    let l = log(&p);
    assert_eq!(l.series.len(), 8);
    assert_eq!(
        l.mean(
            virtlens_core::testing::VP,
            Some("_Total"),
            "Total Intercepts/sec"
        ),
        Some(9_214_942.0)
    );
    let a = counters::analyse("talk", l, Some(4.5e6));
    let first = &a.findings[0];
    assert_eq!(
        (first.id.id(), first.level),
        ("hv.interrupt-delivery", Level::High)
    );
    let per_io = first
        .facts
        .iter()
        .find(|f| f.name == "intercepts per IO")
        .unwrap()
        .value;
    assert_eq!(format!("{per_io:.1}"), "2.0");
    assert!(close(per_io, 9_214_942.0 / 4.5e6));
    let hv = a
        .findings
        .iter()
        .find(|f| f.id == "hv.hypervisor-time")
        .unwrap();
    let share = hv
        .facts
        .iter()
        .find(|f| f.name.starts_with("share"))
        .unwrap()
        .value;
    assert!(close(share, 100.0 * 20.216 / (20.216 + 21.465)));
    // Without an IO rate the finding stands, with no per-IO numbers.
    let a = counters::analyse("talk", l, None);
    assert!(a.findings[0].facts.iter().all(|f| f.unit != "per IO"));
}

/// A Hyper-V host log built to the layout relog writes (synthetic): two VMs, LPs busy in the
/// second half, VPs waiting long for an LP.
fn hyperv_log() -> String {
    let paths = [
        r"\Hyper-V Hypervisor Logical Processor(_Total)\% Total Run Time",
        r"\Hyper-V Hypervisor Logical Processor(Hv LP 0)\Context Switches/sec",
        r"\Hyper-V Hypervisor Virtual Processor(sql01:Hv VP 0)\% Guest Run Time",
        r"\Hyper-V Hypervisor Virtual Processor(sql01:Hv VP 0)\% Hypervisor Run Time",
        r"\Hyper-V Hypervisor Virtual Processor(sql01:Hv VP 0)\CPU Wait Time Per Dispatch",
        r"\Hyper-V Hypervisor Virtual Processor(web:Hv VP 0)\% Guest Run Time",
        r"\Hyper-V Hypervisor Virtual Processor(web:Hv VP 0)\CPU Wait Time Per Dispatch",
    ];
    let mut s = String::from("\"(PDH-CSV 4.0) (W. Europe Daylight Time)(-120)\"");
    for p in paths {
        s.push_str(&format!(",\"\\\\HV01{p}\""));
    }
    s.push_str("\r\n");
    for i in 0..60u32 {
        let busy = if i >= 30 { 95.0 } else { 40.0 };
        let cs = if i == 10 {
            " ".to_string()
        } else {
            (1000 * i).to_string()
        };
        s.push_str(&format!(
            "\"03/01/2024 10:{:02}:{:02}.000\",\"{busy}\",\"{cs}\",\"60.5\",\"12.25\",\"120000\",\"5\",\"8000\"\r\n",
            i / 60,
            i % 60
        ));
    }
    s
}

#[test]
fn pal_thresholds_are_evaluated_per_slice() {
    let text = hyperv_log();
    let p = read(text.as_bytes(), "hv.csv");
    let l = log(&p);
    assert_eq!(l.header.samples, 60);
    let a = counters::analyse("hv.csv", l, None);
    let lp = a
        .pal
        .iter()
        .find(|al| al.path.contains("% Total Run Time"))
        .unwrap();
    // 95% is above the critical 90%: only critical alerts, in the second half of the slices.
    assert_eq!(lp.threshold.condition, Condition::Critical);
    assert!(a.pal.iter().all(|al| !(al.path.contains("% Total Run Time")
        && al.threshold.condition == Condition::Warning)));
    assert!(
        (14..=16).contains(&lp.breaches.len()),
        "{}",
        lp.breaches.len()
    );
    assert!(lp.breaches.iter().all(|b| b.start_s.unwrap_or(0.0) >= 28.0));
    // Context switches pass 20,000/s from the 21st sample on (one blank sample is not a zero).
    let cs = a
        .pal
        .iter()
        .find(|al| al.path.contains("Context Switches"))
        .unwrap();
    assert_eq!(cs.threshold.condition, Condition::Warning);
    // The VP guest-run threshold (75%) is not broken at 60.5%.
    assert!(a.pal.iter().all(|al| !al.path.contains("% Guest Run Time")));
    // 120 µs of CPU wait per dispatch: medium, the most a wait per dispatch makes alone (the
    // thresholds of the KVM ready time).
    let wait = a.findings.iter().find(|f| f.id == "hv.overcommit").unwrap();
    assert_eq!(
        (wait.subject.as_str(), wait.level),
        ("sql01", Level::Medium)
    );
    assert!(
        a.findings
            .iter()
            .all(|f| f.subject != "web" || f.id != "hv.overcommit")
    );
    let vm = a.vps.iter().find(|m| m.subject == "sql01").unwrap();
    assert_eq!(
        (vm.vps, vm.guest_run_pct, vm.hv_run_pct),
        (1, Some(60.5), Some(12.25))
    );
}

/// An `esxtop -b` log built to its layout (synthetic, testdata/perfmon/README.md): a 4-vCPU VM
/// whose group %RDY is 48 (12 per vCPU), and a VM held by its CPU limit.
#[test]
fn esxtop_ready_costop_and_limit() {
    let s = include_str!("../../../testdata/perfmon/esxtop-built-to-layout.csv");
    let p = read(s.as_bytes(), "esxtop.csv");
    let l = log(&p);
    assert_eq!(l.header.tool, CounterTool::Esxtop);
    let a = counters::analyse("esxtop.csv", l, None);
    let db = a.esx.iter().find(|v| v.vm == "db01").unwrap();
    assert_eq!((db.vcpus, db.ready_pct), (4, Some(12.0)));
    let over = a.findings.iter().find(|f| f.id == "hv.overcommit").unwrap();
    // 12% ready per vCPU: medium on the 5 / 10 / 20% thresholds of the KVM ready time.
    assert_eq!((over.subject.as_str(), over.level), ("db01", Level::Medium));
    let limit = a.findings.iter().find(|f| f.id == "hv.cpu-limit").unwrap();
    assert_eq!(
        (limit.subject.as_str(), limit.level),
        ("batch", Level::High)
    );
}

#[test]
fn typeperf_console_output_and_get_counter_tables() {
    let console = "\r\n\"(PDH-CSV 4.0)\",\"\\\\PC\\Hyper-V Hypervisor Virtual Processor(_Total)\\Total Intercepts/sec\"\r\n\
                   \"09/22/2026 21:42:32.824\",\"1200.5\"\r\n\"09/22/2026 21:42:33.824\",\"1300.5\"\r\n\
                   Exiting, please wait...\r\nThe command completed successfully.\r\n";
    let p = read(console.as_bytes(), "typeperf.txt");
    assert_eq!(log(&p).header.samples, 2);
    assert!(p.warnings.iter().any(|w| w.message.contains("Exiting")));
    assert!(
        p.warnings
            .iter()
            .any(|w| w.message.contains("no time-zone bias"))
    );
    let get_counter = "Timestamp                 CounterSamples\n---------                 --------------\n\
                       3/1/2024 10:00:00 AM      \\\\hv01\\hyper-v hypervisor virtual processor(_total)\\% guest run time :\n\
                       30.5\n\n\
                       \\\\hv01\\hyper-v hypervisor virtual processor(_total)\\% hypervisor run time :\n\
                       12\n";
    let p = read(get_counter.as_bytes(), "get-counter.txt");
    let l = log(&p);
    assert_eq!(l.series.len(), 2);
    let m = &virtlens_core::testing::vp_metrics(l)[0];
    assert_eq!((m.guest_run_pct, m.hv_run_pct), (Some(30.5), Some(12.0)));
}

#[test]
fn bad_input_says_what_was_expected() {
    let e = sources::read_bytes(b"hello\nworld\n", "x.csv", Some(Format::PerfmonCsv)).unwrap_err();
    let msg = e.to_string();
    assert!(
        msg.starts_with("x.csv:1:") && msg.contains("PDH-CSV header"),
        "{msg}"
    );
    let e =
        sources::read_bytes(b"nothing here\n", "t.txt", Some(Format::CounterTable)).unwrap_err();
    assert!(e.to_string().contains("expected counter values"), "{e}");
    // A header with no rows is read, with a note.
    let p = read(
        b"\"(PDH-CSV 4.0) (UTC)(0)\",\"\\\\h\\Memory\\Available MBytes\"\n",
        "h.csv",
    );
    assert_eq!(log(&p).header.samples, 0);
    assert!(
        p.warnings
            .iter()
            .any(|w| w.message.contains("no sample rows"))
    );
}

/// `Get-Counter -Continuous` pasted: the same counter path with a value again and again. All
/// values go into its statistics; the first twenty repeats are noted one by one, the rest in
/// one more note.
#[test]
fn a_counter_pasted_again_and_again_keeps_every_value_and_few_notes() {
    let text: String = (0..30)
        .map(|i| {
            format!(
                "\\\\hv01\\hyper-v hypervisor logical processor(_total)\\% total run time :\n{}\n\n",
                30 + i
            )
        })
        .collect();
    let p = sources::read_bytes(text.as_bytes(), "pasted.txt", Some(Format::CounterTable))
        .unwrap_or_else(|e| panic!("{e}"));
    let l = log(&p);
    assert_eq!(l.series.len(), 1);
    let stats = l.series[0].stats.as_ref().map(|s| (s.n, s.min, s.max));
    assert_eq!(stats, Some((30, 30.0, 59.0)));
    let again: Vec<_> = p
        .warnings
        .iter()
        .filter(|w| w.message.contains("appear again") || w.message.contains("appears again"))
        .collect();
    assert_eq!(again.len(), 21, "{again:?}");
    assert!(
        again[20]
            .message
            .starts_with("9 more counter values appear again"),
        "{}",
        again[20].message
    );
}

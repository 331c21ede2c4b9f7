//! `--html FILE` pages, checked in a real browser: each page is made by the binary from real
//! inputs (the four seed tables' compare, a diagnose of seed table 2, the counters of a Hyper-V
//! VP table and a perfmon log, a report of a trace with latencies, a lab run and an exit-cost
//! run on /dev/kvm, the offline lab, a stretch), loaded by
//! headless Chromium with the network made unusable, and the DOM Chromium built is checked:
//! every finding of the JSON, the totals, every chart with its title, description, bars and
//! data table, the backend label. The browser's console must stay silent and the page must ask
//! for nothing over the network (Chromium's net log). A screenshot of each page is saved under
//! `target/ci-artifacts/html/` (CI keeps it), with two printed PDFs whose text checks the print
//! stylesheet. `a_bad_page_is_caught` proves the checks can fail.

use std::path::{Path, PathBuf};

use serde_json::Value;
use virtlens_core::render::{count, duration, rate};
use virtlens_testkit::{Need, require};

use crate::browser::{self, Loaded};
use crate::common::run as virtlens;
use crate::common::{TempDir, data};
use crate::html_charts::{backend_said_once, laid_out, one_pattern_per_series};

pub(crate) fn seeds() -> Vec<String> {
    [
        "1-no-hyperv-features.txt",
        "2-all-hyperv-features.txt",
        "3-hypervisor-cpuid-hidden.txt",
        "4-all-hyperv-features-stimer-optimized.txt",
    ]
    .iter()
    .map(|n| data(&format!("seed-kvm-hyperv-traps/{n}")))
    .collect()
}

/// Runs `virtlens ARGS --html PAGE` (exit status `code`), then the same with `--json`.
pub(crate) fn page_and_json(
    dir: &TempDir,
    name: &str,
    args: &[&str],
    code: i32,
) -> (PathBuf, Value) {
    let page = dir.0.join(format!("{name}.html"));
    let mut with_page: Vec<&str> = args.to_vec();
    let shown = page.display().to_string();
    with_page.extend(["--html", &shown]);
    let out = virtlens(&with_page);
    assert_eq!(
        out.status.code(),
        Some(code),
        "virtlens {with_page:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!out.stdout.is_empty(), "the text still goes to stdout");
    let mut json_args: Vec<&str> = args.to_vec();
    json_args.push("--json");
    let out = virtlens(&json_args);
    let json = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("virtlens {json_args:?}: not JSON: {e}"));
    (page, json)
}

/// Loads the page, checks what every page must have, saves the screenshot.
pub(crate) fn load(page: &Path, name: &str) -> Loaded {
    let l = browser::load(page);
    assert!(l.console.is_empty(), "{name}: console: {:#?}", l.console);
    assert!(
        l.requests.is_empty(),
        "{name}: the page asked the network for {:#?}",
        l.requests
    );
    assert!(l.dom.contains("</main>"), "{name}: no main in the DOM");
    assert!(
        l.dom.contains("id=\"measured\""),
        "{name}: no backend label"
    );
    let charts = l.charts();
    assert!(!charts.is_empty(), "{name}: no chart");
    for c in &charts {
        for part in [
            "<svg",
            &format!("<title id=\"{}-title\">", c.id),
            &format!("<desc id=\"{}-desc\">", c.id),
            "class=\"bar ",
            "<details class=\"data\">",
            "<table>",
        ] {
            assert!(c.html.contains(part), "{name}: chart {} lacks {part}", c.id);
        }
        assert!(
            !c.title.is_empty() && !c.desc.is_empty(),
            "{name}: chart {} has an empty title or description",
            c.id
        );
    }
    one_pattern_per_series(&l, name);
    let lay = laid_out(page, name);
    assert_eq!(
        lay.widths.len(),
        charts.len(),
        "{name}: every chart measured"
    );
    browser::screenshot(page, name);
    l
}

/// Every finding of `findings` (a JSON array) is an element of the page.
fn findings_on_page(l: &Loaded, findings: &Value) {
    let findings = findings.as_array().unwrap();
    assert!(!findings.is_empty());
    for f in findings {
        let id = f["id"].as_str().unwrap();
        assert!(
            l.dom.contains(&format!("data-finding=\"{id}\"")),
            "finding {id} on the page"
        );
    }
}

pub(crate) fn chart_ids(l: &Loaded) -> Vec<String> {
    l.charts().into_iter().map(|c| c.id).collect()
}

#[test]
fn compare_of_the_four_seed_tables() {
    if !require(&[Need::Chromium]) {
        return;
    }
    let dir = TempDir::new("compare");
    let mut args = vec!["compare"];
    let files = seeds();
    args.extend(files.iter().map(String::as_str));
    let (page, json) = page_and_json(&dir, "compare-seed-tables", &args, 0);
    let l = load(&page, "compare-seed-tables");
    assert_eq!(
        chart_ids(&l),
        ["kind-1-totals", "kind-1-keys"],
        "the totals and the per-key bars of the exit table"
    );
    for v in json["verdicts"].as_array().unwrap() {
        let name = v["name"].as_str().unwrap();
        assert!(l.dom.contains(name), "verdict of {name}");
    }
    // Every input's handled time without idle, as the JSON has it, is on the page.
    for t in json["tables"][0]["totals"].as_array().unwrap() {
        let ns = t["overhead_time_ns"].as_u64().unwrap();
        let shown = duration(ns as f64);
        assert!(l.dom.contains(&shown), "total without idle {shown}");
    }
    assert!(l.dom.contains("EPT_MISCONFIG"));
    backend_said_once(&l, "compare-seed-tables");
    // The full table ends with the totals the analysis summed, every input's.
    let table = &l.dom[l.dom.find("All keys of").unwrap()..];
    let table = &table[..table.find("</table>").unwrap()];
    let total = &table[table.rfind("<tr>").unwrap()..];
    assert!(total.contains("<th scope=\"row\">total</th>"), "{total}");
    for t in json["tables"][0]["totals"].as_array().unwrap() {
        let n = count(t["count"].as_u64().unwrap());
        assert!(total.contains(&n), "total count {n} in {total}");
    }
}

#[test]
fn diagnose_of_seed_table_2() {
    if !require(&[Need::Chromium]) {
        return;
    }
    let dir = TempDir::new("diagnose");
    let seed2 = &seeds()[1];
    let (page, json) = page_and_json(&dir, "diagnose-seed-2", &["diagnose", seed2], 1);
    let l = load(&page, "diagnose-seed-2");
    assert_eq!(chart_ids(&l), ["input-1-costs"]);
    findings_on_page(&l, &json["findings"]);
    for f in json["findings"].as_array().unwrap() {
        let id = f["id"].as_str().unwrap();
        for fix in f["fixes"].as_array().unwrap() {
            if let Some(q) = fix["qemu"].as_str() {
                let escaped = q
                    .replace('&', "&amp;")
                    .replace('<', "&lt;")
                    .replace('>', "&gt;");
                assert!(l.dom.contains(&escaped), "QEMU snippet of {id}: {q}");
            }
        }
    }
    assert!(l.dom.contains("<pre><code class=\"language-xml\">"));
    backend_said_once(&l, "diagnose-seed-2");
    let exits = json["inputs"][0]["evidence"]["totals"]["count"]
        .as_u64()
        .unwrap();
    assert!(l.dom.contains(&count(exits)), "the input's exits");
}

#[test]
fn counters_of_a_vp_table_and_a_perfmon_log() {
    if !require(&[Need::Chromium]) {
        return;
    }
    let dir = TempDir::new("counters");
    let talk = data("perfmon/talk-10m-iops-vp-table.txt");
    let log = data("perfmon/disk-queue-india-2017.csv");
    // Exit 1: the talk's counters hold high findings (--fail-on high).
    let (page, json) = page_and_json(&dir, "counters", &["counters", &talk, &log], 1);
    let l = load(&page, "counters");
    // Only the VP table has hypervisor counters to chart; the disk log gets its section.
    assert_eq!(chart_ids(&l), ["counters-1-hv-events"]);
    let inputs = json["inputs"].as_array().unwrap();
    assert_eq!(inputs.len(), 2);
    assert!(l.dom.contains("id=\"input-2\""), "a section per input");
    findings_on_page(&l, &inputs[0]["findings"]);
    let vps = inputs[0]["vps"].as_array().unwrap();
    let chart = &l.charts()[0];
    let mut values = 0;
    for vp in vps {
        assert!(chart.html.contains(vp["subject"].as_str().unwrap()));
        for (k, v) in vp.as_object().unwrap() {
            if k.ends_with("_per_s")
                && !matches!(
                    k.as_str(),
                    "nested_page_faults_per_s" | "posted_notifications_per_s"
                )
                && let Some(x) = v.as_f64()
            {
                values += 1;
                assert!(chart.html.contains(&rate(x)), "{k} {x}");
            }
        }
    }
    assert_eq!(
        chart.html.matches("class=\"bar ").count(),
        values,
        "one bar per VM and recorded kind"
    );
    assert!(l.dom.contains("no hv.* finding"), "the quiet log says so");
    backend_said_once(&l, "counters");
    // Issue 21: the fixes' inline Markdown is rendered, never shown raw.
    let fixes: Vec<&str> = l
        .dom
        .split("<p class=\"label\">Fix: ")
        .skip(1)
        .map(|f| &f[..f.find("</p>").unwrap()])
        .collect();
    assert!(!fixes.is_empty());
    assert!(fixes.iter().all(|f| !f.contains('`')), "{fixes:#?}");
    assert!(fixes.iter().any(|f| f.contains("<code>")), "{fixes:#?}");
}

/// An `esxtop -b` log built to its documented layout (no public one was found): a 4-vCPU VM
/// waiting for CPUs and a VM held by its CPU limit.
#[test]
fn counters_of_an_esxtop_log_built_to_its_layout() {
    if !require(&[Need::Chromium]) {
        return;
    }
    let dir = TempDir::new("counters-esx");
    let shown = data("perfmon/esxtop-built-to-layout.csv");
    let (page, json) = page_and_json(&dir, "counters-esxtop", &["counters", &shown], 1);
    let l = load(&page, "counters-esxtop");
    assert_eq!(chart_ids(&l), ["counters-1-esx-waits"]);
    let chart = &l.charts()[0];
    let mut values = 0;
    for vm in json["inputs"][0]["esx"].as_array().unwrap() {
        assert!(chart.html.contains(vm["vm"].as_str().unwrap()));
        for k in ["ready_pct", "costop_pct", "max_limited_pct"] {
            if let Some(x) = vm[k].as_f64() {
                values += 1;
                assert!(chart.html.contains(&format!("{x:.1}%")), "{k} {x}");
            }
        }
    }
    assert_eq!(chart.html.matches("class=\"bar ").count(), values);
    findings_on_page(&l, &json["inputs"][0]["findings"]);
}

/// The print stylesheet, checked on the PDF Chromium prints: the contents list is left out,
/// every chart's data table (collapsed on screen) is printed in place of its toggle, and a
/// link shows its address unless its text already does.
#[test]
fn pages_print_with_their_tables_and_addresses() {
    if !require(&[Need::Chromium, Need::Pdftotext]) {
        return;
    }
    let dir = TempDir::new("print");
    let seed2 = &seeds()[1];
    let (page, _) = page_and_json(&dir, "diagnose-print", &["diagnose", seed2], 1);
    let l = browser::load(&page);
    let (text, pages) = browser::print(&page, "diagnose-seed-2");
    assert!(pages >= 1, "{pages} pages");
    assert!(
        !text.lines().any(|line| line.trim() == "1. Summary"),
        "the contents list is printed"
    );
    assert!(
        !text.contains("numbers of this chart as a table"),
        "the table toggle is printed"
    );
    let charts = l.charts();
    assert!(!charts.is_empty());
    for c in &charts {
        let details = &c.html[c.html.find("<details").unwrap()..];
        let caption = &details[details.find("<caption>").unwrap() + 9..];
        let caption = &caption[..caption.find("</caption>").unwrap()];
        assert!(
            text.contains(caption),
            "chart {}: table {caption:?} not printed",
            c.id
        );
    }
    assert!(text.contains(" <https://"), "a source's address is printed");
    let cut = browser::cut_words("diagnose-seed-2");
    assert!(cut.is_empty(), "printed past the margin: {cut:#?}");

    let talk = data("perfmon/talk-10m-iops-vp-table.txt");
    let (page, _) = page_and_json(&dir, "counters-print", &["counters", &talk], 1);
    let (text, _) = browser::print(&page, "counters");
    assert!(text.contains("https://www.snia.org"));
    assert!(
        !text.contains("<https://www.snia.org"),
        "a link whose text is its address is printed twice"
    );
    let cut = browser::cut_words("counters");
    assert!(cut.is_empty(), "printed past the margin: {cut:#?}");

    // Issue 21: the stretch table of every layer fits the paper.
    let figures = data("stretch/nested-hyperv-2016tp4.json");
    let (page, json) = page_and_json(&dir, "stretch-print", &["stretch", &figures], 0);
    let (text, _) = browser::print(&page, "stretch");
    for layer in json["layers"].as_array().unwrap() {
        let name = layer["name"].as_str().unwrap();
        assert!(text.contains(name), "layer {name} printed");
    }
    let cut = browser::cut_words("stretch");
    assert!(cut.is_empty(), "printed past the margin: {cut:#?}");
}

#[test]
fn report_of_a_trace_with_latencies() {
    if !require(&[Need::Chromium]) {
        return;
    }
    let dir = TempDir::new("report");
    let input = data("cases/ml-06-nested-vmx-dr6-preemption-timer-trace/input.txt");
    let (page, json) = page_and_json(&dir, "report-trace", &["report", &input], 0);
    let l = load(&page, "report-trace");
    let ids = chart_ids(&l);
    assert!(ids.contains(&"table-1-breakdown".to_string()), "{ids:?}");
    assert!(
        ids.iter().any(|i| i.starts_with("table-1-latency-")),
        "a latency distribution where single events were timed: {ids:?}"
    );
    for row in json["tables"][0]["rows"].as_array().unwrap() {
        let key = row["key"].as_str().unwrap();
        assert!(l.dom.contains(key), "row {key}");
    }
}

#[test]
fn lab_measured_on_dev_kvm() {
    if !require(&[Need::Chromium, Need::Kvm]) {
        return;
    }
    let dir = TempDir::new("lab");
    let page = dir.0.join("lab.html");
    let out = virtlens(&["lab", "--quick", "--html", &page.display().to_string()]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let l = load(&page, "lab-quick");
    let ids = chart_ids(&l);
    assert_eq!(ids.first().map(String::as_str), Some("scenarios-trap-fix"));
    assert!(ids.iter().any(|i| i.starts_with("exit-costs-")), "{ids:?}");
    assert!(
        !l.dom.contains("id=\"banner\""),
        "a measurement has no recording banner"
    );
    let trap_fix = &l.charts()[0];
    assert!(
        trap_fix.html.contains("the fix)"),
        "trap bars say their ratio to the fix"
    );
}

#[test]
fn lab_io_path_shows_exits_per_io_for_each_delivery_mode() {
    if !require(&[Need::Chromium, Need::Kvm]) {
        return;
    }
    let dir = TempDir::new("lab-io-path");
    let page = dir.0.join("lab-io-path.html");
    let out = virtlens(&[
        "lab",
        "--io-path",
        "--quick",
        "--html",
        &page.display().to_string(),
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let l = load(&page, "lab-io-path");
    let ids = chart_ids(&l);
    assert!(ids.iter().any(|i| i == "io-path"), "{ids:?}");
    let chart = l
        .charts()
        .into_iter()
        .find(|c| c.html.contains("Exits per IO by delivery mode"))
        .expect("the IO path chart");
    for mode in ["vmm-inject", "irqfd", "poll"] {
        assert!(chart.html.contains(mode), "series {mode}");
    }
    // vmm-inject: two exits and two returns to the VMM per IO at every depth (the design's
    // counts, exact on any backend).
    assert!(
        chart.html.contains("2.00 exits, 2.00 to the VMM"),
        "vmm-inject's counts per IO"
    );
    assert!(l.dom.contains("Every configuration, per IO"));
}

#[test]
fn lab_offline_says_it_is_a_recording() {
    if !require(&[Need::Chromium]) {
        return;
    }
    let dir = TempDir::new("lab-offline");
    let page = dir.0.join("lab-offline.html");
    let out = virtlens(&["lab", "--offline", "--html", &page.display().to_string()]);
    assert_eq!(out.status.code(), Some(0));
    let l = load(&page, "lab-offline");
    assert!(l.dom.contains("id=\"banner\""));
    assert!(l.dom.contains("RECORDED, not measured here"));
    assert!(
        l.dom.contains("backend pvm"),
        "the recording's backend is named"
    );
}

#[test]
fn exitcost_measured_on_dev_kvm() {
    if !require(&[Need::Chromium, Need::Kvm]) {
        return;
    }
    let dir = TempDir::new("exitcost");
    let (page, json) = page_and_json(
        &dir,
        "exitcost",
        &[
            "exitcost", "--runs", "3", "--mode", "long64", "--budget", "30",
        ],
        0,
    );
    let l = load(&page, "exitcost");
    assert_eq!(chart_ids(&l), ["exit-costs-long64"]);
    let backend = json["backend"]["name"].as_str().unwrap();
    assert!(
        l.dom.contains(&format!("backend {backend}")),
        "backend {backend}"
    );
    for t in json["tests"].as_array().unwrap() {
        let name = t["name"].as_str().unwrap();
        assert!(l.dom.contains(name), "test {name}");
    }
}

#[test]
fn stretch_of_published_figures() {
    if !require(&[Need::Chromium]) {
        return;
    }
    let dir = TempDir::new("stretch");
    let figures = data("stretch/nested-hyperv-2016tp4.json");
    let (page, json) = page_and_json(&dir, "stretch", &["stretch", &figures], 0);
    let l = load(&page, "stretch");
    assert_eq!(chart_ids(&l), ["stretch-factors"]);
    let mut factors = 0;
    for row in json["rows"].as_array().unwrap() {
        let m = row["measure"].as_str().unwrap();
        assert!(l.dom.contains(m), "measure {m}");
        factors += row["vs_first"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|v| !v.is_null())
            .count();
    }
    assert!(!l.dom.contains('`'), "inline Markdown shown raw");
    let chart = &l.charts()[0];
    assert_eq!(
        chart.html.matches("class=\"bar ").count(),
        factors,
        "one bar per later layer and measure"
    );
    // The last layer's bars are drawn in its own series, named in the legend.
    let last = json["layers"].as_array().unwrap().len() - 2;
    assert!(chart.html.contains(&format!("class=\"bar s{last}\"")));
}

#[test]
fn html_file_is_checked_before_the_work_and_replaced_only_with_force() {
    let dir = TempDir::new("html-force");
    let page = dir.0.join("p.html");
    std::fs::write(&page, "old").unwrap();
    let seed = &seeds()[0];
    let shown = page.display().to_string();
    let out = virtlens(&["report", seed, "--html", &shown]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--html") && err.contains("--force"), "{err}");
    assert!(out.stdout.is_empty(), "nothing printed before the refusal");
    assert_eq!(std::fs::read_to_string(&page).unwrap(), "old");
    let out = virtlens(&["report", seed, "--html", &shown, "--force"]);
    assert_eq!(out.status.code(), Some(0));
    assert!(
        std::fs::read_to_string(&page)
            .unwrap()
            .starts_with("<!DOCTYPE html>")
    );
    let missing = dir.0.join("no/such/p.html").display().to_string();
    let out = virtlens(&["lab", "--offline", "--html", &missing]);
    assert_eq!(out.status.code(), Some(2), "a folder that does not exist");
    assert_eq!(dir.names(), ["p.html"], "no temporary file is left");
}

#[test]
fn a_bad_page_is_caught() {
    if !require(&[Need::Chromium]) {
        return;
    }
    let dir = TempDir::new("bad");
    let page = dir.0.join("bad.html");
    std::fs::write(
        &page,
        "<!DOCTYPE html><html><body><img src=\"http://192.0.2.1/x.png\">\
         <script>console.error('boom')</script></body></html>",
    )
    .unwrap();
    let l = browser::load(&page);
    assert!(
        l.console.iter().any(|c| c.contains("boom")),
        "{:?}",
        l.console
    );
    assert!(
        l.requests.iter().any(|r| r.contains("192.0.2.1")),
        "{:?}",
        l.requests
    );
}

#[test]
fn lint_of_a_libvirt_domain_with_the_recommended_set() {
    // Issue 21: lint had no --html. The page has no chart: it lists the findings with their
    // places, fixes and sources, what lint read, and the recommended set.
    if !require(&[Need::Chromium]) {
        return;
    }
    let dir = TempDir::new("lint");
    let xml = crate::common::data("configs/01-libvirt-test-hyperv.xml");
    let args = [
        "lint",
        &xml,
        "--recommend",
        "windows-general",
        "--host-vendor",
        "intel",
    ];
    let (page, json) = page_and_json(&dir, "lint", &args, 1);
    let l = browser::load(&page);
    assert!(l.console.is_empty(), "console: {:#?}", l.console);
    assert!(l.requests.is_empty(), "network: {:#?}", l.requests);
    assert!(l.dom.contains("</main>") && l.dom.contains("id=\"measured\""));
    let findings = json["findings"].as_array().unwrap();
    assert!(!findings.is_empty());
    for f in findings {
        let rule = f["rule"].as_str().unwrap();
        assert!(
            l.dom.contains(&format!("data-finding=\"{rule}\"")),
            "{rule} on the page"
        );
    }
    assert!(
        l.dom.contains("<pre><code class=\"language-xml\">"),
        "fixes as libvirt XML"
    );
    assert!(l.dom.contains("Recommended set: windows-general"));
    laid_out(&page, "lint");
    browser::screenshot(&page, "lint");
}

//! Published figures of the two classic stretch studies go through `virtlens stretch`'s
//! analysis: the stated summaries that agree with the studies' own numbers are said to agree,
//! and those that do not are said not to.

use virtlens_core::analysis::{
    Layer, StretchReport, StretchVerdict as Verdict, read_layers, stretch as analyse,
};

fn layers(file: &str) -> Vec<Layer> {
    let path = virtlens_testkit::testdata("stretch").join(file);
    let text = std::fs::read_to_string(&path).unwrap();
    read_layers(&path.display().to_string(), &text).unwrap()
}

fn agrees(r: &StretchReport, layer: &str, base: &str) -> Option<bool> {
    r.stated
        .iter()
        .find(|s| s.stated.layer == layer && s.stated.base == base)
        .and_then(|s| s.agrees)
}

#[test]
fn the_nested_study_cpu_summary_agrees_and_its_storage_summary_does_not() {
    let r = analyse(&layers("nested-hyperv-2016tp4.json"));
    assert_eq!(r.layers.len(), 3);
    let chess = r
        .rows
        .iter()
        .find(|x| x.measure == "cpu.fritz_chess")
        .unwrap();
    let vm = chess.vs_first[0].as_ref().unwrap();
    assert!((vm.change_pct - -4.143).abs() < 0.001);
    assert_eq!(vm.verdict, Verdict::SlowerNoiseUnknown);
    let nested = chess.vs_previous[1].as_ref().unwrap();
    assert!((nested.change_pct - -2.2077).abs() < 0.001);
    let checks: Vec<_> = r
        .stated
        .iter()
        .map(|s| (s.stated.measure.as_str(), s.agrees))
        .collect();
    assert_eq!(
        checks,
        vec![
            ("cpu.fritz_chess", Some(true)),
            ("cpu.fritz_chess", Some(true)),
            ("storage.randwrite_4k", Some(false)),
            ("storage.randwrite_4k", Some(false)),
        ]
    );
    // The IOPS fall by 70 % and then 45 %, not 21 % and 32 %.
    let iops = &r.stated[2];
    assert!((iops.computed.unwrap() - -70.005).abs() < 0.01);
    let net = r
        .rows
        .iter()
        .find(|x| x.measure == "net.throughput")
        .unwrap();
    assert!((net.vs_previous[1].as_ref().unwrap().change_pct - -5.267).abs() < 0.01);
}

#[test]
fn the_load_generator_study_summary_agrees_with_its_minutes() {
    let r = analyse(&layers("friedman-hyperv-guest.json"));
    assert_eq!(agrees(&r, "root partition", "native"), Some(true));
    assert_eq!(agrees(&r, "4-vCPU guest", "native"), Some(true));
    let row = &r.rows[0];
    assert!((row.vs_first[1].as_ref().unwrap().factor - 105.0 / 90.0).abs() < 1e-12);
    assert!(
        !row.causes.is_empty(),
        "a CPU-bound stretch gets its likely causes"
    );
}

#[test]
fn the_overcommit_table_stretch_of_4_08_does_not_match_370_over_90_minutes() {
    let r = analyse(&layers("friedman-hyperv-overcommit.json"));
    assert_eq!(
        agrees(&r, "4 guests, no priority", "native machine"),
        Some(false)
    );
    assert_eq!(
        agrees(&r, "4 guests, relative weights", "native machine"),
        Some(true)
    );
    assert_eq!(
        agrees(&r, "4 guests, reservations", "native machine"),
        Some(true)
    );
    assert_eq!(
        agrees(&r, "4 guests, reservations", "4 guests, no priority"),
        Some(true)
    );
    let no_priority = r.stated.iter().find(|s| s.stated.says == "4.08x").unwrap();
    assert!((no_priority.computed.unwrap() - 370.0 / 90.0).abs() < 1e-12);
}

#[test]
fn bad_figures_files_are_errors_that_name_the_file() {
    for (text, wants) in [
        ("{", "x.json:1"),
        (r#"{"schema": "virtlens.figures/2"}"#, "virtlens.figures/1"),
        (r#"{"schema": "other"}"#, "not one virtlens stretch reads"),
        (
            r#"{"schema": "virtlens.figures/1", "study": "s", "source": "u", "layers": ["a", "b"],
               "measures": [{"name": "m", "unit": "s", "better": "lower", "values": [1]}]}"#,
            "1 values for 2 layers",
        ),
        (
            r#"{"schema": "virtlens.figures/1", "study": "s", "source": "u", "layers": ["a", "b"],
               "measures": [], "stated": [{"measure": "m", "layer": "c", "base": "a", "says": "1%"}]}"#,
            "unknown layer",
        ),
    ] {
        let e = read_layers("x.json", text).unwrap_err().to_string();
        assert!(e.contains("x.json") && e.contains(wants), "{e}");
    }
}

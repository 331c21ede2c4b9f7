//! Tests of the diagnosis numbers as phrases (`render::diagnose_numbers`).

use super::*;

/// An estimate over exits of one class names its typical cost; over several it names none
/// (it once printed "at 0 ns each").
#[test]
fn an_estimate_names_the_typical_cost_only_when_there_is_one() {
    let one = Cost {
        exits: 2_000,
        estimated_ns: Some(13_000_000),
        typical_ns: Some(6_500),
        ..Cost::default()
    };
    assert!(cost(&one).contains("each, typical"), "{}", cost(&one));
    let several = Cost {
        typical_ns: None,
        ..one
    };
    let text = cost(&several);
    assert!(
        text.contains("its class's typical cost") && !text.contains("0 ns"),
        "{text}"
    );
}

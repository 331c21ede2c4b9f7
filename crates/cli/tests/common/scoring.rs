//! How a diagnosis is scored against a case whose cause is known — an expert's conclusion
//! (testdata/cases) or the causal lab's construction (testdata/lab-cases) — the way
//! bench/diagnosis_agreement.py scores it:
//!
//! - named: the cause tag of the main problem (of the `before` input of a before/after pair,
//!   else the worst main over the inputs); without any, `idle` when an input's verdict is idle,
//!   `too-little` when every input is too small to judge, else `healthy` (`idle` and `healthy`
//!   count as one answer);
//! - hit: named is one of `expected.main`;
//! - wrong advice: a `must_not` cause tag named as the main problem or raised at medium or above,
//!   or a `must_not` advice tag given by a fix (at low or above) for the case's guest;
//! - alarm: a high or critical finding where nothing is wrong (`expected.healthy`).

use serde_json::Value;

const RANK: [&str; 5] = ["info", "low", "medium", "high", "critical"];

/// 0 for info … 4 for critical.
pub fn rank(s: &str) -> usize {
    RANK.iter().position(|r| *r == s).unwrap_or(0)
}

/// `idle` and `healthy` are one answer.
pub fn same(a: &str, b: &str) -> bool {
    let quiet = |t: &str| matches!(t, "idle" | "healthy");
    a == b || (quiet(a) && quiet(b))
}

pub fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .map(|a| {
            a.iter()
                .filter_map(|x| x.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// The score of one diagnosis.
#[derive(Debug, Clone)]
pub struct Score {
    pub named: String,
    pub hit: bool,
    pub wrong: Vec<String>,
    pub alarm: bool,
    /// The worst severity of any finding (`none` without findings).
    pub worst: String,
}

/// Scores `d` (`diagnose --json`, `None` when it could not run) against `expected` (the case's
/// `expected` object) for a `guest` (`windows`, `linux`, `other`, `unknown`); `inputs` are the
/// file names given, in order (a `before*` one is the state the cause is about).
pub fn score(expected: &Value, guest: &str, inputs: &[String], d: Option<&Value>) -> Score {
    let main = strings(&expected["main"]);
    let must_not = strings(&expected["must_not"]);
    let mut s = Score {
        named: "unreadable".into(),
        hit: false,
        wrong: Vec::new(),
        alarm: false,
        worst: "none".into(),
    };
    let Some(d) = d else {
        return s;
    };
    let all: Vec<&Value> = d["inputs"].as_array().unwrap().iter().collect();
    let mut chosen = all.clone();
    if let Some(b) = inputs.iter().position(|n| n.starts_with("before"))
        && all.len() == inputs.len()
    {
        chosen = vec![all[b]];
    }
    let numbers: Vec<&Value> = chosen.iter().map(|i| &i["number"]).collect();
    let findings = d["findings"].as_array().unwrap();
    let mains: Vec<&Value> = findings
        .iter()
        .filter(|f| f["role"] == "main" && numbers.contains(&&f["input"]))
        .collect();
    s.named = match mains
        .iter()
        .map(|f| rank(f["severity"].as_str().unwrap()))
        .max()
    {
        Some(worst) => mains
            .iter()
            .find(|f| rank(f["severity"].as_str().unwrap()) == worst)
            .map(|f| f["tag"].as_str().unwrap().to_string())
            .unwrap(),
        None if chosen.iter().any(|i| i["verdict"] == "idle") => "idle".into(),
        None if chosen.iter().all(|i| i["verdict"] == "too-little") => "too-little".into(),
        None => "healthy".into(),
    };
    s.hit = main.iter().any(|m| same(&s.named, m));
    for m in &must_not {
        if same(&s.named, m) {
            s.wrong.push(format!("named {m}"));
        }
    }
    for f in findings {
        let tag = f["tag"].as_str().unwrap();
        let sev = rank(f["severity"].as_str().unwrap());
        if must_not.iter().any(|m| m == tag) && sev >= 2 && tag != s.named {
            s.wrong.push(format!("{tag} at {}", RANK[sev]));
        }
        if sev < 1 {
            continue;
        }
        for fix in f["fixes"].as_array().unwrap() {
            let g = fix["guest"].as_str().unwrap();
            let applies = g == "any"
                || g == guest
                || guest == "unknown"
                || (guest == "other" && g == "linux");
            for a in strings(&fix["advice"]) {
                if applies && must_not.contains(&a) {
                    s.wrong.push(format!("{a} ({})", f["id"]));
                }
            }
        }
    }
    if let Some(w) = findings
        .iter()
        .map(|f| rank(f["severity"].as_str().unwrap()))
        .max()
    {
        s.worst = RANK[w].to_string();
    }
    s.alarm = expected["healthy"] == true
        && findings
            .iter()
            .any(|f| rank(f["severity"].as_str().unwrap()) >= 3);
    s
}

/// The case folders under `testdata/<set>` (those holding `file`, the case's description),
/// sorted, each with its description.
pub fn case_dirs(set: &str, file: &str) -> Vec<(std::path::PathBuf, Value)> {
    let root = virtlens_testkit::testdata(set);
    let mut dirs: Vec<std::path::PathBuf> = std::fs::read_dir(&root)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.join(file).is_file())
        .collect();
    dirs.sort();
    dirs.into_iter()
        .map(|d| {
            let text = std::fs::read_to_string(d.join(file)).unwrap();
            let case =
                serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", d.display()));
            (d, case)
        })
        .collect()
}

/// The cause ranked first by `d` — the first finding that is not context, whatever its
/// severity — and whether it is one of `expected.main`; for a healthy case, `main`'s answer
/// (nothing above low). What the causal lab scores on its emulated host, where severity is not
/// hardware's (tests/lab_cases.rs).
pub fn ranked_first(d: Option<&Value>, expected: &Value, main: &Score) -> (String, bool) {
    if expected["healthy"] == true {
        return (main.named.clone(), main.hit);
    }
    let first = d
        .and_then(|d| d["findings"].as_array())
        .and_then(|f| f.iter().find(|f| f["role"] != "context"))
        .and_then(|f| f["tag"].as_str())
        .map_or_else(|| main.named.clone(), str::to_string);
    let hit = strings(&expected["main"]).iter().any(|m| same(&first, m));
    (first, hit)
}

#!/usr/bin/env python3
"""How often `virtlens diagnose` names the expert's cause on the case corpus (testdata/cases).

Runs the release binary with `--json` and each case's options on its inputs (from the case's
folder, as a user would), and scores it the way crates/cli/tests/diagnose_cases.rs does:

- named: the cause tag of the main problem — of the `before` input when the case is a
  before/after pair (the expert diagnosed the state before the change), else the worst main
  over the inputs (blocks of one story; the first on a tie); without any, `idle` when such an
  input's verdict is idle, `too-little` when every one is too small to judge, else `healthy`
  (`idle` and `healthy` count as one answer);
- hit: named is one of expected.main;
- wrong advice: a must_not cause tag named as the main problem or raised at medium or above, or a
  must_not advice tag given by a fix (at low or above) for the case's guest or for any guest;
- alarm: a high or critical finding on a case the expert called healthy.

Prints the per-case table, the agreement for all cases, dev, holdout and fresh, and the misses
with what was named instead. Holdout cases (sha256 rule, see testdata/cases/FORMAT.md) and fresh
cases (`"set": "fresh-…"` in case.json: collected after the rules were frozen, whatever their
sha256 digit) are the honest measure; `--set dev` leaves both out while rules are being written.

    cargo build --release -p virtlens
    python3 bench/diagnosis_agreement.py [--set all|dev|holdout|fresh] [--binary PATH] [--json OUT]
"""
import argparse
import hashlib
import json
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
CASES = ROOT / "testdata" / "cases"
EQUIV = {"idle": "quiet", "healthy": "quiet"}
RANK = {"info": 0, "low": 1, "medium": 2, "high": 3, "critical": 4}


def holdout(case_id: str) -> bool:
    return hashlib.sha256(case_id.encode()).hexdigest()[0] in "0123"


def set_of(case: dict, case_id: str) -> str:
    """`fresh` (collected after the rules were frozen), `holdout` (sha256 rule) or `dev`."""
    if str(case.get("set", "")).startswith("fresh"):
        return "fresh"
    return "holdout" if holdout(case_id) else "dev"


def same(a: str, b: str) -> bool:
    return EQUIV.get(a, a) == EQUIV.get(b, b)


def run(binary: pathlib.Path, folder: pathlib.Path, case: dict):
    args = [str(binary), "diagnose", "--json", "--fail-on", "critical", *case.get("options", [])]
    args += case.get("inputs", [])
    p = subprocess.run(args, cwd=folder, capture_output=True, text=True, timeout=120)
    if p.returncode not in (0, 1):
        return None, p.stderr.strip().splitlines()[-1:] or [f"exit {p.returncode}"]
    return json.loads(p.stdout), []


def score(case: dict, d: dict) -> dict:
    exp = case["expected"]
    guest = case.get("guest", "unknown")
    findings = d["findings"]
    inputs = d["inputs"]
    before = [i for i, name in enumerate(case.get("inputs", [])) if name.startswith("before")]
    if before and len(inputs) == len(case["inputs"]):
        inputs = [inputs[before[0]]]
    numbers = {i["number"] for i in inputs}
    named = None
    mains = [f for f in findings if f["role"] == "main" and f["input"] in numbers]
    if mains:
        worst = max(RANK[f["severity"]] for f in mains)
        named = next(f for f in mains if RANK[f["severity"]] == worst)["tag"]
    if named is None:
        verdicts = {i["verdict"] for i in inputs}
        named = "idle" if "idle" in verdicts else "too-little" if verdicts == {"too-little"} else "healthy"
    hit = any(same(named, m) for m in exp.get("main", []))
    wrong = []
    must_not = exp.get("must_not", [])
    for m in must_not:
        if same(named, m):
            wrong.append(f"named {m}")
    for f in findings:
        if f["tag"] in must_not and RANK[f["severity"]] >= RANK["medium"] and f["tag"] != named:
            wrong.append(f"{f['tag']} at {f['severity']}")
        if RANK[f["severity"]] < RANK["low"]:
            continue
        for fix in f["fixes"]:
            g = fix["guest"]
            if g in ("any", guest) or guest == "unknown" or (guest == "other" and g == "linux"):
                wrong += [f"{a} ({f['id']})" for a in fix["advice"] if a in must_not]
    alarm = exp.get("healthy") and any(RANK[f["severity"]] >= RANK["high"] for f in findings)
    return {"named": named, "hit": hit, "wrong": sorted(set(wrong)), "alarm": bool(alarm)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--set", choices=["all", "dev", "holdout", "fresh"], default="all")
    ap.add_argument("--binary", default=str(ROOT / "target" / "release" / "virtlens"))
    ap.add_argument("--json", help="write the per-case results here")
    a = ap.parse_args()
    binary = pathlib.Path(a.binary).resolve()
    if not binary.is_file():
        print(f"{binary}: not built (cargo build --release -p virtlens)", file=sys.stderr)
        return 2
    rows = []
    for path in sorted(CASES.glob("*/case.json")):
        case = json.loads(path.read_text())
        which = set_of(case, path.parent.name)
        if a.set != "all" and a.set != which:
            continue
        d, err = run(binary, path.parent, case)
        r = score(case, d) if d else {"named": "unreadable", "hit": False, "wrong": [], "alarm": False, "error": err}
        r.update(id=case["id"], set=which, expected=case["expected"].get("main", []))
        rows.append(r)
    print(f"{'case':58} {'set':7} {'named':28} hit  wrong advice / alarm")
    for r in rows:
        flags = "; ".join(r["wrong"] + (["HIGH ALARM on a healthy case"] if r["alarm"] else []) + r.get("error", []))
        print(f"{r['id']:58} {r['set']:7} {r['named']:28} {'yes' if r['hit'] else 'no ':4} {flags}")
    print()
    print("| set | cases | main cause agrees | rate | wrong advice | high alarm on healthy |")
    print("|---|---|---|---|---|---|")
    for name in ["all", "dev", "holdout", "fresh"]:
        sel = [r for r in rows if name in ("all", r["set"])]
        if not sel:
            continue
        hits = sum(r["hit"] for r in sel)
        wrong = sum(bool(r["wrong"]) for r in sel)
        alarms = sum(r["alarm"] for r in sel)
        print(f"| {name} | {len(sel)} | {hits} | {hits / len(sel):.0%} | {wrong} | {alarms} |")
    misses = [r for r in rows if not r["hit"]]
    if misses:
        print("\nmisses (expected → named):")
        for r in misses:
            print(f"  {r['id']}: {' / '.join(r['expected'])} → {r['named']}")
    if a.json:
        pathlib.Path(a.json).write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Rewrites the examples of README.md and docs/*.md with what virtlens prints today, for review.

Every ```console block whose first line is `$ virtlens ARGS...` is run from the repository root
(NO_COLOR=1; `dir/*.ext` expanded like a shell, sorted, README.md left out) and its body
replaced by the output (stdout, then stderr). A block whose last line is a lone `…` shows the
first lines only: it keeps as many lines as it showed, then the `…`. The test `cargo test -p
virtlens --test tests -- readme::` only compares and fails on drift; this script is the one way to change
the expected text, and its result is a diff to read before committing:

  scripts/update_readme_examples.py [--bin target/debug/virtlens] [--no-build] [PAGE...]
  git diff README.md docs/
"""
import argparse
import glob
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FENCE = "```console\n$ virtlens "
CUT = "…"


def expand(word):
    d, _, pattern = word.rpartition("/")
    if not d or not pattern.startswith("*"):
        return [word]
    suffix = pattern[1:]
    try:
        names = os.listdir(os.path.join(ROOT, d))
    except OSError:
        return []
    return sorted(f"{d}/{n}" for n in names if n.endswith(suffix) and n != "README.md")


def run(binary, command):
    args = [a for w in command.split()[1:] for a in expand(w)]
    env = dict(os.environ, NO_COLOR="1")
    p = subprocess.run([binary] + args, cwd=ROOT, env=env, capture_output=True, text=True)
    return (p.stdout + p.stderr).rstrip()


def shown_part(shown, actual):
    """The new body: all of `actual`, or as many lines as `shown` had before its cut."""
    shown = shown.rstrip()
    if shown == CUT or shown.endswith("\n" + CUT):
        n = len(shown[: -len(CUT)].rstrip().splitlines())
        return "\n".join(actual.splitlines()[:n]).rstrip() + "\n" + CUT
    return actual


def update(binary, path):
    with open(path) as f:
        rest = f.read()
    out, changed, blocks = [], 0, 0
    while True:
        start = rest.find(FENCE)
        if start < 0:
            break
        body = start + len("```console\n")
        end = rest.find("\n```", body)
        if end < 0:
            break
        block = rest[body:end]
        command, _, shown = block.partition("\n")
        new = shown_part(shown, run(binary, command[2:]))
        if new != shown.rstrip():
            changed += 1
            print(f"changed: {os.path.relpath(path, ROOT)}: {command}", file=sys.stderr)
        out.append(rest[:body] + command + "\n" + new)
        rest = rest[end:]
        blocks += 1
    out.append(rest)
    with open(path, "w") as f:
        f.write("".join(out))
    return blocks, changed


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bin", default=os.path.join(
        os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target")), "debug", "virtlens"))
    ap.add_argument("--no-build", action="store_true")
    ap.add_argument("pages", nargs="*", help="pages to update (default: README.md and docs/*.md)")
    a = ap.parse_args()
    if not a.no_build:
        subprocess.run(["cargo", "build", "-q", "-p", "virtlens"], cwd=ROOT, check=True)
    pages = a.pages or [os.path.join(ROOT, "README.md")] + sorted(
        glob.glob(os.path.join(ROOT, "docs", "*.md")))
    blocks = changed = 0
    for p in pages:
        b, c = update(a.bin, p)
        blocks, changed = blocks + b, changed + c
    print(f"{blocks} examples, {changed} changed; review with: git diff README.md docs/",
          file=sys.stderr)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Drafts a JSON Schema for docs/schemas/ from sample outputs, for a human to finish.

A new output, or a new version of one, needs docs/schemas/<schema>.json (the output's `schema`
field: virtlens.lab/3 -> docs/schemas/virtlens.lab/3.json). This drafts it from real outputs:
every object strict (additionalProperties false); a field required when every sample has it and
serde does not skip it when empty; nullable when the Rust field of that name is an Option (read
from crates/); BTreeMap/HashMap fields as maps. Review the draft before committing it:
enumerations, fields no sample filled (reported as `untyped`), descriptions. Then
`cargo test -p virtlens --test tests -- json_schemas::` validates the real outputs against it.

  target/debug/virtlens lab --quick --json > /tmp/a.json
  target/debug/virtlens lab --offline --json > /tmp/b.json
  scripts/schema_draft.py virtlens.lab/3 "`virtlens lab --json`: …" /tmp/a.json /tmp/b.json \\
      > docs/schemas/virtlens.lab/3.json
"""
import glob
import json
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIELD = re.compile(r"\s*pub ([a-z_0-9]+): (.*),\s*$")
PRIMITIVE = [
    (re.compile(r"^(bool)$"), "boolean"),
    (re.compile(r"^(String|&'static str|&str)$"), "string"),
    (re.compile(r"^(u8|u16|u32|u64|usize|i32|i64|i128)$"), "integer"),
    (re.compile(r"^(f32|f64)$"), "number"),
]


def rust_fields():
    """By field name across crates/: Option types, maps, and fields serde skips when empty."""
    optional, maps, skipped = {}, set(), set()
    for path in glob.glob(os.path.join(ROOT, "crates", "*", "src", "**", "*.rs"), recursive=True):
        lines = open(path, encoding="utf-8").read().splitlines()
        for i, line in enumerate(lines):
            m = FIELD.match(line)
            if m:
                name, ty = m.groups()
                if ty.startswith("Option<") and ty.endswith(">"):
                    optional.setdefault(name, set()).add(ty[len("Option<"):-1])
                if re.search(r"\b(BTreeMap|HashMap)<", ty):
                    maps.add(name)
            if "skip_serializing_if" in line:
                for nxt in lines[i + 1:i + 4]:
                    m = FIELD.match(nxt)
                    if m:
                        skipped.add(m.group(1))
                        break
    return optional, maps, skipped


OPTIONAL, MAPS, SKIPPED = rust_fields()


def json_type(v):
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, int):
        return "integer"
    if isinstance(v, float):
        return "number"
    if isinstance(v, str):
        return "string"
    return "array" if isinstance(v, list) else "object"


class Seen:
    """Everything the samples showed at one place of the document."""

    def __init__(self):
        self.types, self.fields, self.present = set(), {}, {}
        self.objects, self.items, self.values, self.strings = 0, None, None, set()

    def add(self, v):
        t = json_type(v)
        self.types.add(t)
        if t == "object":
            self.objects += 1
            for k, x in v.items():
                self.fields.setdefault(k, Seen()).add(x)
                self.present[k] = self.present.get(k, 0) + 1
                self.values = self.values or Seen()
                self.values.add(x)
        elif t == "array":
            self.items = self.items or Seen()
            for x in v:
                self.items.add(x)
        elif t == "string" and len(self.strings) < 2:
            self.strings.add(v)


def null_only(name):
    """The type of a field no sample filled, from its Rust Option<T>, when T is a primitive."""
    inner = OPTIONAL.get(name, set())
    kinds = {k for ty in inner for pattern, k in PRIMITIVE if pattern.match(ty)}
    return kinds.pop() if len(kinds) == 1 and len(inner) == 1 else None


def is_map(seen, name):
    if name in MAPS:
        return True
    return len(seen.fields) > 25 or any(not re.fullmatch(r"[a-z][a-z0-9_]*", k) for k in seen.fields)


def schema_of(seen, name, path, untyped):
    types = set(seen.types)
    if {"integer", "number"} <= types:
        types.discard("integer")
    if name in OPTIONAL:
        types.add("null")
    if name == "schema" and types == {"string"} and len(seen.strings) == 1:
        return {"const": next(iter(seen.strings))}
    out = {}
    if "object" in types:
        if is_map(seen, name):
            out["additionalProperties"] = (
                schema_of(seen.values, "", path + ".*", untyped) if seen.values else {})
        else:
            out["properties"] = {
                k: schema_of(s, k, f"{path}.{k}", untyped) for k, s in seen.fields.items()}
            out["required"] = [
                k for k in seen.fields if seen.present[k] == seen.objects and k not in SKIPPED]
            out["additionalProperties"] = False
    if "array" in types:
        out["items"] = (
            schema_of(seen.items, "", path + "[]", untyped) if seen.items and seen.items.types
            else {})
        if not out["items"]:
            untyped.append(path + "[]")
    if types == {"null"}:
        t = null_only(name)
        if t is None:
            untyped.append(path)
            return {}
        types.add(t)
    kinds = sorted(types)
    return {"type": kinds[0] if len(kinds) == 1 else kinds, **out}


def compact(v, indent=0):
    """JSON with small values on one line, as the files in docs/schemas are written."""
    text = json.dumps(v, ensure_ascii=False)
    if len(text) + indent <= 100 or not isinstance(v, (dict, list)):
        return text
    pad, end = " " * (indent + 2), " " * indent
    if isinstance(v, dict):
        parts = [f"{pad}{json.dumps(k)}: {compact(x, indent + 2)}" for k, x in v.items()]
        return "{\n" + ",\n".join(parts) + "\n" + end + "}"
    return "[\n" + ",\n".join(pad + compact(x, indent + 2) for x in v) + "\n" + end + "]"


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    name, description, files = sys.argv[1], sys.argv[2], sys.argv[3:]
    seen = Seen()
    for f in files:
        seen.add(json.load(open(f)))
    untyped = []
    body = schema_of(seen, "", "$", untyped)
    out = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": f"https://virtlens.invalid/schemas/{name}.json",
        "title": name,
        "description": description,
        **body,
    }
    print(compact(out))
    for p in untyped:
        print(f"untyped (no sample filled it; write its type by hand): {p}", file=sys.stderr)


if __name__ == "__main__":
    main()

"""A real MCP client session with `virtlens mcp` (the `mcp` package's stdio client).

Usage: python3 session.py VIRTLENS_BINARY REPO_ROOT [TRANSCRIPT.md]
       python3 session.py VIRTLENS_BINARY REPO_ROOT --live PID   (the live tools, on the VMM PID)

Starts `virtlens mcp --root REPO_ROOT/testdata`, then: initialize, list the tools (the live ones
described as needing --allow-live), diagnose a seed sample (file and pasted text) and get its
main finding, lint a sample configuration, report, lab (the bundled recording, labelled), read
resources and a prompt, and get tool errors (not a crash) for a missing file, paths outside
--root, an unknown option and a live tool without --allow-live. Every result validates against
its schema in docs/schemas (the client validates it against the tool's output schema too), and
diagnose's equals `virtlens diagnose --json`'s. Exits non-zero with the reason on any failure;
with TRANSCRIPT.md, writes the session's requests and answers (abridged) there.
"""

import asyncio
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import jsonschema
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

BIN, REPO = sys.argv[1], Path(sys.argv[2])
TRANSCRIPT = Path(sys.argv[3]) if len(sys.argv) > 3 and sys.argv[3] != "--live" else None
TESTDATA = REPO / "testdata"
SEED = "seed-kvm-hyperv-traps/1-no-hyperv-features.txt"
SEED_MAIN = "timer.hpet-mmio"  # crates/core/tests/diagnose_seeds.rs, seed 1 (Windows guest)
CONFIG = "configs/04-libvirt-test-hyperv-off.xml"
LIVE = {"top_snapshot", "diagnose_live", "record"}
LIVE_MAIN = "io.serial-pio-storm"  # the lab's serial_console trap, replayed

log = []


def say(line):
    log.append(line)


def abridged(value, limit=600):
    text = json.dumps(value, indent=1, ensure_ascii=False)
    return text if len(text) <= limit else text[:limit] + "\n… (abridged)"


def check_schema(result):
    """The document validates against docs/schemas/<its schema field>.json."""
    doc = result.structured_content
    assert isinstance(doc, dict), f"no structured content: {result}"
    schema = json.loads((REPO / "docs/schemas" / f"{doc['schema']}.json").read_text())
    jsonschema.Draft202012Validator(schema).validate(doc)
    return doc


def error_text(result):
    assert result.is_error, f"expected a tool error, got {abridged(result.structured_content)}"
    return result.content[0].text


def shown(args):
    """The arguments as the transcript shows them: long texts cut."""
    def cut(v):
        if isinstance(v, str) and len(v) > 80:
            return v[:60] + f"… ({len(v)} characters)"
        if isinstance(v, list):
            return [cut(x) for x in v]
        return v
    return json.dumps({k: cut(v) for k, v in args.items()}, ensure_ascii=False)


async def call(session, name, args, expect_error=False):
    say(f"→ tools/call `{name}` {shown(args)}")
    result = await session.call_tool(name, args)
    if expect_error:
        text = error_text(result)
        say("← isError: true, content: " + "\n     ".join(text.splitlines()))
        return text
    assert not result.is_error, f"{name} {args}: {result.content[0].text}"
    doc = check_schema(result)
    say(f"← structuredContent (schema `{doc['schema']}`, validated)")
    return doc


async def session_run():
    server = StdioServerParameters(
        command=BIN, args=["mcp", "--root", str(TESTDATA)], cwd=str(REPO), env={"NO_COLOR": "1"}
    )
    async with stdio_client(server) as (read, write):
        async with ClientSession(read, write) as session:
            say(f"$ virtlens mcp --root testdata   (started by the client)")
            init = await session.initialize()
            say(f"→ initialize\n← server {init.server_info.name} {init.server_info.version}, "
                f"protocol {init.protocol_version}")
            assert init.server_info.name == "virtlens"

            tools = (await session.list_tools()).tools
            names = {t.name for t in tools}
            say("→ tools/list\n← " + ", ".join(t.name for t in tools))
            expected = {"report", "compare", "diagnose", "counters", "lint", "lab", "exitcost"} | LIVE
            assert expected <= names, f"tools: {sorted(names)}"
            for t in tools:
                assert t.output_schema and t.output_schema.get("type") == "object", t.name
                assert t.input_schema.get("type") == "object", t.name
                live_said = "--allow-live" in (t.description or "")
                assert live_said == (t.name in LIVE), f"{t.name}: {t.description}"
            diag_props = next(t for t in tools if t.name == "diagnose").input_schema["properties"]
            for p in ["files", "texts", "guest", "config", "window", "host_vendor"]:
                assert p in diag_props, f"diagnose has no `{p}`: {sorted(diag_props)}"
            assert "json" not in diag_props and "live" not in diag_props

            # diagnose a seed sample with a known main finding, from its file …
            d = await call(session, "diagnose", {"files": [SEED], "guest": "windows"})
            main = d["inputs"][0]["main"]
            found = next(f for f in d["findings"] if f["rank"] == main)
            say(f"   main finding of input 1: rank {main}, `{found['id']}` ({found['severity']})")
            assert found["id"] == SEED_MAIN, found["id"]
            say(f"   title: {found['title']}")
            qemu = (found.get("fixes") or [{}])[0].get("qemu")
            if qemu:
                say(f"   fix (QEMU): {qemu.splitlines()[0]}")
            # … equal to the CLI's --json output on the same file
            cli = subprocess.run(
                [BIN, "diagnose", str((TESTDATA / SEED).resolve()), "--guest", "windows", "--json"],
                capture_output=True, text=True, env={"NO_COLOR": "1"},
            )
            assert cli.returncode in (0, 1), cli.stderr
            assert json.loads(cli.stdout) == d, "diagnose differs from `virtlens diagnose --json`"
            say("   (equal to `virtlens diagnose FILE --guest windows --json`)")
            # … and pasted as text
            text = (TESTDATA / SEED).read_text()
            d2 = await call(session, "diagnose", {"texts": [text], "guest": "windows"})
            main2 = next(f for f in d2["findings"] if f["rank"] == d2["inputs"][0]["main"])
            assert main2["id"] == SEED_MAIN and d2["inputs"][0]["name"] == "text 1", d2["inputs"][0]
            say(f"   pasted as text: input `{d2['inputs'][0]['name']}`, main finding `{main2['id']}`")

            # with the VM's configuration, as a path and as text: the CLI's --config answer
            dc = await call(session, "diagnose", {"files": [SEED], "config": CONFIG})
            cli = subprocess.run(
                [BIN, "diagnose", str((TESTDATA / SEED).resolve()), "--config",
                 str((TESTDATA / CONFIG).resolve()), "--json"],
                capture_output=True, text=True, env={"NO_COLOR": "1"},
            )
            assert json.loads(cli.stdout) == dc, "diagnose --config differs from the CLI's"
            dt = await call(session, "diagnose", {"files": [SEED], "config_text": (TESTDATA / CONFIG).read_text()})
            assert [f["id"] for f in dt["findings"]] == [f["id"] for f in dc["findings"]]
            say(f"   with the configuration (path or `config_text`): {len(dc['findings'])} findings, "
                f"first `{dc['findings'][0]['id']}`; config read as `{dt['config']['input']}`")

            lint = await call(session, "lint", {"file": CONFIG, "guest": "windows"})
            ids = [f["rule"] for f in lint["findings"]]
            assert ids, "lint found nothing in a configuration with Hyper-V off"
            say(f"   lint findings: {', '.join(ids[:6])}{' …' if len(ids) > 6 else ''}")
            lint2 = await call(session, "lint", {"text": (TESTDATA / CONFIG).read_text(), "guest": "windows"})
            assert [f["rule"] for f in lint2["findings"]] == ids

            r = await call(session, "report", {"files": [SEED], "top": 3})
            assert r["inputs"] if "inputs" in r else r["tables"], abridged(r)

            lab = await call(session, "lab", {"offline": True})
            assert lab["measured"] is False, "the bundled recording is not labelled"
            say("   lab: the bundled recording, \"measured\": false")

            res = (await session.list_resources()).resources
            uris = {str(x.uri) for x in res}
            say(f"→ resources/list\n← {len(res)} resources: virtlens://findings, virtlens://formats, "
                f"virtlens://findings/<id> …")
            assert {"virtlens://findings", "virtlens://formats", f"virtlens://findings/{SEED_MAIN}"} <= uris
            cat = (await session.read_resource("virtlens://findings")).contents[0].text
            assert cat.startswith("# Findings"), cat[:80]
            assert cat == (REPO / "docs/findings.md").read_text(), "the catalogue differs from docs/findings.md"
            page = (await session.read_resource(f"virtlens://findings/{SEED_MAIN}")).contents[0].text
            say(f"→ resources/read virtlens://findings/{SEED_MAIN}\n← " + page.splitlines()[0])
            assert SEED_MAIN in page
            guide = (await session.read_resource("virtlens://formats")).contents[0].text
            assert "perf kvm stat record" in guide and "typeperf" in guide

            prompts = (await session.list_prompts()).prompts
            say("→ prompts/list\n← " + ", ".join(p.name for p in prompts))
            p = await session.get_prompt("why_is_this_vm_slow", {"input": SEED})
            assert SEED in p.messages[0].content.text

            # errors are tool errors, in the CLI's words, and the server lives on
            e = await call(session, "diagnose", {"files": ["no-such-file.txt"]}, expect_error=True)
            assert "No such file" in e, e
            e = await call(session, "diagnose", {"files": ["../Cargo.toml"]}, expect_error=True)
            assert "outside" in e, e
            e = await call(session, "lint", {"file": "/etc/passwd"}, expect_error=True)
            assert "outside" in e, e
            e = await call(session, "diagnose", {"files": [SEED], "window": -1}, expect_error=True)
            assert "window" in e, e
            e = await call(session, "report", {"files": [SEED], "colour": "red"}, expect_error=True)
            assert "unknown argument" in e, e
            e = await call(session, "report", {}, expect_error=True)
            assert "`files` (or `texts`)" in e, e
            e = await call(session, "top_snapshot", {}, expect_error=True)
            assert "--allow-live" in e, e
            e = await call(session, "record", {"duration": 1}, expect_error=True)
            assert "--allow-live" in e, e
            again = await call(session, "diagnose", {"files": [SEED], "guest": "windows"})
            assert again == d
            say("   (the server still answers after the errors)")


async def escapes():
    """A root holding a symlink to a file outside it, and `..` out of a subfolder: both refused.
    With --allow-live, the live tools say they are on (they are not called here)."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "root"
        (root / "sub").mkdir(parents=True)
        (root / "escape.txt").symlink_to(TESTDATA / SEED)
        (Path(tmp) / "outside.txt").write_text((TESTDATA / SEED).read_text())
        server = StdioServerParameters(
            command=BIN, args=["mcp", "--root", str(root), "--allow-live"], env={"NO_COLOR": "1"}
        )
        async with stdio_client(server) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                say(f"\n$ virtlens mcp --root ROOT --allow-live   (ROOT/escape.txt → a file outside ROOT)")
                tools = (await session.list_tools()).tools
                for t in tools:
                    if t.name in LIVE:
                        assert "(it was)" in t.description, t.description
                e = await call(session, "report", {"files": ["escape.txt"]}, expect_error=True)
                assert "outside" in e, e
                e = await call(session, "report", {"files": ["sub/../../outside.txt"]}, expect_error=True)
                assert "outside the directories" in e, e
                e = await call(session, "report", {"files": ["sub"]}, expect_error=True)
                assert "not a regular file" in e, e
                e = await call(session, "report", {"files": ["-"]}, expect_error=True)
                assert "standard input" in e, e


async def live(pid):
    """With --allow-live, on a host where the VMM of `pid` runs a trap: each live tool answers
    in its schema, and diagnose_live names the trap's finding."""
    server = StdioServerParameters(
        command=BIN, args=["mcp", "--root", str(TESTDATA), "--allow-live"], env={"NO_COLOR": "1"}
    )
    async with stdio_client(server) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            say(f"\n$ virtlens mcp --root testdata --allow-live   (a guest polls a serial port)")
            top = await call(session, "top_snapshot", {"pid": pid})
            assert any(v["pid"] == pid for v in top["vms"]), abridged(top)
            rec = await call(session, "record", {"duration": 1, "pid": pid})
            assert rec["tables"], abridged(rec)
            d = await call(session, "diagnose_live", {"duration": 1, "pid": pid})
            main = next(f for f in d["findings"] if f["rank"] == d["inputs"][0]["main"])
            say(f"   main finding: `{main['id']}` ({main['severity']})")
            assert main["id"] == LIVE_MAIN, main["id"]


if len(sys.argv) > 3 and sys.argv[3] == "--live":
    TRANSCRIPT = None
    asyncio.run(live(int(sys.argv[4])))
    print("\n".join(log))
    sys.exit(0)
asyncio.run(session_run())
asyncio.run(escapes())
if TRANSCRIPT:
    TRANSCRIPT.write_text("\n".join(log) + "\n")
print("\n".join(log))

"""The file gate (devicelint/gate.py) on a corpus: files libcst parses, CPU, and whether the
findings are the same with the gate off (`DEVICELINT_NO_GATE=1`). One process, one job
(libcst parses counted by patching safe_parse.parse_module; the project index's models of
other files included).

    .venv/bin/python bench/gate_check.py bench/.corpora/torchvision-0.24.1/torchvision

`--gates`: no linting; each file's gates asked directly (every file gated, as if the
engine's "the text names a device or CUDA" shortcut were off), with the project index a run
builds: files whose text holds some rule's tokens, files some gate lets through, per rule
the files its gate lets through / those it alone lets through, and the gates' own CPU
(`ast` parse and walk; the rules' questions, the index's included).

    .venv/bin/python bench/gate_check.py --gates bench/.corpora/timm-1.0.31/timm
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time


def measure(path: str) -> dict:
    from devicelint import runner, safe_parse

    count = {"parses": 0, "chars": 0}
    original = safe_parse.parse_module

    def counted(source, *args, **kwargs):
        count["parses"] += 1
        count["chars"] += len(source)
        return original(source, *args, **kwargs)

    safe_parse.parse_module = counted
    started = time.process_time()
    run = runner.lint_paths([path], runner.Overrides(select=["ALL"]), use_cache=False, jobs=1)
    count["cpu_s"] = round(time.process_time() - started, 2)
    count["findings"] = [f.to_dict() for f in run.findings]
    return count


def gates(path: str) -> None:
    from pathlib import Path

    from devicelint import gate, project_index
    from devicelint.engine import enabled_rules, rules_for
    from devicelint.rule import all_rules

    root = Path(path).resolve()
    files = [(str(p), p.relative_to(root.parent).as_posix(), p.read_bytes()) for p in sorted(root.rglob("*.py"))]
    project_index.use(project_index.ProjectIndex.build(str(root.parent), files, None, recording=False))
    rules = enabled_rules(list(all_rules()))
    passes: dict[str, int] = {}
    alone: dict[str, int] = {}
    matched = kept = 0
    walk = ask = 0.0
    for _path, key, data in files:
        source = data.decode("utf-8-sig", "replace")
        active = rules_for(source, rules)
        if not active:
            continue
        matched += 1
        started = time.process_time()
        facts = gate.facts_of(key, source)
        asked = time.process_time()
        walk += asked - started
        if facts is None:
            kept += 1
            continue
        through = [r.code for r in active if r.gate is None or r.gate(facts)]
        ask += time.process_time() - asked
        kept += bool(through)
        for code in through:
            passes[code] = passes.get(code, 0) + 1
        if len(through) == 1:
            alone[through[0]] = alone.get(through[0], 0) + 1
    print(f"{root.name}: {matched} files hold some rule's tokens, {kept} pass some gate; "
          f"gate CPU: ast parse and walk {walk:.2f} s, questions {ask:.2f} s")
    print("per rule (passes / alone): " + ", ".join(f"{c} {passes[c]}/{alone.get(c, 0)}" for c in sorted(passes)))


def main() -> None:
    if len(sys.argv) == 3 and sys.argv[1] == "--child":
        print(json.dumps(measure(sys.argv[2])))
        return
    if len(sys.argv) == 3 and sys.argv[1] == "--gates":
        gates(sys.argv[2])
        return
    path = sys.argv[1]
    results = {}
    for mode in ("off", "on", "off", "on"):
        env = dict(os.environ)
        env.pop("DEVICELINT_NO_GATE", None)
        if mode == "off":
            env["DEVICELINT_NO_GATE"] = "1"
        out = subprocess.run([sys.executable, __file__, "--child", path], env=env,
                             capture_output=True, text=True, check=True).stdout
        found = json.loads(out)
        previous = results.get(mode)
        if previous is None or found["cpu_s"] < previous["cpu_s"]:
            results[mode] = found
    same = results["off"]["findings"] == results["on"]["findings"]
    for mode in ("off", "on"):
        r = results[mode]
        print(f"gate {mode:3}: libcst parses {r['parses']:4} ({r['chars']:,} chars), "
              f"CPU {r['cpu_s']} s (min of 2), {len(r['findings'])} findings")
    print("findings identical" if same else "FINDINGS DIFFER")
    sys.exit(0 if same else 1)


if __name__ == "__main__":
    main()

"""The file gate (devicelint/gate.py) on a corpus: files libcst parses, CPU, and whether the
findings are the same with the gate off (`DEVICELINT_NO_GATE=1`). One process, one job
(libcst parses counted by patching safe_parse.parse_module; the project index's models of
other files included).

    .venv/bin/python bench/gate_check.py bench/.corpora/torchvision-0.24.1/torchvision
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


def main() -> None:
    if len(sys.argv) == 3 and sys.argv[1] == "--child":
        print(json.dumps(measure(sys.argv[2])))
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

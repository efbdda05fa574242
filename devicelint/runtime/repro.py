"""Writing snippet reproductions (runtime/snippets.py) as plain scripts, and running them in
confirm's sandbox. Torch-free.

Each finding's reproduction is one script, runnable alone with `python`. To pay torch's
import once per linted file rather than once per finding, the scripts of one file run in one
child (launch.py's sandbox: own process group, time limit, parent-death signal) through a
small driver that runs them one after the other; an error in one is written down and the
next one runs. The child watches the flagged line of each script, and its verdicts are
carried back to the findings.
"""

from __future__ import annotations

import json
import os
import re
from typing import Optional

from devicelint.runtime.snippets import Reproduction

DRIVER = '''\
"""devicelint: run the reproductions of one file in turn (an error in one does not stop the
next); what each raised is written to {errors!r}."""
import json
import runpy
import traceback

errors = {{}}
for path in {scripts!r}:
    try:
        runpy.run_path(path, run_name="__main__")
    except (Exception, SystemExit) as error:
        frames = [f for f in traceback.extract_tb(error.__traceback__) if f.filename == path]
        line = frames[-1].lineno if frames else None
        errors[path] = {{"type": type(error).__name__,
                        "message": str(error).splitlines()[0][:300] if str(error) else "",
                        "line": line}}
    with open({errors!r}, "w", encoding="utf-8") as handle:
        json.dump(errors, handle)
'''


def script_name(repro: Reproduction) -> str:
    """`bad_loop_forms_L15_DL001.py`: the file, line and code, as a readable file name."""
    finding = repro.finding
    stem = re.sub(r"[^A-Za-z0-9_]", "_", os.path.splitext(os.path.basename(finding.path))[0])
    return f"{stem}_L{finding.line}_{finding.code}.py"


def save(repros: list[Reproduction], folder: str) -> dict[int, str]:
    """Write each built reproduction to `folder`, one script per finding: {index: path}.
    Two findings of the same file, line and code (rare) get a numbered name."""
    os.makedirs(folder, exist_ok=True)
    written: dict[int, str] = {}
    taken: set[str] = set()
    for index, repro in enumerate(repros):
        if repro.script is None:
            continue
        name = script_name(repro)
        if name in taken:
            stem, ext = os.path.splitext(name)
            count = 2
            while f"{stem}_{count}{ext}" in taken:
                count += 1
            name = f"{stem}_{count}{ext}"
        taken.add(name)
        path = os.path.join(folder, name)
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(repro.script)
        written[index] = os.path.abspath(path)
    return written


def driver(scripts: list[str], errors_path: str) -> str:
    return DRIVER.format(scripts=list(scripts), errors=errors_path)


def read_errors(path: str) -> dict:
    try:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def confirmation(repro: Reproduction, verdict: Optional[dict], error: Optional[dict],
                 device: Optional[str], saved: Optional[str]) -> dict:
    """The finding's confirmation from its reproduction's verdict: the same statuses and
    evidence as a whole-file run, plus what was synthesized. A line the reproduction never
    reached is `inconclusive` (the reproduction, not the program, stopped early)."""
    snippet = {"entry": repro.entry,
               "synthesized": [{"name": s.name, "value": s.what} for s in repro.synthesized]}
    if saved:
        snippet["reproduction"] = saved
    if repro.script is None:
        return {"status": "inconclusive", "device": device, "summary": repro.reason,
                "snippet": snippet}
    if verdict is None:
        return {"status": "inconclusive", "device": device, "snippet": snippet,
                "summary": "no result from the reproduction's run (see its error)"}
    result = dict(verdict)
    if result.get("status") == "not-reached":
        result["status"] = "inconclusive"
        if error:
            where = f" at line {error['line']}" if error.get("line") else ""
            result["summary"] = (f"the reproduction stopped before the flagged line: "
                                 f"{error['type']}: {error['message']}{where}")
        else:
            result["summary"] = "the reproduction did not reach the flagged line"
    if result.get("status") == "refuted" and repro.entry.endswith(".__init__(...)"):
        # Building an object shows only what its constructor does; what a constructor line
        # sets up (a submodule in a plain list, a buffer) may go wrong only where the program
        # later moves and calls it, which this reproduction does not run.
        result["status"] = "inconclusive"
        result["summary"] = (f"the reproduction only builds the object ({result.get('summary')}); "
                             f"the pitfall may show where the program uses it")
    if repro.synthesized:
        made = "; ".join(f"{s.name} = {s.what}" for s in repro.synthesized)
        result["summary"] = f"{result.get('summary', '')} (snippet; synthesized: {made})"
    else:
        result["summary"] = f"{result.get('summary', '')} (snippet)"
    result["snippet"] = snippet
    return result

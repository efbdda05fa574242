"""Text and JSON output of `devicelint confirm`. Torch-free.

`evidence(confirmation)` (devicelint/reporters/text.py) is the one-line form other reporters
(SARIF, github) append to a finding's message.
"""

from __future__ import annotations

import json
import os

from devicelint.reporters.text import evidence
from devicelint.runtime_spec import STATUSES


def ran_on(runs: list[dict]) -> tuple:
    """(kind, name) of the device the runs really used: ("sim", "sim (costs estimated from
    ...)") or ("cuda", "NVIDIA H100 ..."); (None, None) when no run got that far."""
    for run in runs:
        if run.get("device"):
            return run["device"], run.get("device_name") or run["device"]
    return None, None


def location(finding) -> str:
    """`path:line:col`, or `nb.ipynb:cell 4:2:5` for a notebook, as the linter prints it."""
    if finding.cell is not None:
        return f"{finding.path}:cell {finding.cell}:{finding.cell_line}:{finding.column}"
    return f"{finding.path}:{finding.line}:{finding.column}"


def _rel(path: str) -> str:
    try:
        rel = os.path.relpath(path)
    except ValueError:
        return path
    return path if rel.startswith("..") else rel


def format_text(findings, runs: list[dict], fixture_mode: bool, escape=str) -> str:
    """`escape` is applied to each line: paths, commands and crash messages are the user's
    (confirm passes reporters.escape_control)."""
    out = []
    for finding in findings:
        conf = finding.confirmation or {"status": "inconclusive", "summary": "no result"}
        level = conf.get("level")  # ranked: runtime/rank.py
        rank = f" [{level}]" if level in ("crash", "negligible") else ""
        out.append(f"{location(finding)}: {finding.code} "
                   f"{evidence(conf, with_device=False)}{rank}")
    if findings:
        out.append("")
    counts = {status: 0 for status in STATUSES}
    for finding in findings:
        status = (finding.confirmation or {}).get("status", "inconclusive")
        counts[status] = counts.get(status, 0) + 1
    out.append("Confirmations: " + ", ".join(f"{n} {s}" for s, n in counts.items() if n) if
               findings else "Confirmations: no findings to confirm")
    kind, name = ran_on(runs)
    out.append(f"Device: {name}" if kind else "Device: none (no run started)")
    for run in runs:
        label = run["target"]
        problems = []
        if run.get("timed_out"):
            problems.append(f"stopped at the time limit ({run['timeout']:g} s)")
        if run.get("interrupted"):
            problems.append("interrupted")
        crash = run.get("crash")
        if crash:
            where = f" at {_rel(crash['path'])}:{crash['line']}" if crash.get("path") else ""
            problems.append(f"the code raised {crash['type']}: {crash['message']}{where}")
        elif run.get("exit_code") not in (0, None):
            problems.append(f"exit code {run['exit_code']}")
        if run.get("error"):
            problems.append(run["error"])
        for path, codes in (run.get("premise") or {}).items():
            for code, lines in codes.items():
                for hit in lines:
                    problems.append(f"good fixture shows the {code} pitfall at line "
                                    f"{hit['line']}: {hit['summary']}")
        for miss in run.get("unobserved") or []:
            out.append(f"{_rel(miss['path'])}:{miss['line']}: not observed: {miss['why']}")
        for gap in run.get("known_gaps") or []:
            out.append(f"{label}:{gap['line']}: known gap, {gap['code']} silent by design "
                       f"({gap['reason']}); the run saw: {gap['summary']}")
        if problems or not fixture_mode:
            out.append(f"{label}: " + ("; ".join(problems) if problems else "ran to completion"))
            if run.get("stderr_tail") and run.get("exit_code") not in (0, None) and not crash:
                if run.get("stderr_truncated"):
                    out.append(f"    (stderr: {run.get('stderr_bytes', 0):,} bytes; the last "
                               f"lines follow)")
                out.extend("    " + line for line in run["stderr_tail"].strip().splitlines()[-5:])
    if fixture_mode:
        good = [r for r in runs if r.get("good_fixture")]
        clean = [r for r in good if not any(
            lines for codes in (r.get("premise") or {}).values() for lines in codes.values())]
        out.append(f"Fixture files run: {len(runs)}; good fixtures without their pitfall: "
                   f"{len(clean)}/{len(good)}")
    return "\n".join(map(escape, out)) + "\n"


def format_json(findings, runs: list[dict], device, device_name=None) -> str:
    """`device` is the kind that really ran ("sim" or "cuda"), `device_name` its name."""
    return json.dumps(
        {"device": device, "device_name": device_name,
         "findings": [f.to_dict() for f in findings], "runs": runs},
        indent=2, default=str,
    ) + "\n"

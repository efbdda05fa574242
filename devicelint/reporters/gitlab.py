"""GitLab Code Quality report (a JSON array of issues)."""

from __future__ import annotations

import hashlib
import json
from collections import Counter

from devicelint.finding import Finding
from devicelint.notebook import viewer_region
from devicelint.reporters import ReportContext

SEVERITY = {"error": "major", "warning": "minor", "info": "info"}


def render(findings: list[Finding], ctx: ReportContext) -> str:
    issues = []
    occurrences: Counter = Counter()
    for f in findings:
        # The merge request shows the file itself: a notebook finding is placed on the
        # .ipynb line that stores the cell's source line (as in SARIF and GitHub output).
        line, _, end_line, _ = viewer_region(f)
        # Stable across runs and line shifts: code, path, message and occurrence number.
        base = (f.code, f.path, f.message)
        occurrences[base] += 1
        digest = hashlib.sha256("\0".join([*base, str(occurrences[base])]).encode()).hexdigest()
        description = f"{f.code} {f.message}"
        if f.confirmation:  # under `devicelint confirm`: the evidence and the device
            from devicelint.reporters.text import describe

            description += f" (runtime: {describe(f.confirmation)})"
        issues.append(
            {
                "description": description,
                "check_name": f"{f.code} {f.name}",
                "fingerprint": digest,
                "severity": SEVERITY.get(f.severity, "minor"),
                "location": {
                    "path": f.path.replace("\\", "/"),
                    "lines": {"begin": line, "end": end_line},
                },
            }
        )
    return json.dumps(issues, indent=2) + "\n"

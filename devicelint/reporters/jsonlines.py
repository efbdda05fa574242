"""One JSON object per line (same keys as `json`), for streaming consumers."""

from __future__ import annotations

import json

from devicelint.finding import Finding
from devicelint.reporters import ReportContext


def render(findings: list[Finding], ctx: ReportContext) -> str:
    return "".join(json.dumps(f.to_dict(), ensure_ascii=False) + "\n" for f in findings)

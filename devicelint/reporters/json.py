"""A JSON array of findings: the documented, tested contract (README "JSON output")."""

from __future__ import annotations

import json

from devicelint.finding import Finding
from devicelint.reporters import ReportContext


def render(findings: list[Finding], ctx: ReportContext) -> str:
    return json.dumps([f.to_dict() for f in findings], indent=2, ensure_ascii=False) + "\n"

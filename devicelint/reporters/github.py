"""GitHub Actions workflow commands: one `::error`/`::warning` annotation per finding."""

from __future__ import annotations

from devicelint.finding import Finding
from devicelint.notebook import viewer_region
from devicelint.reporters import ReportContext
from devicelint.reporters.text import describe


def escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def render(findings: list[Finding], ctx: ReportContext) -> str:
    out = []
    for f in findings:
        line, column, end_line, end_column = viewer_region(f)
        level = "error" if f.severity == "error" else "warning"
        props = ",".join(
            [
                f"file={escape_property(f.path)}",
                f"line={line}",
                f"endLine={end_line}",
                f"col={column}",
                f"endColumn={end_column}",
                f"title={escape_property(f'devicelint {f.code} ({f.name})')}",
            ]
        )
        message = f"{f.code} {f.message}"
        if f.confirmation:
            message += f"\nruntime: {describe(f.confirmation)}"
        out.append(f"::{level} {props}::{escape_data(message)}")
    return "".join(line + "\n" for line in out)

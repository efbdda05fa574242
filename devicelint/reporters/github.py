"""GitHub Actions workflow commands: one `::error`/`::warning` annotation per finding."""

from __future__ import annotations

from devicelint.finding import Finding
from devicelint.notebook import viewer_region
from devicelint.reporters import ReportContext, escape_control
from devicelint.reporters.text import describe


def escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def _data(text: str) -> str:
    """Free text (messages): escaped as GitHub's toolkit does (a newline is %0A, and stays a
    line break inside the annotation), then what GitHub has no escape for (ESC, ...) is
    written visibly, never raw into the log."""
    return escape_control(escape_data(text))


def render(findings: list[Finding], ctx: ReportContext) -> str:
    out = []
    for f in findings:
        line, column, end_line, end_column = viewer_region(f)
        level = "error" if f.severity == "error" else "warning"
        props = ",".join(
            [
                # %0A and %0D decode back to the real name; what GitHub cannot decode is
                # shown escaped (such a name cannot be annotated anyway).
                f"file={escape_control(escape_property(f.path))}",
                f"line={line}",
                f"endLine={end_line}",
                f"col={column}",
                f"endColumn={end_column}",
                f"title={escape_control(escape_property(f'devicelint {f.code} ({f.name})'))}",
            ]
        )
        message = f"{f.code} {f.message}"
        if f.confirmation:
            message += f"\nruntime: {describe(f.confirmation)}"
        out.append(f"::{level} {props}::{_data(message)}")
    return "".join(line + "\n" for line in out)

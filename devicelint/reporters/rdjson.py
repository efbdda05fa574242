"""reviewdog's Diagnostic Format: `rdjson` (one DiagnosticResult) and `rdjsonl` (one
Diagnostic per line), so that reviewdog can post findings, and fixes as suggested changes,
on a pull request (`reviewdog -f=rdjson -reporter=github-pr-review`).

The format (reviewdog's proto/rdf/reviewdog.proto) counts lines from 1 and columns from 1
in UTF-8 *bytes*; a range's end is exclusive. devicelint's columns count code points, so
each column is converted with the text of its line. A notebook finding is placed on the
line of the `.ipynb` file that stores its source line (as the GitHub and SARIF formats do),
without columns (reviewdog then takes the whole line), and carries no suggestion: a fix in
a cell is an edit inside a JSON string, which a suggested change cannot express safely.
"""

from __future__ import annotations

import json
import os
from functools import lru_cache
from typing import Optional

from devicelint.docs_url import PROJECT_URL, rule_url
from devicelint.finding import Finding, Fix
from devicelint.notebook import NOTEBOOK_SUFFIX, viewer_region
from devicelint.reporters import ReportContext
from devicelint.reporters.text import describe
from devicelint.source import LINE_BREAK_RE

SEVERITY = {"error": "ERROR", "warning": "WARNING", "info": "INFO"}
SOURCE = {"name": "devicelint", "url": PROJECT_URL}

# Line breaks as Python (and devicelint's positions) count them; str.splitlines would also
# split on \f, \v, \x1c, ... and shift every line after one.
_NEWLINE_RE = LINE_BREAK_RE


def _lines_of(path: str) -> Optional[tuple[str, ...]]:
    try:
        info = os.stat(path)
    except OSError:
        return None
    return _read_lines(path, info.st_mtime_ns, info.st_size)


@lru_cache(maxsize=64)
def _read_lines(path: str, mtime_ns: int, size: int) -> Optional[tuple[str, ...]]:
    from devicelint.config import DEFAULT_MAX_FILE_SIZE
    from devicelint.source import decode_source, read_regular

    try:  # regular files only (a FIFO would block, a device never ends), bounded
        text = decode_source(read_regular(path, DEFAULT_MAX_FILE_SIZE))
    except (OSError, ValueError):
        return None
    return tuple(_NEWLINE_RE.split(text))


def byte_column(line_text: Optional[str], column: int) -> Optional[int]:
    """The 1-based UTF-8 byte column of the 1-based code-point `column` on `line_text`;
    None when the line's text is unknown and the two could differ."""
    if column <= 1:
        return 1
    if line_text is None:
        return None
    head = line_text[: column - 1]
    beyond = max(0, column - 1 - len(line_text))  # past the end (the line break): 1 each
    return len(head.encode("utf-8", "surrogatepass")) + beyond + 1


def _position(lines: Optional[tuple[str, ...]], line: int, column: Optional[int]) -> dict:
    position = {"line": line}
    if column is None:
        return position
    text = lines[line - 1] if lines is not None and 1 <= line <= len(lines) else None
    converted = byte_column(text, column)
    if converted is not None:
        position["column"] = converted
    return position


def _range(lines, line: int, column: Optional[int], end_line: int, end_column: Optional[int]) -> dict:
    start = _position(lines, line, column)
    end = _position(lines, end_line, end_column)
    if "column" not in start or "column" not in end:
        # Without both columns reviewdog reads the range line-wise; mixed would be wrong.
        start.pop("column", None)
        end.pop("column", None)
    return {"start": start, "end": end}


def _suggestion(lines, fix: Fix) -> Optional[dict]:
    where = _range(lines, fix.line, fix.column, fix.end_line, fix.end_column)
    if "column" not in where["start"]:
        return None  # a line-wise range would replace whole lines: not what the fix says
    return {"range": where, "text": fix.content}


def diagnostic(finding: Finding) -> dict:
    """One reviewdog Diagnostic for a finding."""
    message = finding.message
    if finding.confirmation:
        message += f" (runtime: {describe(finding.confirmation)})"
    notebook = finding.cell is not None and finding.path.endswith(NOTEBOOK_SUFFIX)
    if notebook:
        line, _, end_line, _ = viewer_region(finding)
        where = {"start": {"line": line}, "end": {"line": end_line}}
        lines = None
    else:
        lines = _lines_of(finding.path)
        where = _range(lines, finding.line, finding.column, finding.end_line, finding.end_column)
    data = {
        "message": message,
        "location": {"path": finding.path, "range": where},
        "severity": SEVERITY.get(finding.severity, "WARNING"),
        "source": SOURCE,
        "code": {"value": finding.code, "url": rule_url(finding.code)},
    }
    if finding.fix is not None and not notebook:
        suggestion = _suggestion(lines, finding.fix)
        if suggestion is not None:
            data["suggestions"] = [suggestion]
            if not finding.fix.safe:
                data["message"] += " (the suggested change is an unsafe fix: check it before applying)"
    return data


def render(findings: list[Finding], ctx: ReportContext) -> str:
    """rdjson: one DiagnosticResult holding every finding."""
    document = {"source": SOURCE, "diagnostics": [diagnostic(f) for f in findings]}
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"


def render_lines(findings: list[Finding], ctx: ReportContext) -> str:
    """rdjsonl: one Diagnostic per line."""
    return "".join(json.dumps(diagnostic(f), ensure_ascii=False) + "\n" for f in findings)

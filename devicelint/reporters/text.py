"""`path:line:col: CODE message`, the source line with a caret underline, and a summary."""

from __future__ import annotations

from collections import Counter
import os
from functools import lru_cache

from devicelint.finding import Finding
from devicelint.reporters import ReportContext

BOLD, RED, CYAN, DIM, RESET = "\033[1m", "\033[31m", "\033[36m", "\033[2m", "\033[0m"


def _lines(path: str) -> tuple[str, ...]:
    """The file's lines as they are now (a fix may have rewritten it in this process)."""
    try:
        info = os.stat(path)
    except OSError:
        return ()
    return _read_lines(path, info.st_mtime_ns, info.st_size)


@lru_cache(maxsize=64)
def _read_lines(path: str, mtime_ns: int, size: int) -> tuple[str, ...]:
    from devicelint.source import decode_source

    if path.endswith(".ipynb"):
        from devicelint.notebook import virtual_lines

        return virtual_lines(path)

    try:
        with open(path, "rb") as handle:
            return tuple(decode_source(handle.read()).splitlines())
    except (OSError, ValueError):
        return ()


def _paint(text: str, style: str, color: bool) -> str:
    return f"{style}{text}{RESET}" if color else text


def _snippet(finding: Finding, color: bool) -> list[str]:
    lines = _lines(finding.path)
    if not (1 <= finding.line <= len(lines)):
        return []
    text = lines[finding.line - 1].expandtabs(1)
    gutter = f"{finding.cell_line if finding.cell is not None else finding.line:>4} | "
    start = max(finding.column - 1, 0)
    end = finding.end_column - 1 if finding.end_line == finding.line else len(text)
    width = max(1, min(end, len(text)) - start)
    caret = " " * (len(gutter) - 2) + "| " + " " * start + "^" * width
    return [_paint(gutter, DIM, color) + text, _paint(caret, RED, color)]


def render(findings: list[Finding], ctx: ReportContext) -> str:
    color = ctx.color
    out = []
    for f in findings:
        # A notebook finding reads `train.ipynb:cell 4:12:5:` (line within the cell).
        where = f"cell {f.cell}:{f.cell_line}" if f.cell is not None else str(f.line)
        location = _paint(f"{f.path}:{where}:{f.column}:", BOLD, color)
        out.append(f"{location} {_paint(f.code, RED + BOLD, color)} {f.message}")
        if f.confirmation:
            out.append(f"     {_paint('runtime:', CYAN, color)} {describe(f.confirmation)}")
        if ctx.show_source:
            out.extend(_snippet(f, color))
            out.append("")
    if ctx.statistics and findings:
        counts = Counter((f.code, f.name) for f in findings)
        for (code, name), count in sorted(counts.items(), key=lambda item: (-item[1], item[0])):
            out.append(f"{count:>5}  {code}  {name}")
    fixable = sum(1 for f in findings if f.fix is not None)
    if findings:
        summary = f"Found {len(findings)} finding{'s' if len(findings) != 1 else ''}"
        summary += f" in {ctx.files} file{'s' if ctx.files != 1 else ''} checked."
        if fixable:
            summary += f" {fixable} fixable with `--fix` (some may need `--unsafe-fixes`)."
        out.append(summary)
    elif ctx.files:
        out.append(f"All checks passed ({ctx.files} file{'s' if ctx.files != 1 else ''} checked).")
    if ctx.fixed:
        out.append(f"Fixed {ctx.fixed} finding{'s' if ctx.fixed != 1 else ''}.")
    return "\n".join(out) + ("\n" if out else "")


def describe(confirmation: dict) -> str:
    """One line of runtime evidence (the runtime checker's own wording, torch-free)."""
    from devicelint.runtime.report import evidence

    return evidence({"status": "?", **confirmation})

"""`path:line:col: CODE message`, the source line with a caret underline, and a summary."""

from __future__ import annotations

import os
from functools import lru_cache
from typing import Optional

from devicelint.config import DEFAULT_MAX_FILE_SIZE
from devicelint.finding import Finding
from devicelint.reporters import ReportContext, escape_control
from devicelint.diagnostics import UNREADABLE

BOLD, RED, CYAN, DIM, RESET = "\033[1m", "\033[31m", "\033[36m", "\033[2m", "\033[0m"


def _lines(path: str, limit: Optional[int]) -> tuple[str, ...]:
    """The file's lines as they are now (a fix may have rewritten it in this process)."""
    try:
        info = os.stat(path)
    except OSError:
        return ()
    return _read_lines(path, info.st_mtime_ns, info.st_size, limit)


@lru_cache(maxsize=64)
def _read_lines(path: str, mtime_ns: int, size: int, limit: Optional[int]) -> tuple[str, ...]:
    from devicelint.source import decode_source, read_regular, split_lines

    if path.endswith(".ipynb"):
        from devicelint.notebook import virtual_lines

        return virtual_lines(path)

    try:  # regular files only, bounded like the run's own reads
        return tuple(split_lines(decode_source(read_regular(path, limit))))
    except (OSError, ValueError):
        return ()


def _paint(text: str, style: str, color: bool) -> str:
    return f"{style}{text}{RESET}" if color else text


def _snippet(finding: Finding, color: bool, limit: Optional[int]) -> list[str]:
    if finding.code == UNREADABLE:  # the file was not read (FIFO, too large, ...): nor is it now
        return []
    lines = _lines(finding.path, limit)
    if not (1 <= finding.line <= len(lines)):
        return []
    text = lines[finding.line - 1].expandtabs(1)
    gutter = f"{finding.cell_line if finding.cell is not None else finding.line:>4} | "
    start = max(finding.column - 1, 0)
    end = finding.end_column - 1 if finding.end_line == finding.line else len(text)
    # The source line is the user's: control characters in it are shown escaped, and the
    # carets follow the escaped text.
    before, flagged = escape_control(text[:start]), escape_control(text[start:max(end, start)])
    width = max(1, len(flagged))
    caret = " " * (len(gutter) - 2) + "| " + " " * len(before) + "^" * width
    return [_paint(gutter, DIM, color) + escape_control(text), _paint(caret, RED, color)]


def _notes(finding: Finding, color: bool) -> list[str]:
    """`--output-format full`: what to do (the fix, or the rule's hint) and why it matters
    (the first sentence of the rule's "Why is this bad?"; `devicelint rule CODE` says the rest)."""
    from devicelint.rule import rule_catalog

    meta = rule_catalog().get(finding.code)
    notes = []
    if finding.fix is not None and finding.fix.description:
        unsafe = "" if finding.fix.safe else " (unsafe: needs --unsafe-fixes)"
        notes.append(("help:", finding.fix.description + unsafe))
    elif meta is not None and meta.hint:
        notes.append(("help:", meta.hint))
    if meta is not None and meta.why:
        notes.append(("why:", meta.why))
    return [f"     {_paint(label, CYAN, color)} {escape_control(text)}" for label, text in notes]


def applicable(finding: Finding, unsafe: bool) -> bool:
    """The finding has a fix that `--fix` applies (an unsafe one only with --unsafe-fixes)."""
    return finding.fix is not None and (finding.fix.safe or unsafe)


def render(findings: list[Finding], ctx: ReportContext) -> str:
    color = ctx.color
    limit = ctx.extra.get("max_file_size", DEFAULT_MAX_FILE_SIZE)
    out = []
    for f in findings:
        # A notebook finding reads `train.ipynb:cell 4:12:5:` (line within the cell).
        where = f"cell {f.cell}:{f.cell_line}" if f.cell is not None else str(f.line)
        # Paths and messages may hold a newline (a file named "x\n::error::y.py") or ESC:
        # escaped, so that no output line is anything but devicelint's own.
        location = _paint(f"{escape_control(f.path)}:{where}:{f.column}:", BOLD, color)
        marker = _paint("[*] ", CYAN, color) if applicable(f, ctx.unsafe_fixes) else ""
        out.append(f"{location} {_paint(f.code, RED + BOLD, color)} {marker}{escape_control(f.message)}")
        if f.confirmation:
            out.append(f"     {_paint('runtime:', CYAN, color)} {escape_control(describe(f.confirmation))}")
        if ctx.show_source:
            out.extend(_snippet(f, color, limit))
            if ctx.full:
                out.extend(_notes(f, color))
            out.append("")
    if ctx.summary:
        out.extend(summary(findings, ctx))
    return "\n".join(out) + ("\n" if out else "")


def summary(findings: list[Finding], ctx: ReportContext) -> list[str]:
    """`Found N findings ...`, and how many `--fix` applies: safe fixes, and the unsafe
    ones that need `--unsafe-fixes` counted apart (as ruff says it)."""
    lines = []
    if findings:
        line = f"Found {len(findings)} finding{'s' if len(findings) != 1 else ''}"
        lines.append(line + f" in {ctx.files} file{'s' if ctx.files != 1 else ''} checked.")
        fixable = sum(1 for f in findings if applicable(f, ctx.unsafe_fixes))
        hidden = sum(1 for f in findings if f.fix is not None and not applicable(f, ctx.unsafe_fixes))
        note = (f"{hidden} unsafe fix{'es' if hidden != 1 else ''} available with "
                "`--fix --unsafe-fixes`") if hidden else ""
        if fixable:
            lines.append(f"[*] {fixable} fixable with `--fix`" + (f" ({note})." if note else "."))
        elif note:
            lines.append(f"{note}.")
    elif ctx.files:
        lines.append(f"All checks passed ({ctx.files} file{'s' if ctx.files != 1 else ''} checked).")
    if ctx.fixed:
        lines.append(f"Fixed {ctx.fixed} finding{'s' if ctx.fixed != 1 else ''}.")
    return lines


def evidence(confirmation: dict, with_device: bool = True) -> str:
    """`[status] summary (on DEVICE)`: the one-line form of a runtime confirmation; every
    report names the device that ran. The text report of `confirm` names it once instead
    (with_device=False)."""
    text = f"[{confirmation['status']}] {confirmation.get('summary', '')}".rstrip()
    if confirmation.get("estimated"):
        text += " (estimated on the simulated device)"
    if with_device and confirmation.get("device"):
        text += f" (on {confirmation['device']})"
    return text


def describe(confirmation: dict) -> str:
    """One line of runtime evidence (the runtime checker's own wording)."""
    return evidence({"status": "?", **confirmation})

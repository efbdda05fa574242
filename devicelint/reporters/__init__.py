"""Output formats. A reporter only formats findings: `render(findings, context) -> str`."""

from __future__ import annotations

import importlib
import re
from dataclasses import dataclass, field
from typing import Callable

FORMATS = ("text", "json", "json-lines", "github", "sarif", "gitlab", "rdjson", "rdjsonl")


# Characters that must not reach a terminal or a CI log raw: C0 controls but tab (a newline
# in a file name starts a line that GitHub Actions reads as a `::error::` workflow command;
# ESC starts terminal escape sequences), DEL, C1 controls (\x9b is a one-byte CSI), the
# Unicode line/paragraph separators and the bidirectional overrides.
_CONTROL_RE = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
_NAMED = {"\n": "\\n", "\r": "\\r"}


def _escape(match: re.Match) -> str:
    char = match.group()
    code = ord(char)
    return _NAMED.get(char) or (f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}")


def escape_control(text: str) -> str:
    """`text` with control characters written as Python escapes (`\\n`, `\\x1b`, `\\u2028`):
    for every line-oriented output (text, GitHub, messages on stderr). JSON formats need
    nothing: JSON escapes them itself."""
    return _CONTROL_RE.sub(_escape, text)


@dataclass
class ReportContext:
    files: int = 0
    cached: int = 0
    color: bool = False
    statistics: bool = False
    show_source: bool = True
    fixed: int = 0
    extra: dict = field(default_factory=dict)
    unsafe_fixes: bool = False  # --unsafe-fixes: unsafe fixes count as applicable ([*])
    summary: bool = True  # the closing `Found ...` lines (not under -q)
    full: bool = True  # text: each finding's source line and the rule's fix (`--output-format full`)


def renderer(name: str) -> Callable:
    module, function = {"json-lines": ("jsonlines", "render"),
                        "rdjsonl": ("rdjson", "render_lines")}.get(name, (name, "render"))
    return getattr(importlib.import_module(f"devicelint.reporters.{module}"), function)

"""Suppression comments: `# noqa`, `# noqa: DL001,DL005`, `# devicelint: ignore[DL001]`,
and the file-level `# devicelint: skip-file`."""

from __future__ import annotations

import re
import tokenize
from dataclasses import dataclass, field
from typing import Optional

from devicelint.source import readline, split_lines

NOQA_RE = re.compile(
    r"#\s*noqa(?P<sep>\s*:\s*(?P<codes>[A-Z]+[0-9]+(?:[\s,]+[A-Z]+[0-9]+)*))?",
    re.IGNORECASE,
)
IGNORE_RE = re.compile(r"#\s*devicelint:\s*ignore\[(?P<codes>[^\]]*)\]")
SKIP_FILE_RE = re.compile(r"^\s*#\s*devicelint:\s*skip-file\s*$", re.MULTILINE)
_MARKERS = ("noqa", "NOQA", "devicelint:")


@dataclass
class Suppression:
    line: int
    codes: Optional[frozenset[str]]  # None: every code (a bare `# noqa`)
    kind: str  # "noqa" or "ignore"
    column: int = 1
    used: set[str] = field(default_factory=set)

    def covers(self, code: str) -> bool:
        return self.codes is None or code in self.codes


def skips_file(source: str) -> bool:
    return "skip-file" in source and SKIP_FILE_RE.search(source) is not None


def _comments(source: str) -> list[tuple[int, int, str]]:
    """(line, column, text) of real comments; falls back to a text scan if the file
    does not tokenize (the parser accepted it, so this is rare)."""
    try:
        return [
            (tok.start[0], tok.start[1] + 1, tok.string)
            for tok in tokenize.generate_tokens(readline(source))
            if tok.type == tokenize.COMMENT
        ]
    except (tokenize.TokenError, SyntaxError, IndentationError):
        found = []
        for number, text in enumerate(split_lines(source), 1):
            index = text.find("#")
            if index >= 0:
                found.append((number, index + 1, text[index:]))
        return found


def parse_suppressions(source: str) -> dict[int, list[Suppression]]:
    """Suppression comments by line."""
    if not any(marker in source for marker in _MARKERS):
        return {}
    table: dict[int, list[Suppression]] = {}
    for line, column, text in _comments(source):
        for match in NOQA_RE.finditer(text):
            codes = match.group("codes")
            if match.group("sep") and not codes:
                continue
            parsed = frozenset(re.split(r"[\s,]+", codes.upper().strip())) if codes else None
            table.setdefault(line, []).append(Suppression(line, parsed, "noqa", column))
        for match in IGNORE_RE.finditer(text):
            parsed = frozenset(c for c in re.split(r"[\s,]+", match.group("codes").strip()) if c)
            table.setdefault(line, []).append(Suppression(line, parsed or None, "ignore", column))
    return table


def is_suppressed(table: dict[int, list[Suppression]], code: str, lines: tuple[int, ...]) -> bool:
    """True if a suppression on one of `lines` covers `code`; marks it used."""
    hit = False
    for line in lines:
        for suppression in table.get(line, ()):
            if suppression.covers(code):
                suppression.used.add(code)
                hit = True
    return hit

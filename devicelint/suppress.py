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
    column: int = 1  # where the comment starts
    used: set[str] = field(default_factory=set)
    # For DL901 and its fix: the directive's span in the line (1-based columns, end
    # exclusive), its codes in written order, entries that are no code (`DL 5`), and a
    # `# noqa DL005` without a colon (which suppresses every code on its line).
    start: int = 0
    end: int = 0
    written: tuple[str, ...] = ()
    malformed: tuple[str, ...] = ()
    missing_colon: bool = False

    def covers(self, code: str) -> bool:
        return self.codes is None or code in self.codes


_CODE_RE = re.compile(r"[A-Z]+[0-9]+")
_CODES_AFTER_BARE_NOQA = re.compile(r"\s+(?P<codes>[A-Z]+[0-9]+(?:\s*,\s*[A-Z]+[0-9]+)*)", re.IGNORECASE)


def skips_file(source: str) -> bool:
    """`# devicelint: skip-file` as a comment on a line of its own (not inside a string or
    docstring that merely shows it)."""
    if "skip-file" not in source or SKIP_FILE_RE.search(source) is None:
        return False
    lines = split_lines(source)
    return any(SKIP_FILE_RE.fullmatch(text) and not lines[line - 1][:column - 1].strip()
               for line, column, text in _comments(source) if line <= len(lines))


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
            found = Suppression(line, None, "noqa", column, start=column + match.start(), end=column + match.end())
            if codes:
                found.written = tuple(re.split(r"[\s,]+", codes.upper().strip()))
                found.codes = frozenset(found.written)
            else:
                after = _CODES_AFTER_BARE_NOQA.match(text, match.end())
                if after:  # `# noqa DL005`: flake8 and ruff read a bare noqa
                    found.missing_colon = True
                    found.written = tuple(re.split(r"[\s,]+", after.group("codes").upper()))
                    found.end = column + after.end()
            table.setdefault(line, []).append(found)
        for match in IGNORE_RE.finditer(text):
            written, malformed = _ignore_entries(match.group("codes"))
            # `ignore[]` covers every code, as it always did; entries that are no code cover nothing.
            covered = frozenset(written) if written or malformed else None
            table.setdefault(line, []).append(Suppression(
                line, covered, "ignore",
                column, start=column + match.start(), end=column + match.end(),
                written=written, malformed=malformed,
            ))
    return table


def _ignore_entries(text: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The codes of `ignore[...]` (comma- or space-separated, any case) and the entries
    that are no code (`DL 5` stays one entry)."""
    written, malformed = [], []
    for piece in (p.strip() for p in text.split(",")):
        words = piece.upper().split()
        if words and all(_CODE_RE.fullmatch(word) for word in words):
            written.extend(words)
        elif piece:
            malformed.append(piece)
    return tuple(written), tuple(malformed)


def is_suppressed(table: dict[int, list[Suppression]], code: str, lines: tuple[int, ...]) -> bool:
    """True if a suppression on one of `lines` covers `code`; marks it used."""
    hit = False
    for line in lines:
        for suppression in table.get(line, ()):
            if suppression.covers(code):
                suppression.used.add(code)
                hit = True
    return hit

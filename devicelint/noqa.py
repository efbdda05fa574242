"""`devicelint --add-noqa`: write `# noqa: DLxxx` on the line of every current finding, so a
large codebase can adopt devicelint today and fix findings over time.

A code is merged into an existing `# noqa: ...` comment; otherwise a new comment goes at the
end of the line (after any comment already there). A line whose end lies inside a
multi-line string, or that ends with a backslash continuation, cannot take a comment without
changing the program: such findings are skipped and reported, never edited.
"""

from __future__ import annotations

import re
import tokenize
from dataclasses import dataclass, field
from typing import Iterable, Optional

from devicelint.diagnostics import ENGINE_CODES
from devicelint.document import parse_document
from devicelint.finding import Finding
from devicelint.notebook import NotebookError, load, replace_lines
from devicelint.source import SkippedFile, WriteRefused, read_regular, readline, replace_file, split_lines
from devicelint.suppress import NOQA_RE


@dataclass
class Skipped:
    path: str
    line: int
    codes: list[str]
    reason: str


@dataclass
class NoqaOutcome:
    added: int = 0  # lines that got a new or extended comment
    files: int = 0
    skipped: list[Skipped] = field(default_factory=list)


def add_noqa(findings: Iterable[Finding]) -> NoqaOutcome:
    # Engine diagnostics are about the file (unparsable, unreadable, stale suppression):
    # a noqa comment does not answer them.
    by_file: dict[str, dict[int, set[str]]] = {}
    for finding in findings:
        if finding.code in ENGINE_CODES:
            continue
        by_file.setdefault(finding.path, {}).setdefault(finding.line, set()).add(finding.code)
    outcome = NoqaOutcome()
    for path in sorted(by_file):
        added = _add_to_file(path, by_file[path], outcome.skipped)
        if added:
            outcome.added += added
            outcome.files += 1
    return outcome


def _add_to_file(path: str, wanted: dict[int, set[str]], skipped: list[Skipped]) -> int:
    try:
        data = read_regular(path)
    except (OSError, SkippedFile) as error:
        _skip_all(path, wanted, skipped, f"cannot read the file: {_reason(error)}")
        return 0
    if path.endswith(".ipynb"):
        return _add_to_notebook(path, data, wanted, skipped)
    try:
        document = parse_document(path, data)
    except ValueError as error:
        _skip_all(path, wanted, skipped, f"cannot decode the file: {error}")
        return 0
    lines = split_lines(document.text, keepends=True)
    edits = noqa_edits(path, document.text, wanted, skipped)
    if not edits:
        return 0
    for line, new in edits.items():
        old = lines[line - 1]
        lines[line - 1] = new + old[len(old.rstrip("\r\n")):]
    try:
        new_data = document.encode("".join(lines))
    except ValueError as error:
        _skip_all(path, wanted, skipped, f"cannot encode the file: {error}")
        return 0
    return _write(path, new_data, data, {n: wanted[n] for n in edits}, skipped)


def _add_to_notebook(path: str, data: bytes, wanted: dict[int, set[str]], skipped: list[Skipped]) -> int:
    try:
        source = load(data).source
        edits = noqa_edits(path, source, wanted, skipped)
        if not edits:
            return 0
        new = replace_lines(data, edits)
    except NotebookError as error:
        _skip_all(path, wanted, skipped, f"cannot edit the notebook: {error}")
        return 0
    return _write(path, new, data, {n: wanted[n] for n in edits}, skipped)


def _write(path: str, new: bytes, old: bytes, edits: dict[int, set[str]], skipped: list[Skipped]) -> int:
    """Replace the file atomically (devicelint.source.replace_file); a file that is
    read-only, hard-linked or changed meanwhile is reported, not written."""
    try:
        replace_file(path, new, expected=old)
    except (OSError, WriteRefused) as error:
        reason = f"not written: {_reason(error)}"
        skipped.extend(Skipped(path, line, sorted(codes), reason) for line, codes in sorted(edits.items()))
        return 0
    return len(edits)


def _reason(error: Exception) -> str:
    return (error.strerror if isinstance(error, OSError) else None) or str(error)


def _skip_all(path: str, wanted: dict[int, set[str]], skipped: list[Skipped], reason: str) -> None:
    for line, codes in sorted(wanted.items()):
        skipped.append(Skipped(path, line, sorted(codes), reason))


def noqa_edits(path: str, text: str, wanted: dict[int, set[str]], skipped: list[Skipped]) -> dict[int, str]:
    """New text (without line ending) for each line of `text` that takes a `# noqa` comment
    for the codes `wanted` on it; lines that cannot take one are added to `skipped`."""
    try:
        comments, unsafe = _scan(text)
    except (tokenize.TokenError, SyntaxError) as error:
        _skip_all(path, wanted, skipped, f"the file does not tokenize: {error}")
        return {}
    lines = split_lines(text)
    edits = {}
    for line, codes in sorted(wanted.items()):
        if line > len(lines):
            skipped.append(Skipped(path, line, sorted(codes), "the line no longer exists"))
            continue
        if line in unsafe:
            skipped.append(Skipped(path, line, sorted(codes), unsafe[line]))
            continue
        new = with_noqa(lines[line - 1], comments.get(line), codes)
        if new is not None:
            edits[line] = new
    return edits


def with_noqa(line: str, comment_column: Optional[int], codes: Iterable[str]) -> Optional[str]:
    """`line` with `codes` in its noqa comment; None if nothing needs to change.
    `comment_column` is the 0-based start of the line's comment, if it has one."""
    codes = sorted(set(codes))
    if comment_column is not None:
        comment = line[comment_column:]
        for match in NOQA_RE.finditer(comment):
            present = match.group("codes")
            if not present:
                if not match.group("sep"):
                    return None  # a bare `# noqa` already covers every code
                continue
            have = re.split(r"[\s,]+", present.strip())
            missing = [c for c in codes if c not in {h.upper() for h in have}]
            if not missing:
                return None
            start = comment_column + match.start("codes")
            end = comment_column + match.end("codes")
            return line[:start] + ", ".join(have + missing) + line[end:]
    return line.rstrip() + f"  # noqa: {', '.join(codes)}"


def _scan(text: str) -> tuple[dict[int, int], dict[int, str]]:
    """Comment columns by line, and lines that cannot take a trailing comment (why)."""
    comments: dict[int, int] = {}
    unsafe: dict[int, str] = {}
    fstring_starts: list[int] = []
    for token in tokenize.generate_tokens(readline(text)):
        kind = token.type
        if kind == tokenize.COMMENT:
            comments[token.start[0]] = token.start[1]
        elif kind == getattr(tokenize, "FSTRING_START", None):
            fstring_starts.append(token.start[0])
        elif kind == getattr(tokenize, "FSTRING_END", None):
            start = fstring_starts.pop() if fstring_starts else token.end[0]
            for line in range(start, token.end[0]):
                unsafe.setdefault(line, "the line ends inside a multi-line string")
        elif kind == tokenize.STRING and token.end[0] > token.start[0]:
            for line in range(token.start[0], token.end[0]):
                unsafe.setdefault(line, "the line ends inside a multi-line string")
    for number, line in enumerate(split_lines(text), 1):
        if line.rstrip().endswith("\\") and number not in comments:
            unsafe.setdefault(number, "the line ends with a backslash continuation")
    return comments, unsafe

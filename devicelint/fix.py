"""Apply the fixes attached to findings: `devicelint --fix`, `--unsafe-fixes`, `--diff`.

A fix (`devicelint.finding.Fix`) is a text edit: replace the span [start, end) of the file's
text (1-based lines, columns in code points) with `content`. For every file that has a fix to
apply, `fix_text` runs rounds:

1. lint the current text with the enabled rules (the same rules as the run);
2. take the applicable fixes (safe ones, plus unsafe ones with `--unsafe-fixes`), sorted by
   position then rule code, and keep those that do not overlap an earlier one;
3. splice them in and re-parse the result (libcst, and `ast` when the original parsed with
   it); a fix whose result does not parse is dropped and reported, never written;
4. repeat until no applicable fix is left, at most `MAX_ROUNDS` times (overlapping fixes are
   picked up in the next round, after the re-lint has recomputed their positions).

Only then is the file written, once, atomically. The findings of a fixed file are those of the
final re-lint, so a fixed finding is not reported again.

Files are read as devicelint.document.Document (a notebook is its code cells as one text)
and written back through `write_document` only. Which fixes to apply and which findings count
are the caller's (`accept`, `keep`): the pipeline passes the run's filter (devicelint/runner.py).
"""

from __future__ import annotations

import ast
import difflib
import hashlib
import warnings
from collections import Counter
from dataclasses import dataclass, field
from typing import Callable, Iterable, Optional, Sequence

import libcst as cst

from devicelint import safe_parse
from devicelint.document import Document, read_document
from devicelint.engine import lint_source
from devicelint.finding import Finding, Fix
from devicelint.rule import Rule
from devicelint.source import LINE_BREAK_RE, line_starts, replace_file, split_lines

# Rounds of lint -> apply per file. Real fixes settle in 2-3 rounds (one per level of
# nesting); more means two fixes undo each other.
MAX_ROUNDS = 10

# What Python's tokenizer (and libcst) count as a line break (see source.split_lines).
_NEWLINE_RE = LINE_BREAK_RE


# -- documents (devicelint/document.py reads them; the fixer checks they round-trip) ---------


def fixable_document(path: str) -> Document:
    """Read `path` for fixing. Raises OSError, or ValueError with a message. A `.py` file
    that would not be written back byte for byte (say, two BOMs) is refused: then bytes
    outside the fixed spans could change."""
    document = read_document(path)
    try:
        same = document.encode(document.text) == document.original
    except ValueError:  # UnicodeEncodeError, or a notebook that does not round-trip
        same = False
    if not same and document.notebook is None:
        raise ValueError(f"cannot write this file back unchanged in {document.encoding}")
    return document


def write_document(document: Document, text: str) -> None:
    """Store `text` as the new content of `document`: encode it, then replace the file
    atomically, keeping its owner and mode (devicelint.source.replace_file). Raises OSError,
    or ValueError when the text cannot be encoded or the file must not be rewritten: it
    changed since it was read, is read-only, or has other hard links (WriteRefused)."""
    replace_file(document.path, document.encode(text), expected=document.original)


# -- fixing one text ---------------------------------------------------------------------


@dataclass
class Edit:
    """A fix located in the current text: character offsets [start, end)."""

    start: int
    end: int
    content: str
    finding: Finding

    @property
    def order(self) -> tuple:
        return (self.start, self.end, self.finding.code, self.content)


@dataclass
class TextFix:
    """The outcome of fixing one text."""

    text: str
    applied: list[Finding] = field(default_factory=list)  # as found, before their fix
    findings: list[Finding] = field(default_factory=list)  # of the final text
    messages: list[str] = field(default_factory=list)  # dropped fixes, no convergence


def fix_text(
    path: str,
    text: str,
    rules: Sequence[type[Rule]],
    accept: Callable[[Fix], bool],
    keep: Callable[[Finding], bool] = lambda finding: True,
    max_rounds: int = MAX_ROUNDS,
    lint_path: Optional[str] = None,
    locate=None,
) -> TextFix:
    """Apply the fixes that `accept` allows until none is left (see the module docstring).
    `keep` filters findings as the run does (enabled codes, per-file ignores). Rules see
    `lint_path` (the path relative to the project root, as in the run) if given; `locate`: a
    notebook's cell map (messages name lines by it, devicelint.engine.lint_source)."""

    def lint(source: str) -> list[Finding]:
        found = lint_source(lint_path or path, source, rules, disk_path=path, locate=locate).findings
        for finding in found:
            finding.path = path
        return [f for f in found if keep(f)]

    result = TextFix(text)
    newline = _first_newline(text)
    # Python's parser is stricter than libcst in places (assignment targets, ...); hold a
    # fixed text to it unless the original already failed it (newer/older syntax).
    needs_ast = _ast_error(text) is None
    rejected: set[tuple] = set()  # (code, replaced text, content) of fixes that broke parsing
    seen = {_digest(text)}
    findings = lint(text)
    current = text
    for _ in range(max_rounds):
        edits = _candidates(current, findings, accept, newline, rejected, result.messages)
        if not edits:
            break
        chosen = _non_overlapping(edits)
        new_text, chosen = _apply_checked(current, chosen, needs_ast, rejected, result.messages)
        if not chosen:
            break
        result.applied.extend(edit.finding for edit in chosen)
        current = new_text
        findings = lint(current)
        digest = _digest(current)
        if digest in seen:
            result.messages.append(
                f"{path}: fixes undo each other (the text came back to an earlier version); "
                "stopped"
            )
            break
        seen.add(digest)
    else:
        if _candidates(current, findings, accept, newline, rejected, []):
            result.messages.append(
                f"{path}: fixes did not converge after {max_rounds} rounds; "
                "the fixes applied so far are kept"
            )
    result.text = current
    result.findings = findings
    return result


def _candidates(
    text: str,
    findings: Iterable[Finding],
    accept: Callable[[Fix], bool],
    newline: str,
    rejected: set[tuple],
    messages: list[str],
) -> list[Edit]:
    starts = line_starts(text)
    edits = []
    for finding in findings:
        fix = finding.fix
        if fix is None or not accept(fix):
            continue
        start = _offset(text, starts, fix.line, fix.column)
        end = _offset(text, starts, fix.end_line, fix.end_column)
        if start is None or end is None or end < start:
            messages.append(f"{_where(finding)}: fix dropped: its span is outside the file")
            continue
        content = _NEWLINE_RE.sub(newline, fix.content)
        if text[start:end] == content:
            continue  # a no-op: the finding stays, there is nothing to write
        if _rejection_key(text, start, end, content, finding) in rejected:
            continue
        edits.append(Edit(start, end, content, finding))
    return edits


def _non_overlapping(edits: list[Edit]) -> list[Edit]:
    """In order of position then code: each edit that starts after the previous kept one
    ends. Two edits at the same point (insertions) are not ordered by anything meaningful, so
    the later one waits for the next round too."""
    chosen: list[Edit] = []
    for edit in sorted(edits, key=lambda e: e.order):
        if chosen and (edit.start < chosen[-1].end or edit.start == chosen[-1].start):
            continue
        chosen.append(edit)
    return chosen


def _splice(text: str, edits: Sequence[Edit]) -> str:
    parts = []
    position = 0
    for edit in sorted(edits, key=lambda e: e.order):
        parts.append(text[position:edit.start])
        parts.append(edit.content)
        position = edit.end
    parts.append(text[position:])
    return "".join(parts)


def _apply_checked(
    text: str, edits: list[Edit], use_ast: bool, rejected: set[tuple], messages: list[str]
) -> tuple[str, list[Edit]]:
    """Splice `edits` into `text`; drop (and report) any whose result does not parse."""
    new_text = _splice(text, edits)
    if _parse_error(new_text, use_ast) is None:
        return new_text, edits
    # Rare: find the culprits, first one by one, then (if two fixes only break together)
    # adding them one at a time.
    kept = []
    for edit in edits:
        error = _parse_error(_splice(text, [edit]), use_ast)
        if error is None:
            kept.append(edit)
        else:
            _reject(text, edit, error, rejected, messages)
    accepted: list[Edit] = []
    for edit in kept:
        error = _parse_error(_splice(text, [*accepted, edit]), use_ast)
        if error is None:
            accepted.append(edit)
        else:
            _reject(text, edit, f"together with another fix: {error}", rejected, messages)
    return _splice(text, accepted), accepted


def _reject(text: str, edit: Edit, error: str, rejected: set[tuple], messages: list[str]) -> None:
    rejected.add(_rejection_key(text, edit.start, edit.end, edit.content, edit.finding))
    messages.append(
        f"{_where(edit.finding)}: fix dropped: the result would not parse ({error})"
    )


def _rejection_key(text: str, start: int, end: int, content: str, finding: Finding) -> tuple:
    # Positions move between rounds; what is replaced and by what does not.
    return (finding.code, text[start:end], content)


def _parse_error(text: str, use_ast: bool) -> Optional[str]:
    """None if `text` parses (libcst, and `ast` when asked), else the parser's message."""
    try:
        safe_parse.parse_module(text)  # plain libcst can SIGSEGV on deep nesting
    except cst.ParserSyntaxError as error:
        return f"line {error.raw_line}: {error.message}"
    except (RecursionError, MemoryError, ValueError) as error:
        return f"{type(error).__name__}: {error}"
    return _ast_error(text) if use_ast else None


def _ast_error(text: str) -> Optional[str]:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # SyntaxWarning for odd escapes etc.
            compile(text, "<fixed>", "exec", ast.PyCF_ONLY_AST, dont_inherit=True)
    except SyntaxError as error:
        return f"line {error.lineno}: {error.msg}"
    except (RecursionError, MemoryError, ValueError) as error:
        return f"{type(error).__name__}: {error}"
    return None


def fix_still_parses(text: str, fix: Fix) -> bool:
    """Whether `text` with `fix` applied still parses, as the fixer checks before it writes
    (libcst, and `ast` when `text` itself parses with it). For editors offering one fix."""
    starts = line_starts(text)
    start = _offset(text, starts, fix.line, fix.column)
    end = _offset(text, starts, fix.end_line, fix.end_column)
    if start is None or end is None or end < start:
        return False
    new = text[:start] + _NEWLINE_RE.sub(_first_newline(text), fix.content) + text[end:]
    return _parse_error(new, _ast_error(text) is None) is None


def _offset(text: str, starts: list[int], line: int, column: int) -> Optional[int]:
    if not 1 <= line <= len(starts) or column < 1:
        return None
    line_end = starts[line] if line < len(starts) else len(text)
    offset = starts[line - 1] + column - 1
    return offset if offset <= line_end else None


def _first_newline(text: str) -> str:
    # libcst writes new line breaks in the style of the file's first one; so do we.
    match = _NEWLINE_RE.search(text)
    return match.group() if match else "\n"


def _digest(text: str) -> bytes:
    return hashlib.sha1(text.encode("utf-8", "surrogatepass")).digest()


def _where(finding: Finding) -> str:
    return f"{finding.path}:{finding.line}:{finding.column}: {finding.code}"


# -- many files: what the CLI calls ------------------------------------------------------


@dataclass
class FixOutcome:
    diff: str = ""  # unified diff of every change (--diff)
    fixable: bool = False  # some file would change
    remaining: list[Finding] = field(default_factory=list)  # findings still to report
    fixed: int = 0  # fixes applied (or, with --diff, that would be)
    fixed_by_code: Counter = field(default_factory=Counter)
    files_changed: list[str] = field(default_factory=list)
    messages: list[str] = field(default_factory=list)  # for stderr: dropped fixes etc.


def fix_files(
    findings: list[Finding],
    rules: Sequence[type[Rule]],
    accept: Callable[[Fix], bool],
    keep: Callable[[Finding], bool],
    *,
    diff_only: bool = False,
    max_rounds: int = MAX_ROUNDS,
    lint_path: Callable[[str], Optional[str]] = lambda path: None,
) -> FixOutcome:
    """Fix the files that `findings` (a run's findings, paths as reported) have fixes in
    that `accept` allows, linting with `rules` and counting the findings `keep` allows (the
    run's filter). Rules see `lint_path(path)` if it gives one (the path relative to the
    project root, as in the run). With `diff_only`, nothing is written and `diff` holds what
    would change."""
    outcome = FixOutcome()
    diffs = []
    for path, group in _by_path(findings).items():
        if not any(f.fix is not None and accept(f.fix) for f in group):
            outcome.remaining.extend(group)
            continue
        result = _fix_file(path, rules, accept, keep, diff_only, max_rounds, outcome, lint_path(path))
        if result is None:
            outcome.remaining.extend(group)
            continue
        document, fixed = result
        outcome.remaining.extend(fixed.findings)
        outcome.fixed += len(fixed.applied)
        outcome.fixed_by_code.update(f.code for f in fixed.applied)
        outcome.files_changed.append(path)
        if diff_only:
            diffs.append(unified_diff(path, document.text, fixed.text))
    outcome.fixable = bool(outcome.files_changed)
    outcome.diff = "".join(diffs)
    outcome.remaining.sort(key=Finding.sort_key)
    return outcome


def _fix_file(path, rules, accept, keep, diff_only, max_rounds, outcome, lint_path=None):
    """(document, TextFix) when the file changes (and was written unless `diff_only`),
    else None."""
    try:
        document = fixable_document(path)
    except (OSError, ValueError) as error:
        outcome.messages.append(f"{path}: not fixed: {error}")
        return None
    fixed = fix_text(path, document.text, rules, accept, keep, max_rounds, lint_path, document.locator())
    document.annotate(fixed.findings)
    outcome.messages.extend(fixed.messages)
    if fixed.text == document.text:
        return None
    try:
        if diff_only:
            document.encode(fixed.text)  # what could not be written is not offered either
        else:
            write_document(document, fixed.text)
    except (OSError, ValueError) as error:  # UnicodeEncodeError is a ValueError
        outcome.messages.append(f"{path}: not fixed: {error}")
        return None
    return document, fixed


def _by_path(findings: Iterable[Finding]) -> dict[str, list[Finding]]:
    groups: dict[str, list[Finding]] = {}
    for finding in findings:
        groups.setdefault(finding.path, []).append(finding)
    return groups


def unified_diff(path: str, old: str, new: str) -> str:
    """A unified diff that `patch -p0` / `git apply -p0` accept, line breaks as in the file."""
    lines = difflib.unified_diff(_lines(old), _lines(new), fromfile=path, tofile=path)
    out = []
    for line in lines:
        if line.endswith(("\n", "\r")):
            out.append(line)
        else:  # the file's last line, without a line break
            out.append(line + "\n\\ No newline at end of file\n")
    return "".join(out)


def _lines(text: str) -> list[str]:
    """Lines with their own line breaks, split only where Python splits them."""
    return split_lines(text, keepends=True)

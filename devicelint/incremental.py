"""Re-parse only what an edit changed: the language server's parse of a buffer being typed in.

libcst has no incremental parser, and its parse is most of a lint's cost on a training
script (about 110 of 270 ms of CPU on a 1,000-line file). An edit usually touches one
top-level statement, so `IncrementalParser.parse` keeps the previous text and tree of a
buffer, finds the top-level statements the edit touched (the common prefix and suffix of the
two texts against where each statement of the previous tree begins), parses only the new
text of those, and puts the new statements in place of the old ones
(`Module.with_changes`); the other statements are the previous tree's nodes.

The result must be the tree that `libcst.parse_module` gives for the new text (equal by
`libcst.deep_equals`; tests/test_incremental.py checks it, and the findings, on random
edits). Where that cannot be shown from the text cheaply, the whole text is parsed:

* the edit starts in the module's header, in its first two lines (an encoding cookie) or
  before the first indented block (libcst takes the module's default indentation from it);
* the lines where the re-parsed text meets the unchanged text are not plain: libcst gives
  the trailing comments and blank lines of a block to that block when they are indented, so
  both boundaries must be followed by blank lines or comments that start in column 0 only;
* the changed text does not parse on its own (an unclosed bracket or string may swallow
  what follows: the whole text decides), or it ends without a line break before unchanged
  text (it would join the next line).

The parse of the changed text is prefixed with a one-line `if` block in the module's own
indentation and line break, so that libcst detects the same defaults as for the whole file
(it records an indentation or a line break that equals the default as "the default").
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass
from typing import Optional

import libcst as cst

from devicelint import safe_parse

__all__ = ["IncrementalParser"]


@dataclass
class _Parsed:
    """A text, its tree, and what a splice needs to know about the tree's statements."""

    text: str
    module: cst.Module
    # Where each statement of module.body begins in `text`; one more entry: where the
    # footer begins. None until described (it costs a code generation of the module).
    starts: Optional[list[int]] = None
    plain: Optional[list[bool]] = None  # each statement's leading lines start in column 0
    first_indented: int = -1  # index of the first statement with an indented block (-1: none)


class IncrementalParser:
    """Parses successive versions of one buffer. `parse(text)` returns what
    `safe_parse.parse_module(text)` would, and raises what it would; the last text that
    parsed is the base the next version is compared with."""

    def __init__(self) -> None:
        self._last: Optional[_Parsed] = None
        self.reparsed = 0  # versions parsed by splicing (for tests and the benchmark)
        self.full = 0  # versions parsed whole

    def parse(self, text: str) -> cst.Module:
        last = self._last
        if last is not None:
            if text == last.text:
                return last.module
            try:
                spliced = _splice(last, text)
            except Exception:  # noqa: BLE001 - a failed shortcut: the whole text is parsed
                spliced = None
            if spliced is not None:
                self._last = spliced
                self.reparsed += 1
                return spliced.module
        module = safe_parse.parse_module(text)  # raises on a syntax error: the base stays
        self.full += 1
        self._last = _Parsed(text, module)
        return module

    def statement_starts(self, module: cst.Module) -> Optional[list[tuple[int, int]]]:
        """(line, column) where each line of `module`'s header and each statement of its body
        begins (what FileContext would find by generating the code of all statements before
        a finding's), when `module` is the last tree parsed and it is described; else None."""
        last = self._last
        if last is None or last.module is not module or not last.starts or "\r" in last.text:
            return None
        text = last.text
        found = [(number + 1, 0) for number in range(len(module.header))]
        line, offset = 1, 0
        for start in last.starts[:-1]:
            line += text.count("\n", offset, start)
            offset = start
            found.append((line, 0))
        return found

    def prepare(self) -> None:
        """Describe the last tree now (the server calls it once diagnostics are out), so
        that the next edit does not pay for it."""
        if self._last is not None:
            _describe(self._last)


def _describe(parsed: _Parsed) -> bool:
    """Fill in where the statements begin. False if the code generation does not give the
    text back (then nothing is spliced into this tree)."""
    if parsed.starts is not None:
        return bool(parsed.starts)
    module = parsed.module
    offset = sum(len(module.code_for_node(line)) for line in module.header)
    starts, plain = [], []
    first_indented = -1
    for index, statement in enumerate(module.body):
        starts.append(offset)
        offset += len(module.code_for_node(statement))
        plain.append(_plain(statement.leading_lines) if hasattr(statement, "leading_lines") else False)
        if first_indented < 0 and isinstance(getattr(statement, "body", None), cst.IndentedBlock):
            first_indented = index
    starts.append(offset)
    offset += sum(len(module.code_for_node(line)) for line in module.footer)
    # Without a line break at the end, libcst parsed the text with one added (and leaves it
    # out of module.code only).
    added = 0 if module.has_trailing_newline else offset - len(parsed.text)
    if offset - added != len(parsed.text) or added not in (0, 1, 2) or not module.body:
        parsed.starts = []
        return False
    parsed.starts, parsed.plain, parsed.first_indented = starts, plain, first_indented
    return True


def _plain(lines) -> bool:
    """Blank lines and comments that start in column 0: never part of a block before them."""
    return all(not line.whitespace.value for line in lines)


def _common_prefix(a: str, b: str, limit: int) -> int:
    """Length of the common prefix of a and b, at most `limit` (slices compare in C)."""
    low, high = 0, limit
    while low < high:
        middle = (low + high + 1) // 2
        if a[low:middle] == b[low:middle]:
            low = middle
        else:
            high = middle - 1
    return low


def _common_suffix(a: str, b: str, limit: int) -> int:
    low, high = 0, limit
    while low < high:
        middle = (low + high + 1) // 2
        if a[len(a) - middle:len(a) - low] == b[len(b) - middle:len(b) - low]:
            low = middle
        else:
            high = middle - 1
    return low


def _splice(last: _Parsed, text: str) -> Optional[_Parsed]:
    if not _describe(last):
        return None
    old, module, starts = last.text, last.module, last.starts
    body = module.body
    count = len(body)
    prefix = _common_prefix(old, text, min(len(old), len(text)))
    suffix = _common_suffix(old, text, min(len(old), len(text)) - prefix)
    changed_end = len(old) - suffix  # the edit replaced old[prefix:changed_end]
    first = min(bisect.bisect_right(starts, prefix) - 1, count - 1)
    if first < 1 or first <= last.first_indented or last.first_indented < 0:
        return None  # the header, the first statement, or before the default indentation
    if old.count("\n", 0, starts[first]) < 2:
        return None  # an encoding cookie may be in the first two lines
    final = max(first, min(bisect.bisect_left(starts, changed_end) - 1, count - 1))
    at_end = final == count - 1  # then the re-parsed text runs to the end, footer included
    delta = len(text) - len(old)
    if at_end:
        chunk = text[starts[first]:]
    else:
        if not last.plain[final + 1]:
            return None
        chunk = text[starts[first]:starts[final + 1] + delta]
        if not chunk.endswith("\n"):
            return None
    newline, indent = module.default_newline, module.default_indent
    lead = f"if 1:{newline}{indent}pass{newline}"
    try:
        parsed = safe_parse.parse_module(lead + chunk)
    except Exception:  # noqa: BLE001 - whatever the piece does alone, the whole text decides
        return None
    new = parsed.body[1:]
    if parsed.header or not parsed.body or len(parsed.code_for_node(parsed.body[0])) != len(lead):
        return None  # the lead's block took lines of the chunk
    if parsed.default_indent != indent or parsed.default_newline != newline:
        return None
    if new and not _plain(new[0].leading_lines):
        return None
    if not at_end and parsed.footer:
        return None  # trailing blank lines or comments belong to the next statement
    if at_end:
        spliced = module.with_changes(body=(*body[:first], *new), footer=parsed.footer,
                                      has_trailing_newline=parsed.has_trailing_newline)
    else:
        spliced = module.with_changes(body=(*body[:first], *new, *body[final + 1:]))
    # Where the new statements begin, from their own code (one statement: the whole chunk).
    offset = starts[first]
    new_starts = []
    for index, statement in enumerate(new):
        new_starts.append(offset)
        if index < len(new) - 1 or at_end:
            offset += len(parsed.code_for_node(statement))
        else:
            offset += len(chunk)
    result = _Parsed(text, spliced)
    if at_end:
        result.starts = [*starts[:first], *new_starts, offset]
        result.plain = [*last.plain[:first], *(_plain(s.leading_lines) for s in new)]
    else:
        result.starts = [*starts[:first], *new_starts, *(start + delta for start in starts[final + 1:])]
        result.plain = [*last.plain[:first], *(_plain(s.leading_lines) for s in new), *last.plain[final + 1:]]
    result.first_indented = last.first_indented
    return result

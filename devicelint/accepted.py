"""Texts CPython's parser has read without error in this process (issue 17).

Three places ask CPython's parser only whether it accepts a whole file's text, and throw
its tree away: the syntax check of a file no rule parses (`diagnostics.python_syntax_error`,
DL900), and the guard before libcst's parse (`safe_parse.complexity_error`, for a text long
or bracketed enough to be risky). Two others parse the same texts with `ast` and keep the
tree: the project index (its facts of a module, `project_index._parse`) and the file gate
(`gate.facts_of`). On timm 1.0.31, 23 of the 25 texts the guard compiled in a `-j 1` run had
been parsed by the index already. A text noted here parsed with `ast.parse` (which is
`compile(text, ..., "exec", PyCF_ONLY_AST)`, what the checks run), so they would find
nothing: they return at once instead.

Kept by the text itself (a lookup compares the whole text, so only the same text is ever
taken as accepted), newest last, up to KEPT_CHARS of text; the oldest are dropped past it.
Imports nothing (the runner checks a file no rule needs without importing libcst)."""

from __future__ import annotations

KEPT_CHARS = 16_000_000  # characters of text kept (the texts are mostly alive elsewhere too)

_texts: dict[str, None] = {}
_chars = 0


def note(text: str) -> None:
    """`ast.parse(text)` (CPython's parser, the whole text in "exec" mode) returned a tree."""
    global _chars
    if text in _texts:
        return
    _texts[text] = None
    _chars += len(text)
    while _chars > KEPT_CHARS:
        try:
            oldest = next(iter(_texts))
            del _texts[oldest]
        except (StopIteration, RuntimeError, KeyError):  # emptied, or changed by another thread
            break
        _chars -= len(oldest)


def holds(text: str) -> bool:
    """Whether CPython's parser has read exactly this text without error (`note`)."""
    return text in _texts


def clear() -> None:
    global _chars
    _texts.clear()
    _chars = 0

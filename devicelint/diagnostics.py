"""Findings the engine itself produces about files it cannot lint. They are listed and
selectable like rules, but no rule module detects them."""

from __future__ import annotations

from devicelint.rule import Rule


class SyntaxErrorDiagnostic(Rule):
    """## What it does
    Reports a file that does not parse as Python, at the parser's line and column.

    ## Why is this bad?
    devicelint cannot check a file it cannot parse; neither can Python run it. Other files
    are still linted.
    """

    code = "DL900"
    name = "syntax-error"
    summary = "File does not parse"
    severity = "error"


class UnreadableFileDiagnostic(Rule):
    """## What it does
    Reports a path that cannot be linted: it does not exist, cannot be read, is not valid
    text in its declared encoding (UTF-8 unless a PEP 263 coding cookie says otherwise),
    holds NUL bytes, or is larger than `max-file-size`.

    ## Why is this bad?
    A file the linter silently skips is a file nobody checked.
    """

    code = "DL902"
    name = "unreadable-file"
    summary = "File cannot be read"
    severity = "error"


DIAGNOSTICS = (SyntaxErrorDiagnostic, UnreadableFileDiagnostic)

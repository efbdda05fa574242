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


class UnusedSuppression(Rule):
    """## What it does
    Reports a `# noqa: DLxxx` or `# devicelint: ignore[DLxxx]` comment naming a code that
    suppresses nothing on its line, a DL code that no rule has (`# noqa: DL099`), an entry
    that is no code (`ignore[DL 5]`), and `# noqa DL005` without its colon (which flake8,
    ruff and devicelint read as a bare `# noqa`: every code on the line is suppressed).
    Only codes of enabled rules are judged unused (a disabled rule never had the chance to
    report); a bare `# noqa` and other tools' codes (`E501`) are never reported.

    ## Why is this bad?
    A stale suppression hides the next real finding on that line. After a fix, or after
    `--add-noqa` adopted devicelint in a large repository, the comments that no longer
    suppress anything should go.

    ## Example
    ```python
    model = DistributedDataParallel(net)  # noqa: DL005
    ```

    ## Use instead
    ```python
    model = DistributedDataParallel(net)
    ```
    To keep such a comment on purpose, add DL901 to it: `# noqa: DL005, DL901`.

    ## Fix safety
    The fix removes the codes it reports from the comment, and the whole directive when no
    code is left (other text in the comment stays). It is safe: those codes suppress
    nothing. Adding the missing colon to `# noqa DL005` is unsafe: the line's other codes
    are reported again.
    """

    code = "DL901"
    name = "unused-suppression"
    summary = "Suppression comment for a code that reports nothing here"
    severity = "warning"
    fixable = True


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


DIAGNOSTICS = (SyntaxErrorDiagnostic, UnusedSuppression, UnreadableFileDiagnostic)

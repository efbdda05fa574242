"""The engine's own findings about files it cannot lint: DL900 (does not parse), DL901 (an
unused suppression comment), DL902 (cannot be read). Their rule classes, listed and
selectable like rules, are in devicelint/rule.py; this module builds the findings. No libcst:
a run whose files hold no PyTorch code checks syntax with CPython's parser and never imports
the engine.
"""

from __future__ import annotations

import ast
import warnings

from devicelint.finding import Finding
from devicelint.rule import DIAGNOSTICS, SyntaxErrorDiagnostic, UnreadableFileDiagnostic, UnusedSuppression

SYNTAX_ERROR = SyntaxErrorDiagnostic.code
UNUSED_SUPPRESSION = UnusedSuppression.code
UNREADABLE = UnreadableFileDiagnostic.code
ENGINE_CODES = frozenset(rule.code for rule in DIAGNOSTICS)

_BY_CODE = {rule.code: rule for rule in DIAGNOSTICS}


def diagnostic(code: str, path: str, message: str, line: int = 1, column: int = 1) -> Finding:
    rule = _BY_CODE[code]
    return Finding(
        code=code, name=rule.name, path=path, line=line, column=column,
        end_line=line, end_column=column, message=message, severity=rule.severity,
    )


def unreadable(path: str, error: Exception) -> Finding:
    """DL902 for an error of reading or decoding a file (devicelint.source, devicelint.document)."""
    if isinstance(error, FileNotFoundError):
        return diagnostic(UNREADABLE, path, "No such file or directory")
    if isinstance(error, OSError):
        return diagnostic(UNREADABLE, path, f"Cannot read file: {error.strerror or error}")
    return diagnostic(UNREADABLE, path, str(error))


def python_syntax_error(path: str, source: str) -> list[Finding]:
    """DL900 from CPython's parser (faster than libcst's), for files no rule needs parsed."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # SyntaxWarnings about the user's code are not ours to print
            # Named as no file is: given a real file's name, CPython takes the error's line
            # from that file, not from `source` (a notebook cell's line then came from the
            # .ipynb JSON, moving the column), and converts the column with it.
            compile(source, "<devicelint>", "exec", flags=ast.PyCF_ONLY_AST, dont_inherit=True)
    except SyntaxError as error:
        if _newer_python_parses(source):
            return []  # newer syntax (`def f[T]()` on 3.11): libcst, which the rules use, reads it
        message = f"Cannot parse: {error.msg}"
        return [diagnostic(SYNTAX_ERROR, path, message, error.lineno or 1, error.offset or 1)]
    except (RecursionError, MemoryError, ValueError) as error:
        deep = isinstance(error, (RecursionError, MemoryError))  # MemoryError: "too complex"
        kind = "too deeply nested (Python's own parser gives up)" if deep else str(error)
        return [diagnostic(SYNTAX_ERROR, path, f"Cannot parse: {kind}")]
    return []


def _newer_python_parses(source: str) -> bool:
    """True if libcst parses what the running CPython rejected: syntax of a newer Python
    (type parameters and `type` statements of 3.12, 3.13's parameter defaults, 3.14's
    unparenthesised `except A, B`). devicelint lints code for whatever Python it targets, not
    for the Python that runs devicelint."""
    from devicelint import safe_parse

    try:
        safe_parse.parse_module(source)
    except Exception:  # noqa: BLE001 - any failure means: not parseable, report CPython's error
        return False
    return True

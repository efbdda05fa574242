"""Reading source files and the engine's own diagnostics, without importing libcst: a run
whose files are cached or hold no PyTorch code never pays for the parser."""

from __future__ import annotations

import ast
import tokenize
import warnings

from devicelint.finding import Finding

SYNTAX_ERROR = "DL900"
UNUSED_SUPPRESSION = "DL901"
UNREADABLE = "DL902"


def diagnostic(code: str, path: str, message: str, line: int = 1, column: int = 1) -> Finding:
    from devicelint.rule import rule_catalog

    rule = rule_catalog()[code]
    return Finding(
        code=code, name=rule.name, path=path, line=line, column=column,
        end_line=line, end_column=column, message=message, severity=rule.severity,
    )


def decode_source(data: bytes) -> str:
    """Decode like Python does: BOM, PEP 263 cookie, else UTF-8. Raises ValueError."""
    if b"\0" in data:
        raise ValueError("file contains NUL bytes")
    try:
        encoding, _ = tokenize.detect_encoding(iter(data.splitlines(keepends=True)).__next__)
    except SyntaxError as error:
        raise ValueError(_encoding_problem(data, error)) from None
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError as error:
        raise ValueError(_bad_byte(data, error.start, encoding)) from None
    except LookupError as error:
        raise ValueError(f"not valid {encoding}: {error}") from None
    return text[1:] if text.startswith("\ufeff") else text


def _encoding_problem(data: bytes, error: SyntaxError) -> str:
    """tokenize says "invalid or missing encoding declaration" both for a bad cookie and for
    plain non-UTF-8 bytes; say which, and where the first bad byte is."""
    if b"coding" in data[:400]:
        return str(error).replace(" for None", "")
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as bad:
        return _bad_byte(data, bad.start, "utf-8")
    return str(error)


def _bad_byte(data: bytes, offset: int, encoding: str) -> str:
    line = data.count(b"\n", 0, offset) + 1
    column = offset - (data.rfind(b"\n", 0, offset) + 1) + 1
    name = "UTF-8" if encoding.lower().replace("_", "-") in ("utf-8", "utf8", "utf-8-sig") else encoding
    cookie = " and no PEP 263 coding cookie" if name == "UTF-8" and b"coding" not in data[:400] else ""
    return f"not valid {name} (byte 0x{data[offset]:02x} at line {line}, column {column}){cookie}"


def python_syntax_error(path: str, source: str) -> list[Finding]:
    """DL900 from CPython's parser (faster than libcst's), for files no rule needs parsed."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # SyntaxWarnings about the user's code are not ours to print
            compile(source, path, "exec", flags=ast.PyCF_ONLY_AST, dont_inherit=True)
    except SyntaxError as error:
        message = f"Cannot parse: {error.msg}"
        return [diagnostic(SYNTAX_ERROR, path, message, error.lineno or 1, error.offset or 1)]
    except (RecursionError, MemoryError, ValueError) as error:
        deep = isinstance(error, (RecursionError, MemoryError))  # MemoryError: "too complex"
        kind = "too deeply nested (Python's own parser gives up)" if deep else str(error)
        return [diagnostic(SYNTAX_ERROR, path, f"Cannot parse: {kind}")]
    return []


def needs_parse(source: str, tokens: list[tuple[str, ...]], judge_suppressions: bool = False) -> bool:
    """True if some enabled rule's prefilter tokens occur in the text (or a suppression
    comment, when DL901 must judge it)."""
    if judge_suppressions and ("noqa" in source.lower() or "devicelint:" in source):
        return True
    return any(not group or any(t in source for t in group) for group in tokens)

"""libcst's parser, kept from crashing the process on deeply nested input.

libcst's native parser recurses on the C stack. Measured here (libcst 1.x, Python 3.11,
8 MiB main-thread stack): 3,000 nested brackets, 10,000 chained `and`, 10,000 nested
`lambda:` or 100,000 unary minus signs kill the process with SIGSEGV, and 10,000-term
`+` or `.attr` chains take over a minute. A linter that segfaults in a pre-commit hook
blocks every commit, so before libcst sees a file:

* if the text could nest brackets deeper than CPython allows (200 levels), or has a very
  long logical line (where long operator chains live: a 3,000-term `+` chain split over
  lines took 10 s to parse, 10,000 terms 270 s), CPython's own parser, which fails with an
  exception instead of a crash, checks it first; a file it rejects for nesting is a syntax
  error for Python too, and is reported as one;
* libcst parses on a thread with a large stack (one kept for the process), so what CPython accepts (it keeps a flat
  list for `a and b and ...`, libcst a nested tree) cannot overflow the stack either.
"""

from __future__ import annotations

import ast
import os
import queue
import re
import threading
import warnings
from typing import Optional

import libcst as cst

from devicelint import accepted, libcst_core

MAX_NESTING = 200  # CPython's tokenizer refuses deeper brackets ("too many nested parentheses")
LONG_LINE = 4096  # characters; a line this long may hold a long operator chain
PARSE_STACK = 1 << 30  # bytes of (virtual) stack for the parsing thread

_MARKS = re.compile(r"[(\[{]|[)\]}]|\\\r?\n|\n")
# CPython's messages for input too complex to parse; other syntax errors are left to
# libcst, whose grammar may be newer than the running interpreter's.
_COMPLEXITY = ("too many nested parentheses", "too many levels of indentation",
               "too many statically nested blocks", "too complex")


def _risky(source: str) -> bool:
    """True if some bracket nests deeper than CPython allows or some logical line (brackets
    and backslash continuations joined) is very long: only such text can hold the nesting
    or the operator chains that crash or stall libcst. A cheap over-estimate for what
    matters (brackets in strings and comments count too); a miss costs time, not a crash,
    since the parse runs on a large stack anyway."""
    if len(source) <= LONG_LINE and source.count("(") + source.count("[") + source.count("{") <= MAX_NESTING:
        return False
    depth = start = 0
    for mark in _MARKS.finditer(source):
        char = mark.group()
        if char in "([{":
            depth += 1
            if depth > MAX_NESTING:
                return True
        elif char in ")]}":
            depth = max(depth - 1, 0)
        elif char == "\n" and depth == 0:
            if mark.start() - start > LONG_LINE:
                return True
            start = mark.end()
    return len(source) - start > LONG_LINE


def complexity_error(source: str) -> Optional[cst.ParserSyntaxError]:
    """A syntax error if CPython gives up on `source` for nesting or size; else None (at
    once for a text CPython's parser has read already in this process: accepted.holds)."""
    if accepted.holds(source) or not _risky(source):
        return None
    line, column, message = 1, 0, ""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # SyntaxWarning for odd escapes: not ours to show
            compile(source, "<devicelint>", "exec", ast.PyCF_ONLY_AST, dont_inherit=True)
    except SyntaxError as error:
        if not error.msg.startswith(_COMPLEXITY):
            return None
        message, line, column = error.msg, error.lineno or 1, max((error.offset or 1) - 1, 0)
    except RecursionError:
        message = "too deeply nested (Python's own parser gives up: recursion limit)"
    except MemoryError:
        message = "too deeply nested (Python's own parser gives up: too complex)"
    else:
        accepted.note(source)
        return None
    return cst.ParserSyntaxError(message, lines=source.splitlines(True) or [""],
                                 raw_line=line, raw_column=column)


def _skip_validation(self) -> None:
    pass


def _parse(source: str) -> cst.Module:
    """libcst validates every node as the parser builds it (`CSTNode.__post_init__`), which
    costs 10-15% of the parse; a tree the parser built is valid by construction, so the
    check is switched off for the parse only (nodes that rules build for fixes are still
    validated). Parses never run concurrently in one process."""
    original = cst.CSTNode.__dict__.get("__post_init__")
    if original is None:  # a libcst without the hook: parse as usual
        return libcst_core.parse_module(source)
    # The node classes' own `__init__`s call `__post_init__`; quick ones store the same
    # fields without it (libcst_core.QuickInits), once made: by the parent of a pool before
    # it forks, or here once this process has parsed enough text to pay for making them (a
    # few milliseconds: a run of one small file never does).
    global _parsed
    _parsed += len(source)
    inits = libcst_core.quick_inits(make=_parsed > QUICK_INITS_AFTER)
    cst.CSTNode.__post_init__ = _skip_validation
    if inits is not None:
        inits.install()
    try:
        return libcst_core.parse_module(source)
    finally:
        if inits is not None:
            inits.remove()
        cst.CSTNode.__post_init__ = original


QUICK_INITS_AFTER = 100_000  # characters parsed by this process (libcst_core.QuickInits)
_parsed = 0


class _Parser:
    """One thread with a PARSE_STACK stack that parses what it is handed, started on the
    first parse of a process and kept: a thread started per parse cost 10-20% of the
    parse's CPU (a fresh stack and thread state each time, torchvision's files: 0.70-0.93
    s per 80 files vs 0.63-0.78 s on the caller's thread; a kept thread measured the same
    as the caller's). A process forked from one that started it has no such thread: a
    new one is started there (the pid tells)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()  # one parse at a time through the thread
        self._jobs: Optional[queue.SimpleQueue] = None
        self._results: Optional[queue.SimpleQueue] = None
        self._pid = -1

    def parse(self, source: str) -> cst.Module:
        with self._lock:
            if self._pid != os.getpid() and not self._start():
                return _parse(source)  # the platform cannot size thread stacks
            self._jobs.put(source)
            try:
                result = self._results.get()
            except BaseException:  # interrupted while waiting: its answer must not be the next's
                self._pid = -1
                raise
        if isinstance(result, BaseException):
            raise result
        return result

    def _start(self) -> bool:
        try:
            previous = threading.stack_size(PARSE_STACK)
        except (ValueError, RuntimeError):
            return False
        jobs: queue.SimpleQueue = queue.SimpleQueue()
        results: queue.SimpleQueue = queue.SimpleQueue()
        try:
            thread = threading.Thread(target=_serve, args=(jobs, results), name="devicelint-parse",
                                      daemon=True)
            thread.start()
        finally:
            threading.stack_size(previous)
        self._jobs, self._results, self._pid = jobs, results, os.getpid()
        return True


def _serve(jobs: queue.SimpleQueue, results: queue.SimpleQueue) -> None:
    while True:
        source = jobs.get()
        try:
            outcome = _parse(source)
        except BaseException as exc:  # noqa: BLE001 - re-raised on the caller's thread
            outcome = exc
        results.put(outcome)
        del outcome  # the tree is the caller's: not kept alive here until the next parse


_PARSER = _Parser()


def parse_module(source: str) -> cst.Module:
    """`libcst.parse_module` that raises (ParserSyntaxError, RecursionError, MemoryError,
    ValueError) instead of crashing on pathological nesting."""
    error = complexity_error(source)
    if error is not None:
        raise error
    return _PARSER.parse(source)

"""devicelint/safe_parse.py: libcst parses on one kept thread with a large stack."""

from __future__ import annotations

import multiprocessing
import os
import threading

import libcst as cst
import pytest

from devicelint import safe_parse


def _parsed_on(monkeypatch) -> list[int]:
    threads: list[int] = []
    original = safe_parse._parse

    def recording(source: str) -> cst.Module:
        threads.append(threading.get_ident())
        return original(source)

    monkeypatch.setattr(safe_parse, "_parse", recording)
    return threads


def test_parses_run_on_one_kept_thread_with_a_large_stack(monkeypatch) -> None:
    threads = _parsed_on(monkeypatch)
    first = safe_parse.parse_module("x = 1\n")
    second = safe_parse.parse_module("def f():\n    return 2\n")
    assert first.deep_equals(cst.parse_module("x = 1\n"))
    assert second.deep_equals(cst.parse_module("def f():\n    return 2\n"))
    assert len(threads) == 2 and threads[0] == threads[1]  # not a new thread per parse
    assert threads[0] != threading.get_ident()  # not the caller's (small) stack


def test_a_parse_error_reaches_the_caller_and_the_thread_goes_on() -> None:
    with pytest.raises(cst.ParserSyntaxError):
        safe_parse.parse_module("def f(:\n")
    assert safe_parse.parse_module("y = 2\n").deep_equals(cst.parse_module("y = 2\n"))


def _parse_in_child(queue) -> None:
    queue.put(safe_parse.parse_module("z = 3\n").code)


@pytest.mark.skipif("fork" not in multiprocessing.get_all_start_methods(), reason="no fork here")
def test_a_forked_process_parses_on_a_thread_of_its_own() -> None:
    safe_parse.parse_module("a = 1\n")  # the parent's thread exists before the fork
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    child = context.Process(target=_parse_in_child, args=(queue,))
    child.start()
    try:
        assert queue.get(timeout=60) == "z = 3\n"
    finally:
        child.join(timeout=60)
    assert child.exitcode == 0
    assert safe_parse._PARSER._pid == os.getpid()


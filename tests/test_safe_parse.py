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



# -- quick node construction (libcst_core.QuickInits) and the parser's cheap imports ---------

_QUICK = """
import json, sys
from devicelint import libcst_core
libcst_core.install()
from devicelint import safe_parse
import libcst as cst
from libcst._nodes.base import CSTNode
sources = [open(path, encoding="utf-8").read() for path in sys.argv[1:]]
safe_parse.QUICK_INITS_AFTER = 0  # quick from the first parse
quick = [safe_parse._parse(source) for source in sources]
inits = libcst_core.quick_inits()
swapped = {cls: cls.__init__ for cls, _quick, _original in inits.swaps}
restored = all(cls.__dict__["__init__"] is original for cls, _quick, original in inits.swaps)
libcst_core._quick_inits = None  # the nodes' own __init__s, as libcst makes them
safe_parse.QUICK_INITS_AFTER = 1 << 62
plain = [safe_parse._parse(source) for source in sources]
plain_made = libcst_core._quick_inits is None

def same(a, b):  # every slot of every node, the same type and value
    stack, nodes = [(a, b)], 0
    while stack:
        x, y = stack.pop()
        if type(x) is not type(y):
            return False
        if isinstance(x, CSTNode):
            nodes += 1
            stack.extend((getattr(x, k), getattr(y, k)) for k in type(x).__slots__)
        elif isinstance(x, (list, tuple)):
            if len(x) != len(y):
                return False
            stack.extend(zip(x, y))
        elif x != y:
            return False
    return nodes

try:  # a node made outside a parse is validated by libcst's own __init__, as before
    cst.Name("not a name")
    validated = False
except cst.CSTValidationError:
    validated = True
print(json.dumps({
    "classes": len(inits.swaps), "restored": restored, "validated": validated, "plain": plain_made,
    "same": [same(a, b) for a, b in zip(quick, plain)],
    "code": [a.code == b.code for a, b in zip(quick, plain)],
}))
"""


def test_quick_node_construction_builds_the_same_tree(tmp_path) -> None:
    """While libcst's parser builds a tree, its node classes take quick `__init__`s that store
    the same slots (libcst_core.QuickInits): every slot of every node is the same as with the
    classes' own `__init__`s, those are back after the parse, and a node a rule builds is
    still validated. In a fresh process (the classes' state is the process's)."""
    import json
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    paths = sorted((root / "fixtures").rglob("*.py"))[:60] + [root / "devicelint" / "semantic" / "model.py"]
    extra = tmp_path / "odd.py"
    extra.write_text("\ufeffdef f(a, /, *b, c=1, **d):\n    return [i async for i in a] if b else {**d}\n"
                     "match x:\n    case [1, *rest] if rest:\n        pass\n"
                     "x = f'{a!r:>{w}}' + t'{b}' if 0 else lambda: (yield)\n", encoding="utf-8")
    out = subprocess.run([sys.executable, "-c", _QUICK, *map(str, paths), str(extra)],
                         capture_output=True, text=True, check=True, cwd=root).stdout
    report = json.loads(out)
    assert report["classes"] > 100 and report["restored"] and report["validated"] and report["plain"]
    assert all(report["same"]) and len(report["same"]) == len(paths) + 1
    assert all(report["code"])


def test_the_parsers_imports_fall_back_to_a_plain_call(monkeypatch) -> None:
    """The native parser runs with a cheap `__import__` (libcst_core._native_parse); a parser
    that fails under it (an import of a module not yet imported) is called as usual."""
    from devicelint import libcst_core

    calls = []

    def native(source, encoding):
        calls.append(encoding)
        if len(calls) == 1:
            raise KeyError("libcst.something_new")  # what PyImport_Import raises there
        return cst.parse_module(source)

    tree = libcst_core._native_parse(native, "x = 1\n")
    assert calls == ["utf-8", "utf-8"] and tree.deep_equals(cst.parse_module("x = 1\n"))

"""devicelint.accepted: a text CPython's parser read already is not parsed again by the
syntax checks (DL900, the guard before libcst), and only that exact text is taken as read."""

from __future__ import annotations

import pytest

from devicelint import accepted, gate, project_index, runner, safe_parse
from devicelint.diagnostics import SYNTAX_ERROR

# Long enough to be risky (a logical line over safe_parse.LONG_LINE): the guard compiles it.
LONG = "x = [" + ", ".join(str(i) for i in range(2000)) + "]\n"


@pytest.fixture(autouse=True)
def _fresh():
    accepted.clear()
    yield
    accepted.clear()


def test_a_text_the_index_parsed_is_not_compiled_again_by_the_guard(monkeypatch) -> None:
    assert safe_parse._risky(LONG)
    assert project_index._parse(LONG) is not None
    assert accepted.holds(LONG)
    compiled = []
    monkeypatch.setattr(safe_parse, "_risky", lambda text: compiled.append(text) or True)
    assert safe_parse.complexity_error(LONG) is None
    assert compiled == []
    # Another text (the same length, one character changed) is still checked.
    other = LONG.replace("1999", "1998")
    assert len(other) == len(LONG) and not accepted.holds(other)
    assert safe_parse.complexity_error(other) is None
    assert compiled == [other]


def test_a_rejected_text_is_never_noted() -> None:
    broken = "def f(:\n    pass\n" + LONG
    assert project_index._parse(broken) is None
    assert gate.facts_of("x.py", broken) is None
    assert not accepted.holds(broken)
    deep = "x = " + "-" * 100_000 + "1\n"  # CPython gives up: the guard reports it
    assert safe_parse.complexity_error(deep) is not None
    assert not accepted.holds(deep)


def test_the_gate_notes_what_it_parsed() -> None:
    source = "import os\n" + LONG
    assert gate.facts_of("x.py", source) is not None
    assert accepted.holds(source)


def test_a_syntax_error_is_still_reported_after_a_similar_text_was_accepted() -> None:
    good = "import os\nx = 1\n"
    bad = "import os\nx = (\n"
    assert project_index._parse(good) is not None
    found = runner.lint_bytes("a.py", "a.py", bad.encode(), [SYNTAX_ERROR])
    assert [f.code for f in found] == [SYNTAX_ERROR]
    assert runner.lint_bytes("b.py", "b.py", good.encode(), [SYNTAX_ERROR]) == []


def test_the_oldest_texts_are_dropped_past_the_budget(monkeypatch) -> None:
    monkeypatch.setattr(accepted, "KEPT_CHARS", 40)  # two of the 18-character texts
    accepted.note("a = 1\n" * 3)
    accepted.note("b = 2\n" * 3)
    accepted.note("c = 3\n" * 3)
    assert not accepted.holds("a = 1\n" * 3)
    assert accepted.holds("b = 2\n" * 3) and accepted.holds("c = 3\n" * 3)

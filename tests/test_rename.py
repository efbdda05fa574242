"""Renaming what a file binds changes nothing the code does, so it must change no finding (issue
12, point 9): every fixture is linted with all default rules before and after tests/renaming.py
renames its own identifiers, and the findings (code, line, column) must be the same.

Two lists say where that does not hold yet:
- HINT_ONLY: a finding that may rest on a name, as a last and labelled hint (its message says it
  rests on a name). Only true name hints belong here, each with its reason.
- NAME_DEPENDENT_TODAY: fixtures whose findings change today because a rule decides by a name
  (`model`, `optimizer`, `loader`, ...). Strict xfail: a fixture that the rewrite fixes fails the
  test until it leaves the list, so the list can only shrink, to empty.

bench/rename.py prints the same comparison as figures per rule."""

from __future__ import annotations

import random
import re
from pathlib import Path

import libcst as cst
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import fuzzing
from conftest import FIXTURES
from renaming import default_rules, findings_before_after, rename_source

FIXTURE_FILES = sorted(
    p for p in FIXTURES.glob("DL*/*.py") if p.name.startswith(("bad_", "good_", "fix_"))
)


def _key(path: Path) -> str:
    return f"{path.parent.name}/{path.name}"


# fixture -> why its findings may rest on a name (each differing finding must say so).
HINT_ONLY: dict[str, str] = {
    "DL002/bad_device_by_name.py": "the device is a parameter named `device` that no call fills",
    "DL015/bad_device_by_name.py": "the device is a parameter named `device` that no call fills",
    "DL016/bad_device_by_name.py": "the device is an index computed by calls the model does not know, "
                                   "named `device`",
}
# A finding that rests on a name says so in its message (issue 12, point 9).
NAME_HINT = re.compile(r"\bnam(e|ed)\b", re.IGNORECASE)

# Findings that change when the file's own names change, measured with bench/rename.py -v
# before the semantic-model rewrite (what is lost or gained, in (code, line) form).
NAME_DEPENDENT_TODAY: dict[str, str] = {
}


def _params(paths):
    params = []
    for path in paths:
        reason = NAME_DEPENDENT_TODAY.get(_key(path))
        marks = []
        if reason:
            marks.append(pytest.mark.xfail(strict=True, raises=AssertionError,
                                           reason=f"name-dependent today: {reason}"))
        params.append(pytest.param(path, marks=marks, id=_key(path)))
    return params


@pytest.fixture(scope="module")
def rules():
    return default_rules()


@pytest.mark.parametrize("path", _params(FIXTURE_FILES))
def test_findings_survive_renaming(path: Path, rules) -> None:
    source = path.read_text(encoding="utf-8")
    before, after, renaming = findings_before_after(_key(path), source, rules)
    assert renaming.mapping, "nothing was renamed: the test would prove nothing"
    if _key(path) in HINT_ONLY:
        from devicelint.engine import lint_source

        assert before != after, f"{_key(path)} no longer differs: remove it from HINT_ONLY"
        messages = {(f.code, f.line, f.column): f.message
                    for f in lint_source(_key(path), source, rules).findings}
        unlabelled = [k for k in before - after if not NAME_HINT.search(messages[k])]
        assert not unlabelled, f"lost findings that do not say they rest on a name: {unlabelled}"
        return
    assert before == after, (
        f"lost: {sorted(before - after)}, new: {sorted(after - before)} "
        f"(renamed: {renaming.mapping})"
    )


def test_lists_name_existing_fixtures() -> None:
    names = {_key(p) for p in FIXTURE_FILES}
    for listed in list(NAME_DEPENDENT_TODAY) + list(HINT_ONLY):
        assert listed in names, f"{listed} is not a fixture"
    assert not set(NAME_DEPENDENT_TODAY) & set(HINT_ONLY)


# -- the renamer itself -------------------------------------------------------------------------

@pytest.mark.parametrize("path", FIXTURE_FILES, ids=_key)
def test_renamed_fixture_parses_compiles_and_is_stable(path: Path) -> None:
    renaming = rename_source(path.read_text(encoding="utf-8"))
    cst.parse_module(renaming.renamed)
    compile(renaming.renamed, str(path), "exec")  # duplicate parameters, bad nonlocal: errors
    again = rename_source(renaming.renamed)
    assert again.renamed == renaming.renamed
    assert again.mapping == {new: new for new in renaming.mapping.values()}
    assert len(set(renaming.mapping.values())) == len(renaming.mapping), "two names merged"


def _rename(source: str) -> str:
    return rename_source(source).renamed


def test_bindings_of_every_kind_are_renamed() -> None:
    source = (
        "import torch\n"
        "count = 0\n"
        "def train(model, lr=0.1, *args, steps, **kwargs):\n"
        "    global count\n"
        "    count += 1\n"
        "    total: float = 0.0\n"
        "    for i, (a, b) in enumerate(zip(args, args)):\n"
        "        total += a * b\n"
        "    with open(__file__) as fh:\n"
        "        pass\n"
        "    squares = [j * j for j in range(3) if (k := j) > 0]\n"
        "    try:\n"
        "        pass\n"
        "    except ValueError as error:\n"
        "        print(error)\n"
        "    def inner():\n"
        "        nonlocal total\n"
        "        total = 1\n"
        "    return model, lr, steps, kwargs, squares, k, input\n"
        "train(None, lr=0.2, steps=3)\n"
    )
    assert _rename(source) == (
        "import torch\n"
        "v1 = 0\n"
        "def v2(v3, v4=0.1, *v5, v6, **v7):\n"
        "    global v1\n"
        "    v1 += 1\n"
        "    v8: float = 0.0\n"
        "    for v9, (v10, v11) in enumerate(zip(v5, v5)):\n"
        "        v8 += v10 * v11\n"
        "    with open(__file__) as v12:\n"
        "        pass\n"
        "    v13 = [v14 * v14 for v14 in range(3) if (v15 := v14) > 0]\n"
        "    try:\n"
        "        pass\n"
        "    except ValueError as v16:\n"
        "        print(v16)\n"
        "    def v17():\n"
        "        nonlocal v8\n"
        "        v8 = 1\n"
        "    return v3, v4, v6, v7, v13, v15, input\n"
        "v2(None, v4=0.2, v6=3)\n"
    )


def test_imports_attributes_outside_keywords_class_bodies_and_dunders_are_kept() -> None:
    source = (
        "import torch\n"
        "import torch.nn as nn\n"
        "from torch.utils.data import DataLoader as Loader\n"
        "class Net(nn.Module):\n"
        "    scale = 2\n"
        "    def __init__(self, width):\n"
        "        super().__init__()\n"
        "        self.model = nn.Linear(width, width)\n"
        "    def forward(self, x):\n"
        "        return self.model(x) * self.scale\n"
        "model = Net(width=4)\n"
        "loader = Loader([torch.zeros(4)], batch_size=1)\n"
        "optimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "if __name__ == '__main__':\n"
        "    print(len(loader), optimizer)\n"
    )
    assert _rename(source) == (
        "import torch\n"
        "import torch.nn as nn\n"
        "from torch.utils.data import DataLoader as Loader\n"
        "class v1(nn.Module):\n"
        "    scale = 2\n"
        "    def __init__(v2, v3):\n"
        "        super().__init__()\n"
        "        v2.model = nn.Linear(v3, v3)\n"
        "    def forward(v2, v4):\n"
        "        return v2.model(v4) * v2.scale\n"
        "v5 = v1(v3=4)\n"
        "v6 = Loader([torch.zeros(4)], batch_size=1)\n"
        "v7 = torch.optim.SGD(v5.parameters(), lr=0.1)\n"
        "if __name__ == '__main__':\n"
        "    print(len(v6), v7)\n"
    )


def test_match_captures_are_renamed_and_class_pattern_keywords_kept() -> None:
    source = (
        "def f(point):\n"
        "    match point:\n"
        "        case Point(x=px) as whole:\n"
        "            return px, whole\n"
        "        case [x, *rest]:\n"
        "            return x, rest\n"
        "        case {'k': value, **others}:\n"
        "            return value, others\n"
    )
    assert _rename(source) == (
        "def v1(v2):\n"
        "    match v2:\n"
        "        case Point(x=v3) as v4:\n"
        "            return v3, v4\n"
        "        case [v5, *v6]:\n"
        "            return v5, v6\n"
        "        case {'k': v7, **v8}:\n"
        "            return v7, v8\n"
    )


def test_names_reachable_in_ways_the_renamer_cannot_follow_are_kept() -> None:
    renaming = rename_source(
        "import functools\n"
        "def scaled(x, factor=2):\n"
        "    return x * factor\n"
        "class Head:\n"
        "    def __call__(self, x, mask=None):\n"
        "        return x\n"
        "def run(head, fn, options):\n"
        "    a = head(1, mask=None)\n"              # may be Head.__call__
        "    b = functools.partial(scaled, factor=3)\n"  # own function passed outside
        "    c = fn(1, factor=4)\n"
        "    d = scaled(**options)\n"               # string keys into the file's own code
        "    return a, b, c, d\n"
        "run(Head(), scaled, {'x': 1})\n"
    )
    assert {"mask", "factor", "x"} <= set(renaming.kept)
    assert "head" in renaming.mapping and "options" in renaming.mapping
    assert "def v1(x, factor=2):" in renaming.renamed


def test_shadowed_builtins_stay_builtins_and_names_never_merge() -> None:
    source = (
        "def f(input):\n"
        "    return input * 2\n"
        "def g():\n"
        "    return input\n"
        "v1 = 3\n"  # an existing v1 keeps its number free for nobody else
        "v2_ = f(v1)\n"
    )
    renaming = rename_source(source)
    assert "    return input\n" in renaming.renamed  # the builtin in g
    assert len(set(renaming.mapping.values())) == len(renaming.mapping)
    compile(renaming.renamed, "<renamed>", "exec")


def test_string_annotations_and_reflection_keep_names() -> None:
    renaming = rename_source(
        "class Net:\n    pass\n"
        "def build() -> 'Net':\n    return Net()\n"
        "learning_rate = 0.1\n"
        "print(globals()['learning_rate'])\n"
    )
    assert renaming.kept == {
        "Net": "used inside a string annotation",
        "learning_rate": "also a string in a file that reflects on names",
    }


PROGRAM = '''
import functools
total = 0
def bump(step=1):
    global total
    total += step
    return total
def counter():
    count = 0
    def inc(by):
        nonlocal count
        count += by
        return count
    return inc
class Box:
    size = 3
    def __init__(self, content, scale=1):
        self.content = content
        self.scale = scale
    def grow(self, by=1):
        return Box(self.content, scale=self.scale + by)
def describe(value):
    match value:
        case Box(content=[first, *rest]) as box:
            return (first, rest, box.scale)
        case {"k": v, **others}:
            return (v, sorted(others))
        case _:
            return None
inc = counter()
results = [bump(step=2), bump(), inc(by=5), inc(2)]
box = Box([1, 2, 3], scale=2).grow(by=3)
results.append(describe(box))
results.append(describe({"k": 1, "z": 2}))
results.append([n * m for n in range(3) for m in range(n) if (last := m) >= 0])
results.append(last)
results.append(functools.reduce(lambda acc, item: acc + item, range(5), 0))
try:
    raise KeyError("boom")
except KeyError as error:
    results.append(str(error))
results.append((Box.size, len(results), input.__name__))
'''


def test_renamed_program_computes_the_same() -> None:
    renaming = rename_source(PROGRAM)
    original: dict = {}
    exec(compile(PROGRAM, "<original>", "exec"), original)
    renamed: dict = {}
    exec(compile(renaming.renamed, "<renamed>", "exec"), renamed)
    assert renamed[renaming.mapping["results"]] == original["results"]
    assert {"total", "bump", "step", "inc", "value", "first", "last", "error"} <= set(
        renaming.mapping)
    # `inc(by=5)` calls what counter() returned: a call the renamer cannot resolve.
    assert renaming.kept["by"] == "keyword at a call the renamer cannot resolve"


def test_columns_map_back_to_the_original() -> None:
    source = "import torch\nfor row in rows_of_data:\n    moved_row = row.to('cuda')\n"
    renaming = rename_source(source)
    line = renaming.renamed.splitlines()[2]
    assert line == "    v2 = v1.to('cuda')"
    # 1-based columns: `v1.to(...)` starts at 10 in the renamed text, `row.to` at 17.
    assert renaming.original_column(3, line.index("v1") + 1) == 17
    assert renaming.original_column(3, line.index("(") + 1) == source.splitlines()[2].index("(") + 1
    assert renaming.original_column(3, 1) == 1


# -- property: renaming any program is valid and stable -------------------------------------------

PROPERTY = settings(max_examples=20, deadline=None, derandomize=True, database=None,
                    suppress_health_check=list(HealthCheck))


def _check_property(source: str) -> None:
    try:
        compile(source, "<generated>", "exec")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return
    try:
        renaming = rename_source(source)
    except (cst.ParserSyntaxError, RecursionError):
        return
    compile(renaming.renamed, "<renamed>", "exec")
    again = rename_source(renaming.renamed)
    assert again.renamed == renaming.renamed


@PROPERTY
@given(st.randoms(use_true_random=False))
@pytest.mark.slow
def test_renaming_torch_programs_twice_is_stable(rng: random.Random) -> None:
    _check_property(fuzzing.header() + fuzzing.torch_program(rng))


@PROPERTY
@given(st.data())
@pytest.mark.slow
def test_renaming_generated_programs_twice_is_stable(data) -> None:
    import hypothesmith

    _check_property(data.draw(hypothesmith.from_node()))

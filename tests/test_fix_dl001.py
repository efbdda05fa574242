"""DL001's unsafe fix (hoist one batched transfer out of a plain per-row copy), verified by
execution: the fixed fixture computes the same values as the original, on the CPU and (with
the `gpu` tests) on a CUDA device, and the differences the rule's "Fix safety" section names
(shared storage, strides) are real.

The byte-for-byte before/after check and idempotency are `tests/test_fix.py::test_fixture_pair`.
"""

from __future__ import annotations

import runpy
import textwrap
from pathlib import Path

import pytest
import torch  # in the dev extra: a broken install must fail, not skip

from devicelint.engine import enabled_rules, lint_source  # noqa: E402
from devicelint.fix import fix_text  # noqa: E402

from conftest import FIXTURES  # noqa: E402
from fixture_markers import expected_findings  # noqa: E402

PAIR = FIXTURES / "DL001" / "fix_hoist.py"
RULES = enabled_rules(["DL001"])


def _fixed_text(path: Path) -> str:
    source = path.read_text(encoding="utf-8")
    result = fix_text(str(path), source, RULES, lambda fix: True)
    assert result.messages == []
    return result.text


def _results(path: Path) -> dict:
    return runpy.run_path(str(path), run_name="dl001_fixture")["results"]()


def _as_list(value):
    return list(value) if isinstance(value, list) else [value]


def _assert_same_values(original: dict, fixed: dict) -> None:
    assert original.keys() == fixed.keys()
    for key in original:
        before, after = _as_list(original[key]), _as_list(fixed[key])
        assert isinstance(original[key], list) == isinstance(fixed[key], list), key
        assert len(before) == len(after), key
        for a, b in zip(before, after):
            assert a.shape == b.shape and a.dtype == b.dtype and a.device == b.device, key
            assert torch.equal(a, b), key


def _fixed_copy(tmp_path: Path) -> Path:
    fixed = tmp_path / "fix_hoist_fixed.py"
    fixed.write_text(_fixed_text(PAIR), encoding="utf-8")
    return fixed


def test_markers_match_the_findings_and_fixes() -> None:
    """Every `# expect: DL001` line is reported, nothing else; the functions `results` and
    the `__main__` block get fixes, `no_fix` none."""
    source = PAIR.read_text(encoding="utf-8")
    findings = [f for f in lint_source(str(PAIR), source, RULES).findings if f.code == "DL001"]
    assert {(f.line, f.code) for f in findings} == expected_findings(PAIR)
    no_fix_start = source.splitlines().index("def no_fix():") + 1
    main_start = source.splitlines().index('if __name__ == "__main__":') + 1
    for finding in findings:
        in_no_fix = no_fix_start < finding.line < main_start
        assert (finding.fix is None) == in_no_fix, finding.line
        assert finding.fix is None or not finding.fix.safe


def test_expected_file_is_what_the_fixer_writes() -> None:
    expected = PAIR.with_name(PAIR.name + ".expected").read_text(encoding="utf-8")
    assert _fixed_text(PAIR) == expected


def test_fixed_fixture_computes_the_same_values(tmp_path: Path) -> None:
    _assert_same_values(_results(PAIR), _results(_fixed_copy(tmp_path)))


def test_fixed_fixture_runs_as_a_script(tmp_path: Path) -> None:
    runpy.run_path(str(_fixed_copy(tmp_path)), run_name="__main__")


def test_fixed_rows_share_one_storage(tmp_path: Path) -> None:
    """The documented difference: a dtype conversion per row makes separate tensors; the
    hoisted conversion makes row views of one tensor (what a move to a GPU does too)."""
    original, fixed = _results(PAIR)["spread"], _results(_fixed_copy(tmp_path))["spread"]
    pointers = lambda rows: {r.untyped_storage().data_ptr() for r in rows}  # noqa: E731
    assert len(pointers(original)) == len(original)
    assert len(pointers(fixed)) == 1


def _fixes(source: str) -> list:
    result = lint_source("m.py", textwrap.dedent(source), RULES)
    findings = [f for f in result.findings if f.code == "DL001"]
    assert findings, "the snippet should be reported"
    return [f.fix for f in findings if f.fix is not None]


PRELUDE = """\
import numpy as np
import torch
device = torch.device("cuda")
data = torch.randn(8, 4)
"""


@pytest.mark.parametrize(
    "snippet",
    [
        # numpy rows: torch.as_tensor of the whole array fails on negative strides
        "arr = np.zeros((4, 2))\nrows = [torch.as_tensor(r, device=device) for r in arr]\n",
        # filtered, nested, or walked with enumerate
        "rows = [r.to(device) for r in data if r.sum() > 0]\n",
        "rows = [r.to(device) for r in data for _ in range(2)]\n",
        "out = []\nfor k, r in enumerate(data):\n    out.append(r.to(device))\n",
        # the row is changed, or the target depends on the row
        "rows = [(r + 1).to(device) for r in data]\n",
        "rows = [data[i].to(device, non_blocking=i > 0) for i in range(len(data))]\n",
        # arguments that do not mean the same for the batch, or run code per row
        "rows = [r.to(device, memory_format=torch.contiguous_format) for r in data]\n",
        "rows = [r.to(torch.device(pick())) for r in data]\n",
        # an index over another tensor's rows
        "other = torch.randn(8, 4)\nrows = [data[i].to(device) for i in range(len(other))]\n",
        # `list` is rebound
        "list = None\nrows = [r.to(device) for r in data]\n",
        # the loop does more, has an else, a comment in the span, or its variable is used later
        "out = []\nfor r in data:\n    out.append(r.to(device))\n    print(len(out))\n",
        "out = []\nfor r in data:\n    out.append(r.to(device))\nelse:\n    pass\n",
        "out = []\nfor r in data:  # rows\n    out.append(r.to(device))\n",
        "out = []\nfor r in data:\n    # each row\n    out.append(r.to(device))\n",
        "out = []\nfor r in data:\n    out.append(r.to(device))\nlast = r\n",
        "out = []\nfor r in data:\n    out.append(r.to(device))\nparts = [q for q in r]\n",
        # `out` is not known to be a list
        "def f(out):\n    for r in data:\n        out.append(r.to(device))\n",
    ],
)
def test_no_fix_where_the_rewrite_is_not_plainly_equivalent(snippet: str) -> None:
    assert _fixes(PRELUDE + snippet) == []


def test_fix_is_unsafe_and_keeps_the_line_comment() -> None:
    source = PRELUDE + "out = []\nfor r in data:\n    out.append(r.to(device))  # keep\n"
    (fix,) = _fixes(source)
    assert not fix.safe
    result = fix_text("m.py", source, RULES, lambda f: True)
    assert result.text.endswith("out = []\nout.extend(data.to(device))  # keep\n")


def test_a_comprehension_of_its_own_does_not_block_the_loop_fix() -> None:
    source = PRELUDE + (
        "out = []\nfor r in data:\n    out.append(r.to(device))\n"
        "sizes = [r.numel() for r in out]\n"
    )
    (fix,) = _fixes(source)
    assert fix.content == "out.extend(data.to(device))"


# -- on a GPU: the same values, and the documented differences --------------------------------


@pytest.mark.gpu
def test_fixed_fixture_same_values_on_gpu(tmp_path: Path) -> None:
    original, fixed = _results(PAIR), _results(_fixed_copy(tmp_path))
    assert original["batch"].is_cuda and fixed["batch"].is_cuda
    _assert_same_values(original, fixed)
    shared = {r.untyped_storage().data_ptr() for r in fixed["rows_gpu"]}
    separate = {r.untyped_storage().data_ptr() for r in original["rows_gpu"]}
    assert len(shared) == 1 and len(separate) == len(original["rows_gpu"])


@pytest.mark.gpu
def test_documented_differences_on_gpu() -> None:
    x = torch.randn(4, 6).t()  # not contiguous
    rows = [r.to("cuda") for r in x]
    hoisted = list(x.to("cuda"))
    assert all(r.is_contiguous() for r in rows)
    assert not any(r.is_contiguous() for r in hoisted)
    assert torch.stack([r.to("cuda") for r in x]).is_contiguous()
    assert not x.to("cuda").is_contiguous()
    for a, b in zip(rows, hoisted):
        assert torch.equal(a, b)

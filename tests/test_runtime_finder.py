"""The finder (issue 14): under `devicelint confirm`, pitfalls seen at runtime on lines the
static pass did not flag are reported with status `found` and their rule's code.

tests/data/runtime/finder_train.py carries `# finds: TAG` markers on the lines it expects.
Two runs on the simulated device: the child with no static finding at all (every pitfall
must then be found by the finder alone), and `devicelint confirm` as a user runs it.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest

from conftest import ROOT
from devicelint.finding import Finding
from devicelint.runtime.launch import run_child
from devicelint.runtime.plan import plan_for
from runtime_helpers import DATA

SCRIPT = DATA / "finder_train.py"


def marker(tag: str) -> int:
    for number, text in enumerate(SCRIPT.read_text().splitlines(), 1):
        if re.search(rf"# finds: {re.escape(tag)}\b", text):
            return number
    raise AssertionError(f"no marker {tag}")


@pytest.fixture(scope="module")
def finder_child() -> dict:
    """The child run with the finder on and no flagged line."""
    plan = plan_for([], ["python", str(SCRIPT)], "sim")
    plan.find_under([str(SCRIPT)])
    child = run_child(plan, 300, quiet_output=True)
    assert child.result is not None, child.stderr_tail
    assert child.result["exit_code"] == 0, child.stderr_tail
    return child.result


@pytest.fixture(scope="module")
def finder_only(finder_child) -> dict:
    """{(line, code): found} of that run."""
    return {(hit["line"], hit["code"]): hit for hit in finder_child["found"]}


def test_every_pitfall_found_without_static_findings(finder_only) -> None:
    expected = {
        (marker("per-row"), "DL001"),  # rows of one host tensor, one copy each
        (marker("sync-helper"), "DL004"),  # .item() in a helper called per step
        (marker("empty-cache"), "DL011"),
        (marker("pageable-nb"), "DL009"),
        (marker("pageable-nb"), "DL016"),  # the same ones(16) copied again every step
        (marker("mismatch"), "DL002"),
    }
    assert set(finder_only) == expected, sorted(finder_only)
    for hit in finder_only.values():
        assert hit["confirmation"]["status"] == "found"


def test_helper_lines_name_their_call_site(finder_only) -> None:
    per_row = finder_only[(marker("per-row"), "DL001")]
    assert [c["line"] for c in per_row["callers"]] == [marker("per-row-call")]
    conf = per_row["confirmation"]
    assert conf["count"] == 128 and conf["bytes"] == 128 * 16 * 4
    assert conf["measured_ms"] > conf["counterfactual_ms"] and conf["estimated"]
    sync = finder_only[(marker("sync-helper"), "DL004")]
    assert [c["line"] for c in sync["callers"]] == [marker("sync-call")]
    assert sync["confirmation"]["count"] == sum(range(1, 9))  # mean of a growing list


def test_mismatch_names_the_cpu_module_and_where_it_was_built(finder_only) -> None:
    conf = finder_only[(marker("mismatch"), "DL002")]["confirmation"]
    assert "Expected all tensors to be on the same device" in conf["error"]
    assert conf["origin"]["kind"] == "module" and conf["origin"]["module"] == "Linear"
    assert conf["origin"]["line"] == marker("cpu-origin")
    assert f"built at {os.path.relpath(SCRIPT)}:{marker('cpu-origin')}" in conf["summary"] or \
        f":{marker('cpu-origin')}" in conf["summary"]


def test_new_data_each_step_is_not_a_per_row_copy(finder_only) -> None:
    line = marker("nothing")
    assert not [code for (at, code) in finder_only if at == line]


@pytest.fixture(scope="module")
def confirmed(tmp_path_factory) -> dict:
    out = tmp_path_factory.mktemp("finder") / "out.json"
    proc = subprocess.run(
        [sys.executable, "-m", "devicelint.cli", "confirm", str(SCRIPT), "--device", "sim",
         "--format", "json", "-o", str(out), "--", "python", str(SCRIPT)],
        cwd=ROOT, capture_output=True, text=True, timeout=600,
        env={**os.environ, "CUDA_VISIBLE_DEVICES": ""})
    assert out.exists(), proc.stderr[-2000:]
    return {"proc": proc, "data": json.loads(out.read_text())}


def test_confirm_reports_the_unflagged_lines(confirmed) -> None:
    """The issue's example (an nn.Linear built on the CPU called on torch.stack of device
    rows) is reported whether the static pass flags it (confirmed) or not (found); lines it
    does not flag are `found`, and no line is reported twice for one rule."""
    assert confirmed["proc"].returncode == 1  # a pitfall happened
    findings = confirmed["data"]["findings"]
    mismatch = [f for f in findings if f["line"] == marker("mismatch")]
    assert [(f["code"], f["confirmation"]["status"] in ("confirmed", "found"))
            for f in mismatch] == [("DL002", True)], mismatch
    found = [f for f in findings if f["confirmation"]["status"] == "found"]
    assert found, "the static pass flags every line of the script: nothing left to find"
    static = {(f["line"], f["code"]) for f in findings if f not in found}
    assert not static & {(f["line"], f["code"]) for f in found}
    assert mismatch[0]["confirmation"]["level"] == "crash"


@pytest.fixture(scope="module")
def found_findings(finder_child) -> list:
    """The finder's hits as the parent turns them into findings (status `found`)."""
    from devicelint.runtime.command import _found_findings
    from devicelint.runtime.rank import rank

    run = {"exit_code": 0, "found": list(finder_child["found"])}
    findings = _found_findings([run], None)
    assert {f.confirmation["status"] for f in findings} == {"found"}
    return rank(findings, lambda f: finder_child["run_seconds"])


@pytest.mark.parametrize("fmt", ["text", "json", "sarif", "github", "gitlab", "rdjson", "html"])
def test_found_status_and_code_in_every_format(found_findings, fmt: str) -> None:
    from devicelint.reporters import ReportContext, renderer
    from devicelint.reporters.html import render_html
    from devicelint.runtime.report import format_text

    if fmt == "text":
        text = format_text(found_findings, [], fixture_mode=False)
    elif fmt == "html":
        text = render_html(found_findings, runs=[])
    else:
        text = renderer(fmt)(found_findings, ReportContext(files=1))
    line = marker("mismatch")
    status = {"json": '"status": "found"', "html": ">found</span>"}.get(fmt, "[found]")
    assert status in text and "DL002" in text and "DL001" in text
    assert re.search(rf"\b{line}\b", text)
    if fmt == "sarif":  # a helper's line names its call site
        assert f'"startLine": {marker("per-row-call")}' in text


def test_dataloader_workers_are_said_not_observed(finder_child) -> None:
    from devicelint.runtime.report import format_text

    missed = finder_child["unobserved"]
    assert [(m["line"], m["workers"]) for m in missed] == [(marker("workers"), 2)]
    run = {"target": "train.py", "exit_code": 0, "unobserved": missed}
    text = format_text([], [run], fixture_mode=False)
    assert f":{marker('workers')}: not observed: 2 worker processes ran" in text


def test_gpu_device_errors_are_recognised() -> None:
    """The texts a real GPU raises for a CPU GRU or Conv1d on a CUDA input (not the generic
    one the simulated device raises) count as device mismatches; a dtype mismatch does not."""
    from devicelint.runtime.tracker import ERROR_MARKERS
    from devicelint.runtime_spec import is_device_mismatch

    gpu_texts = [
        "Input and parameter tensors are not at the same device, found input tensor at cuda:0 "
        "and parameter tensor at cpu",
        "Expected tensor for argument #1 'input' to have the same device as tensor for "
        "argument #2 'weight'; but device 0 does not equal -1 (while checking arguments for "
        "cudnn_rnn)",
        "Input type (torch.cuda.FloatTensor) and weight type (torch.FloatTensor) should be the "
        "same or input should be a MKLDNN tensor and weight is a dense tensor",
    ]
    for text in gpu_texts:
        assert is_device_mismatch(text) and any(m in text for m in ERROR_MARKERS), text
    assert not is_device_mismatch("Input type (torch.cuda.HalfTensor) and weight type "
                                  "(torch.cuda.FloatTensor) should be the same")


class _Code:
    def __init__(self, filename: str) -> None:
        self.co_filename = filename


class _Frame:
    """What Tracker._walk reads of a frame."""

    def __init__(self, filename: str, line: int, back=None) -> None:
        self.f_code, self.f_lineno, self.f_back = _Code(filename), line, back


def test_one_walk_serves_the_tracker_and_the_finder(tmp_path) -> None:
    """A wrapped call walks the stack once: the flagged caller of a helper (tracker) and the
    user frames (finder); no frame from the child's own (`Tracker.bottom`) outwards is read."""
    from devicelint.runtime.finder import Finder
    from devicelint.runtime.tracker import Tracker

    script, lib = tmp_path / "train.py", tmp_path / "site-packages" / "lib.py"
    lib.parent.mkdir()
    for path in (script, lib):
        path.write_text("\n" * 60)
    user = str(script.resolve())
    # <module>:40 -> main():30 (flagged) -> helper():12 -> a library frame
    runner = _Frame(str(lib), 1)
    module = _Frame(user, 40, _Frame(user, 50, runner))  # line 50: where the run starts
    main = _Frame(user, 30, module)
    helper = _Frame(user, 12, main)
    call = _Frame(str(lib), 5, helper)
    tracker = Tracker({user: {30: 30}}, str, finder=Finder([str(tmp_path)]))
    site, spot = tracker._walk(call, tracker.finder)
    assert site == (user, 30)
    assert spot == ((user, 12), ((user, 30), (user, 40), (user, 50)))
    tracker.bottom = module.f_back  # as if the frame at line 50 ran the child's run()
    assert tracker._walk(call, tracker.finder)[1] == ((user, 12), ((user, 30), (user, 40)))
    tracker.lines = {user: {12: 12}}
    assert tracker._walk(call, None) == ((user, 12), None)

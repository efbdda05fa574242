"""Helpers of other files that read device data on the host (issue 13 item 1): a step loop's
call of a function of another local module is reported at the call, naming the helper's line,
when the helper reads on the host what the call gives it (fixtures/project_helpers)."""

from __future__ import annotations

from pathlib import Path

from devicelint.runner import Overrides, lint_paths

from conftest import FIXTURES
from fixture_markers import expected_findings

PROJECT = FIXTURES / "project_helpers"


def _run():
    return lint_paths([str(PROJECT)], Overrides(select=["ALL"]), use_cache=False, jobs=1)


def _found(run) -> set[tuple[str, int, str]]:
    return {(Path(f.path).resolve().relative_to(PROJECT.resolve()).as_posix(), f.line, f.code)
            for f in run.findings}


def _expected() -> set[tuple[str, int, str]]:
    return {(p.relative_to(PROJECT).as_posix(), line, code)
            for p in sorted(PROJECT.rglob("*.py")) for line, code in expected_findings(p)}


def test_one_run_over_the_project_finds_what_its_markers_say() -> None:
    """Reads from inside a list of device tensors (`model.parameters()`), a module moved to
    the device (`model.named_parameters()`), `**kwargs`, and through a helper of a third
    file; a method of an object made from a class of tools.py, and a function passed as an
    argument, here or through a parameter; silent where the helper reads only the
    container, host metadata, or under its own throttle, where the arguments are host
    tensors, and where a parameter shadows the imported helper (`largest`)."""
    found = {f for f in _found(_run()) if f[0].endswith(".py")}
    assert found == _expected()


def test_a_notebook_calls_helpers_of_the_project() -> None:
    """A notebook's code cells are indexed as a script's text: `from tools import clip_all`
    in explore.ipynb is followed."""
    [finding] = [f for f in _run().findings if f.path.endswith("explore.ipynb")]
    assert finding.code == "DL004" and "tools.py:12" in finding.message


def test_the_finding_names_the_read_in_the_other_file() -> None:
    findings = {f.line: f for f in _run().findings if f.code == "DL004"}
    clip = findings[24]
    assert "tools.py:12" in clip.message
    [related] = clip.related
    assert related["path"].endswith("tools.py") and related["line"] == 12
    # Two files away: the call of common.py's helper in tools.py is the line named.
    nested = findings[21]
    assert "to_host()" in nested.message and "tools.py:53" in nested.message


def test_a_method_of_an_instance_of_a_class_of_another_file() -> None:
    """`meter = Meter()` (tools.py): `meter.update(top=...)` runs Meter.update, which reads
    each keyword's tensor with `.item()`; a name bound to instances of two classes, one of
    which does not read, is silent (train.py `counter`)."""
    [finding] = [f for f in _run().findings if f.line == 28 and f.path.endswith(".py")]
    assert "meter.update()" in finding.message and "tools.py:31" in finding.message

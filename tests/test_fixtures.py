"""Every fixture, linted with all default rules as `devicelint check FILE` lints it (the
runner's path, with the project index over the file: facts such as what the file's own calls
hand a function come from there), so the markers say what a user sees. The findings (line,
code) are exactly its `# expect:` markers, of every rule, not only the rule whose folder it is
in (issue 12: cross-rule noise must show). bad_*.py files have at least one finding of their
own rule.

A cross-rule finding is either true by the other rule's docs (then the line carries its marker,
e.g. `# expect: DL006, DL009`) or false: then it is listed in CROSS_RULE_NOISE_TODAY with its
reason. Each listed finding is a strict xfail: when the analysis stops reporting it, the test fails
until the entry is removed, so the list can only shrink."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import pytest

from devicelint.runner import Overrides, lint_paths
from devicelint.rule import all_rules

from conftest import FIXTURES
from fixture_markers import MarkerError, expected_findings, markers_in

FIXTURE_FILES = sorted(
    p for p in FIXTURES.glob("DL*/*.py") if p.name.startswith(("bad_", "good_", "fix_"))
)

# (fixture, line, code) -> why the finding is false today (judged against the rule's docs).
CROSS_RULE_NOISE_TODAY: dict[tuple[str, int, str], str] = {
}


def _key(path: Path) -> str:
    return f"{path.parent.name}/{path.name}"


@lru_cache(maxsize=None)
def _findings(path: Path) -> frozenset[tuple[int, str]]:
    registry = all_rules()
    codes = [code for code, rule in registry.items() if rule.default_enabled]
    if path.parent.name in registry and path.parent.name not in codes:
        codes.append(path.parent.name)  # an opt-in rule's fixtures run with it enabled
    every = Overrides(select=codes, ignore=[], extend_select=[], per_file_ignores={})
    run = lint_paths([str(path)], every, use_cache=False, jobs=1)
    return frozenset((f.line, f.code) for f in run.findings if f.code in codes)


def _noise(path: Path) -> set[tuple[int, str]]:
    return {(line, code) for (name, line, code) in CROSS_RULE_NOISE_TODAY if name == _key(path)}


@pytest.mark.parametrize("path", FIXTURE_FILES, ids=_key)
def test_fixture(path: Path) -> None:
    code = path.parent.name
    registry = all_rules()
    assert code in registry, f"fixtures for unknown rule {code}"
    expected = expected_findings(path)
    unknown = sorted(c for _, c in expected if c not in registry)
    assert not unknown, f"markers name unknown rules: {unknown}"
    if path.name.startswith("bad_"):
        assert any(c == code for _, c in expected), (
            f"{path} is a bad fixture without an `# expect: {code}` marker")
    noise = _noise(path)
    assert not noise & expected, "a line is listed as noise and marked as expected"
    found = _findings(path) - noise
    assert found == expected, (
        f"missing: {sorted(expected - found)}, unexpected: {sorted(found - expected)}"
    )


@pytest.mark.parametrize(
    "name, line, code",
    [pytest.param(*entry, marks=pytest.mark.xfail(strict=True, raises=AssertionError,
                                                  reason=reason),
                  id=f"{entry[0]}:{entry[1]}:{entry[2]}")
     for entry, reason in CROSS_RULE_NOISE_TODAY.items()]
    # The list is empty (all noise gone): one skipped case keeps the collection valid.
    or [pytest.param("", 0, "", marks=pytest.mark.skip(reason="no cross-rule noise left"), id="none")],
)
def test_cross_rule_noise_is_gone(name: str, line: int, code: str) -> None:
    """Fails (as expected) while the false finding is still reported."""
    assert (line, code) not in _findings(FIXTURES / name), f"{name}:{line}: {code} is reported"


def test_noise_entries_name_fixtures() -> None:
    for name, _line, _code in CROSS_RULE_NOISE_TODAY:
        assert FIXTURES / name in FIXTURE_FILES, f"{name} is not a fixture"


def test_every_rule_has_fixtures() -> None:
    for code, rule in all_rules().items():
        if not rule.handlers():
            continue  # engine diagnostics
        bad = list((FIXTURES / code).glob("bad_*.py"))
        good = list((FIXTURES / code).glob("good_*.py"))
        assert bad and good, f"{code} needs bad_*.py and good_*.py fixtures"


def test_markers_with_several_codes_and_trailing_comments() -> None:
    text = ("a = 1  # expect: DL006, DL009  # runtime-gap: DL001 one batch\n"
            "b = 2  # expect:DL004\n"
            "c = 3  # a comment that mentions what we expected\n")
    assert markers_in(text) == {(1, "DL006"), (1, "DL009"), (2, "DL004")}


@pytest.mark.parametrize("line", ["x = 1  # expect DL001", "x = 1  # expect: DL001 DL004",
                                  "x = 1  # Expect: dl001", "x = 1  # expect:"])
def test_malformed_markers_raise(line: str) -> None:
    with pytest.raises(MarkerError):
        markers_in(line + "\n")


# -- tests that cannot hide breakage (issue 18) --------------------------------------------------

def test_a_missing_fixture_list_fails_instead_of_skipping(pytestconfig) -> None:
    # pytest skips a test parametrized over an empty list unless told otherwise (pyproject.toml).
    assert pytestconfig.getini("empty_parameter_set_mark") == "fail_at_collect"


def test_no_test_skips_on_a_failed_import() -> None:
    """A broken import must fail: every package the tests import is in the dev extra."""
    tests = Path(__file__).resolve().parent
    offenders = [p.name for p in sorted(tests.glob("*.py")) if p.name != Path(__file__).name
                 and "importorskip(" in p.read_text(encoding="utf-8")]
    assert not offenders, f"importorskip in {offenders}"

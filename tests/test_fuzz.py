"""Property tests: generated programs (hypothesmith, and torch-flavoured ones) and mutated real
sources never make a rule raise, give the same findings twice, and `--fix --unsafe-fixes`
always yields code that parses and is stable under a second pass.

Marked `slow` (run with `pytest -m slow`; .ci/run does): about a minute of CPU. The
Hypothesis profile is derandomized with few examples. `DEVICELINT_FUZZ_EXAMPLES=N` raises the count; bench/fuzz.py runs long campaigns."""

from __future__ import annotations

import os
import random

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import fuzzing

import hypothesmith  # in the dev extra: a broken install must fail, not skip

pytestmark = pytest.mark.slow

EXAMPLES = int(os.environ.get("DEVICELINT_FUZZ_EXAMPLES", "40"))
settings.register_profile(
    "devicelint-fuzz", max_examples=EXAMPLES, deadline=None, derandomize=True,
    suppress_health_check=list(HealthCheck), database=None,
)
FUZZ = settings.get_profile("devicelint-fuzz")


def _with_header(program: str) -> str:
    # A `from __future__` import must come first; everything else follows the header.
    if "__future__" in program:
        return program
    return fuzzing.header() + program


@FUZZ
@given(hypothesmith.from_grammar())
def test_rules_never_raise_on_generated_programs(program: str) -> None:
    fuzzing.check_source(_with_header(program))


@FUZZ
@given(hypothesmith.from_node())
def test_rules_never_raise_on_generated_syntax_trees(program: str) -> None:
    fuzzing.check_source(_with_header(program))


@FUZZ
@given(st.randoms(use_true_random=False))
def test_torch_programs_lint_deterministically_and_fix_cleanly(rng: random.Random) -> None:
    source = fuzzing.header() + fuzzing.torch_program(rng)
    fuzzing.check_source(source)
    fuzzing.check_fix(source)


@FUZZ
@given(hypothesmith.from_node())
def test_fixes_on_generated_programs_parse_and_are_stable(program: str) -> None:
    fuzzing.check_fix(_with_header(program))


SEEDS = fuzzing.seed_files()


@pytest.mark.parametrize("path", SEEDS, ids=lambda p: str(p.relative_to(fuzzing.ROOT)))
def test_mutated_sources_never_crash(path) -> None:
    # Seeded per file: the same mutations in every run. Syntax errors are expected and must
    # come back as DL900 findings, not exceptions.
    text = path.read_text(encoding="utf-8")
    rng = random.Random(str(path.relative_to(fuzzing.ROOT)))
    rounds = 4 if "corpora" in str(path) else 6
    for _ in range(rounds):
        mutated = text
        for _ in range(rng.randint(1, 3)):
            mutated = fuzzing.mutate(mutated, rng)
        found = fuzzing.check_source(mutated)
        if not fuzzing.parses(mutated):
            assert any(f[0] == "DL900" for f in found), "an unparseable text gave no DL900"
        data = fuzzing.mutate_bytes(mutated.encode("utf-8", "surrogatepass"), rng)
        fuzzing.check_bytes(data)


def test_mutated_fixture_fixes_parse() -> None:
    rng = random.Random(9)
    fixtures = [p for p in SEEDS if "fixtures" in p.parts]
    for path in rng.sample(fixtures, min(12, len(fixtures))):
        mutated = fuzzing.mutate(path.read_text(encoding="utf-8"), rng)
        fuzzing.check_fix(mutated)

"""Long fuzzing campaigns for the engine, the rules and the fixer.

    python bench/fuzz.py --minutes 20                 # all three generators, round robin
    python bench/fuzz.py --programs 5000 --mode torch # stop after N programs

Generators: `torch` (random programs made of the snippets the rules look for, then
`--fix --unsafe-fixes` on them), `hypothesmith` (valid Python from the grammar and from libcst
node trees), `mutate` (fixtures and a few real package sources from bench/corpus.py, with
lines/tokens deleted, duplicated, swapped, odd Unicode, BOMs, CRLF, tabs, long lines, deep
nesting, byte damage). Each input must lint without an exception, give the same findings
twice, and (for parsing inputs) fix to a parsing, stable text.

A failing input is saved under bench/fuzz-crashes/ (git-ignored) with its traceback. The input
being checked is also written to bench/fuzz-crashes/current.py first, so that if the process
dies (a segfault in native code) the culprit is left behind; the next run reports it.
"""

from __future__ import annotations

import argparse
import hashlib
import random
import sys
import time
import traceback
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))
sys.path.insert(0, str(HERE.parent))

import fuzzing  # noqa: E402 - tests/fuzzing.py, shared with the CI fuzz tests

CRASHES = HERE / "fuzz-crashes"


class Campaign:
    def __init__(self, deadline: float, limit: int) -> None:
        self.deadline = deadline
        self.limit = limit
        self.tried = 0
        self.crashes: list[Path] = []
        self.by_mode: dict[str, int] = {}

    def done(self) -> bool:
        return time.monotonic() >= self.deadline or self.tried >= self.limit

    def check(self, mode: str, source: str, fix: bool = False, data: bytes | None = None) -> None:
        self.tried += 1
        self.by_mode[mode] = self.by_mode.get(mode, 0) + 1
        current = CRASHES / "current.py"
        current.write_bytes(data if data is not None else source.encode("utf-8", "surrogatepass"))
        try:
            if data is not None:
                fuzzing.check_bytes(data)
            else:
                fuzzing.check_source(source)
                if fix:
                    fuzzing.check_fix(source)
        except Exception:  # noqa: BLE001 - every exception is a finding of the campaign
            self.save(mode, current.read_bytes(), traceback.format_exc())

    def save(self, mode: str, data: bytes, trace: str) -> None:
        name = f"{mode}-{hashlib.sha256(data).hexdigest()[:12]}"
        (CRASHES / f"{name}.py").write_bytes(data)
        (CRASHES / f"{name}.txt").write_text(trace)
        self.crashes.append(CRASHES / f"{name}.py")
        print(f"CRASH ({mode}): {CRASHES / name}.py\n{trace.strip().splitlines()[-1]}", flush=True)


def run_torch(campaign: Campaign, rng: random.Random, count: int) -> None:
    for _ in range(count):
        if campaign.done():
            return
        source = fuzzing.header() + fuzzing.torch_program(rng, statements=rng.randint(4, 30))
        campaign.check("torch", source, fix=True)


def run_mutate(campaign: Campaign, rng: random.Random, seeds: list[Path], count: int) -> None:
    for _ in range(count):
        if campaign.done():
            return
        text = rng.choice(seeds).read_text(encoding="utf-8")
        for _ in range(rng.randint(1, 4)):
            text = fuzzing.mutate(text, rng)
        campaign.check("mutate", text, fix=rng.random() < 0.2)
        if rng.random() < 0.3:
            data = fuzzing.mutate_bytes(text.encode("utf-8", "surrogatepass"), rng)
            campaign.check("bytes", "", data=data)


def run_hypothesmith(campaign: Campaign, seed: int, count: int) -> None:
    import hypothesmith
    from hypothesis import HealthCheck, given, settings, strategies as st
    from hypothesis import seed as hypothesis_seed

    strategy = st.one_of(hypothesmith.from_grammar(), hypothesmith.from_node())

    @hypothesis_seed(seed)
    @settings(max_examples=count, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    @given(strategy)
    def one(program: str) -> None:
        if campaign.done():
            return
        source = program if "__future__" in program else fuzzing.header() + program
        campaign.check("hypothesmith", source, fix=True)  # never raises: no shrinking

    one()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=10.0, help="time budget")
    parser.add_argument("--programs", type=int, default=10**9, help="stop after this many inputs")
    parser.add_argument("--mode", choices=["all", "torch", "hypothesmith", "mutate"], default="all")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    CRASHES.mkdir(exist_ok=True)
    (CRASHES / ".gitignore").write_text("*\n")  # crashing inputs stay local
    leftover = CRASHES / "current.py"
    if leftover.exists() and leftover.stat().st_size:
        print(f"note: {leftover} is the input a previous run was checking when it stopped; "
              "if that run died, this input is the cause")
        leftover.rename(CRASHES / f"died-{hashlib.sha256(leftover.read_bytes()).hexdigest()[:12]}.py")

    started = time.monotonic()
    campaign = Campaign(started + args.minutes * 60, args.programs)
    rng = random.Random(args.seed)
    seeds = fuzzing.seed_files(limit_per_corpus=10)
    round_number = 0
    while not campaign.done():
        round_number += 1
        if args.mode in ("all", "torch"):
            run_torch(campaign, rng, 10)
        if args.mode in ("all", "mutate"):
            run_mutate(campaign, rng, seeds, 10)
        if args.mode in ("all", "hypothesmith"):
            run_hypothesmith(campaign, args.seed * 100_000 + round_number, 10)
        elapsed = time.monotonic() - started
        print(f"[{elapsed:7.0f}s] tried {campaign.tried:,} ({campaign.by_mode}), "
              f"crashes {len(campaign.crashes)}", flush=True)
    leftover.unlink(missing_ok=True)
    elapsed = time.monotonic() - started
    print(f"programs tried: {campaign.tried:,} in {elapsed:.0f} s; by generator: {campaign.by_mode}")
    print(f"crashes found: {len(campaign.crashes)}" + "".join(f"\n  {p}" for p in campaign.crashes))
    return 1 if campaign.crashes else 0


if __name__ == "__main__":
    sys.exit(main())

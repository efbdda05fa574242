"""The floor under a cold lint: what libcst's parse alone costs, against ruff.

Issue 17 asks for a cold lint within 3x of `ruff check --select ALL --no-cache`. Every file a
rule's tokens match is parsed by libcst, so the parse alone, spread over the same cores, is a
floor no work after it can go below. This prints, per corpus, the wall seconds (median of
--runs) of: ruff; libcst's parse of the files devicelint parses (those some default rule's
prefilter tokens match), in a pool of --jobs processes; Python's `ast.parse` of the same
files; libcst's parse of those of them some rule's gate lets through (devicelint/gate.py:
what a run parses now); and a full cold devicelint run. Ratios are against ruff.

    taskset -c 0,1 python bench/parse_floor.py [--runs 3] [--jobs 2] [--ruff PATH] DIR ...
"""

from __future__ import annotations

import argparse
import ast
import shutil
import statistics
import subprocess
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path


def _parse_libcst(paths: list[str]) -> int:
    import libcst

    for path in paths:
        libcst.parse_module(Path(path).read_text(encoding="utf-8", errors="replace"))
    return len(paths)


def _parse_ast(paths: list[str]) -> int:
    for path in paths:
        ast.parse(Path(path).read_text(encoding="utf-8", errors="replace"))
    return len(paths)


def _parsed_files(root: Path) -> tuple[list[str], int]:
    """The files a cold devicelint run parses: some enabled rule's tokens occur in them."""
    from devicelint.rule import rule_catalog

    groups = [m.tokens for m in rule_catalog().values() if m.default_enabled and m.has_handlers]
    chosen, lines = [], 0
    for path in sorted(root.rglob("*.py")):
        text = path.read_text(encoding="utf-8", errors="replace")
        if any(not group or any(t in text for t in group) for group in groups):
            chosen.append(str(path))
            lines += text.count("\n")
    return chosen, lines


def _gated_files(root: Path, paths: list[str]) -> list[str]:
    """Of `paths`, those some default rule's gate (devicelint/gate.py) lets libcst parse,
    with the project index a run over `root` builds (what the gates ask of other files)."""
    from devicelint import gate, project_index
    from devicelint.engine import enabled_rules, rules_for
    from devicelint.rule import all_rules

    rules = enabled_rules([code for code, rule in all_rules().items() if rule.default_enabled])
    files = [(str(p), p.relative_to(root).as_posix(), p.read_bytes()) for p in sorted(root.rglob("*.py"))]
    index = project_index.ProjectIndex.build(str(root), files, None, recording=False)
    project_index.use(index)
    texts = {path: data.decode("utf-8", errors="replace") for path, _key, data in files}
    keys = {path: key for path, key, _data in files}
    try:
        return [p for p in paths if gate.gated(keys[p], texts[p], rules_for(texts[p], rules))]
    finally:
        project_index.use(None)


def _pooled(work, paths: list[str], jobs: int) -> float:
    # Largest first, one file per task, as the linter schedules its workers.
    ordered = sorted(paths, key=lambda p: -Path(p).stat().st_size)
    start = time.perf_counter()
    with ProcessPoolExecutor(jobs) as pool:
        list(pool.map(work, [[p] for p in ordered], chunksize=4))
    return time.perf_counter() - start


def _timed(command: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("dirs", nargs="+", type=Path)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--ruff", default=shutil.which("ruff") or "ruff")
    args = parser.parse_args()
    for root in args.dirs:
        paths, lines = _parsed_files(root)
        gated = _gated_files(root, paths)
        seconds: dict[str, list[float]] = {"ruff": [], "libcst parse": [], "libcst gated": [], "ast parse": [],
                                           "devicelint": []}
        for _ in range(args.runs):
            seconds["ruff"].append(_timed([args.ruff, "check", "--select", "ALL", "--no-cache",
                                           "--exit-zero", "-q", str(root)]))
            seconds["libcst parse"].append(_pooled(_parse_libcst, paths, args.jobs))
            seconds["libcst gated"].append(_pooled(_parse_libcst, gated, args.jobs))
            seconds["ast parse"].append(_pooled(_parse_ast, paths, args.jobs))
            seconds["devicelint"].append(_timed([sys.executable, "-m", "devicelint.cli", "check", "--no-cache",
                                                 "--exit-zero", "-q", str(root)]))
        ruff = statistics.median(seconds["ruff"])
        print(f"{root}: {len(paths)} files a rule's tokens match, {lines} lines; "
              f"{len(gated)} of them pass a gate (libcst gated: their parse)")
        for name, values in seconds.items():
            median = statistics.median(values)
            print(f"  {name:13s} {median:7.2f} s  {median / ruff:5.2f}x ruff")


if __name__ == "__main__":
    main()

"""What the project index (devicelint/project_index.py, issue 13) adds to a cold lint.

Lints each corpus without the cache, in fresh processes pinned to 2 cores (`taskset -c 0,1`),
with the index and without it (`project_index.ENABLED = False`), alternating, ROUNDS times;
prints the median CPU seconds (user + system of the lint and its worker processes) and wall
seconds of each, and their ratio. The issue's bound: at most 1.15.

    .venv/bin/python bench/project_index_cost.py [--rounds 5] [--baseline TREE] [--cache] [--each] [--jobs N] [DIR ...]

`--baseline TREE`: also measure the devicelint of another checkout (e.g. a `git worktree`
of an earlier commit, put first on PYTHONPATH), in the same rounds, alternating with this
one: before/after figures taken side by side.

`--instructions`: count instructions instead of timing (valgrind's cachegrind, summed over
the lint and its worker processes, PYTHONHASHSEED=0): the same count on a busy machine as
on a quiet one (a loaded CPU shifts CPU seconds by more than the 15% measured), ~40x slower;
one round is enough (`--rounds 1`: counts repeat to ~0.1%). Needs `valgrind` on the PATH.

`--each`: lint each folder directly under a corpus as its own run, as a user lints one
repository (the practitioner corpus: 86 unrelated repositories, each with its own imports),
and sum the runs' seconds; without it the whole corpus is one run, where every repository's
files are looked up among all 86 (a folder named like an identifier is a package to the
lookup), a namespace no user's run has.

`--own-root`: lint a copy of each corpus made outside this checkout, with a pyproject.toml
(no settings) at its top, or with `--each` at the top of each folder that has none: the
project root is then the corpus (or each repository), as when a user lints their own
checkout. Without it the corpora under bench/.corpora are linted with this checkout as
their project root (its pyproject.toml is the nearest above them), so that a corpus whose
folder name is an identifier (`practitioner`) is looked up from bench/.corpora, next to
the other corpora: the project index's `naming` then gives up (too many files below).

`--cache`: lint as a first run does by default, with the result cache on and empty (a
fresh cache directory each time): with the index, what each file used of other files is
noted and stored, which `--no-cache` skips. Without it, runs use `--no-cache`.

Default corpora: bench/.corpora/torchvision-0.24.1/torchvision (library code),
bench/.corpora/pytorch-lightning-2.6.6 (a training library), bench/.corpora/practitioner (practitioner scripts; `bench/practitioner.py --materialise`)
and bench/.corpora/timm-1.0.31/timm (a larger library), those present.
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Optional

ROOT = Path(__file__).resolve().parent.parent
DEFAULT = [ROOT / "bench/.corpora/torchvision-0.24.1/torchvision", ROOT / "bench/.corpora/pytorch-lightning-2.6.6",
           ROOT / "bench/.corpora/practitioner", ROOT / "bench/.corpora/timm-1.0.31/timm"]
# A baseline tree's rules: the editable install maps the name devicelint.rules to this
# checkout's rules/ (a package_dir mapping, found whatever sys.path says), so a baseline
# would lint with its own engine and this checkout's rules; bound to the tree's here.
RULES_OF_TREE = (
    "import importlib.util, os, sys\n"
    "if len(sys.argv) > 3 and sys.argv[3]:\n"
    "    spec = importlib.util.spec_from_file_location('devicelint.rules',\n"
    "        os.path.join(sys.argv[3], '__init__.py'), submodule_search_locations=[sys.argv[3]])\n"
    "    import devicelint\n"
    "    sys.modules['devicelint.rules'] = devicelint.rules = importlib.util.module_from_spec(spec)\n"
    "    spec.loader.exec_module(devicelint.rules)\n"
)
# The program's own start (devicelint/__main__.py): the collector off while the run imports,
# then what the imports made frozen before the workers fork (devicelint/collector.py). Without
# it (before session 11) the bench measured another collector than the program's: every
# worker's collections re-examined the imported modules as well, in both modes.
SNIPPET = RULES_OF_TREE + (
    "import sys\n"
    "try:\n"
    "    from devicelint import collector\n"
    "    collector.start_up()\n"
    "except ImportError:\n"
    "    pass\n"
    "import devicelint.project_index as index\n"
    "index.ENABLED = sys.argv[1] == 'on'\n"
    "from devicelint.cli import main\n"
    "cache = ['--cache-dir', sys.argv[4]] if len(sys.argv) > 4 and sys.argv[4] else ['--no-cache']\n"
    "jobs = ['-j', sys.argv[5]] if len(sys.argv) > 5 else []\n"
    "sys.argv = ['devicelint', 'check', *cache, *jobs, '--exit-zero', '-q', '--select', 'ALL', sys.argv[2]]\n"
    "main()\n"
)


# Compiled modules kept between runs: with PYTHONDONTWRITEBYTECODE set (as in some shells)
# every run compiled every module it imported again (~0.4 s of CPU, the same in both modes,
# which pulled the ratio towards 1 by a varying amount).
PYCACHE = Path(tempfile.gettempdir()) / f"devicelint-bench-pyc-{os.getuid()}"


def _launch(tree: Optional[Path]) -> dict:
    """How to start a Python that imports `tree`'s devicelint (None: this checkout's)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONHASHSEED"] = "0"  # set iteration orders, hence instruction counts, repeat
    env["PYTHONPYCACHEPREFIX"] = str(PYCACHE)  # it mirrors each source path: one for all trees
    if tree is not None:  # first on the path, before what the environment already has
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(tree), os.environ.get("PYTHONPATH", "")) if p)
    # Run from the tree measured: `python -c` puts the working directory first on sys.path,
    # before PYTHONPATH; a baseline started from this checkout's root imported this
    # checkout's devicelint (session 4's baseline columns compared a tree with itself).
    return {"env": env, "cwd": str(tree or ROOT)}


def _rules(tree: Optional[Path]) -> list[str]:
    rules = (tree or ROOT) / "rules"
    return [str(rules)] if rules.is_dir() else []


def imported_from(tree: Optional[Path]) -> set[Path]:
    """Where the devicelint and the rules a run of `tree` imports live."""
    show = "import devicelint, devicelint.rules; print(devicelint.__file__); print(devicelint.rules.__file__)"
    found = subprocess.run([sys.executable, "-c", RULES_OF_TREE + show, "-", "-", *_rules(tree)],
                           check=True, capture_output=True, text=True, **_launch(tree))
    return {Path(line).resolve().parent.parent for line in found.stdout.split()}


# Instructions of the lint and of each worker it forks (one "I refs" line per process).
CACHEGRIND = ["valgrind", "--tool=cachegrind", "--cache-sim=no", "--trace-children=yes",
              "--cachegrind-out-file=/dev/null"]


def one(mode: str, corpus: Path, tree: Optional[Path] = None, cache: bool = False,
        jobs: Optional[int] = None, instructions: bool = False) -> tuple[float, float]:
    """(CPU seconds, or with `instructions` the instructions executed; wall seconds)."""
    # A baseline tree without rules/ of its own gets "" for them (no rebinding).
    rules = _rules(tree) or [""]
    # The cache directory must lie inside the project root: the tree measured, or a corpus
    # copied outside it (--own-root), which is its own root.
    inside = corpus if ROOT not in corpus.resolve().parents else (tree or ROOT)
    scratch = tempfile.mkdtemp(prefix=".bench-cache-", dir=str(inside)) if cache else None
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    pin = ["taskset", "-c", "0,1"] if shutil.which("taskset") else []
    try:
        done = subprocess.run([*pin, *(CACHEGRIND if instructions else []), sys.executable, "-c", SNIPPET, mode,
                               str(corpus.resolve()), *rules,
                               *([scratch or ""] if scratch or jobs else []), *([str(jobs)] if jobs else [])],
                              check=True, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE if instructions else None, text=True, **_launch(tree))
    finally:
        wall = time.perf_counter() - started
        if scratch:
            shutil.rmtree(scratch, ignore_errors=True)
    if instructions:
        counts = [int(found.replace(",", "")) for found in re.findall(r"I\s+refs:\s+([\d,]+)", done.stderr)]
        if not counts:
            sys.exit(f"no instruction count in valgrind's output:\n{done.stderr[-2000:]}")
        return float(sum(counts)), wall
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, wall


def own_root_copy(corpus: Path, each: bool, scratch: Path) -> Path:
    """A copy of `corpus` under `scratch` whose project root is its top, or with `each`
    each folder under it (a pyproject.toml with no settings where there is none)."""
    copy = scratch / corpus.name
    shutil.copytree(corpus, copy, symlinks=True)
    for top in (sorted(p for p in copy.iterdir() if p.is_dir()) if each else [copy]):
        marker = top / "pyproject.toml"
        if not marker.exists():
            marker.write_text("[tool.devicelint]\n", encoding="utf-8")
    return copy


def lint_corpus(mode: str, corpus: Path, tree: Optional[Path], each: bool, *options) -> tuple[float, float]:
    """`one` run of the corpus, or with `each` one run per folder under it, summed."""
    if not each:
        return one(mode, corpus, tree, *options)
    total_cpu = total_wall = 0.0
    for folder in sorted(p for p in corpus.iterdir() if p.is_dir()):
        cpu, wall = one(mode, folder, tree, *options)
        total_cpu, total_wall = total_cpu + cpu, total_wall + wall
    return total_cpu, total_wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpora", nargs="*", type=Path, default=DEFAULT)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--baseline", type=Path, action="append", default=[],
                        help="another checkout to measure side by side (its index on and off); repeatable")
    parser.add_argument("--cache", action="store_true",
                        help="with the result cache on and empty (a first run by default), not --no-cache")
    parser.add_argument("--jobs", "-j", type=int, default=None,
                        help="worker processes of each lint (default: the program's, one per CPU it may run on: 2 under taskset -c 0,1)")
    parser.add_argument("--each", action="store_true",
                        help="one run per folder directly under each corpus (one per repository), summed")
    parser.add_argument("--own-root", action="store_true",
                        help="lint a copy of each corpus outside this checkout, rooted at the corpus (or each repository with --each)")
    parser.add_argument("--instructions", action="store_true",
                        help="count instructions under valgrind (cachegrind) instead of CPU seconds")
    args = parser.parse_args()
    if args.instructions and shutil.which("valgrind") is None:
        sys.exit("--instructions needs valgrind on the PATH")
    trees: dict[str, Optional[Path]] = {"this": None}
    for number, tree in enumerate(args.baseline, 1):
        trees[f"baseline{number}" if len(args.baseline) > 1 else "baseline"] = tree.resolve()
    for name, tree in trees.items():
        if imported_from(tree) != {tree or ROOT}:
            sys.exit(f"{name}: the run imports devicelint from {imported_from(tree)}, not {tree or ROOT}")
    measure = "instructions (G, cachegrind) of the lint and its workers" if args.instructions \
        else "CPU = user + system of the lint and its workers"
    print(f"# {'cache on, empty' if args.cache else '--no-cache'}; {'one run per folder, summed; ' if args.each else ''}"
          f"{'rooted at each corpus (a copy); ' if args.own_root else ''}-j {args.jobs or 'default'}; {args.rounds} rounds; {measure}, "
          "median (min ratio: of the fastest off and on runs)", flush=True)
    unit = "instr" if args.instructions else "cpu"
    print(f"tree\tcorpus\tfiles\t{unit} off\t{unit} on\t{unit} ratio\tmin ratio\twall off\twall on\twall ratio")
    scratch = Path(tempfile.mkdtemp(prefix="devicelint-bench-roots-")) if args.own_root else None
    try:
        for corpus in args.corpora:
            if not corpus.is_dir():
                print(f"{corpus}: missing, skipped", file=sys.stderr)
                continue
            measured = own_root_copy(corpus, args.each, scratch) if scratch is not None else corpus
            measure_corpus(args, trees, measured, unit)
    finally:
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)


def measure_corpus(args, trees: dict, corpus: Path, unit: str) -> None:
    """The rounds of one corpus, and its lines of the table."""
    runs = {(t, m): [] for t in trees for m in ("off", "on")}
    for name, tree in trees.items():  # warm the file system cache and the compiled modules
        for mode in ("off", "on"):
            lint_corpus(mode, corpus, tree, args.each, args.cache, args.jobs)
    for round_number in range(args.rounds):
        # Each mode goes first in every other round: a drift of the machine's speed
        # during a round (another process starting) then falls on both alike.
        modes = ("off", "on") if round_number % 2 == 0 else ("on", "off")
        for name, tree in trees.items():
            for mode in modes:
                found = lint_corpus(mode, corpus, tree, args.each, args.cache, args.jobs, args.instructions)
                runs[name, mode].append((found[0] / 1e9, found[1]) if args.instructions else found)
    files = sum(1 for _ in corpus.rglob("*.py"))
    for name in trees:
        cpu = {m: statistics.median(c for c, _w in runs[name, m]) for m in ("off", "on")}
        wall = {m: statistics.median(w for _c, w in runs[name, m]) for m in ("off", "on")}
        fastest = {m: min(c for c, _w in runs[name, m]) for m in ("off", "on")}
        print(f"{name}\t{corpus.name}\t{files}\t{cpu['off']:.2f}\t{cpu['on']:.2f}"
              f"\t{cpu['on'] / cpu['off']:.3f}\t{fastest['on'] / fastest['off']:.3f}"
              f"\t{wall['off']:.2f}\t{wall['on']:.2f}"
              f"\t{wall['on'] / wall['off']:.3f}", flush=True)
        for mode in ("off", "on"):
            print(f"#   {name} {mode}: {unit} of each run " + " ".join(f"{c:.2f}" for c, _w in runs[name, mode]),
                  flush=True)


if __name__ == "__main__":
    main()

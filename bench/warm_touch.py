"""The warm case of issue 17: one module changed, how much is linted again.

Copies a corpus to a temporary project (its own cache), lints it once with the cache, then
ROUNDS times appends a comment to one module (default: the package's __init__.py) and
lints again, in fresh processes pinned to 2 cores (`taskset -c 0,1`); prints the files
linted again and the median CPU seconds (user + system, workers included) and wall seconds
of those runs, and of two runs where nothing changed since: the first (every file served
from the results file; it records the run, devicelint.cache `record_run`, once the last
change is RACY_NS old, so it waits for that) and the second (served from that record).

    .venv/bin/python bench/warm_touch.py [--rounds 3] [--baseline TREE] [--touch REL] [CORPUS]

Default corpus: bench/.corpora/timm-1.0.31/timm, touching timm/__init__.py. `--baseline
TREE`: also measure the devicelint of another checkout (put first on PYTHONPATH), in the
same rounds, alternating: before/after side by side.
"""

from __future__ import annotations

import argparse
import json
import os
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
DEFAULT = ROOT / "bench/.corpora/timm-1.0.31/timm"
RACY_S = 3.5  # devicelint.cache.RACY_NS and a margin (a baseline tree may not have it)
SNIPPET = (
    "import json, sys\n"
    "from devicelint.runner import Overrides, lint_paths\n"
    "run = lint_paths([sys.argv[1]], Overrides(select=['ALL']))\n"
    "print(json.dumps({'files': run.files, 'cached': run.cached, 'findings': len(run.findings)}))\n"
)


def one(project: Path, tree: Optional[Path]) -> tuple[float, float, dict]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    pin = ["taskset", "-c", "0,1"] if shutil.which("taskset") else []
    env = dict(os.environ)
    if tree is not None:
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(tree), env.get("PYTHONPATH", "")) if p)
    out = subprocess.run([*pin, sys.executable, "-c", SNIPPET, str(project)], check=True,
                         capture_output=True, text=True, env=env, cwd=project).stdout
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, wall, json.loads(out.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus", nargs="?", type=Path, default=DEFAULT)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--baseline", type=Path, action="append", default=[],
                        help="another checkout to measure side by side; repeatable")
    parser.add_argument("--touch", default="__init__.py", help="the module changed, relative to the corpus")
    args = parser.parse_args()
    trees: dict[str, Optional[Path]] = {"this": None}
    for number, tree in enumerate(args.baseline, 1):
        trees[f"baseline{number}" if len(args.baseline) > 1 else "baseline"] = tree.resolve()
    with tempfile.TemporaryDirectory() as scratch:
        projects = {}
        for name in trees:
            project = Path(scratch) / name / args.corpus.name
            shutil.copytree(args.corpus, project)
            (project.parent / "pyproject.toml").write_text("[tool.devicelint]\n")
            projects[name] = project
        for name, tree in trees.items():
            one(projects[name], tree)  # cold: fills the cache
        unchanged = {name: [] for name in trees}
        recorded = {name: [] for name in trees}
        touched = {name: [] for name in trees}
        changed_at = time.time()
        for round_ in range(args.rounds):
            time.sleep(max(0.0, changed_at + RACY_S - time.time()))
            for name, tree in trees.items():
                unchanged[name].append(one(projects[name], tree))
            for name, tree in trees.items():
                recorded[name].append(one(projects[name], tree))
            for name, tree in trees.items():
                module = projects[name] / args.touch
                module.write_text(module.read_text() + f"\n# touched {round_}\n")
                changed_at = time.time()
                touched[name].append(one(projects[name], tree))
    print("tree\tcorpus\tfiles\tunchanged cpu\twall\tagain (run record) cpu\twall"
          "\ttouched: linted again\tcpu\twall")
    for name in trees:
        runs = touched[name]
        again = [r["files"] - r["cached"] for _c, _w, r in runs]
        print(f"{name}\t{args.corpus.name}\t{runs[0][2]['files']}"
              f"\t{statistics.median(c for c, _w, _r in unchanged[name]):.2f}"
              f"\t{statistics.median(w for _c, w, _r in unchanged[name]):.2f}"
              f"\t{statistics.median(c for c, _w, _r in recorded[name]):.2f}"
              f"\t{statistics.median(w for _c, w, _r in recorded[name]):.2f}"
              f"\t{statistics.median(again):.0f}\t{statistics.median(c for c, _w, _r in runs):.2f}"
              f"\t{statistics.median(w for _c, w, _r in runs):.2f}", flush=True)


if __name__ == "__main__":
    main()

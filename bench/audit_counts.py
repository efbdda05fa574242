"""Findings per rule and corpus for the precision audit (docs/audit.md).

    python bench/audit_counts.py OUT_DIR          # lint every pinned corpus into OUT_DIR/<corpus>.json, print counts
    python bench/audit_counts.py --from OUT_DIR   # only print the counts of an earlier run

Each corpus is linted on its own (the machine is shared) with

    .venv/bin/devicelint --select ALL --no-cache --exit-zero --no-show-source --format json \
        --jobs 2 bench/.corpora/<name>-<version>

The judgement of each finding (true or false) is manual and recorded in docs/audit.md and
docs/audit/<CODE>.md; this script only counts.
"""

from __future__ import annotations

import collections
import json
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from corpus import CORPORA, corpus  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DEVICELINT = ROOT / ".venv" / "bin" / "devicelint"


def lint(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    for name in CORPORA:
        path = corpus(name)
        result = subprocess.run(
            [str(DEVICELINT), "--select", "ALL", "--no-cache", "--exit-zero", "--no-show-source",
             "--format", "json", "--jobs", "2", str(path.relative_to(ROOT))],
            cwd=ROOT, capture_output=True, text=True, check=True,
        )
        (out / f"{path.name}.json").write_text(result.stdout)


def counts(out: Path) -> None:
    table: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    names = []
    for name, version in CORPORA.items():
        label = f"{name}-{version}"
        names.append(label)
        for finding in json.loads((out / f"{label}.json").read_text()):
            table[finding["code"]][label] += 1
    print("| code | " + " | ".join(names) + " | total |")
    print("|---" * (len(names) + 2) + "|")
    for code in sorted(table):
        row = [table[code][n] for n in names]
        print(f"| {code} | " + " | ".join(map(str, row)) + f" | {sum(row)} |")


if __name__ == "__main__":
    args = sys.argv[1:]
    if len(args) == 2 and args[0] == "--from":
        counts(Path(args[1]))
    elif len(args) == 1:
        lint(Path(args[0]))
        counts(Path(args[0]))
    else:
        sys.exit(__doc__)

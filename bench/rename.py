"""How many fixture findings survive renaming every identifier a file binds (issue 12, point 9).

    .venv/bin/python bench/rename.py            # per rule: findings kept / findings before
    .venv/bin/python bench/rename.py -v         # and, per fixture, the findings lost or gained
    .venv/bin/python bench/rename.py --keep self,cls   # the same with these names never renamed
    .venv/bin/python bench/rename.py --run      # run each bad_/good_ fixture and its renaming on
                                                # the CPU: same exit status and exception type?

The renamer is tests/renaming.py (imports, attributes, keyword names of outside calls and builtins
keep their names; what the file binds becomes v1, v2, ...). A linter that judges code by what it
does keeps every finding; tests/test_rename.py asserts it fixture by fixture.
"""

from __future__ import annotations

import argparse
import collections
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
from renaming import default_rules, findings_before_after, rename_source  # noqa: E402


def fixture_files() -> list[Path]:
    return sorted(p for p in (ROOT / "fixtures").glob("DL*/*.py")
                  if p.name.startswith(("bad_", "good_", "fix_")))


def main(verbose: bool, keep: list[str]) -> int:
    rules = default_rules()
    total: collections.Counter = collections.Counter()
    kept: collections.Counter = collections.Counter()
    gained: collections.Counter = collections.Counter()
    changed = []
    for path in fixture_files():
        name = str(path.relative_to(ROOT))
        before, after, _ = findings_before_after(
            name, path.read_text(encoding="utf-8"), rules, keep)
        for code, _line, _col in before:
            total[code] += 1
        for code, _line, _col in before & after:
            kept[code] += 1
        for code, _line, _col in after - before:
            gained[code] += 1
        if before != after:
            changed.append((name, sorted(before - after), sorted(after - before)))
    for code in sorted(set(total) | set(gained)):
        extra = f", {gained[code]} new" if gained[code] else ""
        print(f"{code} {kept[code]}/{total[code]} kept{extra}")
    all_total, all_kept = sum(total.values()), sum(kept.values())
    print(f"all {all_kept}/{all_total} kept ({all_total - all_kept} lost, "
          f"{sum(gained.values())} new) in {len(fixture_files())} fixture files; "
          f"{len(changed)} files change")
    if verbose:
        for name, lost, new in changed:
            print(f"{name}: lost {lost} new {new}")
    return 0


def _outcome(path: Path, cwd: Path) -> tuple:
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": ""}
    try:
        proc = subprocess.run([sys.executable, str(path)], cwd=cwd, env=env, capture_output=True,
                              text=True, timeout=300)
    except subprocess.TimeoutExpired:
        return ("timeout",)
    last = proc.stderr.strip().splitlines()[-1:] if proc.returncode else []
    return (proc.returncode, last[0].split(":")[0] if last else "")


def run_fixtures() -> int:
    """The renamer keeps what the code does: each fixture and its renaming end alike on the CPU."""
    differ = 0
    paths = [p for p in fixture_files() if p.name.startswith(("bad_", "good_"))]
    with tempfile.TemporaryDirectory() as tmp:
        for path in paths:
            renamed = Path(tmp) / path.name
            renamed.write_text(rename_source(path.read_text(encoding="utf-8")).renamed,
                               encoding="utf-8")
            before, after = _outcome(path, path.parent), _outcome(renamed, path.parent)
            if before != after:
                differ += 1
                print(f"{path.relative_to(ROOT)}: {before} renamed {after}")
    print(f"{len(paths) - differ}/{len(paths)} fixtures end alike after renaming")
    return 1 if differ else 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-v", "--verbose", action="store_true")
    parser.add_argument("--keep", default="", help="comma-separated names never to rename")
    parser.add_argument("--run", action="store_true", help="run the fixtures (minutes)")
    args = parser.parse_args()
    if args.run:
        sys.exit(run_fixtures())
    sys.exit(main(args.verbose, [n for n in args.keep.split(",") if n]))

"""Rule isolation: a finding must not depend on which other rules run, nor on how the files
are spread over worker processes.

For each target directory (linted as its own project, with an empty config, as
bench/practitioner.py does), this lints once with `--select ALL` and once per rule with
`--select DLxxx`, and compares the rule's findings of the two runs byte for byte (every
field of the JSON report: code, path, line, column, end, message, fix, related sites).
`--jobs-too` also compares `-j 1` with `-j 2` (both `--select ALL`).

    python bench/rule_isolation.py fixtures                       # the fixtures, one project
    python bench/rule_isolation.py --each bench/.corpora/practitioner   # each repo its own project
    python bench/rule_isolation.py bench/.corpora/torchvision-0.24.1 --jobs-too
    python bench/rule_isolation.py --each bench/.corpora/practitioner --rules "" --reversed

Each selection runs in its own process (no state carried from one selection to another);
inside it the targets are linted one after another with devicelint's library entry point.
Exit status 1 when any difference is found; each is printed (`--show N` of them per rule).
DL901 (unused suppression) depends on which rules run by design and is not compared.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

NOT_COMPARED = {"DL901"}


def _lint_worker(select: str, jobs: int, targets: list[str]) -> None:
    """In a fresh process: lint each target as its own project, print one JSON list of
    [target, finding] pairs."""
    from devicelint import engine
    from devicelint.runner import Overrides, lint_paths

    if select == "REVERSED":
        # every rule, each file's rules run in the reverse of the usual order
        chosen = engine.rules_for
        engine.rules_for = lambda source, rules: chosen(source, rules)[::-1]
        select = "ALL"
    elif select == "FILES-REVERSED":
        # every rule, the files of each run linted in the reverse order (one process: what
        # one file's questions leave in the index's models of other files meets the others
        # in another order)
        from devicelint import runner

        run_jobs = runner._run_jobs

        def reversed_jobs(jobs_to_run, jobs):
            return run_jobs(jobs_to_run[::-1], 1)[::-1]

        runner._run_jobs = reversed_jobs
        select = "ALL"
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        config = Path(tmp) / "pyproject.toml"
        config.write_text("[tool.devicelint]\n")
        here = os.getcwd()
        for target in targets:
            os.chdir(target)
            try:
                run = lint_paths(["."], Overrides(select=[select], config=str(config)), use_cache=False, jobs=jobs)
            finally:
                os.chdir(here)
            out.extend([target, f.to_dict()] for f in run.findings)
    json.dump(out, sys.stdout)


def lint(select: str, jobs: int, targets: list[str]) -> dict[str, list[str]]:
    """code -> sorted JSON texts of its findings (each prefixed by its target)."""
    result = subprocess.run([sys.executable, __file__, "--worker", select, "--jobs", str(jobs), *targets],
                            capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"--select {select} -j {jobs}: exited {result.returncode}:\n{result.stderr[-3000:]}")
    found: dict[str, list[str]] = {}
    for target, finding in json.loads(result.stdout):
        found.setdefault(finding["code"], []).append(json.dumps([target, finding], sort_keys=True))
    return {code: sorted(texts) for code, texts in found.items()}


def compare(label: str, base: list[str], other: list[str], show: int) -> int:
    only_base = sorted(set(base) - set(other))
    only_other = sorted(set(other) - set(base))
    if not only_base and not only_other and len(base) == len(other):
        return 0
    print(f"{label}: {len(only_base)} only in the first run, {len(only_other)} only in the second"
          + ("" if only_base or only_other else " (duplicates differ)"))
    for text in only_base[:show]:
        print("  - " + text)
    for text in only_other[:show]:
        print("  + " + text)
    return max(1, len(only_base) + len(only_other))


def codes() -> list[str]:
    from devicelint.rule import rule_catalog

    return sorted(c for c in rule_catalog() if c not in NOT_COMPARED and c.startswith("DL"))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("paths", nargs="*")
    parser.add_argument("--each", action="append", default=[],
                        help="a directory whose every subdirectory is a project of its own")
    parser.add_argument("--jobs", type=int, default=1, help="worker processes of each run (default 1)")
    parser.add_argument("--jobs-too", action="store_true", help="also compare -j 1 with -j 2 (--select ALL)")
    parser.add_argument("--reversed", action="store_true",
                        help="also compare ALL with ALL run in the reverse rule order, and with ALL "
                             "linting the files in the reverse order (-j 1)")
    parser.add_argument("--rules", help="comma-separated codes to compare (default: every rule)")
    parser.add_argument("--show", type=int, default=5)
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        _lint_worker(args.worker, args.jobs, args.paths)
        return 0
    targets = [os.path.abspath(p) for p in args.paths]
    for parent in args.each:
        targets += sorted(str(p.resolve()) for p in Path(parent).iterdir() if p.is_dir())
    if not targets:
        parser.error("no targets")
    rules = args.rules.split(",") if args.rules else codes()
    if args.rules == "":
        rules = []
    every = lint("ALL", args.jobs, targets)
    print(f"--select ALL -j {args.jobs}: {sum(len(v) for v in every.values())} findings in {len(targets)} target(s)")
    differences = 0
    for code in rules:
        alone = lint(code, args.jobs, targets)
        # Every code of the single-rule run is compared: a rule's run reports only its own
        # code (and the engine's DL900/DL902, which must agree too).
        for seen in sorted(set(alone) | {code}):
            if seen in NOT_COMPARED:
                continue
            differences += compare(f"{seen}: ALL vs --select {code}", every.get(seen, []), alone.get(seen, []),
                                   args.show)
    if args.reversed:
        again = lint("REVERSED", args.jobs, targets)
        for seen in sorted(set(every) | set(again)):
            if seen not in NOT_COMPARED:
                differences += compare(f"{seen}: ALL vs ALL in reverse rule order", every.get(seen, []),
                                       again.get(seen, []), args.show)
        again = lint("FILES-REVERSED", 1, targets)
        for seen in sorted(set(every) | set(again)):
            if seen not in NOT_COMPARED:
                differences += compare(f"{seen}: ALL vs ALL linting the files in reverse order",
                                       every.get(seen, []), again.get(seen, []), args.show)
    if args.jobs_too:
        other = 2 if args.jobs == 1 else 1
        again = lint("ALL", other, targets)
        for seen in sorted(set(every) | set(again)):
            differences += compare(f"{seen}: -j {args.jobs} vs -j {other}", every.get(seen, []),
                                   again.get(seen, []), args.show)
    print(f"{differences} difference(s)")
    return 1 if differences else 0


if __name__ == "__main__":
    sys.exit(main())

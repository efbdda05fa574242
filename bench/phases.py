"""Where one cold lint's time goes, by phase: one process (`-j 1`), no cache, every default
rule, the seconds spent inside each phase (inclusive: a phase that runs inside another, as
the project index's model builds run inside the rules' walk, counts in both).

Phases: libcst's parse (`safe_parse.parse_module`, the project index's models of other files
included), the file gate (`gate.gated`), the walk with the rules' handlers
(`FileContext.walk`), the indexing pass inside it (`FileContext._index`), positions of
findings and of the lines messages name (`context._positions`), the project index's models
of other files (`ProjectIndex.model_of`), the findings made from the reports
(`engine._findings`).

    .venv/bin/python bench/phases.py [--index-off] DIR
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import io
import time


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("target")
    parser.add_argument("--index-off", action="store_true", help="lint without the project index")
    args = parser.parse_args()

    from devicelint import context, engine, project_index, runner, safe_parse
    from devicelint.cli import main as devicelint_main

    if args.index_off:
        project_index.ENABLED = False
    spent: collections.Counter = collections.Counter()
    calls: collections.Counter = collections.Counter()
    depth: collections.Counter = collections.Counter()

    def timed(owner, name: str, label: str) -> None:
        original = getattr(owner, name)

        def wrapper(*a, **k):
            depth[label] += 1
            started = time.perf_counter()
            try:
                return original(*a, **k)
            finally:
                depth[label] -= 1
                if not depth[label]:  # the outermost call of a recursive phase only
                    spent[label] += time.perf_counter() - started
                    calls[label] += 1

        setattr(owner, name, wrapper)

    timed(runner, "lint_bytes", "all files")
    timed(safe_parse, "parse_module", "libcst parse")
    timed(engine, "gated", "file gate")
    timed(context.FileContext, "walk", "walk and rules")
    timed(context.FileContext, "_index", "indexing pass")
    timed(context, "_positions", "positions")
    timed(project_index.ProjectIndex, "model_of", "other files' models")
    timed(engine, "_findings", "findings")
    started, cpu = time.perf_counter(), time.process_time()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):
        devicelint_main(["check", "--no-cache", "-j", "1", "-q", "--exit-zero", args.target])
    print(f"{args.target}: {time.perf_counter() - started:.2f} s wall, {time.process_time() - cpu:.2f} s CPU"
          f" (index {'off' if args.index_off else 'on'})")
    for label, seconds in spent.most_common():
        print(f"  {label:22s} {seconds:7.2f} s  {calls[label]:6d} calls")


if __name__ == "__main__":
    main()

"""Which other files' semantic models a lint builds through the project index, and which
questions asked for them (issue 13: the index's cost).

A model of another file costs a libcst parse, a walk and the questions then asked of it; a
question that could have been answered from the file's text, or not asked at all, is a cost
to cut. One process (`-j 1`), no cache, every rule. For each model built it prints the file,
then each distinct chain of rule and semantic-model functions that asked for it (the last
three frames in rules/ and devicelint/semantic/, innermost first) with how often, and
whether the file was linted before the first question (its own lint's tree was dropped:
parsed again), after it (its lint reuses the model's tree), or never (the file gate left it
unparsed, or it is not a file of the run).

    python bench/model_builds.py CORPUS_DIR
"""
from __future__ import annotations

import collections
import contextlib
import io
import os
import sys
import traceback

from devicelint import engine, project_index
from devicelint.cli import main as devicelint_main


def main(target: str) -> None:
    askers: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    events: list[tuple[str, str]] = []
    model_of = project_index.ProjectIndex.model_of
    lint_module = engine._lint_module

    def counted_model_of(self, module, context_type):
        path = os.path.realpath(module.path)
        if module.path not in self._models:
            events.append(("model", path))
        frames = [f"{os.path.basename(f.filename)[:-3]}.{f.name}" for f in traceback.extract_stack(limit=16)[:-1]
                  if f"{os.sep}rules{os.sep}" in f.filename or f"{os.sep}semantic{os.sep}" in f.filename]
        askers[path][" < ".join(reversed(frames[-3:]))] += 1
        return model_of(self, module, context_type)

    def counted_lint_module(path, *args, **kwargs):
        events.append(("lint", os.path.realpath(path)))
        return lint_module(path, *args, **kwargs)

    project_index.ProjectIndex.model_of = counted_model_of
    engine._lint_module = counted_lint_module
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):
            # (the findings are not what is measured; the command ends by SystemExit)
            devicelint_main(["check", "--no-cache", "-j", "1", "--select", "ALL", "-q", "--exit-zero", target])
    finally:
        project_index.ProjectIndex.model_of = model_of
        engine._lint_module = lint_module
    linted_at: dict[str, int] = {}
    for number, (kind, path) in enumerate(events):
        if kind == "lint":
            linted_at.setdefault(path, number)
    when = collections.Counter()
    root = os.path.realpath(target)
    for number, (kind, path) in enumerate(events):
        if kind != "model":
            continue
        at = linted_at.get(path)
        tag = "never linted" if at is None else "linted before" if at < number else "linted after"
        when[tag] += 1
        print(f"{os.path.relpath(path, root)} ({tag})")
        for chain, count in askers[path].most_common():
            print(f"    {count:3d}  {chain}")
    built = sum(when.values())
    print(f"{built} models built: " + ", ".join(f"{tag} {count}" for tag, count in sorted(when.items())))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])

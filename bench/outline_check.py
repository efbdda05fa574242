"""Whether the project index's outline of a module (devicelint/project_index.py `_outline`:
the bodies of the functions and classes at the left margin left out) gives the same facts and
function spans as the module's whole `ast`, and what reading it costs against the whole parse.

    python bench/outline_check.py DIR [DIR ...]

Prints each file where they differ (MISMATCH) or where the index reads the whole text instead
(FALLBACK: no outline made, or the outline does not parse), then the counts and the seconds of
both readings.
"""

from __future__ import annotations

import ast
import sys
import time
from pathlib import Path

from devicelint import project_index


def _spans(body: list, ends: dict[int, int]) -> dict[str, tuple[int, int]]:
    found = {}
    for statement in project_index._top_level(body):
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)):
            first = min([statement.lineno, *(d.lineno for d in statement.decorator_list)])
            found[statement.name] = (first, ends.get(statement.lineno) or statement.end_lineno or statement.lineno)
    return found


def main(roots: list[str]) -> None:
    files = fallbacks = mismatches = 0
    whole_seconds = outline_seconds = 0.0
    for root in roots:
        for path in sorted(Path(root).rglob("*.py")):
            try:
                text = path.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                continue
            if len(text) > project_index.BIG_MODULE_CHARS:
                continue  # read in pieces, not outlined
            start = time.perf_counter()
            whole = project_index._parse(text, note=False)
            whole_seconds += time.perf_counter() - start
            if whole is None:
                continue
            files += 1
            start = time.perf_counter()
            outlined = project_index._outline(text)
            tree = project_index._parse(outlined[0], note=False) if outlined is not None else None
            outline_seconds += time.perf_counter() - start
            if tree is None:
                fallbacks += 1
                print("FALLBACK", path, "no outline" if outlined is None else "the outline does not parse")
                continue
            if list(project_index._ast_bindings(whole.body)) != list(project_index._ast_bindings(tree.body)) \
                    or _spans(whole.body, {}) != _spans(tree.body, outlined[1]):
                mismatches += 1
                print("MISMATCH", path)
    print(f"{files} files: {mismatches} differ, {fallbacks} read whole; whole parse {whole_seconds:.2f} s, "
          f"outline and its parse {outline_seconds:.2f} s ({outline_seconds / max(whole_seconds, 1e-9):.2f}x)")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1:])

"""Round-trip `devicelint --fix --unsafe-fixes` over real package sources (not a CI test).

    .venv/bin/python bench/fix_roundtrip.py                 # every corpus in bench/corpus.py
    .venv/bin/python bench/fix_roundtrip.py torchvision     # one

For each corpus: copy its sources to a temporary directory, run the CLI's
`check --fix --unsafe-fixes --no-cache` on the copy (in this process, so that the fix outcome
can be counted per rule), then check that every .py file still parses with `ast` and libcst,
and that a second identical run changes no byte. Files the fix left byte-identical are not
re-parsed (they are what they were).
Prints the fixes applied per rule and the number of unparseable results; exits 1 if any file
became unparseable or the second run changed something.

    .venv/bin/python bench/fix_roundtrip.py --stress torchvision

`--stress` runs the same round-trip with two synthetic rules instead of the real ones
(`--select XS001,XS002`), to push the fix machinery through thousands of real-code spans:
XS001 rewrites every `.view(...)` method call to `.reshape(...)` (nested ones need several
rounds), XS002 adds `device=None` to every `torch.zeros/ones/empty/full/arange(...)` call
without `device=` (a keyword inserted into calls with comments, trailing commas, line breaks).
The rewritten code is not meant to run; only parsing and idempotency are checked.
"""

from __future__ import annotations

import ast
import hashlib
import shutil
import sys
import tempfile
import time
import warnings
from collections import Counter
from pathlib import Path

import libcst as cst
from click.testing import CliRunner

sys.path.insert(0, str(Path(__file__).resolve().parent))
from corpus import CORPORA, corpus  # noqa: E402

import devicelint.fix  # noqa: E402
import devicelint.rule  # noqa: E402
from devicelint.cli import main  # noqa: E402
from devicelint.rule import Rule  # noqa: E402

FIX_ARGS = ["check", "--fix", "--unsafe-fixes", "--no-cache", "--format", "json"]
STRESS_ARGS = ["--select", "XS001,XS002"]
FACTORIES = {"zeros", "ones", "empty", "full", "arange"}


class StressView(Rule):
    code = "XS001"
    name = "stress-view"
    default_enabled = False

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value == "view":
            new = node.with_changes(func=func.with_changes(attr=cst.Name("reshape")))
            self.report(node, "view", replacement=new)


class StressDevice(Rule):
    code = "XS002"
    name = "stress-device"
    default_enabled = False

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if not (isinstance(func, cst.Attribute) and func.attr.value in FACTORIES
                and isinstance(func.value, cst.Name) and func.value.value == "torch"):
            return
        if any(arg.star for arg in node.args) or any(
            arg.keyword is not None and arg.keyword.value == "device" for arg in node.args
        ):
            return
        new = node.with_changes(args=[*node.args, cst.Arg(
            keyword=cst.Name("device"), value=cst.Name("None"),
            equal=cst.AssignEqual(cst.SimpleWhitespace(""), cst.SimpleWhitespace("")),
        )])
        self.report(node, "device", replacement=new, safe=False)


def register_stress_rules() -> None:
    devicelint.rule._registry = {
        **devicelint.rule.all_rules(), "XS001": StressView, "XS002": StressDevice,
    }


def hashes(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*.py"))
    }


def parses(path: Path) -> bool:
    data = path.read_bytes()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ast.parse(data, str(path))
    except SyntaxError:
        return False
    from devicelint.source import decode_source

    try:
        cst.parse_module(decode_source(data))
    except Exception:  # noqa: BLE001 - any failure counts as unparseable
        return False
    return True


class Capture:
    """Wraps devicelint.fix.apply_fixes (the CLI imports it at call time) to keep the outcome."""

    def __init__(self) -> None:
        self.outcomes = []
        self.original = devicelint.fix.apply_fixes

    def __enter__(self):
        def wrapped(*args, **kwargs):
            outcome = self.original(*args, **kwargs)
            self.outcomes.append(outcome)
            return outcome

        devicelint.fix.apply_fixes = wrapped
        return self

    def __exit__(self, *exc) -> None:
        devicelint.fix.apply_fixes = self.original


def run_fix(root: Path, extra=STRESS_ARGS if "--stress" in sys.argv else ()):
    with Capture() as capture:
        result = CliRunner().invoke(main, [*FIX_ARGS, *extra, str(root)], catch_exceptions=False)
    return result, capture.outcomes[-1] if capture.outcomes else None


def roundtrip(name: str) -> bool:
    source = corpus(name)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / source.name
        shutil.copytree(source, root)
        files = sorted(root.rglob("*.py"))
        before = hashes(root)

        start = time.perf_counter()
        result, outcome = run_fix(root)
        seconds = time.perf_counter() - start
        after = hashes(root)
        changed = [p for p in after if after[p] != before[p]]
        unparseable_before = sum(not parses(source / p) for p in changed)
        unparseable = [p for p in changed if not parses(root / p)]

        second, second_outcome = run_fix(root)
        again = hashes(root)

    by_code = outcome.fixed_by_code if outcome else Counter()
    print(f"== {name}=={CORPORA[name]}: {len(files)} files")
    stress = " --select XS001,XS002 (synthetic stress rules)" if "--stress" in sys.argv else ""
    print(f"   command: devicelint check --fix --unsafe-fixes --no-cache{stress} <copy>  "
          f"({seconds:.1f}s)")
    print(f"   fixes applied: {sum(by_code.values())} in {len(changed)} files")
    for code, count in sorted(by_code.items()):
        print(f"     {code}: {count}")
    dropped = [m for m in (outcome.messages if outcome else []) if "would not parse" in m]
    other = [m for m in (outcome.messages if outcome else []) if "would not parse" not in m]
    print(f"   fixes dropped because the result would not parse: {len(dropped)}")
    for message in dropped + other:
        print(f"     {message}")
    print(f"   changed files that do not parse (ast and libcst): {len(unparseable)} "
          f"(of those, unparseable before: {unparseable_before})")
    for path in unparseable:
        print(f"     {path}")
    second_changed = [p for p in again if again[p] != after[p]]
    print(f"   second run: {second_outcome.fixed if second_outcome else 0} fixes, "
          f"{len(second_changed)} files changed")
    ok = not unparseable and not second_changed and result.exit_code in (0, 1)
    if not ok:
        print(f"   FAILED (first run exit {result.exit_code}: {result.stderr[-2000:]})")
    return ok


if __name__ == "__main__":
    if "--stress" in sys.argv:
        register_stress_rules()
    names = [a for a in sys.argv[1:] if not a.startswith("--")] or list(CORPORA)
    results = [roundtrip(name) for name in names]
    sys.exit(0 if all(results) else 1)

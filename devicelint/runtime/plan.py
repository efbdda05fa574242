"""What the child must watch: flagged lines per file, rule codes, and what to run.

Torch-free: built by the parent from findings, read back by the child as JSON. The plan
carries the call groups to wrap (each rule's `RuntimeSpec.watch`) and where each rule class
lives, so the child installs its wrappers before the user's code runs and imports the rules
(and libcst) only afterwards, to judge the lines.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from typing import Optional

from devicelint.rule import Rule, all_rules

CODE_DIR_RE = re.compile(r"^[A-Z]+[0-9]+$")


class _AllLines:
    """Watch every line of a file (a good fixture has no flagged line to watch)."""

    def __repr__(self) -> str:
        return "ALL_LINES"


ALL_LINES = _AllLines()


@dataclass
class Plan:
    # realpath -> {line: [codes]}; an empty dict plus `whole_files` means every line
    lines: dict[str, dict[int, list[str]]] = field(default_factory=dict)
    whole_files: dict[str, list[str]] = field(default_factory=dict)  # realpath -> codes
    argv: list[str] = field(default_factory=list)  # the command to run in the child
    device: str = "auto"
    sim_gpus: int = 2
    # realpath -> {line: head line}: the other lines of a multi-line flagged call, since a
    # frame reports the line of the sub-expression it is running, not where the call starts
    spans: dict[str, dict[int, int]] = field(default_factory=dict)
    # code -> "module:ClassName" of the rule, and the Watch values of their runtime specs
    rules: dict[str, str] = field(default_factory=dict)
    watch: list[str] = field(default_factory=list)
    # The finder (runtime/finder.py): record events on every line of the files under these
    # paths (the user's code), flagged or not, and report the pitfalls the rules' probes see
    user_roots: list[str] = field(default_factory=list)

    def add_rule(self, rule: type[Rule]) -> None:
        self.rules[rule.code] = f"{rule.__module__}:{rule.__qualname__}"
        if rule.runtime is not None:
            self.watch = sorted(set(self.watch) | {watch.value for watch in rule.runtime.watch})

    def find_under(self, roots: list[str]) -> None:
        """Turn the finder on for the code under `roots` (files or folders)."""
        from devicelint.runtime.finder import finder_rules

        self.user_roots = sorted({real(root) for root in roots})
        for rule in finder_rules(all_rules().values()):
            self.add_rule(rule)

    def codes(self) -> set[str]:
        found = {code for lines in self.lines.values() for codes in lines.values() for code in codes}
        for codes in self.whole_files.values():
            found.update(codes)
        return found

    def watched(self) -> dict[str, object]:
        watched: dict[str, object] = {}
        for path, lines in self.lines.items():
            heads = {line: line for line in lines}
            for line, head in self.spans.get(path, {}).items():
                heads.setdefault(line, head)
            watched[path] = heads
        for path in self.whole_files:
            watched[path] = ALL_LINES
        return watched

    def to_json(self) -> str:
        return json.dumps({
            "lines": {p: {str(n): c for n, c in lines.items()} for p, lines in self.lines.items()},
            "whole_files": self.whole_files,
            "argv": self.argv,
            "device": self.device,
            "sim_gpus": self.sim_gpus,
            "spans": {p: {str(n): h for n, h in span.items()} for p, span in self.spans.items()},
            "rules": self.rules,
            "watch": self.watch,
            "user_roots": self.user_roots,
        })

    @classmethod
    def from_json(cls, text: str) -> "Plan":
        data = json.loads(text)
        return cls(
            lines={p: {int(n): c for n, c in lines.items()} for p, lines in data["lines"].items()},
            whole_files=data.get("whole_files", {}),
            argv=data.get("argv", []),
            device=data.get("device", "auto"),
            sim_gpus=data.get("sim_gpus", 2),
            spans={p: {int(n): h for n, h in span.items()}
                   for p, span in data.get("spans", {}).items()},
            rules=data.get("rules", {}),
            watch=data.get("watch", []),
            user_roots=data.get("user_roots", []),
        )


def real(path: str) -> str:
    return os.path.realpath(path)


def plan_for(findings, argv: list[str], device: str, sim_gpus: int = 2) -> Plan:
    plan = Plan(argv=list(argv), device=device, sim_gpus=sim_gpus)
    registry = all_rules()
    for finding in findings:
        if finding.code in registry:
            plan.add_rule(registry[finding.code])
        lines = plan.lines.setdefault(real(finding.path), {})
        codes = lines.setdefault(finding.line, [])
        if finding.code not in codes:
            codes.append(finding.code)
        span = plan.spans.setdefault(real(finding.path), {})
        for line in range(finding.line + 1, min(finding.end_line, finding.line + 50) + 1):
            span[line] = max(span.get(line, 0), finding.line)
    return plan


def fixture_code(path: str) -> Optional[str]:
    """fixtures/DL001/good_x.py -> "DL001": the rule a fixture file is about."""
    parent = os.path.basename(os.path.dirname(os.path.abspath(path)))
    return parent if CODE_DIR_RE.match(parent) else None


def good_fixture_code(path: str) -> Optional[str]:
    """The rule whose pitfall a good_*.py fixture must not show: its folder's, or, in a
    project folder of a rule (fixtures/DL004/project/good_x.py), that rule's."""
    if not os.path.basename(path).startswith("good_"):
        return None
    return fixture_code(path) or fixture_code(os.path.dirname(os.path.abspath(path)))


def is_good_fixture(path: str) -> bool:
    return good_fixture_code(path) is not None


# `# runtime-gap: DL009 reason` on a line of a good fixture: the rule stays silent there by
# design although the runtime sees its pitfall (e.g. an unknown source that the caller happens
# to pass unpinned). Reported as a known gap, not as a failed premise. On a bad fixture's line:
# the rule is right but the runtime cannot observe the pitfall there; a refutation of that
# line does not fail a fixture run's exit code.
GAP_RE = re.compile(r"#\s*runtime-gap:\s*(?P<code>[A-Z]+[0-9]+)\b\s*(?P<reason>.*)$")


def known_gaps(path: str) -> dict[tuple[int, str], str]:
    gaps = {}
    try:
        with open(path, encoding="utf-8") as handle:
            for number, text in enumerate(handle, 1):
                match = GAP_RE.search(text)
                if match:
                    gaps[(number, match.group("code"))] = match.group("reason").strip()
    except OSError:
        pass
    return gaps


def is_fixture_run(path: str) -> bool:
    """Which files of a rule's fixture folder `confirm` runs: bad_*.py and good_*.py. The
    fix_*.py files are inputs of the fixer tests (their bad lines are bad_* cases too)."""
    if fixture_code(path) is None:
        return True
    return os.path.basename(path).startswith(("bad_", "good_"))


def imported_files(script: str) -> list[str]:
    """The local modules that running `python SCRIPT` may import, transitively (realpaths,
    the script first): what Python finds under the script's folder (sys.path[0] of a script
    run) for its imports, and relative imports from their packages. Every import statement
    counts, wherever it is (a function's, a branch's): watching a line that never runs
    costs nothing. Third-party and standard modules are not under the folder: not followed."""
    import ast

    base = os.path.dirname(real(script))
    found = [real(script)]
    seen = set(found)
    position = 0
    while position < len(found):
        current = found[position]
        position += 1
        try:
            with open(current, "rb") as handle:
                tree = ast.parse(handle.read(), current)
        except (OSError, SyntaxError, ValueError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                dotted = [alias.name for alias in node.names]
                where = base
            elif isinstance(node, ast.ImportFrom):
                where = base
                if node.level:
                    where = os.path.dirname(current)
                    for _ in range(node.level - 1):
                        where = os.path.dirname(where)
                module = node.module or ""
                dotted = [f"{module}.{alias.name}".lstrip(".") for alias in node.names
                          if alias.name != "*"] + ([module] if module else [])
            else:
                continue
            for name in dotted:
                for path in _module_files(where, name.split(".")):
                    if path not in seen:
                        seen.add(path)
                        found.append(path)
    return found


def _module_files(folder: str, parts: list[str]) -> list[str]:
    """The files `import a.b.c` runs under `folder`: a's, a.b's and a.b.c's (a package's
    `__init__.py`, or the module's file), as far as they exist."""
    files = []
    for part in parts:
        if not part:
            break
        package = os.path.join(folder, part)
        init = os.path.join(package, "__init__.py")
        if os.path.isfile(init):
            files.append(real(init))
            folder = package
        elif os.path.isfile(package + ".py"):
            files.append(real(package + ".py"))
            break
        elif os.path.isdir(package):
            folder = package  # a namespace package
        else:
            break
    return files

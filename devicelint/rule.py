"""The rule base class and the registry of rules (built-in and from plugins).

A rule is a small class in its own module under `rules/` (shipped as `devicelint.rules`):

    class DataParallel(Rule):
        code = "DL005"
        name = "data-parallel"
        summary = "`nn.DataParallel` is slower than `DistributedDataParallel`"
        tokens = ("DataParallel",)     # the file must contain one of these to be parsed for it

        def visit_Call(self, node): ...
            self.report(node, "message")

Handlers are named `visit_<NodeType>` / `leave_<NodeType>` after libcst node classes. All
enabled rules share one traversal of one parse. The class docstring is the rule's docs, with
the sections "Why is this bad?", "Example" and "Use instead".
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
from typing import ClassVar, Optional

import libcst as cst

from devicelint.context import FileContext, Report

CODE_RE = re.compile(r"^[A-Z]+[0-9]+$")


class Rule:
    code: ClassVar[str] = ""
    name: ClassVar[str] = ""
    summary: ClassVar[str] = ""
    message: ClassVar[str] = ""
    severity: ClassVar[str] = "warning"
    default_enabled: ClassVar[bool] = True
    # Prefilter: a file none of whose text contains one of these is not parsed for the rule.
    # An empty tuple means the rule needs every file.
    tokens: ClassVar[tuple[str, ...]] = ()
    fixable: ClassVar[bool] = False

    def __init__(self, ctx: FileContext) -> None:
        self.ctx = ctx

    def report(
        self,
        node: cst.CSTNode,
        message: Optional[str] = None,
        *,
        replacement: Optional[cst.CSTNode] = None,
        replace: Optional[cst.CSTNode] = None,
        safe: bool = True,
        fix_description: str = "",
    ) -> None:
        """Report a finding at `node`. A fix replaces `replace` (default: `node`) with
        `replacement`; `safe=False` marks it as needing `--unsafe-fixes`."""
        self.ctx.report(
            Report(
                rule=self,
                node=node,
                message=message or self.message or self.summary,
                fix=replacement,
                fix_node=replace if replace is not None else node,
                fix_safe=safe,
                fix_description=fix_description,
            )
        )

    @classmethod
    def docs(cls) -> str:
        return inspect.cleandoc(cls.__doc__ or cls.summary)

    @classmethod
    def handlers(cls) -> list[str]:
        return [n for n in dir(cls) if n.startswith(("visit_", "leave_"))]


_registry: Optional[dict[str, type[Rule]]] = None


def _rules_in_module(module) -> list[type[Rule]]:
    found = []
    for value in vars(module).values():
        if (
            isinstance(value, type)
            and issubclass(value, Rule)
            and value is not Rule
            and value.code
            and value.__module__ == module.__name__
        ):
            found.append(value)
    return found


def _check(rule: type[Rule], origin: str) -> None:
    if not CODE_RE.match(rule.code) or not rule.name:
        raise RuntimeError(f"rule {rule!r} from {origin} needs a code like DL001 and a name")


def all_rules() -> dict[str, type[Rule]]:
    """Every known rule by code: built-ins, then the `devicelint.rules` entry points."""
    global _registry
    if _registry is not None:
        return _registry
    import devicelint.rules as builtin
    from devicelint.diagnostics import DIAGNOSTICS

    registry: dict[str, type[Rule]] = {rule.code: rule for rule in DIAGNOSTICS}

    for info in sorted(pkgutil.iter_modules(builtin.__path__), key=lambda i: i.name):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"devicelint.rules.{info.name}")
        for rule in _rules_in_module(module):
            _check(rule, module.__name__)
            registry[rule.code] = rule
    for rule in _plugin_rules():
        registry.setdefault(rule.code, rule)
    _registry = dict(sorted(registry.items()))
    return _registry


def _plugin_rules() -> list[type[Rule]]:
    from importlib.metadata import entry_points

    found = []
    for ep in entry_points(group="devicelint.rules"):
        loaded = ep.load()
        candidates = [loaded] if isinstance(loaded, type) else _rules_in_module(loaded)
        for rule in candidates:
            _check(rule, f"entry point {ep.name}")
            found.append(rule)
    return found

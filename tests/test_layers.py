"""The import graph of devicelint/ and rules/ (issue 18): no cycles, layers import only
downward, no rule imports another module of rules/.

Every `import` counts, at the top of a module or inside a function or an
`if TYPE_CHECKING:` block: a lazy import is still a dependency, and a cycle hidden by one is
still a cycle. The layers, bottom to top (see CONTRIBUTING.md):

    source    files and notebooks as documents: reading, decoding, positions, cells,
              suppression comments, the parse guard, findings as data
    lint      the engine, its per-file context, the rule base class and registry, the
              engine's own diagnostics, the semantic model, node builders, the rules
    fixes     applying fixes to texts and files, --add-noqa
    pipeline  configuration, discovery, the run (read -> lint -> filter -> cache)
    report    renderers of findings
    top       the command line, `devicelint confirm` (runtime/), integrations (flake8,
              language server)

A module may import its own layer (without cycles) and the layers below it.
"""

from __future__ import annotations

import ast
from pathlib import Path

from conftest import ROOT

LAYERS = {
    "source": {
        "devicelint", "devicelint.finding", "devicelint.source", "devicelint.document",
        "devicelint.notebook", "devicelint.suppress", "devicelint.safe_parse",
        "devicelint.datafile", "devicelint.docs_url", "devicelint.collector", "devicelint.accepted", "devicelint.libcst_core",
    },
    "lint": {
        "devicelint.runtime_spec", "devicelint.tree", "devicelint.names", "devicelint.context",
        "devicelint.project_index",
        "devicelint.rule", "devicelint.diagnostics", "devicelint.engine", "devicelint.gate",
        "devicelint.builders", "devicelint.semantic", "devicelint.semantic.*",
        "devicelint.rules", "devicelint.rules.*",
    },
    "fixes": {"devicelint.fix", "devicelint.noqa"},
    "pipeline": {
        "devicelint.config", "devicelint.discovery", "devicelint.cache", "devicelint.runner",
        "devicelint.incremental",
    },
    "report": {"devicelint.reporters", "devicelint.reporters.*", "devicelint.rule_docs"},
    "top": {
        "devicelint.runtime", "devicelint.runtime.*", "devicelint.integrations",
        "devicelint.integrations.*", "devicelint.flake8_plugin", "devicelint.cli",
        "devicelint.__main__", "devicelint.dataclass_code",
    },
}
ORDER = list(LAYERS)


def _modules() -> dict[str, Path]:
    """Module name -> file, for devicelint/ and rules/ (which installs as devicelint.rules)."""
    found = {}
    for folder, package in ((ROOT / "devicelint", "devicelint"), (ROOT / "rules", "devicelint.rules")):
        for path in folder.rglob("*.py"):
            parts = list(path.relative_to(folder).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found[".".join([package, *parts])] = path
    return found


MODULES = _modules()


def _absolute(module: str, path: Path, node: ast.ImportFrom) -> str:
    if not node.level:
        name = node.module or ""
        return "devicelint." + name if name == "rules" or name.startswith("rules.") else name
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    base = package.split(".")[: len(package.split(".")) - node.level + 1]
    return ".".join(base + ([node.module] if node.module else []))


def imports(module: str) -> set[str]:
    """Our modules that `module` imports, anywhere in its file."""
    path = MODULES[module]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(module, path, node)
            # `from package import submodule` depends on the submodule; `from module import
            # name`, on the module.
            names = [f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base for a in node.names]
        else:
            continue
        for name in names:
            name = "devicelint." + name if name == "rules" or name.startswith("rules.") else name
            while name and name not in MODULES:  # `import devicelint.x.y` -> the module
                name = name.rpartition(".")[0]
            if name and name != module:
                found.add(name)
    return found


GRAPH = {module: imports(module) for module in MODULES}


def layer_of(module: str) -> str:
    for layer, members in LAYERS.items():
        for member in members:
            if module == member or (member.endswith(".*") and module.startswith(member[:-1])):
                return layer
    raise AssertionError(f"{module} has no layer: add it to LAYERS in tests/test_layers.py")


def _is_rule_module(module: str) -> bool:
    return module.startswith("devicelint.rules.")


def test_every_module_has_a_layer() -> None:
    for module in MODULES:
        layer_of(module)


def test_layers_import_only_downward() -> None:
    wrong = [
        f"{module} ({layer_of(module)}) imports {target} ({layer_of(target)})"
        for module, targets in sorted(GRAPH.items()) for target in sorted(targets)
        if ORDER.index(layer_of(target)) > ORDER.index(layer_of(module))
    ]
    assert not wrong, "\n".join(wrong)


def find_cycle(graph: dict[str, set[str]]) -> list[str]:
    """One import cycle of `graph` (its modules in order), or []."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(module: str) -> list[str]:
        state[module] = 1
        path.append(module)
        for target in sorted(graph.get(module, ())):
            if state.get(target) == 1:
                return path[path.index(target):] + [target]
            if target not in state:
                found = visit(target)
                if found:
                    return found
        path.pop()
        state[module] = 2
        return []

    for module in sorted(graph):
        if module not in state:
            found = visit(module)
            if found:
                return found
    return []


def test_no_import_cycles() -> None:
    cycle = find_cycle(GRAPH)
    assert not cycle, " -> ".join(cycle)


# Shared helper modules of rules/ that other helpers are removing (issue 12 moves their
# analyses into devicelint/semantic/). Rules may import these until they are gone, and
# nothing else of rules/.
RULE_HELPERS_BEING_REMOVED = {"devicelint.rules._devices", "devicelint.rules._loaders"}


def test_no_rule_imports_another_rule() -> None:
    wrong = [
        f"{module} imports {target}"
        for module, targets in sorted(GRAPH.items()) if _is_rule_module(module)
        for target in sorted(targets)
        if _is_rule_module(target) and target not in RULE_HELPERS_BEING_REMOVED
    ]
    assert not wrong, "\n".join(wrong)


def test_the_checks_see_what_they_check() -> None:
    """The graph is built from real imports: a lazy import inside a function counts, and
    the checks above catch a cycle and an upward import."""
    assert "devicelint.engine" in GRAPH["devicelint.runner"]  # imported inside a function
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert ORDER.index(layer_of("devicelint.runner")) > ORDER.index(layer_of("devicelint.engine"))
    assert _is_rule_module("devicelint.rules.dl001_transfer_in_loop")
    assert any(_is_rule_module(m) for m in GRAPH), "rules/ was not read"

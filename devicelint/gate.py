"""The file gate: which enabled rules may report anything in a file, decided from CPython's
`ast` before libcst parses it (issue 17: libcst's parse alone is 2.4-5.2x ruff on model
code, so a cold run within 3x ruff must parse fewer files).

Each rule declares its gate in its own module: `gate(facts) -> bool`, a necessary condition
of any finding of that rule, derived from what its detection needs at the reporting site
(a `.view(...)` call with arguments for DL003, a move inside a loop for DL001). True means
"may fire": the rule runs as before. A rule without a gate always runs. When no enabled
rule may fire, the engine does not parse the file with libcst at all; its suppression
comments are judged as in a file with no findings (DL901), which is what the parse would
have given, since no rule could report.

`FileFacts` is what the gates ask: one `ast` walk per file collects the identifiers the
code uses (not those in strings or comments), its string constants (not docstrings), the
calls with their methods, keywords and loop context, and a few class shapes. Questions
about other files go to the project index, lazily and only when a gate asks, and are noted
as the file's dependencies as the rules' own questions are (the result cache).

Exactness is tested: `devicelint --no-cache --select ALL --output-format json` is
byte-identical with the gate on and off (`DEVICELINT_NO_GATE=1`) on the fixtures and the
bench corpora (tests/test_gate.py, bench/gate_check.py).
"""

from __future__ import annotations

import ast
import os
import re
from typing import Iterable, Optional

from devicelint import collector

# Flags of a call or keyword (bit masks).
ANY = 1
IN_STEP_LOOP = 2      # in the body of a for/while loop of the same function (loops.enclosing_loops)
IN_ANY_LOOP = 4       # ... or of a comprehension (context.loops)
STATEMENT = 8         # the whole expression statement (`x.to(d)` on its own line)
VALUE = 16            # not a whole statement
WITH_ARGS = 32        # the call passes some argument
ATTRIBUTE_CALL = 64   # the callee is an attribute (`x.f(...)`)
WITHOUT_DEVICE = 128  # no `device=` keyword (`**kwargs` may hold one: the API reads it not)

# Deeper than this (ast nesting), libcst's recursive parse or code generation may fail where
# CPython's parser does not (a DL900 the gate would hide): such files are not gated.
MAX_GATED_DEPTH = 80

# Identifiers that may make a value live on the accelerator (semantic/model.py: device
# names and their hints `_DEVICE_NAME`, `torch.cuda.*`, `torch.device`, `device=`,
# `current_accelerator`, `.cuda()`): a superset, matched against every identifier.
_DEVICE_ID = re.compile(r"cuda|device|accelerator|(^|_)(dev|gpu)$", re.I)
# Heads of device strings (`device_string_place`), and the legacy CUDA tensor types' text.
_DEVICE_STRING_HEADS = frozenset({"cuda", "mps", "xpu", "hpu", "npu", "xla", "meta", "mtia",
                                  "privateuseone"})

_FOR_WHILE = (ast.For, ast.AsyncFor, ast.While)
_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


def enabled() -> bool:
    """The gate is on unless `DEVICELINT_NO_GATE` is set (tests and benches compare)."""
    return not os.environ.get("DEVICELINT_NO_GATE")


class FileFacts:
    """What the rules' gates ask of one file (see the module docstring)."""

    def __init__(self, path: str, tree: ast.Module, source: str = "") -> None:
        self.path = path
        self._tree = (source, tree)  # given to the project index: the file's facts unparsed again
        self.ids: set[str] = set()
        self.strings: set[str] = set()
        self.attr_calls: dict[str, int] = {}
        self.keywords: dict[str, int] = {}
        self.callees: dict[str, int] = {}      # dotted callee -> flags
        self.int_arg_callees: set[str] = set()  # last names of callees given an int literal
        self.int_keywords: set[str] = set()     # keywords given an int literal
        self.calls = 0
        self.has_step_loop = False              # a for/while loop
        self.has_with = False                   # a with statement
        self.has_step_slice = False             # `x[::2]`
        # (name, bases, its __init__ stores `self.x = ...`, `x.attr = [...]` of something
        # other than literals in its body (DL002))
        self._classes: Optional[list[tuple[str, list[str], bool, bool]]] = None
        self._class_nodes: list[ast.ClassDef] = []
        self._attr_stores: list[tuple[int, Optional[str]]] = []   # (line, receiver name)
        self._containers: list[tuple[int, Optional[bool]]] = []   # (line, may hold a module)
        self._module_classes: Optional[set[str]] = None
        self.star_import = False
        self.import_names: set[str] = set()     # names bound by imports
        self.imported_from: dict[str, set[str]] = {}  # bound name -> last names imported
        self.import_targets: dict[str, set[str]] = {}  # bound name -> qualified names imported
        self.alias_heads: set[str] = set()      # top-level `name = dotted` or sys.modules[...]
        self.alias_uses: set[str] = set()       # dotted names read whose head is an alias head
        self.depth = 0
        self._view = False
        self._alias_ids: Optional[set[str]] = None
        self._foreign: dict[str, Optional[tuple]] = {}
        self._collect(tree)

    # -- collection ----------------------------------------------------------------------
    def _collect(self, tree: ast.Module) -> None:
        for statement in tree.body:
            if isinstance(statement, ast.Assign):
                value = statement.value
                if _dotted(value) is not None or _is_self_module(value):
                    for target in statement.targets:
                        if isinstance(target, ast.Name):
                            self.alias_heads.add(target.id)
        ids = self.ids
        strings = self.strings
        # (node, flags inherited: loops; depth)
        stack: list[tuple[ast.AST, int, int]] = [(tree, 0, 0)]
        while stack:
            node, loops, depth = stack.pop()
            if depth > self.depth:
                self.depth = depth
            kind = type(node)
            if kind is ast.Name:
                ids.add(node.id)
                continue
            if kind is ast.Attribute:
                ids.add(node.attr)
                if self.alias_heads:
                    dotted = _dotted(node)
                    if dotted is not None and dotted.partition(".")[0] in self.alias_heads:
                        self.alias_uses.add(dotted)
            elif kind is ast.Constant:
                if isinstance(node.value, str):
                    strings.add(node.value)
                elif isinstance(node.value, bytes):
                    strings.add(node.value.decode("latin-1"))
                continue
            elif kind is ast.Expr and type(node.value) is ast.Constant:
                continue  # a docstring or other bare string: never code
            elif kind is ast.JoinedStr:
                strings.add("".join(v.value for v in node.values
                                    if type(v) is ast.Constant and isinstance(v.value, str)))
            elif kind is ast.Call:
                self._call(node, loops, False)
            elif kind is ast.Expr and type(node.value) is ast.Call:
                self._call(node.value, loops, True)
                stack.extend(self._children(node.value, loops, depth + 1))
                continue
            elif kind in (ast.Import, ast.ImportFrom):
                for alias in node.names:
                    if alias.name == "*":
                        self.star_import = True
                        continue
                    ids.update(alias.name.split("."))
                    bound = alias.asname or alias.name.partition(".")[0]
                    ids.add(bound)
                    self.import_names.add(bound)
                    self.imported_from.setdefault(bound, set()).add(alias.name.rsplit(".", 1)[-1])
                    if kind is ast.Import:
                        target = alias.name if alias.asname else bound
                    else:
                        target = ("." * node.level) + (f"{node.module}." if node.module else "") + alias.name
                    self.import_targets.setdefault(bound, set()).add(target)
                if kind is ast.ImportFrom and node.module:
                    ids.update(node.module.split("."))
                continue
            elif kind in (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef):
                ids.add(node.name)
                if kind is ast.ClassDef:
                    self._class_nodes.append(node)  # looked at when a gate asks (classes())
                loops = 0  # loops outside a function do not run its body
            elif kind is ast.Lambda:
                loops = 0
            elif kind is ast.arg:
                ids.add(node.arg)
            elif kind is ast.keyword:
                if node.arg:
                    ids.add(node.arg)
            elif kind in (ast.Global, ast.Nonlocal):
                ids.update(node.names)
            elif kind in _FOR_WHILE:
                self.has_step_loop = True
            elif (kind is ast.Assign or kind is ast.AnnAssign and node.value is not None) \
                    and any(type(t) is ast.Attribute for t in (node.targets if kind is ast.Assign else [node.target])):
                self._store(node)
            elif kind in (ast.With, ast.AsyncWith):
                self.has_with = True
            elif kind is ast.Slice and node.step is not None:
                self.has_step_slice = True
            stack.extend(self._children(node, loops, depth + 1))

    @staticmethod
    def _children(node: ast.AST, loops: int, depth: int) -> list[tuple[ast.AST, int, int]]:
        kind = type(node)
        if kind in _FOR_WHILE or kind in _COMPREHENSIONS:
            # A loop's iterable is evaluated once, but counting it as inside is a superset.
            loops = loops | IN_ANY_LOOP | (IN_STEP_LOOP if kind in _FOR_WHILE else 0)
        found = []
        for name in _child_fields(kind):
            value = getattr(node, name, None)
            if type(value) is list:
                found.extend((child, loops, depth) for child in value if isinstance(child, ast.AST))
            elif value is not None and isinstance(value, ast.AST):
                found.append((value, loops, depth))
        return found

    def _call(self, node: ast.Call, loops: int, statement: bool) -> None:
        self.calls += 1
        flags = ANY | loops | (STATEMENT if statement else VALUE)
        if node.args or node.keywords:
            flags |= WITH_ARGS
        if not any(keyword.arg == "device" for keyword in node.keywords):
            flags |= WITHOUT_DEVICE
        func = node.func
        if type(func) is ast.Attribute:
            flags |= ATTRIBUTE_CALL
            self.attr_calls[func.attr] = self.attr_calls.get(func.attr, 0) | flags
        dotted = _dotted(func)
        if dotted is not None:
            self.callees[dotted] = self.callees.get(dotted, 0) | flags
        for keyword in node.keywords:
            if keyword.arg:
                self.keywords[keyword.arg] = self.keywords.get(keyword.arg, 0) | flags
                if _is_int(keyword.value):
                    self.int_keywords.add(keyword.arg)
        if any(_is_int(a) for a in node.args) or any(_is_int(k.value) for k in node.keywords):
            last = func.attr if type(func) is ast.Attribute else func.id if type(func) is ast.Name else ""
            self.int_arg_callees.add(last)

    def _store(self, node: ast.AST) -> None:
        """An assignment to an attribute (`self.x = ...`): its line and receiver, and, when
        its value is a display or comprehension, whether that may hold a module (DL002)."""
        targets = node.targets if type(node) is ast.Assign else [node.target]
        receivers = [t.value.id if type(t.value) is ast.Name else None for t in targets if type(t) is ast.Attribute]
        if not receivers:
            return
        for receiver in receivers:
            self._attr_stores.append((node.lineno, receiver))
        elements = _container_elements(node.value)
        if elements is not None:
            # `self.layers = []`: what the class appends or stores into it decides (None).
            self._containers.append((node.lineno, None if not elements else any(not _constant(e) for e in elements)))

    def _class(self, node: ast.ClassDef) -> None:
        first, last = node.lineno, node.end_lineno or node.lineno
        container = False
        for line, holds in self._containers:
            if first <= line <= last:
                if holds is None:
                    holds = any(not _constant(e) for e in _fills(node))
                if holds:
                    container = True
                    break
        bases = [d for d in (_dotted(b) for b in node.bases) if d is not None]
        if not bases:
            return  # not an nn.Module subclass: DL002 and DL017 look at those only
        stores = False
        for method in node.body:
            if type(method) in (ast.FunctionDef, ast.AsyncFunctionDef) and method.name == "__init__":
                params = method.args.posonlyargs + method.args.args
                if not params:
                    continue
                me, first, last = params[0].arg, method.lineno, method.end_lineno or method.lineno
                # (a store in a function nested in `__init__` counts too: a superset)
                if any(first <= line <= last and receiver == me for line, receiver in self._attr_stores):
                    stores = True
        self._classes.append((node.name, bases, stores, container))

    # -- questions -----------------------------------------------------------------------
    def calls_method(self, names: Iterable[str], flags: int = ANY) -> bool:
        """Some call `x.name(...)` with every bit of `flags`."""
        return any(self.attr_calls.get(n, 0) & flags == flags for n in names)

    def uses_keyword(self, names: Iterable[str], flags: int = ANY) -> bool:
        """Some call passes `name=` (and has every bit of `flags`)."""
        return any(self.keywords.get(n, 0) & flags == flags for n in names)

    def names(self) -> set[str]:
        """The identifiers of the code, with those the module-level aliases it binds stand
        for in other files (`DP = utils.DP` -> `torch.nn.DataParallel`, through the project
        index as the semantic model's `qualname` reads them)."""
        if self._alias_ids is None:
            found: set[str] = set()
            view = self.view() if self.alias_uses or self.alias_heads else None
            if view is not None:
                for dotted in sorted(self.alias_uses | self.alias_heads):
                    target = view.alias(dotted)
                    if target:
                        found.update(target.split("."))
            self._alias_ids = found
        return self.ids | self._alias_ids if self._alias_ids else self.ids

    def mentions(self, *names: str) -> bool:
        """One of `names` is an identifier of the code (or of what its aliases stand for)."""
        known = self.names()
        return any(n in known for n in names)

    def has_string(self, predicate) -> bool:
        return any(predicate(s) for s in self.strings)

    def device_source(self) -> bool:
        """Something in the file may put a value on the accelerator: an identifier that
        names a device, CUDA or an accelerator (also as a hint: a parameter `dev`), a move
        (`.to(...)`, `.cuda()`), a device string (`"cuda:0"`, `"mps"`, `"meta"`, a legacy
        `"torch.cuda.FloatTensor"`), or a call of another file's function that builds a
        `torch.device` (semantic model `_project_loader`). Without one no value of the file
        is on the device, and no rule that needs a device tensor or module can fire."""
        if any(_DEVICE_ID.search(i) for i in self.names()):
            return True
        if "to" in self.attr_calls:
            return True
        for text in self.strings:
            lowered = text.lower()
            if "cuda" in lowered or lowered.split(":", 1)[0].strip() in _DEVICE_STRING_HEADS:
                return True
        # A device another file's function returns (`dist_util.dev()`) puts a tensor or a
        # module on the device only through `.to(dev)`, `.cuda(dev)`, `device=dev`,
        # `torch.device(dev)` (each seen above) or as the default of a `with dev:` block.
        return self.has_with and self.calls_foreign(
            lambda symbol, view: symbol.kind == "function" and "torch.device" in view.calls_of(symbol))

    @property
    def classes(self) -> list[tuple[str, list[str], bool, bool]]:
        if self._classes is None:
            self._classes = []
            for node in self._class_nodes:
                self._class(node)
        return self._classes

    def module_class_with(self, stores: bool = False, container: bool = False) -> bool:
        """Some class that may derive from an nn.Module class (semantic model
        `module_classes`: a base whose import names a `torch.nn` class or a Lightning
        module, a class of this file that does, or, per the project index, a class of
        another local module that does) stores `self.x = ...` in its `__init__` (`stores`)
        or assigns a display or comprehension of non-literals to an attribute in its body
        (`container`)."""
        candidates = [c for c in self.classes if (c[2] or not stores) and (c[3] or not container)]
        if not candidates:
            return False
        found = self.module_classes()
        return any(c[0] in found for c in candidates)

    def module_classes(self) -> set[str]:
        if self._module_classes is None:
            from devicelint.semantic.api import torch_api

            api = torch_api()

            def is_root(qual: str) -> bool:
                return api.is_module_class(qual) \
                    or qual.startswith(("pytorch_lightning.", "lightning.")) and qual.endswith("Module")

            found: set[str] = set()
            changed = True
            while changed:
                changed = False
                for name, bases, _stores, _container in self.classes:
                    if name in found:
                        continue
                    for base in bases:
                        if base in found or any(is_root(q) for q in self._qualnames(base)) \
                                or self._foreign_module_class(base, is_root):
                            found.add(name)
                            changed = True
                            break
            self._module_classes = found
        return self._module_classes

    def _qualnames(self, dotted: str) -> set[str]:
        head, _, rest = dotted.partition(".")
        return {f"{t}.{rest}" if rest else t for t in self.import_targets.get(head, ())}

    def _foreign_module_class(self, dotted: str, is_root) -> bool:
        if not self._may_be_imported(dotted):
            return False
        view = self.view()
        return view is not None and view.is_module_class(dotted, is_root)

    def cpu_source(self) -> bool:
        """Something in the file may make a tensor on the host: a factory or host-placing
        function of the API table (`torch.zeros`, `torch.tensor`, `from_numpy`, a legacy
        `FloatTensor`, ... by their last name), `.cpu()`, `.to(...)`, `.type(...)`, NumPy,
        a `Parameter` made empty, loaders and datasets (their batches and rows), or a call
        of another file's function that builds a loader (semantic model `_project_loader`).
        A factory given `device=` and `.to(...)` count only where the host can be named."""
        called = self.called_names()
        if called & _cpu_names() or any(n.endswith("Tensor") for n in called):
            return True
        factories = api_names(places=("factory",))
        # A factory given `device=` makes a host tensor only where that device is the host:
        # a "cpu" string, the device of a host tensor (another root), or a device another
        # file's function builds.
        if self.called_names(WITHOUT_DEVICE) & factories:
            return True
        # `.to(...)` makes one only to the host: a "cpu" string, or a device another file's
        # function builds (to a host tensor's device or dtype: another root is needed).
        if (called & factories or "to" in self.attr_calls) and (
                any("cpu" in text.lower() for text in self.strings) or self.calls_foreign(
                    lambda symbol, view: symbol.kind == "function" and "torch.device" in view.calls_of(symbol))):
            return True
        # `.type(torch.FloatTensor)` (or its text): a host tensor type.
        if "type" in self.attr_calls and (any(n.endswith("Tensor") for n in self.names())
                                          or any(text.startswith("torch.") for text in self.strings)):
            return True
        if any("ataset" in n or "oader" in n or n in ("numpy", "ndarray") for n in self.names()):
            return True
        return self.calls_foreign(_builds_loader)

    def called_names(self, flags: int = ANY) -> set[str]:
        """The last names of the callees (`zeros` of `torch.zeros(...)`) of the calls with
        every bit of `flags`, the names their imports bind them from (`from torch import
        zeros as z`), and what module-level aliases stand for (`names`, as a superset)."""
        callees = [d for d, f in self.callees.items() if f & flags == flags]
        found = {dotted.rsplit(".", 1)[-1] for dotted in callees}
        found.update(n for n, f in self.attr_calls.items() if f & flags == flags)
        for dotted in callees:
            head = dotted.partition(".")[0]
            found.update(self.imported_from.get(head, ()))
        if self.alias_heads:
            found |= self.names() - self.ids
        return found

    def _may_be_imported(self, dotted: str) -> bool:
        """Only a name an import binds (or a star import may), or a module-level alias
        (`lib = sys.modules[__name__]`, `Base = models.Base`), can stand for another
        module's function or class (or, through the index, this module's own)."""
        head = dotted.partition(".")[0]
        return self.star_import or head in self.import_names or head in self.alias_heads

    def calls_foreign(self, wanted=None, flags: int = ANY) -> bool:
        """Some call (with every bit of `flags`) runs a function or class of another local
        module, per the project index (`syncs.runs_foreign_function`); with `wanted`, one
        for which `wanted(symbol, view)` holds. Star imports count as unknown: True."""
        if not any(call_flags & flags == flags and self._may_be_imported(dotted)
                   for dotted, call_flags in self.callees.items()):
            return False
        view = self.view()
        if view is None:
            return False
        for dotted, call_flags in self.callees.items():
            if call_flags & flags != flags or not self._may_be_imported(dotted):
                continue
            symbol = self._foreign_symbol(view, dotted)
            if symbol is not None and (wanted is None or wanted(symbol, view)):
                return True
        return False

    def imports_foreign(self) -> bool:
        """The file binds a function or class of another local module (an import, a star
        import of a local module, or a module whose members it reads): code it may call
        whose effects another file's model decides (a module's forward, a helper)."""
        view = self.view()
        if view is None:
            return False
        if self.star_import:
            return True
        for dotted in self.callees:
            if dotted.partition(".")[0] in self.import_names and self._foreign_symbol(view, dotted):
                return True
        for name in sorted(self.import_names):
            if name in self.ids and self._foreign_symbol(view, name):
                return True
        return False

    def _foreign_symbol(self, view, dotted: str):
        if dotted not in self._foreign:
            symbol = view.resolve(dotted)
            self._foreign[dotted] = symbol if symbol is not None and symbol.kind in ("function", "class") \
                and symbol.module is not view.module else None
        return self._foreign[dotted]

    def view(self):
        """This file's view of the project index (None without one)."""
        if self._view is False:
            from devicelint import project_index

            self._view = project_index.view_for(self.path, None, tree=self._tree)
            self._tree = None
        return self._view


_CPU_NAMES: Optional[frozenset] = None
_API_NAMES: dict[str, frozenset] = {}


def api_names(*, layouts: tuple[str, ...] = (), places: tuple[str, ...] = ()) -> frozenset:
    """Last names of the API table's functions and methods with one of `layouts` (how
    they lay out their result: "transpose", "permute", "expand", "narrow") or `places`
    ("factory": made on the default device by sizes)."""
    key = f"{layouts}{places}"
    found = _API_NAMES.get(key)
    if found is None:
        from devicelint.semantic.api import torch_api

        api = torch_api()
        found = frozenset(name.rsplit(".", 1)[-1] for table in (api.functions, api.methods)
                          for name, spec in table.items() if spec.layout in layouts or spec.place in places)
        _API_NAMES[key] = found
    return found


def _cpu_names() -> frozenset:
    """Last names of the API table's functions and methods that put their result on the
    host whatever their input and device (`place = "cpu"`), and `Parameter`."""
    global _CPU_NAMES
    if _CPU_NAMES is None:
        from devicelint.semantic.api import torch_api

        api = torch_api()
        # (NumPy's functions: a file that calls them imports numpy, a root of its own)
        names = {n.rsplit(".", 1)[-1] for n, s in api.functions.items()
                 if s.place == "cpu" and not n.startswith("numpy.")}
        names.update(n for n, s in api.methods.items() if s.place in ("factory", "cpu")
                     and s.result not in ("number", "host-list", "none"))
        names.update(("Parameter", "cpu", "numpy"))
        _CPU_NAMES = frozenset(names)
    return _CPU_NAMES


def _builds_loader(symbol, view) -> bool:
    if symbol.kind != "function":
        return False
    from devicelint.semantic.api import torch_api

    api = torch_api()
    return any(api.is_loader(q) for q in view.calls_of(symbol))


_FIELDS: dict[type, tuple[str, ...]] = {}
# Fields that hold only markers (`Load`, `Add`, `Eq`): nothing a gate asks is in them.
_MARKER_FIELDS = frozenset({"ctx", "op", "ops"})


def _child_fields(kind: type) -> tuple[str, ...]:
    found = _FIELDS.get(kind)
    if found is None:
        found = _FIELDS[kind] = tuple(f for f in kind._fields if f not in _MARKER_FIELDS)
    return found


def facts_of(path: str, source: str) -> Optional[FileFacts]:
    """The facts of a file, or None when `ast` cannot read it (or it is nested deeper than
    the gate trusts): then every rule runs, as without the gate."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    try:
        facts = FileFacts(path, tree, source)
    except RecursionError:
        return None
    return facts if facts.depth <= MAX_GATED_DEPTH else None


def gated(path: str, source: str, rules: list) -> list:
    """The rules of `rules` whose gate says they may fire in this file (all of them when
    the gate is off, or when the file cannot be read with `ast`)."""
    if not enabled() or not any(getattr(r, "gate", None) is not None for r in rules):
        return rules
    if _CUDA_OR_DEVICE.search(source):
        # The text names a device or CUDA: the file is very likely parsed anyway (DL015's and
        # DL002's gates need only that), and the gate's `ast` parse and walk would cost more
        # than the rules it leaves out (timm: CPU 17.4 -> 21.1 s with every file gated).
        # Every rule runs, as without the gate.
        return rules
    # `ast` trees hold no cycles: the cyclic collector would only re-examine, again and
    # again, what the run keeps alive (devicelint/collector.py).
    with collector.paused():
        facts = facts_of(path, source)
        if facts is None:
            return rules
        return [r for r in rules if r.gate is None or r.gate(facts)]


_CUDA_OR_DEVICE = re.compile(r"device|cuda", re.I)


def _dotted(node: ast.AST) -> Optional[str]:
    parts = []
    while type(node) is ast.Attribute:
        parts.append(node.attr)
        node = node.value
    if type(node) is not ast.Name:
        return None
    parts.append(node.id)
    return ".".join(reversed(parts))


def _is_self_module(node: ast.AST) -> bool:
    """`sys.modules[__name__]` (any subscript by `__name__`)."""
    return type(node) is ast.Subscript and type(node.slice) is ast.Name and node.slice.id == "__name__"


def _is_int(node: ast.AST) -> bool:
    if type(node) is ast.UnaryOp and type(node.op) in (ast.USub, ast.UAdd):
        node = node.operand
    return type(node) is ast.Constant and type(node.value) is int


def _container_elements(node: ast.AST) -> Optional[list[ast.AST]]:
    """The element expressions of a display or comprehension, or of those in `a + [...]`/
    `a * [...]` (DL002's `_plain_elements`, as a superset); None for any other value."""
    kind = type(node)
    if kind in (ast.List, ast.Tuple, ast.Set):
        return list(node.elts)
    if kind is ast.Dict:
        return list(node.values)
    if kind in (ast.ListComp, ast.SetComp):
        return [node.elt]
    if kind is ast.DictComp:
        return [node.value]
    if kind is ast.BinOp and type(node.op) in (ast.Add, ast.Mult):
        left, right = _container_elements(node.left), _container_elements(node.right)
        if left is None and right is None:
            return None
        return (left or []) + (right or []) or [node]  # `[] + x`: x may hold anything
    return None


def _constant(node: ast.AST) -> bool:
    """A literal (or a display of literals): never a module."""
    kind = type(node)
    if kind is ast.Constant:
        return True
    if kind is ast.UnaryOp:
        return _constant(node.operand)
    if kind in (ast.Tuple, ast.List, ast.Set):
        return all(_constant(e) for e in node.elts)
    return False


def _fills(owner: ast.ClassDef) -> list[ast.AST]:
    """What a class's body appends, extends, inserts or stores by index (DL002's `_filled`,
    as a superset: into any target)."""
    found: list[ast.AST] = []
    for node in ast.walk(owner):
        if type(node) is ast.Call and type(node.func) is ast.Attribute \
                and node.func.attr in ("append", "extend", "insert"):
            found.extend(node.args)
            found.extend(k.value for k in node.keywords)
        elif type(node) is ast.Assign and any(type(t) is ast.Subscript for t in node.targets):
            found.append(node.value)
    return found



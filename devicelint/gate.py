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
import bisect
import os
import re
from typing import Iterable, Optional

from devicelint import accepted, collector
from devicelint.source import line_starts

# Flags of a call or keyword (bit masks).
ANY = 1
IN_STEP_LOOP = 2      # in the body of a for/while loop of the same function (loops.enclosing_loops)
IN_ANY_LOOP = 4       # ... or of a comprehension (context.loops)
STATEMENT = 8         # the whole expression statement (`x.to(d)` on its own line)
VALUE = 16            # not a whole statement
WITH_ARGS = 32        # the call passes some argument
ATTRIBUTE_CALL = 64   # the callee is an attribute (`x.f(...)`)
WITHOUT_DEVICE = 128  # no `device=` keyword (`**kwargs` may hold one: the API reads it not)
IN_FUNCTION = 256     # in the body of a function (or lambda), not at module or class level
# How `FileFacts.uses_foreign` says a name is used other than as a call's callee:
VALUE_USE = 512       # read as a value (an argument, a base, a decorator, an alias: not an annotation)
TYPE_TEST = 1024      # `isinstance(x, Cls)` / `issubclass`'s second argument

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
        self.with_items: list[ast.AST] = []     # what the with statements enter
        # Calls that may put a value on the device (`_device_target`): (dotted callee or
        # None, flags, the method when an attribute call, whether the target is `x.dtype`)
        self._placing: list[tuple[Optional[str], int, Optional[str], bool]] = []
        self.stores_dtype = False               # `x.dtype = ...`: `.to(x.dtype)` may be a device
        self.copies_into_attribute = False      # `x.attr.copy_(v)`, `x.attr.data.copy_(v)` (DL018)
        self.has_any_loop = False               # a for/while loop or a comprehension
        self.function_names: set[str] = set()   # names of the functions the file defines
        self.has_step_slice = False             # `x[::2]`
        # (name, bases, the class, `x.attr = [...]` of something other than literals in its
        # body (DL002))
        self._classes: Optional[list[tuple[str, list[str], ast.ClassDef, bool]]] = None
        self._class_nodes: list[ast.ClassDef] = []
        # `x.attr = [...]` (a display or comprehension): (line, its elements, the attributes)
        self._containers: list[tuple[int, list[ast.AST], list[str], ast.AST]] = []
        self._attribute_counts: Optional[dict[str, int]] = None
        self._whole = tree
        self._called: dict[int, set[str]] = {}
        self._hosts: Optional[_HostTensors] = None  # DL017's value questions (built when asked)
        self._bind_counts: Optional[dict[str, int]] = None
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
        # How many times each name is bound (assignments, parameters, imports, functions,
        # classes, `except ... as`, `global`, match captures), and `x.attr` nodes per name.
        bindings: dict[str, int] = {}
        attributes: dict[str, int] = {}
        load = ast.Load
        # (node, flags inherited: loops; depth)
        stack: list[tuple[ast.AST, int, int]] = [(tree, 0, 0)]
        while stack:
            node, loops, depth = stack.pop()
            if depth > self.depth:
                self.depth = depth
            kind = type(node)
            if kind is ast.Name:
                ids.add(node.id)
                if type(node.ctx) is not load:
                    bindings[node.id] = bindings.get(node.id, 0) + 1
                continue
            if kind is ast.Attribute:
                ids.add(node.attr)
                attributes[node.attr] = attributes.get(node.attr, 0) + 1
                if node.attr == "dtype" and type(node.ctx) is not ast.Load:
                    self.stores_dtype = True
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
                    bindings[bound] = bindings.get(bound, 0) + 1
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
                bindings[node.name] = bindings.get(node.name, 0) + 1
                if kind is ast.ClassDef:
                    self._class_nodes.append(node)  # looked at when a gate asks (classes())
                    loops = 0
                else:
                    self.function_names.add(node.name)
                    loops = IN_FUNCTION  # loops outside a function do not run its body
            elif kind is ast.Lambda:
                loops = IN_FUNCTION
            elif kind is ast.arg:
                ids.add(node.arg)
                bindings[node.arg] = bindings.get(node.arg, 0) + 1
            elif kind is ast.keyword:
                if node.arg:
                    ids.add(node.arg)
            elif kind in (ast.Global, ast.Nonlocal):
                ids.update(node.names)
                for name in node.names:
                    bindings[name] = bindings.get(name, 0) + 1
            elif kind is ast.ExceptHandler or kind is ast.MatchAs or kind is ast.MatchStar:
                if node.name:
                    bindings[node.name] = bindings.get(node.name, 0) + 1
            elif kind is ast.MatchMapping and node.rest:
                bindings[node.rest] = bindings.get(node.rest, 0) + 1
            elif kind in _FOR_WHILE:
                self.has_step_loop = True
                self.has_any_loop = True
            elif kind in _COMPREHENSIONS:
                self.has_any_loop = True
            elif (kind is ast.Assign or kind is ast.AnnAssign and node.value is not None) \
                    and any(type(t) is ast.Attribute for t in (node.targets if kind is ast.Assign else [node.target])):
                self._store(node)
            elif kind in (ast.With, ast.AsyncWith):
                self.has_with = True
                self.with_items.extend(item.context_expr for item in node.items)
            elif kind is ast.Slice and node.step is not None:
                self.has_step_slice = True
            stack.extend(self._children(node, loops, depth + 1))
        self._bind_counts = _StarCounts(bindings) if self.star_import else bindings
        self._attribute_counts = attributes

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
        target = _device_target(node)
        if target is not None and _may_be_device_target(target):
            self._placing.append((_dotted(func), flags,
                                  func.attr if type(func) is ast.Attribute else None,
                                  type(target) is ast.Attribute and target.attr == "dtype"))
        if type(func) is ast.Attribute:
            flags |= ATTRIBUTE_CALL
            self.attr_calls[func.attr] = self.attr_calls.get(func.attr, 0) | flags
            if func.attr == "copy_" and len(node.args) == 1 and not node.keywords \
                    and type(node.args[0]) is not ast.Starred:
                # (DL018's `_buffer_refill`: one positional argument, into `self.buf` or
                # `self.buf.data`, `self` a name)
                target = func.value
                if type(target) is ast.Attribute and target.attr == "data":
                    target = target.value
                if type(target) is ast.Attribute and type(target.value) is ast.Name:
                    self.copies_into_attribute = True
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
        """An assignment to an attribute (`self.x = ...`): when its value is a display or
        comprehension, its line and whether that may hold a module (DL002)."""
        elements = _container_elements(node.value)
        if elements is not None:
            targets = node.targets if type(node) is ast.Assign else [node.target]
            self._containers.append((node.lineno, elements, [t.attr for t in targets if type(t) is ast.Attribute], node))

    def _class(self, node: ast.ClassDef) -> None:
        first, last = node.lineno, node.end_lineno or node.lineno
        container = False
        for line, elements, attrs, store in self._containers:
            if first <= line <= last and any(self._attribute_count(a) > 1 for a in attrs):
                # `self.layers = []`: what the class appends or stores into it decides.
                if elements:
                    found = [(e, store) for e in elements]
                else:
                    found = _fills(node)
                if any(self._may_be_module(e) and self._hosts_of().module(e, self._hosts_of().scope_of.get(id(at)))
                       for e, at in found):
                    container = True
                    break
        bases = [d for d in (_dotted(b) for b in node.bases) if d is not None]
        if not bases:
            return  # not an nn.Module subclass: DL002 and DL017 look at those only
        self._classes.append((node.name, bases, node, container))

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
        """Something in the file may be a device on the accelerator (a value of kind
        DEVICE whose place is the device, what `default_place` takes from a `with` item):
        an identifier that names a device, CUDA or an accelerator (`torch.device(...)`,
        `x.device`, `current_accelerator()`, `torch.cuda.current_device()`, a parameter
        hint `dev`/`gpu`), a device string as a parameter's default (`def f(d="mps")`:
        `_default_device`, the only place a string becomes a device value; a string elsewhere
        stays a string, `"cuda"` as a move's target is `placing_calls`'), or a call of
        another file's function that builds a `torch.device` (semantic model
        `_project_loader`). A move (`.to(...)`) makes a tensor or a module, never a device.
        (Session 15: torchvision's models/feature_extraction.py, whose `with
        graph.inserting_after(...)` the gate took for a device before: it has `.to(...)`
        calls and `getattr(self, "meta", {})`.)"""
        if any(_DEVICE_ID.search(i) for i in self.names()):
            return True
        for text in self._default_strings():
            lowered = text.lower()
            if "cuda" in lowered or lowered.split(":", 1)[0].strip() in _DEVICE_STRING_HEADS:
                return True
        # A device another file's function returns (`dist_util.dev()`) puts a tensor or a
        # module on the device only through `.to(dev)`, `.cuda(dev)`, `device=dev`,
        # `torch.device(dev)` (each seen above) or as the default of a `with dev:` block.
        return self.has_with and self.calls_foreign(
            lambda symbol, view: symbol.kind == "function" and "torch.device" in view.calls_of(symbol))

    def _default_strings(self) -> list[str]:
        """The string literals that are parameters' defaults (of functions and lambdas)."""
        found = []
        for node in ast.walk(self._whole):
            if type(node) is ast.arguments:
                for default in [*node.defaults, *node.kw_defaults]:
                    if type(default) is ast.Constant and type(default.value) is str:
                        found.append(default.value)
        return found

    def _may_be_module(self, element: ast.AST) -> bool:
        """An element of a container that may be a module (DL002's `_stateful_module`): not
        a literal, and not the result of a builtin that makes no module (`dict(...)`,
        `int(...)`) where the file does not bind that name."""
        if _constant(element):
            return False
        if type(element) is ast.Call and type(element.func) is ast.Name \
                and element.func.id in _NO_MODULE_BUILTINS and element.func.id not in self.bound_names():
            return False
        return True

    def bound_names(self):
        """Every name the file binds anywhere (assignments, parameters, imports, functions,
        classes, loops, `with`/`except` targets, `global`, match captures): what may shadow
        a builtin."""
        return self._bind_counts.keys() if not self.star_import else _EVERY_NAME

    def binding_counts(self) -> dict[str, int]:
        """How many times the file binds each name (see `bound_names`; a star import binds
        any name: counted once more for every name asked through `get`)."""
        return self._bind_counts

    def _attribute_count(self, attr: str) -> int:
        """How many `x.attr` nodes the file has (DL002 needs the container read after
        construction: `read_after_construction`, a second access at least)."""
        return self._attribute_counts.get(attr, 0)

    def views_strided(self) -> bool:
        """Some `.view(...)` with arguments whose receiver may be a strided tensor as the
        model follows it (`_HostTensors.strided`: DL003)."""
        return self._hosts_of().views_strided()

    def _may_be_host_tensor(self, value: ast.AST, method: ast.AST, owner: ast.ClassDef) -> bool:
        """A value a construction method stores that the semantic model may find a tensor
        on the host (DL017's `_cpu_tensor`): `_HostTensors.host`, read where `method`
        reads it."""
        hosts = self._hosts_of()
        return hosts._least_answer(lambda: hosts.host(value, method))

    def _hosts_of(self) -> "_HostTensors":
        if self._hosts is None:
            self._hosts = _HostTensors(self)
        return self._hosts

    def _makes_module_or_number(self, call: ast.Call) -> bool:
        """`call` makes a module (a torch.nn class, an nn.Module class of this file or, per
        the project index, of another local module), a Parameter or Buffer (DL017's
        `_plain_value`), or a number or string (`float(x)`, a builtin the file does not
        bind): never a plain host tensor."""
        func = call.func
        if type(func) is ast.Name and func.id in _NO_TENSOR_BUILTINS and func.id not in self.bound_names():
            return True
        dotted = _dotted(func)
        if dotted is None:
            return False
        quals = self._qualnames(dotted)
        if quals:
            if all(q in _PARAMETER_CLASSES or _is_module_class(q) for q in quals):
                return True
        elif dotted in self.module_classes() and self.binding_counts().get(dotted) == 1:
            return True
        if not self._may_be_imported(dotted):
            return False
        view = self.view()
        return view is not None and view.is_module_class(dotted, _module_root)

    def device_placing(self) -> bool:
        """Something in the file may put a tensor or a module on the accelerator, as the
        semantic model places values: a `.cuda(...)`, a `.to(...)` or a `device=` given a
        target that may be a device (not `None`, `"cpu"`, a dtype; `_device_target`), a
        `torch.cuda` legacy tensor type (by name, or a `"torch.cuda..."` string for `.type()`),
        or a `with` block whose item may be a device (the default place of what it makes:
        `with torch.device("cuda"):`, `with dev:`). A device alone (a `device` parameter, a
        `torch.device(...)`, another file's `dev()`) puts nothing there without one of these:
        without one, no value of the file is on the device (semantic/model.py: `_moved`,
        `_apply`'s `device=`, `built_place`, `default_place`, `tensor_type_place`)."""
        if self.placing_calls() or self.mentions("cuda"):
            return True
        if any("torch.cuda." in text for text in self.strings):
            return True  # `.type("torch.cuda.FloatTensor")` (`tensor_type_place`)
        # A `with` item is a device only where the file has one (`device_source`).
        return any(self._may_be_device(item) for item in self.with_items) and self.device_source()

    def placing_calls(self, flags: int = ANY) -> list[tuple[Optional[str], int, Optional[str], bool]]:
        """The calls (with every bit of `flags`) that may put a value on the device. A target
        `x.dtype` is a dtype unless the file stores an attribute named `dtype` (or names one
        in a string: `setattr`)."""
        dtype_may_place = self.stores_dtype or "dtype" in self.strings
        return [c for c in self._placing if c[1] & flags == flags and (dtype_may_place or not c[3])]

    def moves(self, flags: int = ANY) -> bool:
        """Some `.cuda(...)` or `.to(...)` call (with every bit of `flags`) whose target may
        be a device (`placing_calls`): what DL007 and DL018 report at."""
        return any(method in ("cuda", "to") for _d, _f, method, _dtype in self.placing_calls(flags))

    def uploads(self, flags: int = ANY) -> bool:
        """Some call (with every bit of `flags`) may copy host data to the device, as
        DL016's `upload` and `dataflow`'s uploads find them: `.cuda()`, `.to(target)`, or a
        `device=` call of what may be `torch.tensor`/`as_tensor`/`asarray` (any callee but
        another torch function, whose qualified name the imports give)."""
        data = _data_to_device_names()
        for dotted, _flags, method, _dtype in self.placing_calls(flags):
            if method in ("cuda", "to"):
                return True
            if dotted is None:
                return True
            quals = self._qualnames(dotted)
            if not quals or any(not q.startswith("torch.") or q.rsplit(".", 1)[-1] in data for q in quals):
                return True
        return False

    def _may_be_device(self, item: ast.AST) -> bool:
        """A `with` item that may be a device: anything but a literal, or a call of a torch
        function other than `torch.device`-like ones (`torch.no_grad()`, `torch.autocast(...)`
        return no device)."""
        if isinstance(item, _NEVER_TENSOR):
            return False
        if type(item) is ast.Call:
            dotted = _dotted(item.func)
            if dotted is not None:
                quals = self._qualnames(dotted)
                last = dotted.rsplit(".", 1)[-1]
                if quals and all(q.startswith("torch.") for q in quals) \
                        and not _DEVICE_ID.search(last):
                    return False
        return True

    @property
    def classes(self) -> list[tuple[str, list[str], ast.ClassDef, bool]]:
        if self._classes is None:
            self._classes = []
            for node in self._class_nodes:
                self._class(node)
        return self._classes

    def module_class_with(self, stores: bool = False, container: bool = False) -> bool:
        """Some class that may derive from an nn.Module class (semantic model
        `module_classes`: a base whose import names a `torch.nn` class or a Lightning
        module, a class of this file that does, or, per the project index, a class of
        another local module that does) keeps in its `__init__` an attribute that may be a
        tensor and that another method reads (`stores`, DL017)
        or assigns a display or comprehension of non-literals to an attribute in its body
        (`container`)."""
        candidates = [c for c in self.classes if c[3] or not container]
        if not candidates:
            return False
        found = self.module_classes()
        # (the look at each class's methods is the costly question: module classes only)
        built = self._construction_names() if stores else frozenset()
        return any(c[0] in found and (not stores or _keeps_tensor_attribute(c[2], self._may_be_host_tensor, built))
                   for c in candidates)

    def _construction_names(self) -> frozenset:
        """Names of methods that may run while an instance is built (DL017 reads their
        stores: semantic/modules.py `construction_methods`): those any class's `__init__`
        calls on its `self`, and, again, those such methods of any class of the file call on
        theirs (by name: an override in a subclass runs when the base's `__init__` calls it)."""
        by_name: dict[str, list] = {}
        for _name, _bases, node, _container in self.classes:
            for statement in node.body:
                if type(statement) in _FUNCTIONS:
                    by_name.setdefault(statement.name, []).append(statement)
        found: set[str] = set()
        todo = ["__init__"]
        while todo:
            for method in by_name.get(todo.pop(), ()):
                me = _self_param(method)
                for node in _own_nodes(method):
                    if type(node) is ast.Call and type(node.func) is ast.Attribute \
                            and type(node.func.value) is ast.Name and node.func.value.id == me \
                            and node.func.attr not in found:
                        found.add(node.func.attr)
                        todo.append(node.func.attr)
        return frozenset(found)

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
        found = self._called.get(flags)
        if found is None:
            found = self._called[flags] = self._called_names(flags)
        return found

    def _called_names(self, flags: int) -> set[str]:
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

    def uses_foreign(self, accept) -> bool:
        """Some use of a function or class of another local module (`imports_foreign`'s,
        through a name an import or a module-level alias binds: `_may_be_imported`) for which `accept(symbol, flags, view)` holds:
        `flags` are those of its calls (`callees`: IN_ANY_LOOP, IN_FUNCTION, ...) when it is
        a callee, VALUE_USE where it is read as a value (passed, aliased, a base, a
        decorator), TYPE_TEST as the class of an `isinstance` that is an `if`'s whole test
        (`syncs.narrowed_method`). A name met only in annotations or as the class of
        another `isinstance`/`issubclass` test is no use. A star import counts whatever `accept` says (what it binds is not looked at)."""
        if not self.import_names and not self.alias_heads and not self.star_import:
            return False
        view = self.view()
        if view is None:
            return False
        if self.star_import:
            return True
        uses: dict[str, int] = {}
        for dotted, flags in self.callees.items():
            if self._may_be_imported(dotted):
                uses[dotted] = flags
        values, tests = self._value_uses()
        for dotted in values:
            uses[dotted] = uses.get(dotted, 0) | VALUE_USE
        for dotted in tests:
            uses[dotted] = uses.get(dotted, 0) | TYPE_TEST
        for dotted in sorted(uses):
            symbol = self._foreign_symbol(view, dotted)
            if symbol is not None and accept(symbol, uses[dotted], view):
                return True
        return False

    def _value_uses(self) -> tuple[set[str], set[str]]:
        """(dotted names with a head an import binds read as values, those tested as a class
        by an `if isinstance(x, Cls):`); and the attribute names the file stores (kept as
        `stored_attributes`). Not annotations, not callees (`callees` has those)."""
        found = self.__dict__.get("_values")
        if found is not None:
            return found
        heads = self.import_names | self.alias_heads
        values: set[str] = set()
        tests: set[str] = set()
        stored: set[str] = set()
        stack: list[ast.AST] = [self._whole]
        while stack:
            node = stack.pop()
            kind = type(node)
            if kind is ast.Call:
                func = node.func
                if _dotted(func) is None:
                    stack.append(func)
                args = node.args
                if type(func) is ast.Name and func.id in ("isinstance", "issubclass") and len(args) == 2:
                    # the class a value is tested against: no value the model takes
                    stack.append(args[0])
                    classes = args[1].elts if type(args[1]) is ast.Tuple else [args[1]]
                    stack.extend(cls for cls in classes if _dotted(cls) is None)
                else:
                    stack.extend(args)
                stack.extend(k.value for k in node.keywords)
                continue
            if kind is ast.If:
                test = node.test
                if type(test) is ast.Call and type(test.func) is ast.Name and test.func.id == "isinstance" \
                        and len(test.args) == 2 and not test.keywords:
                    # `if isinstance(obj, Cls):` then `obj.method(...)` in its body
                    # (`syncs.narrowed_method`: one class, the `if`'s whole test)
                    dotted = _dotted(test.args[1])
                    if dotted is not None and dotted.partition(".")[0] in heads:
                        tests.add(dotted)
            if kind is ast.Name or kind is ast.Attribute:
                if kind is ast.Attribute and type(node.ctx) is not ast.Load:
                    stored.add(node.attr)
                dotted = _dotted(node)
                if dotted is None:
                    stack.append(node.value)
                elif dotted.partition(".")[0] in heads:
                    values.add(dotted)
                continue
            if kind in _FUNCTIONS:
                stack.extend(node.decorator_list)
                stack.extend(node.args.defaults)
                stack.extend(d for d in node.args.kw_defaults if d is not None)
                stack.extend(node.body)
                continue
            if kind is ast.AnnAssign:
                stack.append(node.target)
                if node.value is not None:
                    stack.append(node.value)
                continue
            if kind is ast.Lambda:
                stack.extend(node.args.defaults)
                stack.extend(d for d in node.args.kw_defaults if d is not None)
                stack.append(node.body)
                continue
            if kind is ast.Import or kind is ast.ImportFrom or kind is ast.arg:
                continue
            stack.extend(ast.iter_child_nodes(node))
        found = self.__dict__["_values"] = (values, tests)
        self.__dict__["stored_attributes"] = stored
        return found

    def may_call_own_in_loop(self, flags: int = IN_ANY_LOOP) -> bool:
        """Some call with every bit of `flags` may run a function of this file (what
        `syncs.callee` finds: a name the file binds other than by an import, a method
        `x.m()` with `m` a function of the file, an attribute it stores, `self.fn = helper`,
        or a name it binds, a class attribute, unless `x` is a name only an import binds),
        or a name the file does not bind that no builtin has (a superset: which function a
        name holds is not followed here)."""
        import builtins

        bound = self.binding_counts()
        for dotted, call_flags in self.callees.items():
            if call_flags & flags != flags:
                continue
            head, dot, last = dotted.rpartition(".")
            if not dot:
                if last in self.function_names or bound.get(last, 0) > (1 if last in self.import_names else 0) \
                        or last not in bound and not hasattr(builtins, last):
                    return True
                continue
            first = head.partition(".")[0]
            if first in self.import_names and bound.get(first, 0) == 1:
                continue  # `torch.tensor(...)`, `F_t.resize(...)`: what the import names
            self._value_uses()
            if last in self.function_names or last in self.__dict__["stored_attributes"] or last in bound:
                return True  # (a name bound anywhere: a class attribute `fn = helper` too)
        return False

    def calls_parameter_in_loop(self) -> bool:
        """Some call, in a loop (for/while or a comprehension, at any depth) inside a function
        defined directly at the module's top level, of a bare name that is one of that
        function's parameters (`compute_loss(pred, targets)` in `run(..., compute_loss)`):
        the only calls whose object `syncs.importer_instances` looks for in the files that
        import the function (a superset: nested scopes count, shadowing is not looked at)."""
        found = self.__dict__.get("_calls_parameter_in_loop")
        if found is None:
            found = False
            for statement in self._whole.body:
                if type(statement) not in _FUNCTIONS:
                    continue
                params = _parameters(statement)
                if params and _calls_name_in_loop(statement, params):
                    found = True
                    break
            self.__dict__["_calls_parameter_in_loop"] = found
        return found

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
    from devicelint.project_index import parsed_ast  # the index may have read it already

    try:
        tree = parsed_ast(path, source)
        if tree is None:
            tree = ast.parse(source)
            accepted.note(source)  # the syntax checks of this text need not parse it again
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
    if not reads_with_ast(source):
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


def reads_with_ast(source: str) -> bool:
    """Whether `gated` reads `source` with `ast` (when the gate is on and some rule has a
    gate): only a text that names no device or CUDA. The project index keeps the `ast` it
    read of a file of the run only for such a file (project_index.parsed_ast)."""
    return not _names_device_or_cuda(source)


def _names_device_or_cuda(source: str) -> bool:
    """`_CUDA_OR_DEVICE.search(source)`: for an ASCII text (nearly every file, and a flag of
    the string: no scan), two plain searches of its lower-case copy, about a tenth of the
    case-insensitive regular expression's cost; the expression itself for other texts,
    where Unicode's case folding may differ from `str.lower`."""
    if source.isascii():
        lower = source.lower()
        return "device" in lower or "cuda" in lower
    return _CUDA_OR_DEVICE.search(source) is not None


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


_MOVER_METHODS = ("to", "cuda", "_apply")  # DL017's `_MOVERS`: a class that moves its own state
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
_NESTED_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
# Expressions whose value is never a tensor (semantic/model.py `never_tensor`).
_NEVER_TENSOR = (ast.Constant, ast.JoinedStr, ast.Tuple, ast.List, ast.Set, ast.Dict, ast.ListComp,
                 ast.SetComp, ast.DictComp, ast.GeneratorExp, ast.Lambda)


_NOT_DEVICE_TARGETS = frozenset({"None", "True", "False"})


_ANY_TARGET = ast.Name(id="?")  # a target that may be anything (`.cuda()`, `.to(**kwargs)`)


def _device_target(call: ast.Call) -> Optional[ast.AST]:
    """Where `call` may put its result (semantic/model.py `_moved`, `_apply`): the target
    of a `.cuda(...)` (any), of a `.to(...)` (`device=`, else its first argument;
    `.to(dtype=...)` alone has none; `**kwargs` may hold one) or of any call's `device=`;
    None for a call that places nothing."""
    func = call.func
    method = func.attr if type(func) is ast.Attribute else None
    if method == "cuda":
        return _ANY_TARGET
    for keyword in call.keywords:
        if keyword.arg == "device":
            return keyword.value
        if keyword.arg is None and method == "to":
            return _ANY_TARGET
    if method != "to" or not call.args:
        return None
    return call.args[0]


def _may_be_device_target(node: ast.AST) -> bool:
    """semantic/model.py `device_place` may say "the device" for this target."""
    kind = type(node)
    if kind is ast.Constant:
        if isinstance(node.value, str):
            return _names_accelerator(node.value)
        return type(node.value) is int  # a CUDA device index (`None`, a float: no device)
    if kind is ast.JoinedStr:
        # (the model reads the f-string's text parts, joined)
        return _names_accelerator("".join(v.value for v in node.values
                                          if type(v) is ast.Constant and isinstance(v.value, str)))
    if kind is ast.Attribute and type(node.value) is ast.Name and node.value.id == "torch" \
            and node.attr in _TORCH_DTYPES:
        return False
    return not isinstance(node, _NEVER_TENSOR)


def _names_accelerator(text: str) -> bool:
    """semantic/model.py `device_string_place(text) is Place.DEVICE` (without importing the
    semantic model: a file the gate skips needs none of it; tests/test_gate.py compares)."""
    return text.split(":", 1)[0].strip().lower() in _DEVICE_STRING_HEADS


def _data_to_device_names() -> frozenset:
    """Last names of the API table's factories that copy their data to `device=`."""
    global _DATA_TO_DEVICE
    if _DATA_TO_DEVICE is None:
        from devicelint.semantic.api import torch_api

        _DATA_TO_DEVICE = frozenset(q.rsplit(".", 1)[-1] for q in torch_api().data_to_device)
    return _DATA_TO_DEVICE


_DATA_TO_DEVICE: Optional[frozenset] = None


# torch's dtypes (`torch.float16`): `.to(torch.float16)` changes no device.
_TORCH_DTYPES = frozenset({
    "float", "float16", "float32", "float64", "half", "double", "bfloat16", "int", "int8", "int16",
    "int32", "int64", "long", "short", "uint8", "bool", "complex64", "complex128", "cfloat",
    "cdouble", "float8_e4m3fn", "float8_e5m2", "uint16", "uint32", "uint64",
})


def _keeps_tensor_attribute(owner: ast.ClassDef, may_be_host_tensor, built=frozenset()) -> bool:
    """DL017's reporting site, as its detection walks a class: the class defines no
    `to`/`cuda`/`_apply`, its `__init__` (or a method named in `built`, which may run while
    the instance is built) stores `self.x = value` (a direct attribute target, not in a
    nested function or class) with a value that may be a host tensor
    (`may_be_host_tensor(value, method, owner)`), and another of its methods reads `self.x`
    (`_first_use`: a use needs a read)."""
    methods: dict[str, ast.AST] = {}
    for statement in owner.body:
        if type(statement) in _FUNCTIONS:
            methods[statement.name] = statement  # the last definition wins, as in the class
    if any(name in methods for name in _MOVER_METHODS):
        return False
    init = methods.get("__init__")
    me = _self_param(init) if init is not None else None
    if me is None:
        return False
    stored: dict[str, list[tuple[ast.AST, ast.AST]]] = {}  # attribute -> (value, the method storing it)
    for method in [init] + [m for name, m in methods.items() if name in built and name != "__init__"]:
        me = _self_param(method)
        if me is None:
            continue
        for node in _own_nodes(method):
            kind = type(node)
            if kind is ast.Assign or kind is ast.AnnAssign and node.value is not None:
                targets = node.targets if kind is ast.Assign else [node.target]
                for target in targets:
                    if type(target) is ast.Attribute and type(target.value) is ast.Name and target.value.id == me:
                        stored.setdefault(target.attr, []).append((node.value, method))
    if not stored:
        return False
    read: set[str] = set()
    for name, method in methods.items():
        if name == "__init__":
            continue
        other = _self_param(method)
        if other is None:
            continue
        for node in _own_nodes(method):
            if type(node) is ast.Attribute and node.attr in stored \
                    and type(node.value) is ast.Name and node.value.id == other:
                read.add(node.attr)
    # (what a value may be is the dearer question: asked only of attributes read elsewhere)
    return any(may_be_host_tensor(value, method, owner) for attr in read for value, method in stored[attr])


class _HostTensors:
    """DL017's question of a value its detection reads (`_cpu_tensor`: does the semantic
    model find a plain tensor on the host there?), asked of the `ast` as a superset that
    follows the data flow the model follows: a name through every binding of it in its
    function (flow-insensitively: the model's reaching definitions are some of them), a
    parameter through what every call of its function in the file passes
    (`SemanticModel._param_value`: only call sites give a parameter a host tensor; an
    annotation, a device default or name, a collate input never do), `self.x` through
    every `self.x = ...` of the class's methods (`self_attribute`), and a call through what
    its callee may be (`_call_value`: a class, a function of the file and its returns, a
    method of the class and its returns, an import none of whose names the API table or
    the project knows). Anything else may be a host tensor. Depth-bounded. A value asked
    again while it is being answered adds nothing (the least answer, as for DL003's layouts:
    every path the gate follows here passes a value on unchanged, a name, a parameter, a
    `self.x`, a return, an operand, and the model answers "unknown" on a cycle, never a
    tensor on the host: such a tensor comes only from some source the gate cannot rule out,
    reached through a path without cycles). DL002's module questions keep "may" on a
    cycle."""

    MAX_DEPTH = 12

    def __init__(self, facts: "FileFacts") -> None:
        self.facts = facts
        self.scope_of: dict[int, Optional[ast.AST]] = {}   # id(function or call) -> enclosing scope
        self.calls: dict[str, list[ast.Call]] = {}          # last name of the callee -> calls
        self.module_binds: dict[str, list[tuple[str, Optional[ast.AST]]]] = {}
        self.stores: dict[str, int] = {}                    # attribute -> stores anywhere (`x.attr = `)
        self.attr_receivers: set[str] = set()               # `x.attr.m(...)`: attr may move in place
        self.methods: dict[str, list[ast.AST]] = {}         # name -> methods of the file's classes
        self._locals: dict[int, dict[str, list[tuple[str, Optional[ast.AST]]]]] = {}
        # (the same, with a binding by unpacking, a loop or `+=` as ("inside", what it reads
        # from): the flow DL003's layouts follow)
        self._flows: dict[int, dict[str, list[tuple[str, Optional[ast.AST]]]]] = {}
        self._active: set = set()
        self._memo: dict = {}
        self.store_values: dict[str, list[ast.AST]] = {}    # attribute -> values of `x.attr = value`
        self.class_names: set[str] = set()                  # names a class body binds otherwise than by `def`
        self.functions: list[ast.AST] = []                  # every function and lambda of the file
        # The least answer to a question met again while it is being answered (DL003's
        # layouts: a value is strided only through some op that makes it so); the questions
        # answered "no" while one was assumed, kept once the whole question is answered.
        self._assumed = 0
        self._provisional: Optional[dict] = None  # (keys, in order: a dict) while one is asked
        self._least = (self.strided, self.host)
        self._walk(facts._whole)

    # -- the file's shapes ------------------------------------------------------------------
    def _walk(self, tree: ast.Module) -> None:
        stack: list[tuple[ast.AST, Optional[ast.AST]]] = [(tree, None)]
        while stack:
            node, scope = stack.pop()
            kind = type(node)
            inner = scope
            if kind in _FUNCTIONS or kind is ast.Lambda or kind is ast.ClassDef:
                self.scope_of[id(node)] = scope
                if kind is not ast.ClassDef:
                    self.functions.append(node)
                if kind in _FUNCTIONS and type(scope) is ast.ClassDef and node in scope.body:
                    self.methods.setdefault(node.name, []).append(node)
                if scope is None and kind is not ast.Lambda:
                    self.module_binds.setdefault(node.name, []).append(("def" if kind in _FUNCTIONS else "class", node))
                inner = node
            elif kind is ast.Call:
                self.scope_of[id(node)] = scope
                func = node.func
                last = func.attr if type(func) is ast.Attribute else func.id if type(func) is ast.Name else None
                if last is not None:
                    self.calls.setdefault(last, []).append(node)
                if type(func) is ast.Attribute and type(func.value) is ast.Attribute:
                    self.attr_receivers.add(func.value.attr)
            elif kind is ast.Attribute and type(node.ctx) is not ast.Load:
                self.stores[node.attr] = self.stores.get(node.attr, 0) + 1
            elif kind is ast.Name and type(scope) is ast.ClassDef and type(node.ctx) is not ast.Load:
                self.class_names.add(node.id)
            elif kind is ast.Assign or kind is ast.AnnAssign:
                self.scope_of[id(node)] = scope  # (DL002's containers are asked where they are)
                if node.value is not None:
                    for target in (node.targets if kind is ast.Assign else [node.target]):
                        if type(target) is ast.Attribute:
                            self.store_values.setdefault(target.attr, []).append(node.value)
                if scope is None and kind is ast.Assign:
                    for target in node.targets:
                        if type(target) is ast.Name:
                            self.module_binds.setdefault(target.id, []).append(("value", node.value))
            elif scope is None and kind in (ast.Import, ast.ImportFrom):
                for alias in node.names:
                    if alias.name != "*":
                        self.module_binds.setdefault(alias.asname or alias.name.partition(".")[0], []).append(("import", None))
            for child in _child_nodes(node):
                # (a function's decorators, defaults and annotations run in the enclosing scope,
                # its body in its own: the body's scope is what names are looked up in)
                stack.append((child, inner if kind not in _FUNCTIONS or child in node.body else scope))

    def _bindings(self, function: ast.AST) -> dict[str, list[tuple[str, Optional[ast.AST]]]]:
        """Every binding of a name in the function's own code: ("param", None), ("value",
        the expression a plain `name = value` assigns), or ("other", None) for any other
        (unpacking, loops, comprehensions, `with`, imports, `global`, augmented
        assignments, `except ... as`, nested definitions, match captures). Collected with
        `_flow_bindings` in one walk (`_scan`)."""
        found = self._locals.get(id(function))
        if found is None:
            self._scan(function)
            found = self._locals[id(function)]
        return found

    def _flow_bindings(self, function: ast.AST) -> tuple[dict[str, list[tuple]], list[tuple]]:
        """The bindings of each name in the function's own code, as the layout question
        follows them (`strided`): (kind, value, position, statement), kind "param", "value"
        (`name = value`, `name: T = value`, `(name := value)`), "inside" (the name holds the
        value or something inside it: unpacking, a for loop or comprehension, `+=`), or
        "other"; position: where the binding is made (the end of its statement; None: it
        may reach any read, as a parameter's or a `global`'s). And the spans of the
        function's loops (for, while, comprehensions): a binding reaches a read before it
        only around one of them. Collected with `_bindings` in one walk (`_scan`)."""
        found = self._flows.get(id(function))
        if found is None:
            self._scan(function)
            found = self._flows[id(function)]
        return found

    def _scan(self, function: ast.AST) -> None:
        """One walk of the function's own code (the body only: a walrus in a default or
        decorator binds in the enclosing scope) for both `_bindings` (kept in `_locals`)
        and `_flow_bindings` (kept in `_flows`), each list in the order its own walk made
        before (session 14's duplicate D5): the walk's bindings, then the other stores of a
        name (a target no plain assignment, unpacking, loop or `+=` names)."""
        local: dict[str, list[tuple[str, Optional[ast.AST]]]] = {}
        binds: dict[str, list[tuple]] = {}
        loops: list[tuple] = []
        for name in _parameters(function):
            local.setdefault(name, []).append(("param", None))
            binds.setdefault(name, []).append(("param", None, None, None))
        plain: set[int] = set()  # names a plain `name = value` binds (`_bindings`' "value")
        named: set[int] = set()  # names `_flow_bindings` gives a kind of their own
        stored: list[ast.Name] = []
        for node in _own_nodes(function, function.body):
            kind = type(node)
            if kind is ast.Name:
                if type(node.ctx) is not ast.Load:
                    stored.append(node)
                continue
            if kind in _FOR_WHILE or kind in _COMPREHENSIONS:
                loops.append((_start(node), _end(node)))
            if kind is ast.Assign or kind is ast.AnnAssign and node.value is not None:
                value = node.value
                end = _end(node)
                for target in (node.targets if kind is ast.Assign else [node.target]):
                    if type(target) is ast.Name:
                        plain.add(id(target))
                        local.setdefault(target.id, []).append(("value", value))
                        named.add(id(target))
                        binds.setdefault(target.id, []).append(("value", value, end, node))
                        continue
                    for name in _unpacked_names(target):
                        named.add(id(name))
                        binds.setdefault(name.id, []).append(("inside", value, end, node))
            elif kind is ast.NamedExpr:
                plain.add(id(node.target))
                named.add(id(node.target))
                local.setdefault(node.target.id, []).append(("value", node.value))
                binds.setdefault(node.target.id, []).append(("value", node.value, _end(node), node))
            elif kind is ast.AugAssign:
                # (`x += y`: what x held before, its other bindings, and y)
                for name in _unpacked_names(node.target):
                    named.add(id(name))
                    binds.setdefault(name.id, []).append(("inside", node.value, _end(node), node))
            elif kind is ast.For or kind is ast.AsyncFor or kind is ast.comprehension:
                # (a comprehension's target is its own: "comprehension", and a read of the
                # name elsewhere in the function may be of the enclosing scope's)
                for name in _unpacked_names(node.target):
                    named.add(id(name))
                    binds.setdefault(name.id, []).append(
                        ("inside" if kind is not ast.comprehension else "comprehension", node.iter,
                         _end(node.target), node.target))
            else:
                if kind is ast.ExceptHandler or kind is ast.MatchAs or kind is ast.MatchStar:
                    names = (node.name,) if node.name else ()
                elif kind is ast.MatchMapping:
                    names = (node.rest,) if node.rest else ()
                elif kind is ast.Import or kind is ast.ImportFrom:
                    names = [alias.asname or alias.name.partition(".")[0] for alias in node.names]
                elif kind is ast.Global or kind is ast.Nonlocal:
                    names = node.names
                elif kind in _NESTED_SCOPES:
                    names = (node.name,)
                else:
                    continue
                for name in names:
                    local.setdefault(name, []).append(("other", None))
                    binds.setdefault(name, []).append(("other", None, None, None))
        for node in stored:
            if id(node) not in plain:
                local.setdefault(node.id, []).append(("other", None))
            if id(node) not in named:
                binds.setdefault(node.id, []).append(("other", None, None, None))
        self._locals[id(function)] = local
        self._flows[id(function)] = (binds, loops)

    def _method_owner(self, function: ast.AST) -> Optional[ast.ClassDef]:
        scope = self.scope_of.get(id(function))
        return scope if type(scope) is ast.ClassDef and function in scope.body else None

    def _top_level(self, function: ast.AST) -> bool:
        """No function encloses it: the names it does not bind are the module's."""
        scope = self.scope_of.get(id(function))
        while scope is not None:
            if type(scope) is not ast.ClassDef:
                return False
            scope = self.scope_of.get(id(scope))
        return True

    # -- may a value be a tensor on the host? ----------------------------------------------
    def host(self, value: ast.AST, scope: Optional[ast.AST], depth: int = 0) -> bool:
        if isinstance(value, _NEVER_TENSOR) or _constant(value):
            return False
        if depth > self.MAX_DEPTH:
            return True
        kind = type(value)
        if kind is ast.Name:
            return self._name(value.id, scope, depth, self.host, self._param_host)
        if kind is ast.Attribute:
            base = value.value
            owner = self._self_class(base, scope)
            if owner is not None:
                return self._self_attribute(owner, value.attr, depth, self.host)
            if self._of_import(value, scope):
                return False
            return not self.attributes_plain(base, scope, depth + 1)
        if kind is ast.Call:
            return not self.facts._makes_module_or_number(value) and self._call(value, scope, depth)
        if kind is ast.BinOp:
            return self.host(value.left, scope, depth + 1) or self.host(value.right, scope, depth + 1)
        if kind is ast.UnaryOp:
            return type(value.op) is not ast.Not and self.host(value.operand, scope, depth + 1)
        if kind is ast.BoolOp:
            return any(self.host(v, scope, depth + 1) for v in value.values)
        if kind is ast.Compare:
            if any(type(op) in (ast.In, ast.NotIn, ast.Is, ast.IsNot) for op in value.ops):
                return False  # a bool
            return any(self.host(v, scope, depth + 1) for v in [value.left, *value.comparators])
        if kind is ast.IfExp:
            return self.host(value.body, scope, depth + 1) or self.host(value.orelse, scope, depth + 1)
        if kind is ast.NamedExpr:
            return self.host(value.value, scope, depth + 1)
        return True

    def _name(self, name: str, scope, depth: int, ask, ask_param) -> bool:
        """`ask` ("may") of every binding the name may have where `scope` reads it."""
        if type(scope) in _FUNCTIONS:
            binds = self._bindings(scope).get(name)
            if binds:
                for kind, bound in binds:
                    if kind == "other":
                        return True
                    if kind == "param" and ask_param(scope, name, depth + 1):
                        return True
                    if kind == "value" and ask(bound, scope, depth + 1):
                        return True
                return False
            if not self._top_level(scope):
                return True  # a free name of an enclosing function
        elif scope is not None:
            return True  # a lambda's parameter or a class body's name
        return self._module_name(name, depth, ask)

    def _module_name(self, name: str, depth: int, ask) -> bool:
        """A module-level name bound once (in the whole file, `global` writers included):
        a function or class (never a tensor as a value), an import (the model's
        `_import_value`: a dtype, a class, a number, never a tensor), or one plain
        assignment (its value, asked)."""
        binds = self.module_binds.get(name)
        if not binds or len(binds) != 1 or self.facts.binding_counts().get(name) != 1:
            return True
        kind, bound = binds[0]
        if kind == "value":
            return ask(bound, None, depth + 1)
        if ask in (self.host, self.module, self._elements_module, self.strided):
            return False  # a function, a class (or module class), an import's value
        return True  # (callees and attribute owners are asked by their own questions)

    def _param_host(self, function: ast.AST, name: str, depth: int) -> bool:
        return self._param(function, name, depth, self.host)

    def _param(self, function: ast.AST, name: str, depth: int, ask) -> bool:
        """`SemanticModel._param_value`: a host tensor only from what the file's calls of
        the function pass (`_call_site_value`: its first parameter, in a class body, none;
        a call passing `*args`/`**kwargs` makes the calls say nothing; a call that passes
        nothing for it passes its default): `ask` of every argument of every call whose
        callee's last name is the function's (or, for `__init__`, its class's), and of its
        default. A `torch.multiprocessing.spawn` anywhere: may."""
        owner = self._method_owner(function)
        args = function.args
        positional = args.posonlyargs + args.args
        if owner is not None and positional and positional[0].arg == name:
            return False  # `self` (the model: no call-site value)
        return self._once(("param", id(function), name, ask), ask,
                          lambda: self._param_uncached(function, name, owner, depth, ask))

    def _once(self, key, ask, answer) -> bool:
        """`answer()`, kept under `key`. A question met again while it is being answered
        answers "may" (True), or, for the questions in `_LEAST` (a value made only by some
        op: the least answer), "no" for now: an answer given while such an assumption
        stands is kept only once the whole question says "no" (`least`)."""
        found = self._memo.get(key)
        if found is not None:
            return found
        if self._provisional is not None and key in self._provisional:
            return False  # "no" for now, within the whole question that asked it (`_least_answer`)
        if key in self._active:
            if ask in self._least:
                self._assumed += 1
                return False
            return True
        self._active.add(key)
        before = self._assumed
        try:
            found = answer()
        finally:
            self._active.discard(key)
        if found or self._assumed == before:
            self._memo[key] = found
        elif self._provisional is not None:
            self._provisional[key] = None
        return found

    def _least_answer(self, question) -> bool:
        """A whole question of the least kind: when it says "no", every question it met said
        "no" with every assumption it made "no" as well, so their answers are kept.

        A question answered "no" under an assumption is not asked again within the whole
        question: the answers are all "may" ones made by some op, so the whole question
        is a search for such an op through the questions each one asks, and one already
        searched (or being searched) needs no second search; were the assumption wrong,
        the op would be found through the assumed question itself. Searched again, a
        question met on many paths cost time exponential in their length (ResNeXt's
        blocks: 2.2 s for one file's gate)."""
        outer = self._provisional
        self._provisional = {}
        try:
            found = question()
            if not found:
                for key in self._provisional:
                    self._memo[key] = False
        finally:
            self._provisional = outer
        return found

    def _param_uncached(self, function, name: str, owner, depth: int, ask) -> bool:
        annotated = _annotation_kind(_annotation_of(function, name))
        # (the model: the annotation's kind, unless the calls' agrees: a number, a flag, a
        # string, an array, None or a sequence is no tensor, no module, and has neither as an
        # attribute; only a sequence's elements come from the calls)
        if annotated == "scalar" or annotated == "plain" and ask != self._elements_module and ask != self.strided:
            return False
        if "spawn" in self.calls:
            return True
        calls = list(self.calls.get(function.name, ()))
        if function.name == "__init__" and owner is not None:
            calls += self.calls.get(owner.name, ())
        args = function.args
        positional = [a.arg for a in args.posonlyargs + args.args]
        index = positional.index(name) if name in positional else None
        # (`_passed_arguments`: a method's call passes `self` implicitly)
        at = index - 1 if owner is not None and index is not None else index
        default = _default_of(function, name)
        outer = self.scope_of.get(id(function))
        while type(outer) is ast.ClassDef:
            outer = self.scope_of.get(id(outer))
        for call in calls:
            if any(type(a) is ast.Starred for a in call.args) or any(k.arg is None for k in call.keywords):
                continue  # (the model: no call-site value at all, or not this function's call)
            if type(call.func) is ast.Attribute and type(call.func.value) is not ast.Name:
                continue  # `super().__init__(...)`, `a.b.f(...)`: `_call_sites` matches `x.f(...)` only
            # `call_arg(call, at, name)`, else the default
            if at is not None and at < len(call.args):
                passed, where = call.args[at], self.scope_of.get(id(call))
            else:
                passed = next((k.value for k in call.keywords if k.arg == name), None)
                where = self.scope_of.get(id(call))
                if passed is None:
                    passed, where = default, outer
            if passed is not None and ask(passed, where, depth + 1):
                return True
        return False

    def _self_class(self, base: ast.AST, scope) -> Optional[ast.ClassDef]:
        """`SemanticModel._self_class`: the class of a method whose first parameter `base`
        names (not a static method)."""
        if type(base) is not ast.Name or type(scope) not in _FUNCTIONS:
            return None
        owner = self._method_owner(scope)
        if owner is None:
            return None
        return owner if _model_self(scope) == base.id else None

    def _self_attribute(self, owner: ast.ClassDef, attr: str, depth: int, ask) -> bool:
        """`SemanticModel.self_attribute`: what the class's methods store in `self.attr`
        (plain `self.attr = value` statements only, every store of that name in the class's
        methods being one of them, none moved in place: `self.attr.cpu()`); without a store in
        the class, may (a base's, another file's). The model reads only the stores of the
        class's own methods on their instance parameter (`attribute_defs`, recorded by
        `record_attribute_binding` where `_self_class` names this class): a store of that
        name in another class, a nested function or a plain function is never among them."""
        return self._once(("self", id(owner), attr, ask), ask,
                          lambda: self._self_attribute_uncached(owner, attr, depth, ask))

    def _self_attribute_uncached(self, owner: ast.ClassDef, attr: str, depth: int, ask) -> bool:
        least = ask == self.strided  # (the layout's own reading of the stores)
        if attr in self.attr_receivers and not least:
            return True  # (a move in place changes no layout)
        values = []
        in_class = 0  # stores of `x.attr` in the class's methods, any of them
        for statement in owner.body:
            if type(statement) not in _FUNCTIONS:
                continue
            me = _model_self(statement)
            for node in _own_nodes(statement):
                kind = type(node)
                if kind is ast.Attribute and node.attr == attr and type(node.ctx) is not ast.Load:
                    in_class += 1
                elif me is not None and (kind is ast.Assign or kind is ast.AnnAssign and node.value is not None):
                    for target in (node.targets if kind is ast.Assign else [node.target]):
                        if type(target) is ast.Attribute and target.attr == attr \
                                and type(target.value) is ast.Name and target.value.id == me:
                            values.append((node.value, statement))
        if least:
            # The model reads the `self.attr = value` stores of the class's methods
            # (`attribute_defs`); without any, those of a base class of the file of that name
            # (else unknown: a buffer, another file's base).
            if in_class != len(values):
                return True  # (`self.a, self.b = ...`, `self.a += ...`: not followed here)
            if not values:
                return any(self._self_attribute(base, attr, depth + 1, ask) for base in self._file_bases(owner))
            return any(ask(value, method, depth + 1) for value, method in values)
        if not values or in_class != len(values):
            return True  # (none: a base's, another file's; `self.a, self.b = ...`: not followed)
        return any(ask(value, method, depth + 1) for value, method in values)

    def _file_bases(self, owner: ast.ClassDef) -> list[ast.ClassDef]:
        """The classes of the file a class's bases name (`SemanticModel.self_attribute`: by
        the base's dotted name)."""
        names = {_dotted(b) for b in owner.bases}
        return [c for c in self.facts._class_nodes if c.name in names and c is not owner]

    def module(self, value: ast.AST, scope, depth: int = 0) -> bool:
        """DL002's `_stateful_module` of a container's element: may the model find a module
        there (a display: any of its elements)? Arithmetic, comparisons and negation give
        none (`_arith`, `_value`); a name, a parameter, `self.x` as `host` follows them; an
        import's value is a class at most; a subscript as `_elements_module`."""
        return self._modules(value, scope, depth, False)

    def _modules(self, value: ast.AST, scope, depth: int, elements: bool) -> bool:
        """`module` and, with `elements`, `_elements_module`: one walk. What indexing gives
        may also come of either operand of arithmetic, of a comprehension or an assignment
        expression (not followed: may); a module itself never does."""
        ask = self._elements_module if elements else self.module
        kind = type(value)
        if kind is ast.List or kind is ast.Tuple or kind is ast.Set:
            return any(ask(e.value if type(e) is ast.Starred else e, scope, depth + 1) for e in value.elts)
        if kind is ast.Dict:
            return any(ask(v, scope, depth + 1) for v in value.values)
        if kind is ast.Constant or kind is ast.JoinedStr or kind is ast.Lambda or _constant(value) \
                or not elements and isinstance(value, _NEVER_TENSOR):
            return False
        if depth > self.MAX_DEPTH:
            return True
        if kind is ast.Name:
            return self._name(value.id, scope, depth, ask,
                              self._param_elements_module if elements else self._param_module)
        if kind is ast.Attribute:
            owner = self._self_class(value.value, scope)
            if owner is not None:
                return self._self_attribute(owner, value.attr, depth, ask)
            if self._of_import(value, scope):
                return False
            return not self.attributes_plain(value.value, scope, depth + 1)
        if kind is ast.BinOp:
            return elements and (ask(value.left, scope, depth + 1) or ask(value.right, scope, depth + 1))
        if kind is ast.UnaryOp or kind is ast.Compare:
            return False
        if kind is ast.BoolOp:
            return any(ask(v, scope, depth + 1) for v in value.values)
        if kind is ast.IfExp:
            return ask(value.body, scope, depth + 1) or ask(value.orelse, scope, depth + 1)
        if kind is ast.NamedExpr and not elements:
            return ask(value.value, scope, depth + 1)
        if kind is ast.Subscript:
            return self._elements_module(value.value, scope, depth + 1)
        return True

    def _param_module(self, function, name: str, depth: int) -> bool:
        return self._param(function, name, depth, self.module)

    def _elements_module(self, value: ast.AST, scope, depth: int) -> bool:
        """May the value, or what indexing it gives (at any depth), be a module (the model's
        `index`: a tensor's rows are tensors; a sequence's or mapping's its elements)?"""
        return self._modules(value, scope, depth, True)

    def _param_elements_module(self, function, name: str, depth: int) -> bool:
        return self._param(function, name, depth, self._elements_module)

    # -- may a value be a strided tensor (DL003)? --------------------------------------------
    def views_strided(self) -> bool:
        """Some `.view(...)` call with arguments whose receiver `strided` may be (DL003's
        reporting site: a receiver whose layout the model knows to be permuted, expanded
        or narrowed)."""
        for call in self.calls.get("view", ()):
            func = call.func
            if type(func) is ast.Attribute and (call.args or call.keywords):
                scope = self.scope_of.get(id(call))
                if self._least_answer(lambda: self.strided(func.value, scope)):
                    return True
        return False

    def strided(self, value: ast.AST, scope, depth: int = 0) -> bool:
        """May the model's value here be a tensor laid out permuted, expanded or narrowed
        (`Layout.state`), or hold one (an element, an item, a field)? Such a layout is made
        only by an op of the API table whose layout is "transpose", "permute", "expand" or
        "narrow" (pieces of `chunk`/`split`, not `unbind`'s), by `.T`/`.mT`/`.H`/`.mH`, or by
        a step slice (`_layout_sources`); it passes through names, parameters (what the
        file's calls pass), `self.x` (the class's stores), returns of the file's functions,
        indexing, arithmetic and comparisons, `and`/`or`/`if`, ops whose layout is "follow",
        "keep" or "same", shape-preserving modules and other code's arguments
        (`_strided_call`), and a function of another local module given arguments
        (`_project_returned`). A name met again while it is being answered adds nothing (the
        least answer: `x = F.dropout(x)`)."""
        kind = type(value)
        if kind is ast.Constant or kind is ast.JoinedStr or kind is ast.Lambda:
            return False
        if depth > self.MAX_LAYOUT_DEPTH:
            return True
        if kind is ast.Name:
            if type(scope) in _FUNCTIONS:
                return self._strided_local(value, scope, depth)
            return self._name(value.id, scope, depth, self.strided, self._param_strided)
        if kind is ast.Attribute:
            if value.attr in _TRANSPOSING_ATTRIBUTES:
                return True
            owner = self._self_class(value.value, scope)
            if owner is not None:
                return self._self_attribute(owner, value.attr, depth, self.strided)
            if self._of_import(value, scope):
                return False
            dotted = _dotted(value)
            if dotted is not None and dotted.partition(".")[0] in self.facts.alias_heads:
                return True  # `lib.x`, `lib` this very module (`module_member_defs`)
            # (the model's other fields: a tensor's `.data`/`.grad`/`.real`/`.imag`, its own
            # layout; a mapping's (`Munch(d).x`), one of its elements; a module's submodule,
            # `.weight`, a field of a module's output, `.shape`: never strided)
            return value.attr not in _NEVER_STRIDED_ATTRIBUTES and self.strided(value.value, scope, depth + 1)
        if kind is ast.Subscript:
            if _has_step_slice(value.slice):
                return True
            return self.strided(value.value, scope, depth + 1)
        if kind is ast.Call:
            return self._strided_call(value, scope, depth)
        if kind is ast.BinOp:
            if type(value.op) is ast.MatMult:
                return False  # (`_matmul`: a fresh tensor)
            return self.strided(value.left, scope, depth + 1) or self.strided(value.right, scope, depth + 1)
        if kind is ast.UnaryOp:
            return False  # `-x`: a fresh tensor (`not x`: a flag)
        if kind is ast.Compare:
            if len(value.ops) != 1 or type(value.ops[0]) in (ast.In, ast.NotIn, ast.Is, ast.IsNot):
                return False  # a flag, or a chained comparison (contiguous)
            return self.strided(value.left, scope, depth + 1) or self.strided(value.comparators[0], scope, depth + 1)
        if kind is ast.BoolOp:
            return any(self.strided(v, scope, depth + 1) for v in value.values)
        if kind is ast.IfExp:
            return self.strided(value.body, scope, depth + 1) or self.strided(value.orelse, scope, depth + 1)
        if kind is ast.NamedExpr:
            return self.strided(value.value, scope, depth + 1)
        if kind is ast.Starred:
            return self.strided(value.value, scope, depth + 1)
        if kind is ast.List or kind is ast.Tuple or kind is ast.Set:
            return any(self.strided(e, scope, depth + 1) for e in value.elts)
        if kind is ast.Dict:
            return any(self.strided(v, scope, depth + 1) for v in value.values)
        if kind is ast.ListComp or kind is ast.SetComp or kind is ast.GeneratorExp:
            return self.strided(value.elt, scope, depth + 1)
        if kind is ast.DictComp:
            return self.strided(value.value, scope, depth + 1)
        return True

    MAX_LAYOUT_DEPTH = 40

    def _strided_local(self, node: ast.Name, scope, depth: int) -> bool:
        """A name read in a function: the bindings that may reach the read (`_flow_bindings`:
        one made before it, or one in a loop around both), as the model's reaching
        definitions are some of them. A name the function does not bind: as `_name`."""
        binds, loops = self._flow_bindings(scope)
        found = binds.get(node.id)
        if not found:
            return self._name(node.id, scope, depth, self.strided, self._param_strided)
        use = _start(node)
        reaching = tuple(b for b in found if b[2] is None or b[2] <= use
                         or any(start <= _start(b[3]) and _end(b[3]) <= end and start <= use <= end
                                for start, end in loops))

        def answer() -> bool:
            for kind, bound, _at, _statement in reaching:
                if kind == "other":
                    return True
                if kind == "param" and self._param(scope, node.id, depth + 1, self.strided):
                    return True
                if kind != "param" and self.strided(bound, scope, depth + 1):
                    return True
            if all(b[0] == "comprehension" for b in found):
                # Bound only by comprehensions: a read outside them is of the enclosing scope.
                return not self._top_level(scope) or self._module_name(node.id, depth, self.strided)
            return False

        return self._once(("name", id(scope), node.id, tuple(id(b) for b in reaching)), self.strided, answer)

    def _param_strided(self, function, name: str, depth: int) -> bool:
        return self._param(function, name, depth, self.strided)

    def _strided_call(self, call: ast.Call, scope, depth: int) -> bool:
        """What a call gives may be strided (`SemanticModel._call_value`): a layout op of the
        API table; else an op that keeps its input's layout (the receiver, an argument), a
        module (a shape-preserving one gives its input's layout: any argument), a builtin
        (`list(x)`, `max(...)`: from its arguments), the returns of a function of the file it
        may call (by name: a function bound once at module level, a method, the file's
        function a module-level name is; any function of the file when the callee is
        unknown: a parameter, a stored callable, a subscript), or a function of another
        local module (given arguments: `_project_returned`). An import that the API table
        says makes no such layout (`torch.cat`, a module class, an unknown library's
        function) gives none."""
        func = call.func
        kind = type(func)
        last = func.attr if kind is ast.Attribute else func.id if kind is ast.Name else None
        if last in _layout_sources() or last in _DYNAMIC_CALLS:
            return True
        arguments = [a for a in call.args] + [k.value for k in call.keywords]

        def passed() -> bool:
            return any(self.strided(a, scope, depth + 1) for a in arguments)

        if kind is ast.Name or kind is ast.Attribute:
            if self._of_import(func, scope):
                return self._strided_import_call(call, _dotted(func), passed)
            dotted = _dotted(func)
            if dotted is not None and dotted.partition(".")[0] in self.facts.alias_heads:
                # A module-level alias (`tr = torch.transpose`): the model's `qualname` of it,
                # through the project index (`_alias_qualname`).
                view = self.facts.view()
                target = view.alias(dotted) if view is not None else None
                if target and self._strided_quals(call, {target}, passed):
                    return True
        if kind is ast.Name:
            name = func.id
            if type(scope) in _FUNCTIONS and name in self._bindings(scope) \
                    or scope is not None and (type(scope) not in _FUNCTIONS or not self._top_level(scope)):
                # a local callable, or an import a nested function reads: anything
                return passed() or self._any_returns_strided(depth) or self._foreign_strided(call, func)
            binds = self.module_binds.get(name)
            if not binds and name not in self.facts.bound_names():
                # a builtin (`_builtin_call`): `sum(xs)` an element of its input, `list(x)` its
                # input or its elements (`iteration_element`: of a class of the file, what its
                # `__iter__`/`__next__` give); a number, a string, a flag, or unknown otherwise
                if name in _ELEMENT_BUILTINS:
                    return passed() or any(self._returns_strided(m, depth) for n in ("__iter__", "__next__")
                                           for m in self.methods.get(n, ()))
                return False
            if binds and len(binds) == 1 and self.facts.binding_counts().get(name) == 1:
                bound_kind, bound = binds[0]
                if bound_kind == "def":
                    return self._returns_strided(bound, depth)
                if bound_kind == "class":
                    return False  # an instance: a module, a dataset, an object (`attributes_plain`)
            return passed() or self._any_returns_strided(depth) or self._foreign_strided(call, func)
        if kind is ast.Attribute:
            method = func.attr
            spec = _api().method(method)
            if (spec is None or _keeps_layout(spec) or method in _CONTAINER_METHODS) \
                    and self.strided(func.value, scope, depth + 1):
                return True  # the receiver's layout (a tensor's op), or its element (a container's)
            # A module's `forward` or a submodule (`model.drop(x)`: a stored attribute) gives
            # its input's layout (`_module_method`, `module_output`); another attribute of a
            # module is none the model knows.
            stored = method in self.stores or method in self.class_names
            if (stored or method == "forward") and passed():
                return True
            if any(self._returns_strided(m, depth) for m in self.methods.get(method, ())):
                return True
            binds = self.module_binds.get(method)
            if binds and any(k == "def" and self._returns_strided(b, depth) for k, b in binds):
                return True  # `lib.f(...)`, `lib` this very module
            if stored and (method in self.class_names or not self._stores_only_modules(method)):
                return self._any_returns_strided(depth)  # a stored callable
            return self._foreign_strided(call, func)
        return passed() or self._any_returns_strided(depth)  # `self.blocks[i](x)`, `f(...)(x)`

    def _stores_only_modules(self, attr: str) -> bool:
        """Every store of `x.attr` in the file is a plain assignment of a module (or a
        number, a literal): calling the attribute runs a module, no function of the file."""
        values = self.store_values.get(attr, ())
        if len(values) != self.stores.get(attr, 0):
            return False
        return all(_constant(v) or type(v) is ast.Call and self.facts._makes_module_or_number(v)
                   for v in values)

    def _strided_import_call(self, call: ast.Call, dotted: str, passed) -> bool:
        """A call of an import's name (`torch.cat`, `F.dropout`, `from .utils import f`)."""
        quals = self.facts._qualnames(dotted)
        if not quals:
            return passed() or self._foreign_strided(call, call.func)
        return self._strided_quals(call, quals, passed)

    def _strided_quals(self, call: ast.Call, quals, passed) -> bool:
        """A call of what these qualified names stand for."""
        api = _api()
        sources = _layout_sources()
        for qual in quals:
            if qual.rsplit(".", 1)[-1] in sources:
                return True
            spec = api.function(qual)
            if spec is not None:
                if _keeps_layout(spec) and passed():
                    return True
                continue
            if qual in _FOLLOWED_CALLS or qual.startswith("functools.") or qual in api.attribute_mappings:
                if passed():
                    return True
                continue
            if qual.startswith(".") and qual.lstrip(".") in _api_suffixes():
                if passed():
                    return True  # (an API name as the package itself imports it)
            if self._foreign_strided(call, call.func):
                return True
        return False

    def _foreign_strided(self, call: ast.Call, func: ast.AST) -> bool:
        """A function of another local module given arguments (`_project_returned`: its
        returns, worked out by that file's model, may be strided)."""
        if not call.args or not self.facts.device_placing():
            return False  # (`_project_returned` needs device data passed: a file without any)
        dotted = _dotted(func)
        if dotted is None or not self.facts._may_be_imported(dotted):
            return False
        view = self.facts.view()
        if view is None:
            return False
        symbol = self.facts._foreign_symbol(view, dotted)
        return symbol is not None and symbol.kind == "function"

    def _returns_strided(self, function: ast.AST, depth: int) -> bool:
        """Any return of the function (or a lambda's body) may be strided."""
        if depth > self.MAX_LAYOUT_DEPTH:
            return True

        def answer() -> bool:
            if type(function) is ast.Lambda:
                return self.strided(function.body, function, depth + 1)
            return any(self.strided(node.value, function, depth + 1) for node in _own_nodes(function)
                       if type(node) is ast.Return and node.value is not None)

        return self._once(("returns", id(function), self.strided), self.strided, answer)

    def _any_returns_strided(self, depth: int) -> bool:
        """Some function of the file may return a strided value (what calling an unknown
        callable of the file may give)."""
        return any(self._returns_strided(f, depth) for f in self.functions)

    def attributes_plain(self, base: ast.AST, scope, depth: int) -> bool:
        """No attribute of the value is a tensor (the model's `_attribute_value`): a
        literal, a display, an object of a class of the file that is no module, a
        parameter no call passes anything else, through names."""
        if isinstance(base, _NEVER_TENSOR) or _constant(base):
            return True
        if depth > self.MAX_DEPTH:
            return False
        kind = type(base)
        if (kind is ast.Name or kind is ast.Attribute) and self._of_import(base, scope):
            return True
        if kind is ast.Name:
            return not self._name(base.id, scope, depth, self._attributes_not_plain, self._param_attributes_not_plain)
        if kind is ast.Call and type(base.func) is ast.Name:
            return self._plain_class(base.func.id, scope)
        return False

    def _of_import(self, node: ast.AST, scope) -> bool:
        """`node` (a name or a dotted name) reads a name only a module-level import binds in
        the file: the model's value of it, and of any attribute of it, comes from its
        qualified name (`_import_value`, `_qualified_value`: a dtype, a class, a number, a
        legacy tensor type) and is no tensor, nor anything with tensor attributes."""
        dotted = _dotted(node)
        if dotted is None:
            return False
        head = dotted.partition(".")[0]
        if type(scope) in _FUNCTIONS:
            if head in self._bindings(scope) or not self._top_level(scope):
                return False
        elif scope is not None:
            return False
        return self.module_binds.get(head) == [("import", None)] and self.facts.binding_counts().get(head) == 1

    def _attributes_not_plain(self, value, scope, depth) -> bool:
        return not self.attributes_plain(value, scope, depth)

    def _param_attributes_not_plain(self, function, name: str, depth: int) -> bool:
        return self._param(function, name, depth, self._attributes_not_plain)

    def _plain_class(self, name: str, scope) -> bool:
        """`name`, read in `scope`, is a class of the file (bound once) that is no module:
        what calling it makes has no tensor attributes the model knows of."""
        if type(scope) in _FUNCTIONS and name in self._bindings(scope):
            return False
        if scope is not None and type(scope) in _FUNCTIONS and not self._top_level(scope):
            return False
        binds = self.module_binds.get(name)
        return bool(binds) and len(binds) == 1 and binds[0][0] == "class" \
            and self.facts.binding_counts().get(name) == 1 and name not in self.facts.module_classes()

    def _call(self, call: ast.Call, scope, depth: int) -> bool:
        """What the call returns may be a host tensor (`SemanticModel._call_value`)."""
        func = call.func
        if type(func) is ast.Name:
            name = func.id
            if type(scope) in _FUNCTIONS and name in self._bindings(scope):
                return self._name(name, scope, depth, self._callee_unsafe, self._param_callee_unsafe)
            if scope is not None and (type(scope) not in _FUNCTIONS or not self._top_level(scope)):
                return True
            return self._module_callee(name, func, depth)
        if type(func) is ast.Attribute:
            owner = self._self_class(func.value, scope)
            if owner is not None:
                return self._method_returns(func.attr, depth)
            dotted = _dotted(func)
            if dotted is not None and type(scope) in _FUNCTIONS and dotted.partition(".")[0] in self._bindings(scope):
                return True
            if dotted is not None and (scope is None or type(scope) in _FUNCTIONS and self._top_level(scope)):
                return not self._import_call_safe(dotted, func.attr)
        return True

    def _module_callee(self, name: str, func: ast.AST, depth: int) -> bool:
        binds = self.module_binds.get(name)
        if not binds and name in _HOST_FREE_BUILTINS and name not in self.facts.bound_names():
            return False
        if not binds or len(binds) != 1 or self.facts.binding_counts().get(name) != 1:
            return True
        kind, bound = binds[0]
        if kind == "class":
            return False  # a module, a dataset, or an object the model does not follow
        if kind == "def":
            return self._returns(bound, depth)
        if kind == "import":
            return not self._import_call_safe(name, name)
        return self._callee_unsafe(bound, None, depth + 1)

    def _callee_unsafe(self, callee: ast.AST, scope, depth: int) -> bool:
        """Calling the value of `callee` may give a host tensor: unless it is a literal
        (`None`), a module class (its call makes a module), a class or function of the file
        whose call gives none, an import that is no tensor function, or a name bound only
        to such (through parameters' arguments)."""
        if _constant(callee):
            return False
        if depth > self.MAX_DEPTH:
            return True
        kind = type(callee)
        if kind is ast.Name or kind is ast.Attribute:
            dotted = _dotted(callee)
            if dotted is not None:
                quals = self.facts._qualnames(dotted)
                if quals and all(_is_module_class(q) for q in quals):
                    return False
        if kind is ast.Name:
            name = callee.id
            if type(scope) in _FUNCTIONS and name in self._bindings(scope):
                return self._name(name, scope, depth, self._callee_unsafe, self._param_callee_unsafe)
            if scope is not None and (type(scope) not in _FUNCTIONS or not self._top_level(scope)):
                return True
            if name in _NO_TENSOR_BUILTINS and name not in self.facts.bound_names():
                return False
            return self._module_callee(name, callee, depth)
        if kind is ast.Attribute:
            dotted = _dotted(callee)
            if dotted is None or type(scope) in _FUNCTIONS and dotted.partition(".")[0] in self._bindings(scope):
                return True
            if scope is not None and (type(scope) not in _FUNCTIONS or not self._top_level(scope)):
                return True
            return not self._import_call_safe(dotted, callee.attr)
        if kind is ast.Call:
            return not self._makes_no_known_value(callee, scope)
        return True

    def _makes_no_known_value(self, call: ast.Call, scope) -> bool:
        """`call` (`functools.partial(nn.LayerNorm, eps=1e-6)`) calls an import that gives
        no tensor (`_import_call_safe`) nor a module (not a torch.nn class, a model factory,
        a class of another local module): the model knows nothing of what it makes, and
        calling that gives nothing known either (`_call_value`: unknown)."""
        func = call.func
        if not self._of_import(func, scope):
            return False
        dotted = _dotted(func)
        last = dotted.rsplit(".", 1)[-1]
        if not self._import_call_safe(dotted, last):
            return False
        from devicelint.semantic.api import torch_api

        api = torch_api()
        for qual in self.facts._qualnames(dotted):
            tail = qual.rsplit(".", 1)[-1]
            if qual.startswith(".") or api.is_module_class(qual) or qual.startswith(("torch.", "torchvision.")) and tail[:1].isupper() \
                    or qual.startswith(api.module_factory_prefixes):
                return False
        view = self.facts.view()
        symbol = view.resolve(dotted) if view is not None else None
        return symbol is None or symbol.kind not in ("class", "function")

    def _param_callee_unsafe(self, function, name: str, depth: int) -> bool:
        return self._param(function, name, depth, self._callee_unsafe)

    def _returns(self, function: ast.AST, depth: int) -> bool:
        """`returned_value`: any of its returns (a function met again while its returns are
        asked: the least answer, `_once`)."""
        # (a generator's returns are none in the model: asked all the same)
        return self._once(("returns", id(function)), self.host,
                          lambda: any(self.host(node.value, function, depth + 1) for node in _own_nodes(function)
                                      if type(node) is ast.Return and node.value is not None))

    def _method_returns(self, name: str, depth: int) -> bool:
        """`self.name(...)`: the model asks the receiver (`self`: of no known kind) first:
        a move or tensor-only method may give a tensor; then `self.name` (a stored value:
        may; a method of the class or of a base in the file: its returns)."""
        if name in ("to", "cuda", "cpu", "type") or name in _tensor_only_methods():
            return True
        if self.stores.get(name):
            return True
        methods = self.methods.get(name)
        if not methods:
            return False  # (the model: of unknown kind)
        return any(self._returns(m, depth + 1) for m in methods)

    def _import_call_safe(self, dotted: str, last: str) -> bool:
        """Calling `dotted`, an import's name (or a member of one), gives no tensor in the
        model: every qualified name it may stand for is unknown to the API table (no
        function, no legacy tensor type, none of the few calls `_qualified_call` follows)
        and not another local module's (the project index), nor a method that the model
        applies to a receiver of unknown kind (`to`, `.float()`: tensor-only methods)."""
        if last in ("to", "cuda", "cpu", "type") or last in _tensor_only_methods():
            return False
        if not self.facts._may_be_imported(dotted) or self.facts.star_import:
            return False
        if dotted.partition(".")[0] in self.facts.alias_heads:
            return False
        head = dotted.partition(".")[0]
        if self.facts.binding_counts().get(head) != 1:
            return False
        quals = self.facts._qualnames(dotted)
        if not quals:
            return False
        from devicelint.semantic.api import torch_api

        api = torch_api()
        for qual in quals:
            if qual.endswith("Tensor") or qual in _FOLLOWED_CALLS or api.function(qual) is not None:
                return False
            # (a relative import: whatever package the model reads it in, no API name ends so)
            if qual.startswith(".") and qual.lstrip(".") in _api_suffixes():
                return False
        # A function of another local module gives no host tensor in the model either:
        # `_project_returned` takes only device data from it, `_project_loader` a loader or
        # a device.
        return True


_SUFFIXES: Optional[frozenset] = None


def _api_suffixes() -> frozenset:
    """Every dotted tail of the API table's functions and of `_FOLLOWED_CALLS`
    (`zeros`, `nn.Parameter`, `torch.nn.Parameter`)."""
    global _SUFFIXES
    if _SUFFIXES is None:
        from devicelint.semantic.api import torch_api

        found = set()
        for qual in [*torch_api().functions, *_FOLLOWED_CALLS]:
            parts = qual.split(".")
            found.update(".".join(parts[i:]) for i in range(len(parts)))
        _SUFFIXES = frozenset(found)
    return _SUFFIXES


# Builtins whose call gives no tensor (semantic/model.py `_builtin_call`: numbers, strings,
# flags, new sequences and mappings, `None`; not `abs`/`sum`/`min`/`max`/`iter`/`next`).
_HOST_FREE_BUILTINS = frozenset({"len", "int", "float", "round", "ord", "hash", "str", "repr", "format", "chr",
                                 "hex", "oct", "bin", "bool", "isinstance", "callable", "hasattr", "list",
                                 "tuple", "sorted", "reversed", "set", "dict", "range", "enumerate", "zip",
                                 "print"})
# Qualified calls whose value `_qualified_call` takes from their arguments.
_FOLLOWED_CALLS = frozenset({"torch.compile", "torch.jit.script", "torch.jit.trace", "torch.nn.Parameter",
                             "torch.nn.parameter.Parameter", "numpy.squeeze", "random.sample", "random.choices"})
_TENSOR_ONLY: Optional[frozenset] = None


def _tensor_only_methods() -> frozenset:
    global _TENSOR_ONLY
    if _TENSOR_ONLY is None:
        from devicelint.semantic.api import torch_api

        _TENSOR_ONLY = frozenset(torch_api().tensor_only_methods)
    return _TENSOR_ONLY


def _annotation_of(function: ast.AST, name: str) -> Optional[ast.AST]:
    args = function.args
    for param in args.posonlyargs + args.args + args.kwonlyargs + [a for a in (args.vararg, args.kwarg) if a]:
        if param.arg == name:
            return param.annotation
    return None


# Last names of annotations the model reads as a number, a flag, a string or a NumPy array
# (`SemanticModel.annotation_value`), and the sequences' heads.
_PLAIN_ANNOTATIONS = frozenset({"int", "float", "complex", "bool", "str", "ndarray"})
_SEQUENCE_ANNOTATIONS = frozenset({"List", "list", "Sequence", "Tuple", "tuple", "Iterable"})


def _annotation_kind(node: Optional[ast.AST], depth: int = 0) -> str:
    """What `SemanticModel.annotation_value` makes of a parameter's annotation: "scalar" (a
    number, flag, string, array or None: nothing in it, no attribute of it, is a tensor or a
    module), "plain" (a sequence: no attribute of it is one, its elements may be), or
    "unknown" (unknown, a tensor, a module, or anything not judged here). A parameter whose annotation is of a kind, and not a tensor,
    never holds a tensor in the model (`_param_value`: the calls' value only where its kind
    agrees)."""
    if node is None or depth > 8:
        return "unknown"
    kind = type(node)
    if kind is ast.Constant:
        if node.value is None:
            return "scalar"
        if isinstance(node.value, str):
            try:
                return _annotation_kind(ast.parse(node.value, mode="eval").body, depth + 1)
            except (SyntaxError, ValueError, RecursionError, MemoryError):
                return "unknown"
        return "unknown"
    if kind is ast.Subscript:
        head = _dotted(node.value) or ""
        last = head.rsplit(".", 1)[-1]
        if last == "Optional":
            return _annotation_kind(node.slice, depth + 1)
        return "plain" if last in _SEQUENCE_ANNOTATIONS else "unknown"
    if kind is ast.BinOp and type(node.op) is ast.BitOr:
        left, right = _annotation_kind(node.left, depth + 1), _annotation_kind(node.right, depth + 1)
        if _is_none(node.left):
            return right
        if _is_none(node.right):
            return left
        return "unknown"  # (a join of two kinds: known only when they are the same)
    dotted = _dotted(node)
    if dotted is not None:
        last = dotted.rsplit(".", 1)[-1]
        if last == "Tensor":
            return "unknown"
        if last in _PLAIN_ANNOTATIONS:
            return "scalar"
    return "unknown"


def _is_none(node: ast.AST) -> bool:
    return type(node) is ast.Constant and node.value is None


def _default_of(function: ast.AST, name: str) -> Optional[ast.AST]:
    args = function.args
    positional = args.posonlyargs + args.args
    for param, default in zip(positional[len(positional) - len(args.defaults):], args.defaults):
        if param.arg == name:
            return default
    for param, default in zip(args.kwonlyargs, args.kw_defaults):
        if param.arg == name:
            return default
    return None


def _model_self(method: ast.AST) -> Optional[str]:
    """The first parameter of a method that the model reads `x.attr` of as the instance's
    (`SemanticModel._self_class`: any method but a static one, class methods included)."""
    if any(_dotted(d) == "staticmethod" for d in method.decorator_list):
        return None
    params = method.args.posonlyargs or method.args.args
    return params[0].arg if params else None


# Builtins whose result is never a module (semantic/model.py `_builtin_call`; `dict(...)`,
# the usual element of timm's `feature_info` lists).
_NO_MODULE_BUILTINS = frozenset({"dict", "list", "tuple", "set", "int", "float", "str", "bool", "len",
                                 "round", "repr", "format", "range", "sorted"})

class _EveryName:
    """What a star import may bind: any name."""

    def __contains__(self, name) -> bool:
        return True


_EVERY_NAME = _EveryName()


class _StarCounts(dict):
    """Binding counts where a star import may bind any name once more."""

    def get(self, key, default=None):
        return super().get(key, 0) + 1


# Builtins whose result is never a tensor (semantic/model.py `_builtin_call`: numbers,
# strings, booleans, sequences; not `min`/`max`/`sum`/`abs`, which keep a tensor).
_NO_TENSOR_BUILTINS = frozenset({"int", "float", "round", "len", "ord", "hash", "str", "repr", "format",
                                 "bool", "isinstance", "callable", "hasattr", "range", "enumerate", "zip"})


def _module_root(qual: str) -> bool:
    """semantic/model.py `_module_root`."""
    from devicelint.semantic.api import torch_api

    return torch_api().is_module_class(qual) \
        or qual.startswith(("pytorch_lightning.", "lightning.")) and qual.endswith("Module")


# DL017's `_PARAMETER_CLASSES`: values that register themselves on assignment.
_PARAMETER_CLASSES = frozenset({"torch.nn.Parameter", "torch.nn.parameter.Parameter", "torch.nn.Buffer",
                                "torch.nn.parameter.Buffer", "torch.nn.UninitializedParameter",
                                "torch.nn.UninitializedBuffer"})


def _is_module_class(qual: str) -> bool:
    from devicelint.semantic.api import torch_api

    return torch_api().is_module_class(qual)


_TRANSPOSING_ATTRIBUTES = frozenset({"T", "mT", "H", "mH"})
# Calls whose value the gate cannot follow (`getattr(self, name)`: any attribute).
# (`next(it)`: the `__next__` of a class of the file or of another local module,
# `_instance_method_returns`)
_DYNAMIC_CALLS = frozenset({"getattr", "eval", "exec", "vars", "globals", "locals", "__getattribute__",
                            "__getattr__", "next"})
# Builtins whose value the model takes from their arguments (`_builtin_call`).
_ELEMENT_BUILTINS = frozenset({"sum", "min", "max", "abs", "list", "tuple", "sorted", "reversed", "set", "iter",
                               "enumerate", "zip"})
# Fields whose value is never strided: sizes, a device, a dtype, numbers and flags.
_NEVER_STRIDED_ATTRIBUTES = frozenset({"shape", "device", "dtype", "ndim", "is_cuda", "requires_grad",
                                       "is_leaf", "layout", "is_contiguous"})
_LAYOUT_SOURCES: Optional[frozenset] = None
# Methods of lists and dicts that give what they hold (`SemanticModel._method_call`).
_CONTAINER_METHODS = frozenset({"get", "pop", "values", "items", "copy", "setdefault", "popitem",
                                "__getitem__"})


def _has_step_slice(node: ast.AST) -> bool:
    """An index that holds a slice with a step (`x[::2]`, `x[:, ::2]`)."""
    if type(node) is ast.Slice:
        return node.step is not None
    if type(node) is ast.Tuple:
        return any(type(e) is ast.Slice and e.step is not None for e in node.elts)
    return False


def _api():
    from devicelint.semantic.api import torch_api

    return torch_api()


def _layout_sources() -> frozenset:
    """Last names of the API table's ops that may make a strided layout (`shapes.apply_layout`:
    "transpose", "permute", "expand", "narrow"; of a result of "tensors", only narrowed
    pieces: not `unbind`'s), with `.T`/`.mT`/`.H`/`.mH`."""
    global _LAYOUT_SOURCES
    if _LAYOUT_SOURCES is None:
        api = _api()
        found = set(_TRANSPOSING_ATTRIBUTES)
        for table in (api.functions, api.methods):
            for name, spec in table.items():
                last = name.rsplit(".", 1)[-1]
                if spec.result == "tensors":
                    if spec.layout == "narrow" and last != "unbind":
                        found.add(last)
                elif spec.layout in ("transpose", "permute", "expand", "narrow"):
                    found.add(last)
        _LAYOUT_SOURCES = frozenset(found)
    return _LAYOUT_SOURCES


def _keeps_layout(spec) -> bool:
    """An op whose result may keep its input's strided layout (`apply_layout`: "follow",
    "keep", "same"; `result = "same"`: the input itself)."""
    if spec.result == "same":
        return True
    if spec.result in ("number", "bool", "host-list", "array", "none", "tensors", "packed", "device",
                       "dtype", "size"):
        return False
    return spec.layout in ("follow", "keep", "same")


def _start(node: ast.AST) -> tuple[int, int]:
    return (node.lineno, node.col_offset)


def _end(node: ast.AST) -> tuple[int, int]:
    return (node.end_lineno, node.end_col_offset)


def _unpacked_names(target: ast.AST) -> list[ast.Name]:
    """The names an assignment target binds (through tuples, lists and starred targets;
    not attributes or subscripts)."""
    kind = type(target)
    if kind is ast.Name:
        return [target]
    if kind is ast.Starred:
        return _unpacked_names(target.value)
    if kind is ast.Tuple or kind is ast.List:
        return [n for e in target.elts for n in _unpacked_names(e)]
    return []


def _parameters(function: ast.AST) -> set[str]:
    args = function.args
    found = {a.arg for a in args.posonlyargs + args.args + args.kwonlyargs}
    found.update(a.arg for a in (args.vararg, args.kwarg) if a is not None)
    return found


def _self_param(method: ast.AST) -> Optional[str]:
    """The instance parameter's name (DL017's `_self_name`)."""
    for decorator in method.decorator_list:
        if type(decorator) is ast.Name and decorator.id in ("staticmethod", "classmethod"):
            return None
    params = method.args.args or method.args.posonlyargs
    return params[0].arg if params else None


def _own_nodes(function: ast.AST, roots: Optional[list] = None):
    """The nodes under a function (its decorators, parameters and body; or under `roots`);
    nested functions and classes are listed but not entered (lambdas and comprehensions
    are), as the rules' `ctx.descendants(method, kind, (FunctionDef, ClassDef))` list them."""
    stack = _child_nodes(function) if roots is None else list(roots)
    while stack:
        node = stack.pop()
        yield node
        if type(node) not in _NESTED_SCOPES:  # listed, not entered
            stack.extend(_child_nodes(node))


def _child_nodes(node: ast.AST) -> list[ast.AST]:
    """`ast.iter_child_nodes`, without the marker fields (`ctx`, `op`), as a list."""
    found = []
    for name in _child_fields(type(node)):
        value = getattr(node, name, None)
        if type(value) is list:
            found.extend(child for child in value if isinstance(child, ast.AST))
        elif value is not None and isinstance(value, ast.AST):
            found.append(value)
    return found


def _fills(owner: ast.ClassDef) -> list[tuple[ast.AST, ast.AST]]:
    """What a class's body appends, extends, inserts or stores by index (DL002's `_filled`,
    as a superset: into any target), each with the call or assignment that puts it there."""
    found: list[tuple[ast.AST, ast.AST]] = []
    for node in ast.walk(owner):
        if type(node) is ast.Call and type(node.func) is ast.Attribute \
                and node.func.attr in ("append", "extend", "insert"):
            found.extend((a, node) for a in node.args)
            found.extend((k.value, node) for k in node.keywords)
        elif type(node) is ast.Assign and any(type(t) is ast.Subscript for t in node.targets):
            found.append((node.value, node))
    return found




def _calls_name_in_loop(function: ast.AST, names: set[str]) -> bool:
    """Some call inside `function` whose callee is a bare name of `names`, in the body of a
    for/while loop or in a comprehension (any loop at any depth below `function`)."""
    stack: list[tuple[ast.AST, bool]] = [(child, False) for child in ast.iter_child_nodes(function)]
    while stack:
        node, in_loop = stack.pop()
        kind = type(node)
        if in_loop and kind is ast.Call and type(node.func) is ast.Name and node.func.id in names:
            return True
        inner = in_loop or kind in _FOR_WHILE or kind in _COMPREHENSIONS
        stack.extend((child, inner) for child in ast.iter_child_nodes(node))
    return False


# -- what another local module's code may do, unit by unit (DL016's and DL004's foreign paths)
#
# A unit is a function or class defined at a module's top level (also inside a top-level
# `if`/`try`/`with`), with everything in it (methods, nested functions, lambdas, decorators,
# bases, defaults); the module's other statements (imports left out) are one more unit, "".
# From a function or class another file imports, the code its model may run or read is in
# units reached through the identifiers the unit mentions: a unit of the same module of that
# name (a call, a method `self.f()`, an alias, a constructor, a base), the module's other
# statements when it reads a name they bind (a module-level constant, a lambda bound at top
# level), the units that declare it `global`, and what the module's imports resolve it to in
# the project index (a function or class of a further module; a module: its units whose
# names the unit mentions). The semantic model follows calls and values only by names
# written in the code (`syncs.callee`, `foreign_function`, `_project_class`, `defs`: never a
# string, `getattr` or an attribute of an object it does not show), so what it runs when the
# unit runs lies in that closure.

_UNITS_MAX_CHARS = 1_000_000  # over this, no look: every unit may (as dataflow's first look)
_PLACING_ID = re.compile(r"cuda|device|accelerator|synchroni[sz]e|(^|_)(dev|gpu)$", re.I)


class _Units:
    __slots__ = ("mentions", "dotted", "copies", "places", "bound", "globals", "factories", "dtype_to",
                 "stores_dtype", "copying")

    def __init__(self) -> None:
        # unit name -> identifiers it mentions / dotted names it reads / flags
        self.mentions: dict[str, set[str]] = {}
        self.dotted: dict[str, set[str]] = {}
        # `.cuda(...)`, `.new_tensor(...)`, or `.to(...)` to what may be a device (not a
        # dtype: `_may_be_device_target`)
        self.copies: dict[str, bool] = {}
        # the callees (dotted, None when not a name) of the unit's other calls given `device=`
        # what may be a device: copies only where the callee may be a `[copies] data_to_device`
        # factory (`_factory_copy`, `_constant_upload`: to a parameter's device or one
        # `device_place` finds), asked when the unit is reached (the index resolves them then)
        self.factories: dict[str, list[Optional[str]]] = {}
        self.dtype_to: dict[str, bool] = {}       # a `.to(x.dtype)`: a device where `stores_dtype`
        self.stores_dtype = False                 # `x.dtype = ...` or a string "dtype" (`placing_calls`)
        self.places: dict[str, bool] = {}
        self.bound: set[str] = set()              # names the other statements ("") bind
        self.globals: dict[str, set[str]] = {}    # name -> units declaring it `global`
        # dataflow's first look (`_copying_functions`): the names of the functions, at any
        # depth, around a call `_may_copy` accepts
        self.copying: set[str] = set()


def _module_units(index, module) -> Optional[_Units]:
    """The units of another local module (see above), kept by the index; None when its text
    is not looked at (too long, or `ast` cannot read it): then every unit may."""
    key = ("gate units", module.path, index.identity(module))
    if key in index.derived:
        return index.derived[key]  # type: ignore[return-value]
    from devicelint.project_index import module_ast

    found: Optional[_Units] = None
    tree = module_ast(index, module, _UNITS_MAX_CHARS)
    if tree is not None:
        try:
            found = _read_units(tree, module.text or "")
        except RecursionError:
            found = None
    index.derived[key] = found
    return found


# The words a call that may copy (`units.copying`, dataflow's `_may_copy`) is written with:
# its attribute, or its keyword. The call's lines hold one of them, and so do those of every
# node around it: a look for such calls goes only into the nodes on those lines.
MAY_COPY_WORDS = re.compile(r"\b(?:new_tensor|to|cuda|device)\b")


def lines_matching(text: str, pattern: re.Pattern, starts: Optional[list[int]] = None) -> list[int]:
    """The numbers of the lines (as `ast` numbers them, sorted) where `pattern` matches;
    `starts`: `line_starts(text)`, when known."""
    starts = line_starts(text) if starts is None else starts
    return sorted({bisect.bisect_right(starts, match.start()) for match in pattern.finditer(text)})


def on_lines(node: ast.AST, lines: list[int]) -> bool:
    """Whether `node`'s lines hold one of `lines` (sorted); True for a node without lines.
    A decorator lies above its function's or class's first line."""
    first = getattr(node, "lineno", None)
    if first is None:
        return True
    for decorator in getattr(node, "decorator_list", ()):
        first = min(first, decorator.lineno)
    at = bisect.bisect_left(lines, first)
    return at < len(lines) and lines[at] <= (getattr(node, "end_lineno", None) or first)


def _read_units(tree: ast.Module, text: str) -> _Units:
    units = _Units()
    # Only into the lines a copying call may be on: the whole walk cost torchvision's
    # looks at other modules 0.04 s of 0.09 s (cProfile, one process).
    lines = lines_matching(text, MAY_COPY_WORDS)
    owners_of: list[tuple[ast.AST, tuple[str, ...]]] = [(tree, ())]
    while owners_of:
        node, owners = owners_of.pop()
        if type(node) in _FUNCTIONS:
            owners = owners + (node.name,)
        elif owners and type(node) is ast.Call and (
                type(node.func) is ast.Attribute and node.func.attr in ("new_tensor", "to", "cuda")
                or any(k.arg == "device" for k in node.keywords)):
            units.copying.update(owners)
        owners_of.extend((child, owners) for child in ast.iter_child_nodes(node) if on_lines(child, lines))
    rest: list[ast.AST] = []
    pending = list(reversed(tree.body))
    while pending:
        statement = pending.pop()
        kind = type(statement)
        if kind in _NESTED_SCOPES:
            _add_unit(units, statement.name, statement)
        elif kind in (ast.Import, ast.ImportFrom):
            continue  # the index's facts bind them (resolved when mentioned)
        elif kind is ast.If:
            rest.append(statement.test)
            pending.extend(reversed(statement.body + statement.orelse))
        elif kind in (ast.Try, getattr(ast, "TryStar", ast.Try)):
            rest.extend(h.type for h in statement.handlers if h.type is not None)
            rest.extend(ast.Name(id=h.name, ctx=ast.Store()) for h in statement.handlers if h.name)
            pending.extend(reversed(statement.body + [s for h in statement.handlers for s in h.body]
                                    + statement.orelse + statement.finalbody))
        elif kind in (ast.With, ast.AsyncWith):
            rest.extend(statement.items)
            pending.extend(reversed(statement.body))
        else:
            rest.append(statement)
    other = _Units()
    for node in rest:
        _add_unit(other, "", node)
    if rest:
        units.mentions[""] = other.mentions[""]
        units.dotted[""] = other.dotted[""]
        units.copies[""] = other.copies[""]
        units.factories[""] = other.factories[""]
        units.dtype_to[""] = other.dtype_to[""]
        units.places[""] = other.places[""]
        units.stores_dtype |= other.stores_dtype
        for name, owners in other.globals.items():
            units.globals.setdefault(name, set()).update(owners)
        for node in rest:
            for inner in ast.walk(node):
                if type(inner) is ast.Name and type(inner.ctx) is not ast.Load:
                    units.bound.add(inner.id)
                elif type(inner) in _NESTED_SCOPES:
                    units.bound.add(inner.name)
                elif type(inner) is ast.alias:
                    units.bound.add((inner.asname or inner.name).partition(".")[0])
    return units


def _add_unit(units: _Units, name: str, root: ast.AST) -> None:
    mentions = units.mentions.setdefault(name, set())
    dotted = units.dotted.setdefault(name, set())
    factories = units.factories.setdefault(name, [])
    copies = units.copies.get(name, False)
    dtype_to = units.dtype_to.get(name, False)
    places = units.places.get(name, False)
    for node in ast.walk(root):
        kind = type(node)
        if kind is ast.Name:
            mentions.add(node.id)
            if not places and _PLACING_ID.search(node.id):
                places = True
        elif kind is ast.Attribute:
            mentions.add(node.attr)
            if not places and _PLACING_ID.search(node.attr):
                places = True
            if node.attr == "dtype" and type(node.ctx) is not ast.Load:
                units.stores_dtype = True
            text = _dotted(node)
            if text is not None:
                dotted.add(text)
        elif kind is ast.Call:
            func = node.func
            method = func.attr if type(func) is ast.Attribute else None
            if not places:
                # (`device_placing`'s calls: a `.cuda(...)`, a `.to(...)` or any call's
                # `device=` given what may be a device; a dtype's attribute counted too)
                target = _device_target(node)
                places = target is not None and _may_be_device_target(target)
            if method in ("cuda", "new_tensor"):
                copies = True
            elif method == "to":
                target = _device_target(node)
                if target is not None and _may_be_device_target(target):
                    if type(target) is ast.Attribute and target.attr == "dtype":
                        dtype_to = True
                    else:
                        copies = True
            elif any(k.arg == "device" and _may_be_device_target(k.value) for k in node.keywords):
                factories.append(_dotted(func))  # (`device="cpu"`, `device=None`: no copy)
        elif kind is ast.Constant:
            if isinstance(node.value, str):
                if node.value == "dtype":
                    units.stores_dtype = True
                if not places and (_CUDA_OR_DEVICE.search(node.value) or _names_accelerator(node.value)):
                    places = True
        elif kind is ast.arg:
            if not places and _PLACING_ID.search(node.arg):
                places = True
        elif kind is ast.alias:
            if not places and _PLACING_ID.search(node.name + " " + (node.asname or "")):
                places = True
            mentions.add((node.asname or node.name).partition(".")[0])
        elif kind in (ast.Global, ast.Nonlocal):
            for declared in node.names:
                units.globals.setdefault(declared, set()).add(name)
        elif kind in _NESTED_SCOPES or kind is ast.keyword:
            text = node.name if kind in _NESTED_SCOPES else node.arg
            if text and not places and _PLACING_ID.search(text):
                places = True
    units.copies[name] = copies
    units.dtype_to[name] = dtype_to
    units.places[name] = places


def may_copy_through(symbol, view) -> bool:
    """Whether running or building `symbol` (a function or class of another local module,
    from `FileFacts.uses_foreign`) may reach code that copies to the device as DL016 finds
    it: a call `.cuda(...)`, `.new_tensor(...)`, `.to(...)` to what may be a device, or a
    `[copies] data_to_device` factory given `device=` (every copy DL016's `upload`,
    `dataflow._constant_upload`, `_param_uploads`, `_factory_copy` and `wrapper_move`
    accept is written so, in the file whose model finds it: `_unit_copies`) in a unit of
    its module that it reaches (its own body, a helper, a method, a constructor, a lambda
    bound at top level). DL016 follows a call into a further module only from a function
    that `dataflow.foreign_call_uploads` takes (its module's first look names it or an
    `__init__`), through `inner_copies`: then a unit of the whole closure."""
    if _reaches(view, symbol, "copies", False):
        return True
    if symbol.kind != "function":
        return False
    units = _module_units(view.index, symbol.module)
    if units is not None and symbol.name not in units.copying and "__init__" not in units.copying:
        return False
    return _reaches(view, symbol, "copies", True)


def may_place_through(symbol, view) -> bool:
    """Whether running or building `symbol` may reach code that puts a value on the device
    or waits for it, as `FileFacts.device_placing` and `mentions("synchronize")` ask of a
    file: a `.to(...)`/`.cuda(...)` call, a `device=` keyword, an identifier naming a device,
    CUDA, an accelerator or a synchronize (`torch.device`, `x.device`, a `dev`/`gpu` hint, a
    legacy `torch.cuda` type), or a string naming a device, in a unit of its closure."""
    return _reaches(view, symbol, "places", True)


def _reaches(view, symbol, flag: str, imports: bool) -> bool:
    """Whether a unit that `symbol`'s unit reaches has `flag` ("copies", "places"): in its
    own module, or with `imports` through the module's imports into further ones."""
    index = view.index
    if view.deps is None:
        return _reaches_noted(index, symbol, flag, imports)
    return index._noting(view.deps, _reaches_noted, index, symbol, flag, imports)


def _reaches_noted(index, symbol, flag: str, imports: bool) -> bool:
    if symbol.module is None:
        return False
    stack = [(symbol.module, symbol.name)]
    seen: set[tuple[str, str]] = set()
    while stack:
        module, name = stack.pop()
        if (module.path, name) in seen:
            continue
        seen.add((module.path, name))
        # the answer rests on this module's text, as its model's would
        index._deps[("model", module.path)] = (index.identity(module), "")
        if not index.ready(module):
            return True  # (facts unread: `ast` cannot read it; nothing is known of it)
        units = _module_units(index, module)
        if units is None or name not in units.mentions and name in module.functions | set(module.classes):
            return True  # not looked at, or a unit the look did not find: it may
        if name not in units.mentions:
            continue
        if units.places[name] if flag == "places" else _unit_copies(index, module, units, name):
            return True
        mentions = units.mentions[name]
        for other in mentions:
            if other in units.mentions and other != name:
                stack.append((module, other))
            if other in units.bound and "" in units.mentions:
                stack.append((module, ""))
            for owner in units.globals.get(other, ()):
                stack.append((module, owner))
        if not imports:
            continue
        bound = module.imports.keys() | module.aliases.keys() | module.self_names
        asked = [m for m in mentions if m in bound or module.stars and m not in units.mentions]
        asked += [d for d in units.dotted[name] if d.partition(".")[0] in bound]
        for dotted in asked:
            found = index.resolve(module, dotted)
            if found is None or found.module is None:
                continue
            if found.kind in ("function", "class"):
                stack.append((found.module, found.name))
            elif found.kind == "module":
                inner = _module_units(index, found.module)
                if inner is None:
                    return True
                index._deps[("model", found.module.path)] = (index.identity(found.module), "")
                stack.extend((found.module, m) for m in mentions if m in inner.mentions)
                if "" in inner.mentions and mentions & inner.bound:
                    stack.append((found.module, ""))
    return False


def _unit_copies(index, module, units: _Units, name: str) -> bool:
    """Whether a unit may copy to the device (`may_copy_through`): a `.cuda()`, a
    `.new_tensor(...)`, a `.to(...)` to what may be a device (to `x.dtype` only where the
    module stores a `dtype` attribute), or a call given `device=` of what may be a `[copies]
    data_to_device` factory (`torch.tensor`, `as_tensor`, ...): its last name is one, or the
    index does not resolve its name to a class or function of the project nor to another
    name outside it (a local variable, a parameter, an attribute: whatever it holds)."""
    if units.copies[name] or units.dtype_to[name] and units.stores_dtype:
        return True
    factories = units.factories[name]
    if not factories:
        return False
    data = _data_to_device_names()
    from devicelint.semantic.api import torch_api

    api = torch_api()
    for dotted in factories:
        if dotted is None or dotted.rsplit(".", 1)[-1] in data:
            return True
        found = index.resolve(module, dotted)
        if found is None or found.kind == "external" and found.name in api.data_to_device:
            return True
    return False

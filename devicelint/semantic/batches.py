"""Where a DataLoader's batches go: which host-to-device copies move data that comes from
which `DataLoader(...)` constructions, followed by data flow, not by names.

    feeds = sem.batches.fed_loaders()            # loaders whose batches some copy moves to the device
    found = sem.batches.sources(expr)            # the loaders (and pinning) `expr`'s data comes from
    move = sem.batches.device_move(call)         # `call` copies host data to the device?

A batch reaches the device when a copy (`.to(device)`, `.cuda()`, `.type(T)` with `T` a CUDA
tensor type) moves data computed from an element of an iteration over a loader: `for x, y in
loader`, `enumerate`/`zip`/`tqdm` of it, `next(it)` with `it = iter(loader)`, `batch[0]`,
`{k: v.to(d) for k, v in batch.items()}`. The loader may be built in this function, at module
level, on `self` in another method, or by a function of the file that returns it; the copy
may be in a helper of the file that receives the loader or the batch: a parameter the data
comes from is followed to what every call site of that function in the file passes.

One batch fetched once, `next(iter(loader))` outside any loop (a sample to plot, a shape
check), is not a stream of batches and is not followed.

Followed: assignments, loop and comprehension targets, subscripts, tensor methods and
functions, conditional expressions (an arm that runs only without a GPU is not), `self.x` to
what the class's methods assign to it, constructor calls as call sites of `__init__`, and,
through the project index, a function or class of another local module the loader is handed
to (`moved_parameters`). Not followed: module calls (their output is the module's data),
metadata (`x.shape`, `len(x)`), sizes given to factories.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Optional

import libcst as cst

from devicelint.names import dotted_name
from devicelint.semantic import modules
from devicelint.semantic.dataflow import is_metadata_read, size_factory
from devicelint.semantic.values import Kind, Place

# Values that carry no batch data: following them leads nowhere.
_NOT_DATA = frozenset({Kind.NUMBER, Kind.BOOL, Kind.STRING, Kind.NONE, Kind.DEVICE, Kind.DTYPE,
                       Kind.SIZE, Kind.MODULE, Kind.MODULE_CLASS, Kind.OPTIMIZER, Kind.SCALER,
                       Kind.SCHEDULER, Kind.EVENT, Kind.TENSOR_TYPE})
# Builtins whose result iterates over their argument.
_ITERATING = frozenset({"next", "iter"})
# Bindings followed from one read to the value it was computed from.
_FOLLOWED = frozenset({"assign", "annassign", "walrus", "augassign", "with"})
_MAX_BINDINGS = 10   # bindings followed from one copy back to a loader
# What a copy `device_move` accepts is written with: a call of an attribute `to`, `cuda` or
# `type` (`x.to(`, `x . cuda (`, `(x.to)(`: whitespace, line continuations, comments and
# closing parentheses may come between). A module whose text never matches moves nothing
# (`_foreign_feeds` does not look further).
_MOVE_WORDS = re.compile(r"\.(?:\s|\\|#[^\r\n]*)*(?:to|cuda|type)(?:\s|\\|#[^\r\n]*|\))*\(")
_MAX_CALLERS = 4     # call-site hops from a helper to the function that builds the loader


@dataclass(frozen=True)
class Move:
    """A host-to-device copy: `call` moves `data` to the device."""

    call: cst.Call
    data: cst.BaseExpression
    hint: bool            # the device rests on an identifier's name only
    where: Optional[tuple] = None  # in another file of the project: a notebook.Site (path, line, column, its cell)


@dataclass(frozen=True)
class Source:
    """A loader whose batches a copy moves: `loader` is its `DataLoader(...)` call."""

    loader: cst.Call
    pinned: Optional[bool]        # the loader's pin_memory: True, False, or not known
    pinned_on_path: bool          # `.pin_memory()` is called on the data between
    foreign: bool = False         # `loader` calls a function of another file that builds it
    part: tuple[int, ...] = ()    # of what that function returns: `train, valid = get_data()`


class BatchFlow:
    def __init__(self, model) -> None:
        self.model = model
        self._sources: dict[int, tuple[Source, ...]] = {}
        self._fed: Optional[list[tuple[Source, Move]]] = None
        self._unpacking: set[int] = set()
        # While `moved_parameters` traces: the parameters a trace reached (Def, iterated).
        self._open: Optional[list] = None
        self._moved_params: Optional[dict[int, dict[str, tuple[Move, bool]]]] = None

    # -- copies ------------------------------------------------------------------------
    def device_move(self, call: cst.Call) -> Optional[Move]:
        """The host-to-device copy `call` makes, if it is one: `.to(<device>)`, `.cuda()`,
        `.type(<CUDA tensor type>)` on data not already on the device (not a module), on a
        line that runs with a GPU."""
        sem = self.model
        func = call.func
        if not isinstance(func, cst.Attribute) or func.attr.value not in ("to", "cuda", "type"):
            return None
        if func.attr.value in ("to", "type") and not call.args:
            return None
        moved = sem.value(call)
        if moved.place is not Place.DEVICE or moved.kind is Kind.MODULE:
            return None
        data = sem.value(func.value)
        if data.place is Place.DEVICE or data.kind in (Kind.MODULE, Kind.MODULE_CLASS):
            return None
        if not sem.on_gpu_path(call):
            return None
        return Move(call, func.value, moved.hint)

    # -- where data comes from -------------------------------------------------------------
    def sources(self, expr: cst.BaseExpression) -> tuple[Source, ...]:
        """The loaders whose batches `expr`'s data is computed from (through this function's
        bindings, and through the call sites of this file's functions whose parameters the
        data comes from)."""
        key = id(expr)
        found = self._sources.get(key)
        if found is None:
            self._sources[key] = ()
            unique = {(id(s.loader), s.pinned_on_path, s.foreign, s.part): s
                      for s in self._trace(expr, iterated=False, pinned=False, hops=0)}
            found = tuple(unique.values())
            self._sources[key] = found
        return found

    def _trace(self, expr, iterated: bool, pinned: bool, hops: int) -> list[Source]:
        sem = self.model
        found: list[Source] = []
        seen: set = set()
        stack = [(expr, iterated, pinned, 0)]
        while stack:
            node, iterated, pinned, depth = stack.pop()
            key = (id(node), iterated, pinned)
            if key in seen:
                continue
            seen.add(key)
            if type(node) in (cst.Lambda, cst.FunctionDef, cst.ClassDef) or is_metadata_read(sem, node):
                continue
            value = sem.value(node)
            if value.kind in _NOT_DATA:
                continue
            if value.kind is Kind.LOADER:
                if not iterated:
                    continue  # the loader object itself (`loader.dataset`), not its batches
                if self._is_construction(node):
                    found.append(Source(node, value.pinned, pinned))
                    continue
                function = sem.resolve_function(node.func) if isinstance(node, cst.Call) else None
                if function is not None:
                    # `get_loader(...)`: the loaders the function of the file returns.
                    if depth < _MAX_BINDINGS:
                        stack.extend((r.value, True, pinned, depth + 1)
                                     for r in sem.flow(function).returns if r.value is not None)
                    continue
                if isinstance(node, cst.Call) and sem.syncs.runs_foreign_function(node):
                    # `get_loader(...)` of another file: that file reports its construction.
                    found.append(Source(node, value.pinned, pinned, foreign=True))
                    continue
                if isinstance(node, cst.Attribute) and self._is_construction(value.node) \
                        and not self._self_attribute_values(node):
                    found.append(Source(value.node, value.pinned, pinned))  # `obj.loader`
                    continue
            if isinstance(node, cst.Name):
                for d in sem.defs(node):
                    if d.kind == "param":
                        if self._open is not None and not pinned:
                            self._open.append((d, iterated))
                        if hops < _MAX_CALLERS:
                            found.extend(self._from_callers(d, iterated, pinned, hops))
                    elif d.kind in ("for", "comp") and d.value is not None and depth < _MAX_BINDINGS:
                        stack.extend((n, True, pinned, depth + 1) for n in self._iterated_part(d.value, d.path))
                    elif d.kind in _FOLLOWED and d.value is not None and depth < _MAX_BINDINGS:
                        if iterated and d.path and self._foreign_call(d.value):
                            # `train_dl, valid_dl = get_data()` of another file: that file
                            # reports the construction its returned tuple holds at `d.path`.
                            found.append(Source(d.value, None, pinned, foreign=True, part=d.path))
                            continue
                        stack.extend((n, iterated, pinned, depth + 1) for n in self._part(d.value, d.path))
                continue
            if isinstance(node, cst.Call):
                stack.extend((n, it, pinned or pins, depth) for n, it, pins in self._call_inputs(node, iterated))
                continue
            if isinstance(node, cst.Attribute):
                assigned = self._self_attribute_values(node) if depth < _MAX_BINDINGS else []
                # `self.loader` in a method: what the class's methods assign to it.
                stack.extend((n, iterated, pinned, depth + 1) for n in assigned)
                if not assigned:
                    stack.append((node.value, iterated, pinned, depth))
                continue
            if isinstance(node, cst.Subscript):
                stack.append((node.value, iterated, pinned, depth))
                continue
            if isinstance(node, cst.IfExp):
                for arm in (node.body, node.orelse):
                    if sem.branch_possible(node, arm):
                        stack.append((arm, iterated, pinned, depth))
                continue
            if isinstance(node, (cst.ListComp, cst.SetComp, cst.GeneratorExp)):
                stack.append((node.elt, iterated, pinned, depth))
                continue
            if isinstance(node, cst.DictComp):
                stack.append((node.value, iterated, pinned, depth))
                continue
            for child in sem.children(node):
                if isinstance(child, cst.BaseExpression) or isinstance(child, (cst.Element, cst.DictElement,
                                                                              cst.StarredElement, cst.Arg)):
                    stack.append((child, iterated, pinned, depth))
        return found

    def _part(self, expr: cst.BaseExpression, path: tuple[int, ...]) -> list[cst.BaseExpression]:
        """What an unpacking target at `path` receives from `expr`: an element of a tuple
        literal, the same part of what a function of the file returns (`train, test =
        get_loaders()`), else `expr` as a whole."""
        if not path:
            return [expr]
        index, rest = path[0], path[1:]
        if isinstance(expr, (cst.Tuple, cst.List)) and 0 <= index < len(expr.elements) \
                and not any(isinstance(e, cst.StarredElement) for e in expr.elements):
            return self._part(expr.elements[index].value, rest)
        if isinstance(expr, cst.Call):
            function = self.model.resolve_function(expr.func)
            if function is not None and id(function) not in self._unpacking:
                self._unpacking.add(id(function))
                try:
                    return [part for r in self.model.flow(function).returns if r.value is not None
                            for part in self._part(r.value, path)]
                finally:
                    self._unpacking.discard(id(function))
        return [expr]

    def _foreign_call(self, expr: cst.BaseExpression) -> bool:
        """`expr` calls a top-level function of another local module (not of this file)."""
        sem = self.model
        return isinstance(expr, cst.Call) and sem.resolve_function(expr.func) is None \
            and sem.syncs.runs_foreign_function(expr)

    def _iterated_part(self, iterable: cst.BaseExpression, path: tuple[int, ...]) -> list[cst.BaseExpression]:
        """What a loop target at `path` is taken from: `for i, (x, y) in enumerate(loader)`
        takes `x` from `loader` and `i` from no data; `zip(a, b)` takes part k from the k-th."""
        if path and isinstance(iterable, cst.Call) and isinstance(iterable.func, cst.Name) \
                and not self.model.defs(iterable.func):
            args = [a.value for a in iterable.args if a.keyword is None and not a.star]
            if iterable.func.value == "enumerate" and args:
                return [args[0]] if path[0] == 1 else []
            if iterable.func.value == "zip" and 0 <= path[0] < len(args):
                return [args[path[0]]]
        return [iterable]

    def _call_inputs(self, call: cst.Call, iterated: bool):
        """(expression, iterated, pins) for what a call's result is computed from."""
        sem = self.model
        func = call.func
        if size_factory(sem, call) is not None:
            return []
        if isinstance(func, cst.Name) and func.value in _ITERATING and not sem.defs(func):
            if func.value == "next" and self._one_batch(call):
                return []
            return [(a.value, True, False) for a in call.args[:1]]
        callee = sem.value(func)
        if callee.kind is Kind.MODULE or sem.moved_callable(callee):
            return []  # a module's output: its own data, not the batch's
        if self._from_python_list(call) or self._returns_python_lists(call):
            return []  # a new host tensor of Python objects: none of the batch's memory
        inputs = []
        if isinstance(func, cst.Attribute):
            pins = func.attr.value == "pin_memory"
            inputs.append((func.value, iterated, pins))
        elif isinstance(func, cst.Call) and isinstance(func.func, cst.Name) and func.func.value == "getattr" \
                and not sem.defs(func.func) and func.args and not func.args[0].star:
            # `getattr(img, precision)()`: a method of `img` (`img.half()`), computed from it.
            inputs.append((func.args[0].value, iterated, False))
        inputs.extend((a.value, iterated, False) for a in call.args)
        return inputs

    def _from_python_list(self, call: cst.Call) -> bool:
        """`torch.LongTensor(ids)` / `torch.tensor([...])` of a Python list (a display, a
        comprehension, or a name every binding of which is one): the tensor is allocated anew
        from Python objects (the names of a batch of strings turned into character codes),
        so the loader's pinning would not reach the memory that is copied."""
        sem = self.model
        qual = sem.qualname(call.func)
        if qual is None or qual not in sem.api.list_element_readers or qual.startswith("torch.cuda."):
            return False
        args = [a for a in call.args if a.keyword is None or a.keyword.value == "data"]
        if len(args) != 1 or args[0].star:
            return False
        data = args[0].value
        displays = (cst.List, cst.ListComp, cst.Tuple)
        if isinstance(data, displays):
            return True
        if not isinstance(data, cst.Name):
            return False
        defs = sem.defs(data)
        return bool(defs) and all(d.kind == "assign" and not d.path and isinstance(d.value, displays)
                                  for d in defs)

    def _returns_python_lists(self, call: cst.Call) -> bool:
        """A call of a function of the file each of whose returns is such a new tensor
        (`countries2tensor(countries)` returning `torch.LongTensor(ids)`)."""
        sem = self.model
        function = sem.resolve_function(call.func)
        if function is None:
            return False
        flow = sem.flow(function)
        return bool(flow.returns) and not flow.yields and all(
            isinstance(r.value, cst.Call) and self._from_python_list(r.value) for r in flow.returns)

    def _one_batch(self, call: cst.Call) -> bool:
        """`next(iter(loader))` outside any loop: one batch fetched once (a sample to plot
        or to check shapes), not a stream of batches."""
        sem = self.model
        inner = call.args[0].value if call.args else None
        return isinstance(inner, cst.Call) and isinstance(inner.func, cst.Name) \
            and inner.func.value == "iter" and not sem.defs(inner.func) \
            and not sem.loops.enclosing_loops(call)

    def _is_construction(self, node) -> bool:
        """`DataLoader(...)` itself (values that compare equal share one `node`, so a joined
        value's node is not evidence of which construction it came from)."""
        return isinstance(node, cst.Call) and self.model.api.is_loader(self.model.qualname(node.func) or "")

    def _self_attribute_values(self, node: cst.Attribute) -> list[cst.BaseExpression]:
        """For `self.x` in a method of a class of the file: the expressions the class's
        methods assign to `self.x` (the part an unpacking target takes); else []."""
        sem = self.model
        owner = modules.self_class(sem, node.value)
        if owner is None:
            return []
        entries = modules.attribute_assignments(sem, owner).get(node.attr.value, ())
        return [part for _target, d in entries if d.kind in _FOLLOWED and d.value is not None
                for part in self._part(d.value, d.path)]

    def _from_callers(self, param_def, iterated: bool, pinned: bool, hops: int) -> list[Source]:
        """What the file's call sites pass for a parameter, traced in the callers (a
        constructor call `Trainer(loader)` is a call site of `Trainer.__init__`)."""
        sem = self.model
        function = sem.function_of(param_def.node)
        if function is None:
            return []
        found: list[Source] = []
        for call, bound in self._call_sites(function):
            for arg in bound.get(param_def.name, ()):
                found.extend(self._trace(arg, iterated, pinned, hops + 1))
        return found

    def _call_sites(self, function: cst.FunctionDef) -> list[tuple[cst.Call, dict]]:
        """The file's calls of `function` with their arguments bound to its parameters."""
        sem = self.model
        sites = []
        for call in sem.calls_by_name().get(function.name.value, ()):
            resolved = sem.syncs.callee(call)
            if resolved is not None and resolved[0] is function:
                sites.append((call, resolved[1]))
        owner = sem.parent(sem.parent(function))
        if function.name.value == "__init__" and isinstance(owner, cst.ClassDef):
            for call in sem.calls_by_name().get(owner.name.value, ()):
                if isinstance(call.func, cst.Name) and \
                        [d.node for d in sem.defs(call.func)] == [owner]:
                    sites.append((call, sem.syncs._bind(function, call, True)))
        return sites

    def moved_parameters(self) -> dict[int, dict[str, tuple[Move, bool]]]:
        """{id(function): {parameter: (the copy, iterated)}}: the parameters of the file's
        functions whose data some copy of the file moves to the device (through the file's
        bindings, `self.x` attributes and call sites); `iterated` when the copy moves what
        iterating the parameter gives (a loader handed to `Trainer(loader)`, stored on `self`,
        walked by `train()`), not the parameter's own data. For callers in other files."""
        if self._moved_params is None:
            sem = self.model
            found: dict[int, dict[str, tuple[Move, bool]]] = {}
            self._moved_params = found  # a cycle through another file's callers finds none
            for call in sem.ctx.iter_nodes(cst.Call):
                move = self.device_move(call)
                if move is None:
                    continue
                self._open = []
                try:
                    self._trace(move.data, False, False, 0)
                    reached = self._open
                finally:
                    self._open = None
                streamed = sem.loops.step_loop(call) is not None
                for d, iterated in reached:
                    function = sem.function_of(d.node)
                    if function is None:
                        continue
                    moves = found.setdefault(id(function), {})
                    known = moves.get(d.name)
                    # Name a copy made on every step before one made once (a fixed sample).
                    if known is None or (streamed and sem.loops.step_loop(known[0].call) is None):
                        moves[d.name] = (move, iterated)
        return self._moved_params

    def _foreign_feeds(self) -> list[tuple[Source, Move]]:
        """Loaders this file hands to a function or class of another local module whose code
        moves their batches to the device (`Solver(loader)` with `Solver.train()` in
        solver.py copying `next(iter(self.loader))` to the GPU); the copy says where it is."""
        sem = self.model
        view = sem.project
        if view is None:
            return []
        found = []
        traced: dict[tuple[int, bool], list[Source]] = {}

        def trace(arg: cst.BaseExpression, iterated: bool) -> list[Source]:
            key = (id(arg), iterated)
            if key not in traced:
                outer, self._open = self._open, None  # a look only: no parameter noted
                try:
                    traced[key] = self._trace(arg, iterated, False, 0)
                finally:
                    self._open = outer
            return traced[key]

        for call in sem.ctx.iter_nodes(cst.Call):
            if not call.args:
                continue
            dotted = dotted_name(call.func)
            symbol = view.resolve(dotted) if dotted else None
            if symbol is None or symbol.module is view.module or symbol.kind not in ("function", "class"):
                continue
            # The module whose model would answer (the callee's, or the class's for its
            # `__init__`), found without building it: when its text holds no `.to`, `.cuda`
            # or `.type` (what a copy `device_move` accepts is written with), none of its
            # functions moves anything, and the call's arguments are not traced (lightning:
            # most such calls go to modules that move nothing).
            if symbol.kind == "function":
                dotted = sem.syncs._foreign_dotted(call)
                target = view.function_module(dotted) if dotted is not None else None
                target = target[0] if target is not None else None
            elif isinstance(call.func, cst.Name) and any(d.kind == "class" for d in sem.defs(call.func)):
                target = None  # a class of this file (`_class_method` reads it here)
            else:
                qual = sem.qualname(call.func)
                target = sem.project_class_symbol(qual) if qual else None
                target = target.module if target is not None else None
            if target is None or not view.text_has(target, _MOVE_WORDS):
                continue
            # Only the call's own (unstarred) arguments are bound to the callee's parameters:
            # when none of them carries a loader's batches, the call feeds nothing, and the
            # other file's model is not built for it (lightning: 38 of 42 such builds).
            if not any(trace(arg.value, iterated) for arg in call.args if not arg.star
                       for iterated in (False, True)):
                continue
            if symbol.kind == "function":
                callee = sem.syncs.foreign_function(call)
                bound_self = False
            else:
                callee = sem.syncs._class_method(call.func, "__init__")
                bound_self = True
            if callee is None or callee[0] is sem:
                continue
            other, function = callee
            moved = other.batches.moved_parameters().get(id(function))
            if not moved:
                continue
            bound = sem.syncs._bind(function, call, bound_self)
            for name, (move, iterated) in moved.items():
                located = replace(move, where=other.ctx.site(move.call))
                for arg in bound.get(name, ()):
                    found.extend((source, located) for source in self._trace(arg, iterated, False, 0))
        return found

    # -- the file's loaders ---------------------------------------------------------------
    def fed_loaders(self) -> list[tuple[Source, Move]]:
        """Every loader construction of the file whose batches some copy in the file moves
        to the device, with the first such copy (in source order; one whose device is known
        from the code before one whose device rests on a name)."""
        return [(source, move) for source, move in self._all_fed() if not source.foreign]

    def fed_by_importers(self) -> list[tuple[Source, Move]]:
        """Loader constructions of the file's top-level functions whose returned loaders
        another file of the project iterates and moves to the device (`get_loader()` in
        data.py, `.to(device)` of its batches in train.py), each with that copy (`where`
        says in which file). Read through the project index; empty without one."""
        sem = self.model
        view = sem.project
        if view is None:
            return []
        found: list[tuple[Source, Move]] = []
        for name, functions in sem.functions().items():
            if len(functions) != 1 or sem.parent(functions[0]) is not sem.ctx.module:
                continue
            if not any(sem.api.is_loader(q) for q in view.calls_in(name)):
                continue
            returns = [r.value for r in sem.flow(functions[0]).returns if r.value is not None]
            built: dict[tuple, list[Source]] = {}

            def built_at(part: tuple) -> list[Source]:
                # The constructions the returned value holds at `part` (all of it: `()`).
                if part not in built:
                    built[part] = [s for value in returns for piece in self._part(value, part)
                                   for s in self._trace(piece, True, False, 0) if not s.foreign]
                return built[part]

            if not built_at(()):
                continue
            reported: set[int] = {id(s.loader) for s, _ in found}
            for importer in view.importers_of(name):
                other = view.model_of(importer)
                if other is None:
                    continue
                for source, move in other.batches._all_fed():
                    symbol = other.project.resolve(dotted_name(source.loader.func) or "") \
                        if source.foreign and other.project is not None else None
                    if symbol is None or symbol.module is not view.module or symbol.name != name:
                        continue
                    if move.where is None:
                        move = replace(move, where=other.ctx.site(move.call))
                    for own in built_at(source.part):
                        if id(own.loader) not in reported:
                            reported.add(id(own.loader))
                            found.append((own, move))
        return found

    def _all_fed(self) -> list[tuple[Source, Move]]:
        if self._fed is None:
            fed: dict[tuple, tuple[Source, Move]] = {}
            for call in self.model.ctx.iter_nodes(cst.Call):
                move = self.device_move(call)
                if move is None:
                    continue
                for source in self.sources(move.data):
                    key = (id(source.loader), source.part)
                    known = fed.get(key)
                    if known is None or (known[1].hint and not move.hint):
                        fed[key] = (source, move)
            for source, move in self._foreign_feeds():
                fed.setdefault((id(source.loader), source.part), (source, move))
            self._fed = list(fed.values())
        return self._fed

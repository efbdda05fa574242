from __future__ import annotations

import libcst as cst

from devicelint.rule import Rule
from devicelint.semantic import Kind, dataflow
from devicelint.semantic.model import call_arg, dotted_name, string_value

# DataLoader(dataset, batch_size, shuffle, sampler, batch_sampler, num_workers, collate_fn,
#            pin_memory, ...)
_COLLATE_FN = 6
_PIN_MEMORY = 7
_DEPTH = 8  # steps through returns, containers and bindings when following a collate_fn


class LoaderNotPinned(Rule):
    """## What it does
    Flags a `torch.utils.data.DataLoader` (any import alias) built without `pin_memory=True`
    whose batches the same file moves to a GPU. The batches are followed by data flow, not by
    names: a copy to the device (`.to(device)`, `.cuda()`, `.type(T)` with `T` a CUDA tensor
    type such as `Tensor = torch.cuda.FloatTensor if cuda else torch.FloatTensor`) of data
    computed from an element of an iteration over the loader: `for x, y in loader`,
    `enumerate`/`zip`/`tqdm` of it, `batch[0]`, `next(it)` with `it = iter(loader)`. The loader
    may be held in a variable, on `self`, or returned by a function of the file
    (`get_loader()`); the copy may be in a helper of the file that receives the loader or
    the batch (`calc_loss_batch(x, y, model, device)`: what every call site passes is
    followed), or in a class the loader is handed to (`Solver(loader)` storing it on `self`
    in `__init__`, `train()` moving `next(iter(self.loader))`), here or in another local
    module: a loader `get_loader()` of data.py returns, handed by main.py to `Solver` of
    solver.py, is reported in data.py, naming the copy's line; so is one of a tuple of loaders
    data.py returns (`train_dl, valid_dl, vocab = get_data(opts)` in main.py, whose
    `train()` moves the batches of `train_dl`: that position of the tuple). The finding is at the
    `DataLoader(...)` call.

    Stays silent on loaders whose batches are never seen going to a device (CPU-only
    scripts, `.to(torch.float64)`, code in branches that run only without a GPU), on
    `pin_memory=True`, on `pin_memory=False` written out (a deliberate choice), when
    `pin_memory` comes from a variable, `*args` or `**kwargs` (the code does not say; a
    `**params` of a dict display nothing changes does say: `params = {'batch_size': 8}`
    passes none, and is reported), on copies to an XLA device (`xm.xla_device()`), which
    pinned host memory does not serve, and
    when the loader's `collate_fn` is a function of the file, or of another local module
    (`collate_fn=utils.collate_fn`), that returns objects of a class of its file without a
    `pin_memory()` method, or tuples or lists holding one (DETR's `NestedTensor` of the
    images, with the target dicts: the loader would not pin them), or a
    `collate_fn` of the file (or a `functools.partial` of one) that copies its batches to a
    device itself (`torch.stack(xs).to(device)`: they may come out on the GPU, where pinning
    does not apply). A copy of a tensor built anew from a Python list (`torch.LongTensor(ids)`,
    `torch.tensor([...])`, or a function of the file returning one) does not move the
    loader's memory: a loader of strings whose steps turn them into such tensors is not
    reported.

    ## Why is this bad?
    Without pinning, every batch is copied from pageable host memory: the CUDA driver
    first copies it into a pinned staging buffer, then to the GPU, and the copy cannot
    overlap with compute. With `pin_memory=True` the loader's worker thread puts batches in
    page-locked memory, the copy runs at full bus speed and `.to(device, non_blocking=True)`
    becomes truly asynchronous. Measured on an H200 (torch 2.11, this project's
    design notes): bulk host-to-device bandwidth ~50 GB/s pinned vs 15-16 GB/s pageable;
    a 10000x10000 float32 transfer 0.007 s pinned and batched vs 0.047 s pageable.
    The seeds' tutorials (seed 001 §7.7 item 5, seed 004) recommend it for every loader
    that feeds a GPU.

    ## Example
    ```python
    loader = DataLoader(dataset, batch_size=64, shuffle=True)
    for x, y in loader:
        x, y = x.to(device), y.to(device)
    ```

    ## Use instead
    ```python
    loader = DataLoader(dataset, batch_size=64, shuffle=True, pin_memory=True)
    for x, y in loader:
        x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
    ```
    Pinned memory is a limited resource: on a host short of RAM, or when batches are
    built on the GPU already, leave it off deliberately with `pin_memory=False`.

    ## Fix safety
    No automatic fix: page-locked memory is a limited host resource (a host short of RAM can
    fail to pin or slow down), and batches that are not tensors (a custom `collate_fn`) need a
    `pin_memory()` method of their own, so turning pinning on is the author's decision.
    """

    code = "DL008"
    precision = "high"  # docs/audit.md: at least 20 judged cases, at least 95% right
    name = "loader-not-pinned"
    summary = "DataLoader feeding a GPU without `pin_memory=True`"
    message = "DataLoader batches go to the GPU ({line}: `{move}`) without `pin_memory=True`"
    hint = "build the DataLoader with `pin_memory=True`"
    hint_message = " (`{target}` is taken for a device from its name only)"
    tokens = ("DataLoader",)

    @staticmethod
    def gate(facts) -> bool:
        """Reported at a loader's construction in this file (`DataLoader(...)`,
        `StatefulDataLoader(...)`): its class is named in the code (devicelint/gate.py)."""
        return facts.mentions("DataLoader", "StatefulDataLoader")

    def leave_Module(self, node: cst.Module) -> None:
        sem = self.ctx.semantic
        for source, move in sem.batches.fed_loaders() + sem.batches.fed_by_importers():
            loader = source.loader
            if source.pinned is not False or call_arg(loader, _PIN_MEMORY, "pin_memory") is not None:
                continue  # pinned, decided elsewhere, or deliberately off
            if self._collates_unpinnable(loader) or self._collates_to_device(loader) \
                    or self._to_xla(move.call):
                continue
            text = " ".join(self.ctx.code(move.call).split())
            if len(text) > 50:
                text = text[:47] + "..."
            # A copy in another file of the project (the loader is returned to it) names it.
            line = move.where.ref() if move.where else self.ctx.line_ref(move.call)
            message = self.message.format(line=line, move=text)
            if move.hint:
                message += self.hint_message.format(target=self.ctx.code(move.call.args[0].value))
            # (the other file's copy as a related location: reports name its path as the user
            # reaches it, in the message too)
            related = [(move.where, "the copy of its batches to the GPU")] if move.where else []
            self.report(loader, message, related=related)

    def _to_xla(self, move: cst.Call) -> bool:
        """The copy goes to an XLA device (`dev = xm.xla_device()`, `"xla:0"`), which the
        loader's pinned host memory does not serve (PyTorch/XLA's own loaders copy batches)."""
        sem = self.ctx.semantic
        func = move.func
        target = call_arg(move, 0, "device") if isinstance(func, cst.Attribute) and func.attr.value == "to" else None
        if target is None:
            return False
        values = self._bound_values(target)
        if isinstance(target, cst.Name) and [d.kind for d in sem.defs(target)] == ["param"]:
            # a parameter: what the file's calls of its function pass (one level)
            function = sem.function_of(target)
            sites = dataflow.call_sites(sem, function) if function is not None else []
            passed = [bound.get(target.value) for _, bound in sites]
            if not sites or any(p is None or len(p) != 1 for p in passed):
                return False
            values = [v for p in passed for v in self._bound_values(p[0])]
        for value in values:
            if isinstance(value, cst.Call):
                qual = sem.qualname(value.func) or ""
                if not qual.startswith("torch_xla."):
                    return False
            elif (string_value(value) or "").split(":")[0].strip().lower() != "xla":
                return False
        return True

    def _bound_values(self, node: cst.BaseExpression) -> list:
        """`node`, or the values its assignments bind when it is a name."""
        if isinstance(node, cst.Name):
            defs = self.ctx.semantic.defs(node)
            if defs and all(d.kind == "assign" and not d.path for d in defs):
                return [d.value for d in defs]
        return [node]

    def _collates_to_device(self, loader: cst.Call) -> bool:
        """The loader's `collate_fn` (a function of the file, or a `functools.partial` of
        one) copies what it builds to a device itself (`torch.stack(xs).to(device)`, with
        `device` bound by the partial): its batches may come out on the GPU already, where
        pinning does not apply (PyTorch refuses to pin a CUDA tensor)."""
        sem = self.ctx.semantic
        collate = call_arg(loader, _COLLATE_FN, "collate_fn")
        if collate is None:
            return False
        made = [collate]
        if isinstance(collate, cst.Name):
            made += [d.value for d in sem.defs(collate) if d.kind == "assign" and not d.path]
        targets = [collate] + [m.args[0].value for m in made if isinstance(m, cst.Call) and m.args
                               and sem.qualname(m.func) == "functools.partial"]
        for target in targets:
            function = sem.resolve_function(target)
            if function is None:
                continue
            for call in self.ctx.descendants(function, cst.Call):
                func = call.func
                if not isinstance(func, cst.Attribute) or func.attr.value not in ("to", "cuda"):
                    continue
                if func.attr.value == "cuda":
                    return True
                where = call_arg(call, 0, "device")
                if where is not None and sem.value(where).kind is not Kind.DTYPE \
                        and (string_value(where) or "").split(":")[0] != "cpu":
                    return True
        return False

    def _collates_unpinnable(self, loader: cst.Call) -> bool:
        """The loader's `collate_fn` is a function of this file, or of another local module
        (`collate_fn=utils.collate_fn`), whose every return is, or holds, an instance of a
        class of that file without a `pin_memory()` method (DETR's `NestedTensor` of the
        images, in a tuple with the target dicts): `pin_memory=True` pins only tensors,
        containers of them, and objects that define `pin_memory()`, so it would not pin
        what the class holds."""
        sem = self.ctx.semantic
        collate = call_arg(loader, _COLLATE_FN, "collate_fn")
        if collate is None:
            return False
        model, function = sem, sem.value(collate).node
        if not isinstance(function, cst.FunctionDef):
            view = sem.project
            dotted = dotted_name(collate) if view is not None else None
            found = view.function(dotted) if dotted is not None else None
            if found is None:
                return False
            model, function = found
        return _returns_unpinnable(model, function, 0)


def _returns_unpinnable(model, function: cst.FunctionDef, depth: int) -> bool:
    """Every value `function` returns is, or holds, an object `pin_memory=True` cannot pin."""
    flow = model.flow(function)
    if flow.yields or not flow.returns or depth > _DEPTH:
        return False
    return all(_holds_unpinnable(model, function, ret.value, depth) for ret in flow.returns)


def _holds_unpinnable(model, function: cst.FunctionDef, expr, depth: int) -> bool:
    """`expr` (in `function`) is an instance of a class of the file without a `pin_memory()`
    method, the result of a function of the file that returns one, or a tuple or list holding
    one (an element, `tuple(batch)` of a list one of whose items is assigned one)."""
    if expr is None or depth > _DEPTH:
        return False
    if isinstance(expr, (cst.Tuple, cst.List)):
        return any(isinstance(e, cst.Element) and _holds_unpinnable(model, function, e.value, depth + 1)
                   for e in expr.elements)
    if isinstance(expr, cst.Call):
        func = expr.func
        if isinstance(func, cst.Name) and not model.defs(func) and func.value in ("tuple", "list") \
                and len(expr.args) == 1:
            return _holds_unpinnable(model, function, expr.args[0].value, depth + 1)
        if isinstance(func, cst.Name):
            classes = {c.name.value: c for c in model.ctx.class_defs}
            owner = classes.get(func.value)
            if owner is not None and [d.node for d in model.defs(func)] == [owner]:
                return model.self_attribute(owner, "pin_memory").kind is not Kind.CALLABLE
        callee = model.resolve_function(func)
        return callee is not None and _returns_unpinnable(model, callee, depth + 1)
    if isinstance(expr, cst.Name):
        defs = model.defs(expr)
        if any(d.kind in ("assign", "annassign") and not d.path
               and _holds_unpinnable(model, function, d.value, depth + 1) for d in defs):
            return True
        # `batch[0] = nested_tensor_from_tensor_list(batch[0])`: an item of the container.
        for assign in model.ctx.descendants(function, cst.Assign):
            for target in assign.targets:
                store = target.target
                if isinstance(store, cst.Subscript) and isinstance(store.value, cst.Name) \
                        and store.value.value == expr.value \
                        and [d.node for d in model.defs(store.value)] == [d.node for d in defs] \
                        and _holds_unpinnable(model, function, assign.value, depth + 1):
                    return True
    return False

"""DataLoaders and the batches they yield: shared by DL008 (loader-not-pinned) and DL009
(non-blocking-unpinned), and by DL011 to tell a per-batch loop.

Private to the rules (the leading underscore keeps the registry from loading it as a rule);
candidates to move into devicelint/analysis.py.

Everything here answers from what the file shows: a DataLoader is a call that resolves to
`torch.utils.data.DataLoader` through the imports; a loop "walks a loader" when its iterable
is that call, or a name (or `self.attr`) bound to it, possibly wrapped in `enumerate`, `zip`,
`tqdm`, `iter`; a batch "goes to the GPU" when a value derived from the loop target in the
loop body is moved with `.to(<device>)` / `.cuda()`.
"""

from __future__ import annotations

from typing import Iterator, Optional

import libcst as cst

from devicelint.analysis import (
    CUDA, DEVICE, call_arg, is_module_constructor, to_call_device,
)
from devicelint.context import FileContext, bound_names
from devicelint.names import dotted_name

DATALOADERS = {
    "torch.utils.data.DataLoader",
    "torch.utils.data.dataloader.DataLoader",
}
# Wrappers whose iteration yields the wrapped iterable's items (possibly in a tuple).
_PASS_THROUGH = {"enumerate", "zip", "iter", "tqdm", "tqdm.tqdm", "tqdm.auto.tqdm",
                 "tqdm.notebook.tqdm", "tqdm.rich.tqdm", "rich.progress.track"}
PINNED, UNPINNED, EXPLICIT_OFF, UNKNOWN = "pinned", "unpinned", "explicit-off", "unknown"
_PIN_MEMORY_POSITION = 7  # DataLoader(dataset, batch_size, shuffle, sampler, batch_sampler,
#                                       num_workers, collate_fn, pin_memory, ...)


def is_dataloader(ctx: FileContext, node: cst.CSTNode) -> bool:
    return isinstance(node, cst.Call) and ctx.qualname(node.func) in DATALOADERS


def pin_state(call: cst.Call) -> str:
    """PINNED for `pin_memory=True`; EXPLICIT_OFF for `pin_memory=False`; UNPINNED when the
    argument is absent; UNKNOWN when it comes from a variable, `*args` or `**kwargs`."""
    value = call_arg(call, _PIN_MEMORY_POSITION, "pin_memory")
    if value is None:
        if any(arg.star for arg in call.args):
            return UNKNOWN
        return UNPINNED
    if isinstance(value, cst.Name) and value.value == "True":
        return PINNED
    if isinstance(value, cst.Name) and value.value == "False":
        return EXPLICIT_OFF
    return UNKNOWN


def _unwrap_iterable(ctx: FileContext, node: cst.BaseExpression) -> Iterator[cst.BaseExpression]:
    """The iterables a loop really walks: `enumerate(x)` -> x, `zip(a, b)` -> a, b."""
    if isinstance(node, cst.Call):
        name = ctx.qualname(node.func) or dotted_name(node.func)
        if name in _PASS_THROUGH:
            for arg in node.args:
                if arg.keyword is None and not arg.star:
                    yield from _unwrap_iterable(ctx, arg.value)
                    if name not in ("zip",):
                        break
            return
    yield node


def loaders_of(ctx: FileContext, iterable: cst.BaseExpression) -> list[cst.Call]:
    """DataLoader constructions a loop over `iterable` walks (empty when it cannot tell)."""
    found: list[cst.Call] = []
    for node in _unwrap_iterable(ctx, iterable):
        if is_dataloader(ctx, node):
            found.append(node)  # type: ignore[arg-type]
            continue
        for value in _bound_values(ctx, node):
            if is_dataloader(ctx, value):
                found.append(value)  # type: ignore[arg-type]
    return found


def _bound_values(ctx: FileContext, node: cst.CSTNode) -> list[cst.CSTNode]:
    """What a Name or `self.attr` was assigned, in its scope (or its class's methods)."""
    if isinstance(node, cst.Name):
        return [
            b.value for b in ctx.bindings_of(node.value, node)
            if b.kind in ("assign", "annassign", "walrus") and b.value is not None
        ]
    name = dotted_name(node)
    if name is None or not name.startswith("self.") or name.count(".") != 1:
        return []
    function = ctx.function(node)
    cls = ctx.scope(function) if function is not None else None
    if not isinstance(cls, cst.ClassDef):
        return []
    values = []
    for statement in cls.body.body:
        if isinstance(statement, cst.FunctionDef):
            for b in ctx.bindings(statement).get(name, ()):
                if b.kind in ("assign", "annassign") and b.value is not None:
                    values.append(b.value)
    return values


class _Flow(cst.CSTVisitor):
    """Names in a loop body derived from the loop target, and the device moves of them."""

    def __init__(self, ctx: FileContext, derived: set[str]) -> None:
        self.ctx = ctx
        self.derived = derived
        self.moves: list[cst.Call] = []
        self.changed = False

    def visit_FunctionDef(self, node) -> bool:
        return False

    def visit_Lambda(self, node) -> bool:
        return False

    def visit_ClassDef(self, node) -> bool:
        return False

    def _bind(self, target: cst.CSTNode, value: Optional[cst.CSTNode]) -> None:
        if value is None or builds_module(self.ctx, value) or not self.uses(value):
            return
        for name in bound_names(target) or [dotted_name(target) or ""]:
            if name and name not in self.derived:
                self.derived.add(name)
                self.changed = True

    def uses(self, node: cst.CSTNode) -> bool:
        if isinstance(node, cst.Name):
            return node.value in self.derived
        finder = _NameFinder(self.derived)
        node.visit(finder)
        return finder.found

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            self._bind(target.target, node.value)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self._bind(node.target, node.value)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._bind(node.target, node.value)

    def visit_For(self, node: cst.For) -> None:
        self._bind(node.target, node.iter)

    def visit_CompFor(self, node: cst.CompFor) -> None:
        self._bind(node.target, node.iter)

    def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
        self._bind(node.target, node.value)

    def visit_Call(self, node: cst.Call) -> None:
        if isinstance(node.func, cst.Attribute) and node.func.attr.value in ("to", "cuda"):
            receiver = node.func.value
            if (
                to_call_device(self.ctx, node) in (CUDA, DEVICE)
                and not builds_module(self.ctx, receiver)
                and self.uses(receiver)
            ):
                self.moves.append(node)


def builds_module(ctx: FileContext, node: cst.CSTNode) -> bool:
    """`nn.Linear(8, width)`, `Net(cfg).to(device)`: a model built from the loop variable
    (a hyperparameter), not data taken from it."""
    while (
        isinstance(node, cst.Call)
        and isinstance(node.func, cst.Attribute)
        and node.func.attr.value in ("to", "cuda", "float", "half", "eval", "train")
    ):
        node = node.func.value
    return isinstance(node, cst.Call) and is_module_constructor(ctx, node)


class _NameFinder(cst.CSTVisitor):
    def __init__(self, names: set[str]) -> None:
        self.names = names
        self.found = False

    def visit_Name(self, node: cst.Name) -> bool:
        if node.value in self.names:
            self.found = True
        return False

    def on_visit(self, node: cst.CSTNode) -> bool:
        return not self.found and super().on_visit(node)


def batch_moves(ctx: FileContext, loop: cst.For) -> list[cst.Call]:
    """`.to(device)` / `.cuda()` calls in the loop body on data derived from the loop target
    (`x.to(device)`, `batch[0].cuda()`, `{k: v.to(device) for k, v in batch.items()}`)."""
    derived = set(bound_names(loop.target))
    if not derived:
        return []
    flow = _Flow(ctx, derived)
    for _ in range(3):  # a name can be derived from one bound later in the body
        flow.changed = False
        flow.moves = []
        loop.body.visit(flow)
        if not flow.changed:
            break
    return flow.moves


from __future__ import annotations

from typing import Optional

import libcst as cst

from devicelint.rule import Rule
from devicelint.rules._loaders import batch_moves, loaders_of

EMPTY_CACHE = {"torch.cuda.empty_cache", "torch.cuda.memory.empty_cache"}


class EmptyCacheInLoop(Rule):
    """## What it does
    Flags `torch.cuda.empty_cache()` inside a per-step loop. A loop counts as per-step when
    the code shows it: it walks a `DataLoader` (directly or through a name bound to one),
    it moves data taken from its loop variable to a device (`.to(device)`, `.cuda()`), or
    its own body (not a nested loop) calls `.backward()`, `.zero_grad()` or `.step()` on an
    optimizer built from `torch.optim`.

    Stays silent on a call after the loop (once after training), in an `except` handler
    (the out-of-memory recovery idiom), under an `if` that runs it periodically
    (`if step % 100 == 0:`), and in loops over a few models or experiments whose body only
    contains the step loop (empty_cache between experiments is legitimate).

    ## Why is this bad?
    PyTorch's caching allocator keeps freed GPU blocks to reuse them on the next step.
    `empty_cache()` hands all unused cached blocks back to the driver, so the next step
    pays `cudaMalloc`/`cudaFree` again (each can take milliseconds and synchronises the
    device), and it does not give the program more memory: tensors still referenced stay
    allocated. The seed tutorial (seed 001 §7.7 item 4) itself notes memory "is generally
    managed automatically by PyTorch". The cost depends on the model; `devicelint confirm`
    can measure it on your GPU.

    ## Example
    ```python
    for x, y in loader:
        loss = loss_fn(model(x.to(device)), y.to(device))
        loss.backward()
        optimizer.step()
        torch.cuda.empty_cache()
    ```

    ## Use instead
    ```python
    for x, y in loader:
        loss = loss_fn(model(x.to(device)), y.to(device))
        loss.backward()
        optimizer.step()
    torch.cuda.empty_cache()  # once, e.g. before evaluation or another experiment
    ```
    To fight fragmentation, try `PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True`.
    """

    code = "DL011"
    name = "empty-cache-in-loop"
    summary = "`torch.cuda.empty_cache()` every step defeats the caching allocator"
    message = (
        "`torch.cuda.empty_cache()` in a per-step loop: it releases the allocator's cached "
        "blocks so the next step pays cudaMalloc again, and frees nothing still in use; "
        "call it once outside the loop (or in an OOM handler)"
    )
    tokens = ("empty_cache",)

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self.calls: list[cst.Call] = []

    def visit_Call(self, node: cst.Call) -> None:
        if self.ctx.qualname(node.func) in EMPTY_CACHE:
            self.calls.append(node)

    def leave_Module(self, node: cst.Module) -> None:
        for call in self.calls:
            loops = [l for l in self.ctx.loops(call) if isinstance(l, (cst.For, cst.While))]
            if not loops or self._exempt_context(call, loops[-1]):
                continue
            if any(self._per_step(loop) for loop in loops):
                self.report(call)

    def _exempt_context(self, call: cst.Call, outermost: cst.CSTNode) -> bool:
        """In an except handler, or under a periodic `if ... % n ...:` inside the loops."""
        for ancestor in self.ctx.ancestors(call):
            if isinstance(ancestor, cst.ExceptHandler):
                return True
            if isinstance(ancestor, cst.If) and _has_modulo(ancestor.test):
                return True
            if ancestor is outermost:
                break
        return False

    def _per_step(self, loop: cst.CSTNode) -> bool:
        if isinstance(loop, cst.For):
            if loaders_of(self.ctx, loop.iter) or batch_moves(self.ctx, loop):
                return True
        finder = _StepCalls(self)
        loop.body.visit(finder)
        return finder.found

    def is_optimizer(self, node: cst.BaseExpression) -> bool:
        if not isinstance(node, cst.Name):
            return False
        for binding in self.ctx.bindings_of(node.value, node):
            value = binding.value
            if isinstance(value, cst.Call):
                name = self.ctx.qualname(value.func) or ""
                if name.startswith("torch.optim.") and ".lr_scheduler" not in name:
                    return True
        return False


class _StepCalls(cst.CSTVisitor):
    """`.backward()`, `.zero_grad()`, `optimizer.step()` directly in a loop body."""

    def __init__(self, rule: EmptyCacheInLoop) -> None:
        self.rule = rule
        self.found = False

    def on_visit(self, node: cst.CSTNode) -> bool:
        if self.found or isinstance(
            node, (cst.For, cst.While, cst.FunctionDef, cst.ClassDef, cst.Lambda)
        ):
            return False
        return super().on_visit(node)

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if not isinstance(func, cst.Attribute):
            return
        attr = func.attr.value
        if attr in ("backward", "zero_grad") or (
            attr == "step" and self.rule.is_optimizer(func.value)
        ):
            self.found = True


def _has_modulo(node: cst.CSTNode) -> bool:
    found = False

    class Find(cst.CSTVisitor):
        def visit_BinaryOperation(self, op: cst.BinaryOperation) -> Optional[bool]:
            nonlocal found
            if isinstance(op.operator, cst.Modulo):
                found = True
            return None

    node.visit(Find())
    return found

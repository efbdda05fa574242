from __future__ import annotations

import re
from typing import Optional

import libcst as cst

from devicelint.context import COMPREHENSIONS, FileContext, children
from devicelint.names import dotted_name
from devicelint.rule import Rule
from devicelint.rules.dl001_transfer_in_loop import (
    MODEL_OUT,
    ON_DEVICE,
    TIMING_FUNCS,
    FIELDS,
    LOADER,
    Flow,
    func_tail,
)

SYNC_METHODS = ("item", "cpu", "numpy", "tolist")
CONVERSIONS = ("float", "int", "bool")
SYNCHRONIZE = {
    "torch.cuda.synchronize", "torch.accelerator.synchronize", "torch.xpu.synchronize",
    "torch.mps.synchronize",
}
STEP_COUNT_NAME = re.compile(r"(epoch|step|iter|batches|updates|rounds|episodes)", re.I)
OPTIMIZER_NAME = re.compile(r"(^|_)(opt|optim|optimizer|optimiser|scaler|optimizer_\w+)$", re.I)
LOG_GATE_NAME = re.compile(
    r"(log|print|verbose|debug|display|report|monitor|wandb|tensorboard|writer|should_)", re.I
)
STEP_TOKENS = (
    "oader", "backward", "step", "poch", "iter", "odel", "net", "odule", "coder", "policy",
    "critic", "actor", "generator", "discriminator", "classifier", "backbone", "teacher",
    "student", "torchvision", "ransformer", "unet", "vae", "criterion", "loss", "Loss",
)
TENSOR_TRUTH_METHODS = {"any", "all", "isnan", "isinf", "isfinite", "equal", "allclose"}


class _LoopFacts:
    """What one walk of a loop body shows: is it a training/inference step loop?"""

    __slots__ = ("trains", "calls_model", "nested_loops", "times")

    def __init__(self) -> None:
        self.trains = False  # backward() / optimizer.step()
        self.calls_model = False
        self.nested_loops: list[cst.CSTNode] = []
        self.times = False  # time.time()/perf_counter()/cuda Event


class SyncInLoop(Rule):
    """## What it does
    Flags a host synchronisation or device→host round-trip inside a loop over training
    or inference steps: `.item()`, `.cpu()`, `.numpy()`, `.tolist()`, `float(t)`/`int(t)`/
    `bool(t)`, `print(t)` or an f-string of a tensor, `if t > 0:`/`while loss > eps:` on a
    tensor, and `torch.cuda.synchronize()`, where `t` is a tensor the code shows may live on
    the GPU (a model or loss output, or derived from tensors moved to the device).

    A step loop is a loop over a DataLoader (or anything named a loader), over
    `range(num_epochs/steps/...)`, or whose body calls `backward()`, `optimizer.step()` or a
    model. It stays silent on reads after the step loop (once per epoch), on reads gated by
    a logging condition (`if step % log_every == 0:`), on values that are CPU-side (dataset
    samples, tensors built without a device, numpy arrays, Python numbers), and on
    `synchronize()` used as a fence around a timed region.

    ## Why is this bad?
    CUDA runs asynchronously: the CPU queues kernels and moves on. A read of a value on the
    host makes the CPU wait until the GPU has finished everything queued so far, so the
    queue drains every step and the CPU cannot run ahead to prepare the next one. What it
    costs depends on the step. Measured on an H200 for this project: a bare `.item()`
    costs ~10 µs; one `.item()` per step added 51% to a GPU-bound loop of 1024² matmuls but
    5% to a small MLP training step; a per-step `.cpu().numpy()` of a 64 MB tensor made a
    loop 1,246× slower. Run `devicelint confirm` on a GPU machine to measure your loop.

    ## Example
    ```python
    for x, y in loader:
        loss = loss_fn(model(x.to(device)), y.to(device))
        loss.backward()
        optimizer.step()
        running_loss += loss.item()        # waits for the GPU every step
    ```

    ## Use instead
    ```python
    running_loss = torch.zeros((), device=device)
    for step, (x, y) in enumerate(loader):
        loss = loss_fn(model(x.to(device)), y.to(device))
        loss.backward()
        optimizer.step()
        running_loss += loss.detach()      # stays on the device
        if step % log_every == 0:
            print(running_loss.item() / (step + 1))   # one sync per log line
    ```
    """

    code = "DL004"
    name = "sync-in-loop"
    summary = "Host sync (`.item()`, `.cpu()`, `print(t)`, ...) inside a training/inference step loop"
    message = (
        "{what} waits for the GPU on every step of this loop (a sync costs ~10 µs plus the "
        "queued work; measured on an H200 it added 5% to a small MLP step and 51% to a "
        "matmul-bound loop): keep the value on the device and read it after the loop or "
        "every N steps; `devicelint confirm` measures it here"
    )
    # A value on the GPU needs one of these in the file (`.to(device)`, `.cuda()`, `device=`).
    tokens = ("cuda", "device", ".to(")

    def __init__(self, ctx: FileContext) -> None:
        super().__init__(ctx)
        self.candidates: list[tuple[str, cst.CSTNode]] = []
        self._facts: dict[int, _LoopFacts] = {}
        self._step: dict[int, bool] = {}
        self.active = True

    # -- collection (during the traversal) ----------------------------------------------
    def visit_Module(self, node: cst.Module) -> None:
        source = self.ctx.source
        # A step loop needs a loader, a step count, a backward pass or a model call.
        self.active = any(token in source for token in STEP_TOKENS)

    def visit_Call(self, node: cst.Call) -> None:
        if not self.active:
            return
        func = node.func
        if isinstance(func, cst.Attribute):
            attr = func.attr.value
            if attr in SYNC_METHODS and not node.args:
                self.candidates.append((attr, node))
            elif attr == "synchronize":
                self.candidates.append(("synchronize", node))
        elif isinstance(func, cst.Name):
            if func.value in CONVERSIONS and len(node.args) == 1:
                self.candidates.append(("convert", node))
            elif func.value == "print" and node.args:
                self.candidates.append(("print", node))

    def visit_If(self, node: cst.If) -> None:
        if self.active:
            self.candidates.append(("test", node.test))

    def visit_While(self, node: cst.While) -> None:
        if self.active:
            self.candidates.append(("test", node.test))

    def visit_FormattedStringExpression(self, node: cst.FormattedStringExpression) -> None:
        if self.active:
            self.candidates.append(("format", node.expression))

    # -- judgement (after the traversal) --------------------------------------------------
    def leave_Module(self, node: cst.Module) -> None:
        if not self.candidates:
            return
        flow = Flow.of(self.ctx)
        for kind, candidate in self.candidates:
            loops = self.ctx.loops(candidate)
            if not loops:
                continue
            step = self.step_loop(flow, candidate, loops)
            if step is None:
                continue
            for target, what in self.offenders(flow, kind, candidate, step):
                self.report(target, self.message.format(what=what))

    def offenders(self, flow: Flow, kind: str, node: cst.CSTNode, step: cst.CSTNode):
        ctx = self.ctx
        if kind in SYNC_METHODS:
            receiver = node.func.value  # type: ignore[attr-defined]
            if self.on_gpu(flow, receiver, step):
                yield node, f"`.{kind}()`"
        elif kind == "synchronize":
            qual = ctx.qualname(node.func)  # type: ignore[attr-defined]
            if qual in SYNCHRONIZE and not self.timed(flow, step):
                yield node, f"`{qual}()`"
        elif kind == "convert":
            arg = node.args[0].value  # type: ignore[attr-defined]
            if self.on_gpu(flow, arg, step):
                yield node, f"`{node.func.value}(tensor)`"  # type: ignore[attr-defined]
        elif kind == "print":
            for arg in node.args:  # type: ignore[attr-defined]
                if arg.keyword is None and self.on_gpu(flow, arg.value, step):
                    yield node, "`print(tensor)`"
                    return
        elif kind == "format":
            if self.on_gpu(flow, node, step):
                yield node, "formatting a tensor in an f-string"
        elif kind == "test":
            for operand in _operands(node):
                if self._tensor_truth(flow, operand, step):
                    yield operand, "`if`/`while` on a tensor's value"

    def _tensor_truth(self, flow: Flow, node: cst.CSTNode, step) -> bool:
        """`loss > eps`, `(x != 0).any()`, `torch.isnan(loss)`: bool() of a GPU tensor."""
        if isinstance(node, cst.Comparison):
            if any(isinstance(c.operator, (cst.Is, cst.IsNot, cst.In, cst.NotIn)) for c in node.comparisons):
                return False
            sides = [node.left] + [c.comparator for c in node.comparisons]
            return any(self.on_gpu(flow, side, step) for side in sides)
        if isinstance(node, cst.Call):
            tail = func_tail(node)
            if tail in TENSOR_TRUTH_METHODS:
                return self.on_gpu(flow, node, step)
        return False

    def on_gpu(self, flow: Flow, node: cst.CSTNode, step: cst.CSTNode) -> bool:
        kind = None
        if isinstance(step, cst.While):
            # `while loss > eps:` reads the value the previous iteration assigned.
            kind = self._loop_carried(flow, node, step)
        if kind is None:
            kind = flow.origin(node)
        if kind == ON_DEVICE:
            return True
        return kind == MODEL_OUT and flow.device_evidence

    def _loop_carried(self, flow: Flow, node: cst.CSTNode, loop: cst.While) -> Optional[str]:
        """`while loss > eps:` where `loss` is (re)assigned in the loop body."""
        if not isinstance(node, cst.Name):
            return None
        found = None
        for binding in self.ctx.bindings_of(node.value, node):
            if binding.kind in ("assign", "augassign") and binding.value is not None and any(
                a is loop for a in self.ctx.ancestors(binding.node)
            ):
                found = flow.origin(binding.value)
        return found

    # -- the step loop ------------------------------------------------------------------
    def step_loop(self, flow: Flow, node: cst.CSTNode, loops: list) -> Optional[cst.CSTNode]:
        """The innermost enclosing loop that runs once per training/inference step, if the
        node runs on every one of its iterations."""
        ctx = self.ctx
        for loop in loops:
            if isinstance(loop, COMPREHENSIONS) or not self.is_step_loop(flow, loop):
                continue
            facts = self.facts(flow, loop)
            ancestors = None
            for inner in facts.nested_loops:
                if self.is_step_loop(flow, inner):
                    if ancestors is None:
                        ancestors = {id(a) for a in ctx.ancestors(node)}
                    if id(inner) not in ancestors:
                        return None  # once per epoch, after the inner step loop
            if self.throttled(node, loop):
                return None
            return loop
        return None

    def is_step_loop(self, flow: Flow, loop: cst.CSTNode) -> bool:
        key = id(loop)
        cached = self._step.get(key)
        if cached is None:
            cached = self._is_step_loop(flow, loop)
            self._step[key] = cached
        return cached

    def _is_step_loop(self, flow: Flow, loop: cst.CSTNode) -> bool:
        if isinstance(loop, cst.For):
            kind = flow.iter_kind(loop.iter)
            if kind == LOADER:
                return True
            if kind == FIELDS:
                return False
            count = _range_count(loop.iter)
            if count is not None:
                name = dotted_name(count)
                if name is not None and STEP_COUNT_NAME.search(name.rsplit(".", 1)[-1]):
                    return True
        facts = self.facts(flow, loop)
        if facts.trains:
            return True
        if facts.calls_model:
            return True
        if isinstance(loop, cst.While):
            return any(self._tensor_truth_loose(flow, o, loop) for o in _operands(loop.test))
        return False

    def _tensor_truth_loose(self, flow: Flow, node, loop) -> bool:
        if isinstance(node, cst.Comparison):
            sides = [node.left] + [c.comparator for c in node.comparisons]
            return any(
                self._loop_carried(flow, s, loop) in (ON_DEVICE, MODEL_OUT) for s in sides
            )
        return False

    def facts(self, flow: Flow, loop: cst.CSTNode) -> _LoopFacts:
        key = id(loop)
        facts = self._facts.get(key)
        if facts is not None:
            return facts
        facts = _LoopFacts()
        ctx = self.ctx
        targets = set(ctx.loop_targets(loop)) if isinstance(loop, cst.For) else set()
        stack: list[cst.CSTNode] = [loop.body]  # type: ignore[attr-defined]
        while stack:
            current = stack.pop()
            if isinstance(current, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
                continue
            if isinstance(current, (cst.For, cst.While)):
                facts.nested_loops.append(current)
            elif isinstance(current, cst.Call):
                tail = func_tail(current)
                if tail == "backward":
                    facts.trains = True
                elif tail == "step" and isinstance(current.func, cst.Attribute):
                    owner = dotted_name(current.func.value)
                    if owner is not None and OPTIMIZER_NAME.search(owner.rsplit(".", 1)[-1]):
                        facts.trains = True
                elif tail in ("record", "elapsed_time"):
                    facts.times = True
                else:
                    qual = ctx.qualname(current.func)
                    if qual in TIMING_FUNCS:
                        facts.times = True
                    elif (
                        isinstance(current.func, (cst.Name, cst.Attribute))
                        and (dotted_name(current.func) or "").split(".", 1)[0] not in targets
                        and flow.is_module(current.func)
                    ):
                        # Calling the loop variable walks layers/models, not steps.
                        facts.calls_model = True
            stack.extend(children(current))
        self._facts[key] = facts
        return facts

    def throttled(self, node: cst.CSTNode, loop: cst.CSTNode) -> bool:
        """Inside `if step % N == 0:` (or a logging flag, or `if step == 0:`)."""
        child = node
        for ancestor in self.ctx.ancestors(node):
            if ancestor is loop:
                return False
            if isinstance(ancestor, cst.If) and child is ancestor.body and _is_gate(ancestor.test):
                return True
            child = ancestor
        return False

    def timed(self, flow: Flow, loop: cst.CSTNode) -> bool:
        """`synchronize()` as a timing fence: the loop, or the statements next to it, time."""
        if self.facts(flow, loop).times:
            return True
        parent = self.ctx.parent(loop)
        body = getattr(parent, "body", None)
        if isinstance(body, (list, tuple)):
            for index, statement in enumerate(body):
                if statement is loop:
                    for sibling in body[max(0, index - 2): index + 3]:
                        if sibling is not loop and _mentions_timing(self.ctx, sibling):
                            return True
        return False


def _operands(test: cst.BaseExpression) -> list[cst.BaseExpression]:
    if isinstance(test, cst.BooleanOperation):
        return _operands(test.left) + _operands(test.right)
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        return _operands(test.expression)
    return [test]


def _range_count(iterable: cst.BaseExpression) -> Optional[cst.BaseExpression]:
    while isinstance(iterable, cst.Call) and func_tail(iterable) in ("enumerate", "tqdm", "trange"):
        if func_tail(iterable) == "trange" and iterable.args:
            return iterable.args[-1].value if len(iterable.args) <= 2 else iterable.args[1].value
        if not iterable.args:
            return None
        iterable = iterable.args[0].value
    if isinstance(iterable, cst.Call) and func_tail(iterable) == "range" and iterable.args:
        positional = [a.value for a in iterable.args if a.keyword is None]
        if positional:
            return positional[1] if len(positional) >= 2 else positional[0]
    return None


def _is_gate(test: cst.BaseExpression) -> bool:
    stack: list[cst.CSTNode] = [test]
    while stack:
        current = stack.pop()
        if isinstance(current, cst.BinaryOperation) and isinstance(current.operator, cst.Modulo):
            return True
        if isinstance(current, cst.Comparison) and any(
            isinstance(c.operator, cst.Equal) for c in current.comparisons
        ):
            sides = [current.left] + [c.comparator for c in current.comparisons]
            if any(isinstance(s, cst.Integer) or _mentions_count(s) for s in sides):
                return True
        if isinstance(current, cst.Name) and LOG_GATE_NAME.search(current.value):
            return True
        if isinstance(current, cst.Attribute):
            if LOG_GATE_NAME.search(current.attr.value):
                return True
            stack.append(current.value)
            continue
        stack.extend(children(current))
    return False


def _mentions_count(node: cst.CSTNode) -> bool:
    name = dotted_name(node)
    if name is None and isinstance(node, cst.BinaryOperation):
        return _mentions_count(node.left) or _mentions_count(node.right)
    if name is None and isinstance(node, cst.Call) and func_tail(node) == "len":
        return True
    return name is not None and bool(re.search(r"(step|iter|epoch|^i$|idx|batch)", name, re.I))


def _mentions_timing(ctx: FileContext, node: cst.CSTNode) -> bool:
    stack = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, cst.Call):
            if ctx.qualname(current.func) in TIMING_FUNCS or func_tail(current) in ("record", "elapsed_time"):
                return True
        stack.extend(children(current))
    return False

from __future__ import annotations

from typing import Optional

import libcst as cst

from devicelint.analysis import (
    CPU, CUDA, DEVICE, device_kind, is_tensor_factory, keyword_arg, string_value,
    to_call_device,
)
from devicelint.context import bound_names
from devicelint.names import dotted_name
from devicelint.rule import Rule

STAMPS = {
    "time.time", "time.perf_counter", "time.monotonic", "time.time_ns",
    "time.perf_counter_ns", "time.monotonic_ns", "timeit.default_timer",
}
SYNC_FUNCTIONS = {"torch.cuda.synchronize", "torch.accelerator.synchronize",
                  "torch.cuda.current_stream", "torch.xpu.synchronize"}
# Methods that wait for the GPU (or copy to the host, which waits).
SYNC_METHODS = {"synchronize", "item", "tolist", "cpu", "numpy", "wait"}
# Methods of tensors/modules that launch no kernel.
NO_WORK_METHODS = {
    "size", "dim", "numel", "stride", "is_contiguous", "data_ptr", "element_size", "eval",
    "train", "parameters", "named_parameters", "buffers", "modules", "children",
    "state_dict", "register_forward_hook", "register_buffer", "requires_grad_", "type",
    "get_device", "nelement", "storage_offset", "is_floating_point", "to",
}
NO_WORK_ATTRS = {"shape", "device", "dtype", "ndim", "is_cuda", "requires_grad", "grad_fn",
                 "is_leaf", "layout", "names"}
TEXT_SYNCS = {"print", "float", "int", "bool", "str", "repr", "format"}
EVENT_TIMING = {"torch.cuda.Event", "torch.Event", "torch.cuda.event.Event"}
WORK, SYNC, STAMP = "work", "sync", "stamp"


class UnsyncedGpuTiming(Rule):
    """## What it does
    Flags an end timestamp (`time.time()`, `time.perf_counter()`, `time.monotonic()`, their
    `_ns` forms, `timeit.default_timer()`) taken after GPU work with no synchronisation
    between the work and the timestamp, where a start timestamp precedes the work in the
    same function (or module). The finding is at the end-timestamp call.

    The GPU work must be visible in that function: operations on tensors created on or
    moved to a CUDA/`device` target (`.to(device)`, `.cuda()`, `device=` factories, values
    computed from them), calls of a model after it was moved, `.backward()`, an optimizer
    built from a moved model's parameters.

    Counted as synchronising (silent after them): `torch.cuda.synchronize()`, any
    `.synchronize()`, `.item()`, `.tolist()`, `.cpu()`, `.numpy()`, `.to("cpu")`, a blocking
    host-to-device copy (`.to(device)` of a host tensor without `non_blocking=True`, which
    PyTorch completes with a stream synchronisation), `print()`/`float()`/`int()`/`str()`
    of a GPU value, and any call of another function with GPU values (it may synchronise;
    the rule cannot see inside, so it stays silent). A loop whose body synchronises bounds
    the error to one iteration and counts as synchronised.

    Silent on functions that time with `torch.cuda.Event(enable_timing=True)`, on
    `torch.utils.benchmark` (it synchronises itself), on CPU-only work, on timing that
    brackets no tensor work, inside branches the code marks as CPU-only
    (`if device.type != "cuda":`, the `else` of `if torch.cuda.is_available():`), and on a
    timestamp that only opens a region (`t1 = time.perf_counter()` whose name is only ever
    subtracted from, `... - t1`): work queued before a start stamp is in no measured interval.

    ## Why is this bad?
    CUDA kernels run asynchronously: the Python call returns once the kernel is queued.
    Without a synchronisation before the end timestamp the measurement covers the launch
    (microseconds), not the run time, and whatever is still queued is billed to the next
    thing that synchronises. The seeds' own benchmarks (seed 001 §7.8, seed 003 §4.1) call
    `torch.cuda.synchronize()` before the end timestamp for this reason; an unsynchronised
    loop of 100 large matmuls can appear orders of magnitude faster than it runs.

    ## Example
    ```python
    start = time.perf_counter()
    for _ in range(100):
        y = x_gpu @ w_gpu
    elapsed = time.perf_counter() - start
    ```

    ## Use instead
    ```python
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(100):
        y = x_gpu @ w_gpu
    torch.cuda.synchronize()
    elapsed = time.perf_counter() - start
    ```
    or `torch.utils.benchmark.Timer`, or `torch.cuda.Event(enable_timing=True)` pairs.
    """

    code = "DL012"
    name = "unsynced-gpu-timing"
    summary = "timestamp after GPU work without `torch.cuda.synchronize()`"
    message = (
        "end timestamp taken after GPU work without synchronising: CUDA kernels run "
        "asynchronously, so this measures the launch, not the run time; call "
        "`torch.cuda.synchronize()` before it (or use CUDA events / torch.utils.benchmark)"
    )
    tokens = ("time(", "time_ns(", "perf_counter", "monotonic", "default_timer")

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self.scopes: dict[int, tuple[cst.CSTNode, int]] = {}

    def visit_Call(self, node: cst.Call) -> None:
        if self.ctx.qualname(node.func) in STAMPS:
            scope = self.ctx.scope(node)
            if isinstance(scope, (cst.FunctionDef, cst.Module)):
                entry = self.scopes.get(id(scope))
                self.scopes[id(scope)] = (scope, (entry[1] if entry else 0) + 1)

    def leave_Module(self, node: cst.Module) -> None:
        for scope, stamps in self.scopes.values():
            if stamps >= 2:
                self._check(scope)

    def _check(self, scope: cst.CSTNode) -> None:
        timeline = _Timeline(self.ctx, scope)
        body = scope.body if isinstance(scope, cst.FunctionDef) else scope
        body.visit(timeline)
        if timeline.event_timing:
            return
        events = timeline.events
        last_stamp = last_work = last_sync = -1
        for index, (kind, node) in enumerate(events):
            if kind == WORK:
                last_work = index
            elif kind == SYNC:
                last_sync = index
            else:
                if (
                    last_stamp >= 0
                    and last_work > last_stamp
                    and last_work > last_sync
                    and not self._loop_bounded(node, events[last_stamp][1], timeline)
                    and not self._start_only(node, scope)
                ):
                    self.report(node)
                last_stamp = index

    def _start_only(self, stamp: cst.CSTNode, scope: cst.CSTNode) -> bool:
        """`t1 = time.perf_counter()` whose name is only ever subtracted from (`... - t1`):
        it opens a region and closes none, so GPU work queued before it is outside every
        measured interval (it is billed to the region it opens, which the end stamp's own
        synchronisation covers)."""
        assign = self.ctx.parent(stamp)
        if isinstance(assign, cst.Assign):
            if len(assign.targets) != 1:
                return False
            target = assign.targets[0].target
        elif isinstance(assign, cst.AnnAssign):
            target = assign.target
        else:
            return False
        if not isinstance(target, cst.Name):
            return False
        uses = _NameUses(target.value, target)
        scope.visit(uses)
        if not uses.nodes:
            return False
        for use in uses.nodes:
            operation = self.ctx.parent(use)
            if not (
                isinstance(operation, cst.BinaryOperation)
                and isinstance(operation.operator, cst.Subtract)
                and operation.right is use
            ):
                return False
        return True

    def _loop_bounded(self, end: cst.CSTNode, start: cst.CSTNode, timeline) -> bool:
        """The end stamp is in a loop that synchronises every iteration and that the start
        stamp is outside of: the error is at most one iteration."""
        start_loops = {id(l) for l in self.ctx.loops(start)}
        return any(
            id(loop) in timeline.synced_loops and id(loop) not in start_loops
            for loop in self.ctx.loops(end)
        )


class _Timeline(cst.CSTVisitor):
    """Stamps, GPU work and synchronisations of one scope, in evaluation order, with a
    flow-sensitive (source-order) set of names that hold GPU tensors or moved models."""

    def __init__(self, ctx, scope: cst.CSTNode) -> None:
        self.ctx = ctx
        self.scope = scope
        self.gpu: set[str] = set()
        self.events: list[tuple[str, cst.CSTNode]] = []
        self.event_timing = False
        self.cpu_blocks: set[int] = set()
        self.cpu_depth = 0
        self.loop_marks: list[int] = []
        self.synced_loops: set[int] = set()

    # -- structure -----------------------------------------------------------------
    def on_visit(self, node: cst.CSTNode) -> bool:
        if isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.Lambda)) and node is not self.scope:
            return False
        if id(node) in self.cpu_blocks:
            self.cpu_depth += 1
        return super().on_visit(node)

    def on_leave(self, original_node: cst.CSTNode) -> None:
        super().on_leave(original_node)
        if id(original_node) in self.cpu_blocks:
            self.cpu_depth -= 1

    def visit_If(self, node: cst.If) -> None:
        branch = _cpu_branch(self.ctx, node)
        if branch is not None:
            self.cpu_blocks.add(id(branch))

    def visit_For(self, node: cst.For) -> None:
        self.loop_marks.append(len(self.events))

    def visit_For_body(self, node: cst.For) -> None:
        self._bind(node.target, node.iter)

    def leave_For(self, node: cst.For) -> None:
        self._leave_loop(node)

    def visit_While(self, node: cst.While) -> None:
        self.loop_marks.append(len(self.events))

    def leave_While(self, node: cst.While) -> None:
        self._leave_loop(node)

    def _leave_loop(self, node: cst.CSTNode) -> None:
        mark = self.loop_marks.pop()
        if any(kind == SYNC for kind, _ in self.events[mark:]):
            self.synced_loops.add(id(node))
            self.events.append((SYNC, node))

    # -- bindings ------------------------------------------------------------------
    def leave_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            self._bind(target.target, node.value)

    def leave_AnnAssign(self, node: cst.AnnAssign) -> None:
        if node.value is not None:
            self._bind(node.target, node.value)

    def leave_AugAssign(self, node: cst.AugAssign) -> None:
        if self.uses_gpu(node.value) or self.uses_gpu(node.target):
            self._emit(WORK, node)

    def leave_NamedExpr(self, node: cst.NamedExpr) -> None:
        self._bind(node.target, node.value)

    def visit_WithItem(self, node: cst.WithItem) -> None:
        if node.asname is not None:
            self._bind(node.asname.name, node.item)

    def _bind(self, target: cst.CSTNode, value: cst.BaseExpression) -> None:
        if (
            isinstance(target, (cst.Tuple, cst.List))
            and isinstance(value, (cst.Tuple, cst.List))
            and len(target.elements) == len(value.elements)
        ):
            for t, v in zip(target.elements, value.elements):
                self._bind(t.value, v.value)
            return
        names = bound_names(target) or [dotted_name(target) or ""]
        gpu = self.cpu_depth == 0 and self.is_gpu(value)
        for name in names:
            if not name:
                continue
            if gpu:
                self.gpu.add(name)
            else:
                self.gpu.discard(name)

    def leave_Expr(self, node: cst.Expr) -> None:
        # `model.to(device)` / `model.cuda()` as a statement: a module moves in place.
        call = node.value
        if isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute):
            receiver = dotted_name(call.func.value)
            if (
                receiver is not None
                and call.func.attr.value in ("to", "cuda")
                and to_call_device(self.ctx, call) in (CUDA, DEVICE)
                and self.cpu_depth == 0
            ):
                self.gpu.add(receiver)

    # -- what values are -----------------------------------------------------------
    def is_gpu(self, node: cst.BaseExpression) -> bool:
        if isinstance(node, cst.Call):
            func = node.func
            method = func.attr.value if isinstance(func, cst.Attribute) else None
            if method in ("to", "cuda", "cpu"):
                kind = to_call_device(self.ctx, node)
                if kind in (CUDA, DEVICE):
                    return True
                if kind == CPU:
                    return False
            if method in SYNC_METHODS or method in NO_WORK_METHODS - {"to", "type"}:
                return False
            if is_tensor_factory(self.ctx, node):
                device = keyword_arg(node, "device")
                if device is not None:
                    return device_kind(self.ctx, device) in (CUDA, DEVICE)
        return self.uses_gpu(node)

    def uses_gpu(self, node: cst.CSTNode) -> bool:
        if not self.gpu:
            return False
        finder = _GpuNames(self.gpu)
        node.visit(finder)
        return finder.found

    # -- events --------------------------------------------------------------------
    def _emit(self, kind: str, node: cst.CSTNode) -> None:
        if kind == WORK and self.cpu_depth:
            return
        self.events.append((kind, node))

    def leave_BinaryOperation(self, node: cst.BinaryOperation) -> None:
        if self.uses_gpu(node.left) or self.uses_gpu(node.right):
            self._emit(WORK, node)

    def leave_Call(self, node: cst.Call) -> None:
        qual = self.ctx.qualname(node.func)
        if qual in STAMPS:
            self._emit(STAMP, node)
            return
        if qual in EVENT_TIMING:
            self.event_timing = True
            return
        if qual in SYNC_FUNCTIONS:
            self._emit(SYNC, node)
            return
        func = node.func
        method = func.attr.value if isinstance(func, cst.Attribute) else None
        if self._may_synchronize(func):
            self._emit(SYNC, node)
            return
        if method == "elapsed_time":
            self.event_timing = True
            return
        if method in SYNC_METHODS:
            self._emit(SYNC, node)
            return
        if method in ("to", "cuda"):
            self._copy(node)
            return
        args_gpu = any(self.uses_gpu(arg.value) for arg in node.args)
        if is_tensor_factory(self.ctx, node):
            if self.is_gpu(node):
                self._emit(WORK, node)
            elif args_gpu:
                self._emit(WORK, node)  # torch.cat/stack of GPU tensors
            return
        if method is not None:
            receiver_gpu = self.uses_gpu(func.value)  # type: ignore[attr-defined]
            if receiver_gpu and method not in NO_WORK_METHODS:
                self._emit(WORK, node)
                return
        elif isinstance(func, cst.Name) and func.value in self.gpu:
            self._emit(WORK, node)  # model(x) after the model moved
            return
        if not args_gpu:
            return
        if qual is not None and qual.startswith("torch.") and not qual.startswith("torch.cuda."):
            self._emit(WORK, node)  # torch.matmul(a, b), F.relu(x)
        elif isinstance(func, cst.Name) and func.value in TEXT_SYNCS:
            self._emit(SYNC, node)  # print(t) / float(t): copies to the host
        elif not (isinstance(func, cst.Name) and func.value in ("len", "isinstance", "type")):
            # Another function given GPU values: it may synchronise inside; stay silent.
            self._emit(SYNC, node)

    def _may_synchronize(self, func: cst.BaseExpression) -> bool:
        """A helper that says it synchronises (`sync()`, `self._cuda_sync()`), or a local
        name bound to code that calls `synchronize` (`sync = torch.cuda.synchronize if
        ... else noop`, a `def` whose body synchronises). Errs towards silence."""
        name = dotted_name(func)
        if name is None:
            return False
        if "sync" in name.rsplit(".", 1)[-1].lower():
            return True
        if not isinstance(func, cst.Name):
            return False
        for binding in self.ctx.bindings_of(func.value, func):
            if binding.kind in ("assign", "def") and binding.value is not None:
                if "synchronize" in self.ctx.code(binding.value):
                    return True
        return False

    def _copy(self, node: cst.Call) -> None:
        kind = to_call_device(self.ctx, node)
        receiver = node.func.value  # type: ignore[attr-defined]
        if kind == CPU:
            self._emit(SYNC, node)
            return
        if kind not in (CUDA, DEVICE):
            if self.uses_gpu(receiver):
                self._emit(WORK, node)  # a cast on the GPU
            return
        if self.uses_gpu(receiver):
            return  # already there: no copy
        non_blocking = keyword_arg(node, "non_blocking")
        if isinstance(non_blocking, cst.Name) and non_blocking.value == "True":
            self._emit(WORK, node)
        else:
            self._emit(SYNC, node)  # a blocking host-to-device copy waits for the stream


class _NameUses(cst.CSTVisitor):
    """Every `Name` node spelling `name` in a scope, other than `skip` (the binding)."""

    def __init__(self, name: str, skip: cst.CSTNode) -> None:
        self.name = name
        self.skip = skip
        self.nodes: list[cst.Name] = []

    def visit_Name(self, node: cst.Name) -> None:
        if node.value == self.name and node is not self.skip:
            self.nodes.append(node)


class _GpuNames(cst.CSTVisitor):
    def __init__(self, names: set[str]) -> None:
        self.names = names
        self.found = False

    def on_visit(self, node: cst.CSTNode) -> bool:
        if self.found:
            return False
        if isinstance(node, cst.Attribute):
            if node.attr.value in NO_WORK_ATTRS:
                return False
            name = dotted_name(node)
            if name is not None and name in self.names:
                self.found = True
                return False
        elif isinstance(node, cst.Name):
            if node.value in self.names:
                self.found = True
            return False
        elif isinstance(node, cst.Call):
            func = node.func
            if isinstance(func, cst.Attribute) and func.attr.value in ("size", "dim", "numel"):
                return False
            if isinstance(func, cst.Name) and func.value in ("len", "isinstance", "type"):
                return False
        return True


def _cpu_branch(ctx, node: cst.If) -> Optional[cst.CSTNode]:
    """The branch of an `if` that the test itself says runs without CUDA."""
    test = node.test
    negate = False
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        test, negate = test.expression, True
    says_cuda: Optional[bool] = None
    if isinstance(test, cst.Call) and ctx.qualname(test.func) == "torch.cuda.is_available":
        says_cuda = True
    elif isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
        comparison = test.comparisons[0]
        text = string_value(comparison.comparator) or string_value(test.left)
        op = comparison.operator
        if text in ("cuda", "cpu"):
            equal = isinstance(op, (cst.Equal, cst.Is))
            unequal = isinstance(op, (cst.NotEqual, cst.IsNot))
            if equal or unequal:
                says_cuda = (text == "cuda") == equal
    elif isinstance(test, cst.Attribute) and test.attr.value == "is_cuda":
        says_cuda = True
    if says_cuda is None:
        return None
    if negate:
        says_cuda = not says_cuda
    if says_cuda:
        return node.orelse.body if isinstance(node.orelse, cst.Else) else None
    return node.body

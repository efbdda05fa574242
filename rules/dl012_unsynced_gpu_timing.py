from __future__ import annotations

from typing import Optional

import libcst as cst

from devicelint.rule import Rule
from devicelint.semantic import Kind, Place
from devicelint.semantic.api import torch_api
from devicelint.runtime_spec import LineRecord, ProbeRun, RuntimeSpec, Watch

WORK, SYNC, STAMP = "work", "sync", "stamp"
_NESTED = (cst.FunctionDef, cst.ClassDef, cst.Lambda)
# Calls that neither launch GPU work nor wait for it, whatever their arguments.
_INERT_BUILTINS = {"len", "isinstance", "type", "id", "hasattr", "getattr", "range", "enumerate",
                   "zip", "iter", "next", "list", "tuple", "dict", "set", "sorted", "reversed",
                   "min", "max", "sum", "abs", "round", "divmod"}


class UnsyncedGpuTiming(Rule):
    """## What it does
    Flags an end timestamp (`time.time()`, `time.perf_counter()`, `time.monotonic()`, their
    `_ns` forms, `timeit.default_timer()`, and `time.clock()` in code written for Pythons
    before 3.8) that closes a measured interval over GPU work with
    no synchronisation between the work and the timestamp. A timestamp is an end only when
    the code measures with it: it is subtracted from a start timestamp or compared with one
    (`time.perf_counter() - t0`, `t1 = time.time()` later used as `t1 - t0`). Date stamps
    (`time.asctime(time.localtime(time.time()))`) and stamps that only open a region
    (`t1 = time.perf_counter()` used only as `... - t1`) are never ends. The finding is at the
    end-timestamp call.

    GPU work is what the code shows runs on the device between the start and the end: a
    PyTorch operation that launches kernels (`launches` in the semantic layer's API table) on
    device values, a module on the device called, arithmetic on device tensors, `.backward()`
    of a device loss (or of one computed from device values), a device factory, a
    `non_blocking=True` copy. A loop that times each device in turn (`for device in ["cpu", "cuda"]:`, devices named by literals) is judged
    on its GPU pass.

    Counted as synchronising (silent after them): `torch.cuda.synchronize()` (also through a
    name bound to it, or a function of the file that calls it), `.item()`, `.tolist()`,
    `.cpu()`, `.numpy()`, `.to("cpu")`, `print()`/`float()`/`int()`/an f-string of a device
    value (also of a value the model cannot place but computes from device values: `loss =
    criterion(outputs, targets)` with `targets` moved, then `loss.item()`; `loss.backward()`
    of such a loss is GPU work), a
    blocking host-to-device copy (`.to(device)` of a host tensor without `non_blocking=True`,
    which waits for the stream), a function of the file that reads its device argument on
    the host, and any other call given device values (the rule cannot see inside it, so it
    stays silent). When the end stamp is in a loop that the start stamp is outside of, the
    work of the previous iteration counts too, unless the loop synchronises on every
    iteration (a running total, off by at most one iteration); a start stamp taken again later in the loop
    body (`t0 = t1`, `prev = time.time()`) opens the next iteration's interval, which crosses
    the loop's back edge.

    Silent on functions that time with `torch.cuda.Event(enable_timing=True)`, on
    `torch.utils.benchmark` (it synchronises itself), on CPU-only work, on timing that
    brackets no tensor work, and inside branches that run only without a GPU
    (`if device.type != "cuda":`, the `else` of `if torch.cuda.is_available():`).

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
    message = "end timestamp after GPU work without `torch.cuda.synchronize()`"
    hint = (
        "call `torch.cuda.synchronize()` first, or time with CUDA events / "
        "`torch.utils.benchmark`"
    )
    tokens = ("time(", "time_ns(", "perf_counter", "monotonic", "default_timer", "clock(")

    @staticmethod
    def gate(facts) -> bool:
        """Two clock stamps (`time.perf_counter`, ... by any import name) in one scope: a
        stamp's name is in the code and it makes two calls at least (devicelint/gate.py)."""
        return facts.calls >= 2 and facts.mentions(*(s.rsplit(".", 1)[-1] for s in torch_api().stamps))

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self.stamps: dict[int, list[cst.Call]] = {}
        self.scopes: dict[int, cst.CSTNode] = {}

    def visit_Call(self, node: cst.Call) -> None:
        stamps = self.ctx.semantic.api.stamps
        # The import table first (cheap), then the semantic model (the import not shadowed).
        if self.ctx.qualname(node.func) in stamps and self.ctx.semantic.qualname(node.func) in stamps:
            scope = self.ctx.scope(node)
            if isinstance(scope, (cst.FunctionDef, cst.Module)):
                self.stamps.setdefault(id(scope), []).append(node)
                self.scopes[id(scope)] = scope

    def leave_Module(self, node: cst.Module) -> None:
        for key, stamps in self.stamps.items():
            if len(stamps) >= 2:
                _Scope(self, self.scopes[key], stamps).check()

    # -- devicelint confirm ------------------------------------------------------------
    @staticmethod
    def probe(run: ProbeRun, rec: LineRecord) -> dict:
        stamps = rec.stamps
        if not stamps.count:
            return run.base("inconclusive", "the line ran but no time.time/perf_counter call "
                            "was seen")
        if run.estimated:
            # The simulated device runs every op synchronously on the CPU: it knows which
            # device ops were issued since the last sync, not whether a GPU would still be
            # running them.
            if stamps.pending:
                summary = (f"device work issued since the last sync was unsynchronised at "
                           f"{stamps.pending} of {stamps.count} timestamps; the simulated "
                           "device is synchronous, so whether a GPU would still be running it "
                           "needs a real GPU")
            else:
                summary = ("no device work was issued since the last sync at this timestamp; "
                           "the simulated device is synchronous and cannot time a GPU's queue")
            return run.base("inconclusive", summary, count=stamps.count,
                            unsynced=stamps.pending, needs="a GPU (asynchronous execution)")
        if not stamps.pending:
            return run.base("refuted", "no GPU work was pending when the timestamp was taken",
                            count=stamps.count)
        lag = stamps.lag_seconds * 1000
        return run.base("confirmed", f"GPU work was still pending at {stamps.pending} of "
                        f"{stamps.count} timestamps; the GPU ran {lag:.3f} ms more after it",
                        count=stamps.pending, unmeasured_ms=round(lag, 4))

    runtime = RuntimeSpec(probe=probe, watch=(Watch.CLOCK,), whole_file=True,
                          sim_cannot_judge="the simulated device is synchronous")


class _Scope:
    """The stamps, GPU work and synchronisations of one function (or the module), in
    evaluation order. Nodes are classified lazily, walking back from an end stamp until the
    nearest work or synchronisation."""

    def __init__(self, rule: UnsyncedGpuTiming, scope: cst.CSTNode, stamps: list[cst.Call]) -> None:
        self.rule = rule
        self.ctx = rule.ctx
        self.sem = rule.ctx.semantic
        self.scope = scope
        self.stamps = stamps
        self.nodes: list[cst.CSTNode] = []      # expressions in evaluation (post-)order
        self.index: dict[int, int] = {}         # stamps -> position in `nodes`
        self.kinds: dict[int, Optional[str]] = {}
        self.names: dict[str, list[cst.Name]] = {}
        self.event_timing = False

    # -- evaluation order --------------------------------------------------------------
    def _walk(self) -> None:
        body = self.scope.body if isinstance(self.scope, cst.FunctionDef) else self.scope
        children = self.sem.children
        stamps = {id(s) for s in self.stamps}
        events = self.sem.api.events
        stack: list[tuple[cst.CSTNode, bool]] = [(body, False)]
        while stack:
            node, done = stack.pop()
            if done:
                if id(node) in stamps:
                    self.index[id(node)] = len(self.nodes)
                self.nodes.append(node)
                continue
            if isinstance(node, _NESTED) and node is not self.scope:
                continue
            if isinstance(node, cst.Name):
                self.names.setdefault(node.value, []).append(node)
            elif isinstance(node, cst.Call):
                func = node.func
                if isinstance(func, cst.Attribute) and func.attr.value in ("record", "elapsed_time") \
                        or self.sem.qualname(func) in events:
                    if self.sem.qualname(func) in events or \
                            self.sem.value(func.value).kind is Kind.EVENT:  # type: ignore[union-attr]
                        self.event_timing = True
            if isinstance(node, (cst.BaseExpression, cst.AugAssign, cst.FormattedStringExpression)):
                stack.append((node, True))
            stack.extend((child, False) for child in reversed(children(node)))

    def kind(self, position: int) -> Optional[str]:
        found = self.kinds.get(position, False)
        if found is not False:
            return found  # type: ignore[return-value]
        node = self.nodes[position]
        if id(node) in self.index:
            kind: Optional[str] = STAMP if self.sem.on_gpu_path(node) else None
        else:
            kind = self._classify(node)
            owner = self.ctx.parent(node)
            if isinstance(owner, (cst.If, cst.While, cst.IfExp, cst.Assert)) and node is owner.test:
                # The truth value of a device tensor is read once the test is evaluated.
                if any(self.sem.syncs.on_device(r.operand) for r in self.sem.syncs.reads(owner)):
                    kind = SYNC
        self.kinds[position] = kind
        return kind

    def _classify(self, node: cst.CSTNode) -> Optional[str]:
        sem = self.sem
        if isinstance(node, cst.Call):
            return self._call(node)
        if isinstance(node, cst.BinaryOperation) or isinstance(node, cst.AugAssign):
            value = sem.value(node) if isinstance(node, cst.BinaryOperation) else sem.value(node.value)
            if value.kind is Kind.TENSOR and value.place is Place.DEVICE and sem.on_gpu_path(node):
                return WORK
            return None
        if isinstance(node, cst.FormattedStringExpression):
            if any(self._read_waits(r.operand) for r in sem.syncs.reads(node)):
                return SYNC
        return None

    def _read_waits(self, operand: Optional[cst.CSTNode]) -> bool:
        """A host read of `operand` waits for the GPU: it is on the device, or the model
        does not know where it is and it is computed from device values (`loss =
        criterion(outputs, targets)` with `targets` moved: a loss of device data is on the
        device, or the call would have raised)."""
        syncs = self.sem.syncs
        if operand is None or syncs.on_device(operand):
            return True
        return self.sem.value(operand).place is Place.UNKNOWN and self._from_device(operand, 0)

    def _from_device(self, node: cst.CSTNode, depth: int) -> bool:
        """`node` is computed from a device value: its operands, arguments and receivers,
        through the bindings of the names it reads (a few steps deep). Unlike
        `syncs.on_device`, a place resting on a name (`device` with no call site) counts:
        `.to(device, non_blocking=True)` of such a device is work to this rule, so a read of
        its result is a wait."""
        sem = self.sem
        if depth > 3 or isinstance(node, _NESTED):
            return False
        if isinstance(node, cst.BaseExpression):
            value = sem.value(node)
            if value.place is Place.DEVICE and value.kind in (Kind.TENSOR, Kind.UNKNOWN):
                return True  # also where a name says so: the work the rule counts may too
        if isinstance(node, cst.Name):
            return any(d.value is not None and d.kind in ("assign", "annassign", "augassign")
                       and self._from_device(d.value, depth + 1) for d in sem.defs(node))
        if isinstance(node, cst.Call):
            parts = [a.value for a in node.args]
            if isinstance(node.func, cst.Attribute):
                parts.append(node.func.value)
        elif isinstance(node, (cst.BinaryOperation, cst.Comparison, cst.Subscript, cst.Attribute,
                               cst.UnaryOperation)):
            parts = list(sem.children(node))
        else:
            return False
        return any(self._from_device(part, depth) for part in parts)

    def _call(self, call: cst.Call) -> Optional[str]:
        sem = self.sem
        syncs = sem.syncs
        qual = sem.qualname(call.func)
        if qual in sem.api.stamps:
            return STAMP if sem.on_gpu_path(call) else None
        if qual in sem.api.events:
            self.event_timing = True
            return None
        func = call.func
        method = func.attr.value if isinstance(func, cst.Attribute) else None
        if method in ("record", "elapsed_time") and sem.value(func.value).kind is Kind.EVENT:
            self.event_timing = True
            return None
        for read in syncs.reads(call):
            if self._read_waits(read.operand):
                return SYNC
        if self._bound_synchronize(func):
            return SYNC
        if method in ("to", "cuda"):
            return self._copy(call)
        if syncs.call_reads(call):
            return SYNC
        value = sem.value(call)
        receiver = sem.value(func.value) if isinstance(func, cst.Attribute) else None
        device_args = any(syncs.on_device(a.value) for a in call.args)
        on_gpu = sem.on_gpu_path(call)
        if receiver is not None and (receiver.kind is Kind.MODULE or (
                receiver.kind is Kind.UNKNOWN and receiver.place is Place.DEVICE)) \
                and method not in ("forward",):
            return None  # .eval(), .parameters(), .zero_grad() (moves are copies, above)
        if receiver is not None and receiver.kind in (Kind.OPTIMIZER, Kind.SCALER, Kind.SCHEDULER):
            return None
        if method == "backward" and receiver is not None and (
                receiver.place is Place.DEVICE
                or receiver.place is Place.UNKNOWN and self._from_device(func.value, 0)):
            return WORK if on_gpu else None  # as a read of it waits (`_read_waits`), it runs there
        spec = None
        if qual is not None:
            spec = sem.api.function(qual)
        elif method is not None and receiver is not None and receiver.kind is Kind.TENSOR:
            spec = sem.api.method(method)
        if spec is not None:
            if spec.launches and (value.place is Place.DEVICE or device_args
                                  or (receiver is not None and receiver.place is Place.DEVICE)):
                return WORK if on_gpu else None
            return None
        callee = sem.value(func)
        if callee.kind is Kind.MODULE or sem.moved_callable(callee):
            return WORK if value.place is Place.DEVICE and on_gpu else None
        if qual is not None and qual.startswith("torch."):
            return None  # PyTorch's own API outside the table (compile, DDP, clip_grad_norm_)
        if isinstance(func, cst.Name) and func.value in _INERT_BUILTINS and not sem.defs(func):
            return None
        if device_args or (receiver is not None and syncs.on_device(func.value)):
            return SYNC  # code the rule cannot see, given device values: it may synchronise
        return None

    def _copy(self, call: cst.Call) -> Optional[str]:
        """`.to(device)` / `.cuda()`: a blocking host-to-device copy waits for the stream."""
        sem = self.sem
        func = call.func
        receiver = sem.value(func.value)
        result = sem.value(call)
        if receiver.kind is Kind.MODULE:
            return SYNC if result.place is Place.DEVICE else None  # parameters copied, blocking
        if result.place is not Place.DEVICE:
            return None
        if receiver.place is Place.DEVICE:
            return WORK if sem.on_gpu_path(call) else None  # a cast on the device (or nothing)
        from devicelint.semantic.model import keyword_arg

        blocking = keyword_arg(call, "non_blocking")
        if blocking is not None and sem.value(blocking).literal is True:
            return WORK if sem.on_gpu_path(call) else None
        return SYNC

    def _bound_synchronize(self, func: cst.BaseExpression) -> bool:
        """`sync()` where `sync = torch.cuda.synchronize if ... else (lambda: None)`."""
        if not isinstance(func, cst.Name):
            return False
        sem = self.sem
        for d in sem.defs(func):
            if d.kind not in ("assign", "annassign") or d.value is None or d.path:
                continue
            values = [d.value]
            if isinstance(d.value, cst.IfExp):
                values = [v for v in (d.value.body, d.value.orelse) if sem.branch_possible(d.value, v)]
            for value in values:
                qual = sem.qualname(value)
                spec = sem.api.function(qual) if qual else None
                if spec is not None and spec.syncs and spec.result == "none":
                    return True
        return False

    # -- intervals ---------------------------------------------------------------------
    def check(self) -> None:
        self._walk()
        if self.event_timing:
            return
        for stamp in self.stamps:
            if id(stamp) not in self.index or self.kind(self.index[id(stamp)]) != STAMP:
                continue
            starts = self._starts_closed_by(stamp)
            if not starts:
                continue
            loops = self.sem.loops.enclosing_loops(stamp)
            restamped = any(self._within(start, loop) for start in starts for loop in loops)
            if any(self._unsynced(start, stamp, restamped) for start in starts):
                self.rule.report(stamp)

    def _starts_closed_by(self, stamp: cst.Call) -> list[cst.Call]:
        """The start stamps of the intervals `stamp` closes: `stamp - t0` / `stamp > t0`,
        directly or through the name it is assigned to."""
        uses: list[cst.CSTNode] = [stamp]
        parent = self.ctx.parent(stamp)
        if isinstance(parent, (cst.Assign, cst.AnnAssign)):
            target = parent.targets[0].target if isinstance(parent, cst.Assign) and len(parent.targets) == 1 \
                else getattr(parent, "target", None)
            if isinstance(target, cst.Name):
                for name in self.names.get(target.value, ()):
                    if name is target:
                        continue
                    if any(d.node is parent for d in self.sem.defs(name)):
                        uses.append(name)
        starts: list[cst.Call] = []
        for use in uses:
            other = self._measured_against(use)
            if other is not None:
                for start in self._stamp_sources(other, 0):
                    if start not in starts:  # itself: `t0 = t1` carried to the next iteration
                        starts.append(start)
        return starts

    def _measured_against(self, use: cst.CSTNode) -> Optional[cst.CSTNode]:
        parent = self.ctx.parent(use)
        if isinstance(parent, cst.BinaryOperation) and isinstance(parent.operator, cst.Subtract) \
                and parent.left is use:
            return parent.right
        if isinstance(parent, cst.ComparisonTarget):
            comparison = self.ctx.parent(parent)
            if isinstance(comparison, cst.Comparison) and len(comparison.comparisons) == 1:
                return comparison.left
        if isinstance(parent, cst.Comparison) and parent.left is use and len(parent.comparisons) == 1:
            return parent.comparisons[0].comparator
        return None

    def _stamp_sources(self, node: cst.CSTNode, depth: int) -> list[cst.Call]:
        """The stamp calls whose value `node` carries (`t0`, `start + timeout`)."""
        if depth > 4:
            return []
        sem = self.sem
        if isinstance(node, cst.Call):
            return [node] if id(node) in self.index and self.kind(self.index[id(node)]) == STAMP else []
        if isinstance(node, cst.Name):
            found = []
            for d in sem.defs(node):
                if d.kind in ("assign", "annassign") and d.value is not None and not d.path:
                    found.extend(self._stamp_sources(d.value, depth + 1))
            return found
        if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, (cst.Add, cst.Subtract)):
            return self._stamp_sources(node.left, depth + 1)
        return []

    def _unsynced(self, start: cst.Call, end: cst.Call, restamped: bool) -> bool:
        first = self.index[id(start)]
        last = self.index[id(end)]
        loops = self.sem.loops.enclosing_loops(end)
        if first >= last:
            # `prev = time.time()` at the end of the body, `time.time() - prev` at the top of
            # the next iteration: the interval crosses the loop's back edge.
            shared = next((l for l in loops if self._within(start, l)), None)
            if shared is None:
                return False
            inside = self._inside(shared)
            # Walked backwards: what ran before the end stamp in this iteration, then what ran
            # after the start stamp in the previous one.
            order = [i for i in range(last - 1, -1, -1) if inside(i)] + \
                [i for i in range(len(self.nodes) - 1, first, -1) if inside(i)]
        else:
            loop = self._outer_loop_without(end, start)
            if loop is not None and not restamped:
                # From the second iteration on, what the loop body ran after the end stamp in
                # the previous iteration also ran since the start (unless the loop takes a new
                # start stamp: then this start opens only the first iteration's interval).
                inside = self._inside(loop)
                if self._syncs_every_iteration(loop, inside):
                    return False  # a running total: off by at most one iteration of many
                order = [i for i in range(last - 1, first, -1) if inside(i)] + \
                    [i for i in range(len(self.nodes) - 1, last, -1) if inside(i)] + \
                    [i for i in range(last - 1, first, -1) if not inside(i)]
            else:
                order = range(last - 1, first, -1)
        for position in order:
            kind = self.kind(position)
            if kind == WORK:
                return True
            if kind == SYNC:
                return False
        return False

    def _syncs_every_iteration(self, loop: cst.CSTNode, inside) -> bool:
        loops = self.sem.loops
        return any(inside(i) and self.kind(i) == SYNC and not loops.throttled(self.nodes[i], loop)
                   for i in range(len(self.nodes)))

    def _inside(self, loop: cst.CSTNode):
        start = self.ctx.order(loop)
        nodes = self.nodes
        return lambda i: self.ctx.order(nodes[i]) > start and self._within(nodes[i], loop)

    def _outer_loop_without(self, end: cst.CSTNode, start: cst.CSTNode) -> Optional[cst.CSTNode]:
        found = None
        for loop in self.sem.loops.enclosing_loops(end):
            if not self._within(start, loop):
                found = loop
        return found

    def _within(self, node: cst.CSTNode, container: cst.CSTNode) -> bool:
        current: Optional[cst.CSTNode] = node
        while current is not None:
            if current is container:
                return True
            if current is self.scope:
                return False
            current = self.ctx.parent(current)
        return False

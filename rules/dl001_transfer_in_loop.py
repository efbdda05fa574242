from __future__ import annotations

from typing import Optional

import libcst as cst

from devicelint.gate import IN_ANY_LOOP
from devicelint.builders import hoistable_args, names_in, plain_reference, reindent
from devicelint.context import COMPREHENSIONS
from devicelint.names import dotted_name
from devicelint.rule import Rule
from devicelint.semantic import Kind, Origin, Place, Value
from devicelint.semantic import dataflow
from devicelint.semantic.flow import Def, target_parts
from devicelint.semantic.model import call_arg, keyword_arg
from devicelint.runtime_spec import Find, LineRecord, ProbeRun, RuntimeSpec, Watch

# Iteration wrappers whose elements are their first argument's (`tqdm(rows)`).
_PASS_THROUGH = {"iter", "list", "tuple", "sorted", "reversed", "tqdm", "tqdm.tqdm", "tqdm.auto.tqdm",
                 "tqdm.notebook.tqdm", "tqdm.autonotebook.tqdm", "tqdm.rich.tqdm",
                 "rich.progress.track", "itertools.islice", "islice"}


def host_collection(value: Value) -> bool:
    """Data that lives on the host and whose iteration yields rows or samples: a CPU tensor,
    a NumPy array, a host list of samples (also one grown with `append` from the rows of
    host data: `test_samples.append(sample)` over a dataset's samples), a dataset."""
    if value.kind is Kind.TENSOR:
        return value.place is Place.CPU
    if value.kind is Kind.SEQUENCE:
        element = value.element
        return value.place is Place.CPU or (
            element is not None and element.place is Place.CPU and element.origin is Origin.ROW)
    return value.kind in (Kind.ARRAY, Kind.DATASET)


class TransferInLoop(Rule):
    """## What it does
    Flags a host→device transfer (`.to(device)`, `.cuda()`, `torch.tensor(x, device=...)`,
    `torch.as_tensor(x, device=...)`) of one row or sample of host data, inside the loop or
    comprehension that walks that data: a CPU tensor, a NumPy array, a host list of samples
    (a list of numbers or of CPU tensors, also one the code grows with `append` from rows of
    host data, handed to a helper that only reads it) or a dataset (`torch.utils.data` datasets and the
    file's own `Dataset` subclasses), one transfer per row. However the loop is written:
    `for row in x`, `for i in range(len(x)): x[i]`, `zip(xs, ys)`, `enumerate(x)`, a
    `while` loop over an index, a comprehension (`torch.stack([r.to(dev) for r in rows])`),
    and through rebinding (`r = rows[i]; r = r.float(); r.to(dev)`). A loader's `collate_fn`
    (a function of the file given as `collate_fn=`) receives a host list of samples: a
    transfer per sample in its loop is one per row. A collection bound anew inside the loop
    (`betas = [0, 0.9999]` indexed by `epoch // 160`) is not walked by it.

    The rule decides from what the code does (the semantic model: where each value lives,
    what each loop walks), never from what variables are called. The one exception is a
    device argument the code does not define (a parameter called `device` with no call site
    or annotation): it is taken for a device, and the message says it rests on the name.

    An index selects one row when it is one integer (a number, a 0-d tensor or array, an
    element of `np.random.permutation(n)`); indexing with an array or list of indices, a
    boolean mask or a slice (`x[order]`, `x[mask]`, `x[i:i + bs]`) moves many rows at once,
    and an index the model cannot tell is taken for a row only when it is the loop's own
    counter (`for i in range(...)`, `enumerate`).

    It stays silent on moving one whole batch per DataLoader iteration, on the pieces of
    `split`/`chunk` (bounded-memory chunks), on dtype-only conversions
    (`.to(torch.float16)`), on values already on the device, on loops over the keys or
    fields of one batch (`batch.items()`, a tuple of tensors), on loops over model layers or
    parameters, on `nn.Module.to`, on code that runs only without a GPU (`if not
    use_cuda:`), and wherever the code does not show what the loop walks.

    ## Why is this bad?
    Every transfer pays a fixed launch and synchronisation cost (about 15 µs for a small
    pageable copy on an H200), so the number of copies, not the number of bytes, sets the
    time, and it grows with the number of rows. Measured on an H200 for this project:
    10,000 per-row copies of a 10000×128 float32 tensor took 326× as long as one batched
    copy, 100,000 rows of 64 floats 772× (1,892× against a pinned batched copy).
    Run `devicelint confirm` on a GPU machine to measure it in your code.

    ## Example
    ```python
    data = torch.randn(10_000, 128)
    outputs = []
    for row in data:
        outputs.append(model(row.to(device)))
    ```

    ## Use instead
    ```python
    data = torch.randn(10_000, 128).to(device)   # one copy (pin_memory() for more speed)
    outputs = [model(row) for row in data]       # or better: model(data)
    ```
    For a list of samples, build one tensor first (`torch.stack(samples).to(device)`,
    `torch.tensor(samples, device=device)`) and index it on the device.

    ## Fix safety
    An unsafe fix (`--unsafe-fixes`) hoists one batched transfer out of a plain per-row
    copy of a host tensor `x` (a tensor the code shows, not a numpy array or a list):
    - `[row.to(dev) for row in x]` and `[x[i].to(dev) for i in range(len(x))]` (also
      `range(x.shape[0])`, `range(x.size(0))`) → `list(x.to(dev))`;
    - `torch.stack([row.to(dev) for row in x])` (or `dim=0`) → `x.to(dev)`;
    - a `for` loop whose whole body is `out.append(row.to(dev))` (or `x[i]` by index), with
      `out` a list → `out.extend(x.to(dev))`.
    The `.to`/`.cuda` arguments are kept (device, dtype, `non_blocking`, `copy`). The
    values, dtypes, shapes and devices are the same, but:
    - the rows are now views of one device tensor instead of separate tensors: they share
      its storage, so one row kept alive keeps the whole batch's memory, and when `x`
      requires grad, modifying a row in place raises (outputs of `unbind`);
    - the rows keep `x`'s strides: a row of a non-contiguous `x` (e.g. transposed) is no
      longer contiguous, and `x.to(dev)` in place of `torch.stack` is not contiguous
      either, nor a copy when `x` is already on `dev` (it is then `x` itself);
    - an empty `x` no longer makes `torch.stack` raise;
    - the loop form no longer binds the loop variable (the fix is only offered when that
      variable is used nowhere else in the scope).
    There is no fix for numpy arrays (`torch.as_tensor(arr)` raises on negative strides,
    where each row of `arr[::-1]` converts fine), for lists or datasets, for filtered or
    nested comprehensions, for rows changed before they move (`(row * 2).to(dev)`), for
    arguments that depend on the row or call anything but `torch.device(...)`, for
    `memory_format=`, for loops with more statements, an `else`, or a comment in the
    replaced span, nor where `out` is not known to be a list.
    """

    code = "DL001"
    name = "transfer-in-loop"
    fixable = True
    summary = "Host→device transfer of single rows inside a loop; move the batch once"
    message = "`{call}` copies one row of `{coll}` to the device per loop iteration"
    hint = (
        "move the whole tensor once before the loop (`.to(device)` / `torch.stack(...)`) "
        "and index it on the device"
    )
    hint_message = " (`{target}` is taken for a device from its name only)"
    tokens = (".to(", ".cuda(", "device=")

    @staticmethod
    def gate(facts) -> bool:
        """Reported at a transfer in a loop (`ctx.loops`): `.cuda()`, `.to(target)` or a
        `device=` call of what may be `torch.tensor`/`as_tensor`/`asarray`, whose target
        may be a device (`transfer`; devicelint/gate.py `uploads`)."""
        return facts.uploads(IN_ANY_LOOP)

    def leave_Call(self, node: cst.Call) -> None:
        func = node.func
        if type(func) is cst.Attribute and func.attr.value in ("to", "cuda"):
            pass
        elif type(func) not in (cst.Attribute, cst.Name) or keyword_arg(node, "device") is None:
            return  # neither a move nor a factory given a device: nothing to ask the model
        ctx = self.ctx
        loops = ctx.loops(node)
        if not loops:
            return
        found = self.transfer(node)
        if found is None:
            return
        moved, label, hint = found
        sem = ctx.semantic
        if not sem.on_gpu_path(node):
            return
        coll = self.row_collection(node, moved, loops)
        if coll is None:
            return
        text = ctx.code(coll).strip()
        if len(text) > 40:
            text = text[:37] + "..."
        message = self.message.format(call=label, coll=text)
        if hint is not None:
            message += self.hint_message.format(target=hint)
        fix = self.hoist_fix(node, moved)
        if fix is None:
            self.report(node, message)
            return
        replace, replacement = fix
        self.report(
            node, message, replacement=replacement, replace=replace, safe=False,
            fix_description="hoist one batched transfer out of the per-row copy",
        )

    # -- what is moved -------------------------------------------------------------------
    def transfer(self, call: cst.Call) -> Optional[tuple[cst.BaseExpression, str, Optional[str]]]:
        """(the expression copied to the device, a label, the device's text when the
        device rests on a name only) for a host→device transfer, else None."""
        sem = self.ctx.semantic
        func = call.func
        if isinstance(func, cst.Attribute) and func.attr.value in ("to", "cuda"):
            if func.attr.value == "cuda":
                target = call_arg(call, 0, "device")
                hint = None
            else:
                target = keyword_arg(call, "device")
                if target is None:
                    target = call_arg(call, 0, "\0")
                if target is None:
                    return None
                place, named = sem.device_place(target)
                if place is not Place.DEVICE:
                    return None
                hint = self.ctx.code(target).strip() if named else None
            if any(arg.star for arg in call.args):
                return None
            return func.value, f".{func.attr.value}()", hint
        made = dataflow.data_to_device(sem, call)
        if made is None:
            return None
        return made.data, f"{made.qualname}(..., device=...)", \
            self.ctx.code(made.device).strip() if made.named else None

    # -- reasoning -----------------------------------------------------------------------
    def row_collection(self, call: cst.Call, moved: cst.BaseExpression, loops: list) -> Optional[cst.CSTNode]:
        """The host collection one row of which `moved` is, per iteration of one of
        `loops` (the loops around the transfer), or None."""
        sem = self.ctx.semantic
        value = sem.value(moved)
        if value.place is Place.DEVICE or value.kind is Kind.MODULE or value.origin in (Origin.BATCH, Origin.CHUNK):
            return None

        # The indices of host data that selects several rows (`x[mask]`, `x[order]`): they
        # choose the rows, they are not copied, so a loop over them is no row loop.
        selectors: set[int] = set()

        def follow(name: cst.Name, d: Def) -> bool:
            # A value that is on the device, a module or a whole batch carries no row
            # copied here.
            if id(name) in selectors:
                return False
            bound = sem.def_value(d)
            return not (bound.place is Place.DEVICE or bound.kind is Kind.MODULE
                        or bound.origin in (Origin.BATCH, Origin.CHUNK))

        region = loops[-1]
        for node, d in dataflow.data_nodes(sem, moved, region, follow=follow):
            if id(node) in selectors:
                continue
            if d is not None and d.kind in ("for", "comp"):
                if self._loop_of(d) in loops:
                    coll = self._walked_row(d)
                    if coll is not None:
                        return coll
            elif d is None and isinstance(node, cst.Subscript):
                coll = self._indexed_row(node, loops)
                if coll is not None:
                    return coll
                if host_collection(sem.value(node.value)):
                    selectors.update(id(inner) for inner in _subtree(node.slice))
        return None

    def _loop_of(self, d: Def) -> Optional[cst.CSTNode]:
        """The For loop or comprehension whose iteration makes binding `d`."""
        if d.kind == "for":
            return d.node
        current = d.node
        while current is not None and not isinstance(current, COMPREHENSIONS):
            current = self.ctx.parent(current)
        return current

    def _walked_row(self, d: Def) -> Optional[cst.CSTNode]:
        """For a loop target bound to one element of host data: that data."""
        sem = self.ctx.semantic
        element = sem.def_value(d)
        if element.origin in (Origin.BATCH, Origin.CHUNK):
            return None
        coll = self._walked(d.value, list(d.path))
        if coll is None:
            return None
        return coll if host_collection(sem.value(coll)) else None

    def _walked(self, iterable: cst.BaseExpression, path: list[int]) -> Optional[cst.BaseExpression]:
        """What a loop target at unpacking `path` walks, through `enumerate`, `zip` and
        pass-through wrappers (`tqdm`, `iter`, ...); None for a counter or when unknown."""
        sem = self.ctx.semantic
        node = iterable
        while isinstance(node, cst.Call):
            func = node.func
            if isinstance(func, cst.Name) and sem.defs(func):
                break  # the file's own function shadows the builtin
            name = sem.qualname(func) or dotted_name(func) or ""
            args = [a.value for a in node.args if a.keyword is None and not a.star]
            if name == "enumerate" and args:
                if not path or path[0] != 1:
                    return None  # the counter, or the (index, row) pair itself
                node, path = args[0], path[1:]
            elif name == "zip" and args:
                if not path or not 0 <= path[0] < len(args):
                    return None
                node, path = args[path[0]], path[1:]
            elif name in _PASS_THROUGH and args:
                node = args[0]
            else:
                break
        if isinstance(node, cst.Call) and dotted_name(node.func) == "range":
            return None
        return node

    def _indexed_row(self, subscript: cst.Subscript, loops: list) -> Optional[cst.CSTNode]:
        """`x[i]` with `x` host data and `i` changing on every iteration of one of `loops`."""
        sem = self.ctx.semantic
        base = sem.value(subscript.value)
        if not host_collection(base) or base.origin in (Origin.BATCH, Origin.CHUNK):
            return None
        row = sem.value(subscript)
        if row.kind is Kind.SEQUENCE and base.kind is not Kind.SEQUENCE:
            return None
        if row.kind is Kind.TENSOR and base.kind is Kind.TENSOR and row.rank is not None \
                and base.rank is not None and row.rank >= base.rank:
            return None  # a slice, not a row
        changes = False
        for element in subscript.slice:
            inner = element.slice
            if isinstance(inner, cst.Slice):
                return None  # `x[i:i + 4]`: several rows
            if not self._one_integer(inner.value, loops):
                return None  # an index array, a list of indices, a mask: several rows at once
            for name in dataflow.reads(sem, inner):
                for loop in loops:
                    if any(d.node is not None and dataflow.within(sem, d.node, loop) for d in sem.defs(name)) \
                            and not self._rebuilt_in(subscript.value, loop):
                        changes = True
        return subscript.value if changes else None

    def _rebuilt_in(self, coll: cst.BaseExpression, loop: cst.CSTNode) -> bool:
        """The collection is bound anew inside `loop` (`betas = [0, 0.9999]` in the epoch
        loop, then `betas[epoch // 160]`): each iteration picks from its own collection,
        the loop walks no rows of one."""
        if not isinstance(coll, cst.Name):
            return False
        sem = self.ctx.semantic
        defs = sem.defs(coll)
        return bool(defs) and any(d.node is not None and dataflow.within(sem, d.node, loop) for d in defs)

    def _one_integer(self, index: cst.BaseExpression, loops: list) -> bool:
        """Whether `index` is one integer, so that `x[index]` selects one row: a number, a
        0-d tensor or array; when the model does not know, only the counter of one of
        `loops` (`for i in range(...)`, `enumerate`'s count). An array, a list or a mask
        selects many rows, and an unknown index is not taken for a row."""
        value = self.ctx.semantic.value(index)
        if isinstance(index, cst.Integer) or value.kind is Kind.NUMBER:
            return True
        if value.kind in (Kind.TENSOR, Kind.ARRAY) and value.rank is not None:
            return value.rank == 0
        if value.kind is not Kind.UNKNOWN or not isinstance(index, cst.Name):
            return False
        defs = self.ctx.semantic.defs(index)
        return bool(defs) and all(
            d.kind in ("for", "comp") and self._loop_of(d) in loops and self._counts(d.value, list(d.path))
            for d in defs)

    def _counts(self, iterable: cst.BaseExpression, path: list[int]) -> bool:
        """Whether a loop target at unpacking `path` is a counter: an element of `range(...)`
        or `enumerate`'s count, through pass-through wrappers (`tqdm`, ...)."""
        sem = self.ctx.semantic
        node = iterable
        while isinstance(node, cst.Call):
            func = node.func
            if isinstance(func, cst.Name) and sem.defs(func):
                return False  # the file's own function shadows the builtin
            name = sem.qualname(func) or dotted_name(func) or ""
            args = [a.value for a in node.args if a.keyword is None and not a.star]
            if name == "range":
                return not path
            if name == "enumerate" and args:
                return path == [0]
            if name not in _PASS_THROUGH or not args:
                return False
            node = args[0]
        return False

    # -- the fix -------------------------------------------------------------------------
    def hoist_fix(self, call: cst.Call, moved: cst.BaseExpression):
        """(node to replace, replacement) where the loop is a plain per-row copy of a host
        tensor, else None. See the docstring's "Fix safety" for what is offered."""
        ctx = self.ctx
        sem = ctx.semantic
        if not isinstance(call.func, cst.Attribute) or call.func.attr.value not in ("to", "cuda"):
            return None
        parent = ctx.parent(call)
        if isinstance(parent, cst.ListComp) and parent.elt is call:
            loop = parent
            clause = loop.for_in
            if clause.inner_for_in is not None or clause.ifs or clause.asynchronous is not None:
                return None
            target, iterable = clause.target, clause.iter
        else:
            loop = self._append_loop(call)
            if loop is None:
                return None
            target, iterable = loop.target, loop.iter
        if not isinstance(target, cst.Name):
            return None
        coll = self._rows_of(target.value, iterable, moved)
        if coll is None or target.value in names_in(coll):
            return None
        value = sem.value(coll)
        if value.kind is not Kind.TENSOR or value.place is not Place.CPU:
            return None  # numpy arrays, lists, datasets: not one tensor (see the docs)
        if not hoistable_args(call, {target.value}):
            return None
        batched = call.with_changes(func=call.func.with_changes(value=coll))
        if isinstance(loop, cst.For):
            append = ctx.parent(ctx.parent(call))
            assert isinstance(append, cst.Call) and isinstance(append.func, cst.Attribute)
            if target.value in names_in(append.func.value):
                return None
            if _names_outside(ctx.scope(loop), loop, {target.value}):
                return None  # the loop variable is read (or bound) elsewhere: it would be unbound
            extend = append.with_changes(
                func=append.func.with_changes(attr=cst.Name("extend")),
                args=[cst.Arg(batched)],
            )
            return loop, reindent(ctx, call, extend)
        stack = self._stack_of(loop)
        if stack is not None:
            return stack, reindent(ctx, call, batched)
        if ctx.bindings_of("list", loop):
            return None  # `list` is rebound here
        return loop, reindent(ctx, call, cst.Call(func=cst.Name("list"), args=[cst.Arg(batched)]))

    def _append_loop(self, call: cst.Call) -> Optional[cst.For]:
        """The `for` loop whose whole body is `out.append(<call>)`, with `out` a list."""
        ctx = self.ctx
        arg = ctx.parent(call)
        append = ctx.parent(arg) if isinstance(arg, cst.Arg) else None
        if not (
            isinstance(append, cst.Call)
            and len(append.args) == 1
            and append.args[0] is arg
            and arg.keyword is None
            and not arg.star
            and isinstance(append.func, cst.Attribute)
            and append.func.attr.value == "append"
            and isinstance(append.func.value, cst.Name)
        ):
            return None
        expr = ctx.parent(append)
        line = ctx.parent(expr) if isinstance(expr, cst.Expr) else None
        if not isinstance(line, cst.SimpleStatementLine) or len(line.body) != 1 or line.leading_lines:
            return None
        block = ctx.parent(line)
        if not isinstance(block, cst.IndentedBlock) or len(block.body) != 1:
            return None
        if block.header.comment is not None:
            return None  # the header's comment lies inside the replaced span
        loop = ctx.parent(block)
        if not isinstance(loop, cst.For) or loop.orelse is not None or loop.asynchronous is not None:
            return None
        defs = ctx.semantic.defs(append.func.value)
        if not defs or not all(self._list_binding(d) for d in defs):
            return None
        return loop

    def _list_binding(self, d: Def) -> bool:
        """`out = []`, `out = [...]`, `out = list(...)` (with the builtin `list`)."""
        if d.kind not in ("assign", "annassign") or d.value is None or d.path:
            return False
        value = d.value
        if isinstance(value, (cst.List, cst.ListComp)):
            return True
        return (
            isinstance(value, cst.Call)
            and isinstance(value.func, cst.Name)
            and value.func.value == "list"
            and not self.ctx.semantic.defs(value.func)
        )

    def _rows_of(self, name: str, iterable: cst.BaseExpression, moved: cst.BaseExpression):
        """The tensor `x` when the loop walks its rows and moves each one whole:
        `for row in x: row.to(d)`, `for i in range(len(x)): x[i].to(d)`."""
        if isinstance(moved, cst.Name) and moved.value == name and not moved.lpar:
            return iterable if plain_reference(iterable) else None
        if not (
            isinstance(moved, cst.Subscript)
            and plain_reference(moved.value)
            and len(moved.slice) == 1
            and isinstance(moved.slice[0].slice, cst.Index)
            and moved.slice[0].slice.star is None
            and isinstance(moved.slice[0].slice.value, cst.Name)
            and moved.slice[0].slice.value.value == name
        ):
            return None
        if not (
            isinstance(iterable, cst.Call)
            and isinstance(iterable.func, cst.Name)
            and iterable.func.value == "range"
            and len(iterable.args) == 1
            and iterable.args[0].keyword is None
            and not iterable.args[0].star
        ):
            return None
        counted = _row_count_of(iterable.args[0].value)
        if counted is None or not _same_expr(counted, moved.value):
            return None
        if self.ctx.bindings_of("range", iterable) or self.ctx.bindings_of("len", iterable):
            return None
        return moved.value

    def _stack_of(self, comp: cst.ListComp) -> Optional[cst.Call]:
        """`torch.stack(<comp>)` (or with `dim=0`) around the comprehension, else None."""
        ctx = self.ctx
        arg = ctx.parent(comp)
        stack = ctx.parent(arg) if isinstance(arg, cst.Arg) else None
        if not isinstance(stack, cst.Call) or ctx.semantic.qualname(stack.func) != "torch.stack":
            return None
        if not stack.args or stack.args[0] is not arg or arg.keyword is not None or arg.star:
            return None
        for extra in stack.args[1:]:
            keyword = extra.keyword.value if extra.keyword is not None else "dim"
            if extra.star or keyword != "dim":
                return None
            if not (isinstance(extra.value, cst.Integer) and extra.value.value == "0"):
                return None
        if len(stack.args) > 2:
            return None
        return stack

    # -- devicelint confirm ------------------------------------------------------------
    # A per-row loop is worth flagging when one batched copy would be this much faster.
    BATCH_GAIN = 2.0

    @staticmethod
    def probe(run: ProbeRun, rec: LineRecord) -> dict:
        copies = rec.copies.get("h2d")
        if copies is None:
            return run.base("refuted", "the line ran but made no host-to-device copy (a dtype "
                            "target, or data already on the device)", count=0)
        count, nbytes = copies.count, copies.bytes
        measured = run.copy_ms(copies, "h2d")
        pageable = run.time_copy(nbytes, pinned=False)
        pinned = run.time_copy(nbytes, pinned=True)
        gain = measured / pageable if pageable > 0 else 0.0
        figures = dict(count=count, bytes=nbytes, measured_ms=round(measured, 4),
                       counterfactual_ms=round(pageable, 4),
                       counterfactual_pinned_ms=round(pinned, 4), speedup=round(gain, 4))
        if count < 2:
            return run.base("refuted", "one copy per run of the line: nothing to batch", **figures)
        if copies.distinct < 2:
            return run.base("refuted", f"the same host data copied {count} times: hoist the "
                            "copy out of the loop (not a per-row copy, nothing to batch)",
                            **figures)
        if gain < TransferInLoop.BATCH_GAIN:
            return run.base("refuted", f"{count} copies of {nbytes // count:,} B each; one "
                            f"batched copy would be only {gain:.1f}x faster", **figures)
        return run.base(
            "confirmed",
            f"{count:,} host-to-device copies, {nbytes:,} B, {measured:.3f} ms; one batched "
            f"copy {pageable:.3f} ms pageable, {pinned:.3f} ms pinned ({gain:.0f}x)",
            **figures)

    runtime = RuntimeSpec(probe=probe, watch=(Watch.MOVES, Watch.FACTORIES), whole_file=True,
                          finds=(Find.ROWS,))


def _same_expr(a: cst.CSTNode, b: cst.CSTNode) -> bool:
    return plain_reference(a) and dotted_name(a) is not None and dotted_name(a) == dotted_name(b)


def _row_count_of(node: cst.BaseExpression) -> Optional[cst.BaseExpression]:
    """`x` for `len(x)`, `x.shape[0]`, `x.size(0)`: the number of rows of a tensor."""
    if isinstance(node, cst.Call):
        positional = [a for a in node.args if not a.keyword and not a.star]
        if len(positional) != len(node.args) or len(positional) > 1:
            return None
        if isinstance(node.func, cst.Name) and node.func.value == "len" and len(positional) == 1:
            return positional[0].value
        if (
            isinstance(node.func, cst.Attribute)
            and node.func.attr.value == "size"
            and len(positional) == 1
            and isinstance(positional[0].value, cst.Integer)
            and positional[0].value.value == "0"
        ):
            return node.func.value
        return None
    if (
        isinstance(node, cst.Subscript)
        and isinstance(node.value, cst.Attribute)
        and node.value.attr.value == "shape"
        and len(node.slice) == 1
        and isinstance(node.slice[0].slice, cst.Index)
        and isinstance(node.slice[0].slice.value, cst.Integer)
        and node.slice[0].slice.value.value == "0"
    ):
        return node.value.value
    return None


def _subtree(nodes) -> list[cst.CSTNode]:
    """Every node under the subscript elements `nodes`, themselves included."""
    from devicelint.context import children

    found: list[cst.CSTNode] = []
    stack: list[cst.CSTNode] = list(nodes)
    while stack:
        current = stack.pop()
        found.append(current)
        stack.extend(children(current))
    return found


def _names_outside(scope: cst.CSTNode, inside: cst.CSTNode, names: set[str]) -> bool:
    """Whether `scope` reads or binds one of `names` anywhere outside `inside`. A
    comprehension whose first clause binds the name has its own: only its first iterable
    is read in `scope`."""
    from devicelint.context import children

    stack: list[cst.CSTNode] = [scope]
    while stack:
        current = stack.pop()
        if current is inside:
            continue
        if isinstance(current, cst.Name) and current.value in names:
            return True
        if isinstance(current, COMPREHENSIONS) and {
            t.value for t, _ in target_parts(current.for_in.target) if isinstance(t, cst.Name)
        } & names:
            stack.append(current.for_in.iter)
            continue
        stack.extend(children(current))
    return False

from __future__ import annotations

from typing import Optional

import libcst as cst

from devicelint.gate import VALUE, api_names
from devicelint.builders import plain_reference, reindent, with_keyword_args
from devicelint.rule import Rule
from devicelint.runtime_spec import Family, LineRecord, ProbeRun, RuntimeSpec, Watch
from devicelint.semantic import Kind, Place
from devicelint.semantic import dataflow
from devicelint.semantic.model import call_arg, int_value, keyword_arg, positional_args

# Factories whose values come from the CPU's generator: filled on the device they differ.
RANDOM_FACTORIES = {f"torch.{name}" for name in ("rand", "randn", "randint", "randperm")}
RANDOM_OPS = {"normal_", "uniform_", "random_", "exponential_", "bernoulli_"}
# Ops on the way that give the same values on the device: conversions, shapes, fills.
EXACT_OPS = {"float", "half", "double", "bfloat16", "long", "int", "short", "bool", "byte", "char",
             "type", "to", "view", "reshape", "unsqueeze", "squeeze", "repeat", "expand", "t",
             "transpose", "permute", "flatten", "contiguous", "clone", "detach", "narrow", "tril",
             "triu", "flip", "fill_", "zero_", "unsqueeze_", "squeeze_", "t_", "transpose_",
             "compare"}
# `.to()` keywords the fix may drop: a fresh device fill has no host copy to overlap.
DROPPABLE = {"non_blocking"}


def _may_return_fill(symbol, view) -> bool:
    """A function of another local module that calls a factory itself (the gate's look;
    `dataflow.foreign_fill` decides)."""
    if symbol.kind != "function":
        return False
    factories = api_names(places=("factory",))
    return any(q.rsplit(".", 1)[-1] in factories or q.endswith("Tensor") for q in view.calls_of(symbol))


class CreateThenMove(Rule):
    """## What it does
    Flags a tensor filled on the CPU by a factory and then copied to the device: a factory
    (`torch.zeros`, `ones`, `empty`, `full`, `arange`, `linspace`, `logspace`, `eye`, `rand`,
    `randn`, `randint`, `randperm`, and `torch.Tensor(n, m)` with sizes) called without
    `device=`, moved with `.to(device)` or `.cuda()`:
    - directly: `torch.zeros(n, d).to(dev)`;
    - through conversions, shape changes, fills and arithmetic with numbers on the way:
      `torch.ones(1, 1).fill_(v).type(torch.long).to(dev)`, `torch.arange(n).unsqueeze(0)
      .repeat(b, 1).to(dev)`, `torch.exp(-k * torch.arange(n) / n).to(dev)`,
      `(ids.unsqueeze(0) == ids.unsqueeze(1)).float().to(dev)` (a fill compared with a fill),
      `torch.stack([torch.zeros(n) for _ in range(k)]).to(dev)`, a shape taken from another
      tensor (`torch.rand(b, 1).expand_as(x).to(dev)`), a CPU legacy type
      (`.type(torch.ByteTensor)`), a legacy constructor a fill overwrites
      (`torch.LongTensor(b).fill_(0).to(dev)`) or given a `range` (an arange:
      `torch.LongTensor(range(n)).to(dev)`, no fix), a divisor also given to the factory as a size
      (`torch.arange(0, half) / half`), the parts of an unpacked fill (`yv, xv =
      torch.meshgrid(...)`);
    - moved by `.type(T)` with a CUDA legacy type (`Variable(torch.zeros(n)).type(FloatTensor)`
      with `FloatTensor = torch.cuda.FloatTensor` on the GPU path): no fix;
    - moved by `.type_as(t)` of a tensor `t` on the device, which converts to t's device
      too (`torch.empty(1, 1).fill_(v).type_as(src).to(dev)`: the copy is the `.type_as`,
      the `.to` after it does nothing); `.type_as` of a host tensor is a conversion. No fix;
    - through a name: `z = torch.randn(n, d)` then `z = z.to(dev)` on a later line, when
      every binding reaching the move is such a fill (one, or one per arm of an if/else:
      `t = torch.ones(n) * 0.9` / `t = torch.ones(n)`) and nothing reads the CPU tensor
      before the move (nor after it, unless the move rebinds the name, also through
      `Variable(...)` in a tuple assignment); reads of its metadata or identity
      (`features is None` at the top of the loop that fills it) do not count. It is reported
      at the move, naming the factories' lines;
    - through an attribute of the instance in a method: `self.y_real_ = torch.ones(b, 1)` then
      `self.y_real_ = self.y_real_.cuda()` (also in tuple assignments: `self.a, self.b =
      self.a.cuda(), self.b.cuda()`), when the store is the one of the method that always
      runs before the move, nothing between them may store the attribute again (a call of
      the class's methods, or of anything given `self`) or reads it, and the move stores the
      attribute again; reported at the move, naming the factory's line; no fix;
    - through a function of the file that returns such a fill (`mask = causal_mask(t)` then
      `mask.to(dev)`, with `def causal_mask(n): return torch.triu(torch.ones(n, n)) == 1`),
      when nothing in it reads the fill but the way to its `return`. Index assignments of
      numbers (`out[rows, labels.long()] = 1`, StarGAN's `label2onehot`) write the fill in
      place and keep it one, in a helper or before a move on a later line;
    - handed to a function of the file that gives it back copied to the device
      (`cuda_variable(torch.zeros(n))` with `def cuda_variable(t): if
      torch.cuda.is_available(): return Variable(t.cuda())` / `return Variable(t)`;
      `images, z = f(images), f(z)` after `z = torch.randn(...)`), when that function
      reads the parameter nowhere else (`dataflow.returned_move`): reported at the call,
      naming the copy's line; no fix;
    - returned by a function of another local module (through the project index) and
      moved straight from its call (`causal_mask(n).to(dev)`, with `causal_mask` of
      `dataset.py` returning `torch.triu(torch.ones((1, n, n)), diagonal=1) == 0`), when
      that function calls a factory itself and nothing in it reads the fill but the way to
      its `return` (`dataflow.foreign_fill`): reported at the move, naming the factory's
      file and line; no fix.

    It decides from the values (what the data is computed from, where the target device
    points), not from names; a device the code does not define (a parameter called `device`
    with no call site or annotation) is taken for one and the message says it rests on the
    name. It stays silent on `torch.tensor(data)` / `torch.as_tensor(data)` (host data must
    be copied either way), on data mixed in from other tensors (`torch.zeros(n) + bias`),
    on tensors the code reads on the CPU before the move, on moves to the CPU, dtype-only
    `.to(torch.float16)`, `.to(other_tensor)`, factories given `device=`, on a binding made
    before a loop and moved inside it (DL016's: a copy repeated every iteration), and on
    code that runs only without a GPU (`if not use_cuda:`), and on a fill written element
    by element by Python loops before its move (`mask[i, j] = 1` for every `i, j`: on the
    device each write would be a kernel launch, so the host fill is the right choice).

    ## Why is this bad?
    The tensor is first allocated and filled by the CPU, then copied over PCIe, then the
    CPU copy is thrown away. With `device=` the accelerator allocates and fills it in one
    kernel and the host does nothing. Measured on an H200 (torch 2.11): a 4096x4096
    `zeros` took 16.7 ms via the CPU vs 17 us with `device=` (~960x), `randn` 133 ms vs
    44 us, `arange(10**6)` 913 us vs 14 us; even a 64-element `zeros` costs 17 us vs 12 us.
    Run `devicelint confirm` on a GPU machine to measure it in your code.

    `torch.tensor(data).to(dev)` and `torch.as_tensor(data).to(dev)` are deliberately not
    flagged: the data lives in host memory either way, and `torch.tensor(data,
    device=dev)` itself builds the tensor on the CPU and copies it; measured on the same
    H200 both spellings cost the same (31 vs 32 us for 64 floats, 18.7 vs 18.9 ms for
    100,000).

    ## Example
    ```python
    mask = torch.ones(seq_len, seq_len).to(device)
    noise = torch.randn(batch, dim).cuda()
    ys = torch.ones(1, 1).fill_(start).type(torch.long).to(device)
    z = torch.randn(n, latent)
    z = z.to(device)
    ```

    ## Use instead
    ```python
    mask = torch.ones(seq_len, seq_len, device=device)
    noise = torch.randn(batch, dim, device="cuda")
    ys = torch.ones(1, 1, device=device).fill_(start).type(torch.long)
    z = torch.randn(n, latent, device=device)
    ```

    ## Fix safety
    The fix moves the target into the factory: `.to(dev)` becomes `device=dev`, `.cuda()`
    becomes `device="cuda"` and `.cuda(1)` `device="cuda:1"`; in a chain the `.to()` is
    dropped and the ops after the factory run on the device. `non_blocking=True` is
    dropped: a fill on the device has no host copy to overlap, and the new tensor is
    ready in stream order either way. The fix is safe for the deterministic factories
    when `.to` only names a device and the ops on the way are conversions, shape changes
    and fills (`.long()`, `.view()`, `.fill_(v)`), which give the same values on the
    device. It is unsafe when:
    - the factory or an op on the way is random (`rand`, `randn`, `randint`, `randperm`,
      `.normal_()`, `.random_()`...): the values then come from the device's generator
      instead of the CPU's, so seeded runs produce different numbers (with `generator=`
      there is no fix: a CPU generator cannot drive a device fill);
    - arithmetic or math runs on the way (`torch.exp`, `* k`): the device's kernels may
      round differently;
    - `.to` also converts the dtype (`.to(dev, torch.float16)`), which then happens in the
      factory and can round differently (no fix when ops follow the factory);
    - the factory passes `requires_grad=True` (or the chain calls `.requires_grad_()`):
      the moved tensor is a non-leaf whose `.grad` stays None, and the fix makes it a leaf
      (usually what was meant, but a change);
    - `.cuda(x)` names a device through a variable.
    For a factory bound to a name and moved later, the fix adds `device=` to the factory
    and leaves the move (now a no-op); it is offered only when the device is a plain name
    or attribute bound before the factory (or a literal), and when no other path reads the
    binding. There is no fix with `copy=`/`memory_format=`, `pin_memory=` or `out=`
    arguments, nor for several factories combined (`torch.cat`, `torch.stack`).
    """

    code = "DL007"
    precision = "high"  # docs/audit.md: at least 20 judged cases, at least 95% right
    name = "create-then-move"
    summary = "Tensor created on the CPU and then moved: pass `device=` to the factory"
    message = "`{factory}(...)` creates a CPU tensor that is then copied to the device"
    hint = "pass `device=` to the factory"
    later_message = (
        "`{factory}(...)` at {line} creates a CPU tensor copied to the device "
        "here"
    )
    joined_message = (
        "`{factories}` at {lines} create the CPU tensor copied to the device here"
    )
    helper_message = (
        "`{call}()` creates a CPU tensor (`{factory}`, {line}) copied to the device "
        "here"
    )
    handed_message = (
        "`{factory}(...)` creates a CPU tensor that `{call}()` copies to the device "
        "({line})"
    )
    hint_message = " (`{target}` is taken for a device from its name only)"
    tokens = (".to(", ".cuda(", ".type(", ".type_as(")

    @staticmethod
    def gate(facts) -> bool:
        """Reported at a `.to(...)`/`.cuda()`/`.type(T)` whose result is used (or at a call
        of the file's function that returns such a copy of its parameter), of a fill made by
        a factory the file calls (`dataflow.fresh_fill`: the API table's size factories,
        `torch.Tensor(b, d)` and the other legacy types), or of a function of another local
        module that calls one (`dataflow.foreign_fill`) (devicelint/gate.py)."""
        if not facts.moves(VALUE) and not facts.calls_method(("type", "type_as"), VALUE):
            return False  # `_target`: a move to the device (not a dtype, the CPU, None)
        called = facts.called_names()
        if called & api_names(places=("factory",)) or any(n.endswith("Tensor") for n in called):
            return True
        # The fill of a function of another local module (`dataflow.foreign_fill`: one that
        # calls a factory itself, by the index's facts), moved straight from its call.
        return facts.calls_foreign(_may_return_fill, VALUE)
    fixable = True

    def leave_Call(self, node: cst.Call) -> None:
        func = node.func
        if type(func) is not cst.Attribute or func.attr.value not in ("to", "cuda", "type", "type_as"):
            self._check_handed_fill(node)
            return
        if any(arg.star for arg in node.args):
            return
        target = self._target(node)
        if target is None:
            return
        device, hint = target
        sem = self.ctx.semantic
        if type(self.ctx.parent(node)) is cst.Expr or not sem.on_gpu_path(node):
            return  # a discarded move (`x.to(dev)` as a statement) is DL006's
        suffix = self.hint_message.format(target=self.ctx.code(device).strip()) if hint else ""
        fill = dataflow.fresh_fill(sem, func.value, attributes=True)
        if fill is None:
            self._check_foreign_fill(node, func.value, suffix)
            return
        if not self._only_use(fill, node):
            return
        factory = fill.factories[0]
        label = self.ctx.qualname(factory.func) or self.ctx.code(factory.func)
        line = self.ctx.position(factory)[0]
        # Several bindings reaching the move (the arms of an if/else): name each factory.
        labels = list(dict.fromkeys(self.ctx.qualname(f.func) or self.ctx.code(f.func) for f in fill.factories))
        lines = sorted({self.ctx.position(f)[0] for f in fill.factories})
        if fill.calls:
            callee = self.ctx.code(fill.calls[0].func).strip()
            message = self.helper_message.format(call=callee, factory=label, line=self.ctx.line_ref(line)) + suffix
        elif len({id(name) for name, _ in fill.through}) < len(fill.through) and len(lines) > 1:
            message = self.joined_message.format(
                factories="` / `".join(f"{name}(...)" for name in labels),
                lines=self.ctx.lines_ref(lines)) + suffix
        elif (fill.through or fill.attributes) and line != self.ctx.position(node)[0]:
            message = self.later_message.format(factory=label, line=self.ctx.line_ref(line)) + suffix
        else:
            message = self.message.format(factory=label) + suffix
        fix = self._fix(node, fill)
        if fix is None:
            self.report(node, message)
            return
        replacement, replace, safe = fix
        self.report(node, message, replacement=reindent(self.ctx, replace, replacement),
                    replace=replace, safe=safe,
                    fix_description="Create the tensor on the device with `device=`")

    def _check_foreign_fill(self, move: cst.Call, receiver: cst.BaseExpression, suffix: str) -> None:
        """The fill of a function of another local module, moved straight from its call
        (`causal_mask(n).type_as(src_mask)`, `causal_mask` of dataset.py returning a
        `torch.ones` fill): reported at the move, naming the factory's file and line; no fix
        (the factory is in the other file, which may be called without a device)."""
        found = dataflow.foreign_fill(self.ctx.semantic, receiver)
        if found is None:
            return
        path, line, column, label = found
        callee = self.ctx.code(receiver.func).strip()  # type: ignore[attr-defined]
        self.report(move, self.helper_message.format(call=callee, factory=label, line=f"{path}:{line}") + suffix,
                    related=[((path, line, column), f"`{label}(...)` fills the tensor on the host")])

    def _check_handed_fill(self, call: cst.Call) -> None:
        """A fill handed to a function of the file that gives it back copied to the device
        (`cuda_variable(torch.zeros(n))`, `images, z = f(images), f(z)` after `z =
        torch.randn(...)`): reported at the call, naming the copy."""
        if type(call.func) not in (cst.Name, cst.Attribute) or not call.args \
                or type(self.ctx.parent(call)) is cst.Expr:
            return
        sem = self.ctx.semantic
        found = sem.syncs.callee(call)
        if found is None:
            return
        function, bound = found
        moved = dataflow.returned_move(sem, function)
        if moved is None:
            return
        param, copy = moved
        args = bound.get(param, ())
        if len(args) != 1 or not sem.on_gpu_path(call):
            return
        fill = dataflow.fresh_fill(sem, args[0])
        if fill is None or not self._only_use(fill, call):
            return
        factory = fill.factories[0]
        label = self.ctx.qualname(factory.func) or self.ctx.code(factory.func)
        self.report(call, self.handed_message.format(
            factory=label, call=self.ctx.code(call.func).strip(), line=self.ctx.line_ref(copy)))

    # -- what is moved where -------------------------------------------------------------
    def _target(self, node: cst.Call) -> Optional[tuple[cst.CSTNode, bool]]:
        """(the device argument, whether it rests on a name) when the call moves to the
        device; None for moves to the CPU, dtype-only `.to`, `.to(other_tensor)`."""
        sem = self.ctx.semantic
        if node.func.attr.value == "cuda":  # type: ignore[union-attr]
            return node, False
        if node.func.attr.value == "type":  # type: ignore[union-attr]
            # `.type(torch.cuda.FloatTensor)` (or a name bound to it on the GPU path) copies.
            kind = call_arg(node, 0, "dtype")
            place, hint = sem.tensor_type_place(kind)
            return (kind, hint) if place is Place.DEVICE and len(node.args) == 1 else None
        if node.func.attr.value == "type_as":  # type: ignore[union-attr]
            # `.type_as(t)` converts to t's type, device included: of a tensor on the device
            # it is a copy there (`.to(t.device)` with t's dtype); a following `.to(dev)` is
            # then a no-op, and the fill does not reach it (`dataflow.fresh_fill`).
            other = call_arg(node, 0, "other")
            if other is None or len(node.args) != 1:
                return None
            value = sem.value(other)
            return (other, value.hint) if value.kind is Kind.TENSOR and value.place is Place.DEVICE else None
        device = keyword_arg(node, "device")
        if device is None:
            first = positional_args(node)
            device = first[0] if first else None
        if device is None or sem.value(device).kind is Kind.TENSOR:
            return None
        place, hint = sem.device_place(device)
        if place is not Place.DEVICE:
            return None
        return device, hint

    def _only_use(self, fill: dataflow.Fill, move: cst.Call) -> bool:
        """Every name followed to its binding is read on the CPU by nothing but the chain
        to this move, its binding runs in every loop the move runs in (else the copy is
        repeated: DL016's), and nothing reads it after the move unless the move rebinds
        that name (then what reads it later comes by another path)."""
        sem = self.ctx.semantic
        ctx = self.ctx
        loops = sem.loops.enclosing_loops(move)
        followed = {id(name) for name, _ in fill.through}
        at = ctx.order(move)
        here = sem.scope_of(move)
        for read, target in fill.attributes:
            if not all(dataflow.within(sem, target, loop) for loop in loops) \
                    or not self._attribute_only_use(read, target, move):
                return False
        for name, d in fill.through:
            if any(self._written_by_python_loop(use, d) for use in dataflow.uses(sem, d)):
                return False
            if d.scope is not here:
                # Inside a function the move calls: nothing there may read the fill but
                # the way to its `return`.
                if any(id(use) not in followed and not dataflow.number_store(sem, use)
                       for use in dataflow.uses(sem, d)):
                    return False
                continue
            if not all(dataflow.within(sem, d.node, loop) for loop in loops):
                return False
            for use in dataflow.uses(sem, d):
                if id(use) in followed or dataflow.number_store(sem, use) \
                        or dataflow.reads_only_metadata(sem, use):
                    continue  # `features is None`, `x.shape`: no element read on the host
                if ctx.order(use) < at or not self._rebinds(move, name.value):
                    return False
        return True

    def _attribute_only_use(self, read: cst.Attribute, target: cst.Attribute, move: cst.Call) -> bool:
        """`self.x = torch.ones(n)` ... `self.x = self.x.cuda()`: between the store and the
        move nothing of the method reads `self.x` but the move's chain (index assignments of
        numbers write the fill in place, outside Python loops; metadata reads do not count),
        and the move's statement stores `self.x` again (also at the same position of a
        tuple), so what the class reads later is the copy."""
        sem = self.ctx.semantic
        order = self.ctx.order
        start, at = order(target), order(move)
        function = sem.scope_of(read)
        statement = self.ctx.parent(move)
        while statement is not None and not isinstance(statement, (cst.SimpleStatementLine, cst.BaseCompoundStatement)):
            statement = self.ctx.parent(statement)
        for node in self.ctx.descendants(function, cst.Attribute, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            if node is read or node is target or not start < order(node) < at \
                    or node.attr.value != read.attr.value or not isinstance(node.value, cst.Name) \
                    or node.value.value != read.value.value:
                continue
            if statement is not None and dataflow.within(sem, node, statement) and self._stored(node):
                continue  # the move's own statement stores `self.x` again
            if dataflow.number_store(sem, node) and not any(
                    not dataflow.within(sem, target, loop) for loop in sem.loops.enclosing_loops(node)):
                continue
            if dataflow.is_metadata_read(sem, self.ctx.parent(node)):
                continue
            return False
        return self._rebinds_attribute(move, read)

    def _stored(self, node: cst.CSTNode) -> bool:
        """`node` is (a part of) an assignment's target."""
        current = self.ctx.parent(node)
        while isinstance(current, (cst.Element, cst.Tuple, cst.List)):
            current = self.ctx.parent(current)
        return isinstance(current, cst.AssignTarget)

    def _rebinds_attribute(self, move: cst.Call, read: cst.Attribute) -> bool:
        """`self.x = <chain>.cuda()`, or `self.x, self.y = self.x.cuda(), self.y.cuda()`."""
        targets, written = self._bound_to(move)
        return written == 1 and len(targets) == 1 and isinstance(targets[0], cst.Attribute) \
            and isinstance(targets[0].value, cst.Name) and targets[0].value.value == read.value.value \
            and targets[0].attr.value == read.attr.value

    def _bound_to(self, value: cst.BaseExpression) -> tuple[list, int]:
        """What the statement `value` stands in binds it to: the targets of `t = value`, or
        the elements at its position of `a, b = value, other` (tuple targets of the same
        length), and how many targets the assignment writes (`a = b = value`: 2)."""
        parent = self.ctx.parent(value)
        if isinstance(parent, cst.Element):
            display = self.ctx.parent(parent)
            assign = self.ctx.parent(display)
            if not (isinstance(display, cst.Tuple) and isinstance(assign, cst.Assign) and assign.value is display):
                return [], 0
            index = next(i for i, e in enumerate(display.elements) if e is parent)
            return [t.target.elements[index].value for t in assign.targets
                    if isinstance(t.target, cst.Tuple) and len(t.target.elements) == len(display.elements)], \
                len(assign.targets)
        if isinstance(parent, cst.Assign) and parent.value is value:
            return [t.target for t in parent.targets], len(parent.targets)
        return [], 0

    def _written_by_python_loop(self, use: cst.Name, d) -> bool:
        """`mask[i, j] = 1` in a Python loop the binding is outside of: the fill is written
        element by element, where a device tensor would take one kernel launch per write,
        so filling on the host and copying once is the right choice."""
        sem = self.ctx.semantic
        return dataflow.number_store(sem, use) and any(
            not dataflow.within(sem, d.node, loop) for loop in sem.loops.enclosing_loops(use))

    def _rebinds(self, move: cst.Call, name: str) -> bool:
        """`name = <chain>.to(dev)`: the move's statement binds `name` again (also at the
        same position of a tuple: `images, z = f(images), f(z)`), also through identity
        wrappers (`images, z = Variable(images.cuda()), Variable(z.cuda())`)."""
        sem = self.ctx.semantic
        parent = self.ctx.parent(move)
        while isinstance(parent, cst.Arg) and len(self.ctx.parent(parent).args) == 1:
            wrapper = self.ctx.parent(parent)
            qual = sem.qualname(wrapper.func)
            spec = sem.api.function(qual) if qual is not None else None
            if spec is None or spec.result != "same":
                break
            move, parent = wrapper, self.ctx.parent(wrapper)
        return any(isinstance(t, cst.Name) and t.value == name for t in self._bound_to(move)[0])

    # -- the fix -------------------------------------------------------------------------
    def _fix(self, node: cst.Call, fill: dataflow.Fill):
        """(replacement, node it replaces, safe) or None."""
        if len(fill.factories) != 1 or fill.calls or fill.attributes or node.func.attr.value in ("type", "type_as"):
            return None
        factory = fill.factories[0]
        qual = self.ctx.qualname(factory.func)
        if qual is None or not qual.startswith("torch.") or qual.rsplit(".", 1)[-1].endswith("Tensor"):
            return None  # `torch.Tensor(n, m)` takes no `device=`
        if "type" in fill.ops and self._converts_to_tensor_type(node, fill):
            return None  # `.type(torch.ByteTensor)` after a device fill would copy it back
        moved = self._device_args(node, chain=bool(fill.ops))
        if moved is None:
            return None
        device, dtype, safe = moved
        if any(arg.keyword is not None and arg.keyword.value in ("pin_memory", "generator", "out")
               for arg in factory.args):
            return None
        if dtype is not None and keyword_arg(factory, "dtype") is not None:
            return None
        requires_grad = keyword_arg(factory, "requires_grad")
        if requires_grad is not None and not (
                isinstance(requires_grad, cst.Name) and requires_grad.value == "False"):
            safe = False
        if qual in RANDOM_FACTORIES or any(op in RANDOM_OPS for op in fill.ops):
            safe = False
        if any(op not in EXACT_OPS for op in fill.ops):
            safe = False  # math on the device may round differently
        keywords = [("device", device)] + ([("dtype", dtype)] if dtype is not None else [])
        new_factory = with_keyword_args(factory, keywords)
        if not fill.through:
            receiver = node.func.value  # type: ignore[union-attr]
            replacement = receiver.deep_replace(factory, new_factory)
            # Keep the receiver's own parentheses: `(a * k).to(d).sum()` needs them.
            return replacement.with_changes(lpar=(*node.lpar, *replacement.lpar),
                                            rpar=(*replacement.rpar, *node.rpar)), node, safe
        if not self._device_ready_at(device, factory, node) or self._read_elsewhere(fill):
            return None
        return new_factory, factory, safe

    def _converts_to_tensor_type(self, move: cst.Call, fill: dataflow.Fill) -> bool:
        """Some `.type(T)` on the way names a legacy tensor type, not a dtype."""
        sem = self.ctx.semantic
        regions = [move.func.value] + [d.value for _, d in fill.through]  # type: ignore[union-attr]
        stack = list(regions)
        while stack:
            node = stack.pop()
            if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) \
                    and node.func.attr.value == "type" and node.args and not sem.is_dtype(node.args[0].value):
                return True
            stack.extend(sem.children(node))
        return False

    def _device_args(self, node: cst.Call, chain: bool):
        """(device expression, dtype expression or None, safe) for the factory, from the
        move's arguments; None where the move says more than a device."""
        safe = True
        if node.func.attr.value == "cuda":  # type: ignore[union-attr]
            target = call_arg(node, 0, "device")
            if any(a.value is not target and (a.keyword is None or a.keyword.value not in DROPPABLE)
                   for a in node.args):
                return None
            if target is None:
                return cst.SimpleString('"cuda"'), None, safe
            index = int_value(target)
            if index is not None:
                return cst.SimpleString(f'"cuda:{index}"'), None, safe
            return target, None, False
        device = keyword_arg(node, "device")
        positional = positional_args(node)
        dtype = keyword_arg(node, "dtype")
        if device is None:
            device, positional = positional[0], positional[1:]
        if positional:
            if len(positional) > 1 or dtype is not None:
                return None
            dtype = positional[0]
        for arg in node.args:
            if arg.keyword is not None and arg.keyword.value not in ("device", "dtype", *DROPPABLE):
                return None
        if dtype is not None:
            if chain:
                return None  # the conversion would move before the ops that follow
            safe = False
        return device, dtype, safe

    def _device_ready_at(self, device: cst.CSTNode, factory: cst.Call, move: cst.Call) -> bool:
        """The device expression, evaluated at the factory instead, reads the same bindings:
        a literal, or a plain name or attribute whose names are all bound before the
        factory and not again between the factory and the move."""
        if isinstance(device, cst.SimpleString):
            return True
        if not isinstance(device, cst.BaseExpression) or not plain_reference(device):
            return False
        sem = self.ctx.semantic
        start = self.ctx.order(factory)
        for name in dataflow.reads(sem, device):
            defs = sem.defs(name)
            if any(d.node is not None and self.ctx.order(d.node) >= start for d in defs):
                return False
        return True

    def _read_elsewhere(self, fill: dataflow.Fill) -> bool:
        """A name followed to the factory is read by something other than the chain (a
        path that skips the move): the fix would put that path's tensor on the device."""
        sem = self.ctx.semantic
        followed = {id(name) for name, _ in fill.through}
        return any(id(use) not in followed for _, d in fill.through for use in dataflow.uses(sem, d))

    # -- devicelint confirm ------------------------------------------------------------
    @staticmethod
    def probe(run: ProbeRun, rec: LineRecord) -> dict:
        copies = rec.copies.get("h2d")
        if copies is None:
            return run.base("refuted", "the line ran but made no host-to-device copy", count=0)
        count, nbytes = copies.count, copies.bytes
        measured = run.copy_ms(copies, "h2d")
        fill = run.time_fill(nbytes // count) * count
        return run.base("confirmed", f"{count} CPU-built tensor(s) copied to the GPU, "
                        f"{nbytes:,} B, {measured:.3f} ms; built on the device: {fill:.3f} ms",
                        count=count, bytes=nbytes, measured_ms=round(measured, 4),
                        counterfactual_ms=round(fill, 4))

    runtime = RuntimeSpec(probe=probe, watch=(Watch.MOVES, Watch.FACTORIES), covers=(Family.UPLOAD,))

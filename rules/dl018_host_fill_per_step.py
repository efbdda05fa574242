from __future__ import annotations

from typing import Optional

import libcst as cst

from devicelint.gate import VALUE, WITH_ARGS
from devicelint.rule import Rule
from devicelint.semantic import Kind, Place
from devicelint.semantic import dataflow, modules
from devicelint.semantic.model import keyword_arg, positional_args

# NumPy calls that make new host data from sizes and scalars alone (no input data).
NUMPY_FILLS = {f"numpy.{name}" for name in ("ones", "zeros", "full", "empty", "eye", "arange",
                                            "linspace", "identity")}
# What to call instead, on the device.
TORCH_FOR = {"normal": "torch.randn", "randn": "torch.randn", "standard_normal": "torch.randn",
             "uniform": "torch.rand", "rand": "torch.rand", "random": "torch.rand",
             "random_sample": "torch.rand", "randint": "torch.randint",
             "permutation": "torch.randperm", "ones": "torch.ones", "zeros": "torch.zeros",
             "full": "torch.full", "empty": "torch.empty", "eye": "torch.eye",
             "arange": "torch.arange", "linspace": "torch.linspace", "identity": "torch.eye"}

# Calls that make a host tensor of a NumPy array's data (a copy, or the same memory).
ARRAY_TENSORS = {"torch.from_numpy", "torch.tensor", "torch.as_tensor", "torch.asarray", "torch.Tensor",
                 "torch.FloatTensor", "torch.DoubleTensor", "torch.HalfTensor", "torch.LongTensor",
                 "torch.IntTensor", "torch.BoolTensor", "torch.ByteTensor"}
# Tensor methods on the way to the move that keep the drawn data (conversions, shapes).
KEEPING_METHODS = {"float", "double", "half", "bfloat16", "long", "int", "bool", "type", "to", "view",
                   "reshape", "unsqueeze", "squeeze", "contiguous", "t", "permute", "transpose",
                   "flatten", "clone", "detach", "requires_grad_", "unsqueeze_", "squeeze_"}

# torch's draws from given tensors (probabilities, rates, means): on the CPU generator when
# those tensors are on the host.
SAMPLING = {"torch.multinomial", "torch.bernoulli", "torch.poisson", "torch.normal"}


class HostFillPerStep(Rule):
    """## What it does
    Flags new data made on the host and copied to the device once per training step, where
    the device could make it itself:
    - a legacy CUDA tensor type called on a NumPy array that NumPy's generator or a NumPy
      fill just made: `torch.cuda.FloatTensor(np.random.normal(0, 1, (b, d)))`, or
      `Tensor(np.ones(shape))` with `Tensor = torch.cuda.FloatTensor if cuda else
      torch.FloatTensor` (the type the code uses with a GPU);
    - a tensor made of such an array and then moved: `z = np.random.uniform(-1, 1, (b, d))`,
      `z = torch.from_numpy(z).float()`, `z = z.cuda()` (also `torch.tensor(np.random...)`,
      `torch.FloatTensor(np.ones(...))`, `Variable(...)`, then `.to(device)`), when the
      array is made in the same step as the move (in the step loop, or in the function
      the step calls); reported at the move;
    - a draw by torch's CPU generator from host data the device could hold for good, then
      moved: `words = torch.multinomial(dist, k)`, `words.to(device)` (also `bernoulli`,
      `poisson`, `normal` of tensors), where `dist` is a fresh fill (`torch.ones(n)`) or the
      same data every step (`self.dist` bound in `__init__` alone, a tensor the loop does
      not change): keep it on the device (a buffer) and the draw runs there;
    - a device tensor refilled from a new host tensor: `noise.data.copy_(torch.randn(b, d))`;
      also a buffer or parameter a module class of the file registers, refilled in one of
      its methods (`self.eps.copy_(self._noise(n))`, the noise drawn by `torch.randn` in a
      helper of the class) when a step loop runs that method on a module moved to the
      device (`model.reset_noise()` of a moved model, down through `self.sub.reset_noise()`
      of its submodules, which move with it): reported at the copy, naming the step's call;
      also where that step loop is in another file of the project that imports the class
      (a notebook's `current_model.reset_noise()` running `self.noisy1.reset_noise()` of a
      `NoisyLinear` of common/layers.py, through the project index), naming the call there.

    It reports a call that runs once per step of a step loop (a loop that trains, calls a
    module on its data or walks a loader; not one under a `%` or flag gate whose body does
    not train), or inside a function of the file that such a loop calls (reported in the
    function, naming the call's line), or in the `forward` of a module class of the file,
    or a method that `forward` calls (not in a loop there): a module runs on every call,
    once per step wherever the step loop is (PyTorch-GAN's UNIT `Encoder.reparameterization`
    drawing `Tensor(np.random.normal(0, 1, mu.shape))`, the loop in another file). It decides from values and the file's data flow:
    the tensor type a name holds on the GPU path (the arm or binding that is a CUDA type,
    whatever flag picks it), where the array comes from, where the refilled tensor lives.
    It stays silent on a draw made once before the loop, on scripts
    that run on the CPU (`Tensor = torch.FloatTensor`, code in CPU-only branches), on
    arrays of loaded data or of a draw mixed with such data, on draws from data that
    changes every step (a copy is needed then:
    DL001/DL016 judge those), on a draw made before the loop and moved in it (DL016's), and on
    `torch.cuda.FloatTensor(b, d)` with sizes (allocated on the device).

    ## Why is this bad?
    Each step the host draws or fills the array (NumPy's generator runs on one CPU core),
    then the driver copies it from pageable memory to the device and the step waits for
    that copy; the random numbers never needed to exist on the host. `torch.randn(b, d,
    device=dev)` fills the tensor in one kernel with no copy. Measured for this rule on an
    H100 (torch 2.11.0+cu130, NumPy 2.5.2; bench/host_fill_cost.py, 1,000 steps, best of
    5), per step:

    | shape | `Tensor(np.random.normal(...))` | `Tensor(np.ones(...))` | `noise.data.copy_(torch.randn(...))` | on the device |
    |---|---|---|---|---|
    | 64×100 (a GAN latent) | 151.7 µs | 28.3 µs | 40.3 µs | 7.1–9.6 µs |
    | 256×512 | 3.11 ms | 197 µs | 534 µs | 6.8–9.5 µs |
    | 64×3×64×64 | 17.5 ms | 1.09 ms | 3.32 ms | 8.1–10.7 µs |

    ("on the device": `torch.randn(..., device=)`, `torch.ones(..., device=)`,
    `noise.normal_()`.) `torch.from_numpy(np.random.uniform(...)).float().cuda()` does the
    same host draw and pageable copy as the first column (bench/host_fill_cost.py has a row
    for it, and one for `torch.multinomial` over host probabilities then `.cuda()` against
    the same draw from probabilities kept on the device; neither measured on a GPU yet). `devicelint confirm` has no probe for DL018 yet: it reports the
    line as inconclusive.

    ## Example
    ```python
    Tensor = torch.cuda.FloatTensor if cuda else torch.FloatTensor
    for imgs, _ in loader:
        z = Variable(Tensor(np.random.normal(0, 1, (imgs.shape[0], latent_dim))))
        valid = Tensor(np.ones((imgs.shape[0], 1)))
        noise.data.copy_(torch.randn(batch, nz, 1, 1))
        fake = torch.from_numpy(np.random.uniform(-1, 1, (batch, nz))).float().cuda()
        ...
    ```

    ## Use instead
    ```python
    device = torch.device("cuda" if cuda else "cpu")
    for imgs, _ in loader:
        z = torch.randn(imgs.shape[0], latent_dim, device=device)
        valid = torch.ones(imgs.shape[0], 1, device=device)
        noise.normal_()           # refill the device tensor in place
        fake = torch.rand(batch, nz, device=device) * 2 - 1
        ...
    ```

    ## Fix safety
    No fix: drawing on the device changes the random stream (seeded runs give different
    numbers), the legacy type fixes the dtype (float32 for `FloatTensor`) that a factory
    must then be told, and `Variable(...)` wrappers and the device variable are for the
    author to choose.
    """

    code = "DL018"
    name = "host-fill-per-step"
    summary = "Random or constant data made on the host and copied to the device every step"
    message = "`{what}` on the host, copied to the device each step; use `{use}(device=...)`"
    sample_message = (
        "`{what}` draws on the host, copied to the device each step; keep its input on "
        "the device and draw there"
    )
    helper_message = " (called at {line})"
    forward_message = " (in `{cls}.forward`: every call of the module)"
    forward_helper_message = " (called at {line} in `{cls}.forward`)"
    tokens = ("Tensor", "copy_(", "numpy", "multinomial", "bernoulli", "poisson", "normal(")

    @staticmethod
    def gate(facts) -> bool:
        """In a step loop, or a function one runs (a for/while loop either way), or in a
        file with a module class (its `forward` runs every step): a
        `torch.cuda.*Tensor` fill (`cuda` in the code or its aliases' targets), a
        `.copy_(...)` into a tensor on the device (`device_placing`) or into a module class's
        buffer (another file may move the module and run the refill every step:
        `_buffer_refill`, whose call passes one positional argument into `self.buf` or
        `self.buf.data`, `self` the method's first parameter: `copies_into_attribute`), or a
        move whose result is used (`.to(...)`, `.cuda()`: a host draw moved)
        (devicelint/gate.py)."""
        return (facts.has_step_loop or bool(facts.module_classes())) and (
            facts.mentions("cuda") or facts.moves(VALUE)
            or facts.calls_method(("copy_",), WITH_ARGS) and (
                facts.device_placing() or facts.copies_into_attribute and bool(facts.module_classes())))

    def leave_Call(self, node: cst.Call) -> None:
        sem = self.ctx.semantic
        found = self._legacy_cuda_fill(node) or self._refill(node) or self._moved_draw(node)
        if found is None:
            refill = self._buffer_refill(node)
            if refill is not None:
                what, use, site = refill
                if isinstance(site, tuple):  # in a file that imports this one
                    other, call = site
                    where = other.ctx.site(call)
                    self.report(node, self.message.format(what=what, use=use)
                                + self.helper_message.format(line=where.ref()),
                                related=[(where, "the call in the step loop")])
                else:
                    self.report(node, self.message.format(what=what, use=use)
                                + self.helper_message.format(line=self.ctx.line_ref(site)))
            return
        if found is None or not sem.on_gpu_path(node):
            return
        what, use = found
        text = self.message.format(what=what, use=use) if use is not None \
            else self.sample_message.format(what=what)
        if sem.loops.step_loop(node) is not None:
            self.report(node, text)
            return
        site = self._step_call_site(node)
        if site is not None:
            self.report(node, text + self.helper_message.format(line=self.ctx.line_ref(site)))
            return
        function = sem.function_of(node)
        if function is None or sem.loops.enclosing_loops(node):
            return
        found = self._forward_of(function, 1)
        if found is None:
            return
        forward, call = found
        owner = sem.parent(sem.parent(forward)).name.value  # type: ignore[union-attr]
        if call is None:
            self.report(node, text + self.forward_message.format(cls=owner))
        else:
            self.report(node, text + self.forward_helper_message.format(
                line=self.ctx.line_ref(call), cls=owner))

    # -- what is made on the host --------------------------------------------------------
    def _legacy_cuda_fill(self, node: cst.Call) -> Optional[tuple[str, str]]:
        """`torch.cuda.FloatTensor(<new NumPy array>)`, directly or through a name that holds
        that type on the GPU path."""
        args = positional_args(node)
        if len(args) != 1 or len(node.args) != 1 or not self._cuda_tensor_type(node.func):
            return None
        source = self._numpy_source(args[0], depth=3)
        if source is None:
            return None
        short = source.rsplit(".", 1)[-1]
        label = "np.random." + short if source.startswith("numpy.random.") else "np." + short
        return f"{label}(...)", TORCH_FOR.get(short, "torch.randn")

    def _moved_draw(self, node: cst.Call) -> Optional[tuple[str, str]]:
        """`<tensor of a new NumPy array>.to(device)` / `.cuda()`: `torch.from_numpy(z).float()`
        with `z = np.random.uniform(...)` (or `torch.tensor(np.ones(...))`), the array made in
        the same step (inside the step loop around the move, or in the function that holds
        it)."""
        func = node.func
        if type(func) is not cst.Attribute or func.attr.value not in ("to", "cuda") \
                or any(arg.star for arg in node.args) or type(self.ctx.parent(node)) is cst.Expr:
            return None  # (a discarded move is DL006's)
        sem = self.ctx.semantic
        if func.attr.value == "to":
            target = keyword_arg(node, "device")
            if target is None:
                first = positional_args(node)
                target = first[0] if first else None
            if target is None or sem.value(target).kind is Kind.TENSOR:
                return None
            place, hint = sem.device_place(target)
            if place is not Place.DEVICE or hint:
                return None
        region = sem.loops.step_loop(node) or sem.function_of(node)
        if region is None:
            return None
        source = self._array_tensor_source(func.value, region, depth=3)
        if source is None:
            return None
        if source.startswith("torch."):
            return f"{source}(...)", None
        short = source.rsplit(".", 1)[-1]
        label = "np.random." + short if source.startswith("numpy.random.") else "np." + short
        return f"{label}(...)", TORCH_FOR.get(short, "torch.randn")

    def _array_tensor_source(self, expr: cst.BaseExpression, region: cst.CSTNode,
                             depth: int) -> Optional[str]:
        """The NumPy draw or fill that the host tensor `expr` holds (through conversions,
        `Variable(...)` and names every binding of which `region` makes), else None."""
        sem = self.ctx.semantic
        if isinstance(expr, cst.Name):
            defs = sem.defs(expr)
            if depth <= 0 or not defs or any(kind != "escape" for kind, _ in dataflow.changes(sem, expr, region)):
                return None
            found = None
            for d in defs:
                if d.kind != "assign" or d.path or d.value is None or d.node is None \
                        or not dataflow.within(sem, d.node, region):
                    return None
                found = self._array_tensor_source(d.value, region, depth - 1)
                if found is None:
                    return None
            return found
        if not isinstance(expr, cst.Call) or any(arg.star for arg in expr.args):
            return None
        if isinstance(expr.func, cst.Attribute) and expr.func.attr.value in KEEPING_METHODS:
            method = expr.func.attr.value
            for arg in expr.args:
                kind = sem.value(arg.value).kind
                if method in ("type", "to") and kind is not Kind.DTYPE:
                    return None  # a move or a tensor type: not a conversion
                if kind in (Kind.TENSOR, Kind.ARRAY):
                    return None
            return self._array_tensor_source(expr.func.value, region, depth)
        qual = sem.qualname(expr.func)
        if qual in SAMPLING:
            return qual if self._device_could_hold(expr, region) else None
        args = positional_args(expr)
        if len(args) != 1:
            return None
        if qual == "torch.autograd.Variable":
            return self._array_tensor_source(args[0], region, depth)
        if qual not in ARRAY_TENSORS or any(
                arg.keyword is not None and arg.keyword.value not in ("dtype", "requires_grad")
                for arg in expr.args):
            return None
        return self._numpy_source(args[0], depth, region)

    def _device_could_hold(self, draw: cst.Call, region: cst.CSTNode) -> bool:
        """Every tensor `draw` samples from is a host tensor the device could hold for good:
        a fresh fill (`torch.ones(n)`), or the same data on every step (unchanged in the
        step loop `region`; in a method, `self.p` bound in `__init__` alone), directly or
        through names every binding of which is one of those."""
        sem = self.ctx.semantic
        tensors = [arg.value for arg in draw.args if sem.value(arg.value).kind is Kind.TENSOR]
        return bool(tensors) and all(self._held_input(t, region, depth=2) for t in tensors)

    def _held_input(self, expr: cst.BaseExpression, region: cst.CSTNode, depth: int) -> bool:
        sem = self.ctx.semantic
        if sem.value(expr).place is not Place.CPU:
            return False
        if isinstance(expr, cst.Name) and depth > 0:
            defs = sem.defs(expr)
            if defs and all(d.kind == "assign" and not d.path and d.value is not None and d.node is not None
                            and dataflow.within(sem, d.node, region) for d in defs):
                return all(self._held_input(d.value, region, depth - 1) for d in defs)
        if dataflow.fresh_fill(sem, expr, depth=0) is not None:
            return True
        if isinstance(region, cst.FunctionDef):
            return dataflow.same_every_call(sem, expr, region)
        return dataflow.invariant(sem, expr, region)

    def _cuda_tensor_type(self, func: cst.BaseExpression, depth: int = 3) -> bool:
        sem = self.ctx.semantic
        qual = sem.qualname(func)
        if qual is not None:
            return qual.startswith("torch.cuda.") and qual.endswith("Tensor")
        # An arm or a binding that is a CUDA type is the one the code takes with a GPU,
        # whatever the flag that picks it (`if cuda`, `if opt.cuda`, `if x.is_cuda`).
        if type(func) is cst.IfExp:
            return any(self._cuda_tensor_type(arm, depth) for arm in (func.body, func.orelse))
        if type(func) is not cst.Name or depth <= 0:
            return False
        defs = sem.defs(func)
        values = [d.value for d in defs if d.kind in ("assign", "annassign") and not d.path]
        return any(v is not None and self._cuda_tensor_type(v, depth - 1) for v in values)

    def _numpy_source(self, expr: cst.BaseExpression, depth: int,
                      region: Optional[cst.CSTNode] = None) -> Optional[str]:
        """The NumPy call that makes the array `expr` is, through arithmetic with numbers,
        `.astype()` and one-binding names (bound inside `region` when given):
        `numpy.random.normal`, `numpy.ones`; else None."""
        sem = self.ctx.semantic
        if isinstance(expr, cst.UnaryOperation):
            return self._numpy_source(expr.expression, depth, region)
        if isinstance(expr, cst.BinaryOperation):
            found = [self._numpy_source(side, depth, region) for side in (expr.left, expr.right)]
            kinds = [sem.value(side).kind for side in (expr.left, expr.right)]
            for source, other in ((found[0], kinds[1]), (found[1], kinds[0])):
                if source is not None and other in (Kind.NUMBER, Kind.BOOL):
                    return source
            return None
        if isinstance(expr, cst.Name) and depth > 0:
            defs = sem.defs(expr)
            if len(defs) == 1 and defs[0].kind == "assign" and not defs[0].path and defs[0].value is not None \
                    and (region is None or dataflow.within(sem, defs[0].node, region)) \
                    and not any(kind != "escape" for kind, _ in dataflow.changes(sem, expr, sem.scope_of(expr))):
                # (an array written into, `y[range(n), labels] = 1`, holds other data)
                return self._numpy_source(defs[0].value, depth - 1, region)
            return None
        if not isinstance(expr, cst.Call):
            return None
        if isinstance(expr.func, cst.Attribute) and expr.func.attr.value == "astype":
            return self._numpy_source(expr.func.value, depth, region)
        qual = sem.qualname(expr.func)
        if qual is None:
            return None
        if qual.startswith("numpy.random.") and qual.rsplit(".", 1)[-1] in TORCH_FOR:
            return qual
        return qual if qual in NUMPY_FILLS else None

    def _refill(self, node: cst.Call) -> Optional[tuple[str, str]]:
        """`device_tensor.copy_(torch.randn(...))` (or `.data.copy_`) of a new host fill."""
        func = node.func
        if type(func) is not cst.Attribute or func.attr.value != "copy_" or len(node.args) < 1:
            return None
        sem = self.ctx.semantic
        target = sem.value(func.value)
        if target.kind is not Kind.TENSOR or target.place is not Place.DEVICE:
            return None
        fill = dataflow.fresh_fill(sem, node.args[0].value, depth=0)
        if fill is None or len(fill.factories) != 1:
            return None
        factory = fill.factories[0]
        qual = sem.qualname(factory.func) or ""
        short = qual.rsplit(".", 1)[-1]
        return f"{qual}(...)", qual if qual.startswith("torch.") else "torch.randn"

    def _buffer_refill(self, node: cst.Call) -> Optional[tuple[str, str, cst.Call]]:
        """`self.buf.copy_(<new host fill>)` in a method of a module class of the file, `buf`
        a buffer or parameter the class registers (it moves with the module), the fill made
        in the method on every call (also by a helper of the file: `self._draw(n)`), when a
        step loop runs the method on an instance on the device: `model.reset()` of a moved
        model, down through its submodules (`self.sub.reset()`). (what, use, the call in the
        step loop)."""
        func = node.func
        if type(func) is not cst.Attribute or func.attr.value != "copy_" or len(node.args) != 1 \
                or node.args[0].keyword is not None or node.args[0].star:
            return None
        sem = self.ctx.semantic
        target = func.value
        if type(target) is cst.Attribute and target.attr.value == "data":
            target = target.value
        function = sem.function_of(node)
        if function is None or type(target) is not cst.Attribute \
                or not self._is_self(target.value, function) or sem.loops.enclosing_loops(node):
            return None
        owner = sem.parent(sem.parent(function))
        if type(owner) is not cst.ClassDef or sem.module_classes().get(owner.name.value) is not owner \
                or target.attr.value not in modules.registered_state(sem, owner) \
                or sem.value(target).place is Place.DEVICE:
            return None  # (a tensor the model shows on the device: `_refill`'s)
        fill = dataflow.fresh_fill(sem, node.args[0].value)
        if fill is None:
            return None
        # Every name on the way is bound on each call: in the method or in a helper it calls.
        helpers = [function] + [sem.resolve_function(c.func) for c in fill.calls]
        if any(not any(h is not None and dataflow.within(sem, d.node, h) for h in helpers)
               for _, d in fill.through):
            return None
        labels = {sem.qualname(f.func) or "" for f in fill.factories}
        if len(labels) != 1:
            return None
        qual = labels.pop()
        site = self._device_step_site(function, hops=3)
        if site is None:
            site = self._importer_step_site(function, owner)
        if site is None:
            return None
        return f"{qual}(...)", qual if qual.startswith("torch.") else "torch.randn", site

    def _importer_step_site(self, function: cst.FunctionDef, owner: cst.ClassDef):
        """Where the class is used by another file of the project (the step loop is there,
        the module class here: RL-Adventure's common/layers.py `NoisyLinear.reset_noise`,
        run by a notebook's `current_model.reset_noise()` every training step): a call
        `self.sub.method()` in a method of a module class of an importing file, `self.sub`
        an instance of this class, that a step loop there runs on a module moved to the
        device (as `_device_step_site` follows it in this file). (the other file's model,
        the call in its step loop), or None; read through the project index."""
        sem = self.ctx.semantic
        view = sem.project
        if view is None or sem.parent(owner) is not self.ctx.module:
            return None
        name = function.name.value
        for importer in view.importers_of(owner.name.value):
            other = view.model_of(importer)
            if other is None or other.project is None:
                continue
            for call in other.calls_by_name().get(name, ()):
                receiver = call.func.value if isinstance(call.func, cst.Attribute) else None
                if receiver is None or not isinstance(receiver, cst.Attribute) or not other.on_gpu_path(call):
                    continue
                value = other.value(receiver)
                if value.kind is not Kind.MODULE or not value.cls \
                        or not self._names_class(other, importer, value.cls, view.module, owner):
                    continue
                root = receiver
                while isinstance(root, cst.Attribute):
                    root = root.value
                caller = other.function_of(call)
                if caller is None or not self._is_self(root, caller, other) or other.loops.enclosing_loops(call):
                    continue
                site = self._device_step_site(caller, 3, False, other)
                if site is not None:
                    return other, site
        return None

    @staticmethod
    def _names_class(other, importer, cls: str, module, owner: cst.ClassDef) -> bool:
        """`cls` (a module's class as the importing file's model gives it: the import's
        qualified name, `common.layers.NoisyLinear`) is `owner` of `module`."""
        path, _, name = cls.rpartition(".")
        if name != owner.name.value:
            return False
        if path and other.project.index.module_named(path, importer) is module:
            return True
        symbol = other.project.resolve(cls)
        return symbol is not None and symbol.kind == "class" and symbol.module is module \
            and symbol.name == name

    def _is_self(self, node: cst.BaseExpression, function: cst.FunctionDef, sem=None) -> bool:
        sem = sem or self.ctx.semantic
        params = function.params.params
        return isinstance(node, cst.Name) and bool(params) and params[0].name.value == node.value \
            and len(sem.defs(node)) == 1 and sem.defs(node)[0].kind == "param"

    def _device_step_site(self, function: cst.FunctionDef, hops: int,
                          instance_known: bool = False, sem=None) -> Optional[cst.Call]:
        """The call in a step loop that runs the method `function` on a module on the device:
        through `self.m()` / `self.sub.m()` (the same object or one of its submodules, which
        move with it) up to a call `obj.m()` of a module the code moved to the device, then
        through the file's functions to the step loop (`hops` calls at most). `sem`: the
        model of the file `function` is in (another file's: `_importer_step_site`)."""
        sem = sem or self.ctx.semantic
        for call in sem.calls_by_name().get(function.name.value, ()):
            if not (sem.resolve_function(call.func) is function or self._method_call_of(call, function, sem)):
                continue
            if not sem.on_gpu_path(call):
                continue
            caller = sem.function_of(call)
            known = instance_known
            if not known:
                receiver = call.func.value if isinstance(call.func, cst.Attribute) else None
                if receiver is None:
                    continue
                root = receiver
                while isinstance(root, cst.Attribute):
                    root = root.value
                if caller is not None and self._is_self(root, caller, sem):
                    if sem.loops.enclosing_loops(call):
                        continue
                    found = self._device_step_site(caller, hops - 1, False, sem) if hops > 1 else None
                    if found is not None:
                        return found
                    continue
                value = sem.value(receiver)
                if value.kind is not Kind.MODULE or value.place is not Place.DEVICE or value.hint:
                    continue
                known = True
            if sem.loops.step_loop(call) is not None:
                return call
            if hops > 1 and caller is not None and caller is not function \
                    and not sem.loops.enclosing_loops(call):
                found = self._device_step_site(caller, hops - 1, known, sem)
                if found is not None:
                    return found
        return None

    # -- once per step, through a helper -------------------------------------------------
    def _step_call_site(self, node: cst.Call) -> Optional[cst.Call]:
        """The call, in a step loop of this file, that runs the function holding `node` once
        per step: a direct call, a call of a function that calls it, or, for a module's
        `forward`, a call of an instance of that module class (two hops at most)."""
        sem = self.ctx.semantic
        function = sem.function_of(node)
        if function is None or sem.loops.enclosing_loops(node):
            return None
        return self._site_of(function, 2)

    def _forward_of(self, function: cst.FunctionDef, hops: int):
        """(`forward` of a module class of this file, the call in it that runs `function`,
        or None when `function` is that `forward`): a module's forward runs on every call
        of the module, once per step wherever the step loop is (another file: train.py
        calling `encoder(x)`). A call in a loop of `forward`, or one that runs only without
        a GPU, does not count."""
        sem = self.ctx.semantic
        owner = sem.parent(sem.parent(function))
        if function.name.value == "forward" and isinstance(owner, cst.ClassDef) \
                and sem.module_classes().get(owner.name.value) is owner:
            return function, None
        if hops <= 0:
            return None
        for call in sem.calls_by_name().get(function.name.value, ()):
            if not (sem.resolve_function(call.func) is function or self._method_call_of(call, function)):
                continue
            if not sem.on_gpu_path(call) or sem.loops.enclosing_loops(call):
                continue
            caller = sem.function_of(call)
            if caller is None or caller is function:
                continue
            found = self._forward_of(caller, hops - 1)
            if found is not None and found[1] is None:
                return found[0], call
        return None

    def _method_call_of(self, call: cst.Call, function: cst.FunctionDef, sem=None) -> bool:
        """`obj.method(...)` that runs `function`: a method of the class of the file that
        `obj` is an instance of (`sampler = Sampler(...)`; a module moved with `.to()`)."""
        sem = sem or self.ctx.semantic
        if not isinstance(call.func, cst.Attribute):
            return False
        callee = sem.syncs.callee(call)
        if callee is not None:
            return callee[0] is function
        owner = sem.parent(sem.parent(function))
        receiver = sem.value(call.func.value)
        return isinstance(owner, cst.ClassDef) and receiver.kind is Kind.MODULE \
            and receiver.cls == owner.name.value and sem.module_classes().get(owner.name.value) is owner

    def _site_of(self, function: cst.FunctionDef, hops: int) -> Optional[cst.Call]:
        sem = self.ctx.semantic
        calls = [c for c in sem.calls_by_name().get(function.name.value, ())
                 if sem.resolve_function(c.func) is function or self._method_call_of(c, function)]
        owner = sem.parent(sem.parent(function))
        if function.name.value == "forward" and isinstance(owner, cst.ClassDef) \
                and sem.module_classes().get(owner.name.value) is owner:
            calls += [c for c in self.ctx.iter_nodes(cst.Call)
                      if sem.value(c.func).kind is Kind.MODULE and sem.value(c.func).cls == owner.name.value]
        for call in calls:
            if not sem.on_gpu_path(call):
                continue
            if sem.loops.step_loop(call) is not None:
                return call
            caller = sem.function_of(call)
            if hops > 1 and caller is not None and caller is not function \
                    and not sem.loops.enclosing_loops(call):
                found = self._site_of(caller, hops - 1)
                if found is not None:
                    return found
        return None

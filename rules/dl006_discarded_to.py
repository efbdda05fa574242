from __future__ import annotations

from typing import Optional

import libcst as cst

from devicelint.analysis import CPU, TENSOR_FACTORIES, method_name, to_call_device
from devicelint.context import FileContext
from devicelint.names import dotted_name
from devicelint.rule import Rule
from devicelint.runtime_spec import LineRecord, ProbeRun, RuntimeSpec, Watch

# torch functions (besides the factories) that return one tensor.
TENSOR_FUNCTIONS = TENSOR_FACTORIES | {
    f"torch.{name}"
    for name in (
        "matmul", "mm", "bmm", "einsum", "where", "softmax", "log_softmax", "sigmoid",
        "tanh", "relu", "exp", "log", "sqrt", "abs", "sum", "mean", "clamp", "flatten",
        "reshape", "transpose", "permute", "cumsum", "outer", "tril", "triu", "masked_fill",
        "normal", "bernoulli", "multinomial", "full_like", "sin", "cos", "pow", "polar",
        "nn.Parameter", "nn.parameter.Parameter", "nn.functional.one_hot",
        "nn.functional.pad", "nn.functional.softmax", "nn.functional.normalize",
        "nn.functional.interpolate", "nn.functional.linear", "nn.functional.relu",
        "nn.functional.gelu", "nn.functional.dropout", "nn.functional.embedding",
    )
}
# Tensor methods that return a tensor.
TENSOR_METHODS = {
    "to", "cuda", "cpu", "float", "half", "double", "bfloat16", "long", "int", "bool",
    "byte", "view", "reshape", "transpose", "permute", "contiguous", "detach", "clone",
    "unsqueeze", "squeeze", "flatten", "t", "sum", "mean", "softmax", "log_softmax",
    "expand", "expand_as", "repeat", "masked_fill", "matmul", "abs", "exp", "log",
    "sqrt", "clamp", "type_as", "view_as", "reshape_as", "narrow", "pin_memory",
    "requires_grad_", "argmax", "argmin", "cumsum", "sigmoid", "tanh", "relu", "norm",
    "pow", "mul", "add", "sub", "div", "tril", "triu", "index_select", "gather",
}
TENSOR_ATTRIBUTES = {"T", "mT", "data"}
TENSOR_TYPES = {"torch.Tensor", "torch.nn.Parameter", "torch.FloatTensor", "torch.LongTensor"}
DATALOADERS = {"torch.utils.data.DataLoader", "torch.utils.data.dataloader.DataLoader"}
ARITHMETIC = (
    cst.Add, cst.Subtract, cst.Multiply, cst.Divide, cst.MatrixMultiply, cst.Power,
    cst.FloorDivide, cst.Modulo,
)


class TensorFacts:
    """What the code shows about which expressions hold a torch.Tensor (never guesses:
    unknown means "not known to be a tensor"). One instance per file; results cached."""

    def __init__(self, ctx: FileContext) -> None:
        self.ctx = ctx
        self._names: dict[tuple[int, str], bool] = {}

    def is_tensor(self, node: cst.CSTNode, depth: int = 0) -> bool:
        if depth > 6:
            return False
        ctx = self.ctx
        if isinstance(node, cst.Call):
            qual = ctx.qualname(node.func)
            if qual is not None:
                return qual in TENSOR_FUNCTIONS
            method = method_name(node)
            if method in TENSOR_METHODS:
                return self.is_tensor(node.func.value, depth + 1)  # type: ignore[union-attr]
            return False
        if isinstance(node, cst.Name):
            return self._name_is_tensor(node, depth)
        if isinstance(node, cst.Attribute):
            if node.attr.value in TENSOR_ATTRIBUTES:
                return self.is_tensor(node.value, depth + 1)
            return False
        if isinstance(node, cst.Subscript):
            return self.is_tensor(node.value, depth + 1)
        if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, ARITHMETIC):
            return self.is_tensor(node.left, depth + 1) or self.is_tensor(node.right, depth + 1)
        return False

    def _name_is_tensor(self, node: cst.Name, depth: int) -> bool:
        scope = self.ctx.scope(node)
        key = (id(scope), node.value)
        cached = self._names.get(key)
        if cached is not None:
            return cached
        self._names[key] = False  # a cycle (`x = x + 1`) is decided by the other bindings
        bindings = self.ctx.bindings_of(node.value, node)
        result = bool(bindings) and all(self._binding_is_tensor(b, depth) for b in bindings)
        self._names[key] = result
        return result

    def _binding_is_tensor(self, binding, depth: int) -> bool:
        if binding.kind in ("assign", "annassign", "walrus"):
            if binding.value is None:
                return False
            if binding.kind == "assign" and not self._plain_target(binding):
                return False
            return self.is_tensor(binding.value, depth + 1)
        if binding.kind == "param":
            annotation = binding.node.annotation
            if annotation is None:
                return False
            return self.ctx.qualname(annotation.annotation) in TENSOR_TYPES
        if binding.kind == "for":
            return self._batch_element(binding)
        return False

    @staticmethod
    def _plain_target(binding) -> bool:
        """`x = value` (not `x, y = value` or `x = y = ...` with unpacking)."""
        return all(isinstance(t.target, cst.Name) for t in binding.node.targets)

    def _batch_element(self, binding) -> bool:
        """`for x, y in loader` / `for i, (x, y) in enumerate(loader)` with `loader` a
        DataLoader built in this file: the default collate makes each element a tensor."""
        loop: cst.For = binding.node
        source = loop.iter
        target = loop.target
        if (
            isinstance(source, cst.Call)
            and isinstance(source.func, cst.Name)
            and source.func.value == "enumerate"
            and source.args
        ):
            source = source.args[0].value
            if not (isinstance(target, cst.Tuple) and len(target.elements) == 2):
                return False
            target = target.elements[1].value
        if not isinstance(target, (cst.Tuple, cst.List)):
            return False  # `for batch in loader`: the batch may be a dict or a list
        if not all(isinstance(e.value, cst.Name) for e in target.elements):
            return False
        return self._is_dataloader(source)

    def _is_dataloader(self, node: cst.CSTNode) -> bool:
        if isinstance(node, cst.Call):
            return self.ctx.qualname(node.func) in DATALOADERS
        if isinstance(node, cst.Name):
            bindings = self.ctx.bindings_of(node.value, node)
            return bool(bindings) and all(
                b.kind in ("assign", "annassign")
                and b.value is not None
                and isinstance(b.value, cst.Call)
                and self.ctx.qualname(b.value.func) in DATALOADERS
                for b in bindings
            )
        return False

    def self_attribute_is_tensor(self, node: cst.Attribute) -> Optional[str]:
        """For `self.x` in a method: "tensor" or "parameter" if the class's `__init__`
        assigns `self.x` only tensors, else None."""
        if not (isinstance(node.value, cst.Name) and node.value.value == "self"):
            return None
        function = self.ctx.function(node)
        if function is None:
            return None
        klass = self.ctx.parent(self.ctx.parent(function) or function)
        if not isinstance(klass, cst.ClassDef):
            return None
        init = next(
            (
                s for s in klass.body.body
                if isinstance(s, cst.FunctionDef) and s.name.value == "__init__"
            ),
            None,
        )
        if init is None:
            return None
        bindings = self.ctx.bindings(init).get(f"self.{node.attr.value}")
        if not bindings:
            return None
        kinds = set()
        for binding in bindings:
            if binding.kind not in ("assign", "annassign") or binding.value is None:
                return None
            value = binding.value
            qual = self.ctx.qualname(value.func) if isinstance(value, cst.Call) else None
            if qual in ("torch.nn.Parameter", "torch.nn.parameter.Parameter"):
                kinds.add("parameter")
            elif self.is_tensor(value) and not isinstance(value, cst.Name):
                kinds.add("tensor")
            else:
                return None
        return "parameter" if "parameter" in kinds else "tensor"


class DiscardedTo(Rule):
    """## What it does
    Flags `t.to(...)`, `t.cuda()` and `t.cpu()` written as a statement of their own when
    `t` is known to be a tensor: built by a torch factory or tensor operation in the same
    function, a parameter annotated `torch.Tensor`, an element of a batch unpacked from a
    `DataLoader` (`for x, y in loader`), or a tensor attribute set in `__init__`.

    ## Why is this bad?
    `nn.Module.to()` moves a module's parameters in place, but `Tensor.to()` returns a new
    tensor and leaves the original where it was. A bare `x.to(device)` therefore does
    nothing except pay for a copy that is thrown away: `x` is still on the CPU, and the
    next operation with GPU tensors fails with "Expected all tensors to be on the same
    device", or, in CPU-only runs, silently keeps everything on the CPU.

    The rule is silent on modules (`model.to(device)`, `self.encoder.cuda()`,
    `self.to(device)` inside an `nn.Module`), on anything it cannot show to be a tensor,
    and on assigned or returned results.

    ## Example
    ```python
    for images, labels in loader:
        images.to(device)
        labels.to(device)
        loss = criterion(model(images), labels)
    ```

    ## Use instead
    ```python
    for images, labels in loader:
        images = images.to(device)
        labels = labels.to(device)
        loss = criterion(model(images), labels)
    ```

    ## Fix safety
    The fix assigns the result back: `x.to(device)` becomes `x = x.to(device)`. It is safe
    when `x` is a plain name bound in the same function (so the assignment cannot turn a
    global into an unbound local) and the move goes to a device. It is unsafe for moves
    to the CPU (`.cpu()`, `.to("cpu")`): a bare `.cpu()` is sometimes written on purpose
    as a host-sync fence in timing code, where moving the tensor would break the GPU code
    that follows. For a tensor attribute, `self.x = self.x.to(device)` is offered as an
    unsafe fix (other references to the old tensor are not updated); for an
    `nn.Parameter` attribute there is no fix (assigning a plain tensor to a parameter
    attribute raises), register it as a parameter or buffer and move the module instead.
    """

    code = "DL006"
    name = "discarded-to"
    summary = "`Tensor.to()` is not in place: the moved tensor is discarded"
    message = (
        "`{receiver}.{method}(...)` returns a moved copy and leaves `{receiver}` where it "
        "was (tensors are not moved in place, unlike `nn.Module`); the result is "
        "discarded: assign it (`{receiver} = {receiver}.{method}(...)`)"
    )
    tokens = (".to(", ".cuda(", ".cpu(")
    fixable = True

    def __init__(self, ctx: FileContext) -> None:
        super().__init__(ctx)
        self.facts = TensorFacts(ctx)

    def leave_Expr(self, node: cst.Expr) -> None:
        # On leaving, the children have been visited: scope queries on them work.
        call = node.value
        if not isinstance(call, cst.Call) or call.lpar:
            return
        method = method_name(call)
        if method not in ("to", "cuda", "cpu"):
            return
        if method == "to" and not call.args:
            return
        receiver = call.func.value  # type: ignore[union-attr]
        to_cpu = to_call_device(self.ctx, call) == CPU
        text = dotted_name(receiver)
        if isinstance(receiver, cst.Name):
            if not self.facts.is_tensor(receiver):
                return
            message = self.message.format(receiver=text, method=method)
            if receiver.value in self.ctx.bindings(self.ctx.scope(node)):
                self.report(
                    call, message, replacement=self._assign(receiver, call), safe=not to_cpu,
                    fix_description=f"Assign the result back to `{text}`",
                )
            else:
                self.report(call, message)
            return
        if isinstance(receiver, cst.Attribute):
            kind = self.facts.self_attribute_is_tensor(receiver)
            if kind is None:
                return
            message = self.message.format(receiver=text, method=method)
            if kind == "parameter":
                self.report(call, message.rstrip() + "; register it and move the module")
            else:
                self.report(
                    call, message, replacement=self._assign(receiver, call), safe=False,
                    fix_description=f"Assign the result back to `{text}`",
                )
            return
        if self.facts.is_tensor(receiver):
            self.report(
                call,
                f"`.{method}(...)` returns a moved copy that this statement discards "
                "(tensors are not moved in place); assign the result",
            )

    @staticmethod
    def _assign(receiver: cst.BaseExpression, call: cst.Call) -> cst.Assign:
        return cst.Assign(targets=[cst.AssignTarget(receiver)], value=call)

    # -- devicelint confirm ------------------------------------------------------------
    @staticmethod
    def probe(run: ProbeRun, rec: LineRecord) -> dict:
        moves = rec.moves
        made = moves.count - moves.noop
        if not moves.count:
            return run.base("inconclusive", "the line ran but no tensor .to/.cuda/.cpu was seen")
        if not made:
            return run.base("refuted", "the tensor was already there: the call returned it "
                            "unchanged, nothing was lost", count=moves.count)
        copies = sum(c.count for c in rec.copies.values())
        nbytes = sum(c.bytes for c in rec.copies.values())
        return run.base("confirmed", f"{made} new tensor(s) made and discarded ({copies} "
                        f"copies, {nbytes:,} B); the original stayed where it was", count=made,
                        bytes=nbytes)

    runtime = RuntimeSpec(probe=probe, watch=(Watch.MOVES,))

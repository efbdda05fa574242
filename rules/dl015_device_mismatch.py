from __future__ import annotations

from typing import Optional

import libcst as cst

from devicelint.analysis import method_name
from devicelint.rule import Rule
from devicelint.rules._devices import CPU_NDIM, GPU, DeviceFlow, is_mismatch
from devicelint.runtime_spec import RuntimeSpec, device_mismatch

# torch functions whose tensor arguments must share a device (checked on an H200: each raises
# "Expected all tensors to be on the same device" with one CPU and one CUDA operand).
_LIST_FUNCTIONS = {
    f"torch.{n}" for n in (
        "cat", "concat", "concatenate", "stack", "hstack", "vstack", "dstack", "column_stack",
        "row_stack",
    )
}
_OPERAND_FUNCTIONS = {
    f"torch.{n}" for n in (
        "matmul", "mm", "bmm", "add", "sub", "subtract", "mul", "multiply", "div", "divide",
        "true_divide", "maximum", "minimum", "fmax", "fmin", "where", "dot", "cdist",
        "index_select", "gather", "eq", "ne", "lt", "gt", "le", "ge", "atan2", "fmod",
        "remainder", "addmm", "baddbmm", "lerp", "masked_fill", "outer", "kron", "einsum",
    )
} | {
    f"torch.nn.functional.{n}" for n in (
        "cross_entropy", "nll_loss", "mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss",
        "binary_cross_entropy", "binary_cross_entropy_with_logits", "kl_div",
        "cosine_similarity", "pairwise_distance", "linear",
    )
}
_DEVICE_SOURCES = {"to", "cuda", "FloatTensor", "LongTensor", "HalfTensor", "BoolTensor"}
_OPERAND_METHODS = {
    "add", "sub", "mul", "div", "matmul", "mm", "bmm", "eq", "ne", "lt", "le", "gt", "ge",
    "maximum", "minimum", "masked_fill", "masked_fill_", "index_select", "gather", "where",
    "dot", "pow", "add_", "sub_", "mul_", "div_", "lerp", "addmm", "outer",
}


def _short(ctx, node: cst.CSTNode) -> str:
    text = " ".join(ctx.code(node).split())
    return text if len(text) <= 40 else text[:37] + "..."


class DeviceMismatch(Rule):
    """## What it does
    Flags an operation that combines a tensor created on the CPU (a torch factory without
    `device=`: `torch.randn(2, 2)`, `torch.arange(n)`, `torch.tensor([...])`,
    `torch.from_numpy(a)`) with a tensor known to be on the GPU (created with `device=`, or
    moved with `.to(device)` / `.cuda()`), with no move in between: arithmetic, comparisons,
    `@`, `torch.cat`/`torch.stack`, `torch.matmul`/`where`/`index_select`/`gather`,
    `masked_fill`, loss functions, and indexing a CPU tensor with a GPU index.

    The devices are followed through straight-line code of one function (or the module) in
    source order: reassignment changes a name's device, and `y = x * 2` keeps `x`'s device.
    A tensor moved to `device = torch.device("cuda" if torch.cuda.is_available() else "cpu")`
    counts as on the GPU: the code crashes on every machine that has one.

    Silent on 0-dim CPU tensors (`torch.tensor(1.0)`, `t.sum()`: PyTorch allows mixing them
    with CUDA tensors), on indexing a GPU tensor with a CPU index (allowed), on `.copy_()`,
    and wherever a device cannot be known (function parameters, attributes, unknown calls).

    ## Why is this bad?
    PyTorch never moves operands implicitly: the operation raises
    `RuntimeError: Expected all tensors to be on the same device, but found at least two
    devices, cuda:0 and cpu!` (seed tutorial 003 section 8.1). The script runs on a
    CPU-only laptop and crashes on the first GPU machine. Checked on an H200 (torch 2.11):
    `+`, `==`, `@`, `torch.cat`, `torch.where`, `index_select`, `gather`, `masked_fill` and
    `cpu_tensor[gpu_index]` all raise; a 0-dim CPU tensor, `gpu[cpu_index]` and
    `gpu.copy_(cpu)` do not.

    ## Example
    ```python
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    x = torch.randn(8, 4).to(device)
    weights = torch.tensor([0.1, 0.2, 0.3, 0.4])
    y = x * weights  # crashes on a GPU
    ```

    ## Use instead
    ```python
    weights = torch.tensor([0.1, 0.2, 0.3, 0.4], device=device)  # or .to(x.device)
    y = x * weights
    ```
    """

    code = "DL015"
    name = "device-mismatch"
    summary = "a CPU tensor is combined with a GPU tensor"
    message = (
        "CPU tensor combined with a tensor on the device: this raises \"Expected all "
        "tensors to be on the same device\" on a GPU; create it with `device=` or move it"
    )
    tokens = ("cuda", "device")

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self._binops: list[cst.CSTNode] = []
        self._calls: list[cst.Call] = []
        self._subscripts: list[cst.Subscript] = []
        self._globals: set[str] = set()
        self._on_device = False  # something is created on or moved to a device

    def visit_BinaryOperation(self, node: cst.BinaryOperation) -> None:
        self._binops.append(node)

    def visit_Comparison(self, node: cst.Comparison) -> None:
        self._binops.append(node)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._binops.append(node)

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if isinstance(func, cst.Attribute):
            self._calls.append(node)
            if func.attr.value in _DEVICE_SOURCES:
                self._on_device = True
        elif isinstance(func, cst.Name):
            self._calls.append(node)
        if not self._on_device:
            for arg in node.args:
                if arg.keyword is not None and arg.keyword.value == "device":
                    self._on_device = True
                    break

    def visit_Subscript(self, node: cst.Subscript) -> None:
        self._subscripts.append(node)

    def visit_Global(self, node: cst.Global) -> None:
        self._globals.update(item.name.value for item in node.names)

    def leave_Module(self, node: cst.Module) -> None:
        if not self._on_device:
            return  # nothing is ever on a GPU: no mismatch to find
        flow = DeviceFlow(self.ctx)
        flow.global_names = self._globals
        for op in self._binops:
            if isinstance(op, cst.BinaryOperation):
                self._check_pair(flow, op, op.left, op.right)
            elif isinstance(op, cst.AugAssign):
                self._check_pair(flow, op, op.target, op.value)
            else:
                left = op.left
                for target in op.comparisons:
                    if isinstance(target.operator, (cst.In, cst.NotIn, cst.Is, cst.IsNot)):
                        left = target.comparator
                        continue
                    if self._check_pair(flow, op, left, target.comparator):
                        break
                    left = target.comparator
        for call in self._calls:
            self._check_call(flow, call)
        for subscript in self._subscripts:
            if flow.value(subscript.value) != CPU_NDIM:
                continue
            for element in subscript.slice:
                if isinstance(element.slice, cst.Index) and flow.value(element.slice.value) == GPU:
                    self.report(
                        subscript,
                        f"CPU tensor `{_short(self.ctx, subscript.value)}` is indexed with "
                        f"`{_short(self.ctx, element.slice.value)}`, which is on the device: "
                        "this raises \"indices should be either on cpu or on the same device "
                        "as the indexed tensor\" on a GPU; move the indexed tensor or the index",
                    )
                    break

    def _check_pair(self, flow: DeviceFlow, op, left, right) -> bool:
        a, b = flow.value(left), flow.value(right)
        if not is_mismatch(a, b):
            return False
        cpu, gpu = (left, right) if a == CPU_NDIM else (right, left)
        self._report(op, cpu, gpu)
        return True

    def _check_call(self, flow: DeviceFlow, call: cst.Call) -> None:
        operands: list[cst.BaseExpression] = []
        qual = self.ctx.qualname(call.func)
        if qual in _LIST_FUNCTIONS:
            first = call.args[0].value if call.args and not call.args[0].star else None
            if isinstance(first, (cst.List, cst.Tuple)):
                operands = [e.value for e in first.elements if isinstance(e, cst.Element)]
        elif qual in _OPERAND_FUNCTIONS:
            operands = [a.value for a in call.args if not a.star]
        elif qual is None and method_name(call) in _OPERAND_METHODS:
            receiver = call.func.value  # type: ignore[attr-defined]
            operands = [receiver] + [a.value for a in call.args if not a.star]
        if len(operands) < 2:
            return
        cpu: Optional[cst.CSTNode] = None
        gpu: Optional[cst.CSTNode] = None
        for operand in operands:
            value = flow.value(operand)
            if value == CPU_NDIM and cpu is None:
                cpu = operand
            elif value == GPU and gpu is None:
                gpu = operand
        if cpu is not None and gpu is not None:
            self._report(call, cpu, gpu)

    def _report(self, node: cst.CSTNode, cpu: cst.CSTNode, gpu: cst.CSTNode) -> None:
        ctx = self.ctx
        self.report(
            node,
            f"`{_short(ctx, cpu)}` is on the CPU but `{_short(ctx, gpu)}` is on the device: "
            "this raises \"Expected all tensors to be on the same device\" on a GPU; create "
            "the CPU tensor with `device=` or move it first (e.g. `.to(x.device)`)",
        )

    # -- devicelint confirm: the mismatch error PyTorch raises at the line ---------------
    runtime = RuntimeSpec(probe=device_mismatch, whole_file=True)

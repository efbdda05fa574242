from __future__ import annotations

from typing import Optional

import libcst as cst

from devicelint.rule import Rule
from devicelint.runtime_spec import Find, RuntimeSpec, device_mismatch
from devicelint.semantic import Kind, Place, Value, shapes

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
_OPERAND_METHODS = {
    "add", "sub", "mul", "div", "matmul", "mm", "bmm", "eq", "ne", "lt", "le", "gt", "ge",
    "maximum", "minimum", "masked_fill", "masked_fill_", "index_select", "gather", "where",
    "dot", "pow", "add_", "sub_", "mul_", "div_", "lerp", "addmm", "outer",
}
# Operations that need every operand to have a dimension: a CPU operand of unknown rank is
# still not the 0-dim tensor PyTorch lets mix with CUDA tensors.
_NEEDS_DIMS = {"torch.matmul", "torch.mm", "torch.bmm", "torch.dot", "torch.outer",
               "torch.index_select", "torch.gather", "torch.cat", "torch.concat",
               "torch.concatenate", "matmul", "mm", "bmm", "dot", "outer", "index_select",
               "gather", "@"}


def _short(ctx, node: cst.CSTNode) -> str:
    text = " ".join(ctx.code(node).split())
    return text if len(text) <= 40 else text[:37] + "..."


class DeviceMismatch(Rule):
    """## What it does
    Flags an operation that combines a tensor on the CPU with a tensor on the device:
    arithmetic, comparisons, `@`, `torch.cat`/`torch.stack`, `torch.matmul`/`where`/
    `index_select`/`gather`, `masked_fill`, loss functions, and indexing a CPU tensor with
    an index on the device.

    Where each tensor lives comes from the semantic model: a torch factory without `device=`
    makes a CPU tensor (unless a `with torch.device(...)` around it or the file's
    `torch.set_default_device` says otherwise), `device=`, `.to(device)` and `.cuda()` put one
    on the device, and operations keep their inputs' device, through reassignment, both arms
    of an if/else, loop-carried values, parameters that every call site in the file passes
    the same way, and the values functions of the file return. A tensor moved to
    `device = torch.device("cuda" if torch.cuda.is_available() else "cpu")` counts as on the
    device: the code crashes on every machine that has one.

    Silent on 0-dim CPU tensors (`torch.tensor(1.0)`, `t.sum()`: PyTorch allows mixing them
    with CUDA tensors) and on CPU tensors whose rank is unknown in elementwise operations,
    on indexing a device tensor with a CPU index (allowed), on `.copy_()`, in code that runs
    only without a GPU (`if not use_cuda:`), and wherever a device cannot be known. A device
    that is one only by its variable's name is said so in the message.

    ## Why is this bad?
    PyTorch never moves operands implicitly: the operation raises
    `RuntimeError: Expected all tensors to be on the same device, but found at least two
    devices, cuda:0 and cpu!` (seed tutorial 003 section 8.1). The script runs on a
    CPU-only laptop and crashes on the first GPU machine. Checked on an H200 (torch 2.11):
    `+`, `==`, `@`, `torch.cat`, `torch.where`, `index_select`, `gather`, `masked_fill` and
    `cpu_tensor[gpu_index]` all raise; a 0-dim CPU tensor, `gpu[cpu_index]` and
    `gpu.copy_(cpu)` do not. The exemption is one-way: a 0-dim tensor on the device times an
    n-dim CPU tensor (`x.std() * torch.rand(x.size())`) raises (checked on an H100, torch
    2.11).

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

    ## Fix safety
    No automatic fix: whether to create the tensor on the device or move it depends on
    where else it is used.
    """

    code = "DL015"
    name = "device-mismatch"
    summary = "a CPU tensor is combined with a GPU tensor"
    message = "CPU tensor combined with a tensor on the device"
    hint = "create the CPU tensor with `device=` or move it first (`.to(x.device)`)"
    tokens = ("cuda", "device")

    @staticmethod
    def gate(facts) -> bool:
        """A tensor on the device is involved: something in the file puts one there
        (devicelint/gate.py: `device_placing`)."""
        return facts.device_placing()

    # devicelint confirm: the mismatch error PyTorch raises at the line
    runtime = RuntimeSpec(probe=device_mismatch, whole_file=True, finds=(Find.CPU_OPERAND,))

    def leave_BinaryOperation(self, node: cst.BinaryOperation) -> None:
        op = "@" if type(node.operator) is cst.MatrixMultiply else ""
        self._check(node, [node.left, node.right], op)

    def leave_AugAssign(self, node: cst.AugAssign) -> None:
        op = "@" if isinstance(node.operator, cst.MatrixMultiplyAssign) else ""
        self._check(node, [node.target, node.value], op)

    def leave_Comparison(self, node: cst.Comparison) -> None:
        left = node.left
        for target in node.comparisons:
            if type(target.operator) not in (cst.In, cst.NotIn, cst.Is, cst.IsNot):
                if self._check(node, [left, target.comparator], ""):
                    return
            left = target.comparator

    def leave_Call(self, node: cst.Call) -> None:
        sem = self.ctx.semantic
        qual = sem.qualname(node.func)
        operands: list[cst.BaseExpression] = []
        op = ""
        if qual in _LIST_FUNCTIONS:
            first = node.args[0].value if node.args and not node.args[0].star else None
            if type(first) in (cst.List, cst.Tuple):
                operands = [e.value for e in first.elements if type(e) is cst.Element]
            op = qual
        elif qual in _OPERAND_FUNCTIONS:
            operands = [a.value for a in node.args if not a.star]
            op = qual
        elif qual is None and type(node.func) is cst.Attribute \
                and node.func.attr.value in _OPERAND_METHODS:
            if sem.value(node.func.value).kind is Kind.TENSOR:
                operands = [node.func.value] + [a.value for a in node.args if not a.star]
                op = node.func.attr.value
        if len(operands) >= 2:
            self._check(node, operands, op)

    def leave_Subscript(self, node: cst.Subscript) -> None:
        sem = self.ctx.semantic
        # Only an index that may be a tensor can be on the device (`x[0]`, `x[:, 1:]`,
        # `d["k"]` cannot): looked at first, it spares the indexed value's analysis.
        indexes = [element.slice.value for element in node.slice
                   if type(element.slice) is cst.Index and not sem.never_tensor(element.slice.value)]
        if not indexes:
            return
        indexed = sem.value(node.value)
        if not (indexed.kind is Kind.TENSOR and indexed.place is Place.CPU):
            return
        for index_node in indexes:
            index = sem.value(index_node)
            if index.kind is Kind.TENSOR and index.place is Place.DEVICE \
                    and sem.on_gpu_path(node):
                self.report(
                    node,
                    f"CPU tensor `{_short(self.ctx, node.value)}` is indexed with "
                    f"`{_short(self.ctx, index_node)}`, which is on the device"
                    f"{_hint(index)}",
                )
                return

    def _check(self, node: cst.CSTNode, operands: list[cst.BaseExpression], op: str) -> bool:
        sem = self.ctx.semantic
        # A CPU tensor and a device tensor take two operands that may be tensors (`x * 2`
        # has one): once too few are left to fill both roles, the rest need no analysis.
        operands = [operand for operand in operands if not sem.never_tensor(operand)]
        cpu: Optional[cst.BaseExpression] = None
        device: Optional[tuple[cst.BaseExpression, Value]] = None
        for position, operand in enumerate(operands):
            if (cpu is None) + (device is None) > len(operands) - position:
                return False
            value = sem.value(operand)
            if value.kind is not Kind.TENSOR:
                continue
            if value.place is Place.CPU and cpu is None and _has_dims(sem, operand, value, op):
                cpu = operand
            elif value.place is Place.DEVICE and device is None:
                device = (operand, value)
        if cpu is None or device is None or not sem.on_gpu_path(node):
            return False
        ctx = self.ctx
        self.report(
            node,
            f"`{_short(ctx, cpu)}` is on the CPU but `{_short(ctx, device[0])}` is on the "
            f"device{_hint(device[1])}",
        )
        return True


def _has_dims(sem, operand: cst.BaseExpression, value: Value, op: str) -> bool:
    """Not a 0-dim tensor (those mix with CUDA tensors): a known rank of at least one, an
    operation that needs dimensions, or a tensor the code shows to have one
    (`torch.rand(x.size())` where `x.shape[0]` is read: `shapes.min_rank`)."""
    if value.rank is not None:
        return value.rank >= 1
    return op in _NEEDS_DIMS or shapes.min_rank(sem, operand) >= 1


def _hint(value: Value) -> str:
    return " (taken to be on the device only from a variable's name)" if value.hint else ""

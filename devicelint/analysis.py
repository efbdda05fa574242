"""What the code says about devices, dtypes, tensors and modules: shared by the rules.

Every helper reasons from the code it is given (literals, calls, what a name was assigned
in its scope) and answers None when it cannot tell: rules stay silent rather than guess.
"""

from __future__ import annotations

import re
from typing import Optional

import libcst as cst

from devicelint.context import FileContext
from devicelint.names import dotted_name
# One definition of the argument and literal helpers: the semantic model's.
from devicelint.semantic.model import call_arg, keyword_arg, string_value  # noqa: F401

CUDA, CPU, DEVICE, DTYPE = "cuda", "cpu", "device", "dtype"
OTHER_ACCELERATORS = ("mps", "xpu", "hpu", "npu", "xla", "meta", "mtia", "privateuseone")

TORCH_DTYPES = {
    f"torch.{name}"
    for name in (
        "float", "float16", "float32", "float64", "half", "double", "bfloat16", "int", "int8",
        "int16", "int32", "int64", "long", "short", "uint8", "bool", "complex64",
        "complex128", "cfloat", "cdouble", "float8_e4m3fn", "float8_e5m2", "uint16",
        "uint32", "uint64", "quint8", "qint8", "qint32",
    )
}
TENSOR_FACTORIES = {
    f"torch.{name}"
    for name in (
        "tensor", "as_tensor", "from_numpy", "zeros", "ones", "empty", "full", "rand",
        "randn", "randint", "randperm", "arange", "linspace", "logspace", "eye",
        "zeros_like", "ones_like", "empty_like", "full_like", "rand_like", "randn_like",
        "randint_like", "stack", "cat", "Tensor", "FloatTensor", "LongTensor",
    )
}
_DEVICE_NAME = re.compile(r"(^|_)(device|dev|devices|gpu|cuda_device|target_device)$", re.I)
_DTYPE_NAME = re.compile(r"(^|_)dtype$", re.I)
_RANK_NAME = re.compile(r"^(local_rank|rank|gpu_id|device_id|gpu|cuda_id|device_index)$", re.I)




def kind_of_device_string(text: str) -> Optional[str]:
    head = text.split(":", 1)[0].strip().lower()
    if head == "cuda":
        return CUDA
    if head == "cpu":
        return CPU
    if head in OTHER_ACCELERATORS:
        return head
    return None






def has_star_kwargs(call: cst.Call) -> bool:
    return any(arg.star == "**" for arg in call.args)


def method_name(call: cst.Call) -> Optional[str]:
    """`to` for `x.to(...)`, else None."""
    return call.func.attr.value if isinstance(call.func, cst.Attribute) else None


def device_kind(ctx: FileContext, node: cst.CSTNode, depth: int = 0) -> Optional[str]:
    """What an expression used as a `.to()`/`device=` argument denotes.

    CUDA / CPU / another accelerator's name for literal targets, DEVICE for a device whose
    kind is not visible (`device`, `args.device`, `torch.device(x)`), DTYPE for a dtype,
    and None when the code does not say."""
    if depth > 4:
        return None
    text = string_value(node)
    if text is not None:
        return kind_of_device_string(text)
    if isinstance(node, cst.FormattedString):
        head = "".join(p.value for p in node.parts if isinstance(p, cst.FormattedStringText))
        return kind_of_device_string(head) if head else None
    if isinstance(node, cst.Integer):
        return CUDA  # `.to(0)` / `.cuda(1)`: a CUDA device index
    if isinstance(node, cst.IfExp):
        kinds = {device_kind(ctx, node.body, depth + 1), device_kind(ctx, node.orelse, depth + 1)}
        if kinds <= {CUDA, CPU, DEVICE} and kinds & {CUDA, DEVICE}:
            return DEVICE if len(kinds) > 1 else kinds.pop()
        return None
    if isinstance(node, cst.Call):
        name = ctx.qualname(node.func)
        if name == "torch.device":
            first = call_arg(node, 0, "type")
            kind = device_kind(ctx, first, depth + 1) if first is not None else None
            return kind if kind in (CUDA, CPU) or kind in OTHER_ACCELERATORS else DEVICE
        if name in ("torch.cuda.current_device",):
            return CUDA
        if name in ("torch.get_default_device",):
            return DEVICE
        return None
    if isinstance(node, (cst.Attribute, cst.Name)):
        name = ctx.qualname(node)
        if name in TORCH_DTYPES:
            return DTYPE
        if name is not None and name.startswith("torch."):
            return None
        if isinstance(node, cst.Attribute):
            attr = node.attr.value
            if attr == "dtype" or _DTYPE_NAME.search(attr):
                return DTYPE
            if attr == "device" or _DEVICE_NAME.search(attr):
                return DEVICE
            return None
        return _name_device_kind(ctx, node, depth)
    return None


def _name_device_kind(ctx: FileContext, node: cst.Name, depth: int) -> Optional[str]:
    kinds = set()
    for binding in ctx.bindings_of(node.value, node):
        if binding.kind in ("assign", "annassign", "walrus") and binding.value is not None:
            kinds.add(device_kind(ctx, binding.value, depth + 1))
        elif binding.kind == "param" and binding.value is not None:
            # A default is one possible value: callers may pass any device.
            kind = device_kind(ctx, binding.value, depth + 1)
            kinds.add(DEVICE if kind in (CUDA, CPU, DEVICE) else kind)
    kinds.discard(None)
    if len(kinds) == 1:
        return kinds.pop()
    if kinds and kinds <= {CUDA, CPU, DEVICE}:
        return DEVICE
    if kinds:
        return None
    if _DTYPE_NAME.search(node.value):
        return DTYPE
    if _DEVICE_NAME.search(node.value):
        return DEVICE
    return None


def is_device_kind(kind: Optional[str]) -> bool:
    """True for any device (CUDA, an unknown device, another accelerator), not for CPU."""
    return kind is not None and kind not in (CPU, DTYPE)


def to_call_device(ctx: FileContext, call: cst.Call) -> Optional[str]:
    """For `x.to(...)` / `x.cuda(...)` / `x.cpu()`: the device kind it moves to.

    `.to(torch.float16)` and `.to(dtype=...)` give DTYPE, `.to(other_tensor)` gives None
    (the target is another tensor's device and dtype), `.cuda()` gives CUDA."""
    method = method_name(call)
    if method == "cuda":
        return CUDA
    if method == "cpu":
        return CPU
    if method != "to":
        return None
    device = keyword_arg(call, "device")
    if device is not None:
        return device_kind(ctx, device)
    first = call_arg(call, 0, "\0")
    if first is None:
        return DTYPE if keyword_arg(call, "dtype") is not None else None
    return device_kind(ctx, first)


def is_rank_like(node: cst.CSTNode) -> bool:
    """`local_rank`, `args.local_rank`, `rank`: a per-process device index."""
    name = dotted_name(node)
    return name is not None and bool(_RANK_NAME.match(name.rsplit(".", 1)[-1]))


def local_module_classes(ctx: FileContext) -> set[str]:
    """Names of classes defined in this file that derive (transitively) from nn.Module.

    The traversal indexes every class before rules run; computed once per file."""
    seen = len(ctx.class_defs)
    cached = getattr(ctx, "_module_classes", None)
    if cached is not None and cached[0] == seen:
        return cached[1]
    classes: dict[str, list[cst.BaseExpression]] = {}
    top_level = [s for s in ctx.module.body if isinstance(s, cst.ClassDef)]
    for statement in (*top_level, *ctx.class_defs):
        classes[statement.name.value] = [arg.value for arg in statement.bases]
    found: set[str] = set()
    changed = True
    while changed:
        changed = False
        for name, bases in classes.items():
            if name in found:
                continue
            for base in bases:
                qual = ctx.qualname(base) or ""
                if is_torch_module_class(qual) or dotted_name(base) in found:
                    found.add(name)
                    changed = True
                    break
    ctx._module_classes = (seen, found)  # type: ignore[attr-defined]
    return found


def is_torch_module_class(qualname: str) -> bool:
    """`torch.nn.Linear`, `torch.nn.Module`, `torchvision.models.resnet18`-style classes."""
    if not qualname.startswith("torch.nn."):
        return False
    last = qualname.rsplit(".", 1)[-1]
    return last[:1].isupper() and not any(
        part in qualname for part in (".functional", ".init", ".utils.", ".Parameter")
    )


def is_module_constructor(ctx: FileContext, call: cst.Call) -> bool:
    """A call that builds an nn.Module: `nn.Linear(...)`, a local nn.Module subclass."""
    qual = ctx.qualname(call.func)
    if qual is not None and is_torch_module_class(qual):
        return qual not in ("torch.nn.Parameter", "torch.nn.parameter.Parameter")
    name = dotted_name(call.func)
    return name is not None and name in local_module_classes(ctx)


def is_tensor_factory(ctx: FileContext, call: cst.Call) -> Optional[str]:
    qual = ctx.qualname(call.func)
    return qual if qual in TENSOR_FACTORIES else None

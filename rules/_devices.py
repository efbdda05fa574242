"""Which device a tensor (or an unmoved model) is on, from straight-line data flow.

Shared by DL002 (model-not-moved) and DL015 (device-mismatch). A `DeviceFlow` answers, for an
expression at a point of one function or module scope, one of:

    GPU      created with `device=<a device>` or moved with `.to(device)` / `.cuda()`
    CPU      created on the CPU by a torch factory, with at least one dimension
    CPU_ANY  on the CPU, possibly 0-dim (legal to mix with a GPU tensor)
    NUMBER   a Python number
    GPU_BOX  a dict/list/tuple holding GPU tensors (a batch), for model inputs
    MODEL    a freshly built nn.Module that has not been moved (on the CPU)
    None     cannot tell: stay silent

A name's value is the binding that reaches the use in source order within its scope. A binding
under a branch or loop that does not also contain the use only counts when it agrees with the
binding before it; a binding later in a loop that contains the use (loop-carried) must agree
too. Names not bound in a function fall back to a module-level name bound exactly once.

The analysis needs the whole tree's parent links, so rules call it from `leave_Module`.
"""

from __future__ import annotations

from typing import Optional

import libcst as cst

from devicelint.analysis import (
    CPU,
    DEVICE,
    DTYPE,
    TENSOR_FACTORIES,
    call_arg,
    device_kind,
    is_device_kind,
    is_module_constructor,
    keyword_arg,
    method_name,
    to_call_device,
)
from devicelint.context import COMPREHENSIONS, SCOPE_NODES, FileContext

GPU, CPU_NDIM, CPU_ANY, NUMBER, GPU_BOX, MODEL = "gpu", "cpu", "cpu?", "number", "gpu-box", "model"

_MAX_DEPTH = 24
_BRANCHES = (cst.If, cst.Else, cst.For, cst.While, cst.Try, cst.TryStar, cst.ExceptHandler,
             cst.ExceptStarHandler, cst.Match, cst.Finally)
_STATEMENT_LOOPS = (cst.For, cst.While)

# Methods whose result stays on the receiver's device and keeps at least one dimension.
KEEP_NDIM_METHODS = frozenset({
    "float", "double", "half", "bfloat16", "long", "int", "short", "bool", "byte", "char",
    "clone", "detach", "detach_", "contiguous", "unsqueeze", "unsqueeze_", "t", "transpose",
    "permute", "abs", "exp", "log", "sqrt", "rsqrt", "sigmoid", "relu", "tanh", "neg", "sign",
    "requires_grad_", "flip", "expand", "expand_as", "repeat", "repeat_interleave", "view",
    "reshape", "flatten", "add", "sub", "mul", "div", "pow", "clamp", "clamp_", "clip",
    "softmax", "log_softmax", "round", "floor", "ceil", "sin", "cos", "square", "reciprocal",
    "log1p", "expm1", "add_", "sub_", "mul_", "div_", "fill_", "zero_", "normal_", "uniform_",
    "cumsum", "cumprod", "masked_fill", "masked_fill_", "pin_memory", "tril", "triu",
    "roll", "narrow", "type_as_", "float_", "sort_", "new_zeros", "new_ones", "new_full",
    "new_empty", "new_tensor",
})
# Methods whose result is on the receiver's device, maybe 0-dim.
SAME_DEVICE_METHODS = KEEP_NDIM_METHODS | frozenset({
    "sum", "mean", "max", "min", "amax", "amin", "argmax", "argmin", "norm", "std", "var",
    "prod", "any", "all", "squeeze", "squeeze_", "matmul", "mm", "bmm", "gather",
    "index_select", "nonzero", "masked_select", "logsumexp", "diag", "diagonal", "trace",
    "maximum", "minimum", "where", "eq", "ne", "lt", "le", "gt", "ge", "dot", "select",
    "exp_", "log_", "sqrt_", "abs_", "neg_",
})
# torch.* / torch.nn.functional.* functions whose result is on their first tensor's device.
KEEP_NDIM_FUNCTIONS = frozenset({
    "abs", "exp", "log", "sqrt", "sigmoid", "relu", "tanh", "neg", "sin", "cos", "clamp",
    "clip", "softmax", "log_softmax", "flatten", "reshape", "transpose", "permute",
    "unsqueeze", "flip", "cumsum", "tril", "triu", "roll", "gelu", "silu", "normalize",
    "dropout", "leaky_relu", "pad", "round", "floor", "ceil", "square",
})
SAME_DEVICE_FUNCTIONS = KEEP_NDIM_FUNCTIONS | frozenset({
    "sum", "mean", "max", "min", "amax", "amin", "argmax", "argmin", "norm", "std", "var",
    "prod", "squeeze", "matmul", "mm", "bmm", "gather", "index_select", "nonzero", "where",
    "maximum", "minimum", "add", "sub", "mul", "div", "einsum", "linear", "logsumexp",
})
_SELF_RETURNING_MODULE_METHODS = frozenset({
    "eval", "train", "float", "double", "half", "bfloat16", "requires_grad_", "cpu",
})
_LIKE_FACTORIES = frozenset({
    "torch.zeros_like", "torch.ones_like", "torch.empty_like", "torch.full_like",
    "torch.rand_like", "torch.randn_like", "torch.randint_like",
})
_LIST_FACTORIES = frozenset({"torch.stack", "torch.cat"})
_DATA_FACTORIES = frozenset({"torch.tensor", "torch.as_tensor", "torch.Tensor",
                             "torch.FloatTensor", "torch.LongTensor"})


# torch.nn classes that hold no parameters or buffers: calling one on device tensors is fine.
STATELESS_MODULES = {
    f"torch.nn.{n}" for n in (
        "ReLU", "ReLU6", "GELU", "SiLU", "Sigmoid", "Tanh", "LeakyReLU", "ELU", "SELU", "CELU",
        "Mish", "Hardswish", "Hardsigmoid", "Hardtanh", "Softplus", "Softsign", "Softmax",
        "Softmax2d", "LogSoftmax", "Softmin", "Dropout", "Dropout1d", "Dropout2d", "Dropout3d",
        "AlphaDropout", "FeatureAlphaDropout", "Identity", "Flatten", "Unflatten", "MaxPool1d",
        "MaxPool2d", "MaxPool3d", "AvgPool1d", "AvgPool2d", "AvgPool3d", "AdaptiveAvgPool1d",
        "AdaptiveAvgPool2d", "AdaptiveAvgPool3d", "AdaptiveMaxPool1d", "AdaptiveMaxPool2d",
        "AdaptiveMaxPool3d", "Upsample", "UpsamplingNearest2d", "UpsamplingBilinear2d",
        "PixelShuffle", "PixelUnshuffle", "ZeroPad1d", "ZeroPad2d", "ZeroPad3d",
        "ConstantPad1d", "ConstantPad2d", "ConstantPad3d", "ReflectionPad1d",
        "ReflectionPad2d", "ReflectionPad3d", "ReplicationPad1d", "ReplicationPad2d",
        "ReplicationPad3d", "Tanhshrink", "Threshold", "GLU", "LogSigmoid", "Softshrink",
        "Hardshrink", "CosineSimilarity", "PairwiseDistance", "ChannelShuffle", "Module",
        "Fold", "Unfold", "MaxUnpool1d", "MaxUnpool2d", "MaxUnpool3d", "LPPool1d", "LPPool2d",
        "FractionalMaxPool2d", "FractionalMaxPool3d", "CrossMapLRN2d", "LocalResponseNorm",
    )
}
# Loss classes whose first positional argument is a class-weight tensor (a buffer).
_WEIGHTED_LOSSES = {f"torch.nn.{n}" for n in (
    "CrossEntropyLoss", "NLLLoss", "BCELoss", "BCEWithLogitsLoss", "MultiLabelSoftMarginLoss",
)}


def _fresh_cpu_tensor(node: cst.CSTNode) -> bool:
    return isinstance(node, cst.Call) and keyword_arg(node, "device") is None and (
        isinstance(node.func, cst.Attribute) and node.func.attr.value in ("tensor", "ones", "Tensor", "FloatTensor", "full", "as_tensor", "from_numpy")
    )


def is_stateful_torch_module(
    ctx: FileContext, call: cst.Call, qual: str, cpu_tensor=_fresh_cpu_tensor
) -> bool:
    """Whether a torch.nn.* construction holds parameters or buffers that a device move
    would have to carry: not activations, pooling, dropout, or losses without `weight=`."""
    if qual in STATELESS_MODULES:
        return False
    last = qual.rsplit(".", 1)[-1]
    if last.endswith("Loss"):
        weights = [keyword_arg(call, "weight"), keyword_arg(call, "pos_weight")]
        if qual in _WEIGHTED_LOSSES and call.args and call.args[0].keyword is None:
            weights.append(call.args[0].value)
        # A weight is a buffer that must move too; stateful only when it is a fresh CPU
        # tensor (`self.class_weight`, a registered buffer, moves with its owner).
        return any(w is not None and cpu_tensor(w) for w in weights)
    if last in ("Sequential", "ModuleList", "ModuleDict", "DataParallel",
                "DistributedDataParallel", "FullyShardedDataParallel"):
        # Containers and wrappers: stateful only if they build fresh stateful modules;
        # modules passed in may already be on the device.
        parts = [a.value for a in call.args]
        for part in parts:
            if isinstance(part, (cst.List, cst.Tuple)):
                parts.extend(e.value for e in part.elements)
            elif isinstance(part, cst.Dict):
                parts.extend(e.value for e in part.elements if isinstance(e, cst.DictElement))
        return any(isinstance(p, cst.Call) and is_model_builder(ctx, p, cpu_tensor) for p in parts)
    return True


def class_has_state(ctx: FileContext, name: str, seen: Optional[set] = None) -> bool:
    """A local nn.Module subclass that creates parameters, buffers or stateful submodules
    (or derives from a class that does). Unknown bases count as stateful."""
    cache = getattr(ctx, "_dl_class_state", None)
    if cache is None:
        cache = {}
        ctx._dl_class_state = cache  # type: ignore[attr-defined]
    if name in cache:
        return cache[name]
    seen = seen or set()
    if name in seen:
        return False
    seen.add(name)
    classdef = _class_defs(ctx).get(name)
    if classdef is None:
        return True
    stateful = False
    for base in classdef.bases:
        qual = ctx.qualname(base.value) or ""
        if qual in ("torch.nn.Module", "torch.nn.modules.module.Module"):
            continue
        base_name = base.value.value if isinstance(base.value, cst.Name) else None
        if base_name is not None and base_name in _class_defs(ctx):
            stateful = stateful or class_has_state(ctx, base_name, seen)
        else:
            stateful = True
    if not stateful:
        stateful = _body_has_state(ctx, classdef, seen)
    cache[name] = stateful
    return stateful


def _class_defs(ctx: FileContext) -> dict[str, cst.ClassDef]:
    found = getattr(ctx, "_dl_class_defs", None)
    if found is None:
        found = {}

        class Collect(cst.CSTVisitor):
            def visit_ClassDef(self, node: cst.ClassDef) -> None:
                found[node.name.value] = node

        ctx.module.visit(Collect())
        ctx._dl_class_defs = found  # type: ignore[attr-defined]
    return found


def _body_has_state(ctx: FileContext, classdef: cst.ClassDef, seen: set) -> bool:
    state = []

    class Scan(cst.CSTVisitor):
        def visit_Call(self, node: cst.Call) -> Optional[bool]:
            if state:
                return False
            func = node.func
            if isinstance(func, cst.Attribute) and func.attr.value in (
                "register_buffer", "register_parameter", "add_module", "register_module",
            ):
                state.append(node)
                return False
            qual = ctx.qualname(func) or ""
            if qual in ("torch.nn.Parameter", "torch.nn.parameter.Parameter") or (
                qual.startswith(("torchvision.models.", "transformers."))
            ):
                state.append(node)
            elif is_module_constructor(ctx, node):
                if qual:
                    if is_stateful_torch_module(ctx, node, qual):
                        state.append(node)
                elif isinstance(func, cst.Name) and class_has_state(ctx, func.value, seen):
                    state.append(node)
            elif isinstance(func, cst.Name) and func.value not in _BUILTINS and not qual:
                state.append(node)  # an unknown helper may build submodules
            return None

    classdef.body.visit(Scan())
    return bool(state)


_BUILTINS = {"super", "range", "len", "int", "float", "str", "list", "dict", "tuple", "set",
             "isinstance", "getattr", "setattr", "hasattr", "print", "min", "max", "abs",
             "enumerate", "zip", "sorted", "reversed", "round", "bool", "sum", "any", "all",
             "ValueError", "TypeError", "NotImplementedError", "RuntimeError", "type", "map"}


def is_model_builder(ctx: FileContext, call: cst.Call, cpu_tensor=_fresh_cpu_tensor) -> bool:
    """A call that returns a fresh nn.Module on the CPU: an nn.* / local Module class, a
    torchvision.models builder, a transformers `*Model*.from_pretrained`."""
    qual = ctx.qualname(call.func) or ""
    if is_module_constructor(ctx, call):
        if qual:
            return is_stateful_torch_module(ctx, call, qual, cpu_tensor)
        return isinstance(call.func, cst.Name) and class_has_state(ctx, call.func.value)
    if qual.startswith("torchvision.models."):
        last = qual.rsplit(".", 1)[-1]
        return last[:1].islower() and last not in (
            "list_models", "get_model_weights", "get_weight", "get_model_builder",
        ) and not last.startswith("_")
    if qual.startswith("transformers.") and qual.endswith(".from_pretrained"):
        cls = qual.rsplit(".", 2)[-2]
        return "Model" in cls
    return False


class DeviceFlow:
    def __init__(self, ctx: FileContext) -> None:
        self.ctx = ctx
        self._memo: dict[int, Optional[str]] = {}
        self._anc: dict[int, list[cst.CSTNode]] = {}
        self.default_device_changed = (
            "set_default_device" in ctx.source or "set_default_tensor_type" in ctx.source
        )
        self.global_names: set[str] = set()

    # -- tree helpers ----------------------------------------------------------------
    def ancestors_in_scope(self, node: cst.CSTNode) -> list[cst.CSTNode]:
        """Ancestors of `node` up to (not including) its scope node, innermost first."""
        key = id(node)
        found = self._anc.get(key)
        if found is None:
            found = []
            for ancestor in self.ctx.ancestors(node):
                if isinstance(ancestor, SCOPE_NODES):
                    break
                found.append(ancestor)
            self._anc[key] = found
        return found

    def _conditional(self, binding_node: cst.CSTNode, use_ids: set[int]) -> bool:
        return any(
            isinstance(a, _BRANCHES) and id(a) not in use_ids
            for a in self.ancestors_in_scope(binding_node)
        )

    def under_device_context(self, node: cst.CSTNode) -> bool:
        """Inside `with torch.device(...):` (factories then default to that device)."""
        for ancestor in self.ctx.ancestors(node):
            if isinstance(ancestor, cst.With):
                for item in ancestor.items:
                    kind = device_kind(self.ctx, item.item)
                    if kind is not None and kind != DTYPE:
                        return True
        return False

    def target_kind(self, node: cst.CSTNode) -> Optional[str]:
        """`device_kind`, except that a function parameter is an unknown device whatever its
        default (`def f(x, device="cpu")` is called with a GPU as often as not)."""
        if isinstance(node, cst.Name):
            for binding in self.ctx.bindings_of(node.value, node):
                if binding.kind == "param":
                    return DEVICE
        return device_kind(self.ctx, node)

    # -- names -----------------------------------------------------------------------
    def value_of_name(self, use: cst.Name, depth: int) -> Optional[str]:
        ctx = self.ctx
        name = use.value
        scope = ctx.scope(use)
        bindings = ctx.bindings(scope).get(name)
        if not bindings:
            if scope is ctx.module or name in self.global_names:
                return None
            module_bindings = ctx.bindings(ctx.module).get(name)
            if (
                module_bindings
                and len(module_bindings) == 1
                and module_bindings[0].kind in ("assign", "annassign")
            ):
                return self._binding_value(module_bindings[0], name, depth)
            return None
        ancestors = self.ancestors_in_scope(use)
        use_ids = {id(a) for a in ancestors}
        loops = [
            a for i, a in enumerate(ancestors)
            if isinstance(a, cst.While) or (isinstance(a, cst.For) and _in_for_body(a, ancestors, i, use))
        ]
        order = ctx.order(use)
        before, carried = [], []
        for binding in bindings:
            if binding.kind == "comp":
                comp = _comprehension_of(self, binding.node)
                if comp is not None and id(comp) in use_ids:
                    return None  # a comprehension's own variable
                continue
            if id(binding.node) in use_ids:
                if binding.kind in ("for", "with"):
                    if isinstance(binding.node, cst.For) and (
                        id(binding.node.iter) in use_ids or binding.node.iter is use
                    ):
                        continue  # `for x in f(x)`: the iterable reads the earlier binding
                    before.append(binding)  # the loop variable, unless rebound in the body
                continue  # `x = f(x)`: the right side reads the earlier binding
            if binding.order < order:
                before.append(binding)
            elif loops:
                binding_ancestors = {id(a) for a in self.ancestors_in_scope(binding.node)}
                if any(id(loop) in binding_ancestors for loop in loops):
                    carried.append(binding)
        value = self._resolve(before, name, use_ids, depth)
        for binding in carried:
            if binding.kind == "augassign":
                continue
            value = _merge(value, self._binding_value(binding, name, depth))
        return value

    def _resolve(self, before: list, name: str, use_ids: set[int], depth: int) -> Optional[str]:
        while before and before[-1].kind == "augassign":
            before = before[:-1]  # `x += y` keeps x's device (or crashes: reported there)
        if not before:
            return None
        last = before[-1]
        value = self._binding_value(last, name, depth)
        if value is not None and self._conditional(last.node, use_ids):
            value = _merge(value, self._resolve(before[:-1], name, use_ids, depth))
        return value

    def _binding_value(self, binding, name: str, depth: int) -> Optional[str]:
        if binding.kind not in ("assign", "annassign", "walrus") or binding.value is None:
            return None
        node = binding.node
        targets: list[cst.BaseExpression]
        if isinstance(node, cst.Assign):
            targets = [t.target for t in node.targets]
        elif isinstance(node, cst.AnnAssign):
            targets = [node.target]
        else:
            targets = [node.target]
        for target in targets:
            if isinstance(target, cst.Name) and target.value == name:
                return self.value(binding.value, depth + 1)
            if isinstance(target, (cst.Tuple, cst.List)) and isinstance(
                binding.value, (cst.Tuple, cst.List)
            ):
                left, right = target.elements, binding.value.elements
                if len(left) != len(right) or any(
                    isinstance(e, cst.StarredElement) for e in (*left, *right)
                ):
                    return None
                for target_element, value_element in zip(left, right):
                    if isinstance(target_element.value, cst.Name) and target_element.value.value == name:
                        return self.value(value_element.value, depth + 1)
        return None

    # -- expressions -----------------------------------------------------------------
    def value(self, node: cst.CSTNode, depth: int = 0) -> Optional[str]:
        key = id(node)
        if key in self._memo:
            return self._memo[key]
        if depth > _MAX_DEPTH:
            return None
        result = self._value(node, depth)
        self._memo[key] = result
        return result

    def _value(self, node: cst.CSTNode, depth: int) -> Optional[str]:
        if isinstance(node, (cst.Integer, cst.Float)):
            return NUMBER
        if isinstance(node, cst.Name):
            if node.value in ("True", "False", "None"):
                return None
            return self.value_of_name(node, depth)
        if isinstance(node, cst.Call):
            return self._call_value(node, depth)
        if isinstance(node, cst.BinaryOperation):
            left, right = self.value(node.left, depth + 1), self.value(node.right, depth + 1)
            return combine(left, right, isinstance(node.operator, cst.MatrixMultiply))
        if isinstance(node, cst.UnaryOperation):
            inner = self.value(node.expression, depth + 1)
            return inner if inner in (GPU, CPU_NDIM, CPU_ANY, NUMBER) else None
        if isinstance(node, cst.Comparison):
            value = self.value(node.left, depth + 1)
            for target in node.comparisons:
                value = combine(value, self.value(target.comparator, depth + 1), False)
            return value
        if isinstance(node, cst.Attribute):
            if node.attr.value in ("T", "mT", "data", "real", "imag", "grad"):
                inner = self.value(node.value, depth + 1)
                return inner if inner in (GPU, CPU_NDIM, CPU_ANY) else None
            return None
        if isinstance(node, cst.Subscript):
            inner = self.value(node.value, depth + 1)
            if inner in (GPU, GPU_BOX):
                return GPU
            if inner == CPU_NDIM and all(_keeps_dims(e.slice) for e in node.slice):
                return CPU_NDIM  # `x[:, None]`, `x[1:]`: slicing keeps the dimensions
            if inner in (CPU_NDIM, CPU_ANY):
                return CPU_ANY
            return None
        if isinstance(node, cst.IfExp):
            return _merge(self.value(node.body, depth + 1), self.value(node.orelse, depth + 1))
        if isinstance(node, (cst.List, cst.Tuple, cst.Set)):
            for element in node.elements:
                if self.value(element.value, depth + 1) in (GPU, GPU_BOX):
                    return GPU_BOX
            return None
        if isinstance(node, cst.Dict):
            for element in node.elements:
                if isinstance(element, cst.DictElement) and self.value(
                    element.value, depth + 1
                ) in (GPU, GPU_BOX):
                    return GPU_BOX
            return None
        if isinstance(node, (cst.ListComp, cst.GeneratorExp, cst.SetComp)):
            return GPU_BOX if self.value(node.elt, depth + 1) in (GPU, GPU_BOX) else None
        if isinstance(node, cst.DictComp):
            return GPU_BOX if self.value(node.value, depth + 1) in (GPU, GPU_BOX) else None
        if isinstance(node, cst.NamedExpr):
            return self.value(node.value, depth + 1)
        return None

    def _call_value(self, call: cst.Call, depth: int) -> Optional[str]:
        ctx = self.ctx
        qual = ctx.qualname(call.func)
        method = method_name(call) if qual is None else None
        if method is not None:
            receiver = call.func.value  # type: ignore[attr-defined]
            if method in ("to", "cuda", "cpu"):
                inner = self.value(receiver, depth + 1)
                kind = to_call_device(ctx, call)
                if kind == CPU and method == "to":
                    first = call_arg(call, 0, "device")
                    if first is not None:
                        kind = self.target_kind(first)
                if kind == DTYPE:
                    return inner if inner in (GPU, CPU_NDIM, CPU_ANY, MODEL) else None
                if inner == MODEL:
                    return MODEL if kind == CPU else None
                if kind == CPU:
                    return inner if inner in (CPU_NDIM, CPU_ANY) else CPU_ANY
                if is_device_kind(kind):
                    target = call_arg(call, 0, "device")
                    if (
                        isinstance(target, cst.Attribute)
                        and target.attr.value == "device"
                        and self.value(target.value, depth + 1) in (CPU_NDIM, CPU_ANY)
                    ):
                        return inner if inner in (CPU_NDIM, CPU_ANY) else CPU_ANY
                    return GPU
                if kind is None and method == "to":
                    first = call_arg(call, 0, "other")
                    if first is not None and self.value(first, depth + 1) == GPU:
                        return GPU
                return None
            if method in _SELF_RETURNING_MODULE_METHODS:
                inner = self.value(receiver, depth + 1)
                if inner == MODEL:
                    return MODEL
            if method in SAME_DEVICE_METHODS:
                inner = self.value(receiver, depth + 1)
                if inner == GPU:
                    return GPU
                if inner in (CPU_NDIM, CPU_ANY):
                    if method.startswith("new_"):
                        return None if keyword_arg(call, "device") is not None else CPU_ANY
                    return inner if method in KEEP_NDIM_METHODS else CPU_ANY
            return None
        if qual is None:
            if is_model_builder(ctx, call, self._is_cpu) and self._builds_on_cpu(call):
                return MODEL
            return None
        if qual in TENSOR_FACTORIES:
            return self._factory_value(call, qual, depth)
        if qual.startswith("torch.cuda.") and qual.endswith("Tensor"):
            return GPU
        if is_model_builder(ctx, call, self._is_cpu):
            return MODEL if self._builds_on_cpu(call) else None
        short = qual.rsplit(".", 1)[-1]
        if (qual == f"torch.{short}" or qual == f"torch.nn.functional.{short}") and (
            short in SAME_DEVICE_FUNCTIONS
        ):
            first = call_arg(call, 0, "input")
            if first is None:
                return None
            inner = self.value(first, depth + 1)
            if inner == GPU:
                return GPU
            if inner in (CPU_NDIM, CPU_ANY) and short in KEEP_NDIM_FUNCTIONS:
                return inner
            return CPU_ANY if inner in (CPU_NDIM, CPU_ANY) else None
        return None

    def _is_cpu(self, node: cst.CSTNode) -> bool:
        return self.value(node) in (CPU_NDIM, CPU_ANY)

    def _builds_on_cpu(self, call: cst.Call) -> bool:
        if keyword_arg(call, "device") is not None or keyword_arg(call, "device_map") is not None:
            return False
        if any(arg.star == "**" for arg in call.args):
            return False
        if self.default_device_changed or self.under_device_context(call):
            return False
        return True

    def _factory_value(self, call: cst.Call, qual: str, depth: int) -> Optional[str]:
        device = keyword_arg(call, "device")
        if isinstance(device, cst.Attribute) and device.attr.value == "device":
            source = self.value(device.value, depth + 1)
            if source == GPU:
                return GPU
            if source in (CPU_NDIM, CPU_ANY):
                device = None  # on the CPU like its source: read the shape below
        if device is not None:
            kind = self.target_kind(device)
            if is_device_kind(kind) and kind != DTYPE:
                return GPU
            if kind == CPU:
                return CPU_ANY
            return None
        if any(arg.star for arg in call.args):
            return None
        if qual in _LIKE_FACTORIES:
            first = call_arg(call, 0, "input")
            return self.value(first, depth + 1) if first is not None else None
        if qual in _LIST_FACTORIES:
            first = call_arg(call, 0, "tensors")
            if not isinstance(first, (cst.List, cst.Tuple)) or not first.elements:
                return None
            values = {self.value(e.value, depth + 1) for e in first.elements}
            if values == {GPU}:
                return GPU
            if values <= {CPU_NDIM, CPU_ANY}:
                return CPU_NDIM if qual == "torch.cat" or values == {CPU_NDIM} else CPU_NDIM
            return None
        if self.default_device_changed or self.under_device_context(call):
            return None
        if qual in _DATA_FACTORIES:
            first = call_arg(call, 0, "data")
            if first is None:
                return CPU_ANY
            if _is_sequence_literal(self, first, depth):
                return CPU_NDIM
            if qual in ("torch.Tensor", "torch.FloatTensor", "torch.LongTensor"):
                return CPU_NDIM if isinstance(first, cst.Integer) else None
            inner = self.value(first, depth + 1)
            if qual == "torch.as_tensor" and inner == GPU:
                return GPU
            if inner == NUMBER:
                return CPU_ANY
            return None if inner == GPU else CPU_ANY
        if qual == "torch.from_numpy":
            return CPU_NDIM
        # Shaped factories: 0-dim only with an empty size, `torch.zeros(())`.
        for arg in call.args:
            if isinstance(arg.value, (cst.Tuple, cst.List)) and not arg.value.elements:
                return CPU_ANY
        size = keyword_arg(call, "size")
        if isinstance(size, (cst.Tuple, cst.List)) and not size.elements:
            return CPU_ANY
        if not call.args:
            return None
        return CPU_NDIM


def _is_sequence_literal(flow: DeviceFlow, node: cst.CSTNode, depth: int) -> bool:
    """A list/tuple literal or comprehension (n-dim data), or a name bound only to one."""
    if isinstance(node, (cst.List, cst.Tuple, cst.ListComp)):
        return bool(getattr(node, "elements", True))
    if isinstance(node, cst.BinaryOperation) and isinstance(node.left, cst.List):
        return True
    if isinstance(node, cst.Name) and depth < _MAX_DEPTH:
        bindings = flow.ctx.bindings_of(node.value, node)
        values = [b.value for b in bindings if b.kind in ("assign", "annassign")]
        return bool(values) and len(values) == len(bindings) and all(
            v is not None and _is_sequence_literal(flow, v, depth + 4) and not isinstance(v, cst.Name)
            for v in values
        )
    return False


def _keeps_dims(element: cst.BaseSlice) -> bool:
    if isinstance(element, cst.Slice):
        return True
    value = element.value if isinstance(element, cst.Index) else None
    return isinstance(value, cst.Ellipsis) or (isinstance(value, cst.Name) and value.value == "None")


def _in_for_body(loop: cst.For, ancestors: list, index: int, use: cst.CSTNode) -> bool:
    child = ancestors[index - 1] if index > 0 else use
    return child is loop.body or child is loop.orelse


def _comprehension_of(flow: DeviceFlow, node: cst.CSTNode) -> Optional[cst.CSTNode]:
    for ancestor in flow.ctx.ancestors(node):
        if isinstance(ancestor, COMPREHENSIONS):
            return ancestor
    return None


def _merge(a: Optional[str], b: Optional[str]) -> Optional[str]:
    if a == b:
        return a
    if {a, b} == {CPU_NDIM, CPU_ANY}:
        return CPU_ANY
    return None


def combine(left: Optional[str], right: Optional[str], matmul: bool) -> Optional[str]:
    """The device of `left <op> right` (None on a mismatch: that is reported at the op)."""
    values = {left, right}
    if GPU in values:
        return None if values & {CPU_NDIM, GPU_BOX, MODEL} else GPU
    if values & {GPU_BOX, MODEL}:
        return None
    if CPU_NDIM in values and values <= {CPU_NDIM, CPU_ANY, NUMBER}:
        return CPU_ANY if matmul else CPU_NDIM
    if values <= {CPU_ANY, NUMBER} and CPU_ANY in values:
        return CPU_ANY
    if values == {NUMBER}:
        return NUMBER
    return None


def is_mismatch(a: Optional[str], b: Optional[str]) -> bool:
    return {a, b} == {GPU, CPU_NDIM}

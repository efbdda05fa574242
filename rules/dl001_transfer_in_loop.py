from __future__ import annotations

import re
from typing import Optional

import libcst as cst

from devicelint.analysis import (
    CPU,
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
from devicelint.builders import reindent
from devicelint.context import COMPREHENSIONS, FileContext, children
from devicelint.names import dotted_name
from devicelint.rule import Rule

# ---------------------------------------------------------------------------------------
# Where a value lives: a small, function-local data-flow classifier shared by DL001/DL004.
# (Candidates for devicelint/analysis.py.)
# ---------------------------------------------------------------------------------------

ON_DEVICE = "on-device"  # moved with .to(device)/.cuda(), or created with device=<accelerator>
MODEL_OUT = "model-out"  # the output of a model/loss call: on the device if the model is
CPU_TENSOR = "cpu-tensor"  # built without a device, `.cpu()`, `torch.from_numpy`
ARRAY = "array"  # a numpy array
PYTHON = "python"  # Python numbers/strings, `.item()`, `.tolist()` results
ROWS = "rows"  # a Python list of samples (comprehension, `list(...)`, a literal of literals)
FIELDS = "fields"  # a fixed tuple/list/dict of named things: the fields of one batch
LOADER = "loader"  # a DataLoader (or anything iterated as one): yields whole batches
BATCH = "batch"  # one element of a loader: a whole batch, on the CPU
DATASET = "dataset"  # a map-style dataset: yields single samples
SAMPLE = "sample"  # one element of a dataset
MODULE = "module"  # an nn.Module
INDEX = "index"  # an int from range()/enumerate()

TENSORISH = (ON_DEVICE, MODEL_OUT, CPU_TENSOR)
# Collections whose elements are single rows/samples that still live on the host.
HOST_ROWS = (CPU_TENSOR, ARRAY, ROWS, DATASET)

MODEL_NAME = re.compile(
    r"^(model|net|network|module|encoder|decoder|backbone|classifier|generator|discriminator"
    r"|policy|critic|actor|teacher|student|transformer|unet|vae|\w+_model|\w+_net|model_\w+)$",
    re.I,
)
LOSS_NAME = re.compile(r"^(criterion|loss_fn|loss_func|lossfn|loss_function|\w+_criterion|\w+_loss_fn)$", re.I)
LOADER_NAME = re.compile(r"(loader|^dl$|_dl$|^dl_)", re.I)
DATASET_NAME = re.compile(r"(^|_)(dataset|ds)$", re.I)

# Tensor methods whose result lives where their receiver lives.
SAME_PLACE_METHODS = {
    "detach", "clone", "float", "half", "double", "long", "int", "bool", "bfloat16",
    "contiguous", "view", "reshape", "squeeze", "unsqueeze", "flatten", "permute",
    "transpose", "t", "sum", "mean", "max", "min", "argmax", "argmin", "abs", "exp", "log",
    "sqrt", "pow", "softmax", "log_softmax", "sigmoid", "tanh", "relu", "norm", "std", "var",
    "eq", "ne", "gt", "lt", "ge", "le", "any", "all", "mul", "add", "sub", "div", "matmul",
    "type_as", "expand", "repeat", "masked_fill", "clamp", "round", "floor", "ceil", "topk",
    "sort", "cumsum", "prod", "square", "neg", "isnan", "isinf", "isfinite", "count_nonzero",
    "nonzero", "logical_and", "logical_or", "logical_not", "to_dense", "requires_grad_",
    "unbind", "numel", "astype", "copy", "squeeze_", "unsqueeze_", "pin_memory", "share_memory_",
}
ROW_SPLIT_METHODS = {"unbind"}
TIMING_FUNCS = {
    "time.time", "time.perf_counter", "time.monotonic", "time.process_time",
    "time.perf_counter_ns", "time.time_ns", "time.monotonic_ns", "timeit.default_timer",
    "torch.cuda.Event", "torch.cuda.event.Event", "torch.Event",
}


def func_tail(call: cst.Call) -> Optional[str]:
    """`step` for `opt.step()`, `model` for `model()`, else None."""
    if isinstance(call.func, cst.Attribute):
        return call.func.attr.value
    if isinstance(call.func, cst.Name):
        return call.func.value
    return None


def strip_wrappers(node: cst.BaseExpression) -> cst.BaseExpression:
    """`loader` for `enumerate(tqdm(loader))`, `iter(loader)`, `list(...)`."""
    while isinstance(node, cst.Call) and node.args and not node.args[0].keyword:
        tail = func_tail(node)
        if tail in ("enumerate", "tqdm", "iter", "list", "tuple", "sorted", "reversed", "track"):
            node = node.args[0].value
        else:
            break
    return node


class Flow:
    """Classifies expressions by where their value lives, from what the code shows.

    Answers None when the code does not say. Must be used after the traversal (in
    `leave_Module`), when every node has its traversal order."""

    def __init__(self, ctx: FileContext) -> None:
        self.ctx = ctx
        self._cache: dict[int, Optional[str]] = {}
        self._modules: dict[int, bool] = {}
        self.device_evidence = (
            "cuda" in ctx.source or "device" in ctx.source or ".to(" in ctx.source
        )

    @classmethod
    def of(cls, ctx: FileContext) -> "Flow":
        flow = getattr(ctx, "_dl_flow", None)
        if flow is None:
            flow = cls(ctx)
            ctx._dl_flow = flow  # type: ignore[attr-defined]
        return flow

    # -- bindings ------------------------------------------------------------------
    def reaching(self, name: cst.Name):
        """The last binding of `name` before `name` in its scope (flow-insensitive
        across branches), skipping the statement that contains the use (`x = x.to(d)`)."""
        ctx = self.ctx
        use_order = ctx.order(name)
        bindings = ctx.bindings_of(name.value, name)
        if not bindings:
            return None
        best, best_order = None, -2
        ancestors = None
        for binding in bindings:
            order = ctx.order(binding.node)
            if order < 0 or order > use_order:
                continue
            if binding.kind in ("assign", "annassign", "augassign", "walrus"):
                if ancestors is None:
                    ancestors = {id(a) for a in ctx.ancestors(name)}
                if id(binding.node) in ancestors:
                    continue
            if order > best_order:
                best, best_order = binding, order
        if best is None and bindings and all(ctx.order(b.node) > use_order for b in bindings):
            # Only bound later (e.g. at module level, used in a function): take the first.
            if ctx.scope(bindings[0].node) is not ctx.scope(name):
                return bindings[0]
        return best

    # -- modules ---------------------------------------------------------------------
    def is_module(self, node: cst.BaseExpression, depth: int = 0) -> bool:
        key = id(node)
        cached = self._modules.get(key)
        if cached is not None:
            return cached
        result = self._is_module(node, depth)
        self._modules[key] = result
        return result

    def _is_module(self, node: cst.BaseExpression, depth: int) -> bool:
        if depth > 5:
            return False
        ctx = self.ctx
        if isinstance(node, cst.Call):
            if is_module_constructor(ctx, node):
                return True
            qual = ctx.qualname(node.func) or ""
            if qual.startswith("torchvision.models.") and qual.rsplit(".", 1)[-1][:1].islower():
                return True
            if qual.endswith(".from_pretrained") and "Model" in qual:
                return True
            method = method_name(node)
            if method in ("to", "cuda", "cpu", "eval", "train", "half", "float", "requires_grad_"):
                return self.is_module(node.func.value, depth + 1)  # type: ignore[union-attr]
            return False
        if isinstance(node, cst.Attribute):
            return bool(MODEL_NAME.match(node.attr.value)) and not isinstance(node.value, cst.Call)
        if isinstance(node, cst.Name):
            binding = self.reaching(node)
            if binding is not None and binding.kind in ("assign", "annassign") and binding.value is not None:
                if self.is_module(binding.value, depth + 1):
                    return True
            return bool(MODEL_NAME.match(node.value))
        return False

    def is_loss_fn(self, node: cst.BaseExpression) -> bool:
        name = dotted_name(node)
        return name is not None and bool(LOSS_NAME.match(name.rsplit(".", 1)[-1]))

    # -- values ----------------------------------------------------------------------
    def origin(self, node: cst.CSTNode, depth: int = 0) -> Optional[str]:
        key = id(node)
        if key in self._cache:
            return self._cache[key]
        self._cache[key] = None  # cycles answer "unknown"
        result = self._origin(node, depth) if depth <= 8 else None
        self._cache[key] = result
        return result

    def _origin(self, node: cst.CSTNode, depth: int) -> Optional[str]:
        ctx = self.ctx
        if isinstance(node, (cst.Integer, cst.Float, cst.SimpleString, cst.ConcatenatedString,
                             cst.FormattedString, cst.Imaginary)):
            return PYTHON
        if isinstance(node, cst.Name):
            if node.value in ("True", "False", "None"):
                return PYTHON
            return self._name_origin(node, depth)
        if isinstance(node, (cst.List, cst.Tuple, cst.Set)):
            if node.elements and all(
                isinstance(e.value, (cst.Integer, cst.Float, cst.List, cst.Tuple))
                and self.origin(e.value, depth + 1) in (PYTHON, ROWS)
                for e in node.elements
            ):
                # `[[1, 2], [3, 4]]`, `[0.5, 1.5]`: data rows. Strings are field names.
                return ROWS if isinstance(node, cst.List) else PYTHON
            return FIELDS
        if isinstance(node, cst.Dict):
            return FIELDS
        if isinstance(node, (cst.ListComp, cst.GeneratorExp)):
            return self._comprehension_origin(node, depth)
        if isinstance(node, cst.DictComp):
            return FIELDS
        if isinstance(node, cst.Subscript):
            base = self.origin(node.value, depth + 1)
            if base in TENSORISH or base == ARRAY:
                return base
            if base in (BATCH, SAMPLE):
                return base
            if base == DATASET:
                return SAMPLE
            if base == ROWS:
                return None
            return None
        if isinstance(node, cst.Attribute):
            attr = node.attr.value
            if attr in ("shape", "ndim", "dtype", "device", "is_cuda", "data_ptr"):
                return PYTHON
            if attr in ("T", "mT", "H", "real", "imag", "grad", "data"):
                return self.origin(node.value, depth + 1)
            if attr in ("weight", "bias"):
                root = node.value
                while isinstance(root, cst.Attribute):
                    root = root.value
                if isinstance(root, cst.Name) and self.is_module(root):
                    return MODEL_OUT  # a parameter lives where its model lives
            return None
        if isinstance(node, cst.BinaryOperation):
            return self._combine(node.left, node.right, depth)
        if isinstance(node, cst.UnaryOperation):
            return self.origin(node.expression, depth + 1)
        if isinstance(node, cst.Comparison):
            sides = [node.left] + [c.comparator for c in node.comparisons]
            if any(isinstance(c.operator, (cst.In, cst.NotIn, cst.Is, cst.IsNot)) for c in node.comparisons):
                return PYTHON
            result = None
            for side in sides:
                kind = self.origin(side, depth + 1)
                if kind in (ON_DEVICE, MODEL_OUT):
                    return kind
                if kind in (CPU_TENSOR, ARRAY):
                    result = kind
            if result is None and all(self.origin(s, depth + 1) == PYTHON for s in sides):
                return PYTHON
            return result
        if isinstance(node, cst.BooleanOperation):
            return None
        if isinstance(node, cst.Call):
            return self._call_origin(node, depth)
        return None

    def _comprehension_origin(self, node, depth: int) -> Optional[str]:
        """A list built per element holds rows when its elements (or what it walks) are
        host data; a list of modules or of device tensors does not."""
        element = self.origin(node.elt, depth + 1)
        if element in (MODULE, FIELDS, ON_DEVICE, MODEL_OUT, BATCH):
            return FIELDS if element in (MODULE, FIELDS) else None
        walked = self.iter_kind(node.for_in.iter, depth + 1)
        if walked in (FIELDS, LOADER, MODULE):
            return FIELDS
        if element in (CPU_TENSOR, ARRAY, PYTHON, ROWS, SAMPLE) or walked in HOST_ROWS:
            return ROWS
        return None

    def _combine(self, left, right, depth: int) -> Optional[str]:
        kinds = {self.origin(left, depth + 1), self.origin(right, depth + 1)}
        for kind in (ON_DEVICE, MODEL_OUT, CPU_TENSOR, ARRAY):
            if kind in kinds:
                return kind
        if kinds == {PYTHON}:
            return PYTHON
        return None

    def _name_origin(self, node: cst.Name, depth: int) -> Optional[str]:
        binding = self.reaching(node)
        if binding is None:
            return None
        kind = binding.kind
        if kind in ("assign", "annassign", "walrus"):
            if binding.value is None:
                return self._annotation_origin(binding.node)
            value = self._unpacked_value(binding, node.value)
            return self.origin(value, depth + 1) if value is not None else self._packed_origin(binding.value, depth)
        if kind == "augassign":
            value = self.origin(binding.value, depth + 1)
            if value in (ON_DEVICE, MODEL_OUT):
                return value
            return None
        if kind in ("for", "comp"):
            return self.element_origin(binding.value, depth + 1, binding.node, node.value)
        if kind == "param":
            return self._annotation_origin(binding.node)
        if kind == "def":
            return None
        return None

    def _unpacked_value(self, binding, name: str) -> Optional[cst.BaseExpression]:
        """For `a, b = x, y` the element bound to `name`; for `a = x` the value itself."""
        node = binding.node
        target = None
        if isinstance(node, cst.Assign):
            for t in node.targets:
                target = t.target
        elif isinstance(node, (cst.AnnAssign, cst.NamedExpr)):
            target = node.target
        if isinstance(target, cst.Name):
            return binding.value
        if isinstance(target, (cst.Tuple, cst.List)) and isinstance(binding.value, (cst.Tuple, cst.List)):
            if len(target.elements) == len(binding.value.elements):
                for t, v in zip(target.elements, binding.value.elements):
                    if isinstance(t.value, cst.Name) and t.value.value == name:
                        return v.value
        return None

    def _packed_origin(self, value: cst.BaseExpression, depth: int) -> Optional[str]:
        """`out, hidden = model(x)`: the parts of a model's output are model outputs."""
        kind = self.origin(value, depth + 1)
        if kind in (MODEL_OUT, ON_DEVICE, CPU_TENSOR, ARRAY, BATCH, SAMPLE):
            return kind
        return None

    def _annotation_origin(self, node: cst.CSTNode) -> Optional[str]:
        annotation = getattr(node, "annotation", None)
        if annotation is None:
            return None
        text = self.ctx.code(annotation.annotation)
        if re.search(r"\bndarray\b", text):
            return ARRAY
        if text in ("int", "float", "str", "bool"):
            return PYTHON
        if isinstance(node, cst.Param) and LOADER_NAME.search(node.name.value):
            return LOADER
        return None

    def element_origin(self, iterable: cst.BaseExpression, depth: int, loop=None, name=None) -> Optional[str]:
        """What a loop over `iterable` binds to its target."""
        if isinstance(iterable, cst.Call):
            tail = func_tail(iterable)
            if tail == "range":
                return INDEX
            if tail in ("items", "values", "keys") and isinstance(iterable.func, cst.Attribute):
                return FIELDS
            if tail in ("enumerate", "zip") and name is not None and loop is not None:
                return self._zip_element(iterable, tail, loop, name, depth)
        kind = self.iter_kind(iterable, depth)
        if kind in (CPU_TENSOR, ON_DEVICE, MODEL_OUT, ARRAY):
            return kind
        if kind == LOADER:
            return BATCH
        if kind == DATASET:
            return SAMPLE
        return None

    def _zip_element(self, call: cst.Call, tail: str, loop, name: str, depth: int) -> Optional[str]:
        target = loop.target if isinstance(loop, (cst.For, cst.CompFor)) else None
        if not isinstance(target, (cst.Tuple, cst.List)):
            return None
        elements = [e.value for e in target.elements]
        args = [a.value for a in call.args if not a.keyword]
        if tail == "enumerate":
            if len(elements) != 2 or not args:
                return None
            if isinstance(elements[0], cst.Name) and elements[0].value == name:
                return INDEX
            if isinstance(elements[1], cst.Name) and elements[1].value == name:
                return self.element_origin(args[0], depth + 1)
            return None
        for element, arg in zip(elements, args):
            if isinstance(element, cst.Name) and element.value == name:
                return self.element_origin(arg, depth + 1)
        return None

    def iter_kind(self, iterable: cst.BaseExpression, depth: int = 0) -> Optional[str]:
        """What kind of collection a loop walks."""
        inner = strip_wrappers(iterable)
        if isinstance(inner, cst.Call):
            qual = self.ctx.qualname(inner.func) or ""
            if qual.endswith("DataLoader") or qual.endswith("DataLoader2"):
                return LOADER
            tail = func_tail(inner)
            if tail in ("items", "values", "keys", "parameters", "named_parameters",
                        "children", "modules", "named_modules", "buffers", "state_dict"):
                return FIELDS
            if tail in ROW_SPLIT_METHODS and isinstance(inner.func, cst.Attribute):
                base = self.origin(inner.func.value, depth + 1)
                return base if base in TENSORISH else None
            if tail in ("split", "chunk", "tensor_split"):
                return None
        name = dotted_name(inner)
        if name is not None:
            last = name.rsplit(".", 1)[-1]
            if LOADER_NAME.search(last):
                return LOADER
        kind = self.origin(inner, depth + 1)
        if kind is None and name is not None and DATASET_NAME.search(name.rsplit(".", 1)[-1]):
            return DATASET
        return kind

    def _call_origin(self, node: cst.Call, depth: int) -> Optional[str]:
        ctx = self.ctx
        qual = ctx.qualname(node.func)
        method = method_name(node)
        if method in ("to", "cuda", "cpu") and isinstance(node.func, cst.Attribute):
            target = to_call_device(ctx, node)
            receiver = node.func.value
            if self.is_module(receiver):
                return MODULE
            if target == CPU:
                return CPU_TENSOR
            if target == DTYPE:
                return self.origin(receiver, depth + 1)
            if is_device_kind(target):
                return ON_DEVICE
            return None
        if method == "numpy":
            return ARRAY
        if method in ("item", "tolist"):
            return PYTHON if method == "item" else ROWS
        if method in ("size", "dim", "numel", "__len__", "data_ptr", "element_size"):
            return PYTHON
        if qual is not None:
            if qual in TENSOR_FACTORIES:
                return self._factory_origin(node, qual, depth)
            if qual.startswith(("numpy.", "np.")):
                return ARRAY
            if qual.startswith("torch.utils.data.") and qual.endswith("DataLoader"):
                return LOADER
            if qual.startswith(("torchvision.datasets.", "torch.utils.data.")) and qual.rsplit(".", 1)[-1][:1].isupper():
                return DATASET
            if qual.startswith("torch.") and not qual.startswith(("torch.cuda", "torch.utils", "torch.optim")):
                for arg in node.args:
                    kind = self.origin(arg.value, depth + 1)
                    if kind in TENSORISH or kind == ARRAY:
                        return kind if kind != ARRAY else CPU_TENSOR
                return None
        if isinstance(node.func, cst.Name) and node.func.value in ("len", "int", "float", "bool", "str", "round", "abs", "sum", "min", "max"):
            if node.func.value in ("sum", "min", "max", "abs"):
                return None
            return PYTHON
        if isinstance(node.func, cst.Name) and node.func.value in ("list", "sorted", "tuple"):
            if node.args:
                inner = self.origin(node.args[0].value, depth + 1)
                if inner in (CPU_TENSOR, ARRAY, ROWS, PYTHON):
                    return ROWS
            return None
        if method in SAME_PLACE_METHODS and isinstance(node.func, cst.Attribute):
            base = self.origin(node.func.value, depth + 1)
            if base in TENSORISH or base == ARRAY:
                return base
            return None
        if is_module_constructor(ctx, node) or (
            isinstance(node.func, cst.Name) and node.func.value in _local_dataset_classes(ctx)
        ):
            return MODULE if is_module_constructor(ctx, node) else DATASET
        if self.is_module(node.func) or self.is_loss_fn(node.func):
            return MODEL_OUT
        return None

    def _factory_origin(self, node: cst.Call, qual: str, depth: int) -> Optional[str]:
        device = keyword_arg(node, "device")
        if device is not None:
            kind = device_kind(self.ctx, device)
            if kind == CPU:
                return CPU_TENSOR
            return ON_DEVICE if is_device_kind(kind) else None
        if qual.endswith("_like") or qual in ("torch.stack", "torch.cat"):
            first = call_arg(node, 0, "input")
            if first is None:
                return None
            if qual in ("torch.stack", "torch.cat"):
                kind = self.origin(first, depth + 1)
                return CPU_TENSOR if kind in (ROWS, ARRAY) else (kind if kind in TENSORISH else None)
            kind = self.origin(first, depth + 1)
            return kind if kind in TENSORISH else None
        if qual in ("torch.tensor", "torch.as_tensor"):
            data = call_arg(node, 0, "data")
            if data is not None and qual == "torch.as_tensor":
                kind = self.origin(data, depth + 1)
                if kind in (ON_DEVICE, MODEL_OUT):
                    return kind
        return CPU_TENSOR


def _local_dataset_classes(ctx: FileContext) -> set[str]:
    cached = getattr(ctx, "_dl_dataset_classes", None)
    if cached is not None:
        return cached
    found: set[str] = set()
    for statement in ctx.module.body:
        if isinstance(statement, cst.ClassDef):
            for base in statement.bases:
                qual = ctx.qualname(base.value) or dotted_name(base.value) or ""
                if qual.endswith("Dataset") or qual in found:
                    found.add(statement.name.value)
    ctx._dl_dataset_classes = found  # type: ignore[attr-defined]
    return found


def names_in(node: cst.CSTNode) -> set[str]:
    """Every Name read in a (small) expression."""
    found: set[str] = set()
    stack = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, cst.Name):
            found.add(current.value)
            continue
        if isinstance(current, cst.Attribute):
            stack.append(current.value)
            continue
        stack.extend(children(current))
    return found


def name_nodes(node: cst.CSTNode) -> tuple[list[cst.Name], list[cst.Subscript]]:
    """The Name nodes read in an expression, and its subscripts."""
    names: list[cst.Name] = []
    subscripts: list[cst.Subscript] = []
    stack = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, cst.Name):
            names.append(current)
            continue
        if isinstance(current, cst.Attribute):
            if current.attr.value not in METADATA_ATTRS:
                stack.append(current.value)
            continue
        if isinstance(current, cst.Call) and (
            func_tail(current) in METADATA_CALLS
        ):
            continue
        if isinstance(current, cst.Subscript):
            subscripts.append(current)
        stack.extend(children(current))
    return names, subscripts


# Reading these from a row reads no row data: `row.shape`, `len(row)`, `row.size(0)`.
METADATA_ATTRS = {"shape", "dtype", "device", "ndim", "is_cuda", "layout", "requires_grad"}
METADATA_CALLS = {"len", "size", "dim", "numel", "isinstance", "type", "id", "data_ptr"}


def _bound(target: cst.CSTNode) -> set[str]:
    from devicelint.context import bound_names

    return set(bound_names(target))


def loop_clauses(loop: cst.CSTNode) -> list[tuple[cst.CSTNode, cst.BaseExpression]]:
    """(target, iterable) for each `for` clause of a loop or comprehension."""
    if isinstance(loop, cst.For):
        return [(loop.target, loop.iter)]
    if isinstance(loop, COMPREHENSIONS):
        clauses = []
        clause: Optional[cst.CompFor] = loop.for_in
        while clause is not None:
            clauses.append((clause.target, clause.iter))
            clause = clause.inner_for_in
        return clauses
    return []


_PASS_THROUGH = ("tqdm", "iter", "list", "tuple", "sorted", "reversed", "track")


def walked_collection(target: cst.CSTNode, iterable: cst.BaseExpression, name: str):
    """What the loop variable `name` walks: (collection, False) for elements of a
    collection, (None, True) for an index (range/enumerate counter), (None, False) if
    the code does not say."""
    while True:
        if isinstance(iterable, cst.Call) and iterable.args and not iterable.args[0].keyword:
            tail = func_tail(iterable)
            if tail in _PASS_THROUGH:
                iterable = iterable.args[0].value
                continue
            if tail == "range":
                return None, True
            args = [a.value for a in iterable.args if not a.keyword and not a.star]
            if tail in ("enumerate", "zip") and isinstance(target, (cst.Tuple, cst.List)):
                elements = [e.value for e in target.elements]
                if tail == "enumerate":
                    if len(elements) != 2:
                        return None, False
                    if name in _bound(elements[0]):
                        return None, True
                    target, iterable = elements[1], args[0]
                    continue
                for element, arg in zip(elements, args):
                    if name in _bound(element):
                        target, iterable = element, arg
                        break
                else:
                    return None, False
                continue
            if tail in ("enumerate", "zip"):
                return None, False
        if isinstance(iterable, cst.Call) and func_tail(iterable) == "range":
            return None, True
        return iterable, False


# ---------------------------------------------------------------------------------------
# The unsafe fix: hoist one batched transfer out of a plain per-row copy.
# ---------------------------------------------------------------------------------------

# `.to`/`.cuda` arguments that mean the same for a whole tensor as for each of its rows
# (`memory_format=` does not: `channels_last` needs 4-D, and a row has one dimension less).
_HOIST_KEYWORDS = {"device", "dtype", "non_blocking", "copy"}


def _plain_collection(node: cst.BaseExpression) -> bool:
    """`x`, `self.x`: evaluating it again reads the same object and runs nothing."""
    while isinstance(node, cst.Attribute):
        node = node.value
    return isinstance(node, cst.Name)


def _same_expr(a: cst.CSTNode, b: cst.CSTNode) -> bool:
    return _plain_collection(a) and dotted_name(a) is not None and dotted_name(a) == dotted_name(b)


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


def _hoistable_args(call: cst.Call, loop_names: set[str]) -> bool:
    """The transfer's arguments can be evaluated once, before the loop: no loop variable,
    no call other than `torch.device(...)`, only keywords that mean the same per batch."""
    for arg in call.args:
        if arg.star:
            return False
        if arg.keyword is not None and arg.keyword.value not in _HOIST_KEYWORDS:
            return False
        if names_in(arg.value) & loop_names:
            return False
        stack: list[cst.CSTNode] = [arg.value]
        while stack:
            current = stack.pop()
            if isinstance(current, cst.Call) and dotted_name(current.func) not in ("torch.device",):
                return False
            if isinstance(current, (cst.Lambda, cst.Yield, cst.Await, cst.NamedExpr)):
                return False
            stack.extend(children(current))
    return True


def _names_outside(scope: cst.CSTNode, inside: cst.CSTNode, names: set[str]) -> bool:
    """Whether `scope` reads or binds one of `names` anywhere outside `inside`. A
    comprehension whose first clause binds the name has its own: only its first iterable
    is read in `scope`."""
    stack: list[cst.CSTNode] = [scope]
    while stack:
        current = stack.pop()
        if current is inside:
            continue
        if isinstance(current, cst.Name) and current.value in names:
            return True
        if isinstance(current, COMPREHENSIONS) and set(_bound(current.for_in.target)) & names:
            stack.append(current.for_in.iter)
            continue
        stack.extend(children(current))
    return False


class TransferInLoop(Rule):
    """## What it does
    Flags a host→device transfer (`.to(device)`, `.cuda()`, `torch.tensor(x, device=...)`,
    `torch.as_tensor(x, device=...)`) inside a Python loop or comprehension that walks the
    rows or samples of a host-side tensor, numpy array, list or dataset, one transfer per
    row: `for row in big_tensor: row.to(device)`, `[torch.tensor(s, device=dev) for s in
    samples]`, `for i in range(len(x)): x[i].cuda()`.

    It stays silent on moving one whole batch per DataLoader iteration, on dtype-only
    conversions (`.to(torch.float16)`), on values already on the device, on loops over the
    keys or fields of one batch (`batch.items()`, a tuple of tensors), on loops over model
    layers or parameters, on `nn.Module.to`, and wherever the code does not show what the
    loop walks.

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
    message = (
        "`{call}` copies one row of `{coll}` to the device per loop iteration: the number "
        "of copies grows with the rows (10,000 rows took 326× one batched copy on an H200); "
        "move the whole tensor once before the loop (`.to(device)` / `torch.stack(...)`) "
        "and index it on the device"
    )
    tokens = (".to(", ".cuda(", "device=")

    def __init__(self, ctx: FileContext) -> None:
        super().__init__(ctx)
        self.candidates: list[tuple[cst.Call, cst.BaseExpression, str]] = []

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value in ("to", "cuda"):
            attr = func.attr.value
            kind = to_call_device(self.ctx, node)
            if not is_device_kind(kind):
                return
            if not self.ctx.loops(node):
                return
            self.candidates.append((node, func.value, f".{attr}()"))
            return
        if not isinstance(func, (cst.Name, cst.Attribute)):
            return
        qual = self.ctx.qualname(func)
        if qual not in ("torch.tensor", "torch.as_tensor", "torch.asarray"):
            return
        device = keyword_arg(node, "device")
        if device is None or not is_device_kind(device_kind(self.ctx, device)):
            return
        data = call_arg(node, 0, "data")
        if data is None or not self.ctx.loops(node):
            return
        self.candidates.append((node, data, f"{qual}(..., device=...)"))

    def leave_Module(self, node: cst.Module) -> None:
        if not self.candidates:
            return
        flow = Flow.of(self.ctx)
        for call, moved, label in self.candidates:
            coll = self.row_collection(flow, call, moved)
            if coll is None:
                continue
            text = self.ctx.code(coll).strip()
            if len(text) > 40:
                text = text[:37] + "..."
            fix = self.hoist_fix(flow, call, moved)
            if fix is None:
                self.report(call, self.message.format(call=label, coll=text))
                continue
            replace, replacement = fix
            self.report(
                call, self.message.format(call=label, coll=text), replacement=replacement,
                replace=replace, safe=False,
                fix_description="hoist one batched transfer out of the per-row copy",
            )

    # -- the fix -----------------------------------------------------------------------
    def hoist_fix(self, flow: Flow, call: cst.Call, moved: cst.BaseExpression):
        """(node to replace, replacement) where the loop is a plain per-row copy of a host
        tensor, else None. See the docstring's "Fix safety" for what is offered."""
        ctx = self.ctx
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
        if flow.iter_kind(coll) != CPU_TENSOR:
            return None  # numpy arrays, lists, datasets: not one tensor (see the docs)
        if not _hoistable_args(call, {target.value}):
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
        binding = Flow.of(ctx).reaching(append.func.value)
        if binding is None or binding.kind not in ("assign", "annassign") or binding.value is None:
            return None
        value = binding.value
        is_list = isinstance(value, (cst.List, cst.ListComp)) or (
            isinstance(value, cst.Call)
            and isinstance(value.func, cst.Name)
            and value.func.value == "list"
            and not ctx.bindings_of("list", value)
        )
        return loop if is_list else None

    def _rows_of(self, name: str, iterable: cst.BaseExpression, moved: cst.BaseExpression):
        """The tensor `x` when the loop walks its rows and moves each one whole:
        `for row in x: row.to(d)`, `for i in range(len(x)): x[i].to(d)`."""
        if isinstance(moved, cst.Name) and moved.value == name and not moved.lpar:
            return iterable if _plain_collection(iterable) else None
        if not (
            isinstance(moved, cst.Subscript)
            and _plain_collection(moved.value)
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
        if not isinstance(stack, cst.Call) or ctx.qualname(stack.func) != "torch.stack":
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

    # -- reasoning ---------------------------------------------------------------------
    def row_collection(self, flow: Flow, call: cst.Call, moved: cst.BaseExpression):
        """The host-side collection whose rows the loop moves one at a time, or None."""
        if flow.is_module(moved):
            return None
        if flow.origin(moved) in (ON_DEVICE, MODEL_OUT, MODULE, FIELDS, BATCH):
            return None
        for loop in self.ctx.loops(call):
            for target, iterable in loop_clauses(loop):
                names = _bound(target)
                if not names:
                    continue
                found = self._evidence(flow, moved, loop, target, iterable, names, 0)
                if found is not None:
                    return found
        return None

    def _evidence(self, flow, expr, loop, target, iterable, names, depth):
        ctx = self.ctx
        read, subscripts = name_nodes(expr)
        for subscript in subscripts:
            index_names: set[str] = set()
            for element in subscript.slice:
                index_names |= names_in(element.slice)
            if index_names & names and flow.iter_kind(subscript.value) in HOST_ROWS:
                if isinstance(subscript.value, (cst.Name, cst.Attribute)):
                    return subscript.value
        for name in read:
            if name.value in names:
                coll, is_index = walked_collection(target, iterable, name.value)
                if is_index or coll is None:
                    continue
                if flow.iter_kind(coll) in HOST_ROWS:
                    return coll
            elif depth < 2:
                binding = flow.reaching(name)
                if (
                    binding is not None
                    and binding.kind in ("assign", "annassign", "walrus")
                    and binding.value is not None
                    and any(a is loop for a in ctx.ancestors(binding.node))
                ):
                    value = flow._unpacked_value(binding, name.value) or binding.value
                    if flow.origin(value) in (ON_DEVICE, MODEL_OUT, MODULE, FIELDS, BATCH):
                        continue
                    found = self._evidence(flow, value, loop, target, iterable, names, depth + 1)
                    if found is not None:
                        return found
        return None

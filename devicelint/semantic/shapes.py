"""Rank, literal sizes and memory layout through PyTorch ops, and PyTorch's own rule for
when `view` can reuse a tensor's memory."""

from __future__ import annotations

import re
from collections import Counter
from typing import Optional

import libcst as cst

from devicelint.names import call_arg, dotted_name, int_value, keyword_arg, positional_args
from devicelint.semantic.values import (
    CONTIGUOUS, LAYOUT_EXPANDED, LAYOUT_NARROWED, LAYOUT_PERMUTED, LAYOUT_UNKNOWN,
    UNKNOWN_LAYOUT, Kind, Layout, Origin, Value,
)

FAILS, OK, MAYBE = "fails", "ok", "maybe"
# Methods whose result is a (values, indices) named tuple (`max`/`min`/`median` with a dim).
TUPLE_RESULTS = {"max", "min", "median", "mode", "kthvalue", "sort", "topk"}


def contiguous_strides(shape) -> Optional[tuple[int, ...]]:
    if shape is None or not all(isinstance(s, int) and s >= 0 for s in shape):
        return None
    strides = []
    running = 1
    for size in reversed(shape):
        strides.append(running)
        running *= max(size, 1)
    return tuple(reversed(strides))


def view_strides(old_shape, old_strides, new_shape) -> Optional[tuple[int, ...]]:
    """The strides `view(new_shape)` would give, or None when PyTorch raises "view size is
    not compatible with input tensor's size and stride". Dimensions of the new shape may
    be split or merged only within runs of the old dimensions that are laid out one after
    the other in memory."""
    numel = 1
    for s in old_shape:
        numel *= s
    if numel == 0 or not old_shape:
        return contiguous_strides(new_shape)
    new_strides = [0] * len(new_shape)
    view_d = len(new_shape) - 1
    chunk_base_stride = old_strides[-1]
    tensor_numel = 1
    view_numel = 1
    for tensor_d in range(len(old_shape) - 1, -1, -1):
        tensor_numel *= old_shape[tensor_d]
        if tensor_d == 0 or (old_shape[tensor_d - 1] != 1
                             and old_strides[tensor_d - 1] != tensor_numel * chunk_base_stride):
            while view_d >= 0 and (view_numel < tensor_numel or new_shape[view_d] == 1):
                new_strides[view_d] = view_numel * chunk_base_stride
                view_numel *= new_shape[view_d]
                view_d -= 1
            if view_numel != tensor_numel:
                return None
            if tensor_d > 0:
                chunk_base_stride = old_strides[tensor_d - 1]
                tensor_numel = 1
                view_numel = 1
    if view_d != -1:
        return None
    return tuple(new_strides)


def resolve_minus_one(old_shape, new_shape) -> Optional[tuple[int, ...]]:
    if not all(isinstance(s, int) for s in old_shape) or not all(isinstance(s, int) for s in new_shape):
        return None
    numel = 1
    for s in old_shape:
        numel *= s
    known = 1
    holes = 0
    for s in new_shape:
        if s == -1:
            holes += 1
        else:
            known *= s
    if holes > 1 or (holes == 0 and known != numel) or (holes and (known == 0 or numel % known)):
        return None
    return tuple(numel // known if s == -1 else s for s in new_shape)


def size_of(node: cst.BaseExpression, model) -> object:
    """A size argument: an int when literal, else the expression's text (a symbol), else None."""
    value = model.value(node)
    if value.kind is Kind.NUMBER and isinstance(value.literal, int):
        return value.literal
    name = dotted_name(node)
    if name is not None:
        return name
    if isinstance(node, cst.BinaryOperation):
        return model.ctx.code(node)
    return None


def shape_args(call: cst.Call, model, skip: int = 0) -> Optional[tuple]:
    """The sizes a call spells: `f(2, 3)`, `f((2, 3))`, `f([2, 3])`; None for `*shape`."""
    args = []
    for arg in call.args:
        if arg.keyword is not None:
            if arg.keyword.value in ("size", "shape") and isinstance(arg.value, (cst.Tuple, cst.List)):
                return tuple(size_of(e.value, model) for e in arg.value.elements)
            continue
        if arg.star:
            return None
        args.append(arg.value)
    args = args[skip:]
    if len(args) == 1 and isinstance(args[0], (cst.Tuple, cst.List)):
        elements = args[0].elements
        if any(isinstance(e, cst.StarredElement) for e in elements):
            return None
        return tuple(size_of(e.value, model) for e in elements)
    if len(args) == 1:
        value = model.value(args[0])
        if value.kind is Kind.UNKNOWN and (_is_size_call(args[0]) or (
                isinstance(args[0], cst.Attribute) and args[0].attr.value == "shape")):
            return None  # `torch.rand(x.size())`: as many sizes as `x` has dimensions
        if value.kind is Kind.SIZE:
            if value.items is None:
                return None
            return tuple(i.literal if isinstance(i.literal, int) else None for i in value.items)
    return tuple(size_of(a, model) for a in args)


# A `*sizes` argument of a view: any number of sizes the code does not show.
REST = "*"


def view_shape(call: cst.Call, model) -> Optional[tuple]:
    """The shape a `.view(...)` call asks for, as `shape_args` reads it; a starred argument
    (`view(B, C, *size)`) stands as one `REST` entry among the sizes the code shows."""
    if not any(arg.star == "*" and arg.keyword is None for arg in call.args):
        return shape_args(call, model)
    if any(arg.keyword is not None or arg.star == "**" for arg in call.args):
        return None
    return tuple(REST if arg.star else size_of(arg.value, model) for arg in call.args)


def _is_size_call(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) \
        and node.func.attr.value == "size" and not node.args


def _dim_arg(call: cst.Call, index: int = 0):

    node = call_arg(call, index, "dim")
    if node is None:
        return None, False
    if isinstance(node, (cst.Tuple, cst.List)):
        return len(node.elements), True
    value = int_value(node)
    return (1 if value is not None or node is not None else None), True


def _literal_tensor_shape(node: cst.BaseExpression) -> Optional[tuple]:
    if isinstance(node, (cst.List, cst.Tuple)):
        inner = [_literal_tensor_shape(e.value) for e in node.elements]
        if not inner:
            return (0,)
        if all(i == inner[0] for i in inner) and inner[0] is not None:
            return (len(inner),) + inner[0]
        return None
    if isinstance(node, (cst.Integer, cst.Float)) or (
            isinstance(node, cst.UnaryOperation) and isinstance(node.expression, (cst.Integer, cst.Float))):
        return ()
    return None


def apply_rank(spec, first: Optional[Value], call: cst.Call, model) -> Optional[tuple]:

    rank_rule = spec.rank
    shape = first.shape if first is not None else None
    name = spec.name
    if rank_rule == "same":
        return shape
    if rank_rule == "scalar":
        return ()
    if rank_rule == "like":
        return shape
    if rank_rule == "reduce":
        receiver_call = isinstance(call.func, cst.Attribute) and first is not None and not name.startswith("torch.")
        count, given = _dim_arg(call, 0 if receiver_call else 1)
        if not given:
            return () if name not in ("norm",) or True else None
        keep = keyword_arg(call, "keepdim")
        keepdim = isinstance(keep, cst.Name) and keep.value == "True"
        if shape is None:
            return None
        if keepdim:
            return tuple(None for _ in shape)
        if count is None or count > len(shape):
            return None
        return (None,) * (len(shape) - count)
    if rank_rule == "view-args":
        if name in ("view_as", "reshape_as", "expand_as"):
            args = positional_args(call)
            other = model.value(args[0]) if args else None
            return other.shape if other is not None and other.kind is Kind.TENSOR else None
        skip = 1 if name.startswith("torch.") else 0
        sizes = shape_args(call, model, skip)
        if sizes is None:
            return None
        if len(sizes) == 1 and sizes[0] is not None and model.value(call.args[skip].value).kind is Kind.DTYPE:
            return None  # `.view(torch.int8)`: a dtype reinterpretation
        if shape is not None and all(isinstance(s, int) for s in shape):
            resolved = resolve_minus_one(shape, sizes)
            if resolved is not None:
                return resolved
        if name in ("expand", "broadcast_to") and shape is not None:
            return tuple(s if s != -1 else None for s in sizes)
        return sizes
    if rank_rule == "unsqueeze":
        return (None,) * (len(shape) + 1) if shape is not None else None
    if rank_rule == "squeeze":
        if shape is None:
            return None
        count, given = _dim_arg(call, 0 if isinstance(call.func, cst.Attribute) else 1)
        if not given:
            if all(isinstance(s, int) for s in shape):
                return tuple(s for s in shape if s != 1)
            return None
        dim = call_arg(call, 0, "dim")
        index = int_value(dim) if dim is not None else None
        if index is not None and -len(shape) <= index < len(shape) and shape[index] == 1:
            return shape[:index] + shape[index + 1:] if index >= 0 else shape[:index] + (shape[index + 1:] if index != -1 else ())
        return None
    if rank_rule == "flatten":
        if shape is None:
            return None
        start = call_arg(call, 0, "start_dim")
        end = call_arg(call, 1, "end_dim")
        s = int_value(start) if start is not None else 0
        e = int_value(end) if end is not None else -1
        if s is None or e is None:
            return None
        n = len(shape)
        s, e = (s + n if s < 0 else s), (e + n if e < 0 else e)
        if n == 0:
            return (1,)
        return (None,) * (n - (e - s))
    if rank_rule == "stack":
        return (None,) * (len(shape) + 1) if shape is not None else None
    if rank_rule == "matmul":
        args = positional_args(call)
        values = [first] if (first is not None and isinstance(call.func, cst.Attribute) and not name.startswith("torch.")) else []
        values += [model.value(a) for a in args]
        values = [v for v in values if v is not None]
        if name.endswith(".linear"):
            return tuple(None for _ in values[0].shape) if values and values[0].shape is not None else None
        if name in ("mm", "torch.mm", "addmm", "torch.addmm"):
            return (None, None)
        if name in ("bmm", "torch.bmm", "baddbmm", "torch.baddbmm"):
            return (None, None, None)
        if len(values) == 2 and all(v.shape is not None for v in values) and "einsum" not in name \
                and "conv" not in name and "attention" not in name:
            a, b = values
            if a.rank >= 2 and b.rank >= 2:
                return (None,) * max(a.rank, b.rank)
            if a.rank == 1 and b.rank == 1:
                return ()
            return (None,) * (max(a.rank, b.rank) - 1)
        if "attention" in name and values and values[0].shape is not None:
            return tuple(None for _ in values[0].shape)
        return None
    if rank_rule == "sizes":
        skip = 0
        if name == "torch.full":
            args = positional_args(call)
            if args and isinstance(args[0], (cst.Tuple, cst.List)):
                return tuple(size_of(e.value, model) for e in args[0].elements)
            return None
        return shape_args(call, model, skip)
    if rank_rule == "none":
        args = positional_args(call)
        if name == "torch.arange" and args:
            ints = [model.value(a).literal for a in args[:2]]
            if all(isinstance(i, int) for i in ints):
                return (ints[0],) if len(ints) == 1 else (max(ints[1] - ints[0], 0),)
            return (None,)
        if name == "torch.range" and len(args) >= 2:  # deprecated; its end is included
            ints = [model.value(a).literal for a in args[:2]]
            if all(isinstance(i, int) for i in ints) and len(args) == 2:
                return (max(ints[1] - ints[0] + 1, 0),)
            return (None,)
        if name in ("torch.linspace", "torch.logspace", "torch.randperm", "numpy.arange", "numpy.linspace"):
            return (None,)
        if name == "numpy.random.permutation" and args:
            # a shuffled `arange(n)` for a number, a shuffled copy of an array
            inner = model.value(args[0])
            if inner.kind is Kind.NUMBER:
                return (None,)
            return inner.shape if inner.kind in (Kind.TENSOR, Kind.ARRAY) else None
        if name == "torch.eye" and args:
            n = size_of(args[0], model)
            return (n, n)
        if name in ("torch.tensor", "torch.as_tensor") and args:
            literal = _literal_tensor_shape(args[0])
            if literal is not None:
                return literal
            inner = model.value(args[0])
            if inner.kind in (Kind.NUMBER, Kind.BOOL) or _numpy_scalar(args[0], model):
                return ()  # `torch.tensor(0.5)`, `torch.tensor(np.log(alpha))`: a 0-dim tensor
            return inner.shape if inner.kind in (Kind.TENSOR, Kind.ARRAY) else None
        if name == "torch.randint":
            size = keyword_arg(call, "size")
            if size is None and args and isinstance(args[-1], (cst.Tuple, cst.List)):
                size = args[-1]
            if isinstance(size, (cst.Tuple, cst.List)):
                return tuple(size_of(e.value, model) for e in size.elements)
        return None
    return None


# NumPy's elementwise math: of Python numbers, a NumPy scalar (0-dim).
_NUMPY_ELEMENTWISE = frozenset(f"numpy.{f}" for f in (
    "log", "log2", "log10", "log1p", "exp", "expm1", "sqrt", "square", "abs", "sin", "cos",
    "tan", "tanh", "arctan", "floor", "ceil", "round", "float32", "float64", "int32", "int64"))


def _numpy_scalar(expr: cst.BaseExpression, model) -> bool:
    """`np.log(alpha)` of a Python number: a NumPy scalar."""
    if not isinstance(expr, cst.Call) or model.qualname(expr.func) not in _NUMPY_ELEMENTWISE:
        return False
    given = positional_args(expr)
    return bool(given) and all(model.value(a).kind in (Kind.NUMBER, Kind.BOOL) for a in given)


def _transpose_perm(call: cst.Call, rank: Optional[int], name: str) -> Optional[tuple[int, ...]]:

    args = positional_args(call)
    if name.startswith("torch."):
        args = args[1:]
    if name in ("t", "torch.t"):
        if rank is None:
            return None
        return (1, 0) if rank == 2 else tuple(range(rank))
    if len(args) != 2 or rank is None:
        return None
    a, b = int_value(args[0]), int_value(args[1])
    if a is None or b is None:
        return None
    a, b = a % rank if rank else a, b % rank if rank else b
    perm = list(range(rank))
    perm[a], perm[b] = perm[b], perm[a]
    return tuple(perm)


def _permute_perm(call: cst.Call, rank: Optional[int], name: str, model) -> Optional[tuple[int, ...]]:

    args = positional_args(call)
    if name.startswith("torch."):
        args = args[1:]
    if name in ("movedim", "moveaxis", "torch.movedim", "torch.moveaxis"):
        if len(args) != 2 or rank is None:
            return None
        src, dst = int_value(args[0]), int_value(args[1])
        if src is None or dst is None:
            return None
        order = list(range(rank))
        moved = order.pop(src % rank)
        order.insert(dst % rank, moved)
        return tuple(order)
    if len(args) == 1 and isinstance(args[0], (cst.Tuple, cst.List)):
        args = [e.value for e in args[0].elements]
    values = [int_value(a) for a in args]
    if any(v is None for v in values):
        return None
    n = len(values)
    if rank is not None and n != rank:
        return None
    return tuple(v % n for v in values)


def _compose(first: tuple[int, ...], second: tuple[int, ...]) -> tuple[int, ...]:
    """Applying `second` to a tensor already permuted by `first`."""
    return tuple(first[k] for k in second)


def permuted(base: Value, perm: Optional[tuple[int, ...]], node, label: str) -> Value:
    shape = base.shape
    new_shape = tuple(shape[k] for k in perm) if perm is not None and shape is not None and len(perm) == len(shape) else shape
    layout = base.layout
    strides = None
    if layout.strides is not None and perm is not None and len(perm) == len(layout.strides):
        strides = tuple(layout.strides[k] for k in perm)
    elif layout.contiguous and perm is not None:
        base_strides = contiguous_strides(shape)
        if base_strides is not None and len(perm) == len(base_strides):
            strides = tuple(base_strides[k] for k in perm)
    if layout.contiguous:
        if perm is not None and perm == tuple(range(len(perm))):
            return base.with_(node=node)
        new_layout = Layout(LAYOUT_PERMUTED, label=label, perm=perm, strides=strides, source=node, base=base)
    elif layout.state == LAYOUT_PERMUTED:
        if layout.perm is not None and perm is not None and len(layout.perm) == len(perm):
            total = _compose(layout.perm, perm)
            if total == tuple(range(len(total))):
                return base.with_(shape=new_shape, layout=CONTIGUOUS if layout.base is None or
                                  layout.base.layout.contiguous else UNKNOWN_LAYOUT, node=node)
            new_layout = Layout(LAYOUT_PERMUTED, label=label, perm=total, strides=strides, source=node,
                                base=layout.base)
        else:
            new_layout = UNKNOWN_LAYOUT  # a second permute may restore the layout: cannot tell
    else:
        new_layout = UNKNOWN_LAYOUT
    return base.with_(shape=new_shape, layout=new_layout, node=node)


def transposed(base: Value, node, label: str) -> Value:
    rank = base.rank
    if label in (".T",):
        perm = tuple(reversed(range(rank))) if rank is not None else None
    else:  # .mT / .mH / .H
        perm = tuple(list(range(rank - 2)) + [rank - 1, rank - 2]) if rank is not None and rank >= 2 else None
    if perm is None and rank is None:
        return base.with_(layout=Layout(LAYOUT_PERMUTED, label=label, source=node) if base.layout.contiguous
                          else UNKNOWN_LAYOUT, node=node, shape=None)
    return permuted(base, perm, node, label)


def elementwise_layout(tensors: list[Value]) -> Layout:
    """The layout of an elementwise result (`a.eq(b)`, `a + b`, `a > 0`) from its tensor
    operands, in order. TensorIterator lays the output out in the stride order of the first
    operand whose strides decide it: a permuted first operand decides every dim it does not
    broadcast, whatever the others are (contiguous, expanded, or permuted the same way), so
    the result is permuted like it (`pred.t().eq(target.view(1, -1).expand_as(pred.t()))`
    has the transposed strides; checked on torch 2.13 in tests/test_semantic_legacy.py).
    A single expanded or narrowed operand gives a fresh, contiguous result. Otherwise:
    unknown."""
    if not tensors:
        return UNKNOWN_LAYOUT
    if all(t.layout.contiguous for t in tensors):
        return CONTIGUOUS
    first, others = tensors[0], tensors[1:]
    if first.layout.state == LAYOUT_PERMUTED:
        if all(o.layout.contiguous or o.layout.state == LAYOUT_EXPANDED
               or (o.layout.state == LAYOUT_PERMUTED and o.layout.perm is not None
                   and o.layout.perm == first.layout.perm) for o in others) \
                and (first.layout.perm is None
                     or all(o.rank is not None and o.rank <= len(first.layout.perm) for o in others)):
            return first.layout
        return UNKNOWN_LAYOUT
    if first.layout.state in (LAYOUT_EXPANDED, LAYOUT_NARROWED) and all(o.layout.contiguous for o in others):
        return CONTIGUOUS
    return UNKNOWN_LAYOUT


def apply_layout(spec, first: Optional[Value], call: cst.Call, model, name: str, shape,
                 inputs: Optional[list[Value]] = None) -> tuple:
    rule = spec.layout
    if first is None:
        if rule == "fresh":
            strides = contiguous_strides(shape)
            return (Layout(CONTIGUOUS.state, strides=strides) if strides else CONTIGUOUS), shape
        return UNKNOWN_LAYOUT, shape
    short = name.rsplit(".", 1)[-1]
    if rule in ("transpose", "permute", "expand", "narrow"):
        # The op as a message shows it: only these rules keep it (printing arguments back
        # to source text for every call cost more than the rest of the layout).
        label = f".{short}({', '.join(model.ctx.code(a.value) for a in call.args if not a.keyword)})" \
            if not name.startswith("torch.") else f"{name.replace('torch.', '')}(...)"
        if name.startswith("torch.") and call.args:
            label = f".{short}({', '.join(model.ctx.code(a.value) for a in call.args[1:] if not a.keyword)})"
    if rule in ("transpose", "permute"):
        if rule == "transpose" and short == "t" and first.rank is None and first.layout.contiguous \
                and isinstance(call.func, cst.Attribute) \
                and min_rank(model, call.func.value, through_dims=True) >= 2:
            # `.t()` raises on more than two dimensions: with at least two it swaps exactly
            # two (`_, pred = out.topk(k, 1)` then `pred.t()`).
            result = permuted(first.with_(shape=(None, None)), (1, 0), call, label)
            return result.layout, result.shape
        if rule == "transpose":
            perm = _transpose_perm(call, first.rank, name)
        else:
            perm = _permute_perm(call, first.rank, name, model)
        if perm is None:
            if first.layout.contiguous:
                return Layout(LAYOUT_PERMUTED, label=label, source=call, base=first), _unsized(first.shape)
            return UNKNOWN_LAYOUT, _unsized(first.shape)
        result = permuted(first, perm, call, label)
        return result.layout, result.shape
    if rule == "expand":
        return Layout(LAYOUT_EXPANDED, label=label, source=call, base=first), shape
    if rule == "narrow":

        dim = call_arg(call, 0 if not name.startswith("torch.") else 1, "dim")
        if dim is not None and int_value(dim) == 0 and first.layout.contiguous:
            return CONTIGUOUS, shape  # rows of a contiguous tensor stay contiguous
        return Layout(LAYOUT_NARROWED, label=label, source=call, base=first), shape
    if rule == "follow":
        operands = [v for v in (inputs or [first]) if v.kind is Kind.TENSOR]
        if not operands or operands[0] is not first:
            operands = [first]
        return elementwise_layout(operands), shape
    if rule == "follow-format":
        if first.layout.contiguous:
            return CONTIGUOUS, shape
        return UNKNOWN_LAYOUT, shape
    if rule == "keep":

        memory_format = keyword_arg(call, "memory_format")
        if memory_format is not None:
            text = model.ctx.code(memory_format)
            return (CONTIGUOUS if text.endswith("contiguous_format") else UNKNOWN_LAYOUT), shape
        if first.layout.state == LAYOUT_PERMUTED:
            return first.layout, shape
        if first.layout.state in (LAYOUT_EXPANDED, LAYOUT_NARROWED):
            return CONTIGUOUS, shape
        return first.layout, shape
    if rule == "same":
        if first.layout.contiguous:
            return CONTIGUOUS, shape
        if first.layout.state == LAYOUT_PERMUTED:
            return Layout(LAYOUT_PERMUTED, label=first.layout.label, source=first.layout.source), shape
        return first.layout, shape
    if rule == "fresh":
        if spec.rank == "view-args" and short in ("view", "reshape", "view_as", "reshape_as"):
            if first.layout.contiguous:
                strides = contiguous_strides(shape)
                return (Layout(CONTIGUOUS.state, strides=strides) if strides else CONTIGUOUS), shape
            if short.startswith("reshape"):
                return UNKNOWN_LAYOUT, shape
            return UNKNOWN_LAYOUT, shape
        strides = contiguous_strides(shape)
        return (Layout(CONTIGUOUS.state, strides=strides) if strides else CONTIGUOUS), shape
    return UNKNOWN_LAYOUT, shape


def _unsized(shape):
    return tuple(None for _ in shape) if shape is not None else None


def view_outcome(value: Value, new_shape: Optional[tuple]) -> str:
    """Whether `.view(new_shape)` on `value` raises: FAILS, OK, or MAYBE (cannot tell)."""
    layout = value.layout
    if layout.contiguous:
        return OK
    if layout.state == LAYOUT_UNKNOWN:
        return OK  # nothing known: not ours to judge
    if new_shape is None:
        return MAYBE
    if REST in new_shape:
        # `view(B, C, *size)`: how many sizes `size` holds, and which, is not in the code, so
        # whether the view merges what the layout separated cannot be decided from it (a -1
        # beside it may stand for one dim). Only a merge a shown size spells (`B * T`) is.
        return MAYBE if any(isinstance(size, str) and size != REST and "*" in size
                            for size in new_shape) else OK
    shape = value.shape
    if layout.strides is not None and shape is not None and all(isinstance(s, int) for s in shape):
        resolved = resolve_minus_one(shape, new_shape)
        if resolved is not None:
            return OK if view_strides(shape, layout.strides, resolved) is not None else FAILS
    if layout.state == LAYOUT_PERMUTED and layout.perm is not None and shape is not None \
            and len(shape) == len(layout.perm):
        aligned = _symbolic_view(shape, layout.perm, new_shape)
        if aligned is not None:
            return aligned
    visible_merge = _merges(new_shape, shape)
    if layout.state == LAYOUT_PERMUTED and layout.perm is not None:
        # Runs of output dims that are adjacent, in order, in memory: a view may merge dims
        # only inside one run. Fewer new dims than runs means a merge across runs.
        perm = layout.perm
        runs = 1 + sum(1 for k in range(1, len(perm)) if perm[k] != perm[k - 1] + 1)
        if len(new_shape) < runs:
            return FAILS
    return MAYBE if visible_merge else OK


def _factors(size) -> Optional[Counter]:
    """A size as a product of factors: the prime factors of a literal, the operands of a
    product of names (`h * w`), any other symbol as itself (`c // self.n_head`); None when
    unknown (or -1)."""
    if isinstance(size, bool) or size is None or size == -1:
        return None
    if isinstance(size, int):
        found: Counter = Counter()
        rest, p = size, 2
        while rest > 1 and p * p <= rest:
            while rest % p == 0:
                found[p] += 1
                rest //= p
            p += 1
        if rest > 1:
            found[rest] += 1
        return found
    if not isinstance(size, str) or size == REST:
        return None
    parts = [part.strip() for part in size.split("*")]
    if len(parts) > 1 and all(_PLAIN_FACTOR.fullmatch(part) for part in parts):
        found = Counter()
        for part in parts:
            found += _factors(int(part)) if part.isdigit() else Counter({part: 1})
        return found
    return Counter({size.replace(" ", ""): 1})


_PLAIN_FACTOR = re.compile(r"[A-Za-z_][A-Za-z_0-9.]*|[0-9]+")


def _symbolic_view(shape, perm, new_shape) -> Optional[str]:
    """PyTorch's view rule on sizes the code spells with symbols: a view may split a dim
    and may merge dims only where they lie next to each other, in order, in memory; dims of
    literal size 1 do not count. OK or FAILS when every size is known as a product of
    factors (one -1 in the new shape takes what is left) and the new dims group the old
    ones; None when the sizes do not tell. FAILS means the merged dims are separated in
    memory: the view raises whenever they are larger than 1."""
    old = [(k, _factors(size)) for k, size in enumerate(shape) if size != 1]
    if any(f is None for _, f in old):
        return None
    new = [size for size in new_shape if size != 1]
    holes = [k for k, size in enumerate(new) if size == -1]
    if len(holes) > 1:
        return None
    total: Counter = Counter()
    for _, f in old:
        total += f
    new_factors = []
    for size in new:
        f = _factors(size) if size != -1 else Counter()
        if f is None:
            return None
        new_factors.append(f)
    if holes:
        shown: Counter = Counter()
        for f in new_factors:
            shown += f
        if shown - total:
            return None  # the shown sizes are not a part of the old ones
        new_factors[holes[0]] = total - shown
    # Dims next to each other in memory, once the size-1 dims are left out: the original
    # positions (perm) of the dims kept, renumbered.
    order = sorted(perm[k] for k, _ in old)
    memory = [order.index(perm[k]) for k, _ in old]
    i = j = 0
    merges_across = False
    while i < len(old) and j < len(new_factors):
        first_old, have_old, have_new = i, old[i][1].copy(), new_factors[j].copy()
        i, j = i + 1, j + 1
        while have_old != have_new:
            if not have_new - have_old and j < len(new_factors):
                have_new += new_factors[j]  # the new dims split the old one(s) further
                j += 1
            elif not have_old - have_new and i < len(old):
                have_old += old[i][1]  # the new dim merges the next old dim
                i += 1
            else:
                return None
        if any(memory[k + 1] != memory[k] + 1 for k in range(first_old, i - 1)):
            merges_across = True
    if i != len(old) or j != len(new_factors):
        return None
    return FAILS if merges_across else OK


def _merges(new_shape, shape) -> bool:
    """The new shape visibly merges dimensions: `-1`, a product, or fewer dims."""
    if shape is not None and len(new_shape) < len(shape):
        return True
    for size in new_shape:
        if size == -1 or (isinstance(size, str) and "*" in size):
            return True
    return shape is None and len(new_shape) <= 2


def _splits_only(shape, new_shape) -> bool:
    """Every old dim maps to one or more consecutive new dims, as far as the symbols show:
    the old sizes appear in order, and whatever is between them splits one old dim."""
    if len(new_shape) == len(shape):
        return all(a == b or a is None or b is None or b == -1 for a, b in zip(shape, new_shape))
    # More new dims than old: accept when the leading dims agree symbol for symbol.
    same = 0
    for a, b in zip(shape, new_shape):
        if a is not None and a == b:
            same += 1
        else:
            break
    return same >= len(shape) - 1


_MOVES = ("to", "cuda", "cpu")


# Where a method takes the dimension it works along (`x.topk(k, 1)`, `x.softmax(1)`): a literal
# `d` there needs `d + 1` dimensions (`-d` for a negative one), else PyTorch raises.
_DIM_POSITION = {"topk": 1, "kthvalue": 1, "sort": 0, "argsort": 0, "softmax": 0,
                 "log_softmax": 0, "argmax": 0, "argmin": 0, "cumsum": 0, "cumprod": 0}
# Named-tuple results whose two parts keep the input's rank.
_RANK_KEEPING_PAIRS = ("topk", "sort")


def min_rank(model, expr: cst.BaseExpression, depth: int = 4, through_dims: bool = False) -> int:
    """A lower bound on how many dimensions the tensor `expr` has (0 when nothing is known):
    its rank where the model knows it; else one for a DataLoader batch (its batch
    dimension); as many as the input for what keeps its input's rank (`.type(T)`,
    `.float()`, `.to(...)`, `Variable(x)`, `.data`, `torch.rand(x.size())`,
    `torch.zeros_like(x)`); and for a name, what the code asks of the binding that reaches
    it: a read of `x.shape[k]` or `x.size(k)` anywhere the binding reaches means `k + 1`
    dimensions, since with fewer that read raises. DL015 asks it: a 0-dim CUDA tensor times
    a CPU tensor that has a dimension raises. With `through_dims`, also a literal `dim` a
    method is given (`x.topk(k, 1)`: two dimensions) and a part of a `topk`/`sort` result
    (`_, pred = x.topk(k, 1)`, `x.topk(k, dim=1).indices`: as many as `x`) (`.t()` asks it)."""
    value = model.value(expr)
    if value.rank is not None:
        return value.rank
    if depth <= 0 or value.kind not in (Kind.TENSOR, Kind.UNKNOWN):
        return 0
    found = 1 if value.origin is Origin.BATCH else 0
    inner = _same_rank_input(model, expr)
    if inner is not None:
        return max(found, min_rank(model, inner, depth - 1, through_dims))
    if through_dims and isinstance(expr, cst.Attribute) and expr.attr.value in ("values", "indices") \
            and isinstance(expr.value, cst.Call) and isinstance(expr.value.func, cst.Attribute) \
            and expr.value.func.attr.value in _RANK_KEEPING_PAIRS:
        # `x.topk(k, dim=1).indices`: as many dimensions as `x`
        return max(found, min_rank(model, expr.value.func.value, depth - 1, through_dims))
    if isinstance(expr, cst.Name):
        from devicelint.semantic.dataflow import uses

        defs = model.defs(expr)
        if not defs:
            return found
        least = None
        for d in defs:
            rank = min_rank(model, d.value, depth - 1, through_dims) if d.value is not None \
                and not d.path and d.kind in ("assign", "annassign") else 0
            if through_dims and d.kind == "assign" and len(d.path) == 1 and d.path[0] in (0, 1) \
                    and isinstance(d.value, cst.Call) and isinstance(d.value.func, cst.Attribute) \
                    and d.value.func.attr.value in _RANK_KEEPING_PAIRS:
                rank = min_rank(model, d.value.func.value, depth - 1, through_dims)
            for use in uses(model, d):
                rank = max(rank, _dims_read(model, use, through_dims))
            least = rank if least is None else min(least, rank)
        return max(found, least or 0)
    return found


def _same_rank_input(model, expr: cst.BaseExpression) -> Optional[cst.BaseExpression]:
    """The tensor whose rank `expr`'s result has, for conversions, moves, legacy wrappers,
    `*_like` factories and factories sized by another tensor's `.size()`/`.shape`."""
    if isinstance(expr, cst.Attribute) and expr.attr.value == "data":
        return expr.value
    if not isinstance(expr, cst.Call):
        return None
    func = expr.func
    qual = model.qualname(func)
    if qual is None and isinstance(func, cst.Attribute):
        spec = model.api.method(func.attr.value)
        if func.attr.value in _MOVES or (spec is not None and spec.rank == "same"):
            return func.value
        return None
    spec = model.api.function(qual) if qual is not None else None
    if spec is None:
        return None
    if spec.result == "same":  # an identity wrapper (`Variable(x)`)
        return call_arg(expr, 0, "data")
    first = call_arg(expr, 0, "input")
    if spec.rank in ("same", "like"):
        return first
    if spec.rank == "sizes" and len(positional_args(expr)) == 1 and first is not None:
        if _is_size_call(first) or isinstance(first, cst.Attribute) and first.attr.value == "shape":
            return first.func.value if isinstance(first, cst.Call) else first.value
    return None


def _dims_read(model, use: cst.Name, through_dims: bool = False) -> int:
    """Dimensions a read of `use` needs: `use.shape[k]` and `use.size(k)` need `k + 1` (or
    `-k` for a negative `k`), with `through_dims` also `use.topk(n, k)` and the like
    (`_DIM_POSITION`); anything else none."""
    parent = model.parent(use)
    if not (isinstance(parent, cst.Attribute) and parent.value is use):
        return 0
    outer = model.parent(parent)
    index = None
    if through_dims and parent.attr.value in _DIM_POSITION and isinstance(outer, cst.Call) \
            and outer.func is parent:
        dim = call_arg(outer, _DIM_POSITION[parent.attr.value], "dim")
        index = int_value(dim) if dim is not None else None
    if parent.attr.value == "shape" and isinstance(outer, cst.Subscript) and outer.value is parent \
            and len(outer.slice) == 1 and isinstance(outer.slice[0].slice, cst.Index):
        index = int_value(outer.slice[0].slice.value)
    elif parent.attr.value == "size" and isinstance(outer, cst.Call) and outer.func is parent \
            and len(outer.args) == 1 and outer.args[0].keyword is None:
        index = int_value(outer.args[0].value)
    if index is None:
        return 0
    return index + 1 if index >= 0 else -index

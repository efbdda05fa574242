from __future__ import annotations

from typing import Optional

import libcst as cst

from devicelint.analysis import TORCH_DTYPES, method_name, string_value
from devicelint.context import FileContext
from devicelint.rule import Rule

TRANSPOSING = {"transpose", "swapaxes", "swapdims", "permute", "t", "movedim", "moveaxis"}
# Ops whose result keeps the strides of their input (preserve_format): `.view` on the
# result fails the same way.
STRIDE_PRESERVING = {"float", "half", "double", "bfloat16", "to", "detach", "clone",
                     "requires_grad_", "type_as"}
# Ops whose result is freshly laid out (contiguous), whatever the input's layout.
FRESH_FUNCTIONS = {
    "torch.matmul", "torch.mm", "torch.bmm", "torch.einsum", "torch.baddbmm",
    "torch.nn.functional.linear", "torch.cat", "torch.stack",
}
FRESH_METHODS = {"contiguous", "matmul", "mm", "bmm", "reshape", "flatten"}
FAILS, OK, MAYBE = "fails", "ok", "maybe"
WILD = object()


def _int(node: cst.CSTNode) -> Optional[int]:
    if isinstance(node, cst.Integer):
        return int(node.value, 0)
    if (
        isinstance(node, cst.UnaryOperation)
        and isinstance(node.operator, cst.Minus)
        and isinstance(node.expression, cst.Integer)
    ):
        return -int(node.expression.value, 0)
    return None


def _factors(node: cst.CSTNode) -> list[cst.CSTNode]:
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Multiply):
        return _factors(node.left) + _factors(node.right)
    return [node]


class Source:
    """A non-contiguous producer: the op, its input expression, and what is known."""

    def __init__(self, op: str, node: cst.CSTNode, receiver: cst.CSTNode, label: str,
                 perm: Optional[list[int]] = None, dims: tuple = (), rank: Optional[int] = None):
        self.op = op
        self.node = node
        self.receiver = receiver
        self.label = label
        self.perm = perm  # output dim k reads input dim perm[k] (when the rank is known)
        self.dims = dims  # transpose's two dims (possibly negative), when literal
        self.rank = rank


class ViewOnNoncontiguous(Rule):
    """## What it does
    Flags `.view(...)` on a tensor that came from `.transpose`, `.permute`, `.t()`, `.T`,
    `.mT`, `.swapaxes`, `.movedim`, `.expand` or `.narrow` (or a step slice such as
    `x[:, ::2]`) with no `.contiguous()` in between, directly chained or through a local
    variable of the same function.

    The shapes decide whether the view fails, so the rule reasons about them where the
    code shows them: a view that merges dimensions the transpose separated
    (`y.transpose(1, 2).view(B, T, H * D)`, `.view(B, -1)`, `.view(-1)`) is reported as
    failing; a view that only splits a dimension or keeps the permuted shape
    (`q.view(B, T, H, D).transpose(1, 2).view(B, H, T, D // 2, 2)`) is not reported; a
    permute of a tensor that was itself permuted upstream (which may restore the layout)
    is not reported. When the shapes cannot be decided the message says the view *may*
    fail.

    ## Why is this bad?
    `view` never copies: it needs the requested shape to be expressible with the input's
    strides. After a transpose the memory order no longer matches the dimension order,
    and merging the swapped dimensions raises `RuntimeError: view size is not compatible
    with input tensor's size and stride (at least one dimension spans across two
    contiguous subspaces). Use .reshape(...) instead.` (same message on CPU and CUDA).
    Whether it raises depends on the sizes: `x.transpose(1, 2).view(B, T, H * D)` passes
    when T == 1 (a decode step, a unit test with one token) and crashes when T > 1, so
    the bug tends to surface late, in production shapes.

    ## Example
    ```python
    y = att @ v                                   # (B, H, T, D)
    y = y.transpose(1, 2).view(B, T, H * D)       # fails for T > 1
    ```

    ## Use instead
    ```python
    y = y.transpose(1, 2).reshape(B, T, H * D)    # copies only when it must
    # or, to make the copy explicit:
    y = y.transpose(1, 2).contiguous().view(B, T, H * D)
    ```

    ## Fix safety
    The fix renames `.view` to `.reshape`. `reshape` returns exactly the same view
    whenever `view` would have succeeded and copies only where `view` would have raised,
    so it never changes a run that worked. It is safe when the rule has shown that the
    view merges dimensions the transpose separated (the original code raises for every
    shape where those dimensions are larger than 1). Where the rule could not decide
    ("may fail"), the fix is unsafe: code that writes into the view's result expecting to
    modify the original tensor would silently write into a copy instead of raising.
    `.view(dtype)` reinterpretations are never reported.
    """

    code = "DL003"
    name = "view-on-noncontiguous"
    summary = "`.view()` on a transposed/permuted (non-contiguous) tensor"
    message = (
        "`.view(...)` merges dimensions that `{label}` separated: it raises \"view size is "
        "not compatible with input tensor's size and stride\" whenever those dimensions "
        "are larger than 1; use `.reshape(...)` or `.contiguous().view(...)`"
    )
    maybe_message = (
        "`.view(...)` on the non-contiguous result of `{label}` may fail depending on the "
        "shapes (\"view size is not compatible with input tensor's size and stride\" when "
        "it merges dimensions that `{label}` separated); use `.reshape(...)` or "
        "`.contiguous().view(...)`"
    )
    tokens = (".view(",)
    fixable = True

    def __init__(self, ctx: FileContext) -> None:
        super().__init__(ctx)
        self._permuted: dict[int, bool] = {}
        self._unpacks: dict[int, dict[str, list[str]]] = {}

    # -- entry ---------------------------------------------------------------------------
    def leave_Call(self, node: cst.Call) -> None:
        if method_name(node) != "view" or not node.args:
            return
        args = self._view_args(node)
        if args is False:
            return  # a dtype reinterpretation
        receiver = node.func.value  # type: ignore[union-attr]
        source = self._source(receiver, 0)
        if source is None:
            return
        if self._upstream_permuted(source.receiver, 0):
            return  # a second permute may restore the layout: cannot tell
        outcome = self._outcome(source, args, receiver)
        if outcome == OK:
            return
        certain = outcome == FAILS
        text = (self.message if certain else self.maybe_message).format(label=source.label)
        self.report(
            node, text,
            replacement=cst.Name("reshape"), replace=node.func.attr,  # type: ignore[union-attr]
            safe=certain, fix_description="Use `.reshape(...)`",
        )

    def _view_args(self, node: cst.Call):
        """The view's shape arguments; None if not visible (`*shape`, a variable);
        False for `.view(dtype)`."""
        if len(node.args) == 1 and not node.args[0].star:
            value = node.args[0].value
            if self.ctx.qualname(value) in TORCH_DTYPES or string_value(value) is not None:
                return False
            if isinstance(value, cst.Attribute) and value.attr.value == "dtype":
                return False
            if isinstance(value, (cst.Tuple, cst.List)):
                if any(isinstance(e, cst.StarredElement) for e in value.elements):
                    return None
                return [e.value for e in value.elements]
            if isinstance(value, cst.Name) and value.value.endswith("dtype"):
                return False
            if isinstance(value, (cst.Name, cst.Attribute, cst.Subscript)) and (
                self._looks_like_shape(value)
            ):
                return None
            return [value]
        if any(arg.star or arg.keyword is not None for arg in node.args):
            return None
        return [arg.value for arg in node.args]

    @staticmethod
    def _looks_like_shape(value: cst.CSTNode) -> bool:
        """`x.view(shape)`, `x.view(other.shape)`, `x.view(sizes)`: a whole shape."""
        text = value.attr.value if isinstance(value, cst.Attribute) else (
            value.value if isinstance(value, cst.Name) else "")
        return text.lower().endswith(("shape", "size", "sizes", "dims")) or isinstance(
            value, cst.Subscript)

    # -- where the tensor came from -----------------------------------------------------
    def _source(self, expr: cst.CSTNode, depth: int) -> Optional[Source]:
        if depth > 5:
            return None
        if isinstance(expr, cst.Call):
            method = method_name(expr)
            if method is None:
                return None
            receiver = expr.func.value  # type: ignore[union-attr]
            if method in TRANSPOSING:
                return self._transposing(expr, method, receiver)
            if method == "expand":
                return Source("expand", expr, receiver, ".expand(...)")
            if method == "narrow":
                dim = _int(expr.args[0].value) if expr.args else None
                if dim == 0:
                    return None  # narrowing the outermost dim keeps contiguity
                return Source("narrow", expr, receiver, ".narrow(...)")
            if method in STRIDE_PRESERVING:
                if method == "clone" and expr.args:
                    return None  # clone(memory_format=...)
                return self._source(receiver, depth + 1)
            return None
        if isinstance(expr, cst.Attribute) and expr.attr.value in ("T", "mT", "mH", "H"):
            attr = expr.attr.value
            if attr in ("mT", "mH"):
                return Source("transpose", expr, expr.value, f".{attr}", dims=(-2, -1))
            return Source("T", expr, expr.value, f".{attr}")
        if isinstance(expr, cst.Subscript):
            for element in expr.slice:
                inner = element.slice
                if isinstance(inner, cst.Slice) and inner.step is not None:
                    if _int(inner.step) != 1:
                        return Source("step", expr, expr.value, "a step slice")
            return None
        if isinstance(expr, cst.Name):
            value = self._reaching_value(expr)
            return self._source(value, depth + 1) if value is not None else None
        return None

    def _transposing(self, call: cst.Call, method: str, receiver) -> Optional[Source]:
        ints = [_int(a.value) for a in call.args if a.keyword is None and not a.star]
        label = f".{method}({', '.join(self.ctx.code(a.value) for a in call.args)})"
        if method == "t":
            return Source("transpose", call, receiver, ".t()", perm=[1, 0], rank=2)
        if method == "permute":
            values = ints
            if len(call.args) == 1 and isinstance(call.args[0].value, (cst.Tuple, cst.List)):
                values = [_int(e.value) for e in call.args[0].value.elements]
            if values and all(v is not None for v in values):
                n = len(values)
                perm = [v % n for v in values]  # type: ignore[operator]
                if perm == list(range(n)):
                    return None  # identity permute
                return Source("permute", call, receiver, label, perm=perm, rank=n)
            return Source("permute", call, receiver, label)
        if len(ints) == 2 and None not in ints:
            if ints[0] == ints[1]:
                return None
            return Source("transpose", call, receiver, label, dims=tuple(ints))
        return Source("transpose", call, receiver, label)

    def _reaching_value(self, name: cst.Name) -> Optional[cst.CSTNode]:
        """The value of the assignment to `name` that reaches `name` in straight-line code
        of the same function; None when it is not plain to see."""
        scope = self.ctx.scope(name)
        bindings = self.ctx.bindings(scope).get(name.value)
        if not bindings:
            return None
        position = self.ctx.order(name)
        around = {id(a) for a in self.ctx.ancestors(name)}
        before = [b for b in bindings if b.order < position and id(b.node) not in around]
        if not before:
            return None
        binding = before[-1]
        if binding.kind not in ("assign", "annassign") or binding.value is None:
            return None
        if binding.kind == "assign" and not all(
            isinstance(t.target, cst.Name) for t in binding.node.targets
        ):
            return None
        statement = self.ctx.parent(binding.node)
        block = self.ctx.parent(statement) if statement is not None else None
        if block is None or not any(a is block for a in self.ctx.ancestors(name)):
            return None  # assigned in a branch that may not have run
        return binding.value

    def _upstream_permuted(self, expr: cst.CSTNode, depth: int) -> bool:
        """Whether the layout of `expr` may already be permuted (so that one more permute
        could restore it): a transpose/permute upstream through ops that keep layouts
        (elementwise ops, convolutions, interpolation, module calls)."""
        if depth > 8 or expr is None:
            return False
        key = id(expr)
        cached = self._permuted.get(key)
        if cached is not None:
            return cached
        self._permuted[key] = False
        result = self._upstream(expr, depth)
        self._permuted[key] = result
        return result

    def _upstream(self, expr: cst.CSTNode, depth: int) -> bool:
        if isinstance(expr, cst.Call):
            method = method_name(expr)
            qual = self.ctx.qualname(expr.func)
            if qual in FRESH_FUNCTIONS:
                return False
            if method in TRANSPOSING or method in ("expand", "narrow"):
                return True
            if method in FRESH_METHODS:
                return False
            parts = [a.value for a in expr.args if a.keyword is None]
            if method is not None and qual is None:
                parts.insert(0, expr.func.value)  # type: ignore[union-attr]
            return any(self._upstream_permuted(p, depth + 1) for p in parts)
        if isinstance(expr, cst.Attribute):
            if expr.attr.value in ("T", "mT", "mH", "H"):
                return True
            return False
        if isinstance(expr, cst.BinaryOperation):
            if isinstance(expr.operator, cst.MatrixMultiply):
                return False
            return self._upstream_permuted(expr.left, depth + 1) or self._upstream_permuted(
                expr.right, depth + 1)
        if isinstance(expr, cst.UnaryOperation):
            return self._upstream_permuted(expr.expression, depth + 1)
        if isinstance(expr, cst.Subscript):
            return self._upstream_permuted(expr.value, depth + 1)
        if isinstance(expr, cst.Name):
            scope = self.ctx.scope(expr)
            bindings = self.ctx.bindings(scope).get(expr.value, [])
            position = self.ctx.order(expr)
            around = {id(a) for a in self.ctx.ancestors(expr)}
            return any(
                b.value is not None and b.order < position and id(b.node) not in around
                and b.kind in ("assign", "annassign", "augassign", "walrus")
                and self._upstream_permuted(b.value, depth + 1)
                for b in bindings
            )
        return False

    # -- shapes ---------------------------------------------------------------------------
    def _input_shape(self, expr: cst.CSTNode, depth: int = 0) -> Optional[list]:
        """Symbolic input shape when visible: `.view(B, T, H, D)` / `.reshape(...)` /
        a factory with literal sizes; entries are code strings, or None for -1."""
        if depth > 4:
            return None
        if isinstance(expr, cst.Name):
            unpacked = self._unpacked_shape(expr)
            if unpacked is not None:
                return unpacked
            value = self._reaching_value(expr)
            return self._input_shape(value, depth + 1) if value is not None else None
        if not isinstance(expr, cst.Call):
            return None
        method = method_name(expr)
        qual = self.ctx.qualname(expr.func)
        if method in ("view", "reshape") or qual in (
            "torch.zeros", "torch.ones", "torch.randn", "torch.rand", "torch.empty"
        ):
            args = [a for a in expr.args if a.keyword is None]
            if any(a.star for a in args) or not args:
                return None
            values = [a.value for a in args]
            if len(values) == 1 and isinstance(values[0], (cst.Tuple, cst.List)):
                values = [e.value for e in values[0].elements]
            if len(values) == 1 and _int(values[0]) is None:
                return None
            return [None if _int(v) == -1 else self._norm(v) for v in values]
        if method in STRIDE_PRESERVING or method == "contiguous":
            return self._input_shape(expr.func.value, depth + 1)  # type: ignore[union-attr]
        return None

    def _rank(self, expr: cst.CSTNode, depth: int = 0) -> Optional[int]:
        """The rank of `expr` where the code shows it: a `.view`/`.reshape`/factory with
        its sizes spelled out, kept through transposes, elementwise ops and `@`."""
        if depth > 16 or expr is None:
            return None
        shape = self._input_shape(expr)
        if shape is not None:
            return len(shape)
        if isinstance(expr, cst.Name):
            value = self._reaching_value(expr)
            return self._rank(value, depth + 1) if value is not None else None
        if isinstance(expr, cst.BinaryOperation):
            left, right = self._rank(expr.left, depth + 1), self._rank(expr.right, depth + 1)
            if isinstance(expr.operator, cst.MatrixMultiply):
                return max(left, right) if left and right and left >= 2 and right >= 2 else None
            return left if left == right else None
        if isinstance(expr, cst.Call):
            method = method_name(expr)
            if method in TRANSPOSING - {"t"} or method in STRIDE_PRESERVING or method in (
                "contiguous", "softmax", "masked_fill", "relu", "sigmoid", "exp", "float"
            ):
                return self._rank(expr.func.value, depth + 1)  # type: ignore[union-attr]
            if method == "permute":
                return self._rank(expr.func.value, depth + 1)  # type: ignore[union-attr]
        return None

    def _unpacked_shape(self, expr: cst.CSTNode) -> Optional[list]:
        """`n, c, h, w = x.shape` (or `x.size()`) in the same scope gives x's dims."""
        text = self._norm(expr)
        scope = self.ctx.scope(expr)
        table = self._unpacks.get(id(scope))
        if table is None:
            table = {}
            for bindings in self.ctx.bindings(scope).values():
                for b in bindings:
                    if b.kind != "assign" or not isinstance(b.node, cst.Assign):
                        continue
                    target = b.node.targets[0].target
                    value = b.value
                    if isinstance(value, cst.Call) and method_name(value) == "size" and not value.args:
                        value = value.func.value  # type: ignore[union-attr]
                    elif isinstance(value, cst.Attribute) and value.attr.value == "shape":
                        value = value.value
                    else:
                        continue
                    if isinstance(target, (cst.Tuple, cst.List)) and all(
                        isinstance(e.value, cst.Name) for e in target.elements
                    ):
                        table[self._norm(value)] = [e.value.value for e in target.elements]
            self._unpacks[id(scope)] = table
        names = table.get(text)
        return list(names) if names else None

    def _norm(self, node: cst.CSTNode) -> str:
        return "".join(self.ctx.code(node).split())

    def _outcome(self, source: Source, args, receiver: cst.CSTNode) -> str:
        if source.op in ("expand", "narrow", "step"):
            return self._merge_evidence(args, 0) if args is not None else OK
        shape = self._input_shape(source.receiver)
        rank = source.rank if source.rank is not None else (len(shape) if shape else None)
        if rank is None:
            rank = self._rank(source.receiver)
        perm = source.perm
        if perm is None and rank is not None:
            if source.op == "T":
                perm = list(range(rank))[::-1]
            elif source.dims:
                a, b = (d % rank for d in source.dims)
                perm = list(range(rank))
                perm[a], perm[b] = perm[b], perm[a]
            else:
                perm = None
        if perm is not None and shape is not None and len(shape) != len(perm):
            shape = None
        if args is None:
            return OK  # `x.view(*shape)`: nothing to reason about; stay silent
        # Output dims after the permute: symbols where the input shape is known.
        if perm is not None:
            out = [shape[p] if shape else None for p in perm]
            bad = sum(
                1 for k in range(len(perm) - 1)
                if perm[k + 1] != perm[k] + 1 and out[k] != "1" and out[k + 1] != "1"
            )
            # The dims fall into bad + 1 runs that are each contiguous in memory. With
            # fewer view arguments than runs, some argument must span two runs.
            if len(args) < bad + 1:
                return FAILS
            outcome = self._match(args, out, perm, receiver)
            if outcome == MAYBE:
                first = next(k for k in range(len(perm)) if perm[k] != k)
                return self._merge_evidence(args, first)
            return outcome
        # Rank unknown: what the transpose's own dims show.
        first = 0
        if source.dims and all(d >= 0 for d in source.dims):
            a, b = sorted(source.dims)
            first = a
            bad_pairs = {a, b - 1} | ({a - 1} if a >= 1 else set())
            if len(args) < len(bad_pairs) + 1:
                return FAILS
        elif source.op in ("T", "transpose", "permute") and len(args) == 1:
            return FAILS  # flattening merges every dimension
        return self._merge_evidence(args, first)

    @staticmethod
    def _merge_evidence(args, first: int) -> str:
        """Undecided shapes: report (as "may fail") only where the view visibly merges
        something into the moved dims: a product argument (`H * D`) after the first moved
        dim, or a flattening `.view(-1)`. A view that spells out sizes one by one usually splits
        a dim or keeps the shape, which works."""
        if len(args) == 1:
            return MAYBE
        for index, arg in enumerate(args):
            if index > first and sum(
                1 for f in _factors(arg) if _int(f) is None
            ) >= 2:
                return MAYBE
        return OK

    def _match(self, args, out: list, perm: list[int], receiver) -> str:
        n = len(out)
        receiver_text = self._norm(receiver)

        def good(k: int) -> bool:  # may dims k and k+1 be merged?
            return perm[k + 1] == perm[k] + 1 or out[k] == "1" or out[k + 1] == "1"

        def ref(arg) -> Optional[int]:
            """`x.size(k)` / `x.shape[k]` of the viewed tensor: output dim k."""
            if isinstance(arg, cst.Call) and method_name(arg) == "size" and arg.args:
                if self._norm(arg.func.value) == receiver_text:  # type: ignore[union-attr]
                    k = _int(arg.args[0].value)
                    return k % n if k is not None and -n <= k < n else None
            if isinstance(arg, cst.Subscript) and isinstance(arg.value, cst.Attribute):
                if arg.value.attr.value == "shape" and len(arg.slice) == 1:
                    if self._norm(arg.value.value) == receiver_text:
                        index = arg.slice[0].slice
                        k = _int(index.value) if isinstance(index, cst.Index) else None
                        return k % n if k is not None and -n <= k < n else None
            return None

        def covers(arg, start: int) -> Optional[int]:
            """End (exclusive) of the run of output dims starting at `start` whose product
            `arg` spells, else None."""
            k = ref(arg)
            if k is not None:
                return start + 1 if k == start else None
            factors = sorted(self._norm(f) for f in _factors(arg))
            for end in range(start + 1, n + 1):
                run = out[start:end]
                if any(s is None for s in run):
                    return None
                if sorted(run) == factors:  # type: ignore[type-var]
                    return end
            return None

        merges: list[tuple[int, int]] = []
        # Align from the left.
        i, p = 0, 0
        while i < len(args) and p < n:
            end = covers(args[i], p)
            if end is None:
                break
            merges.append((p, end))
            i, p = i + 1, end
        # Align from the right.
        j, q = len(args), n
        while j > i and q > p:
            found = None
            for start in range(q - 1, p - 1, -1):
                if covers(args[j - 1], start) == q:
                    found = start
                    break
            if found is None:
                break
            merges.append((found, q))
            j, q = j - 1, found
        middle_args = args[i:j]
        if q - p >= 2 and len(middle_args) == 1:
            merges.append((p, q))  # the one remaining argument merges the rest
        elif q - p >= 2 and middle_args:
            if all(good(k) for k in range(p, q - 1)):
                pass  # any regrouping inside one contiguous run works
            else:
                return self._with_merges(merges, good, MAYBE)
        elif q - p >= 2 and not middle_args:
            return MAYBE
        # q - p <= 1: the middle dim (if any) is split, or kept.
        return self._with_merges(merges, good, OK)

    @staticmethod
    def _with_merges(merges, good, otherwise: str) -> str:
        for start, end in merges:
            if any(not good(k) for k in range(start, end - 1)):
                return FAILS
        return otherwise

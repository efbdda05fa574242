"""Host reads: where the host waits for the GPU, and which of the file's functions do it.

    syncs = sem.syncs
    syncs.reads(node)            # the host reads `node` performs (whatever the values' places)
    syncs.on_device(expr)        # the value is on the device, shown by the code (no name hint)
    syncs.summary(function)      # host reads of calling `function`, with the parameters they read
    syncs.call_reads(call)       # the summary reads a call of the file's own function makes
                                 # with this call's arguments (those that read device data)
    syncs.callee(call)           # (function, {parameter: [argument, ...]}) for a call of the file's
                                 # own function, method (`self.f`, `obj.f` on an instance of a class
                                 # of the file) or class

A host read is an operation that makes the host wait for the queued GPU work when its operand
lives on the device: a method whose result lives on the host (`syncs` and `place = "cpu"` in
torch_api.toml: `.item()`, `.tolist()`, `.numpy()`, `.cpu()`), `.to("cpu")` without
`non_blocking=True`, `float/int/bool(t)`, `print(t)`, formatting `t` in an f-string or with `%` (`"%.4f" % t`), the truth
value of `t` (`if t > 0:`, `while t:`, `x if t else y`, `assert t`, a comprehension's
`if t != end`, once per element), writing `t` into a CPU tensor (`host[i] = t`), a
constructor that builds a tensor from a list holding `t` (`torch.LongTensor([[t]])`,
`torch.tensor([t, 1.0])`: `[lists]` in torch_api.toml), a PyTorch function that answers with
a host bool of the data (`torch.equal(a, b)`: `syncs` with a bool result), and the
whole-device waits
(`torch.cuda.synchronize()`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Optional

import libcst as cst

from devicelint.names import call_arg, dotted_name, keyword_arg
from devicelint.semantic.modules import WRAPPERS, registered_state
from devicelint.semantic.values import Kind, Place

COMPARING = ("max", "min", "sorted")   # builtins that compare what they are given
# Methods of `str` that torch.Tensor, NumPy arrays, lists, tuples and dicts lack: a value the
# code calls one of them on is a string, not a tensor (`pred.find('[s]')`, `gt.lower()`).
STRING_ONLY = frozenset((
    "find", "rfind", "lower", "upper", "strip", "lstrip", "rstrip", "startswith", "endswith",
    "encode", "isdigit", "isalpha", "isalnum", "isspace", "splitlines", "capitalize", "casefold",
    "swapcase", "title", "zfill", "ljust", "rjust", "center", "rsplit", "removeprefix",
    "removesuffix"))
# A tensor's attributes the host knows without waiting for the GPU (PyTorch's API; not
# `.device`: a tensor made with `device=x.device` lives where `x` does).
METADATA = frozenset(("shape", "dtype", "ndim", "layout", "is_cuda", "is_cpu", "is_xpu",
                      "is_mps", "is_meta", "is_sparse", "is_quantized", "requires_grad", "is_leaf",
                      "itemsize", "nbytes"))
_HOST_RESULTS = ("number", "bool", "host-list", "array", "size", "dtype", "device")
_HOST_KINDS = (Kind.NUMBER, Kind.BOOL, Kind.STRING, Kind.SIZE, Kind.DTYPE, Kind.DEVICE, Kind.NONE,
               Kind.ARRAY, Kind.MODULE_CLASS, Kind.CALLABLE)
_NESTED = (cst.FunctionDef, cst.ClassDef, cst.Lambda)
_MAX_SUMMARY_DEPTH = 6
# Methods that give what a container or module holds: the tensors a module registers, a
# mapping's values.
_CONTENTS = frozenset(("parameters", "named_parameters", "buffers", "named_buffers", "state_dict",
                       "items", "values", "get", "pop"))


@dataclass(frozen=True)
class HostRead:
    node: cst.CSTNode                  # where the host waits (a call, a test operand, an f-string part)
    what: str                          # "`.item()`", "`float(tensor)`", ...
    operand: Optional[cst.CSTNode]     # the value read; None for a whole-device wait


@dataclass(frozen=True)
class SummaryRead:
    """A host read that calling a function performs."""

    node: cst.CSTNode                  # the read in the function's body (or the call that reads)
    what: str
    params: frozenset                  # names of the function's parameters the operand comes from
    device: bool                       # the operand is on the device whatever the arguments
    # In another file of the project: a devicelint.notebook.Site (its path as linted, line,
    # column; its cell in a notebook) of the read; `node` is then a node of that file's tree.
    where: Optional[tuple] = None
    # The parameters whose tensors reach the operand from inside: an element of what the
    # parameter holds (`for p in params`, `params[0]`, `kwargs.items()`) or a tensor of a
    # module (`model.named_parameters()`, `model(x)`), not the parameter itself (see
    # `carries_device_data`).
    inside: frozenset = frozenset()


class SyncModel:
    def __init__(self, model) -> None:
        self.model = model
        self.api = model.api
        self._summaries: dict[int, Optional[tuple[SummaryRead, ...]]] = {}
        self._deps: dict[tuple[int, int], frozenset] = {}
        self._depth = 0

    # -- single reads ------------------------------------------------------------------
    def reads(self, node: cst.CSTNode) -> list[HostRead]:
        """The host reads `node` itself performs, operands' places not yet judged: for a
        call, the call; for an `if`/`while`/`assert`/conditional expression, its test's
        operands; for an f-string part, its expression."""
        model = self.model
        if type(node) is cst.Call:
            func = node.func
            listed = self.list_elements(node)
            if listed:
                # `torch.LongTensor([[ni]])`: each tensor in the list is read for its value.
                what = f"`{model.qualname(func)}([...])` reading a tensor element"
                return [HostRead(node, what, element) for element in listed]
            converting = self._conversion(func)
            if converting is not None:
                # `float(t)`, `chr(top_i)`, `math.log10(1 / mse)`: `__float__`/`__index__`
                # of each tensor given (`[conversions]` in the table).
                return [HostRead(node, f"`{converting}(tensor)`", a.value)
                        for a in node.args if a.keyword is None and not a.star]
            answered = self._host_answer(func)
            if answered is not None:
                # `torch.equal(a, b)`, `torch.allclose(a, b)`: a Python bool of the tensors'
                # data, one wait per call (the tensors share a device, or the call raises).
                given = [a.value for a in node.args if a.keyword is None and not a.star]
                return [HostRead(node, f"`{answered}()`", given[0])] if given else []
            if type(func) is cst.Attribute:
                method = func.attr.value
                receiver = func.value
                if method == "to":
                    if self._to_host(node):
                        return [HostRead(node, "`.to(\"cpu\")`", receiver)]
                    return []
                if method == "type" and node.args and self._type_to_host(node):
                    # `equals.type(torch.FloatTensor)`: a CPU tensor type, a copy to the host.
                    return [HostRead(node, "`.type()` to a CPU tensor type", receiver)]
                written = self.api.writer_reads.get(method)
                if written is not None and self._summary_writer(receiver):
                    # `writer.add_scalar(tag, loss, step)`: TensorBoard copies the tensor to
                    # the host (make_np) before it writes it (`[writers]` in the table).
                    value = call_arg(node, written[0], written[1])
                    if value is None:
                        return []
                    return [HostRead(node, f"`SummaryWriter.{method}()` copying a tensor to the host", value)]
                spec = self.api.method(method)
                if spec is not None and spec.syncs and spec.place == "cpu" \
                        and model.value(receiver).kind is not Kind.MODULE:
                    return [HostRead(node, f"`.{method}()`", receiver)]
                if method == "synchronize" and self.is_synchronize(node):
                    return [HostRead(node, f"`{model.qualname(func)}()`", None)]
                return []
            if type(func) is cst.Name and func.value == "print" and not model.defs(func):
                return [HostRead(node, "`print(tensor)`", a.value)
                        for a in node.args if a.keyword is None and not a.star]
            if type(func) is cst.Name and func.value in COMPARING and not model.defs(func):
                # `max(scores)` compares the elements pairwise on the host: the truth value
                # of each `b > a` (the operand is what is iterated: `elements` of it).
                given = [a.value for a in node.args if a.keyword is None and not a.star
                         and not self._mapping_keys(a.value)]
                what = f"`{func.value}()` comparing tensors"
                return [HostRead(node, what, a) for a in given]
            return []
        if type(node) is cst.FormattedStringExpression:
            return [HostRead(node.expression, "formatting a tensor in an f-string", node.expression)]
        if type(node) is cst.BinaryOperation:
            return self._percent_format(node)
        if type(node) in (cst.If, cst.While, cst.IfExp, cst.Assert):
            test = node.test
            return [HostRead(o, "`if`/`while` on a tensor's value", o) for o in operands(test)]
        if type(node) is cst.Assign:
            # `attentions[i] = attention` with `attentions` a CPU tensor: a blocking copy of the
            # right-hand side to the host.
            for target in node.targets:
                sliced = target.target
                if type(sliced) is cst.Subscript:
                    base = model.container(sliced.value)
                    if base.kind is Kind.TENSOR and base.place is Place.CPU:
                        return [HostRead(node.value, "copying a tensor into a CPU tensor", node.value)]
            return []
        if type(node) is cst.Subscript:
            # `counts[label]` with `counts` a Python list or a NumPy array and `label` a
            # tensor: the index goes through `__index__`, which reads the tensor on the host.
            if len(node.slice) == 1 and type(node.slice[0].slice) is cst.Index:
                held = model.value(node.value).kind
                index = node.slice[0].slice.value
                if model.value(index).kind in (Kind.TENSOR, Kind.UNKNOWN) and (
                        held in (Kind.SEQUENCE, Kind.ARRAY) or (held is Kind.UNKNOWN and self.gives_text(node))):
                    return [HostRead(node, "indexing a Python list or NumPy array with a tensor", index)]
            return []
        if type(node) is cst.CompIf:
            # `[i for i, w in enumerate(words) if w != end]`: one truth value per element.
            return [HostRead(o, "a comprehension's `if` on a tensor's value", o) for o in operands(node.test)]
        return []

    def gives_text(self, node: cst.Subscript) -> bool:
        """What `node` gives is a Python `str`, as the code uses it: an element of a
        comprehension that `"sep".join(...)` joins (`" ".join(itos[i] for i in ids)`), or the
        value of `word = vocab.itos[i]` where `word` is then tested with `"<" in word` or
        given a method only strings have (`word.lower()`). A tensor gives a tensor when
        indexed (and raises on both uses), so the indexed object is a Python container:
        its index goes through `__index__`, not what it is called."""
        model = self.model
        parent = model.parent(node)
        if isinstance(parent, (cst.ListComp, cst.GeneratorExp)) and parent.elt is node:
            arg = model.parent(parent)
            call = model.parent(arg) if isinstance(arg, cst.Arg) else None
            return isinstance(call, cst.Call) and _joins_text(call)
        if not (isinstance(parent, cst.Assign) and parent.value is node and len(parent.targets) == 1
                and isinstance(parent.targets[0].target, cst.Name)):
            return False
        target = parent.targets[0].target
        function = model.function_of(node)
        if function is None:
            return False
        for name in model.ctx.descendants(function.body, cst.Name, _NESTED):
            if name.value != target.value or name is target \
                    or not any(d.value is node and d.kind == "assign" for d in model.defs(name)):
                continue
            user = model.parent(name)
            if isinstance(user, cst.Attribute) and user.value is name and user.attr.value in STRING_ONLY \
                    and isinstance(model.parent(user), cst.Call) and model.parent(user).func is user:
                return True
            if isinstance(user, cst.ComparisonTarget) and user.comparator is name \
                    and isinstance(user.operator, (cst.In, cst.NotIn)):
                comparison = model.parent(user)
                if isinstance(comparison, cst.Comparison) and len(comparison.comparisons) == 1 \
                        and isinstance(comparison.left, (cst.SimpleString, cst.ConcatenatedString)):
                    return True
        return False

    def _summary_writer(self, receiver: cst.BaseExpression) -> bool:
        """`receiver` is a name every binding of which makes a TensorBoard `SummaryWriter`
        (`writer = SummaryWriter(log_dir=...)`, at the module's level or in the function)."""
        model = self.model
        if not isinstance(receiver, cst.Name):
            return False
        defs = model.defs(receiver)
        return bool(defs) and all(
            d.kind == "assign" and not d.path and isinstance(d.value, cst.Call)
            and model.qualname(d.value.func) in self.api.writer_classes for d in defs)

    def _percent_format(self, node: cst.BinaryOperation) -> list[HostRead]:
        """`"%11.4g" % t`, `fmt % (epoch, *losses)`: printf-style formatting of a string
        converts each value it is given (`__float__`, `__int__`, `__str__`), which reads a
        tensor on the host; a starred operand gives each of its elements (the rows of a
        tensor). The left operand must be a string (a literal, or strings joined with `+`
        and repeated with `*`); a mapping on the right (`"%(loss)f" % d`) is not followed."""
        if not isinstance(node.operator, cst.Modulo) or not self._format_string(node.left):
            return []
        right = node.right
        parts = right.elements if isinstance(right, cst.Tuple) else [right]
        found = []
        for part in parts:
            value = part.value if isinstance(part, (cst.Element, cst.StarredElement)) else part
            if isinstance(value, (cst.Dict, cst.DictComp)):
                continue
            found.append(HostRead(value, "formatting a tensor with `%`", value))
        return found

    def _format_string(self, node: cst.BaseExpression) -> bool:
        if isinstance(node, (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString)):
            return True
        if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Add):
            return self._format_string(node.left) or self._format_string(node.right)
        if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Multiply):
            return self._format_string(node.left)
        return False

    def _conversion(self, func: cst.BaseExpression) -> Optional[str]:
        """The name of a Python function that makes a number of its argument (`float`,
        `chr`, `math.log10`: `[conversions]` in the table), as the file calls it."""
        if type(func) is cst.Name and func.value in self.api.converting_builtins:
            return func.value if not self.model.defs(func) else None
        if type(func) in (cst.Name, cst.Attribute):
            qual = self.model.qualname(func)
            if qual is not None and qual in self.api.converting_functions:
                return dotted_name(func) or qual
        return None

    def _host_answer(self, func: cst.BaseExpression) -> Optional[str]:
        """The name of a PyTorch function that answers with a host value computed from the
        tensors it is given (`torch.equal`: `syncs` with a `bool`/`number` result in the
        table), as the file calls it; None for any other callee."""
        if type(func) not in (cst.Name, cst.Attribute):
            return None
        qual = self.model.qualname(func)
        spec = self.api.function(qual) if qual is not None else None
        if spec is None or not spec.syncs or spec.result not in ("bool", "number"):
            return None
        return dotted_name(func) or qual

    def _mapping_keys(self, node: cst.BaseExpression) -> bool:
        """`d.keys()`, or a mapping itself: what is iterated (and compared by `sorted`) are
        its keys, not the tensors it holds (`sorted(losses.keys())` sorts the loss names)."""
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) \
                and node.func.attr.value == "keys" and not node.args:
            return True
        return self.model.value(node).kind is Kind.MAPPING

    def list_elements(self, call: cst.Call) -> list[cst.BaseExpression]:
        """The elements of the list or tuple display a list-reading constructor is given
        (`[lists] read_elements` in the table: `torch.LongTensor([[ni]])`, `torch.tensor([a,
        b])`, `[ni] * n`), nested displays included, that may be tensors (not literals)."""
        if not call.args or call.args[0].keyword is not None or call.args[0].star:
            return []
        data = call.args[0].value
        if type(data) is cst.BinaryOperation and type(data.operator) is cst.Multiply:
            data = data.left if type(data.left) in (cst.List, cst.Tuple) else data.right  # `[ni] * n`
        if type(data) not in (cst.List, cst.Tuple):
            return []
        qual = self.model.qualname(call.func)
        if qual is None or qual not in self.api.list_element_readers:
            return []
        found = []
        stack = [data]
        while stack:
            display = stack.pop()
            for element in display.elements:
                if type(element) is cst.StarredElement:
                    continue
                if type(element.value) in (cst.List, cst.Tuple):
                    stack.append(element.value)
                elif not self.model.never_tensor(element.value):
                    found.append(element.value)
        return sorted(found, key=self.model.ctx.order)

    def _type_to_host(self, call: cst.Call) -> bool:
        target = call_arg(call, 0, "dtype")
        place, hint = self.model.tensor_type_place(target)
        return place is Place.CPU and not hint and self.model.value(call.func.value).kind is not Kind.MODULE

    def _to_host(self, call: cst.Call) -> bool:

        target = keyword_arg(call, "device")
        if target is None:
            target = call_arg(call, 0, "\0")
        if target is None:
            return False
        place, _hint = self.model.device_place(target)
        if place is not Place.CPU:
            return False
        blocking = keyword_arg(call, "non_blocking")
        return blocking is None or self.model.value(blocking).literal is not True

    def is_synchronize(self, call: cst.Call) -> bool:
        qual = self.model.qualname(call.func)
        spec = self.api.function(qual) if qual else None
        return spec is not None and spec.syncs and spec.result == "none"

    def on_device(self, node: Optional[cst.CSTNode]) -> bool:
        """The value of `node` lives on the device, as the code shows it (not by a name)."""
        if node is None:
            return True
        value = self.model.value(node)
        return value.place is Place.DEVICE and value.kind in (Kind.TENSOR, Kind.UNKNOWN) and not value.hint

    # -- calls of the file's own functions ----------------------------------------------
    def callee(self, call: cst.Call) -> Optional[tuple[cst.FunctionDef, dict[str, list]]]:
        model = self.model
        func = call.func
        function: Optional[cst.FunctionDef] = None
        bound_self = False
        value = model.value(func)
        if value.kind is Kind.CALLABLE and type(value.node) is cst.FunctionDef:
            function = value.node
            bound_self = type(func) is cst.Attribute and self._is_method(function)
        if function is None:
            function = model.resolve_function(func)
            bound_self = function is not None and type(func) is cst.Attribute
        if function is None and type(func) is cst.Attribute:
            owner = self._instance_class(func.value)
            if owner is not None:
                function = model._method(owner, func.attr.value)
                bound_self = function is not None
        if function is None:
            return None
        if bound_self and not self._is_method(function):
            return None
        return function, self._bind(function, call, bound_self)

    def _is_method(self, function: cst.FunctionDef) -> bool:
        parent = self.model.parent(function)
        owner = self.model.parent(parent) if parent is not None else None
        if type(owner) is not cst.ClassDef:
            return False
        return not any(dotted_name(d.decorator) in ("staticmethod", "classmethod") for d in function.decorators)

    def _instance_class(self, node: cst.BaseExpression) -> Optional[cst.ClassDef]:
        """The class of this file that every binding of `node` instantiates (`m = Meter()`)."""
        if type(node) is not cst.Name:
            return None
        defs = self.model.defs(node)
        owners = set()
        found = None
        for d in defs:
            if d.kind not in ("assign", "annassign") or d.path or type(d.value) is not cst.Call:
                return None
            head = d.value.func
            if type(head) is cst.Name:
                head_defs = self.model.defs(head)
            else:
                head_defs = self.model.module_member_defs(head)   # `d2l.Accumulator(3)`
                if head_defs is None:
                    return None
            classes = [c.node for c in head_defs if c.kind == "class"]
            if len(classes) != 1 or len(head_defs) != 1:
                return None
            owners.add(id(classes[0]))
            found = classes[0]
        return found if len(owners) == 1 else None

    @staticmethod
    def _bind(function: cst.FunctionDef, call: cst.Call, bound_self: bool) -> dict[str, list]:
        params = function.params
        positional = [*params.posonly_params, *params.params]
        if bound_self and positional:
            positional = positional[1:]
        star = params.star_arg.name.value if type(params.star_arg) is cst.Param else None
        names = {p.name.value for p in (*positional, *params.kwonly_params)}
        # `**kwargs`: the keywords it gathers (one value each) and the mappings a call unpacks
        # into it are what it holds: under "**kwargs" as (value, is_a_mapping), judged only
        # for reads from inside it (read_applies).
        gathered = f"**{params.star_kwarg.name.value}" if params.star_kwarg is not None else None
        bound: dict[str, list] = {}
        index = 0
        for arg in call.args:
            if arg.star == "**" and gathered is not None:
                bound.setdefault(gathered, []).append((arg.value, True))
                continue
            if arg.star:
                continue
            if arg.keyword is not None:
                if arg.keyword.value in names:
                    bound.setdefault(arg.keyword.value, []).append(arg.value)
                elif gathered is not None:
                    bound.setdefault(gathered, []).append((arg.value, False))
                continue
            if index < len(positional):
                bound.setdefault(positional[index].name.value, []).append(arg.value)
            elif star is not None:
                bound.setdefault(star, []).append(arg.value)
            index += 1
        return bound

    def call_reads(self, call: cst.Call, on_device=None) -> list[SummaryRead]:
        """The host reads of device data a call of the file's own function (or of a function
        of another local module, through the project index) makes with these arguments.
        `on_device(arg)`: whether an argument is on the device (default: `self.on_device`,
        what the code shows)."""
        on_device = on_device or self.on_device
        found = self.callee(call)
        if found is None:
            forward = self.module_forward(call)
            if forward is not None:
                return self._method_reads(call, forward, on_device, call.func)
            method = self.narrowed_method(call)
            if method is not None:
                return self._method_reads(call, method, on_device, call.func.value)
            methods = self.foreign_methods(call)
            if methods:
                found = [self._method_reads(call, m, on_device, call.func.value) for m in methods]
                if len(found) == 1 or not all(found):
                    return found[0] if all(found) else []
                # Whichever class the object is, its method reads: the first read of each.
                return [reads[0] for reads in found]
            return self._foreign_reads(call, on_device)
        function, bound = found
        reads = self.summary(function)
        return [read for read in reads or () if self.read_applies(read, bound, on_device)]

    def read_applies(self, read: SummaryRead, bound: dict[str, list], on_device) -> bool:
        """A summary read happens on device data for these bound arguments: the operand is on
        the device whatever they are, or comes from an argument on the device, or from inside
        one that holds device data (`carries_device_data`)."""
        if read.device:
            return True
        for name in read.params:
            for arg in bound.get(name, ()):
                if on_device(arg) or (name in read.inside and self.carries_device_data(arg)):
                    return True
            if name in read.inside:
                for arg, mapping in bound.get(f"**{name}", ()):
                    if self.carries_device_data(arg) if mapping else on_device(arg):
                        return True
        return False

    def carries_device_data(self, node: cst.BaseExpression) -> bool:
        """`node` holds tensors on the device, as the code shows it: a module moved there
        (its parameters and buffers, what it returns for them), or a list, tuple, dict or
        generator of device tensors (`net.parameters()`, `[a.cuda(), b.cuda()]`). What a
        helper reads from inside such a value (`SummaryRead.inside`) waits for the GPU; the
        value itself (its length, its truth) does not."""
        value = self.model.value(node)
        if value.hint:
            return False
        if value.kind is Kind.MODULE:
            return value.place is Place.DEVICE
        if value.kind not in (Kind.SEQUENCE, Kind.MAPPING):
            return False
        parts = [value.element] if value.element is not None else list(value.items or ())
        return bool(parts) and all(p is not None and p.kind is Kind.TENSOR and p.place is Place.DEVICE
                                   and not p.hint for p in parts)

    def module_forward(self, call: cst.Call):
        """(the model of the file that defines it, its `forward`) for a call of a module whose
        class the code shows (`decoder(imgs, caps)` with `decoder = DecoderWithAttention(...)`
        moved to the device, here or in another local module): the only module class its
        bindings, through `.to()`/`.cuda()` and the parameters' call sites, construct (a
        binding the code does not show, `checkpoint["decoder"]`, adds none); else None."""
        cls = self.shown_class(call)
        if cls is None:
            return None
        model = self.model
        owner = model.module_classes().get(cls)
        if owner is not None:
            forward = model._method(owner, "forward")
            return (model, forward) if forward is not None else None
        other = model._project_class(cls)
        if other is None:
            return None
        forward = other[0]._method(other[1], "forward")
        return (other[0], forward) if forward is not None else None

    def shown_class(self, call: cst.Call) -> Optional[str]:
        """The one module class whose instance `call` calls, as `module_forward` finds it
        (its qualified name, or the name of a class of this file), without reading another
        file's model; None when the code shows none, or several."""
        found = self._shown_classes(call.func, 0)
        return found.pop() if len(found) == 1 else None

    def narrowed_method(self, call: cst.Call):
        """(the model of the file that defines it, the method) for `obj.method(...)` under
        `if isinstance(obj, Cls):` (the same `obj`, in the `if`'s body) with `Cls` a class of
        this file or of another local module; else None."""
        model = self.model
        func = call.func
        receiver = dotted_name(func.value) if type(func) is cst.Attribute else None
        if receiver is None:
            return None
        child, parent = call, model.parent(call)
        while parent is not None and type(parent) not in _NESTED:
            if type(parent) is cst.If and child is parent.body:
                test = parent.test
                if type(test) is cst.Call and type(test.func) is cst.Name \
                        and test.func.value == "isinstance" and not model.defs(test.func) \
                        and len(test.args) == 2 and dotted_name(test.args[0].value) == receiver:
                    return self._class_method(test.args[1].value, func.attr.value)
            child, parent = parent, model.parent(parent)
        return None

    def foreign_methods(self, call: cst.Call) -> list:
        """[(the model of the file that defines it, the method), ...] for `obj.method(...)`
        where every binding of the name `obj` makes an instance of a class of another local
        module (`meter = utils.AverageMeter()`, or one class per branch: `converter =
        CTCLabelConverter(...)` / `AttnLabelConverter(...)`), one per class; [] when a
        binding is anything else, or a class lacks the method (or has it as a static or
        class method)."""
        model = self.model
        func = call.func
        if model.project is None or type(func) is not cst.Attribute \
                or type(func.value) is not cst.Name:
            return []
        found: dict = {}
        for made in self._instances(func.value, 0) or ():
            qual = model.qualname(made.func)
            owner = model._project_class(qual) if qual else None
            if owner is None and qual is not None and type(made.func) is cst.Attribute:
                # `import util.misc as utils` then `utils.MetricLogger()`: the index resolves
                # the name as the file writes it (an import's, as the qualified name shows).
                written = dotted_name(made.func)
                owner = model._project_class(written) if written else None
            if owner is None:
                return []
            other, cls = owner
            method = other._method(cls, func.attr.value)
            if method is None or not other.syncs._is_method(method):
                return []
            found[id(method)] = (other, method)
        return list(found.values())

    def _instances(self, name: cst.Name, depth: int) -> Optional[list[cst.Call]]:
        """The calls that make the objects `name` may hold: the right-hand sides of its
        bindings, through the arguments every call of the file passes for a parameter of a
        plain function (`validation(model, converter)` with `converter = Converter(...)`
        where it is called); None when a binding is anything else, or a parameter's function
        is a method or never called here."""
        out: list[cst.Call] = []
        for d in self.model.defs(name):
            if d.kind in ("assign", "annassign") and not d.path and type(d.value) is cst.Call:
                out.append(d.value)
                continue
            if d.kind != "param" or depth >= _MAX_SUMMARY_DEPTH or type(d.scope) is not cst.FunctionDef \
                    or self._is_method(d.scope):
                return None
            passed = self._param_arguments(d)
            if not passed:
                return None
            for arg in passed:
                if type(arg) is cst.Call:
                    out.append(arg)
                    continue
                inner = self._instances(arg, depth + 1) if type(arg) is cst.Name else None
                if inner is None:
                    return None
                out.extend(inner)
        return out or None

    def _class_method(self, cls: cst.BaseExpression, name: str):
        model = self.model
        local = [d.node for d in model.defs(cls) if d.kind == "class"] if isinstance(cls, cst.Name) else []
        if local:
            method = model._method(local[0], name) if len(local) == 1 else None
            return (model, method) if method is not None else None
        qual = model.qualname(cls)
        found = model._project_class(qual) if qual else None
        if found is None:
            return None
        method = found[0]._method(found[1], name)
        return (found[0], method) if method is not None else None

    def _shown_classes(self, node: cst.CSTNode, depth: int) -> set:
        model = self.model
        if type(node) is cst.Call and node.args and depth <= 6 \
                and model.resolved_qualname(node.func) in WRAPPERS:
            # `DistributedDataParallel(net, device_ids=[gpu])`: its forward runs net's.
            return self._shown_classes(node.args[0].value, depth + 1)
        value = model.value(node)
        if value.cls and value.cls not in WRAPPERS:
            return {value.cls} if value.kind in (Kind.MODULE, Kind.MODULE_CLASS) else set()
        if depth > 6 or value.kind not in (Kind.MODULE, Kind.TENSOR, Kind.UNKNOWN):
            return set()
        if type(node) is cst.Call:
            func = node.func
            if type(func) is cst.Attribute and func.attr.value in ("to", "cuda"):
                return self._shown_classes(func.value, depth + 1)
            made = model.value(func)
            return {made.cls} if made.kind is Kind.MODULE_CLASS and made.cls else set()
        if type(node) is not cst.Name:
            return set()
        found: set = set()
        defs = list(model.defs(node))
        seen = set()
        while defs:
            d = defs.pop()
            if id(d) in seen:
                continue
            seen.add(id(d))
            if d.kind == "effect":   # `decoder.train()`: the object is what reached it
                defs.extend(d.prior)
            elif d.kind in ("assign", "annassign") and not d.path and d.value is not None:
                found |= self._shown_classes(d.value, depth + 1)
            elif d.kind == "param":
                for arg in self._param_arguments(d):
                    found |= self._shown_classes(arg, depth + 1)
        return found

    def importer_instances(self, name: cst.Name) -> Optional[list]:
        """(that file's model, the call) pairs for the objects a parameter `name` of a
        top-level function of this file is given by the other files of the run that import
        the function (`validate.run(..., compute_loss=compute_loss)` in train.py, with
        `compute_loss = ComputeLoss(model)` there), when no call of this file passes it;
        None when the parameter is anything else, or a passed value is not made by a call
        there (`SyncModel._instances` of it)."""
        model = self.model
        view = model.project
        defs = model.defs(name)
        if view is None or len(defs) != 1 or defs[0].kind != "param":
            return None
        d = defs[0]
        function = d.scope
        if not isinstance(function, cst.FunctionDef) or model.parent(function) is not model.ctx.module \
                or self._param_arguments(d):
            return None
        memo = model.__dict__.setdefault("_importer_instances", {})
        key = (id(function), d.name)
        if key in memo:
            return memo[key]
        found: list = []
        for importer in view.importers_of(function.name.value):
            other = view.model_of(importer)
            if other is None or other.project is None:
                continue
            for call in other.ctx.iter_nodes(cst.Call):
                dotted = dotted_name(call.func)
                symbol = other.project.resolve(dotted) if dotted else None
                if symbol is None or symbol.module is not view.module or symbol.name != function.name.value:
                    continue
                for arg in other.syncs._bind(function, call, False).get(d.name, ()):
                    made = [arg] if isinstance(arg, cst.Call) else \
                        other.syncs._instances(arg, 1) if isinstance(arg, cst.Name) else None
                    if made is None:
                        memo[key] = None
                        return None
                    found.extend((other, m) for m in made)
        memo[key] = found or None
        return memo[key]

    def _param_arguments(self, d) -> list:
        """What the calls of the file pass for the parameter bound by `d`."""
        function = d.scope
        if not isinstance(function, cst.FunctionDef):
            return []
        out = []
        for call in self.model.calls_by_name().get(function.name.value, ()):
            if self.model.resolve_function(call.func) is function:
                out.extend(self._bind(function, call, False).get(d.name, ()))
        return out

    def runs_foreign_function(self, call: cst.Call) -> bool:
        """`call` runs a top-level function of another local module (`from utils import
        accuracy`, `utils.accuracy(...)`, `from utils import *`): the project index says so,
        without reading that file yet."""
        return self._foreign_dotted(call) is not None

    def foreign_function(self, call: cst.Call):
        """(the other file's model, its FunctionDef) for such a call, else None."""
        dotted = self._foreign_dotted(call)
        if dotted is None:
            return None
        return self.model.project.function(dotted)

    def _foreign_dotted(self, call: cst.Call) -> Optional[str]:
        """The name, as the file's top level writes it, of the top-level function of another
        local module that `call` runs: the called name itself when the file's top level binds
        it (not a local binding of the same name: a parameter, an assignment), or, for a
        parameter called as a function, what every call of its function in the file passes
        for it (`train_step(..., accuracy_fn=accuracy_fn)`); else None."""
        view = self.model.project
        dotted = dotted_name(call.func) if view is not None else None
        if dotted is None:
            return None
        head = call.func
        while type(head) is cst.Attribute:
            head = head.value
        if type(head) is not cst.Name:
            return None
        defs = self.model.defs(head)
        if type(call.func) is cst.Name and len(defs) == 1 and defs[0].kind == "param":
            dotted = self._passed_function(defs[0])
        elif any(d.kind != "import" and type(d.scope) is not cst.Module for d in defs):
            return None
        if dotted is None:
            return None
        symbol = view.resolve(dotted)
        if symbol is None or symbol.kind != "function" or symbol.module is view.module:
            return None
        return dotted

    def _passed_function(self, param) -> Optional[str]:
        """The name of the one function of another local module that every call of the
        parameter's function in this file passes for it (each a name the top level binds);
        None when a call passes none (the default), something else, or there is no call."""
        function = param.scope
        if not isinstance(function, cst.FunctionDef):
            return None
        model = self.model
        view = model.project
        found: dict = {}
        for call in model.calls_by_name().get(function.name.value, ()):
            if model.resolve_function(call.func) is not function:
                continue
            bound = self._bind(function, call, isinstance(call.func, cst.Attribute) and self._is_method(function))
            args = bound.get(param.name, ())
            if len(args) != 1 or not isinstance(args[0], cst.Name) \
                    or any(not isinstance(d.scope, cst.Module) for d in model.defs(args[0])):
                return None
            symbol = view.resolve(args[0].value)
            if symbol is None or symbol.kind != "function" or symbol.module is view.module:
                return None
            found[(symbol.module.path, symbol.name)] = args[0].value
        return next(iter(found.values())) if len(found) == 1 else None

    def _method_reads(self, call: cst.Call, method, on_device, obj: cst.BaseExpression) -> list[SummaryRead]:
        """The reads of a method of a class (`forward`, or one `isinstance` shows) that a
        call makes with its arguments (the first parameter is the object `obj`: a read of
        its buffers or parameters is on the device when `obj` is a module the code moved
        there)."""
        other, function = method
        bound = self._bind(function, call, True)
        positional = [*function.params.posonly_params, *function.params.params]
        own = positional[0].name.value if positional else None
        out = []
        for read in other.syncs.summary(function) or ():
            if self.read_applies(read, bound, on_device) \
                    or (own in read.params and self._module_on_device(obj)):
                if other is not self.model:
                    read = replace(read, where=other.ctx.site(read.node))
                out.append(read)
        return out

    def _module_on_device(self, node: cst.BaseExpression) -> bool:
        """`node` is a module the code shows on the device (moved there, not by a name)."""
        value = self.model.value(node)
        return value.kind is Kind.MODULE and value.place is Place.DEVICE and not value.hint

    def _foreign_reads(self, call: cst.Call, on_device) -> list[SummaryRead]:
        found = self.foreign_function(call)
        if found is None:
            return []
        other, function = found
        bound = self._bind(function, call, False)
        out = []
        for read in other.syncs.summary(function) or ():
            if self.read_applies(read, bound, lambda arg: on_device(arg)):
                out.append(replace(read, where=other.ctx.site(read.node)))
        return out

    # -- summaries -----------------------------------------------------------------------
    def summary(self, function: cst.FunctionDef) -> Optional[tuple[SummaryRead, ...]]:
        """Host reads that calling `function` performs once per call (reads inside a step
        loop of its own, under a throttle or in a CPU-only branch are left out: they are
        judged where they are). None while the summary is being computed (recursion)."""
        key = id(function)
        if key in self._summaries:
            return self._summaries[key]
        self._summaries[key] = None
        result: tuple[SummaryRead, ...] = ()
        if self._depth < _MAX_SUMMARY_DEPTH:
            self._depth += 1
            try:
                result = tuple(self._summarise(function))
            finally:
                self._depth -= 1
        self._summaries[key] = result
        return result

    def _summarise(self, function: cst.FunctionDef):
        model = self.model
        if model.flow(function).yields:
            return  # calling a generator runs none of its body
        functions = model.functions()
        for node in self._body_nodes(function):
            reads = self.reads(node)
            helper = isinstance(node, cst.Call) and (_last_name(node.func) in functions
                                                     or self.runs_foreign_function(node))
            if not (reads or helper) or not self._runs_per_call(node, function):
                continue
            if helper:
                found = self._helper_reads(node, function)
                if found is not None:
                    yield found
            for read in reads:
                if read.operand is None:
                    yield SummaryRead(read.node, read.what, frozenset(), True)
                    continue
                value = model.value(read.operand)
                if value.kind in _HOST_KINDS or value.place is Place.CPU:
                    continue
                params = self.param_deps(read.operand, function)
                device = self.on_device(read.operand)
                if device or params:
                    inside = self.inside_deps(read.operand, function) if params else frozenset()
                    yield SummaryRead(read.node, read.what, params, device, inside=inside)

    def _helper_reads(self, node: cst.Call, function: cst.FunctionDef) -> Optional[SummaryRead]:
        """The first host read that `node`, a call of another function of this file or of a
        top-level function of another local module (`from .utils import to_cpu`), makes, as
        a read of `function`'s parameters; None when it makes none that rests on them or on
        device data."""
        callee = self.callee(node)
        inner_self = None
        if callee is not None:
            inner_function, bound = callee
            if inner_function is function:
                return None
            inner_reads = self.summary(inner_function) or ()
            inner_self = self._object_param(inner_function, node, function)
        else:
            foreign = self.foreign_function(node)
            if foreign is None:
                return None
            other, inner_function = foreign
            bound = self._bind(inner_function, node, False)
            inner_reads = other.syncs.summary(inner_function) or ()
        for inner in inner_reads:
            params: set = set()
            inside: set = set()
            device = inner.device
            for name in inner.params:
                if name == inner_self:
                    params.add(self._self_name(function))  # `self._helper()`: the same object
                for arg in bound.get(name, ()):
                    device = device or self.on_device(arg)
                    deps = self.param_deps(arg, function)
                    params |= deps
                    inside |= deps if name in inner.inside else self.inside_deps(arg, function)
            if device or params:
                what = f"`{_callee_name(node)}()` (its {inner.what})"
                return SummaryRead(node, what, frozenset(params), device, inside=frozenset(inside & params))
        return None

    def _body_nodes(self, function: cst.FunctionDef):
        model = self.model
        stack = list(reversed(model.children(function.body)))
        while stack:
            node = stack.pop()
            if type(node) in _NESTED:
                continue
            yield node
            stack.extend(reversed(model.children(node)))

    def _runs_per_call(self, node: cst.CSTNode, function: cst.FunctionDef) -> bool:
        model = self.model
        if not model.on_gpu_path(node) or model.loops.step_loop(node) is not None:
            return False
        child = node
        parent = model.parent(node)
        while parent is not None and parent is not function:
            if isinstance(parent, cst.If) and child is not parent.test and model.loops.is_throttle(parent.test):
                return False
            if isinstance(parent, cst.Else):
                owner = model.parent(parent)
                if isinstance(owner, cst.If) and model.loops.is_throttle(owner.test):
                    return False
            if isinstance(parent, cst.ExceptHandler):
                return False
            child = parent
            parent = model.parent(parent)
        return True

    def param_deps(self, node: cst.CSTNode, function: cst.FunctionDef) -> frozenset:
        """Names of `function`'s parameters whose data may flow into the value of `node`
        (through assignments, loops, calls and arithmetic; not through values the model knows
        live on the host, nor through attributes of `self`)."""
        return self._memo_deps((id(node), id(function)), self._param_deps, node, function)

    def _memo_deps(self, key: tuple, compute, node: cst.CSTNode, function: cst.FunctionDef) -> frozenset:
        found = self._deps.get(key)
        if found is not None:
            return found
        self._deps[key] = frozenset()  # a cycle adds nothing
        result = frozenset(compute(node, function))
        self._deps[key] = result
        return result

    def _param_deps(self, node: cst.CSTNode, function: cst.FunctionDef) -> set:
        model = self.model
        if isinstance(node, cst.BaseExpression) and not isinstance(node, cst.Name):
            value = model.value(node)
            if value.kind in _HOST_KINDS or value.place is Place.CPU or self._host_result(node):
                return set()
        if isinstance(node, cst.Name):
            out: set = set()
            for d in model.defs(node):
                if d.kind == "param":
                    if d.scope is function:
                        out.add(d.name)
                elif d.kind in ("assign", "annassign", "walrus", "for", "comp", "with", "augassign"):
                    if d.value is not None:
                        out |= self.param_deps(d.value, function)
                    for prior in d.prior:
                        if prior.value is not None:
                            out |= self.param_deps(prior.value, function)
            return out
        if isinstance(node, cst.Attribute):
            if isinstance(node.value, cst.Name) and self._is_self(node.value, function):
                # A buffer or parameter of the module (`register_buffer("ptr", ...)`) lives
                # where the module does: the read depends on where the object is.
                owner = model.parent(function)
                owner = model.parent(owner) if owner is not None else None
                if isinstance(owner, cst.ClassDef) and node.attr.value in registered_state(model, owner):
                    return {node.value.value}
                return set()
            if node.attr.value in METADATA:
                return set()   # `x.is_cuda`, `x.shape`: known on the host without waiting
            return self.param_deps(node.value, function)
        if isinstance(node, _NESTED):
            return set()
        out = set()
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) \
                and isinstance(node.func.value, cst.Name) and self._is_self(node.func.value, function) \
                and self._submodule(node.func):
            # `self.rnn(x)`, with `self.rnn` built as a module: a submodule moves with the
            # object, so what it computes lives where the object is (its attributes, such as
            # `self.rnn.bidirectional`, are settings, not data).
            out.add(node.func.value.value)
        for child in model.children(node):
            out |= self.param_deps(child, function)
        return out

    def _submodule(self, node: cst.Attribute) -> bool:
        """`self.rnn`: every binding of the attribute the class shows makes a module
        (`self.rnn = nn.RNN(...)`), not by its name."""
        value = self.model.value(node)
        return value.kind is Kind.MODULE and not value.hint

    def inside_deps(self, node: cst.CSTNode, function: cst.FunctionDef) -> frozenset:
        """The parameters of `function` whose contents flow into `node` from inside (see
        `SummaryRead.inside`): through iterating or indexing them, their mapping views
        (`.items()`, `.values()`), a module's tensors (`.parameters()`, `.named_parameters()`,
        `.buffers()`, `.state_dict()`) or calling a module parameter (`model(x)`)."""
        return self._memo_deps((id(node), id(function), "inside"), self._inside_deps, node, function)

    def _inside_deps(self, node: cst.CSTNode, function: cst.FunctionDef) -> set:
        model = self.model
        if isinstance(node, cst.BaseExpression) and not isinstance(node, cst.Name):
            value = model.value(node)
            if value.kind in _HOST_KINDS or value.place is Place.CPU or self._host_result(node):
                return set()
        if isinstance(node, cst.Name):
            out: set = set()
            for d in model.defs(node):
                if d.kind == "param" or d.value is None:
                    continue
                if d.kind in ("for", "comp") or (d.kind in ("assign", "annassign") and d.path):
                    # an element of what is iterated or unpacked
                    out |= self.param_deps(d.value, function) | self.inside_deps(d.value, function)
                elif d.kind in ("assign", "annassign", "walrus", "with", "augassign"):
                    out |= self.inside_deps(d.value, function)
                for prior in d.prior:
                    if prior.value is not None:
                        out |= self.inside_deps(prior.value, function)
            return out
        if isinstance(node, cst.Subscript):
            return set(self.param_deps(node.value, function) | self.inside_deps(node.value, function))
        if isinstance(node, cst.Attribute):
            if isinstance(node.value, cst.Name) and self._is_self(node.value, function) \
                    or node.attr.value in METADATA:
                return set()
            return set(self.inside_deps(node.value, function))
        if isinstance(node, _NESTED):
            return set()
        out = set()
        if isinstance(node, cst.Call):
            func = node.func
            if isinstance(func, cst.Attribute) and func.attr.value in _CONTENTS:
                out |= self.param_deps(func.value, function)
            elif isinstance(func, cst.Name) and any(d.kind == "param" and d.scope is function
                                                    for d in model.defs(func)):
                out.add(func.value)   # a module (or callable) parameter called on the data
        for child in model.children(node):
            out |= self.inside_deps(child, function)
        return out

    def _host_result(self, node: cst.CSTNode) -> bool:
        """`t.tolist()`, `t.item()`, `t.numpy()`, `t.cpu()`: what the read gave is on the host
        (the read itself is the wait; what is done with its result waits for nothing); so are
        metadata (`t.size()`, `t.dim()`: the table's host results)."""
        if not isinstance(node, cst.Call) or not isinstance(node.func, cst.Attribute):
            return False
        spec = self.api.method(node.func.attr.value)
        return spec is not None and (spec.place == "cpu" or spec.result in _HOST_RESULTS)

    def _self_name(self, function: cst.FunctionDef) -> Optional[str]:
        params = [*function.params.posonly_params, *function.params.params]
        return params[0].name.value if params and self._is_method(function) else None

    def _object_param(self, callee: cst.FunctionDef, call: cst.Call, caller: cst.FunctionDef) -> Optional[str]:
        """The callee's first parameter when `call` is `self.method(...)` on the caller's own
        object (a method calling another method of its class), else None."""
        func = call.func
        if not (isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name)
                and self._is_self(func.value, caller) and self._is_method(callee)):
            return None
        return self._self_name(callee)

    def _is_self(self, name: cst.Name, function: cst.FunctionDef) -> bool:
        if not self._is_method(function):
            return False
        params = [*function.params.posonly_params, *function.params.params]
        return bool(params) and params[0].name.value == name.value


def _joins_text(call: cst.Call) -> bool:
    """`"sep".join(...)`: str.join, whose elements must be strings."""
    func = call.func
    return isinstance(func, cst.Attribute) and func.attr.value == "join" \
        and isinstance(func.value, (cst.SimpleString, cst.ConcatenatedString)) and len(call.args) == 1


def operands(test: cst.BaseExpression) -> list[cst.BaseExpression]:
    """The parts of a condition whose truth value Python takes (`a and not b` -> a, b)."""
    if type(test) is cst.BooleanOperation:
        return operands(test.left) + operands(test.right)
    if type(test) is cst.UnaryOperation and type(test.operator) is cst.Not:
        return operands(test.expression)
    return [test]


def _callee_name(call: cst.Call) -> str:
    func = call.func
    if isinstance(func, cst.Attribute):
        return dotted_name(func) or func.attr.value
    return dotted_name(func) or "helper"


def _last_name(func: cst.BaseExpression) -> Optional[str]:
    if isinstance(func, cst.Name):
        return func.value
    if isinstance(func, cst.Attribute):
        return func.attr.value
    return None

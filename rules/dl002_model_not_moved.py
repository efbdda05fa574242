from __future__ import annotations

from typing import Optional

import libcst as cst

from devicelint.analysis import CPU, DTYPE, local_module_classes, to_call_device
from devicelint.rule import Rule
from devicelint.rules._devices import GPU, GPU_BOX, MODEL, DeviceFlow, is_model_builder
from devicelint.runtime_spec import RuntimeSpec, device_mismatch

_MOVES = {"to", "cuda", "to_empty", "xpu", "mps", "ipu"}
_KEEPS_SELF = {"eval", "train", "float", "double", "half", "bfloat16", "requires_grad_", "cpu",
               "zero_grad", "share_memory"}
_READS = {"parameters", "named_parameters", "state_dict", "load_state_dict", "modules",
          "named_modules", "children", "named_children", "buffers", "named_buffers",
          "register_forward_hook", "register_forward_pre_hook", "register_full_backward_hook",
          "forward", "generate", "extra_repr", "get_submodule", "get_parameter", "num_parameters"}
_HARMLESS_FUNCTIONS = {"print", "isinstance", "len", "type", "id", "repr", "str", "hasattr",
                       "callable", "format", "sum"}
_CALL_METHODS = {"forward", "generate"}
_CONTAINER_APPENDS = {"append", "extend", "insert", "update", "setdefault"}
class ModelNotMoved(Rule):
    """## What it does
    Flags the call of an `nn.Module` on tensors that are on the device when the module itself
    was never moved there: built on the CPU (`nn.Linear(...)`, a local `nn.Module` subclass, a
    `torchvision.models` builder, a transformers `...Model.from_pretrained(...)` without
    `device_map=`) and called on inputs created with `device=` or moved with `.to(device)` /
    `.cuda()` in the same function, with no `.to(...)` / `.cuda()` of the module in between.

    Also flags submodules kept in a plain Python `list`, `tuple` or `dict` attribute of an
    `nn.Module` subclass (`self.blocks = [nn.Linear(8, 8) for _ in range(4)]`): they are not
    registered, so `model.to(device)`, `model.parameters()` and `model.state_dict()` all skip
    them. Lists of parameter-free layers (activations, dropout, pooling) are not flagged.

    Silent when the module is moved anywhere before the call (`model.to(device)` as a
    statement moves it in place; `.cuda()`; chained at construction; `.eval().to(device)`),
    built with `device=` / `device_map=` or under `with torch.device(...)`, handed to code
    that may move it (a helper, `accelerator.prepare`, `DDP(...)`), or when the inputs are
    not known to be on a GPU. Modules stored in attributes or received as parameters are not
    followed.

    ## Why is this bad?
    A module's parameters stay where they were created. Calling a CPU module on CUDA inputs
    raises `RuntimeError: Expected all tensors to be on the same device, but got mat1 is on
    cuda:0, different from other tensors on cpu (when checking argument in method
    wrapper_CUDA_addmm)` (measured on an H200, torch 2.11; seed tutorial 003 section 8.2). The
    script works on a CPU-only machine and fails on the first GPU one. A plain-list submodule
    fails the same way after `model.to(device)`, and is silently left out of the optimizer
    and of checkpoints.

    ## Example
    ```python
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = Net()
    for x, y in loader:
        x, y = x.to(device), y.to(device)
        loss = loss_fn(model(x), y)  # crashes on a GPU: model is on the CPU
    ```

    ## Use instead
    ```python
    model = Net().to(device)
    ```
    and `nn.ModuleList([...])` / `nn.ModuleDict({...})` for submodules held in containers.
    """

    code = "DL002"
    name = "model-not-moved"
    summary = "an nn.Module is called on device tensors but was never moved to the device"
    message = (
        "module called on tensors that are on the device but never moved there: this raises "
        "\"Expected all tensors to be on the same device\" on a GPU; call `.to(device)` on it"
    )
    tokens = ("cuda", "device", "Module")

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self._names: dict[str, list[cst.Name]] = {}
        self._calls: list[tuple[cst.Call, cst.Name]] = []
        self._globals: set[str] = set()
        # (class, attribute) -> assignments, container calls; classes that register by hand
        self._attr_assigns: list[tuple[cst.ClassDef, str, cst.CSTNode, cst.BaseExpression]] = []
        self._attr_fills: dict[tuple[int, str], list[cst.BaseExpression]] = {}
        self._registers: set[int] = set()

    # -- collection during the traversal ---------------------------------------------
    def visit_Name(self, node: cst.Name) -> None:
        self._names.setdefault(node.value, []).append(node)

    def visit_Global(self, node: cst.Global) -> None:
        self._globals.update(item.name.value for item in node.names)

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if isinstance(func, cst.Name):
            self._calls.append((node, func))
            if func.value == "setattr":
                self._mark_register(node)
        elif isinstance(func, cst.Attribute):
            attr = func.attr.value
            if attr in _CALL_METHODS and isinstance(func.value, cst.Name):
                self._calls.append((node, func.value))
            elif attr in ("add_module", "register_module"):
                self._mark_register(node)
            elif attr in _CONTAINER_APPENDS:
                key = self._self_attribute(func.value, node)
                if key is not None:
                    self._attr_fills.setdefault((id(key[0]), key[1]), []).extend(
                        a.value for a in node.args
                    )

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            self._attribute_assign(node, target.target, node.value)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if node.value is not None:
            self._attribute_assign(node, node.target, node.value)

    def _mark_register(self, node: cst.Call) -> None:
        cls = self._enclosing_class(node)
        if cls is not None:
            self._registers.add(id(cls))

    def _enclosing_class(self, node: cst.CSTNode) -> Optional[cst.ClassDef]:
        for ancestor in self.ctx.ancestors(node):
            if isinstance(ancestor, cst.ClassDef):
                return ancestor
        return None

    def _self_attribute(
        self, node: cst.CSTNode, anchor: cst.CSTNode
    ) -> Optional[tuple[cst.ClassDef, str]]:
        """(class, attr) for `self.attr` inside a method of a class, else None. `anchor` is
        the statement or call holding it (already visited, so its ancestors are known)."""
        if not (isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name)):
            return None
        function = self.ctx.function(anchor)
        if function is None or not function.params.params:
            return None
        if function.params.params[0].name.value != node.value.value:
            return None
        cls = self.ctx.scope(function)
        if not isinstance(cls, cst.ClassDef):
            return None
        return cls, node.attr.value

    def _attribute_assign(self, node, target, value) -> None:
        if isinstance(target, cst.Subscript):
            key = self._self_attribute(target.value, node)
            if key is not None:
                self._attr_fills.setdefault((id(key[0]), key[1]), []).append(value)
            return
        key = self._self_attribute(target, node)
        if key is not None:
            self._attr_assigns.append((key[0], key[1], node, value))

    # -- analysis --------------------------------------------------------------------
    def leave_Module(self, node: cst.Module) -> None:
        self._check_containers()
        if not self._calls:
            return
        flow: Optional[DeviceFlow] = None
        for call, name in self._calls:
            if name.value not in self._names or len(self._names[name.value]) < 2:
                continue
            if not any(True for _ in call.args):
                continue
            if flow is None:
                flow = DeviceFlow(self.ctx)
                flow.global_names = self._globals
            if flow.value(name) != MODEL:
                continue
            if not any(flow.value(arg.value) in (GPU, GPU_BOX) for arg in call.args):
                continue
            if self._moved_or_escaped(flow, call, name):
                continue
            self.report(
                call,
                f"`{name.value}` is called on tensors that are on the device but was built on "
                "the CPU and never moved: this raises \"Expected all tensors to be on the same "
                f"device\" on a GPU; use `{name.value} = {name.value}.to(device)` before calling it",
            )

    def _moved_or_escaped(self, flow: DeviceFlow, call: cst.Call, name: cst.Name) -> bool:
        ctx = self.ctx
        scope = ctx.scope(name)
        owner = self._owner(name)
        order = ctx.order(call)
        loops = [a for a in flow.ancestors_in_scope(call) if isinstance(a, (cst.For, cst.While))]
        for use in self._names[name.value]:
            if use is name:
                continue
            kind = self._use_kind(use)
            if kind not in ("move", "escape"):
                continue
            if ctx.scope(use) is not scope:
                if self._owner(use) is owner:
                    return True  # a helper or another scope may move it before the call
                continue  # a different variable of the same name
            if ctx.order(use) < order:
                return True
            if loops:
                use_ancestors = {id(a) for a in flow.ancestors_in_scope(use)}
                if any(id(loop) in use_ancestors for loop in loops):
                    return True
        return False

    def _owner(self, use: cst.Name) -> cst.CSTNode:
        """The scope whose variable `use` names: the nearest scope binding it, else the
        module (and the module for names declared `global`)."""
        ctx = self.ctx
        if use.value in self._globals:
            return ctx.module
        scope = ctx.scope(use)
        while scope is not ctx.module:
            if ctx.bindings(scope).get(use.value):
                return scope
            scope = ctx.scope(scope)
        return scope

    def _use_kind(self, use: cst.Name) -> str:
        """How a name is used: call, move, read, bind, or escape (may be moved elsewhere)."""
        ctx = self.ctx
        parent = ctx.parent(use)
        if isinstance(parent, cst.Call) and parent.func is use:
            return "call"
        if isinstance(parent, cst.AssignTarget) or isinstance(parent, (cst.For, cst.CompFor)):
            return "bind"
        if isinstance(parent, cst.Arg):
            call = ctx.parent(parent)
            if isinstance(call, cst.Call) and isinstance(call.func, cst.Name) and (
                call.func.value in _HARMLESS_FUNCTIONS
            ):
                return "read"
            return "escape"
        if isinstance(parent, cst.Attribute) and parent.value is use:
            current: cst.CSTNode = parent
            while True:
                holder = ctx.parent(current)
                if not isinstance(current, cst.Attribute):
                    return "read"
                if isinstance(holder, cst.Call) and holder.func is current:
                    method = current.attr.value
                    if method in _MOVES:
                        kind = to_call_device(ctx, holder) if method == "to" else None
                        if kind not in (DTYPE, CPU):
                            return "move"
                    elif method in _READS:
                        return "read"
                    elif method not in _KEEPS_SELF:
                        return "escape"
                    after = ctx.parent(holder)
                    if isinstance(after, cst.Attribute) and after.value is holder:
                        current = after
                        continue
                    return "read"
                if isinstance(holder, cst.AssignTarget) or (
                    isinstance(holder, (cst.AugAssign, cst.AnnAssign)) and holder.target is current
                ):
                    return "escape"  # `model.fc = ...`: changes the module
                if isinstance(holder, cst.Attribute) and holder.value is current:
                    current = holder  # `model.fc.to(device)`: keep looking
                    continue
                if isinstance(holder, cst.Call) and holder.func is not current:
                    return "escape"  # `helper(model.fc)`
                return "read"
        if isinstance(parent, (cst.Return, cst.Comparison, cst.If, cst.Assert)):
            return "read"
        return "escape"

    def _check_containers(self) -> None:
        if not self._attr_assigns:
            return
        modules = local_module_classes(self.ctx)
        by_key: dict[tuple[int, str], list] = {}
        for cls, attr, node, value in self._attr_assigns:
            by_key.setdefault((id(cls), attr), []).append((cls, node, value))
        for (cls_id, attr), assigns in by_key.items():
            cls = assigns[0][0]
            if cls.name.value not in modules or cls_id in self._registers:
                continue
            if any(_plain_container(v) is None for _, _, v in assigns):
                continue  # also assigned an nn.ModuleList(...) or something else
            for _, node, value in assigns:
                elements = _plain_container(value)
                if not elements:
                    elements = self._attr_fills.get((cls_id, attr), [])
                if any(self._stateful_module(e) for e in elements):
                    kind = "dict" if isinstance(value, (cst.Dict, cst.DictComp)) else "list"
                    holder = "ModuleDict" if kind == "dict" else "ModuleList"
                    self.report(
                        node,
                        f"submodules kept in a plain {kind} `self.{attr}` are not registered: "
                        "`model.to(device)` leaves them on the CPU (a device mismatch on a "
                        "GPU) and `parameters()`/`state_dict()` miss them; use "
                        f"`nn.{holder}`",
                    )
                    break

    def _stateful_module(self, node: cst.CSTNode) -> bool:
        while isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and (
            isinstance(node.func.value, cst.Call)
        ):
            node = node.func.value  # `nn.Linear(4, 4).to(device)`
        if isinstance(node, (cst.List, cst.Tuple)):
            return any(self._stateful_module(e.value) for e in node.elements)
        if isinstance(node, cst.Dict):
            return any(
                self._stateful_module(e.value) for e in node.elements
                if isinstance(e, cst.DictElement)
            )
        return isinstance(node, cst.Call) and is_model_builder(self.ctx, node)

    # -- devicelint confirm: the mismatch error PyTorch raises at the line ---------------
    runtime = RuntimeSpec(probe=device_mismatch, whole_file=True)


def _plain_container(value: cst.CSTNode) -> Optional[list[cst.CSTNode]]:
    """The element expressions of a list/tuple/dict display or comprehension; None when the
    value is not a plain container."""
    if isinstance(value, (cst.List, cst.Tuple, cst.Set)):
        return [e.value for e in value.elements]
    if isinstance(value, cst.Dict):
        return [e.value for e in value.elements if isinstance(e, cst.DictElement)]
    if isinstance(value, (cst.ListComp, cst.SetComp)):
        return [value.elt]
    if isinstance(value, cst.DictComp):
        return [value.value]
    if isinstance(value, cst.BinaryOperation) and isinstance(value.left, cst.List):
        return [e.value for e in value.left.elements]
    return None

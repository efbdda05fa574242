from __future__ import annotations

from typing import Optional

import libcst as cst

from devicelint.rule import Rule
from devicelint.runtime_spec import Find, RuntimeSpec, device_mismatch
from devicelint.semantic import Kind, Place, Value
from devicelint.semantic.modules import (
    attribute_assignments, handed_off, holds_state, read_after_construction, self_class)

_FILLS = ("append", "extend", "insert")
_REGISTERS = ("add_module", "register_module")


class ModelNotMoved(Rule):
    """## What it does
    Flags the call of an `nn.Module` that holds parameters or buffers on data that is on the
    device while the module itself is still on the CPU: built without `device=` (an
    `nn.Linear(...)`, a class of the file that subclasses `nn.Module` and creates
    parameters or stateful submodules, a `torchvision.models` builder) and never moved with
    `.to(device)` / `.cuda()` on the way to the call.

    The facts come from the semantic model, whatever the variables are called: the module
    may be built in another function and returned, kept in `self.x`, or passed as a
    parameter that every call site in the file gives the same unmoved module; the data is
    on the device when it was created with `device=` or moved there, also through a list or
    dict of such tensors, `torch.stack`/`torch.cat`, or another module's output on the
    device.

    Also flags submodules kept in a plain Python `list`, `tuple` or `dict` attribute of an
    `nn.Module` subclass (`self.blocks = [nn.Linear(8, 8) for _ in range(4)]`): they are not
    registered, so `model.to(device)`, `model.parameters()` and `model.state_dict()` all skip
    them. Lists of parameter-free layers (activations, dropout, pooling) are not flagged,
    nor a container read only while the instance is built (`__init__` and the methods only
    it calls): a dict of candidate backbones that `__init__` picks one from into a
    registered attribute is not what `forward` uses.

    Silent when the module is moved on any path the code shows (as a statement
    `model.to(device)`, by rebinding `model = model.cuda()`, inside a helper that returns
    it, under `with torch.device(...)`), moved or handed to code the linter does not follow
    (a function of another file, `accelerator.prepare`) anywhere that may run before the
    call, when the call runs only without a GPU (`if not use_cuda:`), and whenever the
    module's class, its state or the data's device is unknown. A device that is one only
    by its variable's name (`def f(x, device)` never called in the file) is said so in the
    message.

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

    ## Fix safety
    No automatic fix: where the move belongs (after loading weights, before building the
    optimizer) is the author's choice.
    """

    code = "DL002"
    name = "model-not-moved"
    summary = "an nn.Module is called on device tensors but was never moved to the device"
    message = "module called on device tensors but never moved to the device"
    hint = "move it before calling it: `model = model.to(device)`"
    tokens = ("cuda", "device", "Module")

    @staticmethod
    def gate(facts) -> bool:
        """A module called on device data needs something that puts a value on the device
        (`device_placing`); a plain container of submodules needs `x.attr = [...]` (or a
        dict, a comprehension) in a class (devicelint/gate.py)."""
        return facts.device_placing() or facts.module_class_with(container=True)

    # devicelint confirm: the mismatch error PyTorch raises at the line
    runtime = RuntimeSpec(probe=device_mismatch, whole_file=True, finds=(Find.CPU_MODULE,))

    def leave_Call(self, node: cst.Call) -> None:
        if not node.args:
            return  # nothing to be on the device
        sem = self.ctx.semantic
        if all(sem.never_holds_tensor(arg.value) for arg in node.args):
            # Only numbers, strings, flags (`x.view(-1)`, `nn.Dropout(0.1)`): no argument
            # can be device data (`_on_device`), so the callee's value is not needed.
            return
        func = node.func
        module = sem.value(func)
        if module.kind is not Kind.MODULE and type(func) is cst.Attribute \
                and func.attr.value == "forward":
            module = sem.value(func.value)  # `model.forward(x)`
        if module.kind is not Kind.MODULE or module.place is not Place.CPU or module.hint:
            return
        inputs = [sem.value(arg.value) for arg in node.args]
        device_inputs = [v for v in inputs if _on_device(v)]
        if not device_inputs:
            return
        if not holds_state(sem, module):
            return
        if not sem.on_gpu_path(node) or handed_off(sem, module, node):
            return
        called = " ".join(self.ctx.code(func).split())
        where = ""
        if isinstance(module.node, cst.CSTNode):
            where = f" ({self.ctx.line_ref(module.node)})"
        hint = ""
        if all(_rests_on_name(v) for v in device_inputs):
            hint = " (its input is taken to be on the device only from a variable's name)"
        self.report(
            node,
            f"`{called}` is called on device data but was built on the CPU{where} and never "
            f"moved{hint}",
        )

    # -- submodules in plain containers ------------------------------------------------
    def leave_Module(self, node: cst.Module) -> None:
        sem = self.ctx.semantic
        owners = sem.module_classes().values()
        holders = _plain_container_holders(self.ctx) if owners else set()
        for owner in owners:
            if id(owner) not in holders:
                continue  # the common case: nothing to look at, no flows to build
            registers: Optional[bool] = None
            for attr, entries in attribute_assignments(sem, owner).items():
                values = [d.value for _target, d in entries]
                if not values or any(v is None or _plain_elements(v, attr) is None for v in values):
                    continue  # also assigned something else, e.g. an nn.ModuleList(...)
                if not read_after_construction(sem, owner, attr):
                    continue  # a lookup table of __init__: what it keeps is registered
                fills = None
                for _target, d in entries:
                    elements = _plain_elements(d.value, attr)
                    if not elements:
                        if fills is None:
                            fills = _filled(sem, owner, attr)
                        elements = fills
                    if any(_stateful_module(sem, e) for e in elements):
                        if registers is None:
                            registers = _registers_by_hand(sem, owner)
                        if registers:
                            break
                        kind = "dict" if isinstance(d.value, (cst.Dict, cst.DictComp)) else "list"
                        holder = "ModuleDict" if kind == "dict" else "ModuleList"
                        self.report(
                            d.node,
                            f"submodules in a plain {kind} `self.{attr}` are not registered; "
                            f"use `nn.{holder}`",
                        )
                        break


def _on_device(value: Value) -> bool:
    """A tensor on the device, or a list, tuple or dict holding one (a batch)."""
    if value.kind is Kind.TENSOR:
        return value.place is Place.DEVICE
    if value.kind in (Kind.SEQUENCE, Kind.MAPPING):
        parts = list(value.items or ()) + ([value.element] if value.element is not None else [])
        return any(p.kind is Kind.TENSOR and p.place is Place.DEVICE for p in parts)
    return False


def _rests_on_name(value: Value) -> bool:
    if value.kind is Kind.TENSOR:
        return value.hint
    parts = list(value.items or ()) + ([value.element] if value.element is not None else [])
    return all(p.hint for p in parts if p.kind is Kind.TENSOR and p.place is Place.DEVICE)


def _stateful_module(sem, node: cst.CSTNode) -> bool:
    if isinstance(node, (cst.List, cst.Tuple)):
        return any(_stateful_module(sem, e.value) for e in node.elements)
    if isinstance(node, cst.Dict):
        return any(_stateful_module(sem, e.value) for e in node.elements
                   if isinstance(e, cst.DictElement))
    value = sem.value(node)
    return value.kind is Kind.MODULE and bool(holds_state(sem, value))


def _plain_elements(value: cst.CSTNode, attr: str) -> Optional[list[cst.CSTNode]]:
    """The element expressions of a list/tuple/dict display or comprehension, or of what
    `self.attr + [...]` adds; None when the value is not a plain container."""
    if type(value) in (cst.List, cst.Tuple, cst.Set):
        return [e.value for e in value.elements]
    if type(value) is cst.Dict:
        return [e.value for e in value.elements if type(e) is cst.DictElement]
    if type(value) in (cst.ListComp, cst.SetComp):
        return [value.elt]
    if type(value) is cst.DictComp:
        return [value.value]
    if type(value) is cst.BinaryOperation and type(value.operator) in (cst.Add, cst.Multiply):
        left = value.left
        if type(left) is cst.Attribute and left.attr.value == attr:
            return _plain_elements(value.right, attr)  # `self.layers = self.layers + [...]`
        return _plain_elements(left, attr)
    return None


def _plain_container_holders(ctx) -> set[int]:
    """The classes (by id) with some `x.attr = <list/tuple/dict display or comprehension>`
    anywhere in their body, found from the file's assignments (one look at each, not a walk
    of every class)."""
    found: set[int] = set()
    for kind in (cst.Assign, cst.AnnAssign):
        for node in ctx.iter_nodes(kind):
            if node.value is None:
                continue
            targets = [t.target for t in node.targets] if kind is cst.Assign else [node.target]
            if not any(type(t) is cst.Attribute and _plain_elements(node.value, t.attr.value) is not None
                       for t in targets):
                continue
            parent = ctx.parent(node)
            while parent is not None:
                if type(parent) is cst.ClassDef:
                    found.add(id(parent))
                parent = ctx.parent(parent)
    return found


def _filled(sem, owner: cst.ClassDef, attr: str) -> list[cst.CSTNode]:
    """What the class's methods append, extend, insert or store into `self.attr`."""
    found: list[cst.CSTNode] = []
    # The calls and assignments of the class body (slices of the file's index), in the
    # order of the walk the rule was written with (last child first).
    for node in sem.ctx.descendants(owner.body, (cst.Call, cst.Assign), last_first=True):
        if type(node) is cst.Call:  # exact types: isinstance() on libcst's ABCs is slow
            if type(node.func) is cst.Attribute and node.func.attr.value in _FILLS \
                    and _is_self_attr(sem, node.func.value, attr):
                found.extend(a.value for a in node.args)
        else:
            for target in node.targets:
                if type(target.target) is cst.Subscript \
                        and _is_self_attr(sem, target.target.value, attr):
                    found.append(node.value)
    return found


def _is_self_attr(sem, node: cst.CSTNode, attr: str) -> bool:
    return isinstance(node, cst.Attribute) and node.attr.value == attr \
        and self_class(sem, node.value) is not None


def _registers_by_hand(sem, owner: cst.ClassDef) -> bool:
    """The class registers submodules itself (`add_module`, `setattr(self, ...)`)."""
    for node in sem.ctx.descendants(owner.body, cst.Call):
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value in _REGISTERS:
            return True
        if isinstance(func, cst.Name) and func.value == "setattr":
            return True
    return False

from __future__ import annotations

from typing import Optional

import libcst as cst

from devicelint.analysis import (
    CUDA, call_arg, device_kind, is_tensor_factory, keyword_arg, string_value,
)
from devicelint.rule import Rule
from devicelint.runtime_spec import LineRecord, ProbeContext, RuntimeSpec, Watch

VARIABLE = "CUDA_VISIBLE_DEVICES"
# torch.cuda calls that initialise the CUDA driver (cuInit) or create the context. Measured
# on 2x H200 (torch 2.11.0+cu130): after each of these, setting CUDA_VISIBLE_DEVICES had no
# effect. `torch.cuda.device_count()` (NVML-based) and `torch.cuda.manual_seed()` (lazy)
# did not initialise: setting the variable after them still worked.
INITIALISING = {
    f"torch.cuda.{name}"
    for name in (
        "is_available", "init", "current_device", "set_device", "get_device_name",
        "get_device_properties", "get_device_capability", "synchronize", "mem_get_info",
        "is_bf16_supported", "current_stream", "default_stream", "Stream",
    )
}


class LateVisibleDevices(Rule):
    """## What it does
    Flags setting `CUDA_VISIBLE_DEVICES` in the process environment
    (`os.environ["CUDA_VISIBLE_DEVICES"] = ...`, `os.environ.setdefault(...)`,
    `os.environ.update(...)`, `os.putenv(...)`) after code earlier in the same module or
    function (same scope, source order, top to bottom) has already initialised CUDA:
    `torch.cuda.is_available()`, `current_device()`, `set_device()`, `get_device_name()`,
    `get_device_properties()`, `synchronize()`, `torch.cuda.init()`, `.cuda()`, a
    `.to("cuda")` or a factory with a literal CUDA `device=`.

    Not counted as initialising: `torch.cuda.device_count()` (it asks NVML and, before
    initialisation, re-reads the variable), `torch.cuda.manual_seed()` (queued until
    initialisation), `torch.device("cuda")` (just a description), `import torch`.
    Silent when the variable is set before any CUDA use, and in launchers that pass it to
    child processes (`env = dict(os.environ, CUDA_VISIBLE_DEVICES=...)`,
    `subprocess.run(..., env=env)`): those do not touch this process's environment.

    ## Why is this bad?
    The CUDA driver reads `CUDA_VISIBLE_DEVICES` once, when it initialises. In torch 2.13
    `torch.cuda.is_available()` calls `cudaGetDeviceCount`, which runs `cuInit` (its source
    says so; only `PYTORCH_NVML_BASED_CUDA_CHECK=1` avoids it). Measured on 2x H200 (torch
    2.11.0+cu130, this project's device machine): after `is_available()`,
    `get_device_name(0)`, `current_device()`, `get_device_properties(0)` or
    `torch.cuda.init()`, setting the variable to `"1"` left the process on physical GPU 0,
    while after `device_count()` or `manual_seed()` (or nothing) it moved to GPU 1. Worse,
    after `is_available()` `device_count()` reported 1 device (NVML re-reads the variable)
    while tensors still went to physical GPU 0: the restriction silently does not hold.
    The common `device = torch.device("cuda" if torch.cuda.is_available() else "cpu")`
    line therefore must come after the variable is set.

    ## Example
    ```python
    import os, torch
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    os.environ["CUDA_VISIBLE_DEVICES"] = "1"
    ```

    ## Use instead
    ```python
    import os
    os.environ["CUDA_VISIBLE_DEVICES"] = "1"  # first, before anything touches CUDA
    import torch
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    ```
    or set it outside the program: `CUDA_VISIBLE_DEVICES=1 python train.py`.
    """

    code = "DL013"
    name = "late-visible-devices"
    summary = "`CUDA_VISIBLE_DEVICES` set after CUDA was initialised has no effect"
    message = (
        "`CUDA_VISIBLE_DEVICES` is set after CUDA was already initialised above "
        "(by {init}): the driver has read the variable, so this has no effect on this "
        "process; set it before any CUDA call (or in the launching shell)"
    )
    tokens = (VARIABLE,)

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self.inits: dict[int, list[cst.Call]] = {}
        self.sets: list[cst.CSTNode] = []

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            if isinstance(target.target, cst.Subscript) and self._is_environ(target.target.value):
                elements = target.target.slice
                if len(elements) == 1 and isinstance(elements[0].slice, cst.Index):
                    if string_value(elements[0].slice.value) == VARIABLE:
                        self.sets.append(node)

    def visit_Call(self, node: cst.Call) -> None:
        name = self.ctx.qualname(node.func)
        if name in ("os.environ.setdefault", "os.putenv", "os.environ.__setitem__"):
            first = call_arg(node, 0, "key")
            if first is not None and string_value(first) == VARIABLE:
                self.sets.append(node)
            return
        if name == "os.environ.update":
            if _update_sets(node):
                self.sets.append(node)
            return
        if self._initialises(node, name):
            scope = self.ctx.scope(node)
            self.inits.setdefault(id(scope), []).append(node)

    def leave_Module(self, node: cst.Module) -> None:
        for setter in self.sets:
            scope = self.ctx.scope(setter)
            at = self.ctx.order(setter)
            earlier = [c for c in self.inits.get(id(scope), ()) if self.ctx.order(c) < at]
            if earlier:
                first = earlier[0]
                line = self.ctx.position(first)[0]
                code = self.ctx.code(first)
                if len(code) > 40:
                    code = code[:37] + "..."
                self.report(setter, self.message.format(init=f"`{code}` on line {line}"))

    def _is_environ(self, node: cst.BaseExpression) -> bool:
        return self.ctx.qualname(node) == "os.environ"

    def _initialises(self, node: cst.Call, name: Optional[str]) -> bool:
        if name in INITIALISING:
            return True
        func = node.func
        if isinstance(func, cst.Attribute) and name is None:
            if func.attr.value == "cuda":
                return True
            if func.attr.value == "to":
                target = call_arg(node, 0, "device")
                return target is not None and _literal_cuda(self.ctx, target)
        if is_tensor_factory(self.ctx, node):
            device = keyword_arg(node, "device")
            return device is not None and _literal_cuda(self.ctx, device)
        return False

    # -- devicelint confirm ------------------------------------------------------------
    @staticmethod
    def probe(ctx: ProbeContext, rec: LineRecord) -> dict:
        state = rec.cuda_state
        if state is not None and state.initialized:
            return ctx.base("confirmed", "CUDA was already initialised when "
                            "CUDA_VISIBLE_DEVICES was set: the setting had no effect")
        if state is not None and state.driver_queried:
            # cudaGetDeviceCount (behind is_available/device_count) initialises the driver,
            # which reads CUDA_VISIBLE_DEVICES once; PYTORCH_NVML_BASED_CUDA_CHECK=1 avoids it.
            return ctx.base("confirmed", "torch.cuda.is_available()/device_count() had already "
                            "initialised the CUDA driver when CUDA_VISIBLE_DEVICES was set: the "
                            "driver read the variable then, so the setting had no effect")
        # torch had no CUDA context yet, but torch.cuda.is_available()/device_count() call
        # cudaGetDeviceCount, which already reads the variable: this cannot be refuted here.
        return ctx.base("inconclusive", "torch had not created a CUDA context yet; an earlier "
                        "is_available()/device_count() may still have fixed the visible devices")

    runtime = RuntimeSpec(probe=probe, watch=(Watch.DRIVER_QUERIES, Watch.CUDA_STATE))


def _literal_cuda(ctx, node: cst.BaseExpression) -> bool:
    """A target that is CUDA whatever happens: "cuda", "cuda:1", torch.device("cuda")."""
    if isinstance(node, (cst.SimpleString, cst.Integer)):
        return device_kind(ctx, node) == CUDA
    if isinstance(node, cst.Call) and ctx.qualname(node.func) == "torch.device":
        first = call_arg(node, 0, "type")
        return first is not None and string_value(first) is not None and device_kind(ctx, first) == CUDA
    return False


def _update_sets(call: cst.Call) -> bool:
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == VARIABLE:
            return True
        if arg.keyword is None and isinstance(arg.value, cst.Dict):
            for element in arg.value.elements:
                if isinstance(element, cst.DictElement) and string_value(element.key) == VARIABLE:
                    return True
    return False

from __future__ import annotations

from typing import Optional

import libcst as cst

from devicelint.rule import Rule
from devicelint.runtime_spec import LineRecord, ProbeRun, RuntimeSpec, Watch
from devicelint.semantic.model import call_arg, keyword_arg, string_value

VARIABLE = "CUDA_VISIBLE_DEVICES"
SETTERS = ("os.environ.setdefault", "os.putenv", "os.environ.__setitem__")
MAX_CALL_DEPTH = 4  # how many calls deep a helper of the file is followed


class LateVisibleDevices(Rule):
    """## What it does
    Flags setting `CUDA_VISIBLE_DEVICES` in the process environment
    (`os.environ["CUDA_VISIBLE_DEVICES"] = ...`, `os.environ.setdefault(...)`,
    `os.environ.update(...)`, `os.putenv(...)`, also through `from os import environ` or
    `env = os.environ`) when code that runs before it has already initialised CUDA:
    `torch.cuda.is_available()`, `current_device()`, `set_device()`, `get_device_name()`,
    `get_device_properties()`, `synchronize()`, `torch.cuda.init()` (the `[cuda]` table of
    the semantic model's torch_api.toml), `.cuda()`, a `.to(...)` or a `device=` whose
    target is CUDA (`"cuda"`, `"cuda:1"`, `0`, `torch.device("cuda")`, or a variable bound
    only to those), or a call of one of the file's own functions that does any of these.

    What runs before the line is decided by execution order, not by names:
    - earlier statements of the same function or module, and, inside a loop, the rest of the
      loop body (it runs before the next iteration's setting);
    - earlier calls of the file's own functions that initialise CUDA (followed a few calls
      deep: `setup(); os.environ[...] = ...` where `setup()` calls `is_available()`);
    - for a setting inside a function, what runs before each call of that function in the
      file: module-level code above `if __name__ == "__main__": main()` runs at import, so
      `device = torch.device("cuda" if torch.cuda.is_available() else "cpu")` at the top of
      a script makes a `CUDA_VISIBLE_DEVICES` set in `main()` too late.
    A function defined but not called before the setting does not count.

    Not counted as initialising: `torch.cuda.device_count()` (it asks NVML and, before
    initialisation, re-reads the variable), `torch.cuda.manual_seed()` (queued until
    initialisation), `torch.device("cuda")` (just a description), `import torch`.
    Silent when the variable is set before any CUDA use, and in launchers that pass it to
    child processes (`env = dict(os.environ, CUDA_VISIBLE_DEVICES=...)`,
    `env = os.environ.copy()`, `subprocess.run(..., env=env)`): those do not touch this
    process's environment. Other modules are not followed: an imported module that
    initialises CUDA when imported is not seen.

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
    There is no automatic fix: moving the line may change what the code above it does.
    """

    code = "DL013"
    name = "late-visible-devices"
    summary = "`CUDA_VISIBLE_DEVICES` set after CUDA was initialised has no effect"
    message = "`CUDA_VISIBLE_DEVICES` set after CUDA was initialised (by {init}) has no effect"
    hint = "set it before any CUDA call, or in the launching shell"
    tokens = (VARIABLE,)

    @staticmethod
    def gate(facts) -> bool:
        """The variable's name as a string of the code or as a keyword (devicelint/gate.py)."""
        return VARIABLE in facts.strings or VARIABLE in facts.keywords

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self.sets: list[cst.CSTNode] = []
        self._initialising_functions: dict[int, Optional[str]] = {}
        self._calls: Optional[list[cst.Call]] = None

    # -- where the variable is set --------------------------------------------------------
    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            if isinstance(target.target, cst.Subscript) and self._is_environ(target.target.value):
                elements = target.target.slice
                if len(elements) == 1 and isinstance(elements[0].slice, cst.Index):
                    if string_value(elements[0].slice.value) == VARIABLE:
                        self.sets.append(node)

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if not isinstance(func, cst.Attribute) or func.attr.value not in (
                "setdefault", "putenv", "__setitem__", "update"):
            return
        name = self.ctx.semantic.resolved_qualname(func)
        if name in SETTERS:
            first = call_arg(node, 0, "key")
            if first is not None and string_value(first) == VARIABLE:
                self.sets.append(node)
        elif name == "os.environ.update" and _update_sets(node):
            self.sets.append(node)

    def _is_environ(self, node: cst.BaseExpression) -> bool:
        return self.ctx.semantic.resolved_qualname(node) == "os.environ"

    def leave_Module(self, node: cst.Module) -> None:
        for setter in self.sets:
            init = self._initialised_before(setter, frozenset())
            if init is not None:
                self.report(setter, self.message.format(init=init))

    # -- what runs before a line ----------------------------------------------------------
    def _initialised_before(self, node: cst.CSTNode, callers_seen: frozenset) -> Optional[str]:
        """How CUDA was initialised by code that runs before `node`, or None."""
        scope = self.ctx.scope(node)
        at = self.ctx.order(node)
        loops = [loop for loop in self.ctx.loops(node) if self.ctx.scope(loop) is scope]
        for call in self._calls_in(scope):
            if call is node:
                continue
            if self.ctx.order(call) < at or any(self._within(call, loop) for loop in loops):
                found = self._initialises(call, 0)
                if found is not None:
                    return found
        if isinstance(scope, cst.FunctionDef) and id(scope) not in callers_seen:
            seen = callers_seen | {id(scope)}
            for site in self._call_sites(scope):
                found = self._initialised_before(site, seen)
                if found is not None:
                    return f"{found}, before `{scope.name.value}()` is called on {self.ctx.line_ref(site)}"
        return None

    def _calls_in(self, scope: cst.CSTNode) -> list[cst.Call]:
        if self._calls is None:
            self._calls = list(self.ctx.iter_nodes(cst.Call))
        return [call for call in self._calls if self.ctx.scope(call) is scope]

    def _within(self, node: cst.CSTNode, container: cst.CSTNode) -> bool:
        return any(ancestor is container for ancestor in self.ctx.ancestors(node))

    def _call_sites(self, function: cst.FunctionDef) -> list[cst.Call]:
        sem = self.ctx.semantic
        sites = []
        for call in sem.calls_by_name().get(function.name.value, ()):
            resolved = sem.syncs.callee(call)
            if resolved is not None and resolved[0] is function:
                sites.append(call)
        return sites

    def _initialises(self, call: cst.Call, depth: int) -> Optional[str]:
        """How this call initialises CUDA (for the message), or None."""
        sem = self.ctx.semantic
        func = call.func
        name = sem.resolved_qualname(func)
        if name in sem.api.cuda_initialising:
            return self._where(call)
        if name is None and isinstance(func, cst.Attribute):
            if func.attr.value == "cuda":
                return self._where(call)  # a tensor's or module's .cuda()
            if func.attr.value == "to" and self._cuda_target(call_arg(call, 0, "device")):
                return self._where(call)
        if name is not None and name.startswith("torch.") and self._cuda_target(keyword_arg(call, "device")):
            return self._where(call)
        if name is None and depth < MAX_CALL_DEPTH:
            resolved = sem.syncs.callee(call)
            if resolved is not None:
                inner = self._function_initialises(resolved[0], depth + 1)
                if inner is not None:
                    return f"{self._where(call)}, which runs {inner}"
        return None

    def _function_initialises(self, function: cst.FunctionDef, depth: int) -> Optional[str]:
        key = id(function)
        if key not in self._initialising_functions:
            self._initialising_functions[key] = None  # a recursive call adds nothing
            found = None
            for call in self._calls_in(function):
                found = self._initialises(call, depth)
                if found is not None:
                    break
            self._initialising_functions[key] = found
        return self._initialising_functions[key]

    def _where(self, call: cst.Call) -> str:
        code = self.ctx.code(call)
        if len(code) > 40:
            code = code[:37] + "..."
        return f"`{code}` on {self.ctx.line_ref(call)}"

    def _cuda_target(self, node: Optional[cst.BaseExpression], depth: int = 0) -> bool:
        """A device that is CUDA whatever happens: "cuda", "cuda:1", an index,
        torch.device("cuda"), or a name bound only to those."""
        if node is None or depth > 3:
            return False
        text = string_value(node)
        if text is not None:
            return text.split(":", 1)[0].strip().lower() == "cuda"
        if isinstance(node, cst.Integer):
            return True
        sem = self.ctx.semantic
        if isinstance(node, cst.Call) and sem.resolved_qualname(node.func) == "torch.device":
            return self._cuda_target(call_arg(node, 0, "type"), depth + 1)
        if isinstance(node, cst.Name):
            defs = sem.defs(node)
            return bool(defs) and all(
                d.kind in ("assign", "annassign") and not d.path
                and self._cuda_target(d.value, depth + 1) for d in defs)
        return False

    # -- devicelint confirm ------------------------------------------------------------
    @staticmethod
    def probe(run: ProbeRun, rec: LineRecord) -> dict:
        state = rec.cuda_state
        if state is not None and state.initialized:
            return run.base("confirmed", "CUDA was already initialised when "
                            "CUDA_VISIBLE_DEVICES was set: the setting had no effect")
        if state is not None and state.driver_queried:
            # cudaGetDeviceCount (behind is_available/device_count) initialises the driver,
            # which reads CUDA_VISIBLE_DEVICES once; PYTORCH_NVML_BASED_CUDA_CHECK=1 avoids it.
            return run.base("confirmed", "torch.cuda.is_available()/device_count() had already "
                            "initialised the CUDA driver when CUDA_VISIBLE_DEVICES was set: the "
                            "driver read the variable then, so the setting had no effect")
        # torch had no CUDA context yet, but torch.cuda.is_available()/device_count() call
        # cudaGetDeviceCount, which already reads the variable: this cannot be refuted here.
        return run.base("inconclusive", "torch had not created a CUDA context yet; an earlier "
                        "is_available()/device_count() may still have fixed the visible devices")

    runtime = RuntimeSpec(probe=probe, watch=(Watch.DRIVER_QUERIES, Watch.CUDA_STATE))


def _update_sets(call: cst.Call) -> bool:
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == VARIABLE:
            return True
        if arg.keyword is None and isinstance(arg.value, cst.Dict):
            for element in arg.value.elements:
                if isinstance(element, cst.DictElement) and string_value(element.key) == VARIABLE:
                    return True
    return False

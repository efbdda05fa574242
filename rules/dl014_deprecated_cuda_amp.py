from __future__ import annotations

from typing import Optional

import libcst as cst

from devicelint.builders import reindent
from devicelint.names import dotted_name
from devicelint.rule import Rule

# Deprecated name (every path it is reachable by) -> the `torch.amp` attribute to use.
DEPRECATED = {
    "torch.cuda.amp.autocast": "autocast",
    "torch.cuda.amp.autocast_mode.autocast": "autocast",
    "torch.cuda.amp.GradScaler": "GradScaler",
    "torch.cuda.amp.grad_scaler.GradScaler": "GradScaler",
    "torch.cuda.amp.custom_fwd": "custom_fwd",
    "torch.cuda.amp.autocast_mode.custom_fwd": "custom_fwd",
    "torch.cuda.amp.custom_bwd": "custom_bwd",
    "torch.cuda.amp.autocast_mode.custom_bwd": "custom_bwd",
}
# `torch.cuda.amp.autocast(enabled, dtype, cache_enabled)` takes these positionally, but
# `torch.amp.autocast(device_type, dtype, enabled, cache_enabled)` orders them differently:
# a positional argument is rewritten as a keyword.
AUTOCAST_POSITIONAL = ("enabled", "dtype", "cache_enabled")

DEVICE_TYPES = {"cuda", "cpu", "mps", "npu", "xpu", "hpu", "musa"}


def _mentions_device_type(test: cst.BaseExpression) -> bool:
    """An `if` test that dispatches on the device (`device_type == "cuda"`,
    `device.type in ("cuda", "mps")`) rather than on the torch version."""
    found = []

    class _Finder(cst.CSTVisitor):
        def visit_SimpleString(self, node: cst.SimpleString) -> None:
            try:
                value = node.evaluated_value
            except Exception:  # noqa: BLE001 - odd literals are simply not device names
                return
            if isinstance(value, str) and value.split(":", 1)[0] in DEVICE_TYPES:
                found.append(node)

    test.visit(_Finder())
    return bool(found)


def _cuda() -> cst.SimpleString:
    return cst.SimpleString('"cuda"')


class DeprecatedCudaAmp(Rule):
    """## What it does
    Flags calls of `torch.cuda.amp.autocast(...)`, `torch.cuda.amp.GradScaler(...)`,
    `torch.cuda.amp.custom_fwd` and `torch.cuda.amp.custom_bwd` under any import spelling
    (`from torch.cuda.amp import autocast, GradScaler`, `from torch.cuda import amp`,
    `import torch.cuda.amp as amp`) and through aliases the file binds
    (`cuda_amp = torch.cuda.amp`, `Scaler = cuda_amp.GradScaler`), including their use as
    decorators (`@torch.cuda.amp.autocast()`, `@custom_fwd`). The callee is resolved by the
    semantic model (`sem.resolved_qualname`): a name whose bindings disagree, such as a
    `try:` import of `torch.amp.autocast` with the deprecated import as its
    `except ImportError:` fallback, or an import rebound before the call, is not reported.

    ## Why is this bad?
    The CUDA-specific AMP entry points are deprecated since PyTorch 2.4 in favour of the
    device-generic `torch.amp` API. Each call emits a `FutureWarning` (checked on torch
    2.13: "`torch.cuda.amp.autocast(args...)` is deprecated. Please use
    `torch.amp.autocast('cuda', args...)` instead."), which floods training logs when the
    context manager is entered every step, and the aliases are slated for removal. The
    `torch.amp` forms also let the same code target other devices (`"cpu"`, `"xpu"`,
    `"mps"`) by changing one string. There is no performance cost: the old names are thin
    wrappers that forward to `torch.amp`.

    ## Example
    ```python
    scaler = torch.cuda.amp.GradScaler()
    for x, y in loader:
        with torch.cuda.amp.autocast(dtype=torch.bfloat16):
            loss = loss_fn(model(x), y)
        scaler.scale(loss).backward()
    ```

    ## Use instead
    ```python
    scaler = torch.amp.GradScaler("cuda")
    for x, y in loader:
        with torch.amp.autocast("cuda", dtype=torch.bfloat16):
            loss = loss_fn(model(x), y)
        scaler.scale(loss).backward()
    ```

    ## Fix safety
    The fix rewrites the call to the `torch.amp` form with `"cuda"` as the device:
    `autocast(...)` becomes `torch.amp.autocast("cuda", ...)` (a positional `enabled`,
    `dtype` or `cache_enabled` argument becomes a keyword, because `torch.amp.autocast`
    orders its parameters differently), `GradScaler(...)` becomes
    `torch.amp.GradScaler("cuda", ...)`, and `custom_fwd`/`custom_bwd` gain
    `device_type="cuda"`. The defaults are the same (autocast's dtype is float16 for CUDA
    either way), so the fix is safe. It is only offered when the new path can be spelled
    through a module-level import the file already has (`import torch`,
    `import torch as T`, `from torch import amp`, `from torch.amp import autocast`): a file
    that only did `from torch.cuda.amp import autocast` gets the finding but no fix, since
    the fix would have to add an import. Calls with `*args` get no fix either.

    A deliberate fallback for old torch versions, where the other branch of a conditional
    expression already uses `torch.amp` (`torch.amp.GradScaler("cuda") if new_torch else
    torch.cuda.amp.GradScaler()`), is not reported; nor is the same fallback written as
    statements: in the `except` handler of a `try` that first tried `torch.amp`, or in the
    branch of an `if TORCH_VERSION_FLAG:`/`else:` whose other branch uses `torch.amp` (a test
    that compares against a device type, `elif device_type == "cuda":`, is device dispatch,
    not a version gate, and is still reported).
    """

    code = "DL014"
    name = "deprecated-cuda-amp"
    summary = "`torch.cuda.amp` is deprecated: use `torch.amp` with `\"cuda\"`"
    message = "`torch.cuda.amp.{name}` is deprecated; use {new}"
    tokens = ("cuda.amp", "cuda import")

    @staticmethod
    def gate(facts) -> bool:
        """Every deprecated name is under `torch.cuda.amp`: `amp` is in the code or in what
        its module-level aliases stand for (devicelint/gate.py)."""
        return facts.mentions("amp")
    fixable = True

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self._module_imports: Optional[list[tuple[str, str, int]]] = None

    # -- detection ---------------------------------------------------------------------
    def visit_Call(self, node: cst.Call) -> None:
        attr = DEPRECATED.get(self.ctx.semantic.resolved_qualname(node.func) or "")
        if attr is not None:
            self._flag(node, attr, node)

    def visit_Decorator(self, node: cst.Decorator) -> None:
        target = node.decorator
        if isinstance(target, cst.Call):
            return  # the call is flagged by visit_Call
        attr = DEPRECATED.get(self.ctx.semantic.resolved_qualname(target) or "")
        if attr is not None:
            self._flag(target, attr, node)

    def _version_fallback(self, at: cst.CSTNode) -> bool:
        """`torch.amp.GradScaler(...) if new_torch else torch.cuda.amp.GradScaler()`: the old
        name is kept on purpose for old torch versions."""
        child = at
        for ancestor in self.ctx.ancestors(at):
            if isinstance(ancestor, cst.IfExp):
                other = ancestor.orelse if child is ancestor.body else ancestor.body
                if isinstance(other, cst.Call):
                    qual = self.ctx.semantic.resolved_qualname(other.func) or ""
                    if qual.startswith(("torch.amp.", "torch.autocast")):
                        return True
                return False
            if isinstance(ancestor, (cst.BaseSmallStatement, cst.BaseCompoundStatement)):
                break
            child = ancestor
        return self._statement_fallback(at)

    def _statement_fallback(self, at: cst.CSTNode) -> bool:
        """The same fallback written with statements: the deprecated call sits in the
        `except` handler of a `try` whose body uses `torch.amp` (the new name failed on an
        old torch), or in one branch of an `if` whose other branch uses `torch.amp` and whose
        test is not a device-type dispatch (`if TORCH_1_13: ... else: ...`, not `elif
        device_type == "cuda":`, where the deprecated branch runs on every torch)."""
        child = at
        for ancestor in self.ctx.ancestors(at):
            if isinstance(ancestor, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
                return False
            if isinstance(ancestor, cst.ExceptHandler):
                handler_try = self.ctx.parent(ancestor)
                if isinstance(handler_try, cst.Try) and self._uses_torch_amp(handler_try.body):
                    return True
            elif isinstance(ancestor, cst.If) and child is not ancestor.test:
                other = ancestor.orelse if child is ancestor.body else ancestor.body
                if (
                    other is not None
                    and self._uses_torch_amp(other)
                    and not _mentions_device_type(ancestor.test)
                ):
                    return True
            child = ancestor
        return False

    def _uses_torch_amp(self, node: cst.CSTNode) -> bool:
        found = []

        class _Finder(cst.CSTVisitor):
            def visit_Call(inner, call: cst.Call) -> None:  # noqa: N805
                qual = self.ctx.semantic.resolved_qualname(call.func) or ""
                if qual.startswith("torch.amp.") or qual == "torch.autocast":
                    found.append(call)

        node.visit(_Finder())
        return bool(found)

    def _flag(self, node: cst.CSTNode, attr: str, at: cst.CSTNode) -> None:
        # `at`: a node already visited (positions in the tree are known for it).
        if self._version_fallback(at):
            return
        if attr == "autocast":
            new = '`torch.amp.autocast("cuda", ...)`'
        elif attr == "GradScaler":
            new = '`torch.amp.GradScaler("cuda", ...)`'
        else:
            new = f'`torch.amp.{attr}(device_type="cuda")`'
        message = self.message.format(name=attr, new=new)
        replacement = self._replacement(node, attr, at)
        if replacement is not None:
            replacement = reindent(self.ctx, at, replacement)
        if replacement is None:
            self.report(node, message)
        else:
            self.report(
                node, message, replacement=replacement, safe=True,
                fix_description=f"Use `torch.amp.{attr}` with the CUDA device",
            )

    # -- fix ---------------------------------------------------------------------------
    def _replacement(
        self, target: cst.CSTNode, attr: str, at: cst.CSTNode
    ) -> Optional[cst.CSTNode]:
        spelled = self._spelling(attr, at)
        if spelled is None:
            return None
        func = cst.parse_expression(spelled)
        if not isinstance(target, cst.Call):  # a bare decorator: @custom_fwd
            return cst.Call(
                func=func,
                args=[cst.Arg(keyword=cst.Name("device_type"), value=_cuda(),
                              equal=cst.AssignEqual(cst.SimpleWhitespace(""),
                                                    cst.SimpleWhitespace("")))],
            )
        args = list(target.args)
        if any(arg.star == "*" for arg in args):
            return None
        no_space = cst.AssignEqual(cst.SimpleWhitespace(""), cst.SimpleWhitespace(""))
        if attr == "autocast":
            rewritten = []
            position = 0
            for arg in args:
                if arg.keyword is None and not arg.star:
                    if position >= len(AUTOCAST_POSITIONAL):
                        return None
                    arg = arg.with_changes(
                        keyword=cst.Name(AUTOCAST_POSITIONAL[position]), equal=no_space
                    )
                    position += 1
                rewritten.append(arg)
            new_args = [self._first(target)] + rewritten
        elif attr == "GradScaler":
            if any(a.keyword is not None and a.keyword.value == "device" for a in args):
                return None
            new_args = [self._first(target)] + args
        else:
            if any(a.keyword is not None and a.keyword.value == "device_type" for a in args):
                return None
            new_args = args + [cst.Arg(keyword=cst.Name("device_type"), value=_cuda(),
                                       equal=no_space)]
        return target.with_changes(func=func, args=new_args)

    @staticmethod
    def _first(call: cst.Call) -> cst.Arg:
        """The inserted `"cuda"` argument, laid out like the call's first line."""
        if not call.args:
            return cst.Arg(_cuda())
        space = call.whitespace_before_args
        if isinstance(space, cst.ParenthesizedWhitespace):
            # `f(\n    a=1,\n)`: put "cuda" on its own line, aligned with the others.
            return cst.Arg(
                _cuda(),
                comma=cst.Comma(
                    whitespace_after=space.with_changes(
                        first_line=cst.TrailingWhitespace(), empty_lines=()
                    )
                ),
            )
        return cst.Arg(_cuda())

    def _spelling(self, attr: str, at: cst.CSTNode) -> Optional[str]:
        """How `torch.amp.<attr>` can be written with a module-level import of this file
        that is bound before `at` runs; None if no import reaches it."""
        inside_function = self.ctx.function(at) is not None
        position = self.ctx.order(at)
        best: Optional[tuple[int, str]] = None
        for bound, target, order in self._imports():
            if not inside_function and order > position:
                continue
            if target == "torch":
                candidate = (0, f"{bound}.amp.{attr}")
            elif target == "torch.amp":
                candidate = (1, f"{bound}.{attr}")
            elif target in (f"torch.amp.{attr}",):
                candidate = (2, bound)
            else:
                continue
            if best is None or candidate < best:
                best = candidate
        return best[1] if best else None

    def _imports(self) -> list[tuple[str, str, int]]:
        """(bound name, what it stands for, traversal order) of module-level imports."""
        if self._module_imports is None:
            found = []
            for statement in self.ctx.module.body:
                if not isinstance(statement, cst.SimpleStatementLine):
                    continue
                for small in statement.body:
                    order = self.ctx.order(statement)
                    if isinstance(small, cst.Import):
                        for alias in small.names:
                            full = dotted_name(alias.name)
                            if full is None:
                                continue
                            if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                                found.append((alias.asname.name.value, full, order))
                            else:
                                head = full.split(".", 1)[0]
                                found.append((head, head, order))
                    elif isinstance(small, cst.ImportFrom) and not small.relative:
                        if isinstance(small.names, cst.ImportStar) or small.module is None:
                            continue
                        module = dotted_name(small.module)
                        for alias in small.names:
                            name = dotted_name(alias.name)
                            if name is None:
                                continue
                            bound = name
                            if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                                bound = alias.asname.name.value
                            found.append((bound, f"{module}.{name}", order))
            self._module_imports = found
        return self._module_imports

from __future__ import annotations

from typing import Optional

import libcst as cst

from devicelint.gate import STATEMENT
from devicelint.context import FileContext
from devicelint.names import dotted_name
from devicelint.rule import Rule
from devicelint.runtime_spec import LineRecord, ProbeRun, RuntimeSpec, Watch
from devicelint.semantic import Kind, Place
from devicelint.semantic.model import call_arg, keyword_arg
from devicelint.semantic.modules import attribute_assignments, self_class

_PARAMETERS = ("torch.nn.Parameter", "torch.nn.parameter.Parameter")


class DiscardedTo(Rule):
    """## What it does
    Flags `t.to(...)`, `t.cuda()` and `t.cpu()` written as a statement of their own when
    the semantic model shows `t` is a tensor: built by a torch factory or tensor operation,
    a parameter annotated `torch.Tensor` or passed tensors by every call site in the file,
    an element of a loader's batch (`for x, y in loader`), a module's output, a tensor held
    in a list or dict, or a tensor attribute the class assigns to `self` — whatever the
    variables are called. `.to(...)` is flagged only when it moves (a device, a place, a
    `.device` attribute, another tensor): a dtype-only `.to(torch.float16)` is another
    matter. Silent when the tensor is already where the call would move it (nothing is
    lost) and in branches that run only without a GPU (`if not use_cuda:`).

    ## Why is this bad?
    `nn.Module.to()` moves a module's parameters in place, but `Tensor.to()` returns a new
    tensor and leaves the original where it was. A bare `x.to(device)` therefore does
    nothing except pay for a copy that is thrown away: `x` is still on the CPU, and the
    next operation with GPU tensors fails with "Expected all tensors to be on the same
    device", or, in CPU-only runs, silently keeps everything on the CPU.

    The rule is silent on modules (`model.to(device)`, `self.encoder.cuda()`,
    `self.to(device)` inside an `nn.Module`), on anything it cannot show to be a tensor,
    and on assigned or returned results.

    ## Example
    ```python
    for images, labels in loader:
        images.to(device)
        labels.to(device)
        loss = criterion(model(images), labels)
    ```

    ## Use instead
    ```python
    for images, labels in loader:
        images = images.to(device)
        labels = labels.to(device)
        loss = criterion(model(images), labels)
    ```

    ## Fix safety
    The fix assigns the result back: `x.to(device)` becomes `x = x.to(device)`. It is safe
    when `x` is a plain name bound in the same function (so the assignment cannot turn a
    global into an unbound local) and the move goes to a device. It is unsafe for moves
    to the CPU (`.cpu()`, `.to("cpu")`): a bare `.cpu()` is sometimes written on purpose
    as a host-sync fence in timing code, where moving the tensor would break the GPU code
    that follows. For a tensor attribute, `self.x = self.x.to(device)` is offered as an
    unsafe fix (other references to the old tensor are not updated); for an
    `nn.Parameter` attribute there is no fix (assigning a plain tensor to a parameter
    attribute raises), register it as a parameter or buffer and move the module instead.
    """

    code = "DL006"
    name = "discarded-to"
    summary = "`Tensor.to()` is not in place: the moved tensor is discarded"
    message = "`{receiver}.{method}(...)` result is discarded: tensors are not moved in place"
    hint = "assign the result: `x = x.to(...)`"
    hint_message = " (`{target}` is taken for a device from its name only)"
    tokens = (".to(", ".cuda(", ".cpu(")

    @staticmethod
    def gate(facts) -> bool:
        """Reported at `x.to(...)`, `.cuda()` or `.cpu()` as a whole statement
        (devicelint/gate.py)."""
        return facts.calls_method(("to", "cuda", "cpu"), STATEMENT)
    fixable = True

    def leave_Expr(self, node: cst.Expr) -> None:
        call = node.value
        if not isinstance(call, cst.Call) or call.lpar or not isinstance(call.func, cst.Attribute):
            return
        method = call.func.attr.value
        if method not in ("to", "cuda", "cpu"):
            return
        sem = self.ctx.semantic
        receiver = call.func.value
        if sem.value(receiver).kind is not Kind.TENSOR:
            return  # modules move in place; objects of unknown kind may too
        target = self._target(call)
        if target is None:
            return  # `.to(torch.float16)`, `.to()` with nothing said, `**kwargs`
        place, hint = target
        if place is not Place.UNKNOWN and sem.value(receiver).place is place:
            return  # already there: the discarded copy is the tensor itself, nothing is lost
        if not sem.on_gpu_path(call):
            return  # a branch that runs only without a GPU
        text = dotted_name(receiver) or self.ctx.code(receiver)
        message = self.message.format(receiver=text, method=method)
        if hint is not None:
            message += self.hint_message.format(target=hint)
        to_cpu = place is Place.CPU
        if isinstance(receiver, cst.Name):
            if self._local(receiver):
                self.report(call, message, replacement=_assign(receiver, call), safe=not to_cpu,
                            fix_description=f"Assign the result back to `{text}`")
            else:
                self.report(call, message)
            return
        if isinstance(receiver, cst.Attribute) and self._parameter_attribute(receiver):
            self.report(call, message.rstrip() + "; register it and move the module")
            return
        if isinstance(receiver, cst.Attribute) and self_class(sem, receiver.value) is not None:
            self.report(call, message, replacement=_assign(receiver, call), safe=False,
                        fix_description=f"Assign the result back to `{text}`")
            return
        self.report(
            call,
            f"`.{method}(...)` result is discarded: tensors are not moved in place",
        )

    def _target(self, call: cst.Call) -> Optional[tuple[Place, Optional[str]]]:
        """(where the call moves the tensor, the target's text when that rests on a name),
        or None when it does not move it (a dtype-only `.to`)."""
        method = call.func.attr.value  # type: ignore[union-attr]
        if method == "cpu":
            return Place.CPU, None
        if method == "cuda":
            return Place.DEVICE, None
        if any(arg.star for arg in call.args):
            return None
        target = keyword_arg(call, "device") or call_arg(call, 0, "\0")
        if target is None:
            return None
        sem = self.ctx.semantic
        place, hint = sem.device_place(target)
        if place is not None:
            return place, (self.ctx.code(target) if hint else None)
        if isinstance(target, cst.Attribute) and target.attr.value == "device":
            return Place.UNKNOWN, None  # PyTorch's `.device` of a tensor or module
        if sem.value(target).kind is Kind.TENSOR:
            return Place.UNKNOWN, None  # `.to(other)`: other's device and dtype
        return None

    def _local(self, name: cst.Name) -> bool:
        """Every binding that reaches `name` is made in its own scope: assigning it there
        cannot turn a global or closure variable into an unbound local."""
        sem = self.ctx.semantic
        defs = sem.defs(name)
        scope = sem.scope_of(name)
        return bool(defs) and all(d.scope is scope and d.kind not in ("global", "import") for d in defs)

    def _parameter_attribute(self, node: cst.Attribute) -> bool:
        """`self.x` that the class assigns an `nn.Parameter` (assigning a plain tensor to it
        would raise)."""
        sem = self.ctx.semantic
        owner = self_class(sem, node.value)
        if owner is None:
            return False
        for _target, d in attribute_assignments(sem, owner).get(node.attr.value, ()):
            value = d.value
            if isinstance(value, cst.Call) and sem.qualname(value.func) in _PARAMETERS:
                return True
        return False

    def probe(run: ProbeRun, rec: LineRecord) -> dict:
        moves = rec.moves
        made = moves.count - moves.noop
        if not moves.count:
            return run.base("inconclusive", "the line ran but no tensor .to/.cuda/.cpu was seen")
        if not made:
            return run.base("refuted", "the tensor was already there: the call returned it "
                            "unchanged, nothing was lost", count=moves.count)
        copies = sum(c.count for c in rec.copies.values())
        nbytes = sum(c.bytes for c in rec.copies.values())
        return run.base("confirmed", f"{made} new tensor(s) made and discarded ({copies} "
                        f"copies, {nbytes:,} B); the original stayed where it was", count=made,
                        bytes=nbytes)

    runtime = RuntimeSpec(probe=probe, watch=(Watch.MOVES,))


def _assign(receiver: cst.BaseExpression, call: cst.Call) -> cst.Assign:
    return cst.Assign(targets=[cst.AssignTarget(receiver)], value=call)

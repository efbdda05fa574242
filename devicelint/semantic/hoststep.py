"""Host steps: code the file does not show that computes new host data from what a loop
reads back from the device (an environment loop: `next_obs, reward, ... = envs.step(
action.cpu().numpy())`, then `torch.Tensor(next_obs).to(device)` for the next action).

The read-back is needed (that code runs on the host and takes host data) and the upload of
its result is new data, not the read data coming back: neither is a round trip or a sync
the loop could do without. Decided from data flow and the API table only: a call of a method
of an object whose value the file does not know (not a function of the file, not a PyTorch
or NumPy function or tensor method, not a module call), whose result the loop copies to the
device, and whose arguments the loop computes from the read. What the objects or methods are
called plays no part.
"""

from __future__ import annotations

from typing import Iterator, Optional

import libcst as cst

from devicelint.semantic import dataflow
from devicelint.semantic.model import call_arg, keyword_arg
from devicelint.semantic.values import Kind, Place


def host_step_call(sem, value: Optional[cst.BaseExpression]) -> bool:
    """`value` is a call of a method of an object the file does not show (`env.step(action)`):
    not a function of the file or the project (`syncs.callee`), not a qualified API
    (`np.clip`, `gym.make`), not a tensor method of the API table, not a module call, on a
    receiver of unknown kind."""
    if not isinstance(value, cst.Call) or not isinstance(value.func, cst.Attribute):
        return False
    if sem.syncs.callee(value) is not None or sem.qualname(value.func) is not None \
            or sem.api.method(value.func.attr.value) is not None or sem.loops.is_module_call(value):
        return False
    return sem.value(value.func.value).kind is Kind.UNKNOWN


def host_step_result(sem, d) -> bool:
    """The binding `d` takes what a host step returns (`host_step_call`)."""
    return host_step_call(sem, d.value)


def uploaded_data(sem, call: cst.Call) -> Optional[cst.BaseExpression]:
    """The host data `call` copies to the device: `x.to(device)` (a device the model places
    on the accelerator), `x.cuda()`, `torch.tensor(x, device=...)`; else None."""
    made = dataflow.data_to_device(sem, call)
    if made is not None:
        return made.data
    func = call.func
    if not isinstance(func, cst.Attribute) or any(arg.star for arg in call.args):
        return None
    if func.attr.value == "cuda":
        return func.value
    if func.attr.value != "to":
        return None
    target = keyword_arg(call, "device")
    if target is None:
        target = call_arg(call, 0, "\0")
    if target is None or sem.device_place(target)[0] is not Place.DEVICE:
        return None
    return func.value


def _follow(_name, d) -> bool:
    return d.kind not in ("for", "comp")


def _data(sem, expr: cst.CSTNode, loop: cst.CSTNode) -> Iterator[tuple[cst.CSTNode, object]]:
    """`dataflow.data_nodes` within `loop` (not through an element's iterable), also through
    what an augmented assignment starts from (`a += noise`: `a` is computed from the `a`
    before it as well)."""
    stack, seen = [expr], set()
    while stack:
        start = stack.pop()
        if id(start) in seen:
            continue
        seen.add(id(start))
        for node, d in dataflow.data_nodes(sem, start, loop, depth=8, follow=_follow):
            yield node, d
            if d is not None and d.kind == "augassign" and isinstance(d.node, cst.AugAssign):
                stack.append(d.node.target)


def feeds_host_step(sem, read: cst.CSTNode, operand: Optional[cst.BaseExpression],
                    loop: cst.CSTNode) -> Optional[cst.Call]:
    """The host step that closes an environment loop's cycle through the read-back `read`
    (of `operand`), else None: in `loop`, a host step (`host_step_call`) whose arguments
    are computed from `read`, whose result the loop copies to the device, and that copy is
    what `operand` is computed from (this or the previous iteration: the device computes
    the action from the observation the host step returned). A read that only feeds a
    print, a logger, or a host call whose result the loop does not send back to the device
    has no such step."""
    memo = sem.__dict__.setdefault("_host_step_cycles", {})
    key = id(loop)
    if key not in memo:
        calls = sem.ctx.descendants(loop, cst.Call, (cst.FunctionDef, cst.ClassDef, cst.Lambda))
        steps = [c for c in calls if host_step_call(sem, c)]
        uploads = []
        if steps:
            for call in calls:
                data = uploaded_data(sem, call)
                if data is None or not sem.on_gpu_path(call):
                    continue
                # The copy's data come from a host step's result (inline, or through a binding).
                from_steps = []
                for node, d in _data(sem, data, loop):
                    if d is None and any(node is s for s in steps):
                        from_steps.append(node)
                    elif d is not None and host_step_result(sem, d):
                        from_steps.append(d.value)
                if from_steps:
                    uploads.append((call, from_steps))
        memo[key] = (steps, uploads)
    steps, uploads = memo[key]
    if not uploads or operand is None:
        return None
    if not any(any(node is upload for node, _ in _data(sem, operand, loop))
               for upload, _ in uploads):
        return None
    for upload, fed in uploads:
        for step in fed:
            for arg in step.args:
                if any(node is read for node, _ in _data(sem, arg.value, loop)):
                    return step
    return None

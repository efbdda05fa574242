"""What calling a function of the file does, as one fact a rule (or another file, through
the project index) can ask: `sem.summary(function_def) -> Summary`.

- `returns`: the value a call gives (a device tensor, a moved module, a loader and whether
  it pins memory: `Value.pinned`), from the model's `returned_value`;
- `moves`: the parameters it copies to the device (`p.to(device)`, `p.cuda()`: a module is
  moved in place, a tensor's copy is what the function goes on with);
- `host_reads`: the parameters whose data it reads on the host (from `sem.syncs.summary`:
  `.item()`, `float(p)`, ... directly or through the file's other functions), and
  `device_reads` when it reads device data whatever its arguments.
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from devicelint.semantic.values import Place, Value


@dataclass(frozen=True)
class Summary:
    returns: Value
    moves: frozenset          # parameter names the function moves to the device
    host_reads: frozenset     # parameter names whose data it reads on the host
    device_reads: bool        # it reads device data on the host whatever its arguments


def summarise(sem, function: cst.FunctionDef) -> Summary:
    params = {p.name.value for p in _all_params(function)}
    moves = set()
    for call in _calls(function):
        func = call.func
        if not (isinstance(func, cst.Attribute) and func.attr.value in ("to", "cuda")):
            continue
        receiver = func.value
        if not (isinstance(receiver, cst.Name) and receiver.value in params):
            continue
        if func.attr.value == "cuda":
            moves.add(receiver.value)
            continue
        target = call.args[0].value if call.args and call.args[0].keyword is None else None
        for arg in call.args:
            if arg.keyword is not None and arg.keyword.value == "device":
                target = arg.value
        place, _hint = sem.device_place(target)
        if place is Place.DEVICE:
            moves.add(receiver.value)
    reads = sem.syncs.summary(function) or ()
    host_reads = frozenset(name for read in reads for name in read.params)
    return Summary(returns=sem.returned_value(function), moves=frozenset(moves),
                   host_reads=host_reads, device_reads=any(read.device for read in reads))


def _all_params(function: cst.FunctionDef):
    p = function.params
    return [*p.posonly_params, *p.params, *p.kwonly_params]


def _calls(function: cst.FunctionDef):
    """Calls in the function's own body (nested functions and classes are theirs)."""
    from devicelint.tree import children

    stack = list(children(function.body))
    while stack:
        node = stack.pop()
        if isinstance(node, cst.Call):
            yield node
        if isinstance(node, (cst.FunctionDef, cst.ClassDef)):
            continue
        stack.extend(children(node))

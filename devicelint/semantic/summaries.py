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

from typing import Optional

import libcst as cst

from devicelint.semantic.values import Place, Value


class Summary:
    """Each part is worked out when first read, and kept: a rule asking what a call returns
    (DL004) or which parameters it moves (a loop's facts: `loops._moves_element`) does not
    pay for the host-read summary (`sem.syncs.summary`), which follows the file's calls into
    other files' functions and builds their semantic models (the project index)."""

    __slots__ = ("_sem", "_function", "_returns", "_moves", "_reads")

    def __init__(self, sem, function: cst.FunctionDef) -> None:
        self._sem = sem
        self._function = function
        self._returns: Optional[Value] = None
        self._moves: Optional[frozenset] = None
        self._reads: Optional[tuple] = None

    @property
    def returns(self) -> Value:
        if self._returns is None:
            self._returns = self._sem.returned_value(self._function)
        return self._returns

    @property
    def moves(self) -> frozenset:
        """Parameter names the function moves to the device."""
        if self._moves is None:
            self._moves = frozenset(_moves(self._sem, self._function))
        return self._moves

    @property
    def host_reads(self) -> frozenset:
        """Parameter names whose data it reads on the host."""
        return frozenset(name for read in self._host_summary() for name in read.params)

    @property
    def device_reads(self) -> bool:
        """It reads device data on the host whatever its arguments."""
        return any(read.device for read in self._host_summary())

    def _host_summary(self) -> tuple:
        if self._reads is None:
            self._reads = tuple(self._sem.syncs.summary(self._function) or ())
        return self._reads


def summarise(sem, function: cst.FunctionDef) -> Summary:
    return Summary(sem, function)


def _moves(sem, function: cst.FunctionDef) -> set:
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
    return moves


def _all_params(function: cst.FunctionDef):
    p = function.params
    return [*p.posonly_params, *p.params, *p.kwonly_params]


def _calls(function: cst.FunctionDef):
    """Calls in the function's own body (nested functions and classes are theirs)."""
    from devicelint.tree import children

    stack = list(children(function.body))
    while stack:
        node = stack.pop()
        if type(node) is cst.Call:
            yield node
        if type(node) in (cst.FunctionDef, cst.ClassDef):
            continue
        stack.extend(children(node))

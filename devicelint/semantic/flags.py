"""GPU flags bound to literals: `USE_CUDA = True` with `if USE_CUDA: model.cuda()`.

A name bound only to `True`/`False` says nothing about the GPU by itself (`profile = False`),
but when an `if` on it (or a conditional expression) moves something to the device, the flag
decides whether the program runs on the GPU: on the configuration that uses one, it is True,
as `use_cuda = torch.cuda.is_available()` is on a machine with a GPU. Decided by what the
guarded code does, never by the flag's name.
"""

from __future__ import annotations

import libcst as cst

from devicelint.semantic.values import Place

_LITERALS = ("True", "False")


def guards_device_move(sem, name: cst.Name) -> bool:
    """`name` is bound only to literal booleans, and some `if name:` / `... if name else ...`
    reading the same bindings moves data or a module to the device in its taken arm."""
    defs = sem.defs(name)
    if not defs or not all(d.kind in ("assign", "annassign") and not d.path
                           and isinstance(d.value, cst.Name) and d.value.value in _LITERALS
                           for d in defs):
        return False
    memo = sem.__dict__.setdefault("_dl_flag_moves", {})
    key = frozenset(id(d) for d in defs)
    if key in memo:
        return memo[key]
    memo[key] = False  # a cycle (a `.to(device)` whose device reads the flag) says nothing
    found = False
    for test, arm in _guarded_arms(sem).get(name.value, ()):
        if key & {id(d) for d in sem.defs(test)} and _moves_to_device(sem, arm):
            found = True
            break
    memo[key] = found
    return found


def _guarded_arms(sem) -> dict[str, list[tuple[cst.Name, cst.CSTNode]]]:
    """{name: [(the test, the arm taken when it is true)]} for `if name:` and `a if name else b`,
    found once per file."""
    memo = sem.__dict__.get("_dl_flag_arms")
    if memo is None:
        memo = {}
        for node in sem.ctx.iter_nodes(cst.If):
            if isinstance(node.test, cst.Name):
                memo.setdefault(node.test.value, []).append((node.test, node.body))
        for node in sem.ctx.iter_nodes(cst.IfExp):
            if isinstance(node.test, cst.Name):
                memo.setdefault(node.test.value, []).append((node.test, node.body))
        sem.__dict__["_dl_flag_arms"] = memo
    return memo


def _moves_to_device(sem, arm: cst.CSTNode) -> bool:
    calls = [arm] if isinstance(arm, cst.Call) else []
    calls += sem.ctx.descendants(arm, cst.Call, (cst.FunctionDef, cst.ClassDef, cst.Lambda))
    for call in calls:
        func = call.func
        if not isinstance(func, cst.Attribute):
            continue
        if func.attr.value == "cuda":
            return True
        if func.attr.value == "to":
            target = next((a.value for a in call.args if a.keyword is None
                           or a.keyword.value == "device"), None)
            if target is not None and sem.device_place(target)[0] is Place.DEVICE:
                return True
    return False

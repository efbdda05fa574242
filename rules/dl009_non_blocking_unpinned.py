from __future__ import annotations

from typing import Optional

import libcst as cst

from devicelint.analysis import CUDA, DEVICE, TENSOR_FACTORIES, keyword_arg, to_call_device
from devicelint.rule import Rule
from devicelint.rules._loaders import (
    EXPLICIT_OFF, UNPINNED, batch_moves, loaders_of, pin_state,
)
from devicelint.runtime_spec import LineRecord, ProbeRun, RuntimeSpec, Watch

# Factories that generate their content in fresh pageable CPU memory unless given
# `device=` or `pin_memory=True`. Left out: the `*_like` ones and `stack`/`cat` (they follow
# their inputs' device), and the conversions of host data (`tensor`, `as_tensor`,
# `from_numpy`, `Tensor`...): copying a small host-built tensor with `non_blocking=True`
# from pageable memory is a deliberate idiom (it skips the stream synchronisation a
# blocking copy does), seen in torchvision and transformers.
GENERATED = {
    f"torch.{name}"
    for name in ("zeros", "ones", "empty", "full", "rand", "randn", "randint", "randperm",
                 "arange", "linspace", "logspace", "eye")
}
CPU_FACTORIES = GENERATED & TENSOR_FACTORIES | {"torch.randperm", "torch.eye"}


def _is_true(node: Optional[cst.BaseExpression]) -> bool:
    return isinstance(node, cst.Name) and node.value == "True"


class NonBlockingUnpinned(Rule):
    """## What it does
    Flags `.to(device, non_blocking=True)` and `.cuda(non_blocking=True)` on data that the
    code shows lives in pageable (non-pinned) host memory:

    - a batch (or a value derived from it in the loop body) of a `DataLoader` built without
      `pin_memory=True` (absent or `pin_memory=False`);
    - a fresh CPU tensor whose content is generated on the host:
      `torch.zeros/ones/empty/full/rand/randn/randint/randperm/arange/linspace/logspace/eye`
      without `device=` and without `pin_memory=True`, used directly or through a name whose
      last assignment before the copy is such a call.

    Stays silent on pinned sources (`pin_memory=True` loaders or factories, any
    `.pin_memory()` call on the value or in the loop), on sources it cannot see (function
    parameters, values from other functions, loaders whose `pin_memory` is a variable or
    `**kwargs`), and on device-to-host copies (`.to("cpu", non_blocking=True)`, a different
    matter). Also silent on host data converted with `torch.tensor`, `torch.as_tensor`,
    `torch.from_numpy`: copying such a (usually small) tensor with `non_blocking=True` from
    pageable memory is a deliberate idiom, because it skips the stream synchronisation a
    blocking copy performs (the audit found it in torchvision and transformers).

    ## Why is this bad?
    `non_blocking=True` only makes a host-to-device copy asynchronous when the source is in
    page-locked memory. From pageable memory the driver stages the data through a pinned
    buffer while the host waits (it does skip the stream synchronisation of a blocking
    copy, but the host-side copy is not overlapped), and the transfer runs at pageable
    bandwidth: the code looks overlapped but is not. Measured on an H200
    (torch 2.11, this project's design notes): one small copy 14.8 µs pageable vs
    10.4 µs pinned with `non_blocking`; bulk ~50 GB/s pinned vs 15-16 GB/s pageable.
    `torch.cuda.set_sync_debug_mode` does not warn about it either.

    ## Example
    ```python
    loader = DataLoader(dataset, batch_size=64)
    for x, y in loader:
        x = x.to(device, non_blocking=True)
    ```

    ## Use instead
    ```python
    loader = DataLoader(dataset, batch_size=64, pin_memory=True)
    for x, y in loader:
        x = x.to(device, non_blocking=True)
    ```
    and create generated tensors on the device (`torch.randn(n, device=device)`), or pin
    a tensor you build yourself (`torch.empty(n, pin_memory=True)`, `t.pin_memory()`).
    """

    code = "DL009"
    name = "non-blocking-unpinned"
    summary = "`non_blocking=True` copy from pageable (non-pinned) memory is not asynchronous"
    message = (
        "`non_blocking=True` copy from pageable memory: the driver stages it through a pinned "
        "buffer while the host waits, so the transfer neither overlaps nor runs at pinned "
        "bandwidth; pin the source (`pin_memory=True` on the DataLoader, `.pin_memory()`) "
        "or create the tensor on the device"
    )
    tokens = ("non_blocking",)

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self.calls: list[cst.Call] = []

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if (
            isinstance(func, cst.Attribute)
            and func.attr.value in ("to", "cuda")
            and _is_true(keyword_arg(node, "non_blocking"))
        ):
            self.calls.append(node)

    def leave_Module(self, node: cst.Module) -> None:
        for call in self.calls:
            if to_call_device(self.ctx, call) not in (CUDA, DEVICE):
                continue
            receiver = call.func.value  # type: ignore[attr-defined]
            if _mentions_pinning(receiver):
                continue
            if self._fresh_cpu_tensor(receiver) or self._unpinned_batch(call):
                self.report(call)

    def _fresh_cpu_tensor(self, node: cst.BaseExpression) -> bool:
        if isinstance(node, cst.Call):
            return self._is_cpu_factory(node)
        if not isinstance(node, cst.Name):
            return False
        # The binding that reaches the copy: the last one before it in source order
        # (not the assignment the copy itself is part of).
        at = self.ctx.order(node)
        inside = {id(a) for a in self.ctx.ancestors(node)}
        earlier = [
            b for b in self.ctx.bindings_of(node.value, node)
            if b.order < at and id(b.node) not in inside
        ]
        if not earlier:
            return False
        last = earlier[-1]
        return (
            last.kind in ("assign", "annassign")
            and isinstance(last.value, cst.Call)
            and self._is_cpu_factory(last.value)
        )

    def _is_cpu_factory(self, call: cst.Call) -> bool:
        if self.ctx.qualname(call.func) not in CPU_FACTORIES:
            return False
        if any(arg.star for arg in call.args):
            return False
        return keyword_arg(call, "device") is None and keyword_arg(call, "pin_memory") is None

    def _unpinned_batch(self, call: cst.Call) -> bool:
        for loop in self.ctx.loops(call):
            if not isinstance(loop, cst.For):
                continue
            loaders = loaders_of(self.ctx, loop.iter)
            if not loaders or any(pin_state(l) not in (UNPINNED, EXPLICIT_OFF) for l in loaders):
                continue
            if _mentions_pinning(loop.body):
                continue
            if any(move is call for move in batch_moves(self.ctx, loop)):
                return True
        return False

    # -- devicelint confirm ------------------------------------------------------------
    @staticmethod
    def probe(run: ProbeRun, rec: LineRecord) -> dict:
        copies = rec.copies.get("h2d")
        if copies is None:
            return run.base("refuted", "the line ran but made no host-to-device copy", count=0)
        bad = copies.pageable_non_blocking
        if not bad:
            return run.base("refuted", "every non_blocking copy here came from pinned memory",
                            count=copies.count)
        return run.base("confirmed", f"{bad} of {copies.count} non_blocking copies came from "
                        "pageable memory, so they were not asynchronous", count=bad,
                        bytes=copies.bytes)

    runtime = RuntimeSpec(probe=probe, watch=(Watch.MOVES,), whole_file=True)


def _mentions_pinning(node: cst.CSTNode) -> bool:
    found = False

    class Find(cst.CSTVisitor):
        def visit_Attribute(self, attr: cst.Attribute) -> None:
            nonlocal found
            if attr.attr.value in ("pin_memory", "is_pinned"):
                found = True

    node.visit(Find())
    return found

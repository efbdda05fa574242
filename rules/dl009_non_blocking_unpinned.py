from __future__ import annotations

import libcst as cst

from devicelint.gate import ATTRIBUTE_CALL
from devicelint.rule import Rule
from devicelint.runtime_spec import Find, LineRecord, ProbeRun, RuntimeSpec, Watch
from devicelint.semantic import dataflow
from devicelint.semantic.model import keyword_arg


class NonBlockingUnpinned(Rule):
    """## What it does
    Flags `.to(device, non_blocking=True)` and `.cuda(non_blocking=True)` on data that the
    code shows lives in pageable (non-pinned) host memory:

    - a batch of a `DataLoader` built without `pin_memory=True` (absent or
      `pin_memory=False`), or data computed from one: the batches are followed by data flow
      as DL008 follows them (`for x, y in loader`, `next(it)`, `batch[0]`, a helper of the file
      that receives the loader or the batch, a loader returned by a function of the file);
    - a fresh CPU tensor whose content the host generates: `torch.zeros/ones/empty/full/rand/
      randn/randint/randperm/arange/linspace/logspace/eye` without `device=` and without
      `pin_memory=`, and what dtype, shape and fill operations make of it, used directly or
      through the one binding that reaches the copy.

    Stays silent on pinned sources (`pin_memory=True` loaders, a factory given `pin_memory=`,
    a `.pin_memory()` on the way from the loader to the copy), on sources it cannot see
    (parameters no call site of the file explains, values from other files, loaders whose
    `pin_memory` is a variable or `**kwargs`), on data already on the device, on
    device-to-host copies (`.to("cpu", non_blocking=True)`, a different matter), and on code
    that runs only without a GPU. Also silent on host data converted with `torch.tensor`,
    `torch.as_tensor`, `torch.from_numpy`: copying such a (usually small) tensor with
    `non_blocking=True` from pageable memory is a deliberate idiom, because it skips the
    stream synchronisation a blocking copy performs (the audit found it in torchvision and
    transformers).

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

    ## Fix safety
    No automatic fix: pinning the source (`pin_memory=True`, `.pin_memory()`) costs host
    memory, and dropping `non_blocking=True` brings back the stream synchronisation of a
    blocking copy; which one is right depends on the program.
    """

    code = "DL009"
    name = "non-blocking-unpinned"
    summary = "`non_blocking=True` copy from pageable (non-pinned) memory is not asynchronous"
    message = "`non_blocking=True` copy from pageable memory ({source}) is not asynchronous"
    hint = (
        "pin the source (`pin_memory=True` on the DataLoader, `.pin_memory()`) or create "
        "it on the device"
    )
    hint_message = " (`{target}` is taken for a device from its name only)"
    tokens = ("non_blocking",)

    @staticmethod
    def gate(facts) -> bool:
        """Reported at a method call given `non_blocking=` (devicelint/gate.py)."""
        return facts.uses_keyword(("non_blocking",), ATTRIBUTE_CALL)

    def leave_Call(self, node: cst.Call) -> None:
        flag = keyword_arg(node, "non_blocking")
        if flag is None or not isinstance(node.func, cst.Attribute):
            return
        sem = self.ctx.semantic
        if sem.value(flag).literal is not True:
            return
        move = sem.batches.device_move(node)
        if move is None:
            return
        source = self._pageable_source(move.data)
        if source is None:
            return
        message = self.message.format(source=source)
        if move.hint:
            target = keyword_arg(node, "device") or (node.args[0].value if node.args[0].keyword is None else None)
            if target is not None:
                message += self.hint_message.format(target=self.ctx.code(target))
        self.report(node, message)

    def _pageable_source(self, data: cst.BaseExpression):
        """What shows `data` is in pageable memory (for the message), or None."""
        sem = self.ctx.semantic
        sources = sem.batches.sources(data)
        if sources and all(s.pinned is False and not s.pinned_on_path for s in sources):
            lines = sorted({self.ctx.position(s.loader)[0] for s in sources})
            where = self.ctx.lines_ref(lines, word="line")
            return f"a batch of the DataLoader at {where}, built without `pin_memory=True`"
        fill = dataflow.fresh_fill(sem, data)
        if fill is not None and not any(keyword_arg(part, "pin_memory") is not None for part in fill.factories):
            return f"a tensor `{sem.qualname(fill.factories[0].func)}` filled on the host at " \
                f"{self.ctx.line_ref(fill.factories[0])}"
        return None

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

    runtime = RuntimeSpec(probe=probe, watch=(Watch.MOVES,), whole_file=True, finds=(Find.PAGEABLE,))

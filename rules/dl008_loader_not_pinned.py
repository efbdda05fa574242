from __future__ import annotations

import libcst as cst

from devicelint.rule import Rule
from devicelint.rules._loaders import UNPINNED, batch_moves, loaders_of, pin_state


class LoaderNotPinned(Rule):
    """## What it does
    Flags a `torch.utils.data.DataLoader` (any import alias) built without `pin_memory=True`
    whose batches the same file visibly moves to a GPU: a `for` loop over the loader (or over
    a name or `self.` attribute bound to it, also through `enumerate`/`zip`/`tqdm`) moves
    data taken from the batch with `.to(device)` or `.cuda()` in its body. The finding is at
    the `DataLoader(...)` call.

    Stays silent on loaders whose batches are never seen going to a device, on
    `pin_memory=True`, on `pin_memory=False` written out (a deliberate choice), and when
    `pin_memory` comes from a variable, `*args` or `**kwargs` (the code does not say).

    ## Why is this bad?
    Without pinning, every batch is copied from pageable host memory: the CUDA driver
    first copies it into a pinned staging buffer, then to the GPU, and the copy cannot
    overlap with compute. With `pin_memory=True` the loader's worker thread puts batches in
    page-locked memory, the copy runs at full bus speed and `.to(device, non_blocking=True)`
    becomes truly asynchronous. Measured on an H200 (torch 2.11, this project's
    design notes): bulk host-to-device bandwidth ~50 GB/s pinned vs 15-16 GB/s pageable;
    a 10000x10000 float32 transfer 0.007 s pinned and batched vs 0.047 s pageable.
    The seeds' tutorials (seed 001 §7.7 item 5, seed 004) recommend it for every loader
    that feeds a GPU.

    ## Example
    ```python
    loader = DataLoader(dataset, batch_size=64, shuffle=True)
    for x, y in loader:
        x, y = x.to(device), y.to(device)
    ```

    ## Use instead
    ```python
    loader = DataLoader(dataset, batch_size=64, shuffle=True, pin_memory=True)
    for x, y in loader:
        x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
    ```
    Pinned memory is a limited resource: on a host short of RAM, or when batches are
    built on the GPU already, leave it off deliberately with `pin_memory=False`.
    """

    code = "DL008"
    name = "loader-not-pinned"
    summary = "DataLoader feeding a GPU without `pin_memory=True`"
    message = (
        "this DataLoader's batches are moved to the GPU but it is built without "
        "`pin_memory=True`: each batch is staged through pageable memory (about 3x slower "
        "host-to-device copies, no overlap with compute)"
    )
    tokens = ("DataLoader",)

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self.loops: list[cst.For] = []

    def visit_For(self, node: cst.For) -> None:
        self.loops.append(node)

    def leave_Module(self, node: cst.Module) -> None:
        reported: set[int] = set()
        for loop in self.loops:
            loaders = [
                call for call in loaders_of(self.ctx, loop.iter)
                if id(call) not in reported and pin_state(call) == UNPINNED
            ]
            if loaders and batch_moves(self.ctx, loop):
                for call in loaders:
                    reported.add(id(call))
                    self.report(call)

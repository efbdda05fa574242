"""Python's cyclic garbage collector, paused while one file is parsed and linted.

A file's libcst tree is hundreds of thousands of small objects built in one go, and every
one of them stays alive until the file is done. The collector is triggered by allocations,
so while the tree is built and analysed it runs again and again and re-examines objects
that cannot be garbage yet: about a quarter of a cold lint's CPU (torchvision 0.24.1,
`-j 1`: 8.3 s with the collector, 5.9 s without). Paused per file, and with the file's
objects freed by reference counting when it is done (FileContext.release breaks the
cycles that would keep them), memory stays bounded by the largest file as before.
Imports nothing of devicelint.

The program (`python -m devicelint`, the console script: devicelint.__main__.main) also
starts with the collector off (`start_up`): the modules a run imports (click, dataclasses,
typing, libcst, the runner, the rules) are objects that live until the process ends, and
the collections their allocations trigger re-examine them again and again, ~17 ms of
CPU, about a tenth of linting one small file, start-up included. When the imports are
done (`started`: the runner calls it before its first file's lint is over, or before it
forks its workers) what is alive is moved out of the collector's reach (`gc.freeze`) and
the collector runs as usual."""

from __future__ import annotations

import gc
from contextlib import contextmanager
from typing import Iterator


@contextmanager
def paused() -> Iterator[None]:
    """No cyclic collection inside the block; the collector runs as usual after it (at
    once, over what the block allocated). Nested blocks, and a collector the caller has
    switched off, are left as they are."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


_starting = False  # the collector was switched off by start_up, and started() not yet called


def start_up() -> None:
    """For the program only (a process that ends when its command does): no cyclic
    collection until `started`. Nothing when the collector is off already."""
    global _starting
    if gc.isenabled():
        gc.disable()
        _starting = True


def started() -> None:
    """The run's imports are done: everything alive now (modules, classes, functions,
    tables: kept until the process ends) is left out of every later collection, and the
    collector is switched on again. Nothing unless `start_up` switched it off."""
    global _starting
    if _starting:
        _starting = False
        gc.freeze()
        gc.enable()

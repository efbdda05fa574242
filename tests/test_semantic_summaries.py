"""sem.summary(function): what a call of a function of the file returns and does to its
arguments (devicelint/semantic/summaries.py)."""

from __future__ import annotations

import textwrap

import libcst as cst

from devicelint import safe_parse
from devicelint.context import FileContext
from devicelint.semantic import Kind, Place


def _model(source: str):
    source = textwrap.dedent(source)
    ctx = FileContext("t.py", source, safe_parse.parse_module(source))
    ctx.walk({}, {})
    functions = {f.name.value: f for f in ctx.iter_nodes(cst.FunctionDef)}
    return ctx.semantic, functions


PROGRAM = """
    import torch
    import torch.nn as nn
    from torch.utils.data import DataLoader

    device = torch.device("cuda")

    def get_loader(ds):
        return DataLoader(ds, batch_size=4)

    def get_pinned(ds):
        loader = DataLoader(ds, batch_size=4, pin_memory=True)
        return loader

    def build(width):
        model = nn.Linear(width, width)
        return model.to(device)

    def noise(n):
        return torch.randn(n, device=device)

    def place(model, batch, scale):
        model.to(device)
        batch = batch.cuda()
        return model(batch) * scale

    def accuracy(out, target):
        return (out.argmax(1) == target).sum().item()
"""


def test_returns_loader_pinned_or_not_module_moved_and_device_tensor() -> None:
    sem, fns = _model(PROGRAM)
    plain, pinned = sem.summary(fns["get_loader"]).returns, sem.summary(fns["get_pinned"]).returns
    assert plain.kind is Kind.LOADER and not plain.pinned
    assert pinned.kind is Kind.LOADER and pinned.pinned
    built = sem.summary(fns["build"]).returns
    assert built.kind is Kind.MODULE and built.place is Place.DEVICE
    made = sem.summary(fns["noise"]).returns
    assert made.kind is Kind.TENSOR and made.place is Place.DEVICE


def test_what_a_function_does_to_its_arguments() -> None:
    sem, fns = _model(PROGRAM)
    placed = sem.summary(fns["place"])
    assert placed.moves == {"model", "batch"} and placed.host_reads == frozenset()
    read = sem.summary(fns["accuracy"])
    assert read.host_reads == {"out", "target"} and read.moves == frozenset()

"""devicelint.semantic.batches: which loaders' batches which copies move to the device,
followed by data flow (not names), and the model facts it rests on (legacy CUDA tensor types,
device indices)."""

from __future__ import annotations

import textwrap

import libcst as cst

from devicelint import safe_parse
from devicelint.context import FileContext
from devicelint.semantic import Place


def model_of(source: str):
    source = textwrap.dedent(source)
    ctx = FileContext("t.py", source, safe_parse.parse_module(source))
    ctx.walk({}, {})
    return ctx, ctx.semantic


def fed_lines(source: str) -> set[tuple[int, int]]:
    """(loader line, copy line) for every loader whose batches a copy moves to the device."""
    ctx, sem = model_of(source)
    return {(ctx.position(s.loader)[0], ctx.position(m.call)[0]) for s, m in sem.batches.fed_loaders()}


def moved_place(source: str, line: int):
    ctx, sem = model_of(source)
    for call in ctx.iter_nodes(cst.Call):
        if ctx.position(call)[0] == line and isinstance(call.func, cst.Attribute) \
                and call.func.attr.value in ("to", "type"):
            return sem.value(call).place
    raise AssertionError(f"no .to/.type call on line {line}")


def test_type_with_a_cuda_tensor_type_moves_to_the_device():
    source = """
    import torch
    cuda = True if torch.cuda.is_available() else False
    Tensor = torch.cuda.FloatTensor if cuda else torch.FloatTensor
    x = torch.randn(3).type(Tensor)
    y = torch.randn(3).type(torch.float16)
    z = torch.randn(3).type("torch.cuda.LongTensor")
    """
    assert moved_place(source, 5) is Place.DEVICE
    assert moved_place(source, 6) is Place.CPU
    assert moved_place(source, 7) is Place.DEVICE


def test_device_indices_are_devices():
    source = """
    import os, torch
    rank = int(os.environ["LOCAL_RANK"])
    a = torch.randn(3).to(rank)
    b = torch.randn(3).to(torch.cuda.current_device())
    """
    assert moved_place(source, 4) is Place.DEVICE
    assert moved_place(source, 5) is Place.DEVICE


def test_batches_followed_through_helpers_and_returned_loaders():
    source = """
    import torch
    from torch.utils.data import DataLoader
    device = torch.device("cuda")

    def make(ds):
        train = DataLoader(ds)
        test = DataLoader(ds)
        return train, test

    def step(xb):
        return xb.to(device)

    def run(loader):
        for i, (xb, yb) in enumerate(loader):
            step(xb)

    def main(ds):
        train, test = make(ds)
        run(train)
        print(len(test))
    """
    assert fed_lines(source) == {(7, 12)}


def test_equal_loaders_passed_to_one_helper_are_told_apart():
    source = """
    import torch
    from torch.utils.data import DataLoader

    def evaluate(loader, device):
        for xb in loader:
            xb.to(device)

    def main(ds):
        a = DataLoader(ds, batch_size=8)
        b = DataLoader(ds, batch_size=8)
        evaluate(a, torch.device("cuda"))
        evaluate(b, torch.device("cuda"))
    """
    assert fed_lines(source) == {(10, 7), (11, 7)}


def test_next_in_a_step_loop_feeds_one_sample_batch_does_not():
    source = """
    import torch
    from torch.utils.data import DataLoader
    device = torch.device("cuda")

    def train(ds, steps):
        it = iter(DataLoader(ds))
        for _ in range(steps):
            x = next(it)
            x.to(device)

    def preview(ds):
        x = next(iter(DataLoader(ds)))
        return x.to(device)
    """
    assert fed_lines(source) == {(7, 10)}


def test_loader_object_and_names_are_not_batches():
    source = """
    import torch
    from torch.utils.data import DataLoader
    device = torch.device("cuda")

    def f(ds, loader, batches):
        real = DataLoader(ds)
        whole = real.dataset.tensors[0].to(device)
        for x in batches:
            x.to(device)
        return whole
    """
    assert fed_lines(source) == set()


def test_chained_in_place_module_moves_are_followed():
    source = """
    import torch, torch.nn as nn
    device = torch.device("cuda")
    model = nn.Linear(2, 2)
    model.to(device).to(torch.bfloat16)
    y = model(torch.randn(2, 2, device=device))
    """
    ctx, sem = model_of(source)
    call = next(c for c in ctx.iter_nodes(cst.Call)
                if isinstance(c.func, cst.Name) and c.func.value == "model")
    assert sem.value(call).place is Place.DEVICE


def test_call_sites_of_a_method_on_an_instance_give_its_parameters():
    source = """
    import torch
    class Holder:
        def move(self, target):
            return torch.zeros(2).to(target)
    h = Holder()
    h.move(torch.device("cuda"))
    """
    ctx, sem = model_of(source)
    call = next(c for c in ctx.iter_nodes(cst.Call)
                if isinstance(c.func, cst.Attribute) and c.func.attr.value == "to")
    assert sem.value(call).place is Place.DEVICE

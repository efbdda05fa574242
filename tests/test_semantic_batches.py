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


def test_a_loader_kept_on_self_is_followed_to_what_each_constructor_call_passes():
    # `self.loader = loader` in `__init__`, moved in `fit()`: each `Trainer(DataLoader(...))`
    # is a call site of `__init__`, so both loaders feed the GPU (a joined value would name
    # only one); `Counter` never moves its loader's batches.
    source = """
    import torch
    from torch.utils.data import DataLoader
    class Trainer:
        def __init__(self, loader):
            self.loader = loader
        def fit(self):
            for x in self.loader:
                x.to("cuda")
    class Counter:
        def __init__(self, loader):
            self.loader = loader
        def count(self):
            return sum(len(x) for x in self.loader)
    Trainer(DataLoader(range(4))).fit()
    Trainer(DataLoader(range(8))).fit()
    Counter(DataLoader(range(4))).count()
    """
    assert fed_lines(source) == {(15, 9), (16, 9)}
    ctx, sem = model_of(source)
    moved = sem.batches.moved_parameters()
    [init] = [f for f in ctx.iter_nodes(cst.FunctionDef)
              if f.name.value == "__init__" and id(f) in moved]
    move, iterated = moved[id(init)]["loader"]
    assert iterated and ctx.position(move.call)[0] == 9


def test_loaders_handed_to_a_class_of_another_file_are_reported_where_they_are_built():
    """fixtures/DL008/project/: data.py's `get_loader()` and main.py's own loader go, through
    main.py, to `Solver` of solver.py, which keeps them on `self` and moves their batches in
    `train()`; `Auditor` only counts. Linted as one run (the project index), the findings are
    the folder's markers, each naming the copy in solver.py."""
    from pathlib import Path

    from devicelint.runner import Overrides, lint_paths
    from tests.fixture_markers import expected_findings

    root = Path(__file__).resolve().parent.parent / "fixtures" / "DL008" / "project"
    run = lint_paths([str(root)], Overrides(), use_cache=False, jobs=1)
    found = {(Path(f.path).name, f.line, f.code) for f in run.findings}
    expected = {(p.name, line, code) for p in sorted(root.glob("*.py")) for line, code in expected_findings(p)}
    assert found == expected and ("data.py", 14, "DL008") in found
    assert all("solver.py" in f.message for f in run.findings if f.path.endswith(("data.py", "main.py")))
    # `train, held, n = get_splits(8)` in fit.py: only the part whose batches fit.py moves.
    assert ("splits.py", 13, "DL008") in found and ("splits.py", 14, "DL008") not in found
    assert all("fit.py" in f.message for f in run.findings if f.path.endswith("splits.py"))

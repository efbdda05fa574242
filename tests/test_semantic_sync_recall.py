"""Semantic model facts that let DL004 see host reads it used to miss: a parameter placed by
its default value when nothing in the file calls its function, and the part of what a
function of the file returns that it computes on the device."""

from __future__ import annotations

import textwrap

from devicelint.semantic import Kind, Place
from tests.test_semantic import value_at


def test_a_parameter_nothing_calls_is_placed_by_its_default():
    source = """
        import torch

        def gpus():
            return [torch.device(f"cuda:{i}") for i in range(2)]

        def f(a, b="cuda", c=torch.device("cpu"), d=gpus(), e=3, device="cpu", g="./data"):
            s = b  # string
            t = c  # device-call
            u = d[0]  # listed
            v = e  # number
            w = device  # named-device-on-the-host
            x = g  # path
    """
    assert value_at(source, "string").kind is Kind.DEVICE
    assert value_at(source, "string").place is Place.DEVICE
    assert value_at(source, "device-call").place is Place.CPU
    listed = value_at(source, "listed")
    assert listed.kind is Kind.DEVICE and listed.place is Place.DEVICE and not listed.hint
    assert value_at(source, "number").kind is not Kind.DEVICE
    host = value_at(source, "named-device-on-the-host")
    assert host.place is Place.CPU and not host.hint   # the default, not the name
    assert value_at(source, "path").kind is not Kind.DEVICE


def test_a_call_site_in_the_file_decides_before_the_default():
    source = """
        import torch

        def f(x, device="cpu"):
            y = device  # passed
            return x

        f(1, torch.device("cuda"))
    """
    passed = value_at(source, "passed")
    assert passed.kind is Kind.DEVICE and passed.place is Place.DEVICE


def _dl004_lines(source: str) -> list[int]:
    from devicelint.engine import lint_source
    from rules.dl004_sync_in_loop import SyncInLoop

    result = lint_source("t.py", textwrap.dedent(source), [SyncInLoop])
    return sorted(f.line for f in result.findings if f.code == "DL004")


RETURNS = """
    import torch

    def step(net, loss_fn, x, y):
        x, y = x.to(torch.device("cuda")), y.to(torch.device("cuda"))
        loss = loss_fn(net(x), y)
        loss.backward()
        return loss.sum(), y.numel()

    def fit(net, loss_fn, loader):
        for x, y in loader:
            total, seen = step(net, loss_fn, x, y)
            print(float(total))
            print(float(seen))
"""


def test_the_returned_part_of_a_function_of_the_file_is_judged_by_what_it_computes():
    # `total` is a loss computed by code the file does not show on data `step` moved to the
    # device: read per step (line 13); `seen` is a size (line 14): silent.
    assert _dl004_lines(RETURNS) == [13]


PARTIAL = """
    import functools

    def log_losses(losses):
        for key, values in losses.items():
            print(values.mean().item())

    def train(diffusion, model, loader, opt):
        for x in loader:
            x = x.cuda()
            compute = functools.partial(diffusion.training_losses, model, x)
            losses = compute()
            losses["loss"].mean().backward()
            opt.step()
            log_losses({k: v.detach() for k, v in losses.items()})
            log_losses({k: v.detach().item() for k, v in losses.items()})
"""


def test_a_partial_of_unseen_code_on_device_data_gives_device_values_and_a_dict_comprehension_keeps_them():
    # Line 15: the mapping's values are what the partial computed on `x` (on the device);
    # line 16: its values were read on the host already (one read per key, reported as such
    # on that line by the comprehension's own `.item()`, not through the helper).
    lines = _dl004_lines(PARTIAL)
    assert 15 in lines
    from devicelint.engine import lint_source
    from rules.dl004_sync_in_loop import SyncInLoop

    result = lint_source("t.py", textwrap.dedent(PARTIAL), [SyncInLoop])
    on_16 = [f.message for f in result.findings if f.line == 16]
    assert on_16 and all("log_losses" not in m for m in on_16)


def test_a_submodule_of_a_module_class_of_another_file_is_on_its_parents_device():
    """fixtures/DL004/project/: `model.out(hidden)` with `self.out = nn.Linear(...)` in
    translator.py is a module output on the device; `model.scores(...)`, a plain method
    there, is not assumed to be. Linted as one run (the project index), the findings are
    the folder's markers."""
    from pathlib import Path

    from devicelint.runner import Overrides, lint_paths
    from tests.fixture_markers import expected_findings

    root = Path(__file__).resolve().parent.parent / "fixtures" / "DL004" / "project"
    run = lint_paths([str(root)], Overrides(), use_cache=False, jobs=1)
    found = {(Path(f.path).name, f.line, f.code) for f in run.findings}
    expected = {(p.name, line, code) for p in sorted(root.glob("*.py")) for line, code in expected_findings(p)}
    assert found == expected and ("bad_decode.py", 16, "DL004") in found


def test_a_loop_over_a_loader_with_a_decoding_loop_inside_is_a_step_loop():
    import libcst as cst

    from tests.test_semantic import model_of

    ctx, sem = model_of("""
        import torch
        net = torch.nn.Linear(4, 4).to("cuda")
        loader = torch.utils.data.DataLoader(range(8), batch_size=2)
        for x in loader:
            h = x.cuda()
            for _ in range(5):
                h = net(h)
        for epoch in range(3):
            for x in range(4):
                h = net(torch.zeros(4, device="cuda") + x)
    """)
    roles = [sem.loops.role(loop) for loop in ctx.iter_nodes(cst.For)]
    assert roles == ["step", "step", "epoch", "step"]


def test_max_min_sorted_compare_their_operands_on_the_host():
    import libcst as cst

    from tests.test_semantic import model_of

    ctx, sem = model_of("""
        import torch
        scores = [torch.ones((), device="cuda")]
        a = max(scores)
        b = min(scores[0], 1.0)
        c = sorted(scores, reverse=True)
    """)
    reads = {}
    for call in ctx.iter_nodes(cst.Call):
        if isinstance(call.func, cst.Name):
            reads.setdefault(ctx.position(call)[0], []).extend(r.what for r in sem.syncs.reads(call))
    assert reads[4] == ["`max()` comparing tensors"]
    assert reads[5] == ["`min()` comparing tensors"] * 2      # each operand
    assert reads[6] == ["`sorted()` comparing tensors"]       # not the keyword
    ctx, sem = model_of("""
        import torch
        def max(*xs):
            return xs[0]
        d = max([torch.ones((), device="cuda")])
    """)
    [own] = [c for c in ctx.iter_nodes(cst.Call)
             if isinstance(c.func, cst.Name) and c.func.value == "max"]
    assert sem.syncs.reads(own) == []                         # the file's own `max`


FORWARD = """
    import torch
    import torch.nn as nn

    class Tagger(nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = nn.Linear(4, 3)

        def forward(self, x, lengths):
            if x.is_cuda and x.size(0) > 1:
                x = x.contiguous()
            return self.proj(x[:, : max(lengths.tolist())])

    def run(net, x, lengths):
        net.eval()
        return net(x, lengths)

    def main(checkpoint):
        if checkpoint:
            tagger = torch.load(checkpoint)
        else:
            tagger = Tagger()
        tagger = tagger.cuda()
        run(tagger, torch.ones(2, 4, device="cuda"), torch.ones(2, device="cuda"))
"""


def test_a_module_call_runs_the_forward_of_the_only_class_its_bindings_construct():
    import libcst as cst

    from tests.test_semantic import model_of

    ctx, sem = model_of(FORWARD)
    calls = {ctx.code(c).split("(")[0]: c for c in ctx.iter_nodes(cst.Call)}
    # `net` <- the call site's `tagger` <- `.cuda()` of `torch.load(...)` (no class shown)
    # or of `Tagger()`: the one class shown
    model, forward = sem.syncs.module_forward(calls["net"])
    assert model is sem and forward.name.value == "forward"
    # what `forward` reads on the host: the lengths (`.tolist()`), not `x.is_cuda`,
    # `x.size(0)` (metadata) nor `max()` of the host list `.tolist()` gave
    reads = sem.syncs.summary(forward)
    assert [r.what for r in reads] == ["`.tolist()`"] and reads[0].params == frozenset({"lengths"})
    [read] = sem.syncs.call_reads(calls["net"], lambda arg: True)
    assert read.what == "`.tolist()`"


def test_isinstance_names_the_class_whose_method_a_call_runs():
    import libcst as cst

    from tests.test_semantic import model_of

    ctx, sem = model_of("""
        class Sampler:
            def update(self, losses):
                pass

        class LossAware(Sampler):
            def update(self, losses):
                return [x.item() for x in losses]

        def step(sampler, other, losses):
            if isinstance(sampler, LossAware):
                sampler.update(losses)
                other.update(losses)
            else:
                sampler.update(losses)
    """)
    calls = [c for c in ctx.iter_nodes(cst.Call)
             if isinstance(c.func, cst.Attribute) and c.func.attr.value == "update"]
    narrowed, other, otherwise = calls
    model, method = sem.syncs.narrowed_method(narrowed)
    assert model is sem and ctx.position(method)[0] == 7      # LossAware.update
    assert sem.syncs.narrowed_method(other) is None           # another object
    assert sem.syncs.narrowed_method(otherwise) is None       # the `else:` arm
    [read] = sem.syncs.call_reads(narrowed, lambda arg: True)
    assert read.what == "`.item()`" and read.params == frozenset({"losses"})

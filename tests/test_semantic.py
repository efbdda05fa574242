"""The semantic model: bindings and reaching definitions, values, guards, shapes.

The view-stride rule is checked against torch itself on random shapes and permutations."""

from __future__ import annotations

import itertools
import random
import textwrap

import libcst as cst
import pytest

from devicelint import safe_parse
from devicelint.context import FileContext
from devicelint.semantic import Kind, Origin, Place
from devicelint.semantic.shapes import (
    FAILS, MAYBE, OK, REST, contiguous_strides, view_outcome, view_shape, view_strides,
)


def model_of(source: str):
    source = textwrap.dedent(source)
    ctx = FileContext("t.py", source, safe_parse.parse_module(source))
    ctx.walk({}, {})
    return ctx, ctx.semantic


def value_at(source: str, marker: str):
    """The value of the expression assigned on the line ending with `# <marker>`, or the
    call on that line."""
    ctx, sem = model_of(source)
    for node in ctx.iter_nodes(cst.SimpleStatementLine):
        text = ctx.code(node)
        if text.rstrip().endswith(f"# {marker}"):
            small = node.body[0]
            expr = small.value if isinstance(small, (cst.Assign, cst.Expr, cst.Return)) else None
            assert expr is not None
            return sem.value(expr)
    raise AssertionError(f"no line marked {marker}")


def test_if_else_arms_join():
    source = """
    import torch
    def f(flag, device):
        if flag:
            x = torch.zeros(3).to(device)
        else:
            x = torch.ones(3).cuda()
        y = x  # here
    """
    assert value_at(source, "here").place is Place.DEVICE
    mixed = source.replace("torch.ones(3).cuda()", "torch.ones(3)")
    assert value_at(mixed, "here").place is Place.UNKNOWN


def test_loop_carried_binding_reaches_the_top_of_the_body():
    source = """
    import torch
    def f(device):
        x = torch.zeros(3)
        for _ in range(3):
            y = x  # here
            x = x.to(device)
    """
    assert value_at(source, "here").place is Place.UNKNOWN  # CPU on the first pass, GPU later


def test_return_ends_a_path():
    source = """
    import torch
    def f(device, flag):
        x = torch.zeros(3)
        if flag:
            x = x.to(device)
        else:
            return None
        y = x  # here
    """
    assert value_at(source, "here").place is Place.DEVICE


def test_comprehension_is_its_own_scope():
    source = """
    import torch
    x = torch.zeros(3).cuda()
    rows = [x for x in range(3)]
    y = x  # here
    """
    assert value_at(source, "here").place is Place.DEVICE


def test_global_statement_binds_in_the_module():
    source = """
    import torch
    model = None
    def setup(device):
        global model
        model = torch.nn.Linear(2, 2).to(device)
    def use():
        return model  # here
    """
    value = value_at(source, "here")
    assert value.kind is Kind.MODULE and value.place is Place.DEVICE


def test_shadowed_import_is_not_torch():
    source = """
    import torch
    def f(torch):
        y = torch.zeros(3)  # here
    """
    assert value_at(source, "here").kind is Kind.UNKNOWN


def test_module_moved_in_place_by_a_statement():
    source = """
    import torch.nn as nn
    net = nn.Linear(4, 2)
    net.to("cuda")
    out = net  # here
    """
    value = value_at(source, "here")
    assert value.kind is Kind.MODULE and value.place is Place.DEVICE


def test_module_moved_in_place_by_an_assignment_of_its_move():
    # nn.Module.to returns the module itself: `m = model.to(device)` moves `model` too.
    source = """
    import torch
    import torch.nn as nn
    model = nn.Linear(4, 2)
    m = model.eval().to("cuda")
    out = model  # here
    rows = torch.zeros(3)
    copy = rows.to("cuda")
    back = rows  # there
    def later():
        return model  # later
    """
    value = value_at(source, "here")
    assert value.kind is Kind.MODULE and value.place is Place.DEVICE
    assert value_at(source, "later").place is Place.DEVICE
    # A tensor's `.to` returns a copy: the tensor stays where it was, and its binding still reaches.
    ctx, sem = model_of(source)
    back = value_at(source, "there")
    assert back.kind is Kind.TENSOR and back.place is Place.CPU
    read = next(n for n in ctx.iter_nodes(cst.Name) if n.value == "rows" and "back" in ctx.code(ctx.parent(ctx.parent(n))))
    assert [d.kind for d in sem.defs(read)] == ["assign"]
    # A dtype-only `.to` moves nothing.
    dtype_only = source.replace('model.eval().to("cuda")', "model.to(torch.float64)")
    assert value_at(dtype_only, "here").place is Place.CPU


def test_parameter_takes_what_every_call_site_passes():
    source = """
    import torch
    from torch.utils.data import DataLoader
    def evaluate(m, loader, dev):
        for batch in loader:
            b = batch  # here
        return m
    net = torch.nn.Sequential(torch.nn.Linear(2, 2)).to("cuda")
    evaluate(net, DataLoader([1, 2]), "cuda")
    """
    assert value_at(source, "here").origin is Origin.BATCH


def test_annotations_are_facts():
    source = """
    import torch
    from typing import Optional
    def f(m: Optional[torch.nn.Module], t: "torch.Tensor"):
        a = m  # here
        b = t  # there
    """
    assert value_at(source, "here").kind is Kind.MODULE
    assert value_at(source, "there").kind is Kind.TENSOR


def test_rows_of_host_data_and_batches_of_a_loader():
    source = """
    import numpy as np
    import torch
    from torch.utils.data import DataLoader
    data = np.zeros((8, 3))
    for i, row in enumerate(data):
        r = row  # row
    for j in range(len(data)):
        s = torch.from_numpy(data)[j]  # indexed
    for x, y in DataLoader(data):
        z = x  # batch
    """
    assert value_at(source, "row").origin is Origin.ROW
    assert value_at(source, "indexed").origin is Origin.ROW
    assert value_at(source, "batch").origin is Origin.BATCH


def test_cpu_only_branches_are_off_the_gpu_path():
    source = """
    import torch
    use_cuda = torch.cuda.is_available()
    device = torch.device("cuda" if use_cuda else "cpu")
    x = torch.zeros(3)
    if not use_cuda:
        a = x.numpy()  # cpu-only
    if device.type == "cpu":
        b = x.numpy()  # cpu-type
    c = x.numpy()  # always
    """
    ctx, sem = model_of(source)
    found = {}
    for node in ctx.iter_nodes(cst.SimpleStatementLine):
        text = ctx.code(node).strip()
        if "#" in text:
            found[text.rsplit("# ", 1)[1]] = sem.on_gpu_path(node)
    assert found == {"cpu-only": False, "cpu-type": False, "always": True}


def test_dtype_only_to_keeps_the_place():
    source = """
    import torch
    x = torch.zeros(3).to(torch.float16)  # here
    """
    assert value_at(source, "here").place is Place.CPU


def test_rank_through_matmul_scalar_softmax():
    source = """
    import torch
    import torch.nn.functional as F
    def f(q, k, v, B, T, H, D):
        q = q.view(B, T, H, D).transpose(1, 2)
        k = k.view(B, T, H, D).transpose(1, 2)
        att = F.softmax((q @ k.transpose(-2, -1)) * 0.125, dim=-1)
        y = att @ v.view(B, T, H, D).transpose(1, 2)
        z = y.transpose(1, 2)  # here
    """
    value = value_at(source, "here")
    assert value.rank == 4 and value.layout.state == "permuted"
    assert view_outcome(value, ("B", "T", "C")) == FAILS


@pytest.mark.parametrize("seed", range(4))
def test_view_stride_rule_agrees_with_torch(seed):
    import torch  # in the dev extra: a broken install must fail, not skip

    rng = random.Random(seed)
    checked = 0
    for _ in range(150):
        rank = rng.randint(1, 4)
        shape = tuple(rng.choice((1, 2, 3, 4)) for _ in range(rank))
        perm = list(range(rank))
        rng.shuffle(perm)
        base = torch.zeros(shape)
        x = base.permute(*perm)
        strides = tuple(contiguous_strides(shape)[k] for k in perm)
        assert strides == x.stride()
        numel = x.numel()
        divisors = [d for d in range(1, numel + 1) if numel % d == 0]
        for _ in range(4):
            first = rng.choice(divisors)
            new = (first, numel // first) if rng.random() < 0.6 else (numel,)
            try:
                x.view(new)
                works = True
            except RuntimeError:
                works = False
            ours = view_strides(tuple(x.shape), strides, new)
            assert (ours is not None) == works, (shape, perm, new)
            if works:
                assert ours == x.view(new).stride()
            checked += 1
    assert checked == 600


def test_view_outcome_on_literal_seed_example():
    ctx, sem = model_of("""
    import torch
    t = torch.arange(12).reshape(3, 4).transpose(0, 1)
    """)
    node = next(ctx.iter_nodes(cst.Assign)).value
    value = sem.value(node)
    assert value.shape == (4, 3)
    assert view_outcome(value, (6, 2)) == FAILS
    assert view_outcome(value, (4, 3)) == OK


def test_starred_view_sizes_are_undecided_unless_a_shown_size_merges():
    # `view(B, C, *size)` (timm's Twins): how many sizes `size` holds is not in the code, so
    # whether the view merges what the transpose separated cannot be told (silence); a shown
    # product (`B * T`) does merge, as without the star.
    ctx, sem = model_of("""
    import torch
    def f(x, y, size, B, C, T):
        a = x.transpose(1, 2).view(B, C, *size)
        b = y.transpose(1, 2).view(B * T, *size)
        c = x.t().view(*size)
    """)
    calls = [node.value for node in ctx.iter_nodes(cst.Assign)]
    outcomes = [view_outcome(sem.value(call.func.value), view_shape(call, sem)) for call in calls]
    assert outcomes == [OK, MAYBE, OK]
    assert view_shape(calls[0], sem) == ("B", "C", REST)
    assert view_shape(calls[1], sem) == ("B * T", REST)


def test_api_table_has_no_duplicates_and_loads():
    from devicelint.semantic.api import torch_api

    table = torch_api()
    assert table.method("item").syncs and table.method("view").rank == "view-args"
    assert table.function("torch.cat").place == "input"
    for spec in itertools.chain(table.methods.values(), table.functions.values()):
        assert spec.result in {"tensor", "number", "bool", "array", "host-list", "device",
                               "dtype", "size", "tensors", "packed", "same", "none"}


def test_a_list_built_of_host_samples_holds_rows():
    source = """
    import torch
    import torch.nn as nn
    images = [torch.randn(8) for _ in range(6)]
    for img in images:
        a = img  # sample
    heads = [nn.Linear(4, 2) for _ in range(3)]
    for head in heads:
        b = head  # module
    moved = [torch.randn(8).to("cuda") for _ in range(3)]
    for m in moved:
        c = m  # moved
    """
    assert value_at(source, "sample").origin is Origin.ROW
    assert value_at(source, "sample").place is Place.CPU
    assert value_at(source, "module").origin is Origin.NONE
    assert value_at(source, "moved").origin is Origin.NONE


def test_nested_host_lists_yield_rows_and_tuples_of_fields_do_not():
    source = """
    import torch
    samples = [[1, 2, 3], [4, 5, 6]]
    for s in samples:
        a = s  # row
    for k in range(2):
        b = samples[k]  # indexed
    pairs = [(torch.zeros(2), torch.ones(2))]
    for p in pairs:
        c = p  # fields
    """
    assert value_at(source, "row").origin is Origin.ROW
    assert value_at(source, "indexed").origin is Origin.ROW
    assert value_at(source, "fields").origin is Origin.NONE


def test_pieces_of_a_split_are_chunks_not_rows():
    source = """
    import torch
    big = torch.randn(1000, 8)
    for chunk in big.split(256):
        a = chunk  # chunk
    for part in torch.chunk(big, 4):
        b = part  # part
    for r in big.unbind(0):
        c = r  # row
    for chunk in big.split(256):
        d = chunk[0]  # row of a chunk
    """
    assert value_at(source, "chunk").origin is Origin.CHUNK
    assert value_at(source, "part").origin is Origin.CHUNK
    assert value_at(source, "row").origin is Origin.ROW
    assert value_at(source, "row of a chunk").origin is Origin.ROW


def test_instances_of_the_files_dataset_classes_are_datasets():
    source = """
    import torch
    from torch.utils.data import Dataset
    class Points(Dataset):
        def __getitem__(self, i):
            return torch.zeros(4)
    class MorePoints(Points):
        pass
    class Plain:
        pass
    ds = MorePoints()
    x = ds  # dataset
    y = ds[3]  # sample
    z = Plain()  # plain
    """
    assert value_at(source, "dataset").kind is Kind.DATASET
    assert value_at(source, "sample").origin is Origin.ROW
    assert value_at(source, "plain").kind is Kind.UNKNOWN


def test_a_tensor_of_unknown_origin_is_taken_as_contiguous():
    # No call site, no annotation: `.transpose` shows a tensor; nothing upstream permutes it.
    source = """
    def merge(y, B, T):
        z = y.transpose(1, 2)  # here
    """
    value = value_at(source, "here")
    assert value.kind is Kind.TENSOR and value.layout.state == "permuted"
    assert view_outcome(value, ("B", "T", -1)) != OK


def _loop_and_call(source: str, text: str):
    ctx, sem = model_of(source)
    call = next(c for c in ctx.iter_nodes(cst.Call) if ctx.code(c) == text)
    return ctx, sem, ctx.loops(call)[0], call


def test_dataflow_invariant_in_a_loop():
    from devicelint.semantic import dataflow

    source = """
    import numpy as np
    import torch
    w = torch.randn(4)
    table = [0.1, 0.2]
    buf = torch.zeros(4)
    for step in range(3):
        a = w.to("cuda")
        b = torch.tensor(table).to("cuda")
        c = torch.randn(4).to("cuda")
        d = (w * step).to("cuda")
        buf.add_(1)
        e = buf.to("cuda")
        f = torch.tensor(float("-inf")).to("cuda")
    """
    ctx, sem, loop, _ = _loop_and_call(source, 'w.to("cuda")')
    receivers = {ctx.code(c.func.value): c.func.value for c in ctx.iter_nodes(cst.Call)
                 if isinstance(c.func, cst.Attribute) and c.func.attr.value == "to"}
    assert dataflow.invariant(sem, receivers["w"], loop)
    assert dataflow.invariant(sem, receivers["torch.tensor(table)"], loop)
    assert dataflow.invariant(sem, receivers['torch.tensor(float("-inf"))'], loop)
    assert not dataflow.invariant(sem, receivers["torch.randn(4)"], loop)  # random
    assert not dataflow.invariant(sem, receivers["(w * step)"], loop)  # bound in the loop
    assert not dataflow.invariant(sem, receivers["buf"], loop)  # changed in place


def test_dataflow_changes_in_place():
    from devicelint.semantic import dataflow

    source = """
    import torch
    xs = []
    t = torch.zeros(3)
    n = 3
    for i in range(3):
        xs.append(i)
        t[0] = i
        helper(t, n)
        print(xs)
    """
    ctx, sem = model_of(source)
    loop = next(ctx.iter_nodes(cst.For))
    names = {n.value: n for n in ctx.iter_nodes(cst.Name) if ctx.position(n)[0] == 9}
    kinds = lambda name: sorted(kind for kind, _ in dataflow.changes(sem, name, loop))  # noqa: E731
    xs = next(n for n in ctx.iter_nodes(cst.Name) if n.value == "xs" and ctx.position(n)[0] == 7)
    assert kinds(xs) == ["method"]  # append; print only reads it
    t = next(n for n in ctx.iter_nodes(cst.Name) if n.value == "t" and ctx.position(n)[0] == 9)
    assert kinds(t) == ["escape", "store"]  # t[0] = i, and an unknown helper may change it
    assert kinds(names["n"]) == []  # a number cannot change in place


def test_dataflow_data_nodes_follow_data_not_metadata():
    from devicelint.semantic import dataflow

    source = """
    import torch
    rows = torch.randn(8, 4)
    tokens = [1]
    for i in range(8):
        r = rows[i]
        h = torch.ones(r.shape[0])
        x = torch.tensor(tokens)
        tokens.append(int(x.sum()))
        moved = (r + h).to("cuda")
    """
    ctx, sem, loop, call = _loop_and_call(source, '(r + h).to("cuda")')
    seen = {ctx.code(node) for node, _ in dataflow.data_nodes(sem, call.func.value, loop)}
    assert "rows[i]" in seen  # through the binding of r inside the loop
    assert "r.shape[0]" not in seen and "r.shape" not in seen  # a size, not data
    upload = next(c for c in ctx.iter_nodes(cst.Call) if ctx.code(c) == "torch.tensor(tokens)")
    plain = {ctx.code(node) for node, _ in dataflow.data_nodes(sem, upload, loop)}
    grown = {ctx.code(node) for node, _ in dataflow.data_nodes(sem, upload, loop, through_changes=True)}
    assert "int(x.sum())" not in plain and "int(x.sum())" in grown


# -- fresh host fills (dataflow.fresh_fill) and the reads a binding reaches (dataflow.uses) --

def _move_receiver(source: str, marker: str):
    ctx, sem = model_of(source)
    for call in ctx.iter_nodes(cst.Call):
        if isinstance(call.func, cst.Attribute) and call.func.attr.value == "to" \
                and f"# {marker}" in ctx.source.splitlines()[ctx.position(call)[0] - 1]:
            return ctx, sem, call.func.value
    raise AssertionError(marker)


@pytest.mark.parametrize("expr, ops", [
    ("torch.ones(1, 1).fill_(s).type(torch.long)", ("type", "fill_")),
    ("torch.arange(n).unsqueeze(0).repeat(b, 1)", ("repeat", "unsqueeze")),
    ("torch.exp(-math.log(p) * torch.arange(n, dtype=torch.float32) / n)", ("arith", "arith", "torch.exp")),
    ("torch.stack([torch.zeros(n) for _ in range(4)])", ("torch.stack",)),
    ("torch.Tensor(n, n).fill_(1 / n)", ("fill_",)),
    ("(torch.zeros(n) + 1).bool()", ("bool", "arith")),
    # a fill compared with a fill (SimCLR's label matrix): a mask of sizes alone
    ("(torch.arange(n).unsqueeze(0) == torch.arange(n).unsqueeze(1)).float()",
     ("float", "unsqueeze", "compare", "unsqueeze")),
])
def test_fresh_fill_follows_conversions_shapes_and_arithmetic(expr, ops) -> None:
    from devicelint.semantic import dataflow

    source = f"import math\nimport torch\nn = b = s = p = 3\ny = ({expr}).to('cuda')  # here\n"
    ctx, sem, receiver = _move_receiver(source, "here")
    fill = dataflow.fresh_fill(sem, receiver)
    assert fill is not None and fill.ops == ops and not fill.through


@pytest.mark.parametrize("expr", [
    "torch.tensor(data)", "torch.zeros(n) + data", "torch.Tensor(data)", "torch.zeros(n, device='cuda')",
    "torch.zeros(n).masked_fill(data > 0, 1)", "torch.ones(n).type(torch.cuda.FloatTensor)",
    "torch.zeros(n) @ torch.zeros(n)", "torch.arange(n) == data",
])
def test_fresh_fill_refuses_other_data(expr) -> None:
    from devicelint.semantic import dataflow

    source = f"import torch\nn = 3\ndata = torch.tensor([1.0, 2.0])\ny = ({expr}).to('cuda')  # here\n"
    _, sem, receiver = _move_receiver(source, "here")
    assert dataflow.fresh_fill(sem, receiver) is None


@pytest.mark.parametrize("expr, ops", [
    # a shape taken from another tensor; a tuple of numbers given as a shape
    ("torch.rand(n, 1).expand_as(data)", ("expand_as",)),
    ("torch.arange(n).view((1, n, 1))", ("view",)),
    # a CPU legacy tensor type converts on the host
    ("torch.tril(torch.ones(n, n)).type(torch.ByteTensor)", ("type", "torch.tril")),
    # a constructor whose every element a fill writes, whatever its one argument is
    ("torch.LongTensor(rows).fill_(0)", ("fill_",)),
    ("torch.LongTensor(k).random_(10)", ("random_",)),
    # `half` is also given to the factory as a size: a number
    ("torch.arange(0, half) / half", ("arith",)),
])
def test_fresh_fill_shapes_types_overwrites_and_sizes(expr, ops) -> None:
    from devicelint.semantic import dataflow

    source = ("import torch\ndef f(n, k, rows, dim, data):\n    half = dim // 2\n"
              f"    y = ({expr}).to('cuda')  # here\n")
    ctx, sem, receiver = _move_receiver(source, "here")
    fill = dataflow.fresh_fill(sem, receiver)
    assert fill is not None and fill.ops == ops


@pytest.mark.parametrize("expr", [
    "torch.LongTensor(rows)", "torch.arange(0, n) / dim",
    "torch.zeros(n).type(torch.cuda.FloatTensor)",
])
def test_fresh_fill_refuses_data_shapes_and_unknown_divisors(expr) -> None:
    from devicelint.semantic import dataflow

    source = f"import torch\ndef f(n, rows, dim, data):\n    y = ({expr}).to('cuda')  # here\n"
    _, sem, receiver = _move_receiver(source, "here")
    assert dataflow.fresh_fill(sem, receiver) is None


def test_fresh_fill_through_an_unpacked_fill_not_a_display() -> None:
    from devicelint.semantic import dataflow

    source = """
    import torch
    def f(nx, ny, data):
        yv, xv = torch.meshgrid([torch.arange(ny), torch.arange(nx)], indexing="ij")
        a = torch.stack((xv, yv), 2).to("cuda")  # grid
        ones, extra = torch.ones(nx), data
        b = ones.to("cuda")  # display
    """
    _, sem, grid = _move_receiver(source, "grid")
    assert dataflow.fresh_fill(sem, grid) is not None
    _, sem, display = _move_receiver(source, "display")
    assert dataflow.fresh_fill(sem, display) is None


def test_reads_only_metadata() -> None:
    from devicelint.semantic import dataflow

    source = """
    import torch
    t = torch.zeros(3)
    a = t is None
    b = t is not None
    c = t.shape
    d = t.size(0)
    e = len(t)
    f = t.sum()
    g = t == None
    h = print(t)
    """
    ctx, sem = model_of(source)
    reads = [n for n in ctx.iter_nodes(cst.Name) if n.value == "t" and ctx.position(n)[0] > 3]
    assert [dataflow.reads_only_metadata(sem, n) for n in reads] == [True] * 5 + [False] * 3


def test_fresh_fill_through_one_binding_and_uses() -> None:
    from devicelint.semantic import dataflow

    source = """\
    import torch
    def f(n, flag):
        z = torch.randn(n, 2)
        z = z.bool()
        if flag:
            z = z.to("cuda")  # here
        return z
    """
    _, sem, receiver = _move_receiver(textwrap.dedent(source), "here")
    fill = dataflow.fresh_fill(sem, receiver)
    assert fill is not None and [n.value for n, _ in fill.through] == ["z", "z"]
    late = fill.through[0][1]            # `z = z.bool()`: read by the move and by `return z`
    assert [u.value for u in dataflow.uses(sem, late)] == ["z", "z"]
    first = fill.through[1][1]           # `z = torch.randn(...)`: read by `z.bool()` only
    assert len(dataflow.uses(sem, first)) == 1
    assert dataflow.fresh_fill(sem, receiver, depth=0) is None


def test_uses_are_reads_of_the_variable_not_attributes_or_parameters_of_its_name() -> None:
    from devicelint.semantic import dataflow

    source = """\
    import torch
    def f(x, a):
        zeros = torch.zeros(a.size(0))
        a = torch.ones(3)
        if x.is_cuda:
            zeros = zeros.cuda()  # here
        return zeros + a, g(zeros=1)
    """
    _, sem, receiver = _move_receiver(textwrap.dedent(source).replace(".cuda()", ".to('cuda')"), "here")
    fill = dataflow.fresh_fill(sem, receiver)
    first = fill.through[0][1]           # `zeros = torch.zeros(...)`
    # the move's receiver and `zeros + a`: not `torch.zeros`' attribute, nor the keyword `zeros=`
    assert [sem.ctx.position(u)[0] for u in dataflow.uses(sem, first)] == [6, 7]
    ctx = sem.ctx
    a_def = next(d for node in ctx.iter_nodes(cst.Name) if node.value == "a"
                 for d in sem.defs(node) if d.kind == "assign")
    # `def f(x, a)`'s own `a` is no read of the binding `a = torch.ones(3)`
    assert [ctx.position(u)[0] for u in dataflow.uses(sem, a_def)] == [7]


def test_fresh_fill_through_the_bindings_of_both_arms() -> None:
    from devicelint.semantic import dataflow

    source = """\
    import torch
    def f(n, smooth, labels):
        if smooth:
            t = torch.ones(n) * 0.9
        else:
            t = torch.ones(n)
        return t.to("cuda")  # here
    """
    _, sem, receiver = _move_receiver(textwrap.dedent(source), "here")
    fill = dataflow.fresh_fill(sem, receiver)
    assert fill is not None and len(fill.factories) == 2 and len(fill.through) == 2
    # One arm that carries data: the copy is needed.
    data = textwrap.dedent(source).replace("t = torch.ones(n)\n", "t = torch.tensor(labels)\n")
    _, sem, receiver = _move_receiver(data, "here")
    assert dataflow.fresh_fill(sem, receiver) is None


def test_a_loop_over_literal_devices_has_a_gpu_pass() -> None:
    source = """\
    import torch
    for d in ["cpu", "cuda"]:
        a = torch.zeros(2).to(d)  # gpu
    for d in ("cpu", torch.device("cpu")):
        b = torch.zeros(2).to(d)  # host
    for d in ["cpu", mystery]:
        c = torch.zeros(2).to(d)  # unknown
    """
    assert value_at(source, "gpu").place is Place.DEVICE
    assert value_at(source, "host").place is Place.CPU
    assert value_at(source, "unknown").place is Place.UNKNOWN


def test_is_cuda_of_a_tensor_on_the_device_is_true_with_a_gpu() -> None:
    source = """\
    import torch
    import torch.nn as nn
    net = nn.Linear(2, 2).to("cuda")
    host = nn.Linear(2, 2)
    target = "cuda" if net.weight.is_cuda else "cpu"
    a = torch.zeros(2).to(target)  # moved
    other = "cuda" if host.weight.is_cuda else "cpu"
    b = torch.zeros(2).to(other)  # unknown
    """
    assert value_at(source, "moved").place is Place.DEVICE
    assert value_at(source, "unknown").place is Place.UNKNOWN


def test_device_facts_from_api_not_names() -> None:
    source = """\
    import torch
    def f(x, rank: int):
        a = torch.zeros(2).to(x.device)
        b = torch.zeros(2).to(rank)
        n, m = x.shape
        dev = torch.accelerator.current_accelerator()
        return a, b, n, dev
    """
    ctx, sem = model_of(source)
    moves = [c for c in ctx.iter_nodes(cst.Call) if isinstance(c.func, cst.Attribute) and c.func.attr.value == "to"]
    assert [sem.device_place(m.args[0].value) for m in moves] == [(Place.DEVICE, False)] * 2
    ret = next(ctx.iter_nodes(cst.Return))
    values = [sem.value(e.value) for e in ret.value.elements]
    assert values[2].kind is Kind.NUMBER and values[3].kind is Kind.DEVICE


def test_fresh_fill_into_a_function_of_the_file() -> None:
    from devicelint.semantic import dataflow

    source = """\
    import torch
    def causal(size):
        mask = (torch.triu(torch.ones(size, size)) == 1).transpose(0, 1)
        return mask.float().masked_fill(mask == 0, float("-inf"))
    def with_data(size, bias):
        return torch.ones(size) + bias
    def recursive(n):
        return recursive(n - 1)
    a = causal(4).to("cuda")  # here
    """
    _, sem, receiver = _move_receiver(textwrap.dedent(source), "here")
    fill = dataflow.fresh_fill(sem, receiver)
    assert fill is not None and [c.func.value for c in fill.calls] == ["causal"]
    for name in ("with_data(4, torch.tensor([1.0]))", "recursive(3)"):
        other = textwrap.dedent(source).replace('causal(4).to("cuda")', f'{name}.to("cuda")')
        _, sem, receiver = _move_receiver(other, "here")
        assert dataflow.fresh_fill(sem, receiver) is None, name


def test_variable_is_the_tensor_it_wraps():
    source = """
    import torch
    from torch.autograd import Variable
    x = Variable(torch.ones(3).cuda())  # here
    """
    value = value_at(source, "here")
    assert value.kind is Kind.TENSOR and value.place is Place.DEVICE


def test_a_factory_given_an_unknown_tensors_size_has_unknown_rank():
    source = """
    import torch
    def f(x):
        return torch.rand(x.size())  # here
    """
    value = value_at(source, "here")
    assert value.kind is Kind.TENSOR and value.rank is None


def test_size_without_a_dimension_is_the_shape():
    source = """
    import torch
    x = torch.ones(2, 3)
    n = x.size(0)
    y = torch.zeros(x.size())  # here
    """
    assert value_at(source, "here").shape == (2, 3)


def test_min_rank_from_what_the_code_reads_and_what_keeps_rank():
    """`shapes.min_rank`: a lower bound on a tensor's dimensions where the rank itself is
    unknown: a read of `x.shape[k]` / `x.size(k)` of the same binding, a loader batch, and
    through what keeps its input's rank (`.type`, `Variable`, `.data`, `.to`,
    `torch.rand(x.size())`)."""
    from devicelint.semantic import shapes

    source = """
    import torch
    from torch.autograd import Variable
    def f(a, b, c, ds, T):
        loader = torch.utils.data.DataLoader(ds, batch_size=8)
        n = a.shape[0]
        m = b.size(-2)
        s = b.shape
        one = torch.rand(a.size())  # sized
        two = torch.rand(b.size())  # sized2
        none = torch.rand(c.size())  # unsized
        for imgs, _ in loader:
            x = Variable(imgs.type(T)).data  # batch
    """
    ctx, sem = model_of(source)
    ranks = {}
    for node in ctx.iter_nodes(cst.SimpleStatementLine):
        text = ctx.code(node).rstrip()
        if "#" in text:
            ranks[text.rsplit("# ", 1)[1]] = shapes.min_rank(sem, node.body[0].value)
    assert ranks == {"sized": 1, "sized2": 2, "unsized": 0, "batch": 1}


_DEEP = """
import math
import torch
import torch.nn as nn
import torch.nn.functional as F


class Blur(nn.Module):
    def __init__(self, channels=3, size=11, average=True):
        super().__init__()
        self.channels = channels
        self.size = size
        self.average = average

    def gaussian(self, size, sigma):
        kernel = torch.tensor([math.exp((x - size // 2) ** 2 / (2 * sigma ** 2)) for x in range(size)])
        return kernel / kernel.sum()

    def window(self, size, channels):
        one = self.gaussian(size, 1.5).unsqueeze(1)
        two = one.mm(one.t()).float().unsqueeze(0).unsqueeze(0)
        return two.expand(channels, 1, size, size).contiguous()

    def score(self, a, b, size, channels, average):
        device = a.device
        window = self.window(size, channels).to(device)
        mu = F.conv2d(a, window, padding=size // 2, groups=channels)
        nu = F.conv2d(b, window, padding=size // 2, groups=channels)
        both = mu * nu
        if average:
            out = both.mean()
        else:
            out = both.mean(1)
        return out, both.mean()

    def forward(self, a, b):
        device = a.device
        weights = torch.FloatTensor([0.1, 0.2, 0.3]).to(device)
        outs = []
        for _ in range(weights.size()[0]):
            s, c = self.score(a, b, self.size, self.channels, self.average)
            outs.append(s)
            a = F.avg_pool2d(a, (2, 2))
            b = F.avg_pool2d(b, (2, 2))
        return torch.stack(outs)


class Auto(nn.Module):
    def __init__(self, channels, size=11):
        super().__init__()
        self.loss = Blur(channels, size, True)

    def forward(self, x):
        return self.loss(x, x)
"""


@pytest.mark.parametrize("operands_only, depth", [(False, 4), (True, 6), (True, 16), (False, 40)])
def test_what_a_value_is_known_to_be_asked_first_is_not_lost_when_asked_later(monkeypatch, operands_only, depth):
    """Each expression's value asked first, on a fresh model, is not lost when it is asked
    after every other one: a cycle through call sites or returned values, or the depth
    limit (_MAX_DEPTH, lowered here so that the chain from a comprehension's variable
    through the call sites reaches it), must not leave a cut-short "unknown" memoised for
    later questions (PyTorch-VAE's MSSIM window was a CPU tensor or "unknown" depending on
    whether DL015 had asked about its arithmetic first, and DL016 lost it with
    --select ALL). Asked later, a value may know more (what a shallower question computed
    in full), never less."""
    from devicelint.semantic import model as model_module

    monkeypatch.setattr(model_module, "_MAX_DEPTH", depth)
    ctx, sem = model_of(_DEEP)
    nodes = [n for n in ctx._nodes if isinstance(n, cst.BaseExpression)]
    for node in nodes:  # every expression, or the operands of arithmetic only (as DL015 asks)
        if not operands_only:
            sem.value(node)
        elif isinstance(node, cst.BinaryOperation):
            sem.value(node.left)
            sem.value(node.right)
    for index, node in enumerate(nodes):
        if not isinstance(node, (cst.Call, cst.Name)):
            continue  # (a fresh model per expression: calls and names are enough)
        fresh_ctx, fresh = model_of(_DEEP)
        first = fresh.value([n for n in fresh_ctx._nodes if isinstance(n, cst.BaseExpression)][index])
        later = sem.value(node)
        if first.kind is not Kind.UNKNOWN:
            assert later.kind is first.kind, ctx.code(node)
        if first.place is not Place.UNKNOWN:
            assert later.place is first.place, ctx.code(node)


def test_a_loader_batch_field_is_a_container_of_unknown_kind():
    """default_collate makes a batch field a tensor from a tensor field, but a list of
    batches from a list field (two crops of one image): written into by index, it is not
    known to be a tensor. What the code makes of it (`.float()`) is one."""
    source = """
    import torch
    from torch.utils.data import DataLoader
    for images, _ in DataLoader([]):
        crops = images  # field
        made = images.float()  # made
    """
    ctx, sem = model_of(source)
    field = value_at(source, "field")
    assert field.kind is Kind.TENSOR and field.place is Place.CPU
    for node in ctx.iter_nodes(cst.SimpleStatementLine):
        text = ctx.code(node)
        if text.rstrip().endswith("# field"):
            assert sem.container(node.body[0].value).kind is Kind.UNKNOWN
        if text.rstrip().endswith("# made"):
            assert sem.container(node.body[0].value).kind is Kind.TENSOR


def test_to_without_a_device_keeps_what_the_receiver_is():
    source = """
    import torch
    from elsewhere import Net
    net = Net()
    converted = net.to(memory_format=torch.channels_last)  # module
    images = torch.randn(2, 3, 4, 4).to(memory_format=torch.channels_last)  # tensor
    """
    # Module.to(memory_format=...) returns the module: an unknown receiver is not made a tensor
    assert value_at(source, "module").kind is Kind.UNKNOWN
    assert value_at(source, "tensor").kind is Kind.TENSOR


def test_symbolic_sizes_decide_a_view_after_a_transpose():
    # PyTorch's view rule on sizes spelled as symbols: splitting a dim is always allowed,
    # merging only dims next to each other in memory (PSANet's split-only view is fine; a
    # view that splits `h * w` and merges `w` with the channels raises whenever both > 1).
    ctx, sem = model_of("""
    import torch
    def f(x, y, n, c, h, w):
        a = y.view(n, h * w, h * w).transpose(1, 2).view(n, h * w, h, w)
        b = x.view(n, c, h * w).transpose(1, 2).view(n, h, w * c)
        d = x.view(n, c, h * w).transpose(1, 2).view(n, h, w, c)
        e = x.view(n, c, h * w).transpose(1, 2).view(n, -1, w, c)
        g = x.view(n, c, h * w).transpose(1, 2).view(n, h, -1)
        k = x.view(n, 1, c, h).permute(0, 3, 1, 2).view(n, h, c)
        m = x.view(n, c, h * w).transpose(1, 2).view(n, c, 7)  # 7 is no product of these
    """)
    calls = [node.value for node in ctx.iter_nodes(cst.Assign)]
    outcomes = [view_outcome(sem.value(call.func.value), view_shape(call, sem)) for call in calls]
    assert outcomes == [OK, FAILS, OK, OK, FAILS, OK, OK]


def test_undecided_views_of_a_transposed_tensor_are_not_reported():
    # A transpose of a tensor whose rank the code does not show (`bias.unsqueeze(1)` held on
    # the module: a2c-ppo-acktr's AddBias), viewed with a -1: the merge cannot be decided.
    from devicelint.runner import lint_file
    import tempfile, os
    source = textwrap.dedent("""
    import torch.nn as nn
    class AddBias(nn.Module):
        def __init__(self, bias):
            super().__init__()
            self._bias = nn.Parameter(bias.unsqueeze(1))
        def forward(self, x):
            return x + self._bias.t().view(1, -1)
    def merge(y, B, T):
        return y.transpose(1, 2).view(B, T, -1)
    """)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "m.py")
        with open(path, "w") as handle:
            handle.write(source)
        assert [f.line for f in lint_file(path, path, ["DL003"], 10**7)] == []


def test_topk_indices_keep_the_rank_for_t():
    ctx, sem = model_of("""
    import torch
    def hits(scores, labels, k):
        top = scores.topk(k, dim=1).indices.t()  # here
        return (top == labels.view(1, -1).expand_as(top))[:k].view(-1)
    """)
    call = next(c for c in ctx.iter_nodes(cst.Call) if ctx.code(c).endswith("[:k].view(-1)"))
    assert view_outcome(sem.value(call.func.value), view_shape(call, sem)) == FAILS


def test_fresh_fill_follows_two_helper_calls_side_by_side_but_not_nested() -> None:
    """`right.outer(left)` with both bound to calls of the file's noise helper: each call is
    one function deep; a helper that calls itself is still not followed."""
    from devicelint.semantic import dataflow

    source = (
        "import torch\n"
        "def noise(n):\n"
        "    v = torch.randn(n)\n"
        "    return v.sign().mul(v.abs().sqrt())\n"
        "def deep(n):\n"
        "    return deep(n) * 2\n"
        "left = noise(3)\n"
        "right = noise(4)\n"
        "y = right.outer(left).to('cuda')  # here\n"
        "z = deep(3).to('cuda')  # deep\n"
    )
    _, sem, receiver = _move_receiver(source, "here")
    fill = dataflow.fresh_fill(sem, receiver)
    assert fill is not None and len(fill.calls) == 2 and len({id(f) for f in fill.factories}) == 1
    _, sem, receiver = _move_receiver(source, "deep")
    assert dataflow.fresh_fill(sem, receiver) is None


def test_a_loaders_collate_fn_takes_a_host_list_of_samples() -> None:
    ctx, sem = model_of("""
        from torch.utils.data import DataLoader
        def collate(batch):
            return batch  # here
        def other(batch):
            return batch  # there
        loader = DataLoader(data, batch_size=2, collate_fn=collate)
    """)
    found = {}
    for ret in ctx.iter_nodes(cst.Return):
        line = ctx.source.splitlines()[ctx.position(ret)[0] - 1]
        found[line.split("# ")[-1]] = sem.value(ret.value)
    assert found["here"].kind is Kind.SEQUENCE and found["here"].place is Place.CPU
    assert found["there"].kind is Kind.UNKNOWN

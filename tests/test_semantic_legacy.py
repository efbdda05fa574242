"""Older PyTorch code in the semantic model: legacy wrappers and factories (torch_api.toml),
read as what they do in torch 2.13. Each fact is checked against torch itself too."""

from __future__ import annotations

import textwrap
import warnings

import libcst as cst
import torch

from devicelint import safe_parse
from devicelint.context import FileContext
from devicelint.semantic import Kind, Place, dataflow


def _model(source: str):
    source = textwrap.dedent(source)
    ctx = FileContext("t.py", source, safe_parse.parse_module(source))
    ctx.walk({}, {})
    return ctx, ctx.semantic


def _marked(ctx, marker: str) -> cst.BaseExpression:
    """The value of the assignment or expression on the line ending with `# <marker>`."""
    for node in ctx.iter_nodes(cst.SimpleStatementLine):
        if ctx.code(node).rstrip().endswith(f"# {marker}"):
            return node.body[0].value
    raise AssertionError(marker)


def test_variable_is_an_identity_on_tensors() -> None:
    from torch.autograd import Variable

    x = torch.zeros(3, 4).t()
    wrapped = Variable(x)
    assert type(wrapped) is torch.Tensor and wrapped.stride() == x.stride()
    ctx, sem = _model("""
    import torch
    from torch.autograd import Variable
    x = Variable(torch.zeros(3, 4).t())  # here
    """)
    value = sem.value(_marked(ctx, "here"))
    assert value.kind is Kind.TENSOR and value.place is Place.CPU
    assert value.shape == (4, 3) and value.layout.state == "permuted"
    assert sem.api.function("torch.autograd.Variable").result == "same"


def test_a_host_fill_wrapped_in_variable_is_still_a_fresh_fill() -> None:
    ctx, sem = _model("""
    import torch
    from torch.autograd import Variable
    def f(n):
        h = Variable(torch.zeros(2, 1, n))
        h = h.cuda()  # here
        data = Variable(torch.LongTensor([[0]])).cuda()  # data
        grad = Variable(torch.zeros(n), requires_grad=True).cuda()  # leaf
    """)
    fill = dataflow.fresh_fill(sem, _marked(ctx, "here").func.value)
    assert fill is not None and [sem.qualname(f.func) for f in fill.factories] == ["torch.zeros"]
    assert fill.ops == ()  # the wrapper is no op: the fix may put `device=` in the factory
    assert dataflow.fresh_fill(sem, _marked(ctx, "data").func.value) is None
    assert dataflow.fresh_fill(sem, _marked(ctx, "leaf").func.value) is None


def test_torch_range_is_a_host_factory_with_its_end_included() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert torch.range(2, 6).shape == (5,)
    ctx, sem = _model("""
    import torch
    r = torch.range(2, 6)  # here
    m = torch.range(0, n - 1).long()  # sized
    """)
    value = sem.value(_marked(ctx, "here"))
    assert value.kind is Kind.TENSOR and value.place is Place.CPU and value.shape == (5,)
    assert dataflow.fresh_fill(sem, _marked(ctx, "sized")) is not None


def test_an_index_assignment_of_a_number_writes_the_fill_in_place() -> None:
    # The same statement runs on a tensor made on the device, with host indices.
    labels = torch.tensor([1, 0, 2])
    out = torch.zeros(3, 3)
    out[torch.arange(3), labels] = 1
    assert out.sum().item() == 3
    ctx, sem = _model("""
    import numpy as np
    import torch
    def onehot(labels, values, flag):
        out = torch.zeros(labels.size(0), 3)
        out[np.arange(labels.size(0)), labels.long()] = 1
        out[0, :] = -1.0
        out[1] = True
        out[1] = flag > 0
        out[2] = values[0]
        out[2] += 1
        return out
    """)
    reads = [n for n in ctx.iter_nodes(cst.Name) if n.value == "out"]
    stored = [dataflow.number_store(sem, n) for n in reads]
    # the binding; index assignments of a number, a negative float, True, a comparison of
    # a value the code does not show, a tensor's element; an augmented one; the return
    assert stored == [False, True, True, True, False, False, False, False]


# -- layout through elementwise ops (the `accuracy()` helper) --------------------------------

def test_torch_lays_elementwise_results_out_like_their_first_permuted_operand() -> None:
    output, target = torch.randn(8, 10), torch.randint(0, 10, (8,))
    pred = output.topk(5, 1, True, True)[1].t()
    expanded = target.view(1, -1).expand_as(pred)
    assert pred.eq(expanded).stride() == pred.stride() == (pred == expanded).stride()
    a, b = torch.randn(4, 6), torch.randn(6, 4)
    assert (a.t() + b).stride() == a.t().stride() and (a.t() > 0).stride() == a.t().stride()
    assert (b + a.t()).is_contiguous()          # the first operand decides
    correct = pred.eq(expanded)
    assert not correct[:5].is_contiguous()      # a leading-dim slice keeps it transposed
    try:
        correct[:5].view(-1)
        raise AssertionError("view(-1) of the transposed slice ran")
    except RuntimeError as error:
        assert "view size is not compatible" in str(error)
    assert correct[:1].view(-1).shape == (8,)   # k == 1 passes: a size-1 dim
    assert correct[:5].reshape(-1).shape == correct[:5].contiguous().view(-1).shape == (40,)


def test_the_model_carries_the_transpose_through_elementwise_ops_and_slices() -> None:
    ctx, sem = _model("""
    import torch
    def accuracy(output, target, a, b, k):
        _, pred = output.topk(k, 1, True, True)
        pred = pred.t()  # t
        correct = pred.eq(target.view(1, -1).expand_as(pred))  # eq
        same = pred == target.view(1, -1).expand_as(pred)  # compare
        head = correct[:k]  # head
        x = torch.randn(4, 6).t()
        y = torch.randn(6, 4)
        first = x + y  # first
        second = y + x  # second
        both = x * x.abs()  # both
    """)
    layout = {m: sem.value(_marked(ctx, m)).layout for m in
              ("t", "eq", "compare", "head", "first", "second", "both")}
    assert sem.value(_marked(ctx, "t")).kind is Kind.TENSOR  # `topk`: a tensor method only
    for marker in ("t", "eq", "compare", "head", "first", "both"):
        assert layout[marker].state == "permuted" and layout[marker].label == ".t()", marker
    assert layout["first"].perm == (1, 0)
    # A contiguous first operand decides only where it broadcasts nothing (sizes unknown
    # here): not permuted, and nothing to judge a view by.
    assert layout["second"].state == "unknown"


# -- legacy constructors reading tensors in a list (syncs.reads) -----------------------------

def test_a_list_reading_constructor_copies_each_tensor_elements_value() -> None:
    ni = torch.tensor(7)
    made = torch.LongTensor([[ni]])
    assert made.tolist() == [[7]] and made.data_ptr() != ni.data_ptr()
    ni.fill_(3)
    assert made.tolist() == [[7]]  # a copy of the value, read when the list was built
    ctx, sem = _model("""
    import torch
    def step(out, n, ids):
        ni = out.topk(1)[1][0][0]
        a = torch.LongTensor([[ni]])  # nested
        b = torch.LongTensor([ni] * n)  # repeated
        c = torch.tensor([ni, 1.0])  # mixed
        d = torch.LongTensor(4)  # sizes
        e = torch.LongTensor([[0, 1]])  # literals
        f = torch.LongTensor(ids)  # a list the code does not show
    """)
    read = {m: sem.syncs.reads(_marked(ctx, m)) for m in
            ("nested", "repeated", "mixed", "sizes", "literals", "a list the code does not show")}
    for marker in ("nested", "repeated", "mixed"):
        assert [ctx.code(r.operand) for r in read[marker]] == ["ni"], marker
    assert not read["sizes"] and not read["literals"] and not read["a list the code does not show"]
    assert "torch.LongTensor" in sem.api.list_element_readers


def test_t_swaps_two_dims_when_the_code_shows_at_least_two() -> None:
    # `.t()` raises on more than two dimensions; `topk(k, 1)` needs at least two.
    try:
        torch.zeros(2, 3, 4).t()
        raise AssertionError(".t() of a 3-d tensor ran")
    except RuntimeError:
        pass
    assert torch.zeros(3).t().is_contiguous()  # one dimension: nothing swapped
    ctx, sem = _model("""
    import torch
    def accuracy(output, scores, k):
        _, pred = output.topk(k, 1, True, True)
        pred = pred.t()  # along dim 1
        _, top = scores.topk(k)
        top = top.t()  # no dim shown
    """)
    shown = sem.value(_marked(ctx, "along dim 1")).layout
    unshown = sem.value(_marked(ctx, "no dim shown")).layout
    assert shown.state == "permuted" and shown.perm == (1, 0)
    assert unshown.state == "permuted" and unshown.perm is None  # "may fail" at most

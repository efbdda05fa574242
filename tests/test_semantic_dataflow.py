"""dataflow.py queries that DL001 and DL016 share: data made on the device, round trips."""

from __future__ import annotations

import textwrap

import libcst as cst

from devicelint import safe_parse
from devicelint.context import FileContext
from devicelint.semantic import dataflow


def model_of(source: str):
    source = textwrap.dedent(source)
    ctx = FileContext("t.py", source, safe_parse.parse_module(source))
    ctx.walk({}, {})
    return ctx, ctx.semantic


def calls_on_marked_lines(ctx, marker: str = "# here"):
    """The outermost call of each line ending with `marker`, in source order."""
    found = []
    for line in ctx.iter_nodes(cst.SimpleStatementLine):
        if ctx.code(line).rstrip().endswith(marker):
            small = line.body[0]
            value = small.value if isinstance(small, (cst.Assign, cst.Expr, cst.Return)) else None
            assert isinstance(value, cst.Call), ctx.code(line)
            found.append(value)
    return found


def test_data_to_device_names_the_data_a_factory_copies():
    source = """
    import torch
    import numpy as np
    dev = torch.device("cuda")
    rows = [1, 2, 3]
    a = torch.tensor(rows, device=dev)  # here
    b = torch.as_tensor(np.ones(3), device="cuda")  # here
    c = torch.tensor(rows, device="cpu")  # here
    d = torch.zeros(3, device=dev)  # here
    e = torch.tensor(rows)  # here
    """
    ctx, sem = model_of(source)
    made = [dataflow.data_to_device(sem, call) for call in calls_on_marked_lines(ctx)]
    assert [ctx.code(m.data) for m in made[:2]] == ["rows", "np.ones(3)"]
    assert [m.qualname for m in made[:2]] == ["torch.tensor", "torch.as_tensor"]
    assert not made[0].named
    assert made[2:] == [None, None, None]  # to the CPU; a size factory; no device


def test_data_to_device_not_a_shadowed_torch_and_says_when_the_device_is_a_name():
    source = """
    import torch
    def f(rows, device):
        return torch.tensor(rows, device=device)  # here
    def g(rows, torch):
        x = torch.tensor(rows, device="cuda")  # here
    """
    ctx, sem = model_of(source)
    first, second = calls_on_marked_lines(ctx)
    made = dataflow.data_to_device(sem, first)
    assert made is not None and made.named  # `device` taken for a device from its name
    assert dataflow.data_to_device(sem, second) is None  # `torch` is a parameter there


def _appended_reached(source: str) -> bool:
    """Whether data_nodes (through_changes) from the upload's data reaches `token`, which
    the loop appends to `ids`."""
    ctx, sem = model_of(source)
    upload = calls_on_marked_lines(ctx)[0]
    loop = ctx.loops(upload)[-1]
    moved = upload.func.value  # `torch.LongTensor([ids[-1]])`
    names = [node.value for node, d in dataflow.data_nodes(sem, moved, loop, through_changes=True)
             if isinstance(node, cst.Name)]
    return "token" in names


def test_data_nodes_follow_what_the_loop_appends_to_an_object_of_unknown_kind():
    source = """
    import torch
    def greedy(model, vocab, steps):
        ids = vocab.lookup_indices(["<s>"])
        for _ in range(steps):
            x = torch.LongTensor([ids[-1]]).to("cuda")  # here
            token = model(x).argmax().item()
            ids.append(token)
        return ids
    """
    assert _appended_reached(source)  # a list by what the loop does to it
    other_method = source.replace("ids.append(token)", "ids.append(token)\n            ids.reset()")
    assert not _appended_reached(other_method)  # any other method may change it otherwise
    handed_on = source.replace("ids.append(token)", "ids.append(token)\n            vocab.keep(ids)")
    assert not _appended_reached(handed_on)  # a call that may change it


def test_data_to_device_through_an_alias_the_file_binds():
    source = """
    import torch
    tensor = torch.tensor
    x = tensor([1, 2], device="cuda")  # here
    """
    ctx, sem = model_of(source)
    made = dataflow.data_to_device(sem, calls_on_marked_lines(ctx)[0])
    assert made is not None and made.qualname == "torch.tensor"


def test_same_every_call_reads_attributes_bound_once_and_sizes_only():
    source = """
    import torch
    class Enc(torch.nn.Module):
        def __init__(self, n):
            super().__init__()
            self.table = torch.zeros(1, n)
            self.steps = [1, 2]
            self.grown = []
        def grow(self):
            self.grown.append(1)
        def forward(self, x, ids):
            a = self.table[:, :x.shape[1]]  # here
            b = torch.tensor(self.steps)  # here
            c = torch.tensor(self.grown)  # here
            d = self.table[:, ids]  # here
            e = torch.tensor(ids)  # here
    """
    ctx, sem = model_of(source)
    values = []
    for line in ctx.iter_nodes(cst.SimpleStatementLine):
        if ctx.code(line).rstrip().endswith("# here"):
            values.append(line.body[0].value)
    forward = sem.function_of(values[0])
    same = [dataflow.same_every_call(sem, value, forward) for value in values]
    # bound in __init__ only (a slice bounded by a size); changed by another method; indexed
    # by an argument's data; an argument's data
    assert same == [True, True, False, False, False]


def test_per_call_uploads_are_copies_of_constants_on_every_call():
    source = """
    import torch
    MEAN = [0.5, 0.5]
    def normalize(batch):
        mean = batch.new_tensor([0.485, 0.456])
        std = torch.tensor(MEAN).to(batch.device)
        return (batch - mean) / std
    def to_cuda(x):
        return x + torch.tensor([1.0, 2.0], device="cuda")
    def given(batch, weights):
        return batch * batch.new_tensor(weights)
    def sometimes(batch, flag):
        if flag:
            batch = batch + batch.new_tensor([1.0, 2.0])
        return batch
    USE_CUDA = torch.cuda.is_available()
    def start(hidden):
        token = torch.LongTensor([[1]])
        if USE_CUDA:
            token = token.cuda()
        return hidden + token
    def local(batch):
        weights = torch.tensor(MEAN)
        return batch * weights.to(batch.device)
    def encode(tokens):
        ids = torch.LongTensor(tokens)
        if USE_CUDA:
            ids = ids.cuda()
        return ids
    """
    ctx, sem = model_of(source)
    functions = {f.name.value: f for f in ctx.iter_nodes(cst.FunctionDef)}
    found = {name: [(ctx.code(u.node), sorted(u.follows)) for u in dataflow.per_call_uploads(sem, f)]
             for name, f in functions.items()}
    assert found["normalize"] == [("batch.new_tensor([0.485, 0.456])", ["batch"]),
                                  ("torch.tensor(MEAN).to(batch.device)", ["batch"])]
    assert found["to_cuda"] == [('torch.tensor([1.0, 2.0], device="cuda")', [])]
    assert found["given"] == []  # the caller's data
    assert found["sometimes"] == []  # under a condition
    # under an `if` taken whenever there is a GPU, through the one binding that reaches it
    assert found["start"] == [("token.cuda()", [])]
    assert found["local"] == [("weights.to(batch.device)", ["batch"])]
    assert found["encode"] == []  # the caller's tokens


_CALLER_DATA = """
import math
import numpy as np
import torch

def gather(table, t):
    return torch.from_numpy(table).to(t.device)[t]

class Window:
    def __init__(self, size):
        self.size = size
        self.alphas = np.linspace(0.1, 0.9, size)

    def kernel(self, size):
        weights = torch.tensor([math.exp(-i) for i in range(size)])
        return weights / weights.sum()

    def blur(self, x, size):
        device = x.device
        return x * self.kernel(size).to(device).sum()

    def noise(self, x, t):
        return gather(self.alphas, t) * x

    def step(self, x, t):
        return self.noise(x, t)

    def sample(self, x):
        for i in range(4):
            x = self.step(x, i)
        return x

    def once(self, t):
        return gather(self.alphas, t)
"""


def test_param_uploads_name_the_parameters_the_copied_data_comes_from():
    """`param_uploads`: a copy of data computed from the function's parameters alone, through
    the file's own pure helpers (`self.kernel(size)`, a comprehension over `math.exp`), to
    the device of a parameter (also through a local `device = x.device`)."""
    ctx, sem = model_of(_CALLER_DATA)
    functions = sem.functions()
    [gather] = dataflow.param_uploads(sem, functions["gather"][0])
    assert (gather.data, gather.follows) == ({"table"}, {"t"})
    [blur] = dataflow.param_uploads(sem, functions["blur"][0])
    assert (blur.data, blur.follows) == ({"size"}, {"x"})
    assert dataflow.param_uploads(sem, functions["noise"][0]) == ()  # it copies nothing itself


def test_repeats_finds_the_loop_a_few_calls_up_and_constant_at_the_call():
    ctx, sem = model_of(_CALLER_DATA)
    functions = sem.functions()
    loop = dataflow.repeats(sem, functions["noise"][0])
    assert isinstance(loop, cst.For) and ctx.code(loop).startswith("for i in range(4):")
    assert dataflow.repeats(sem, functions["once"][0]) is None
    [(site, bound)] = [s for s in dataflow.call_sites(sem, functions["gather"][0])
                       if sem.function_of(s[0]).name.value == "noise"]
    # self.alphas is bound in __init__ alone, and gather (which only reads it) changes nothing
    assert dataflow.constant_at(sem, bound["table"][0], site)


def test_exclusive_arms_of_one_if_and_of_one_unchanged_flag():
    source = """
    import torch
    def f(loader, flag, opts):
        for x in loader:
            if flag:
                a = x.cuda()  # here
            else:
                b = x.cpu()  # here
            if flag:
                c = x.cuda()  # here
            if not flag:
                d = x.cpu()  # here
            if opts.gpu:
                e = x.cuda()  # here
            elif x.ndim:
                f = x.cpu()  # here
            if opts.gpu:
                g = x.cpu()  # here
    def g(loader, flag):
        for x in loader:
            if flag:
                a = x.cuda()  # here
            flag = not flag
            if not flag:
                b = x.cpu()  # here
    """
    ctx, sem = model_of(source)
    a, b, c, d, e, f, g, a2, b2 = calls_on_marked_lines(ctx)
    loop, loop2 = [n for n in ctx.iter_nodes(cst.For)]
    assert dataflow.exclusive_arms(sem, a, b, loop)  # body and else of one if
    assert dataflow.exclusive_arms(sem, c, d, loop)  # `flag` and `not flag`
    assert dataflow.exclusive_arms(sem, b, c, loop)  # else of one, body of another
    assert dataflow.exclusive_arms(sem, e, f, loop)  # an attribute flag, the elif arm
    assert not dataflow.exclusive_arms(sem, a, c, loop)  # the same arm of the flag
    assert not dataflow.exclusive_arms(sem, e, g, loop)
    assert not dataflow.exclusive_arms(sem, a, e, loop)  # different flags
    assert not dataflow.exclusive_arms(sem, a2, b2, loop2)  # the loop flips the flag


def test_returned_move_is_a_parameter_given_back_copied_to_the_device():
    source = """
    import torch
    from torch.autograd import Variable
    def cuda_variable(tensor):
        if torch.cuda.is_available():
            return Variable(tensor.cuda())
        return Variable(tensor)
    def moved(x):
        return x.to("cuda")
    def read_first(x):
        print(x.sum())
        return x.cuda()
    def other(x, y):
        if torch.cuda.is_available():
            return x.cuda()
        return y
    def to_host(x):
        return x.to("cpu")
    """
    ctx, sem = model_of(source)
    functions = {f.name.value: f for f in ctx.iter_nodes(cst.FunctionDef)}
    found = {name: dataflow.returned_move(sem, f) for name, f in functions.items()}
    assert found["cuda_variable"][0] == "tensor" and ctx.code(found["cuda_variable"][1]) == "tensor.cuda()"
    assert found["moved"][0] == "x"
    # read on the host, another parameter on a path, a move to the host: none
    assert found["read_first"] is None and found["other"] is None and found["to_host"] is None


def test_a_list_bound_empty_holds_what_the_code_appends_to_it():
    from devicelint.semantic import Kind, Place
    from tests.test_semantic import value_at

    source = """
    import torch
    def accuracy(output, target, topk=(1,)):
        res = []
        for k in topk:
            res.append(output[:k].sum() * 100.0)
        return res
    def step(x, device):
        out = x.to(device)
        first = accuracy(out, None)[0]  # first
        a, b = accuracy(out, None, (1, 5))
        both = b  # unpacked
        sizes = []
        sizes.extend([out.shape[0], 3])
        n = sizes[0]  # sizes
    """
    assert value_at(source, "first").kind is Kind.TENSOR
    assert value_at(source, "first").place is Place.DEVICE
    assert value_at(source, "unpacked").place is Place.DEVICE
    assert value_at(source, "sizes").kind is Kind.NUMBER
    # Written by index, aliased or handed to code that may fill it: what it holds is not shown.
    for change in ("res[0] = k", "alias = res", "fill(res)"):
        changed = source.replace("return res", f"{change}\n        return res")
        assert value_at(changed, "first").kind is Kind.UNKNOWN, change


def test_unpacked_keyword_reads_a_dict_display_nothing_changes():
    source = """
    import torch
    plain = {"batch_size": 4, "shuffle": True}
    pinned = {"batch_size": 4, "pin_memory": True}
    grown = {"batch_size": 4}
    grown["pin_memory"] = True
    built = dict(batch_size=4)
    a = f(**plain)  # here
    b = f(**pinned)  # here
    c = f(**grown)  # here
    d = f(**built)  # here
    """
    ctx, sem = model_of(source)
    found = [dataflow.unpacked_keyword(sem, call.args[0].value, "pin_memory")
             for call in calls_on_marked_lines(ctx)]
    assert found[0] == (True, None)
    assert found[1][0] and ctx.code(found[1][1]) == "True"
    assert found[2:] == [(False, None), (False, None)]


def test_a_list_grown_from_sampled_rows_and_read_by_a_helper_holds_those_rows():
    # `random.sample(list(test_data), k=9)` is a list of the dataset's samples; a list grown
    # with `append` from them and handed to a function of the file that only reads it keeps
    # what it holds (the helper's parameter takes it); one handed to a helper that changes it
    # in place does not.
    from devicelint.semantic import Origin, Place
    from tests.test_semantic import model_of

    ctx, sem = model_of("""
    import random
    import torch
    from torch.utils.data import TensorDataset
    test_data = TensorDataset(torch.randn(8, 3))
    def read(data):
        for sample in data:
            print(sample)
    def change(data):
        data.clear()
    kept = []
    changed = []
    for sample, in random.sample(list(test_data), k=4):
        kept.append(sample)
        changed.append(sample)
    read(kept)
    change(changed)
    """)
    reads = {n.value: sem.value(n) for n in ctx.iter_nodes(cst.Name)
             if n.value in ("kept", "changed") and isinstance(ctx.parent(n), cst.Arg)}
    assert reads["kept"].element is not None and reads["kept"].element.place is Place.CPU \
        and reads["kept"].element.origin is Origin.ROW
    assert reads["changed"].element is None or reads["changed"].element.place is Place.UNKNOWN


def test_collate_loader_and_passed_tensor_parameters():
    """`collate_loader`: the loader that runs a function once per batch as its `collate_fn=`,
    directly or through the function given (not a function no loader runs); `param_uploads`
    of a tensor parameter copied as it is (`window.to(x.device)`) name it in `passed`, and
    `per_call_uploads` follow a local bound to a parameter's device."""
    ctx, sem = model_of("""
    import torch
    from torch.utils.data import DataLoader

    def collate_batch(batch, device):
        bos = torch.tensor([0], device=device)
        return [bos] + batch

    def helper(batch):
        return torch.tensor([0, 1], device="cuda")

    def make(data, device):
        def collate_fn(batch):
            return collate_batch(batch, device)
        return DataLoader(data, collate_fn=collate_fn)

    def smooth(x, window: torch.Tensor):
        window = window.to(x.device)
        return x * window

    def weighted(pred, target):
        device = target.device
        return pred * torch.tensor([1.0], device=device)
    """)
    functions = sem.functions()
    loader = dataflow.collate_loader(sem, functions["collate_batch"][0])
    assert loader is not None and ctx.code(loader).startswith("DataLoader(")
    assert dataflow.collate_loader(sem, functions["helper"][0]) is None
    [copy] = dataflow.param_uploads(sem, functions["smooth"][0])
    assert (copy.data, copy.follows, copy.passed) == ({"window"}, {"x"}, {"window"})
    [upload] = dataflow.per_call_uploads(sem, functions["weighted"][0])
    assert upload.follows == {"target"}


def test_wrapper_move_is_a_lambda_or_function_giving_back_its_argument_moved():
    source = """
    import torch
    import torch.autograd as autograd
    USE_CUDA = torch.cuda.is_available()
    Variable = lambda *args, **kwargs: autograd.Variable(*args, **kwargs).cuda() if USE_CUDA else autograd.Variable(*args, **kwargs)
    Plain = lambda *args, **kwargs: autograd.Variable(*args, **kwargs)
    Backwards = lambda *args: autograd.Variable(*args).cuda() if not USE_CUDA else autograd.Variable(*args)
    Second = lambda x, y: y.cuda() if USE_CUDA else y
    First = lambda x: x.to("cuda")
    def to_gpu(t):
        if USE_CUDA:
            return t.cuda()
        return t
    x = torch.ones(3)
    a = Variable(x)  # here
    b = Plain(x)  # here
    c = Backwards(x)  # here
    d = Second(x, x)  # here
    e = First(x)  # here
    f = to_gpu(x)  # here
    """
    ctx, sem = model_of(source)
    found = [dataflow.wrapper_move(sem, call) for call in calls_on_marked_lines(ctx)]
    assert [ctx.code(f[1]) if f else None for f in found] == [
        "autograd.Variable(*args, **kwargs).cuda()", None, None, None, 'x.to("cuda")', "t.cuda()"]
    assert ctx.code(found[0][0]) == "x"


def test_an_in_place_change_of_a_view_changes_the_tensor():
    source = """
    import torch
    def f(v):
        proj = torch.zeros(4, 6)
        proj.view(-1).index_add_(0, torch.arange(24), v)
        view = proj.t().contiguous()
        return proj
    """
    ctx, sem = model_of(source)
    ret = next(iter(ctx.iter_nodes(cst.Return)))
    function = next(iter(ctx.iter_nodes(cst.FunctionDef)))
    kinds = [(kind, ctx.code(node)) for kind, node in dataflow.changes(sem, ret.value, function)]
    assert kinds == [("method", "proj.view(-1).index_add_(0, torch.arange(24), v)")]


def test_a_zipped_loop_target_comes_from_its_own_iterable():
    source = """
    import torch
    def f(hosts, devices):
        for host, dev in zip(hosts, devices):
            x = host * 2
    """
    ctx, sem = model_of(source)
    loop = next(iter(ctx.iter_nodes(cst.For)))
    function = next(iter(ctx.iter_nodes(cst.FunctionDef)))
    assign = next(iter(ctx.iter_nodes(cst.Assign)))
    names = {ctx.code(node) for node, d in dataflow.data_nodes(sem, assign.value, function) if d is None}
    assert "hosts" in names and "devices" not in names
    assert loop is not None


def test_param_data_leaves_out_sizes():
    source = """
    import torch
    def f(img, size=11):
        (_, channel, _, _) = img.size()
        n = img.size(0)
        return torch.ones(size).expand(n, channel, size)
    """
    ctx, sem = model_of(source)
    function = next(iter(ctx.iter_nodes(cst.FunctionDef)))
    ret = next(iter(ctx.iter_nodes(cst.Return)))
    assert dataflow.param_data(sem, ret.value, function) == frozenset({"size"})


def test_first_pass_only_is_the_arm_a_range_loop_takes_for_its_first_counter():
    source = """
    import torch
    def f(target, n):
        for c in range(len(target)):
            a = target[c - 1] if c else torch.ones(1)  # here
            b = torch.zeros(1) if c == 0 else target[c]  # here
            d = target[c] if c > 0 else torch.ones(2)  # here
        for c in range(1, n):
            e = target[c] if c != 1 else torch.ones(3)  # here
            g = target[c] if c else torch.ones(4)  # here
    """
    ctx, sem = model_of(source)
    loops = list(ctx.iter_nodes(cst.For))
    found = []
    for call in ctx.iter_nodes(cst.Call):
        if ctx.code(call.func) in ("torch.ones", "torch.zeros"):
            loop = next(lp for lp in loops if dataflow.within(sem, call, lp))
            found.append((ctx.code(call), dataflow.first_pass_only(sem, call, loop)))
    assert found == [("torch.ones(1)", True), ("torch.zeros(1)", True), ("torch.ones(2)", False),
                     ("torch.ones(3)", True), ("torch.ones(4)", False)]

"""Semantic facts behind the DL004 classes the held-out audit missed or misjudged
(docs/audit.md, "Held-out audit (session 5)"): a GPU flag passed as a parameter, the `else:`
arm of such a flag, `np.squeeze` of a tensor, a list indexed by a tensor, `.type()` to a CPU
tensor type, and a membership gate on the loop counter."""

from __future__ import annotations

import textwrap

import libcst as cst

from devicelint.context import FileContext
from devicelint.semantic import Kind, Place

HEAD = """\
import numpy as np
import torch
import torch.nn as nn
device = torch.device("cuda")
use_gpu = torch.cuda.is_available()
"""


def semantic(body: str):
    source = HEAD + textwrap.dedent(body)
    ctx = FileContext("t.py", source, cst.parse_module(source))
    ctx.walk({}, {})
    return ctx, ctx.semantic


def nodes(ctx, node_type, text: str) -> list:
    return [n for n in ctx.iter_nodes(node_type) if ctx.code(n) == text]


def test_a_parameter_every_call_passes_a_gpu_flag_is_that_flag():
    ctx, sem = semantic("""
        def run(net, batches, cuda_on, other):
            for x in batches:
                if cuda_on:
                    x = x.cuda()
                out = net(x)
                if other:
                    pass

        run(model, data, use_gpu, False)
        run(model, data, torch.cuda.is_available(), True)
    """)
    tests = [i.test for i in ctx.iter_nodes(cst.If)]
    assert [sem.gpu_truth(t) for t in tests] == [True, None]
    x = nodes(ctx, cst.Name, "x")[-1]   # the argument of net(x)
    assert sem.value(x).kind is Kind.TENSOR and sem.value(x).place is Place.DEVICE


def test_a_parameter_one_call_passes_something_else_for_has_no_gpu_truth():
    ctx, sem = semantic("""
        def run(batches, cuda_on):
            if cuda_on:
                pass

        run(data, use_gpu)
        run(data, args.cuda)
    """)
    test = next(ctx.iter_nodes(cst.If)).test
    assert sem.gpu_truth(test) is None


def test_a_binding_in_the_arm_taken_without_a_gpu_does_not_reach_a_read():
    ctx, sem = semantic("""
        seq = np.zeros((1, 4))
        for _ in range(3):
            if use_gpu:
                window = torch.LongTensor(seq).cuda()
            else:
                window = torch.LongTensor(seq)
            y = window
    """)
    window = nodes(ctx, cst.Name, "window")[-1]
    assert len(sem.gpu_path_defs(sem.defs(window))) == 1
    assert sem.value(window).place is Place.DEVICE


def test_a_gpu_flag_is_no_throttle_and_a_counter_in_fixed_steps_is():
    ctx, sem = semantic("""
        net = nn.Linear(4, 4).to(device)
        opt = torch.optim.SGD(net.parameters(), lr=0.1)
        marks = np.linspace(0, 100, 5, dtype=int)
        for i in range(100):
            loss = net(torch.ones(1, 4, device=device)).sum()
            loss.backward()
            opt.step()
            if use_gpu:
                a = loss.cpu()
            if i in np.linspace(0, 100, 5, dtype=int):
                b = loss.cpu()
            if i in {10, 50}:
                c = loss.cpu()
            if i not in marks:
                d = loss.cpu()
            if i in [j * 2 for j in range(i)]:
                e = loss.cpu()
    """)
    loop = next(ctx.iter_nodes(cst.For))
    reads = nodes(ctx, cst.Call, "loss.cpu()")
    assert [sem.loops.step_loop(r) is loop for r in reads] == [True, False, False, True, True]


def test_np_squeeze_keeps_a_tensor_where_it_was():
    ctx, sem = semantic("""
        t = torch.ones(3, 1, device=device)
        a = np.squeeze(t)
        b = np.squeeze(np.ones((3, 1)))
        c = np.squeeze(unknown_thing)
    """)
    values = [sem.value(nodes(ctx, cst.Name, n)[-1]) for n in "abc"]
    assert (values[0].kind, values[0].place) == (Kind.TENSOR, Place.DEVICE)
    assert values[1].kind is Kind.ARRAY
    assert values[2].kind is Kind.UNKNOWN


def test_indexing_a_list_or_array_with_a_tensor_and_type_to_a_cpu_type_read_on_the_host():
    ctx, sem = semantic("""
        counts = [0.0] * 10
        table = np.zeros(10)
        names = {"a": 1}
        y = torch.ones(4, dtype=torch.long, device=device)
        counts[y[0]] += 1
        table[y[1]] += 1
        names[y[2]]
        counts[3] += 1
        y[y[0]]
        y.type(torch.FloatTensor)
        y.type(torch.cuda.FloatTensor)
        y.type(torch.float32)
    """)
    subscripts = [n for n in ctx.iter_nodes(cst.Subscript) if sem.syncs.reads(n)]
    assert [ctx.code(s) for s in subscripts] == ["counts[y[0]]", "table[y[1]]"]
    typed = [c for c in ctx.iter_nodes(cst.Call) if ctx.code(c).startswith("y.type(") and sem.syncs.reads(c)]
    assert [ctx.code(c) for c in typed] == ["y.type(torch.FloatTensor)"]


def test_a_literal_flag_that_guards_a_move_to_the_device_is_a_gpu_flag():
    # `USE_GPU = True` with `if USE_GPU: net.cuda()`: the flag decides whether the program
    # runs on the GPU, so with one it is True (the moves it guards are taken, its `else:`
    # arms are not); a literal flag guarding no move (`VERBOSE`) says nothing about the GPU;
    # one bound only to `False` (`LOUD`) is False: the code as written takes the other arm,
    # as a passed `args.cuda = False` (flags.flag_truth).
    ctx, sem = semantic("""
        USE_GPU = True
        LOUD = False
        VERBOSE = True
        net = nn.Linear(2, 2)
        if USE_GPU:
            net.cuda()
        def step(x):
            x = x.to(device) if LOUD else x
            if VERBOSE:
                print(x)
            if not USE_GPU:
                x = x.double()
            return use(net, net(x))
    """)
    tests = [n for n in ctx.iter_nodes(cst.Name) if n.value in ("USE_GPU", "LOUD", "VERBOSE")
             and not isinstance(ctx.parent(n), cst.AssignTarget)]
    assert {n.value: sem.gpu_truth(n) for n in tests} == {"USE_GPU": True, "LOUD": False, "VERBOSE": None}
    call = nodes(ctx, cst.Call, "use(net, net(x))")[0]
    assert [sem.value(a.value).place for a in call.args] == [Place.DEVICE, Place.DEVICE]
    double = nodes(ctx, cst.Call, "x.double()")[0]
    assert not sem.on_gpu_path(double)


def test_a_switch_anded_with_a_gpu_test_that_guards_a_move_is_a_gpu_flag():
    # `args.cuda = not args.no_cuda and torch.cuda.is_available()` with `if args.cuda:
    # net.cuda()`: on the configuration that uses the GPU the flag is True, as a name or as
    # an attribute the file assigns once at top level; the same switch guarding no move
    # (`log_gpu`) is a logging switch, and an attribute assigned again (`opts.cuda`) or in
    # a function (`cfg.cuda`) is not known to hold the flag's value.
    ctx, sem = semantic("""
        args = parse()
        args.cuda = not args.no_cuda and torch.cuda.is_available()
        use = args.gpu and torch.cuda.is_available()
        log_gpu = args.log and torch.cuda.is_available()
        opts = parse()
        opts.cuda = not opts.no_cuda and torch.cuda.is_available()
        if opts.log:
            opts.cuda = False
        cfg = parse()
        def setup():
            cfg.cuda = torch.cuda.is_available() and not cfg.no_cuda
        net = nn.Linear(2, 2)
        if args.cuda:
            net.cuda()
        if use:
            x = x.cuda()
        if log_gpu:
            print(x)
        if opts.cuda:
            net.cuda()
        if cfg.cuda:
            net.cuda()
        if not args.cuda:
            x = x.double()
    """)
    tests = {ctx.code(n.test): sem.gpu_truth(n.test) for n in ctx.iter_nodes(cst.If)}
    assert tests == {"args.cuda": True, "use": True, "log_gpu": None, "opts.log": None,
                     "opts.cuda": None, "cfg.cuda": None, "not args.cuda": False}
    assert not sem.on_gpu_path(nodes(ctx, cst.Call, "x.double()")[0])


def test_numpy_index_arrays_are_one_dimensional():
    # `np.random.permutation(n)` / `np.arange(n)` are 1-D: indexing with one selects many
    # rows, indexing with one of their elements selects one row (DL001).
    from tests.test_semantic import value_at

    source = """
    import numpy as np
    def f(n, data):
        order = np.random.permutation(len(data))  # perm
        unknown = np.random.permutation(n)  # unknown
        steps = np.arange(0, n, 4)  # steps
        one = order[2]  # one
        noise = np.random.rand(n, 4)  # noise
    """
    assert value_at(source, "perm").rank == 1
    assert value_at(source, "steps").rank == 1
    assert value_at(source, "one").rank == 0
    assert value_at(source, "noise").rank is None
    assert value_at(source, "unknown").rank is None  # `n` may be a number or an array


def test_a_user_switch_that_guards_a_move_is_a_gpu_flag():
    # `TEST_MODE = True if opt.mode == "GPU" else False` is bound only to booleans (SRGAN's
    # test_image.py); `--cuda` with a boolean default read through a converter
    # (`default=True, type=str2bool`: ssd.pytorch's train.py) is an on/off switch. Each is a
    # GPU flag where an `if` on it moves something to the device; the same forms guarding no
    # move (`QUIET`, `args.profile`), and options with choices or a non-boolean default, are not.
    ctx, sem = semantic("""
        parser = argparse.ArgumentParser()
        parser.add_argument("--cuda", default=True, type=str2bool)
        parser.add_argument("--profile", default=False, type=str2bool)
        parser.add_argument("--half", default=False, choices=[True, False])
        parser.add_argument("--gpu", default=1, type=int)
        args = parser.parse_args()
        TEST_MODE = True if args.mode == "GPU" else False
        QUIET = False if args.loud else True
        net = nn.Linear(2, 2)
        if TEST_MODE:
            net.cuda()
        if QUIET:
            print("quiet")
        if args.cuda:
            x = x.cuda()
        if args.profile:
            print("profiling")
        if args.half:
            x = x.half().cuda()
        if args.gpu:
            x = x.cuda()
    """)
    tests = {ctx.code(n.test): sem.gpu_truth(n.test) for n in ctx.iter_nodes(cst.If)}
    assert tests == {"TEST_MODE": True, "QUIET": None, "args.cuda": True, "args.profile": None,
                     "args.half": None, "args.gpu": None}

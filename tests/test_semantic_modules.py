"""The semantic model's module facts (devicelint/semantic/modules.py) and where things are
built (`default_place`, `built_place`): what DL002 and DL015 rest on."""

from __future__ import annotations

import textwrap

import libcst as cst

from devicelint.context import FileContext
from devicelint.semantic import Kind, Place
from devicelint.semantic.modules import (
    construction_methods, handed_off, holds_state, read_after_construction)

HEAD = """\
import torch
import torch.nn as nn
device = torch.device("cuda")
"""


def semantic(body: str):
    source = HEAD + textwrap.dedent(body)
    ctx = FileContext("t.py", source, cst.parse_module(source))
    ctx.walk({}, {})
    return ctx, ctx.semantic


def find(ctx, node_type, text: str):
    for node in ctx.iter_nodes(node_type):
        if ctx.code(node) == text:
            return node
    raise AssertionError(f"no {node_type.__name__} {text!r}")


def value_of(ctx, sem, text: str):
    return sem.value(find(ctx, cst.Name, text))


def test_holds_state_by_what_the_class_creates():
    ctx, sem = semantic("""
        class Scale(nn.Module):
            def forward(self, x):
                return x * 2

        class Head(nn.Module):
            def __init__(self):
                super().__init__()
                self.w = nn.Parameter(torch.ones(3))

        class Deep(Head):
            pass

        class Mixed(Other, nn.Module):
            pass

        a, b, c, d = Scale(), Head(), Deep(), Mixed()
        e, f = nn.ReLU(), nn.Linear(2, 2)
        g, h = nn.CrossEntropyLoss(), nn.CrossEntropyLoss(weight=torch.ones(3))
        i, j = nn.Sequential(nn.ReLU(), nn.Dropout()), nn.Sequential(nn.ReLU(), nn.Linear(2, 2))
        use(a, b, c, d, e, f, g, h, i, j)
    """)
    expected = {"a": False, "b": True, "c": True, "d": None, "e": False, "f": True,
                "g": False, "h": True, "i": None, "j": True}
    call = find(ctx, cst.Call, "use(a, b, c, d, e, f, g, h, i, j)")
    for arg in call.args:
        name = arg.value.value
        assert holds_state(sem, sem.value(arg.value)) is expected[name], name


def test_built_place_follows_device_keyword_and_device_context():
    ctx, sem = semantic("""
        a = nn.Linear(2, 2)
        b = nn.Linear(2, 2, device=device)
        with torch.device(device):
            c = nn.Linear(2, 2)
            t = torch.ones(3)
        u = torch.ones(3)
        use(a, b, c, t, u)
    """)
    call = find(ctx, cst.Call, "use(a, b, c, t, u)")
    places = [sem.value(arg.value).place for arg in call.args]
    assert places == [Place.CPU, Place.DEVICE, Place.DEVICE, Place.DEVICE, Place.CPU]


def test_set_default_device_makes_factories_unknown():
    ctx, sem = semantic("""
        torch.set_default_device("cuda")
        t = torch.ones(3)
        m = nn.Linear(2, 2)
        use(t, m)
    """)
    call = find(ctx, cst.Call, "use(t, m)")
    assert [sem.value(a.value).place for a in call.args] == [Place.UNKNOWN, Place.UNKNOWN]


def test_handed_off_sees_moves_the_flow_does_not_carry():
    ctx, sem = semantic("""
        from elsewhere import prepare

        def place(module):
            module.to(device)

        def peek(module):
            print(module)

        class Runner:
            def __init__(self):
                self.net = nn.Linear(2, 2)
            def setup(self):
                self.net.cuda()
            def step(self, x):
                return self.net(x.cuda())

        def f(x):
            a, b, c, d, e = nn.Linear(2, 2), nn.Linear(2, 2), nn.Linear(2, 2), nn.Linear(2, 2), nn.Linear(2, 2)
            place(a)
            peek(b)
            prepare(c)
            d.to(torch.float16)
            out = a(x), b(x), c(x), d(x), e(x)
            e.cuda()
            return out
    """)
    results = {}
    for name in "abcde":
        call = find(ctx, cst.Call, f"{name}(x)")
        results[name] = handed_off(sem, sem.value(call.func), call)
    # a: a helper of the file moves it; c: code the file does not show may; b, d, e: not
    # before the call (peek only prints, a dtype move, a move after the call).
    assert results == {"a": True, "b": False, "c": True, "d": False, "e": False}
    step = find(ctx, cst.Call, "self.net(x.cuda())")
    assert handed_off(sem, sem.value(step.func), step)  # another method moves `self.net`


def test_handed_off_counts_a_move_later_in_a_loop_around_the_call():
    ctx, sem = semantic("""
        def f(batches):
            m = nn.Linear(2, 2)
            for x in batches:
                m(x.cuda())
                m.cuda()
    """)
    call = find(ctx, cst.Call, "m(x.cuda())")
    assert handed_off(sem, sem.value(call.func), call)


def test_submodule_of_a_class_with_a_foreign_base_moves_with_it():
    ctx, sem = semantic("""
        from models import BaseVAE

        class VAE(BaseVAE):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(2, 2)
            def sample(self, z):
                return self.fc(z.cuda())

        class Plain:
            def __init__(self):
                self.fc = nn.Linear(2, 2)
            def run(self, z):
                return self.fc(z.cuda())
    """)
    calls = [c for c in ctx.iter_nodes(cst.Call) if ctx.code(c) == "self.fc(z.cuda())"]
    # BaseVAE may be an nn.Module: its submodule moves with it, its place is unknown.
    assert [sem.value(c.func).place for c in calls] == [Place.UNKNOWN, Place.CPU]


def test_a_loss_subclass_holds_state_only_if_its_body_says_so():
    ctx, sem = semantic("""
        class Masked(nn.CrossEntropyLoss):
            def forward(self, pred, label):
                return super().forward(pred, label)

        class Weighted(nn.CrossEntropyLoss):
            def __init__(self):
                super().__init__()
                self.register_buffer("w", torch.ones(3))

        use(Masked(), Weighted())
    """)
    call = find(ctx, cst.Call, "use(Masked(), Weighted())")
    assert [holds_state(sem, sem.value(a.value)) for a in call.args] == [None, True]


def test_a_parameter_of_a_module_moves_with_it_a_plain_tensor_does_not():
    ctx, sem = semantic("""
        class Norm(nn.Module):
            def __init__(self):
                super().__init__()
                self.scale = nn.Parameter(torch.ones(4))
                self.mask = torch.ones(4)
            def forward(self, x):
                return use(self.scale, self.mask)
    """)
    call = find(ctx, cst.Call, "use(self.scale, self.mask)")
    assert [sem.value(a.value).place for a in call.args] == [Place.UNKNOWN, Place.CPU]


def test_a_chain_of_module_methods_as_a_statement_moves_the_module():
    ctx, sem = semantic("""
        def f(x):
            a, b = nn.Linear(2, 2), nn.Linear(2, 2)
            a.to(device).to(torch.bfloat16)
            b.eval().cuda()
            return use(a, b)
    """)
    call = find(ctx, cst.Call, "use(a, b)")
    assert [sem.value(arg.value).place for arg in call.args] == [Place.DEVICE, Place.DEVICE]


def test_a_module_moved_to_an_unknown_target_is_of_unknown_place():
    ctx, sem = semantic("""
        def f(target):
            a = nn.Linear(2, 2).to(target)
            b = nn.Linear(2, 2).to(torch.float16)
            return use(a, b)
    """)
    call = find(ctx, cst.Call, "use(a, b)")
    assert [sem.value(arg.value).place for arg in call.args] == [Place.UNKNOWN, Place.CPU]


def test_a_statement_moving_an_attribute_moves_the_module_for_the_other_methods():
    # `nn.Module.to` moves the module in place and returns it: `self.net.to(device)` alone,
    # after the method's bindings of `self.net` (in both arms, or under an `if` taken with a
    # GPU), changes what `self.net` holds for the class's other methods and for later reads.
    ctx, sem = semantic("""
        class Solver:
            def __init__(self, wide):
                if wide:
                    self.net = nn.Sequential(nn.Linear(2, 4), nn.Linear(4, 2))
                else:
                    self.net = nn.Linear(2, 2)
                early = use(self.net)
                self.net.to(device)
                if torch.cuda.is_available():
                    self.head = nn.Linear(2, 2)
                self.head = nn.Linear(2, 2)
                if torch.cuda.is_available():
                    self.head.cuda()
                self.scale = torch.ones(2)
                self.scale.to(device)
                self.probe = nn.Linear(2, 2)
                self.fp16 = nn.Linear(2, 2)
                self.fp16.to(torch.float16)
            def probe_on_gpu(self):
                self.probe.cuda()
            def step(self, x):
                return use(self.net, self.net(x), self.head, self.scale, self.probe, self.fp16)
    """)
    early = find(ctx, cst.Call, "use(self.net)")
    assert sem.value(early.args[0].value).place is Place.CPU  # read before the move
    call = find(ctx, cst.Call, "use(self.net, self.net(x), self.head, self.scale, self.probe, self.fp16)")
    places = [sem.value(arg.value).place for arg in call.args]
    # a tensor does not move in place; a move in a method that may not run is undecided;
    # a dtype-only `.to` leaves the module where it was
    assert places == [Place.DEVICE, Place.DEVICE, Place.DEVICE, Place.CPU, Place.UNKNOWN, Place.CPU]
    assert sem.value(call.args[0].value).kind is Kind.MODULE


def test_autograd_gradients_live_where_their_inputs_do():
    ctx, sem = semantic("""
        def f(x):
            x = x.to(device)
            grad = torch.autograd.grad(outputs=x.sum(), inputs=x, create_graph=True)[0]
            return use(grad)
    """)
    value = sem.value(find(ctx, cst.Call, "use(grad)").args[0].value)
    assert value.place is Place.DEVICE
    assert value.layout.state != "narrowed"  # a gradient, not a split's piece


def test_an_attribute_read_only_while_the_instance_is_built():
    """`__init__` and a helper called only from it build the instance; a dict they alone
    read is not what `forward` uses. A helper `forward` calls, or one never called in the
    class (it may run from outside), runs later."""
    ctx, sem = semantic("""
    class Net(nn.Module):
        def __init__(self, name):
            super().__init__()
            self.table = {"a": nn.Linear(2, 2)}
            self.kept = {"b": nn.Linear(2, 2)}
            self.body = self._pick(name)

        def _pick(self, name):
            return self.table[name]

        def _lookup(self):
            return self.kept["b"]

        def spare(self):
            return 1

        def forward(self, x):
            return self.body(x) + self._lookup()(x)
    """)
    owner = find(ctx, cst.ClassDef, ctx.code(next(ctx.iter_nodes(cst.ClassDef))))
    assert construction_methods(sem, owner) == {"__init__", "_pick"}
    assert not read_after_construction(sem, owner, "table")
    assert read_after_construction(sem, owner, "kept")

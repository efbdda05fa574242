"""Semantic model facts that raise the recall of the loop rules: fields of a module's output,
module methods that run the model's own code, and a module reaching itself through
`sys.modules[__name__]`."""

from __future__ import annotations

import libcst as cst

from devicelint.semantic import Kind, Place
from tests.test_semantic import model_of, value_at


def test_a_field_of_a_module_output_lives_where_the_output_does():
    source = """
        import torch
        from nets import FeatureNet
        net = FeatureNet().to(torch.device("cuda"))
        out = net(torch.zeros(2, device="cuda"))
        low = out.low  # field
        shape = out.shape  # shape
        moved = torch.zeros(3).to("cuda")
        odd = moved.whatever  # not-a-module-output
    """
    field = value_at(source, "field")
    assert field.kind is Kind.TENSOR and field.place is Place.DEVICE
    assert value_at(source, "shape").kind is Kind.SIZE
    assert value_at(source, "not-a-module-output").place is not Place.DEVICE


def _loop_roles(source: str) -> list[str]:
    ctx, sem = model_of(source)
    return [sem.loops.role(loop) for loop in ctx.iter_nodes(cst.For)]


def test_a_module_method_on_this_iterations_data_is_a_step():
    roles = _loop_roles("""
        import torch
        from nets import Seq2Seq
        model = Seq2Seq().to(torch.device("cuda"))
        ys = torch.zeros(1, 1, device="cuda")
        for _ in range(10):
            out = model.decode(ys)
            ys = torch.cat([ys, out[-1:]])
    """)
    assert roles == ["step"]


def test_nn_module_api_methods_are_not_steps():
    roles = _loop_roles("""
        import torch
        from nets import Seq2Seq
        model = Seq2Seq().to(torch.device("cuda"))
        for name, p in model.named_parameters():
            model.register_buffer(name + "_copy", p)
    """)
    assert roles == ["other"]


def test_a_module_reaching_itself_through_sys_modules():
    source = """
        import sys
        lib = sys.modules[__name__]
        def accuracy(a, b):
            return float((a == b).sum())
        class Meter:
            def add(self, v):
                return float(v)
        f = lib.accuracy  # function
        m = lib.Meter(1)
        r = m.add(1)  # method-call
        import os as other
        g = other.accuracy  # other-module
    """
    assert value_at(source, "function").kind is Kind.CALLABLE
    assert value_at(source, "other-module").kind is not Kind.CALLABLE
    ctx, sem = model_of(source)
    calls = [c for c in ctx.iter_nodes(cst.Call) if isinstance(c.func, cst.Attribute) and c.func.attr.value == "add"]
    found = sem.syncs.callee(calls[0])
    assert found is not None and found[0].name.value == "add"

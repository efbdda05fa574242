"""The semantic model's cost (issues 12 and 17): cheap first looks that spare building
flows, checked to answer exactly as the full analysis does."""

from __future__ import annotations

import textwrap

import libcst as cst

from devicelint import safe_parse
from devicelint.context import FileContext


def model_of(source: str):
    source = textwrap.dedent(source)
    ctx = FileContext("t.py", source, safe_parse.parse_module(source))
    ctx.walk({}, {})
    return ctx, ctx.semantic


def _calls(ctx):
    return {ctx.code(call.func): call for call in ctx.iter_nodes(cst.Call)}


def test_qualname_of_an_import_builds_no_flow():
    ctx, sem = model_of("""
    import torch
    import torch.nn as nn

    def f(n):
        return torch.zeros(n), nn.Linear(n, n)
    """)
    calls = _calls(ctx)
    assert sem.qualname(calls["torch.zeros"].func) == "torch.zeros"
    assert sem.qualname(calls["nn.Linear"].func) == "torch.nn.Linear"
    assert sem._flows == {}  # no scope was analysed to answer


def test_qualname_still_sees_every_other_binding_of_an_imported_name():
    # Each of these rebinds `torch` after the import: the name is no longer the module.
    rebinders = [
        "torch = object()",
        "for torch in range(3): pass",
        "with open('f') as torch: pass",
        "try:\n    pass\nexcept Exception as torch:\n    pass",
        "def torch(): pass",
        "class torch: pass",
        "(torch := 3)",
    ]
    for rebind in rebinders:
        body = textwrap.indent(rebind, "    ")
        ctx, sem = model_of(f"import torch\ndef f():\n{body}\n    return torch.zeros(3)\n")
        call = _calls(ctx)["torch.zeros"]
        assert sem.qualname(call.func) is None, rebind
    # A statement that moves it in place refines the binding (module level: the import
    # reaches it there).
    ctx, sem = model_of("import torch\ntorch.to('cpu')\nx = torch.zeros(3)\n")
    assert sem.qualname(_calls(ctx)["torch.zeros"].func) is None
    ctx, sem = model_of("""
    import torch
    def f(torch):
        return torch.zeros(3)
    """)
    assert sem.qualname(_calls(ctx)["torch.zeros"].func) is None


def test_match_capture_rebinds_an_imported_name():
    ctx, sem = model_of("""
    import torch
    def f(v):
        match v:
            case [torch]:
                return torch.zeros(3)
    """)
    assert sem.qualname(_calls(ctx)["torch.zeros"].func) is None


def test_global_declarations_found_without_walking_scopes():
    ctx, sem = model_of("""
    import torch
    global_pool = None   # mentions "global" but declares nothing

    def setup():
        global model
        model = torch.nn.Linear(2, 2)

    def outer():
        x = 1
        def inner():
            nonlocal x
            x = 2
        return inner
    """)
    functions = {f.name.value: f for f in ctx.iter_nodes(cst.FunctionDef)}
    assert [type(n) for n in sem.declarations(functions["setup"])] == [cst.Global]
    assert [type(n) for n in sem.declarations(functions["inner"])] == [cst.Nonlocal]
    assert sem.declarations(functions["outer"]) == []
    assert sem.declarations(ctx.module) == []
    assert "model" in sem.flow(functions["setup"]).globals
    assert "x" in sem.flow(functions["inner"]).nonlocals


def test_module_member_defs_only_for_names_bound_to_this_module():
    ctx, sem = model_of("""
    import sys
    import torch
    lib = sys.modules[__name__]
    def zeros(n):
        return torch.zeros(n)
    def f(x):
        return lib.zeros(3), x.zeros(3)
    """)
    calls = _calls(ctx)
    found = sem.module_member_defs(calls["lib.zeros"].func)
    assert [d.kind for d in found] == ["def"]
    assert sem.module_member_defs(calls["x.zeros"].func) is None
    assert sem._this_module_names() == {"lib"}

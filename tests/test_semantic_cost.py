"""The semantic model's cost (issues 12 and 17): cheap first looks that spare building
flows, checked to answer exactly as the full analysis does."""

from __future__ import annotations

import textwrap
from pathlib import Path

import libcst as cst

from devicelint import safe_parse
from devicelint.context import FileContext
from devicelint.semantic.model import never_tensor
from devicelint.semantic.values import Kind, Place


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


# -- cheap first looks checked against the full analysis on every fixture ------------------
FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def _fixture_models():
    for path in sorted(FIXTURES.rglob("*.py")):
        source = path.read_text(encoding="utf-8")
        try:
            module = safe_parse.parse_module(source)
        except Exception:  # noqa: BLE001 - fixtures of syntax errors
            continue
        ctx = FileContext(str(path), source, module)
        ctx.walk({}, {})
        yield path, ctx, ctx.semantic


def test_never_tensor_agrees_with_values_on_the_fixtures():
    looked = 0
    for path, ctx, sem in _fixture_models():
        for node in ctx.nodes:
            if isinstance(node, cst.BaseExpression) and never_tensor(node):
                looked += 1
                assert sem.value(node).kind is not Kind.TENSOR, (path, ctx.position(node), ctx.code(node))
    assert looked > 1000  # the look answered for many expressions


def test_never_tensor_by_syntax():
    ctx, sem = model_of("""
    import torch
    x = torch.zeros(3)
    a = (1, -2.0, "s", f"{x}", None, True, [x], {x}, {1: x}, [v for v in x], lambda: x, not x, x is None, ...)
    b = (x, -x, ~x, x == 1, x[0], x.t(), -(x))
    """)
    tuples = [n.value for n in ctx.iter_nodes(cst.Assign) if isinstance(n.value, cst.Tuple)]
    assert all(never_tensor(e.value) for e in tuples[0].elements)
    assert not any(never_tensor(e.value) for e in tuples[1].elements)
    assert all(sem.value(e.value).kind is Kind.TENSOR for e in tuples[1].elements)


def test_a_name_bound_nowhere_reaches_nothing_without_a_flow():
    ctx, sem = model_of("""
    def f(x, *args, **kwargs):
        return len(x), args, kwargs
    """)
    names = {n.value: n for n in ctx.iter_nodes(cst.Name)}
    assert sem.defs(names["len"]) == []
    assert sem._flows == {}  # a builtin: nothing analysed
    assert [d.kind for d in sem.defs(names["args"])] == ["param"]  # `*args` binds (a field the walk skips)
    assert [d.kind for d in sem.defs(names["kwargs"])] == ["param"]


def test_defs_of_every_read_agree_with_the_flow_on_the_fixtures():
    asked = skipped = 0
    for path, ctx, sem in _fixture_models():
        for name in ctx.iter_nodes(cst.Name):
            full = sem._reaching_defs(name)
            assert sem.defs(name) == full, (path, ctx.position(name), name.value)
            asked += 1
            skipped += name.value not in sem._bound_names_anywhere()
    assert skipped > 100 and asked > skipped


def test_call_sites_matched_once_per_function():
    ctx, sem = model_of("""
    import torch

    def run(a, b, c):
        return a + b + c

    run(torch.zeros(2).cuda(), 1, 2)
    run(torch.zeros(2).cuda(), 3, 4)
    """)
    function = next(iter(ctx.iter_nodes(cst.FunctionDef)))
    a, b, c = function.params.params
    assert sem.param_value(a).place is Place.DEVICE
    assert sem.param_value(b).kind is Kind.NUMBER
    calls, spawns = sem._sites[id(function)]
    assert len(calls) == 2 and spawns == ()
    sem._sites[id(function)] = ((), ())  # the table is what later parameters read
    assert sem.param_value(c).kind is Kind.UNKNOWN


def test_foreign_uploads_looked_at_with_ast_before_building_the_other_model(tmp_path):
    from devicelint import project_index
    from devicelint.project_index import ProjectIndex
    from devicelint.semantic import dataflow

    files = {
        "utils.py": (
            "import torch\n\n"
            "def normalize(batch):\n    mean = batch.new_tensor([0.485, 0.456])\n    return batch - mean\n\n"
            "def fill(x):\n    return x + torch.tensor([1.0], device='cuda')\n\n"
            "def moved(x):\n    if x is None:\n        return x.to('cuda')\n    return x\n\n"
            "def start(x):\n    s = torch.tensor([1.0])\n    if torch.cuda.is_available():\n"
            "        s = s.cuda()\n    return x + s\n\n"
            "def plain(x):\n    return x * 2\n"),
        "train.py": (
            "import torch\nimport utils\nfrom utils import plain\n\n"
            "def run(loader):\n    for x in loader:\n        x = x.cuda()\n"
            "        utils.normalize(x)\n        utils.fill(x)\n        utils.moved(x)\n        utils.start(x)\n"
            "        plain(x)\n"),
    }
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    index = ProjectIndex.build(str(tmp_path), [(str(tmp_path / n), n, t.encode()) for n, t in files.items()])
    project_index.use(index)
    try:
        source = files["train.py"]
        ctx = FileContext("train.py", source, safe_parse.parse_module(source))
        ctx.walk({}, {})
        sem = ctx.semantic
        calls = _calls(ctx)
        assert dataflow.foreign_call_uploads(sem, calls["plain"]) is None
        assert index._models == {}  # `plain` copies nothing: utils.py's model was not built
        for label in ("utils.normalize", "utils.fill", "utils.moved", "utils.start", "plain"):
            other, function = sem.syncs.foreign_function(calls[label])  # the full analysis
            full = dataflow.per_call_uploads(other, function)
            cheap = dataflow.foreign_call_uploads(sem, calls[label])
            assert (cheap[2] if cheap is not None else ()) == full, label
            assert bool(full) == (label in ("utils.normalize", "utils.fill", "utils.start")), label
    finally:
        project_index.use(None)


def test_dl015_asks_no_value_that_cannot_change_its_answer():
    from devicelint.rules.dl015_device_mismatch import DeviceMismatch

    ctx, sem = model_of("""
    import torch

    def f(a, b):
        c = torch.zeros(3)
        return a + b, c + b, c[0], c[b]
    """)
    rule = DeviceMismatch(ctx)
    first, second = list(ctx.iter_nodes(cst.BinaryOperation))
    assert rule._check(first, [first.left, first.right], "") is False
    assert id(first.right) not in sem._values  # `a` is no tensor: `b` could not make a mismatch
    assert rule._check(second, [second.left, second.right], "") is False
    assert id(second.right) in sem._values  # `c` is a CPU tensor: `b` is asked
    literal, named = list(ctx.iter_nodes(cst.Subscript))
    rule.leave_Subscript(literal)
    assert id(literal.value) not in sem._values  # `c[0]`: a literal index is never on the device
    rule.leave_Subscript(named)
    assert id(named.value) in sem._values


def test_copying_functions_in_one_pass_as_one_walk_per_function():
    import ast

    from devicelint.semantic import dataflow

    class Index:
        derived: dict = {}
        last_looked = None

        @staticmethod
        def identity(module):
            return ""

    class Module:
        def __init__(self, path, text):
            self.path, self.text = path, text

    sources = [path.read_text(encoding="utf-8") for path in sorted(FIXTURES.rglob("*.py"))]
    sources.append("def outer(x):\n    def inner(y):\n        return y.to('cuda')\n    return inner\n"
                   "@deco(device='cuda')\ndef decorated():\n    pass\ndef plain(z):\n    return z\n")
    for number, text in enumerate(sources):
        try:
            tree = ast.parse(text)
        except SyntaxError:
            continue
        bound = dataflow._ModuleNames(tree)
        walked = frozenset(node.name for node in ast.walk(tree)
                           if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
                           and any(dataflow._may_copy(inner, bound) for inner in ast.walk(node)))
        assert dataflow._copying_functions(Index(), Module(str(number), text)) == walked
    assert walked == {"outer", "inner", "decorated"}


def test_a_value_computed_beside_a_cycle_is_memoised_and_one_computed_from_it_is_not():
    # `grow(x[1:])` reads grow's returned value while it is being computed (a cycle): it
    # and the tuple holding it are computed again when asked later. `torch.zeros(3)`,
    # computed after it in the same tuple, and `torch.ones(3)`, do not depend on the
    # cycle: they are kept (they were recomputed on every later question, which made
    # torchvision's _meta.py chains of box converters cost twice the rest of the file).
    ctx, sem = model_of("""
    import torch

    def grow(x):
        if x.numel() > 8:
            return (grow(x[1:]), torch.zeros(3))
        return torch.ones(3)

    y = grow(torch.ones(4))
    """)
    calls = {ctx.code(call): call for call in ctx.iter_nodes(cst.Call)}
    sem.value(calls["grow(torch.ones(4))"])
    memoised = {code for code, call in calls.items() if id(call) in sem._values}
    assert memoised == {"grow(torch.ones(4))", "torch.zeros(3)", "torch.ones(3)"}
    assert id(next(iter(ctx.iter_nodes(cst.Tuple)))) not in sem._values


def test_values_joined_for_a_parameter_or_a_return_stop_at_the_first_unknown():
    # Every call site must agree for a parameter to be known, every return for a returned
    # value: once one is "unknown" the others cannot change the answer, and their values
    # are not computed (they were, for every call site of every function asked about).
    ctx, sem = model_of("""
    import torch

    def f(x):
        return x

    def g(flag):
        if flag:
            return mystery
        return torch.ones(2)

    f(mystery)
    f(torch.zeros(3))
    """)
    calls = {ctx.code(call): call for call in ctx.iter_nodes(cst.Call)}
    functions = {f.name.value: f for f in ctx.iter_nodes(cst.FunctionDef)}
    assert sem.param_value(functions["f"].params.params[0]).kind is Kind.UNKNOWN
    assert sem.returned_value(functions["g"]).kind is Kind.UNKNOWN
    assert id(calls["torch.zeros(3)"]) not in sem._values
    assert id(calls["torch.ones(2)"]) not in sem._values
    # Asked, they are what they are.
    assert sem.value(calls["torch.zeros(3)"]).kind is Kind.TENSOR
    assert sem.value(calls["torch.ones(2)"]).kind is Kind.TENSOR


def test_exact_type_sets_hold_every_statement_class_the_parser_makes():
    """The flow builder tests statements by exact type (flow._SMALL_STATEMENTS, not
    isinstance on libcst's abstract base): every small statement the parser makes is in
    the set, and a compound statement is not."""
    from devicelint.semantic import flow

    source = ("import a\nfrom b import c\nx = 1\ny: int = 2\nx += 1\nf()\ndel x\npass\n"
              "assert x\nglobal g\nraise E\nfor i in x:\n    break\n    continue\n"
              "def h():\n    nonlocal z\n    return 1\n")
    module = safe_parse.parse_module(source)
    ctx = FileContext("t.py", source, module)
    ctx.walk({}, {})
    smalls = {type(node) for node in ctx.nodes if isinstance(node, cst.BaseSmallStatement)}
    assert len(smalls) == 15
    assert smalls <= flow._SMALL_STATEMENTS
    assert not {cst.If, cst.For, cst.While, cst.FunctionDef, cst.SimpleStatementLine} & flow._SMALL_STATEMENTS


def test_reaching_defs_come_in_source_order():
    ctx, sem = model_of("""
    if c:
        x = 1
    else:
        x = 2
    x
    """)
    read = [n for n in ctx.iter_nodes(cst.Name) if n.value == "x"][-1]
    assert [ctx.order(d.node) for d in sem.defs(read)] == sorted(ctx.order(d.node) for d in sem.defs(read))
    assert [d.value.value for d in sem.defs(read)] == ["1", "2"]

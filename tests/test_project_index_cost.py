"""What the project index spares: questions about other files answered without building their
semantic models when the answer cannot depend on them (docs/performance.md, "Session 7:
index cost")."""

from __future__ import annotations

import pytest

from devicelint import project_index
from devicelint.runner import Overrides, lint_paths

SCRIPT = """import torch
from torch.utils.data import DataLoader
from b_util import log_line
from c_solver import fit


def main(dataset, model):
    loader = DataLoader(dataset, batch_size=8)
    log_line("start", 3)
    fit(model, loader)
"""
UTIL = "def log_line(text, times):\n    print(text * times)\n"
SOLVER = """import torch


def fit(model, loader):
    for inputs, targets in loader:
        inputs = inputs.to("cuda")
        model(inputs)
"""


def _project(tmp_path):
    (tmp_path / "a_train.py").write_text(SCRIPT)
    (tmp_path / "b_util.py").write_text(UTIL)
    (tmp_path / "c_solver.py").write_text(SOLVER)


def _count_models(monkeypatch) -> list[str]:
    """The file names of the other files' models the index builds from now on, in order."""
    built: list[str] = []
    original = project_index.ProjectIndex.model_of

    def model_of(self, module, context_type):
        if module.path not in self._models:
            built.append(module.path.rsplit("/", 1)[-1])
        return original(self, module, context_type)

    monkeypatch.setattr(project_index.ProjectIndex, "model_of", model_of)
    return built


def _lint(tmp_path, monkeypatch) -> tuple[list, list[str]]:
    built = _count_models(monkeypatch)
    found = lint_paths([str(tmp_path)], Overrides(select=["DL008"]), use_cache=False, jobs=1).findings
    return sorted((f.path.rsplit("/", 1)[-1], f.line, f.code) for f in found), built


def test_a_call_given_no_loader_builds_no_model_of_the_callee(tmp_path, monkeypatch) -> None:
    _project(tmp_path)
    findings, built = _lint(tmp_path, monkeypatch)
    # The loader handed to c_solver.fit is still followed there (its model is built) ...
    assert ("a_train.py", 8, "DL008") in findings
    assert "c_solver.py" in built
    # ... but `log_line("start", 3)` hands over no loader's batches: b_util.py is not read.
    assert "b_util.py" not in built


COPYING = '''import torch


@register(device="cuda")
def decorated(x):
    return x


def outer(batch, table):
    def inner(y):
        return (
            y
            .to("cuda")
        )
    return inner(batch)


class Head:
    def forward(self, x):
        return x.new_tensor([1.0])

    def plain(self, x):
        total = 0
        for value in x:
            total += value * 2
        return total


def quiet(rows):
    out = []
    for row in rows:
        out.append(sum(row) / len(row))
    return out
'''


def test_copying_functions_walks_only_the_lines_that_may_copy(monkeypatch) -> None:
    from types import SimpleNamespace

    from devicelint.semantic import dataflow

    asked: list = []
    original = dataflow._may_copy
    monkeypatch.setattr(dataflow, "_may_copy", lambda node, *rest: asked.append(node) or original(node, *rest))
    index = SimpleNamespace(derived={}, identity=lambda module: "", kept_ast=lambda key, text: None, last_looked=None)
    found = dataflow._copying_functions(index, SimpleNamespace(path="m.py", key="m.py", text=COPYING))
    # A decorator's call names its function, a call split over lines names every function
    # around it, a method is named by its own name.
    assert found == {"decorated", "outer", "inner", "forward"}
    # The statements of `quiet` and `Head.plain` (no `to`, `new_tensor` or `device` on their
    # lines) are not walked.
    lines = {getattr(node, "lineno", 0) for node in asked}
    assert not lines & set(range(22, 34))


QUIET_SOLVER = """import torch


def fit(model, loader):
    for inputs, targets in loader:
        model(inputs)
"""


def test_a_loader_handed_to_a_module_that_moves_nothing_builds_no_model(tmp_path, monkeypatch) -> None:
    _project(tmp_path)
    (tmp_path / "c_solver.py").write_text(QUIET_SOLVER)  # no `.to(`, `.cuda(` or `.type(` call
    findings, built = _lint(tmp_path, monkeypatch)
    # The call hands over the loader, but c_solver.py's text holds no copy: not built.
    assert "c_solver.py" not in built
    assert not [f for f in findings if f[0] == "a_train.py"]


def test_move_words_match_every_spelling_of_a_copy_call() -> None:
    import ast

    from devicelint.semantic.batches import _MOVE_WORDS

    spellings = ['x.to("cuda")', 'x . cuda ()', 'x.\\\n    type(t)', '(x.  # why\n to # where\n ("cuda"))',
                 '(x.to)("cuda")', '((x .cuda))()', 'x.to  (\n"cuda")']
    for text in spellings:
        call = next(n for n in ast.walk(ast.parse(text)) if isinstance(n, ast.Call))
        assert isinstance(call.func, ast.Attribute) and call.func.attr in ("to", "cuda", "type"), text
        assert _MOVE_WORDS.search(text), text
    for text in ['x.tolist()', 'x.to_device("cuda")', 'torch.cuda.is_available()', 'f = x.to', 'x.cudax()']:
        assert not _MOVE_WORDS.search(text), text


def test_real_paths_are_os_realpath(tmp_path, monkeypatch) -> None:
    # Resolved once per directory: through a linked directory, a linked file, `..`, a
    # relative path and a file that does not exist, the same as os.path.realpath.
    import os

    (tmp_path / "real").mkdir()
    (tmp_path / "real" / "a.py").write_text("")
    (tmp_path / "other").mkdir()
    os.symlink(tmp_path / "real", tmp_path / "linked")
    os.symlink(tmp_path / "real" / "a.py", tmp_path / "other" / "b.py")
    monkeypatch.chdir(tmp_path / "other")
    paths = [str(tmp_path / "linked" / "a.py"), str(tmp_path / "other" / "b.py"), "b.py",
             str(tmp_path / "linked" / ".." / "other" / "b.py"), "../linked/a.py", str(tmp_path / "gone.py")]
    assert project_index.real_paths(paths) == [os.path.realpath(p) for p in paths]
    assert project_index.real_paths(paths)[:2] == [str((tmp_path / "real" / "a.py").resolve())] * 2


HELPERS = "import torch\n\n\ndef first(x):\n    return x.cpu()\n\n\ndef second(y):\n    return y.float()\n"


def test_a_worker_given_shared_facts_parses_one_function_not_the_module(tmp_path, monkeypatch) -> None:
    # Two workers of one run (two indexes sharing one directory): the one that parses
    # `helpers.py` shares the spans of its functions with its facts; the other takes both
    # and parses only the function asked about (it parsed the whole module again before).
    path = tmp_path / "helpers.py"
    path.write_text(HELPERS)
    files = [(str(path), "helpers.py", HELPERS.encode())]
    parser = project_index.ProjectIndex.build(str(tmp_path), files, recording=False)
    parser.share_facts()
    try:
        other = project_index.ProjectIndex.build(str(tmp_path), files, recording=False)
        other._shared = parser._shared
        assert parser.ready(parser.by_key["helpers.py"])
        assert parser.parses == 1
        module = other.by_key["helpers.py"]
        assert other.ready(module) and other.parses == 0  # the facts: shared
        parsed: list[int] = []
        real_parse = project_index._parse
        monkeypatch.setattr(project_index, "_parse", lambda text: parsed.append(len(text)) or real_parse(text))
        statement = other.function_def(module, "second")
        assert statement is not None and statement.name == "second"
        assert parsed == [len("def second(y):\n    return y.float()\n")]
        assert other.view("helpers.py").raw_calls("first") == {"x.cpu"}
    finally:
        parser.stop_sharing()


def test_a_lint_run_freezes_the_models_it_builds_for_other_files(tmp_path, monkeypatch) -> None:
    # Kept until the run ends: out of the cyclic collector's reach once built.
    import gc

    _project(tmp_path)
    frozen: list[int] = []
    original = project_index.ProjectIndex.model_of

    def model_of(self, module, context_type):
        found = original(self, module, context_type)
        frozen.append(gc.get_freeze_count())
        return found

    monkeypatch.setattr(project_index.ProjectIndex, "model_of", model_of)
    before = gc.get_freeze_count()
    try:
        lint_paths([str(tmp_path)], Overrides(select=["DL008"]), use_cache=False, jobs=1)
        assert frozen and frozen[0] > before
    finally:
        gc.unfreeze()


LOOPED = """import torch
from util import scale


def run(model, loader):
    for x in loader:
        x = x.to("cuda")
        y = scale(x)
        model(y)
"""


def test_a_looped_call_of_a_function_whose_module_copies_nothing_builds_no_model(tmp_path, monkeypatch) -> None:
    # DL016's round trips through another file's function (check_helper_round_trip,
    # check_foreign_round_trip) need a `.to(...)`/`.cuda(...)` (or `device=`) there: a
    # module without one is not built for them.
    (tmp_path / "train.py").write_text(LOOPED)
    (tmp_path / "util.py").write_text("def scale(t):\n    return t * 2\n")
    built = _count_models(monkeypatch)
    found = lint_paths([str(tmp_path)], Overrides(select=["DL016"]), use_cache=False, jobs=1).findings
    assert not found and built == []
    # The same call where `scale` reads its argument back and copies it again: built, reported.
    (tmp_path / "util.py").write_text("def scale(t):\n    return t.cpu().cuda() * 2\n")
    found = lint_paths([str(tmp_path)], Overrides(select=["DL016"]), use_cache=False, jobs=1).findings
    assert [(f.path.rsplit("/", 1)[-1], f.line, f.code) for f in found] == [("train.py", 8, "DL016")]
    assert built == ["util.py"]


ROUND_TRIP_HELPERS = '''def scale(t):
    return {first}(t) * 2


def middle(t):
    return {second}(t)


def inner(t):
    return deeper(t)


def deeper(t):
    return t.cpu().cuda()


def unrelated(t):
    return t.cuda()
'''


@pytest.mark.parametrize("first, second, copies", [
    ("abs", "inner", False),     # `scale` calls no function of its module: no copy reached
    ("middle", "abs", False),    # one call deep, `middle` copies nothing
    ("middle", "inner", False),  # the copy is three calls deep: past what the round trip follows
    ("middle", "deeper", True),  # two calls deep: followed and reported
    ("inner", "abs", True),      # `inner` calls `deeper`: two calls deep from `scale`
])
def test_a_looped_call_builds_the_callees_module_only_when_a_copy_is_within_reach(
        tmp_path, monkeypatch, first, second, copies) -> None:
    # check_foreign_round_trip follows the callee's calls of its module's functions two calls
    # deep (`_param_round_trips`): a module copying only further away, or in functions the
    # callee never calls, is not built for it (dataflow.may_reach_copy).
    (tmp_path / "train.py").write_text(LOOPED)
    (tmp_path / "util.py").write_text(ROUND_TRIP_HELPERS.format(first=first, second=second))
    built = _count_models(monkeypatch)
    found = lint_paths([str(tmp_path)], Overrides(select=["DL016"]), use_cache=False, jobs=1).findings
    assert [(f.path.rsplit("/", 1)[-1], f.line, f.code) for f in found] == ([("train.py", 8, "DL016")] if copies else [])
    assert built == (["util.py"] if copies else [])


def test_a_callee_whose_helper_is_used_as_a_value_builds_the_module(tmp_path, monkeypatch) -> None:
    # `step = deeper` then `step(t)`: the call is not written with the copying function's
    # name, so every function of the module may reach it (`syncs.callee` follows the value).
    (tmp_path / "train.py").write_text(LOOPED)
    (tmp_path / "util.py").write_text(ROUND_TRIP_HELPERS.format(first="abs", second="abs").replace(
        "def scale(t):\n    return abs(t) * 2", "def scale(t):\n    step = deeper\n    return step(t) * 2"))
    built = _count_models(monkeypatch)
    found = lint_paths([str(tmp_path)], Overrides(select=["DL016"]), use_cache=False, jobs=1).findings
    assert [(f.path.rsplit("/", 1)[-1], f.line, f.code) for f in found] == [("train.py", 8, "DL016")]
    assert built == ["util.py"]


LOOK = '''import torch


def moves(x):
    y = helper(x) + x.cuda()
    return y


def plain(x):
    return x * 2


def helper(x):
    y = x.to("cuda")
    return y
'''


def test_may_move_to_device_names_functions_that_copy_and_modules_that_give_back_a_copy() -> None:
    from types import SimpleNamespace

    from devicelint.semantic import dataflow

    def look(text: str, name: str) -> bool:
        index = SimpleNamespace(derived={}, identity=lambda module: "", kept_ast=lambda key, text: None, last_looked=None)
        return dataflow.may_move_to_device(index, SimpleNamespace(path="m.py", key="m.py", text=text), name)

    assert look(LOOK, "moves") and look(LOOK, "helper")
    # `plain` copies nothing, and no function gives back a copy's result (`helper` returns a
    # name): no call of it can copy what it is handed.
    assert not look(LOOK, "plain")
    # With a function that gives back `x.to("cuda")` (`returned_move` may accept it): those
    # calling it by its name may (`moves`, and `plain` once it does); `plain`, calling no
    # function, may not (session 13 answered for the whole module: it may) ...
    returning = LOOK.replace("    y = x.to(\"cuda\")\n    return y", "    return x.to(\"cuda\")")
    assert look(returning, "moves") and not look(returning, "plain")
    assert look(returning.replace("return x * 2", "return helper(x) * 2"), "plain")
    assert look(returning.replace("return x * 2", "return self.helper(x) * 2"), "plain")
    # ... unless the helper's name is used other than as a callee: under another name, any
    # call may run it (an alias, an argument, a string `getattr` may look up).
    for escape in ("run = helper\n", "TABLE = {'h': helper}\n", "KEY = 'helper'\n", "apply(helper)\n"):
        assert look(returning + escape, "plain"), escape
    assert not look(returning + "y = helper(1)\n", "plain")
    # Handed to a function the module only imports, in a statement whose result is dropped
    # (`_log_api_usage_once(to_tensor)`): it comes back to no call of the module.
    logged = "from util import log_usage\n" + returning.replace("    return x.to(", "    log_usage(helper)\n    return x.to(")
    assert not look(logged, "plain") and look(logged, "moves")
    # ... not when that name is also bound otherwise, or the result is kept.
    assert look(logged + "log_usage = print\n", "plain")
    assert look(logged + "def other(log_usage):\n    return 1\n", "plain")  # a parameter far below
    assert look(logged + "for log_usage in []:\n    pass\n", "plain")
    assert look(logged + "try:\n    pass\nexcept OSError as log_usage:\n    pass\n", "plain")
    assert look(logged.replace("    log_usage(helper)", "    kept = log_usage(helper)"), "plain")
    # Not looked at (does not parse): it may.
    assert look("def plain(x:\n", "plain")


def test_a_module_is_looked_at_once_however_often_it_is_asked(monkeypatch) -> None:
    # `_module_look` is kept by the index under its own key (until session 13 the key was
    # rebound to the file's path before the look was stored: every question walked the
    # module's `ast` again).
    from types import SimpleNamespace

    from devicelint.semantic import dataflow

    walked: list = []
    original = dataflow._word_lines
    monkeypatch.setattr(dataflow, "_word_lines", lambda text: walked.append(text) or original(text))
    index = SimpleNamespace(derived={}, identity=lambda module: "id", kept_ast=lambda key, text: None, last_looked=None)
    module = SimpleNamespace(path="m.py", key="m.py", text=LOOK)
    for _ in range(3):
        assert dataflow.may_move_to_device(index, module, "moves")
        assert dataflow._copying_functions(index, module) == {"moves", "helper"}
    assert len(walked) == 1


MOVING_TRAIN = """import torch
from util import prepare


def run(model, loader):
    for batch in loader:
        batch = prepare(batch)
        model(batch)
"""
MOVING_UTIL = """import torch


def log(x):
    print(x.item())


def prepare(batch):
    log(batch)
    return batch
"""


def test_a_loops_facts_ask_what_a_helper_moves_not_what_it_reads(monkeypatch) -> None:
    # `_moves_element` asks which parameters a helper of the file moves
    # (`sem.summary(f).moves`); the host-read part of the summary, which follows calls into
    # other files' functions (building their models), is worked out only when asked.
    import libcst as cst

    from devicelint import safe_parse
    from devicelint.context import FileContext
    from devicelint.semantic import syncs
    from devicelint.semantic.summaries import Summary

    asked: list = []
    original = syncs.SyncModel.summary
    monkeypatch.setattr(syncs.SyncModel, "summary", lambda self, f: asked.append(f.name.value) or original(self, f))
    source = MOVING_UTIL + MOVING_TRAIN.split("\n\n\n", 1)[1].replace("prepare(batch)", "step(batch)") \
        + "\n\ndef step(b):\n    log(b)\n    return b.to('cuda')\n"
    ctx = FileContext("train.py", source, safe_parse.parse_module(source))
    ctx.walk({}, {})
    sem = ctx.semantic
    loop = next(iter(ctx.iter_nodes(cst.For)))
    call = next(c for c in ctx.iter_nodes(cst.Call) if getattr(c.func, "value", None) == "model")
    assert sem.loops.step_loop(call) is loop  # `step(batch)` moves what the loop walks
    assert asked == []  # ... known without `step`'s host reads
    summary = sem.summary(next(iter(sem.functions()["step"])))
    assert isinstance(summary, Summary) and summary.moves == {"b"} and asked == []
    assert summary.host_reads == {"b"} and asked == ["step", "log"]


TEACH = """import torch
from codec import str2tensor

START = chr(0)


def teach(model, target):
    total = 0.0
    for c in range(len(target)):
        token = target[c - 1:c] if c else str2tensor(START)
        total = total + model(token.float()).sum()
    return total


def seq2seq(model, steps):
    target = torch.randint(0, 26, (5,), device="cuda")
    total = 0.0
    for step in range(steps):
        total = total + teach(model, target)
    return total
"""


def test_inner_copies_build_another_module_only_when_its_text_may_copy(tmp_path, monkeypatch) -> None:
    # `dataflow.inner_copies` of `teach` asks what `str2tensor` (another local module's)
    # copies: a module whose text makes no `.to(...)`/`.cuda(...)` in it, in a function it
    # calls by name that gives one back, or in a lambda, is not built for it.
    (tmp_path / "train.py").write_text(TEACH)
    built = _count_models(monkeypatch)

    def lint(codec: str) -> list:
        (tmp_path / "codec.py").write_text(codec)
        built.clear()
        found = lint_paths([str(tmp_path)], Overrides(select=["DL016"]), use_cache=False, jobs=1).findings
        return [(f.path.rsplit("/", 1)[-1], f.line) for f in found]

    body = "def str2tensor(text):\n    return {}(torch.LongTensor([ord(c) for c in text]))\n"
    # No copy at all, and a helper giving back a copy that `str2tensor` never calls.
    assert lint("import torch\n\n\n" + body.format("")) == [] and built == []
    assert lint("import torch\n\n\ndef cuda_variable(t):\n    return t.cuda()\n\n\n"
                "def str2tensor(text):\n    return torch.LongTensor([ord(c) for c in text])\n") == []
    assert built == []
    # Copied through a function of the module called by name, or through a lambda.
    assert lint("import torch\n\n\ndef cuda_variable(t):\n    return t.cuda()\n\n\n"
                + body.format("cuda_variable")) == [("train.py", 19)]
    assert built == ["codec.py"]
    assert lint("import torch\n\ncuda_variable = lambda t: t.cuda()\n\n\n"
                + body.format("cuda_variable")) == [("train.py", 19)]
    assert built == ["codec.py"]


def test_a_worker_that_built_a_files_model_claims_its_lint(tmp_path) -> None:
    # Two workers of one run (two indexes sharing one directory): the first to start a job
    # or build the model of its file lints it; the other skips it. Without shared jobs (one
    # process, the language server) every job is this process's and none follows a model.
    from devicelint.context import FileContext

    (tmp_path / "helpers.py").write_text(HELPERS)
    (tmp_path / "user.py").write_text("from helpers import first\n")
    files = [(str(tmp_path / n), n, (tmp_path / n).read_bytes()) for n in ("helpers.py", "user.py")]
    jobs = [(path, key, data, ("DL004",)) for path, key, data in files]
    alone = project_index.ProjectIndex.build(str(tmp_path), files, recording=False)
    assert alone.claim("user.py") and alone.claim("user.py")
    alone.model_of(alone.by_key["helpers.py"], FileContext)
    assert alone.follow_ups() == [] and alone._built == []
    first = project_index.ProjectIndex.build(str(tmp_path), files, recording=False)
    first.share_facts()
    try:
        first.share_jobs(jobs)
        second = project_index.ProjectIndex.build(str(tmp_path), files, recording=False)
        second._shared, second._claims, second._jobs = first._shared, first._claims, first._jobs
        assert first.claim("user.py") and not second.claim("user.py")
        assert first.model_of(first.by_key["helpers.py"], FileContext) is not None
        assert first.follow_ups() == [jobs[0]]  # built here, claimed by nobody: linted here
        assert not second.claim("helpers.py") and first.follow_ups() == []
        second.model_of(second.by_key["helpers.py"], FileContext)
        assert second.follow_ups() == []  # claimed already: the other worker lints it
    finally:
        first.stop_sharing()


def test_two_workers_lint_each_file_once_and_find_what_one_process_finds(tmp_path, monkeypatch) -> None:
    # Every user file asks about `helpers.acc` (a host read per step, in another file):
    # whichever worker builds helpers.py's model first lints it; each file is linted once.
    import os

    from devicelint import runner

    helpers = "import torch\n\n\ndef acc(out, y):\n    return (out.argmax(1) == y).sum().item()\n"
    user = ("import torch\nfrom helpers import acc\n\n\ndef train(model, loader, opt):\n"
            "    for x, y in loader:\n        x, y = x.cuda(), y.cuda()\n        out = model(x)\n"
            "        total = acc(out, y)\n        opt.step()\n")
    (tmp_path / "helpers.py").write_text(helpers)
    for number in range(24):
        (tmp_path / f"user{number:02}.py").write_text(user)
    log = tmp_path.parent / f"{tmp_path.name}-lints.log"
    original = runner._lint_job

    def logged(job, index):
        with open(log, "a") as out:
            out.write(f"{os.getpid()} {os.path.basename(job[1])}\n")
        return original(job, index)

    monkeypatch.setattr(runner, "_lint_job", logged)
    one = lint_paths([str(tmp_path)], Overrides(select=["ALL"]), use_cache=False, jobs=1)
    log.unlink()
    two = lint_paths([str(tmp_path)], Overrides(select=["ALL"]), use_cache=False, jobs=2)
    assert [f.to_dict() for f in two.findings] == [f.to_dict() for f in one.findings]
    assert len([f for f in one.findings if f.code == "DL004"]) == 24
    linted = [line.split()[1] for line in log.read_text().splitlines()]
    assert sorted(linted) == sorted(["helpers.py", *(f"user{n:02}.py" for n in range(24))])


def test_a_worker_that_read_a_files_ast_for_its_gate_claims_its_lint(tmp_path) -> None:
    # The `ast` a worker read of a run file (its facts, asked about before its lint) is
    # kept for the file's gate: that worker lints it, not the other, which would parse again.
    (tmp_path / "helpers.py").write_text(HELPERS)
    (tmp_path / "user.py").write_text("from helpers import first\n")
    files = [(str(tmp_path / n), n, (tmp_path / n).read_bytes()) for n in ("helpers.py", "user.py")]
    jobs = [(path, key, data, ("DL004",)) for path, key, data in files]
    first = project_index.ProjectIndex.build(str(tmp_path), files, recording=False,
                                             gate_reads=lambda text: True)
    first.share_facts()
    try:
        first.share_jobs(jobs)
        assert first.claim("user.py") and first.ready(first.by_key["helpers.py"])
        assert first.kept_ast("helpers.py", HELPERS) is not None
        assert first.follow_ups() == [jobs[0]]
    finally:
        first.stop_sharing()


NOT_COPYING = '''import torch


def grid(n, device):
    return torch.arange(n, device=device).to(torch.float32)


def cast(x, like):
    return x.to(like.dtype), x.to(dtype=torch.float16), x.to(memory_format=torch.channels_last)


def build(layer, n, device):
    return layer.make(n, device=device), torch.nn.Linear(n, n, device=device)
'''


@pytest.mark.parametrize("line, copies", [
    ("    return torch.tensor([1.0, 2.0], device=device)", True),   # a [copies] data_to_device factory
    ("    return x.to(device)", True),                             # a `.to()` that may name a device
    ("    return x.to(dtype, device=device)", True),
    ("    return x.to(*args)", True),
    ("    return make(x, device=device)", True),                    # a bare name may be an import's rename
    ("    return T.zeros(x, device=device)", True),                 # `T` assigned at top level: the index's alias
    ("    return torch.zeros(x, device=device)", False),
    ("    return grid(x, device=device)", False),                   # bound only by `def`: no qualified name
    ("    return x.to(x.dtype)", False),
    ("    return x.to(torch.bfloat16)", False),
])
def test_the_copying_look_reads_dtype_casts_and_size_factories_as_no_copy(line, copies) -> None:
    """`_copying_functions`: a `.to()` given only a dtype (or nothing a device could be) and a
    call given `device=` whose callee (written `h.name`, or a name the module binds only with
    `def`/`class`) cannot stand for a `[copies] data_to_device` factory copy nothing: their functions are not listed, and a loop calling
    them builds no model of their module."""
    from types import SimpleNamespace

    from devicelint.semantic import dataflow

    text = NOT_COPYING + "\n\nT = torch.nn.functional\n\n\ndef probe(x, device, dtype, args):\n" + line + "\n"
    index = SimpleNamespace(derived={}, identity=lambda module: "", kept_ast=lambda key, text: None, last_looked=None)
    found = dataflow._copying_functions(index, SimpleNamespace(path="m.py", key="m.py", text=text))
    assert found == ({"probe"} if copies else set())


CRITERION_LOOP = """import torch
from losses import Criterion

crit = Criterion().cuda()


def train(net, loader):
    for x, y in loader:
        x = x.cuda()
        loss = crit(net(x), y.cuda())
        loss.backward()
"""
CRITERION = """import torch
import torch.nn as nn


class Criterion(nn.Module):
    def forward(self, a, b):
        w = self.weights()
        return ((a - b).abs() * w).mean()

    def weights(self):
        return {weights}
"""


def test_a_looped_call_of_an_object_whose_class_module_copies_nothing_builds_no_model(tmp_path,
                                                                                       monkeypatch) -> None:
    # DL016's copies and round trips through a module object of another file's class
    # (`_object_call_uploads`, `check_foreign_round_trip` through `module_forward`) need a
    # copy in that file: a class whose module makes none is not built for them.
    (tmp_path / "train.py").write_text(CRITERION_LOOP)
    (tmp_path / "losses.py").write_text(CRITERION.format(weights="torch.ones(2, device=\"cuda\")"))
    built = _count_models(monkeypatch)
    found = lint_paths([str(tmp_path)], Overrides(select=["DL016"]), use_cache=False, jobs=1).findings
    assert not found and built == []
    # The same class copying a constant list on every call: built, reported at the call.
    (tmp_path / "losses.py").write_text(CRITERION.format(weights="torch.tensor([1.0, 2.0], device=\"cuda\")"))
    found = lint_paths([str(tmp_path)], Overrides(select=["DL016"]), use_cache=False, jobs=1).findings
    assert [(f.path.rsplit("/", 1)[-1], f.line, f.code) for f in found] == [("train.py", 10, "DL016")]
    assert built == ["losses.py"]


def test_the_looks_at_a_module_one_after_another_parse_it_once(monkeypatch) -> None:
    # dataflow's copying look, its copy reach and the gate's units each ask `module_ast`
    # for the same text in turn: parsed once (ProjectIndex.last_looked), again for another.
    import ast
    from types import SimpleNamespace

    from devicelint import project_index

    parsed: list[str] = []
    real_parse = ast.parse
    monkeypatch.setattr(ast, "parse", lambda text, *a, **k: parsed.append(text) or real_parse(text, *a, **k))
    index = SimpleNamespace(kept_ast=lambda key, text: None, last_looked=None)
    first, second = SimpleNamespace(key="", text="x = 1\n"), SimpleNamespace(key="", text="y = 2\n")
    trees = [project_index.module_ast(index, m, 1000) for m in (first, first, second, first)]
    assert trees[0] is trees[1] and trees[2] is not trees[0] and parsed == ["x = 1\n", "y = 2\n", "x = 1\n"]
    assert project_index.module_ast(index, SimpleNamespace(key="", text="def (\n"), 1000) is None
    assert index.last_looked is None  # a text that does not parse is not kept


NET = '''import torch


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.ff = torch.nn.Linear(4, 4)

    def head(self, x):
        return x
'''


@pytest.mark.parametrize("call, builds", [("model.ff(x)", True), ("model.head(x)", False)])
def test_an_attribute_of_another_modules_class_builds_its_model_only_where_assigned(
        tmp_path, monkeypatch, call, builds) -> None:
    # `model.ff` of a module class of another file: its model tells whether `self.ff` holds
    # a submodule. A name the module never writes as an attribute (`head`, a method: only
    # `def head`) cannot be one: no model is built (model._project_class_may_assign).
    (tmp_path / "nets.py").write_text(NET)
    (tmp_path / "train.py").write_text(
        f"import torch\nfrom nets import Net\n\nmodel = Net()\nx = torch.randn(2, 4).cuda()\ny = {call}\n")
    built = _count_models(monkeypatch)
    lint_paths([str(tmp_path / "train.py")], Overrides(select=["ALL"]), use_cache=False, jobs=1)
    assert built == (["nets.py"] if builds else [])

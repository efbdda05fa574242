"""The project index (devicelint/project_index.py, issue 13 item 2): facts one file takes from
the local modules it imports, built once per run; its cache keys; what it does not follow."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from devicelint import project_index
from devicelint.engine import enabled_rules, lint_source
from devicelint.project_index import ProjectIndex
from devicelint.rule import all_rules
from devicelint.runner import Overrides, lint_paths

from conftest import FIXTURES
from fixture_markers import expected_findings

PROJECT = FIXTURES / "project_index"
FILES = sorted(PROJECT.rglob("*.py"))


def _run(root: Path, *, cache: bool = False):
    (root / "pyproject.toml").write_text("[tool.devicelint]\n") if cache else None
    return lint_paths([str(root)], Overrides(), use_cache=cache, jobs=1)


def _found(run, root: Path) -> set[tuple[str, int, str]]:
    return {(str(Path(f.path).resolve().relative_to(root.resolve())), f.line, f.code) for f in run.findings}


def _expected(root: Path) -> set[tuple[str, int, str]]:
    return {(str(p.relative_to(root)), line, code)
            for p in sorted(root.rglob("*.py")) for line, code in expected_findings(p)}


def test_one_run_over_the_project_finds_what_its_markers_say() -> None:
    assert _found(_run(PROJECT), PROJECT) == _expected(PROJECT)
    assert project_index._current is None  # the run's index is not left behind


def test_a_helper_of_another_file_reading_on_the_host_is_reported_at_the_call() -> None:
    run = _run(PROJECT)
    [finding] = [f for f in run.findings if f.code == "DL004"]
    assert finding.line == 31 and "metrics.py:6" in finding.message
    [related] = finding.related
    assert related["path"].endswith("metrics.py") and (related["line"], related["column"]) == (6, 12)


def test_a_loader_built_here_and_moved_in_another_file_is_reported_where_it_is_built() -> None:
    run = _run(PROJECT)
    [finding] = [f for f in run.findings if f.code == "DL008"]
    assert finding.path.endswith("data.py") and finding.line == 12
    assert "line 25 of " in finding.message and "train.py" in finding.message


def test_without_the_index_the_cross_file_findings_are_not_made() -> None:
    """One file at a time (no index): the bases in other files are unknown, the rule silent."""
    rules = enabled_rules([c for c, r in all_rules().items() if r.default_enabled])
    for path in FILES:
        findings = lint_source(str(path), path.read_text(encoding="utf-8"), rules).findings
        assert findings == [], path


def test_a_changed_dependency_relints_the_files_that_import_it(tmp_path) -> None:
    root = tmp_path / "project"
    shutil.copytree(PROJECT, root)
    first = _run(root, cache=True)
    assert first.cached == 0 and _found(first, root) == _expected(root)
    again = _run(root, cache=True)
    assert again.cached == again.files and _found(again, root) == _found(first, root)
    # Base no longer derives from nn.Module: the files whose classes build on it lose their
    # findings; a file that imports nothing local stays cached.
    layers = root / "pkg" / "layers.py"
    layers.write_text(layers.read_text().replace("Module = nn.Module", "Module = object"))
    changed = _run(root, cache=True)
    found = _found(changed, root)
    assert ("pkg/models.py", 11, "DL017") not in found and ("train.py", 15, "DL017") not in found
    assert ("selfref.py", 19, "DL017") in found
    relinted = changed.files - changed.cached
    # layers.py itself, pkg/__init__.py, models.py, train.py; not plugins.py (a run-time
    # import) nor selfref.py
    assert relinted == 4


def _index(tmp_path, files: dict[str, str]) -> ProjectIndex:
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    return ProjectIndex.build(str(tmp_path), [(str(tmp_path / n), n, t.encode()) for n, t in files.items()])


def test_resolution_relative_reexport_alias_and_what_is_not_followed(tmp_path) -> None:
    index = _index(tmp_path, {
        "a/__init__.py": "from .b import *\n",
        "a/b.py": "import torch.nn as nn\nclass B(nn.Module):\n    pass\nx = 1\nx = 2\n",
        "a/c.py": "from ... import nowhere\nfrom . import b\nfrom a import B\nimport importlib\nm = importlib.import_module('a.b')\n",
        "torch.py": "import torch\nzeros = torch.zeros\nclass T(torch.nn.Module):\n    pass\n",
    })
    c = index.view("a/c.py")
    assert c.resolve("B").kind == "class" and c.resolve("b.B").name == "B"
    assert c.resolve("nowhere") is None                 # above the top-level package
    assert c.resolve("m.B") is None                     # a run-time import
    assert c.resolve("b.x") is None                     # bound twice at top level
    shadow = index.view("torch.py")                     # a script named like the package
    assert shadow.alias("zeros") == "torch.zeros"
    assert shadow.resolve("T").kind == "class"
    assert shadow.is_module_class("T", lambda qual: qual == "torch.nn.Module")


def test_a_warm_run_parses_no_module_and_finds_the_same(tmp_path, monkeypatch) -> None:
    """The index's facts of each module are cached by content: a run where nothing changed
    reads and hashes the files, parses none (neither `ast` for the index nor libcst)."""
    import ast

    root = tmp_path / "project"
    shutil.copytree(PROJECT, root)
    first = _run(root, cache=True)
    parses = []
    real_parse = ast.parse
    monkeypatch.setattr(ast, "parse", lambda *a, **k: parses.append(a) or real_parse(*a, **k))
    again = _run(root, cache=True)
    assert parses == [] and again.cached == again.files
    assert [f.to_dict() for f in again.findings] == [f.to_dict() for f in first.findings]


_USES = ("import torch\nfrom {source} import Base\n\n\nclass A(Base):\n    def __init__(self):\n"
         "        super().__init__()\n        self.s = torch.ones(2)\n\n    def forward(self, x):\n"
         "        return x * self.s\n")


def test_a_change_relints_only_the_files_whose_findings_used_facts_that_changed(tmp_path) -> None:
    """A cached result notes the facts of other modules its lint used (their hash, not the
    file's): an edit that changes no facts (a value, a comment, a function's body) re-lints
    only the edited file; one that changes them re-lints the files that used them, and not
    a file that reaches the same class through the submodule (issue 17: touching
    timm/__init__.py re-linted all of timm)."""
    root = tmp_path / "project"
    files = {"pkg/__init__.py": "from .sub import Base\n\nx = 1\n",
             "pkg/sub.py": "import torch.nn as nn\n\n\nclass Base(nn.Module):\n    pass\n",
             "uses_sub.py": _USES.format(source="pkg.sub"), "uses_pkg.py": _USES.format(source="pkg"),
             "alone.py": "import torch\n\nx = torch.zeros(2).cuda()\n"}
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    first = _run(root, cache=True)
    assert {(f.path.rsplit("/", 1)[-1], f.code) for f in first.findings} >= {("uses_sub.py", "DL017"),
                                                                             ("uses_pkg.py", "DL017")}
    init = root / "pkg" / "__init__.py"
    init.write_text("from .sub import Base\n\n# a comment\nx = 2\n")
    same_facts = _run(root, cache=True)
    assert same_facts.files - same_facts.cached == 1  # pkg/__init__.py alone
    assert [f.to_dict() for f in same_facts.findings] == [f.to_dict() for f in first.findings]
    init.write_text("from .sub import Base\n\nx = 2\nBase = object\n")  # Base is no module now
    changed = _run(root, cache=True)
    assert changed.files - changed.cached == 2  # pkg/__init__.py, uses_pkg.py
    found = {(f.path.rsplit("/", 1)[-1], f.code) for f in changed.findings}
    assert ("uses_pkg.py", "DL017") not in found and ("uses_sub.py", "DL017") in found
    sub = root / "pkg" / "sub.py"
    sub.write_text(sub.read_text() + "\n\ndef helper():\n    return 1\n")  # a new function: new facts
    again = _run(root, cache=True)
    # pkg/sub.py and uses_sub.py; uses_pkg.py's Base (rebound in pkg/__init__.py) no longer
    # reaches pkg/sub.py
    assert again.files - again.cached == 2
    assert _run(root, cache=True).cached == 5


def test_a_new_module_relints_the_files_that_looked_for_it(tmp_path) -> None:
    """A module lookup that found nothing is a dependency too: creating the module re-lints
    the file that imported the name (it now finds the class), not the others."""
    root = tmp_path / "project"
    (root / "pkg").mkdir(parents=True)
    (root / "uses.py").write_text(_USES.format(source="layers"))
    (root / "alone.py").write_text("import torch\n\nx = torch.zeros(2).cuda()\n")
    assert not [f for f in _run(root, cache=True).findings if f.code == "DL017"]
    (root / "layers.py").write_text("import torch.nn as nn\n\n\nclass Base(nn.Module):\n    pass\n")
    after = _run(root, cache=True)
    assert after.files - after.cached == 2  # layers.py (new) and uses.py
    assert [(f.path.rsplit("/", 1)[-1], f.code) for f in after.findings if f.code == "DL017"] == [("uses.py", "DL017")]


def test_cached_facts_of_the_wrong_shape_are_parsed_again(tmp_path) -> None:
    text = "from .b import f\nclass A(B):\n    pass\n"
    (tmp_path / "a.py").write_text(text)
    cold = ProjectIndex.build(str(tmp_path), [(str(tmp_path / "a.py"), "a.py", text.encode())])
    assert cold.parses == 0 and cold.view("a.py") is not None  # read on first use
    [(key, facts)] = cold.new_facts.items()
    assert cold.parses == 1 and project_index.facts_from_json(facts) == facts
    warm = ProjectIndex.build(str(tmp_path), [(str(tmp_path / "a.py"), "a.py", text.encode())], {key: facts})
    assert warm.view("a.py").module.classes == {"A": ["B"]} and warm.parses == 0
    for garbled in ({**facts, "imports": {"f": 3}}, {**facts, "classes": {"A": "B"}}, [], {"ok": True}):
        again = ProjectIndex.build(str(tmp_path), [(str(tmp_path / "a.py"), "a.py", text.encode())], {key: garbled})
        assert again.view("a.py").module.classes == {"A": ["B"]} and again.parses == 1


def test_reading_a_module_prints_no_python_warning(tmp_path) -> None:
    """`ast.parse` of a file with `"\\m"` warns (SyntaxWarning on 3.12): not the linter's to say."""
    import warnings

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _index(tmp_path, {"odd.py": 'pattern = "\\d+\\m"\n'})
    assert not [w for w in caught if issubclass(w.category, (SyntaxWarning, DeprecationWarning))]


def test_modules_that_import_each_other_resolve_in_linear_time(tmp_path) -> None:
    """Ten modules each `import *` from all the others: every name is resolved once per
    module (the search was exponential in the import depth and hung on practitioner code)."""
    names = [f"m{i}" for i in range(10)]
    files = {f"{n}.py": "".join(f"from {o} import *\n" for o in names if o != n) + f"def f_{n}():\n    pass\n"
             for n in names}
    index = _index(tmp_path, files)
    calls = []
    original = index._resolve
    index._resolve = lambda *a: calls.append(a) or original(*a)
    assert index.view("m0.py").resolve("f_m9").kind == "function"
    assert index.view("m0.py").resolve("missing") is None
    assert len(calls) < 500


def _ast_parses_of(monkeypatch, texts: dict[str, str]) -> list[str]:
    """Names of `texts` whose text, or its outline (the index's facts of a module whose
    gate reads no `ast`: `project_index._outline`), `ast.parse` is asked to read from now on."""
    import ast

    from devicelint.project_index import _outline

    parsed: list[str] = []
    real_parse = ast.parse
    outlines = {name: (_outline(text) or ("",))[0] for name, text in texts.items()}

    def counting(source, *args, **kwargs):
        parsed.extend(name for name, text in texts.items() if source in (text, outlines[name]))
        return real_parse(source, *args, **kwargs)

    monkeypatch.setattr(ast, "parse", counting)
    return parsed


def test_a_module_no_question_reaches_is_never_parsed(tmp_path, monkeypatch) -> None:
    """The index is built lazily: a linted file's own facts come from the libcst tree its
    lint parses anyway, and an imported module is read only when a question about a name
    reaches it (here `Net`, a class of models.py deriving from a class of layers.py);
    helpers.py is imported but none of its names is asked about, unused.py not imported."""
    files = {
        "train.py": "import torch\nimport helpers\nfrom models import Net\n\n\n"
                    "class Mine(Net):\n    def __init__(self):\n        super().__init__()\n"
                    "        self.scale = torch.ones(4)\n\n    def forward(self, x):\n"
                    "        return x * self.scale\n",
        "models.py": "from layers import Base\n\n\nclass Net(Base):\n    pass\n",
        "layers.py": "import torch.nn as nn\n\n\nclass Base(nn.Module):\n    pass\n",
        "helpers.py": "import torch\n\n\ndef helper():\n    return torch.ones(2)\n",
        "unused.py": "import torch\n",
    }
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    parsed = _ast_parses_of(monkeypatch, files)
    run = lint_paths([str(tmp_path / "train.py")], Overrides(select=["ALL"]), use_cache=False, jobs=1)
    assert [(f.line, f.code) for f in run.findings] == [(9, "DL017")]
    # train.py once: by the file gate (devicelint/gate.py), whose tree also gives its facts.
    assert sorted(parsed) == ["layers.py", "models.py", "train.py"]


def test_a_linted_file_takes_its_own_facts_from_its_libcst_tree(tmp_path, monkeypatch) -> None:
    """No double parse: linting the project's files reads none of them with `ast` when each
    is linted before another file asks about it (one file, then the other alone)."""
    files = {"a.py": "import torch\nfrom b import f\n\ny = f(torch.zeros(2))\n",
             "b.py": "import torch\n\n\ndef f(x):\n    return x.cuda()\n"}
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    parsed = _ast_parses_of(monkeypatch, files)
    lint_paths([str(tmp_path / "b.py"), str(tmp_path / "a.py")], Overrides(select=["ALL"]),
               use_cache=False, jobs=1)
    # (b.py names CUDA: the file gate, devicelint/gate.py, leaves it to every rule unparsed;
    # a.py matches no rule's tokens)
    assert parsed == []


def test_facts_from_the_libcst_tree_equal_those_read_with_ast() -> None:
    """The two readers (`_tree_bindings`: a linted file's own libcst tree; `_ast_bindings`)
    say the same of every top-level statement, so `_collect_tree` and `_collect` give the
    same facts; and the same calls of each top-level function, on every fixture file."""
    import ast

    import libcst as cst

    from devicelint.context import FileContext

    checked = 0
    for path in sorted(FIXTURES.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        body = project_index._module_body(text)
        try:
            tree = cst.parse_module(text)
        except cst.ParserSyntaxError:
            continue
        if body is None:
            continue
        by_ast, by_tree = (project_index.ModuleInfo(name="pkg.mod", path=str(path), key="", shown="",
                                                    digest="", is_package=False, search=())
                           for _ in range(2))
        assert list(project_index._tree_bindings(tree)) == list(project_index._ast_bindings(body)), path
        project_index._collect(by_ast, body)
        project_index._collect_tree(by_tree, tree)
        assert project_index.facts_to_json(by_tree) == project_index.facts_to_json(by_ast), path
        ctx = FileContext(str(path), text, tree)
        ctx.walk({}, {})
        calls = {s.name: {d for d in (project_index._dotted(n.func) for n in ast.walk(s)
                                      if isinstance(n, ast.Call)) if d}
                 for s in project_index._top_level(body) if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))}
        assert project_index._calls_of_tree(ctx) == calls, path
        checked += 1
    assert checked > 100


def test_facts_from_the_libcst_tree_cover_each_kind_of_statement() -> None:
    import libcst as cst

    text = ("import a.b\nimport c.d as e\nfrom . import f\nfrom ..g import h as i, j\nfrom .k import *\n"
            "if x:\n    import l\nelif y:\n    m = n.o\nelse:\n    p = sys.modules[__name__]\n"
            "try:\n    q = None\nexcept E:\n    q = r\nfinally:\n    s: int = t.u\n"
            "class V(w.X, *bases, metaclass=M):\n    pass\n@dec\nasync def z():\n    pass\n"
            "for aa, *bb in cc:\n    dd = 1\nee += 1\nwith ff as gg:\n    pass\nhh = ii = jj\n"
            "kk = sys.modules[__name__,]\nll = True\n")
    by_ast, by_tree = (project_index.ModuleInfo(name="pkg.sub.mod", path="x", key="", shown="", digest="",
                                                is_package=False, search=()) for _ in range(2))
    bindings = list(project_index._ast_bindings(project_index._module_body(text)))
    assert list(project_index._tree_bindings(cst.parse_module(text))) == bindings
    assert {b[0] for b in bindings} == {"import", "from", "class", "def", "self", "alias", "bind"}
    project_index._collect(by_ast, project_index._module_body(text))
    project_index._collect_tree(by_tree, cst.parse_module(text))
    assert project_index.facts_to_json(by_tree) == project_index.facts_to_json(by_ast)
    assert by_tree.imports["i"] == "pkg.g.h" and by_tree.stars == ["pkg.sub.k"] and by_tree.classes["V"] == ["w.X"]
    assert by_tree.self_names == {"p"} and "q" in by_tree.rebound and "ll" not in by_tree.aliases


def test_a_name_found_through_an_import_cycle_resolves_from_every_module_of_it(tmp_path) -> None:
    """A package `__init__` that `import *`s its submodules, each importing `Base` back from
    the package (PyTorch-VAE's `from models import BaseVAE`): the answer must not depend on
    which submodule asks first. The first question used to memoise, for the submodules the
    search walked through, "not found" while the package's own answer was still open, and
    the later submodules' classes then were no modules (DL017 was lost in a folder run)."""
    submodules = ["a", "b", "c"]
    files = {"pkg/__init__.py": "from .base import *\n" + "".join(f"from .{s} import *\n" for s in submodules),
             "pkg/base.py": "from torch import nn\n\n\nclass Base(nn.Module):\n    pass\n"}
    for name in submodules:
        files[f"pkg/{name}.py"] = f"from pkg import Base\n\n\nclass {name.upper()}(Base):\n    pass\n"
    is_root = lambda qual: qual == "torch.nn.Module"  # noqa: E731
    for first in submodules:
        index = _index(tmp_path, files)
        order = [first] + [s for s in submodules if s != first]
        assert [index.view(f"pkg/{s}.py").is_module_class("Base", is_root) for s in order] == [True] * 3, first


def test_a_big_module_is_read_a_piece_at_a_time_with_the_facts_of_a_whole_read(monkeypatch) -> None:
    """Over BIG_MODULE_CHARS a module's statements are parsed piece by piece and dropped after
    use: the same facts as one `ast` of the whole text, at well under its peak memory (the
    4.7 MB file of bench/throughput.py peaked at 304 MB when every piece's statements were
    kept, 158 MB streamed)."""
    import tracemalloc

    monkeypatch.setattr(project_index, "BIG_MODULE_CHARS", 100_000)  # small sizes: a fast test
    monkeypatch.setattr(project_index, "PIECE_CHARS", 10_000)
    block = ("import torch\nfrom torch import nn as tnn\nAlias = tnn.Module\n\n\n"
             "class Block{n}(tnn.Module):\n    def forward(self, x):\n        return x * {n}\n\n\n"
             "def build{n}(width=4):\n    layers = [tnn.Linear(width, width) for _ in range(3)]\n"
             "    return tnn.Sequential(*layers)\n\n\n")
    text = "".join(block.format(n=n) for n in range(1, 1 + 2 * project_index.BIG_MODULE_CHARS // len(block)))
    assert len(text) > project_index.BIG_MODULE_CHARS

    def info() -> project_index.ModuleInfo:
        return project_index.ModuleInfo(name="pkg.big", path="big.py", key="", shown="", digest="",
                                        is_package=False, search=())

    whole = info()
    tracemalloc.start()
    project_index._collect(whole, project_index._parse(text).body)
    whole_peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    index = ProjectIndex.build(".", [])
    tracemalloc.start()
    facts = index._parse_facts(info(), text)
    streamed_peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert facts == project_index.facts_to_json(whole)
    assert "Block7" in facts["classes"] and "build7" in facts["functions"]
    assert streamed_peak < whole_peak / 3, (streamed_peak, whole_peak)
    assert index._parse_facts(info(), text + "\ndef broken(:\n") == {}


def test_each_file_is_looked_at_once_for_local_imports_whatever_the_questions(tmp_path) -> None:
    """`importers_of` skips the files that name no local module; that look at a file's text
    (a regular expression over all of it) is made once per file, not once per question (it
    cost 1.3 s of CPU on the practitioner corpus: 21 questions x 319 files)."""
    index = _index(tmp_path, {
        "data.py": "def get_a():\n    pass\n\n\ndef get_b():\n    pass\n",
        "train.py": "from data import get_a, get_b\n",
        "other.py": "import os\n",
    })
    looked = []
    original = index._may_import_local
    index._may_import_local = lambda info: looked.append(info.key) or original(info)
    data = index.view("data.py")
    assert [m.key for m in data.importers_of("get_a")] == ["train.py"]
    assert [m.key for m in data.importers_of("get_b")] == ["train.py"]
    assert sorted(looked) == ["other.py", "train.py"]


def test_a_run_without_a_result_cache_notes_no_dependencies(tmp_path, monkeypatch) -> None:
    """What a file's lint used of other files, and the facts read, are kept only for the
    result cache: `--no-cache` notes neither (finish_job walked every file's noted graph)."""
    files = {"layers.py": "import torch.nn as nn\n\n\nclass Base(nn.Module):\n    pass\n",
             "net.py": _USES.format(source="layers")}
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    entries = [(str(tmp_path / n), n, t.encode()) for n, t in files.items()]
    for recording in (True, False):
        index = ProjectIndex.build(str(tmp_path), entries, recording=recording)
        index.start_job("net.py")
        assert index.view("net.py").is_module_class("Base", lambda qual: qual == "torch.nn.Module")
        used, facts = index.finish_job()
        assert bool(used) is recording and bool(facts) is recording
    # The runner keeps the cache's notes (a second run serves net.py from the cache) ...
    assert _run(tmp_path, cache=True).cached == 0 and _run(tmp_path, cache=True).cached == 2
    # ... and without the cache builds an index that notes nothing, finding the same.
    built = []
    original = ProjectIndex.build.__func__
    monkeypatch.setattr(ProjectIndex, "build", classmethod(
        lambda cls, *args, **kwargs: built.append(original(cls, *args, **kwargs)) or built[-1]))
    assert [(f.path.rsplit("/", 1)[-1], f.code) for f in _run(tmp_path).findings] == [("net.py", "DL017")]
    assert [index.recording for index in built] == [False]


def test_the_workers_of_a_run_read_each_module_once_between_them(tmp_path, monkeypatch) -> None:
    """Forked workers share the module facts they read (a private directory, removed after
    the run): a module every file asks about is read with `ast` once in the run, not once
    per worker, and the findings are those of one process."""
    import os

    files = {f"user{i}.py": _USES.format(source="layers") for i in range(24)}
    files["layers.py"] = "import torch.nn as nn\n\n\nclass Base(nn.Module):\n    pass\n"
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    log = tmp_path.parent / f"{tmp_path.name}-parses.log"
    original = ProjectIndex._parse_facts

    def logged(self, info, text, *parsed):
        with open(log, "a") as out:
            out.write(f"{os.getpid()} {os.path.basename(info.path)}\n")
        return original(self, info, text, *parsed)

    monkeypatch.setattr(ProjectIndex, "_parse_facts", logged)
    shared = []
    monkeypatch.setattr(ProjectIndex, "share_facts",
                        lambda self, real=ProjectIndex.share_facts: real(self) or shared.append(self._shared))
    one = lint_paths([str(tmp_path)], Overrides(select=["ALL"]), use_cache=False, jobs=1)
    log.unlink(missing_ok=True)
    two = lint_paths([str(tmp_path)], Overrides(select=["ALL"]), use_cache=False, jobs=2)
    assert [f.to_dict() for f in two.findings] == [f.to_dict() for f in one.findings]
    assert len([f for f in two.findings if f.code == "DL017"]) == 24
    parses = log.read_text().split("\n")[:-1] if log.exists() else []
    assert len(shared) == 1 and not os.path.exists(shared[0])  # made for the pool, removed after
    # Two workers whose first files ask at the same moment both read it (the share is a
    # file the first reader writes, not a lock): at most once per worker, never per file.
    reads = [line.split() for line in parses if line.endswith(" layers.py")]
    assert len(reads) == len({pid for pid, _ in reads}) <= 2, parses


def test_facts_one_process_read_are_loaded_not_parsed_by_another(tmp_path, monkeypatch) -> None:
    """The sharing itself, without the pool's timing: a second index (another worker) whose
    module is asked after the first index read it loads the facts from the shared directory."""
    (tmp_path / "layers.py").write_text("import torch.nn as nn\n\n\nclass Base(nn.Module):\n    pass\n")
    files = [(str(tmp_path / "layers.py"), "layers.py", (tmp_path / "layers.py").read_bytes())]
    parsed = []
    original = ProjectIndex._parse_facts
    monkeypatch.setattr(ProjectIndex, "_parse_facts",
                        lambda self, info, *rest: parsed.append(info.path) or original(self, info, *rest))
    first = ProjectIndex.build(str(tmp_path), files)
    first.share_facts()
    try:
        second = ProjectIndex.build(str(tmp_path), files)
        second._shared = first._shared  # as a worker forked after share_facts holds it
        assert first.ready(first.by_key["layers.py"]) and len(parsed) == 1
        assert second.ready(second.by_key["layers.py"]) and len(parsed) == 1
        assert second.by_key["layers.py"].classes == first.by_key["layers.py"].classes == {"Base": ["nn.Module"]}
        second._shared = None
    finally:
        first.stop_sharing()


def test_a_function_asked_about_after_its_module_is_dropped_is_parsed_alone(tmp_path, monkeypatch) -> None:
    """The `ast` of the functions of the last modules read is kept; once a module's is
    dropped, a question about one of its functions parses that function's lines only."""
    import ast

    text = ("import torch\n\n\ndef f(x):\n    return torch.relu(x)\n\n\n@torch.no_grad()\n"
            "def g(x):\n    y = torch.sigmoid(x)\n    return y.cuda()\n\n\ndef h():\n    pass\n")
    index = _index(tmp_path, {"m.py": text, "user.py": "from m import f, g\n"})
    module = index.by_key["m.py"]
    assert index.ready(module) and module.functions == {"f", "g", "h"}
    index._defs.clear()  # as when many modules were read since
    sources = []
    real_parse = ast.parse
    monkeypatch.setattr(ast, "parse", lambda source, *a, **k: sources.append(source) or real_parse(source, *a, **k))
    view = index.view_of(module)
    assert view.raw_calls("g") == {"torch.no_grad", "torch.sigmoid", "y.cuda"}
    assert sources == ["@torch.no_grad()\ndef g(x):\n    y = torch.sigmoid(x)\n    return y.cuda()\n"]
    assert view.raw_calls("f") == {"torch.relu"} and view.raw_calls("missing") == set()
    assert len(sources) == 2


def test_shared_facts_of_a_killed_run_are_removed_by_the_next(tmp_path, monkeypatch) -> None:
    """A run killed before its cleanup leaves its shared-facts directory behind; the next
    run that shares facts removes those whose process is gone, not a live run's."""
    import os
    import subprocess
    import sys

    monkeypatch.setattr(project_index, "_shared_base", lambda: str(tmp_path))
    ended = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                           capture_output=True, text=True, check=True)
    abandoned = tmp_path / f"devicelint-facts-{ended.stdout.strip()}-abc"
    live = tmp_path / f"devicelint-facts-{os.getppid()}-def"
    other = tmp_path / "devicelint-facts-notapid"
    for folder in (abandoned, live, other):
        folder.mkdir()
        (folder / "facts").write_text("{}")
    index = ProjectIndex(str(tmp_path))
    index.share_facts()
    try:
        assert os.path.dirname(index._shared) == str(tmp_path)
        assert os.path.basename(index._shared).startswith(f"devicelint-facts-{os.getpid()}-")
        assert not abandoned.exists() and live.exists() and other.exists()
    finally:
        index.stop_sharing()
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([live.name, other.name])


OUTLINED = '''import torch
from .layers import (
    Base,
    Other as Renamed,
)


@register(
    name="net",
)
class Net(Base, torch.nn.Module):
    """A model."""

    def forward(self, x):
        return x


def build(width: int = 3,
          sep: str = "(", *, flag=lambda x: x) -> "Net[int]":
    # a comment
    return Net()

    # a comment after the body


async def fetch():
    await thing()
if torch.cuda.is_available():
    def only_here():
        return 1
TABLE = dict(
    a=1,
)
'''


def test_an_outline_gives_the_facts_and_spans_of_the_whole_text() -> None:
    # The index reads a module no gate will look at as an outline: the bodies of the
    # functions and classes at the margin left out, lines kept (project_index._outline).
    import ast

    from devicelint import project_index as pi

    outline, ends = pi._outline(OUTLINED)
    assert len(outline.splitlines()) == len(OUTLINED.splitlines())
    assert "return Net()" not in outline and "A model" not in outline and "def only_here" in outline
    whole, short = ast.parse(OUTLINED), ast.parse(outline)
    assert list(pi._ast_bindings(short.body)) == list(pi._ast_bindings(whole.body))
    assert ends == {11: 15, 18: 21, 26: 27}  # the last line of each body, by its header's line
    for statement in whole.body:
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            assert ends[statement.lineno] == statement.end_lineno


def test_an_outline_is_not_made_where_the_lines_may_be_misread() -> None:
    import ast

    from devicelint import project_index as pi

    assert pi._outline("class E(Exception): pass\n") is None  # a body on the header's line
    assert pi._outline("def f(x:\n    int):\n") is None        # a header and no body
    assert pi._outline("def f(x):\nreturn 1\n") is None          # nothing indented below
    # Brackets and `#` in a header's strings are not the header's.
    text = "def f(\n    x=')',  # (\n    y=\"#(\",\n):\n    return 1\n\n\nZ = 2\n"
    outline, ends = pi._outline(text)
    assert ends == {1: 5} and outline.endswith("Z = 2\n") and "return" not in outline
    # A line at the margin inside a body's string: the outline does not parse, and the
    # facts are read from the whole text.
    text = 'def f():\n    s = """\nx = 1\n"""\n    return s\n'
    with pytest.raises(SyntaxError):
        ast.parse(pi._outline(text)[0])


def test_a_directory_walked_again_for_other_passable_names_is_charged_once(tmp_path) -> None:
    # `may_reach` walks the directories below a search directory for symbolic links, per set
    # of non-identifier path parts a lookup may pass (`extra`); the walk's budget counts a
    # directory's names once (86 repositories in one run spent it on the same directories
    # walked for each repository's set, and every later question answered "may").
    for name in ("a", "b", "my-pkg"):
        (tmp_path / "pkg" / name).mkdir(parents=True)
    index = ProjectIndex(str(tmp_path))
    start = index._walk_budget
    assert index._no_links_below(str(tmp_path / "pkg"), frozenset())
    spent = start - index._walk_budget
    assert spent == 3
    assert index._no_links_below(str(tmp_path / "pkg"), frozenset({"my-pkg"}))
    assert start - index._walk_budget == spent  # the same directories: nothing charged again

"""A file whose semantic model the project index built for another file's question is linted
on that model's tree, not parsed again (devicelint.project_index.parsed_tree, used by the
engine), with the same findings."""

from __future__ import annotations

from devicelint import project_index, safe_parse
from devicelint.runner import Overrides, lint_paths

HELPER = ("import torch\n\n\ndef accuracy(scores, targets):\n"
          "    return (scores.argmax(1) == targets.to(scores.device)).float().sum().item()\n")
# Linted first (its name sorts first): its step loop calls the helper of b_metrics.py, whose
# model the index then builds; b_metrics.py is linted after it.
SCRIPT = """import torch
from b_metrics import accuracy


def train(model, loader, device):
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for inputs, targets in loader:
        inputs, targets = inputs.to(device), targets.to(device)
        scores = model(inputs)
        loss = torch.nn.functional.cross_entropy(scores, targets)
        opt.zero_grad()
        loss.backward()
        opt.step()
        acc = accuracy(scores, targets)
    return acc
"""

def _counting_run(tmp_path, monkeypatch):
    """(a function that lints tmp_path with one process and returns its findings, the texts
    libcst parsed in its last call)."""
    parsed: list[str] = []
    original = safe_parse.parse_module
    monkeypatch.setattr(safe_parse, "parse_module", lambda text: parsed.append(text) or original(text))

    def run():
        parsed.clear()
        return sorted((f.path.rsplit("/", 1)[-1], f.line, f.code, f.message)
                      for f in lint_paths([str(tmp_path)], Overrides(), use_cache=False, jobs=1).findings)

    return run, parsed


def test_a_file_whose_model_another_file_built_is_not_parsed_again(tmp_path, monkeypatch) -> None:
    (tmp_path / "a_train.py").write_text(SCRIPT)
    (tmp_path / "b_metrics.py").write_text(HELPER)
    run, parsed = _counting_run(tmp_path, monkeypatch)

    with_reuse = run()
    assert any(code == "DL004" and "b_metrics.py" in message for _p, _l, code, message in with_reuse)
    assert parsed.count(HELPER) == 1 and parsed.count(SCRIPT) == 1
    monkeypatch.setattr(project_index, "parsed_tree", lambda path, source: None)
    monkeypatch.setattr("devicelint.engine.parsed_tree", lambda path, source: None)
    assert run() == with_reuse
    assert parsed.count(HELPER) == 2


def test_a_file_linted_before_the_question_about_it_keeps_its_tree(tmp_path, monkeypatch) -> None:
    # The helper sorts first: it is linted, then the script's step loop asks about it, and
    # its model is built on the tree its own lint made (ProjectIndex.keep_tree).
    (tmp_path / "a_metrics.py").write_text(HELPER)
    (tmp_path / "b_train.py").write_text(SCRIPT.replace("b_metrics", "a_metrics"))
    run, parsed = _counting_run(tmp_path, monkeypatch)

    kept = run()
    assert any(code == "DL004" and "a_metrics.py" in message for _p, _l, code, message in kept)
    assert parsed.count(HELPER) == 1
    monkeypatch.setattr(project_index, "KEPT_TREE_CHARS", 0)
    assert run() == kept
    assert parsed.count(HELPER) == 2


def test_no_tree_is_offered_for_another_text_or_outside_a_run() -> None:
    assert project_index.parsed_tree("b_metrics.py", HELPER) is None  # no index: no run


LAYERS = ("import torch.nn as nn\n\n\nclass Block(nn.Module):\n    def forward(self, x):\n"
          "        return x.relu().sum().item()\n")
# Linted first: its class derives from b_layers.Block, so the index reads b_layers.py with
# `ast` (its facts) before b_layers.py's own lint, whose file gate (no device word in its
# text) would parse it again.
NET = """import torch
from b_layers import Block


class Net(Block):
    def __init__(self):
        super().__init__()
        self.scale = torch.ones(4)


def run(loader, device):
    net = Net().to(device)
    for x in loader:
        net(x.to(device))
"""


def test_the_gate_of_a_file_the_index_read_with_ast_takes_that_ast(tmp_path, monkeypatch) -> None:
    import ast

    (tmp_path / "a_net.py").write_text(NET)
    (tmp_path / "b_layers.py").write_text(LAYERS)
    parses: list[str] = []
    real_parse = ast.parse

    def counting(source, *args, **kwargs):
        if source == LAYERS:
            parses.append(source)
        return real_parse(source, *args, **kwargs)

    monkeypatch.setattr(ast, "parse", counting)
    monkeypatch.chdir(tmp_path)
    found = lint_paths([str(tmp_path)], Overrides(select=["ALL"]), use_cache=False, jobs=1).findings
    assert len(parses) == 1  # by the index; its gate took that tree
    monkeypatch.setattr(project_index, "_KEPT_AST_CHARS", 0)  # nothing kept: the gate parses again
    parses.clear()
    again = lint_paths([str(tmp_path)], Overrides(select=["ALL"]), use_cache=False, jobs=1).findings
    assert len(parses) == 2
    assert [f.to_dict() for f in found] == [f.to_dict() for f in again]


def test_a_kept_ast_is_given_once_and_only_for_the_same_text(tmp_path) -> None:
    index = project_index.ProjectIndex.build(str(tmp_path), [(str(tmp_path / "b.py"), "b.py", LAYERS.encode())])
    info = index.by_key["b.py"]
    assert index.ready(info)  # read with `ast`: no libcst tree given
    project_index.use(index)
    try:
        assert project_index.parsed_ast("b.py", LAYERS + "# edited\n") is None
        index._keep_ast("b.py", LAYERS, ast_of(LAYERS))
        assert project_index.parsed_ast("b.py", LAYERS) is not None
        assert project_index.parsed_ast("b.py", LAYERS) is None
    finally:
        project_index.use(None)


def ast_of(text: str):
    import ast

    return ast.parse(text)


def test_the_workers_are_dealt_a_folders_files_together_largest_first() -> None:
    # The files of a folder ask the index about the same modules: dealt one after another
    # (a worker builds those models once), the folders by their largest file, so that the
    # last chunks are small files (runner._dealing_order).
    from devicelint.runner import _dealing_order

    jobs = [("a/x.py", "", b"1" * 10, ()), ("b/y.py", "", b"1" * 50, ()), ("a/z.py", "", b"1" * 30, ()),
            ("c/w.py", "", b"1" * 5, ()), ("b/v.py", "", b"1" * 1, ())]
    assert [jobs[i][0] for i in _dealing_order(jobs)] == ["b/y.py", "b/v.py", "a/z.py", "a/x.py", "c/w.py"]

"""`devicelint server`, driven as an editor drives it: a subprocess spoken to in JSON-RPC over
stdin/stdout with Content-Length framing (tests/lsp_client.py, no pygls on the client side),
every wait bounded by a timeout."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pygls  # noqa: F401 - the `server` extra, part of `dev`: a broken install must fail
import pytest

from lsp_client import LspClient  # noqa: E402

from devicelint.docs_url import rule_url  # noqa: E402

TIMEOUT = 60  # seconds for any one reply; a 2-core machine shared with other jobs is slow

# Non-ASCII before the findings: UTF-16 columns differ from code points ("😀" is 2 units).
SOURCE = """\
import torch
import torch.nn as nn

B, T, H, D = 2, 3, 4, 8


def merge(y):
    note = "héllo 😀"; return y.permute(0, 2, 1, 3).view(B, T, -1)


device = torch.device("cuda")
s = "ü"; noise = torch.randn(B, T).to(device)

model = nn.DataParallel(nn.Linear(4, 4))
merged = merge(torch.randn(B, H, T, D))
"""
FIXED = SOURCE.replace(".view(B, T, -1)", ".reshape(B, T, -1)").replace(
    "torch.randn(B, T).to(device)", "torch.randn(B, T, device=device)").replace(
    "nn.DataParallel(nn.Linear(4, 4))", "nn.Linear(4, 4)")
HALF_TYPED = FIXED + "\nfor step in range(10):\n    loss = model(torch.ones(4)\n"


def _server_command() -> list[str]:
    script = Path(sys.executable).with_name("devicelint")
    return [str(script), "server"] if script.exists() else [sys.executable, "-m", "devicelint", "server"]


def _utf16(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


def _char(line: str, needle: str) -> int:
    """0-based UTF-16 column of `needle` in `line`, computed independently of the server."""
    return _utf16(line[: line.index(needle)])


def _apply(text: str, edits: list[dict]) -> str:
    """Apply LSP TextEdits (UTF-16 positions) to `text`, last first."""
    lines = text.split("\n")

    def offset(position: dict) -> int:
        line = lines[position["line"]]
        units = 0
        index = 0
        while units < position["character"]:
            units += _utf16(line[index])
            index += 1
        return sum(len(l) + 1 for l in lines[: position["line"]]) + index

    for edit in sorted(edits, key=lambda e: (e["range"]["start"]["line"], e["range"]["start"]["character"]),
                       reverse=True):
        start, end = offset(edit["range"]["start"]), offset(edit["range"]["end"])
        text = text[:start] + edit["newText"] + text[end:]
    return text


def _edits_of(action: dict) -> list[dict]:
    [change] = action["edit"]["documentChanges"]
    return change["edits"]


@pytest.fixture()
def workspace(tmp_path: Path) -> Path:
    (tmp_path / "pyproject.toml").write_text(
        "[tool.devicelint]\n"
        'extend-exclude = ["generated"]\n'
        'per-file-ignores = { "legacy_*.py" = ["DL005"] }\n', encoding="utf-8")
    return tmp_path


@pytest.fixture()
def client(workspace: Path):
    stderr = open(workspace / "server.log", "wb")
    lsp = LspClient(_server_command(), str(workspace), stderr=stderr)
    try:
        yield lsp
    finally:
        lsp.kill()
        stderr.close()


def _open(client: LspClient, uri: str, text: str, version: int = 1) -> None:
    client.notify("textDocument/didOpen", {"textDocument": {
        "uri": uri, "languageId": "python", "version": version, "text": text}})


def _change(client: LspClient, uri: str, text: str, version: int) -> float:
    return client.notify("textDocument/didChange", {
        "textDocument": {"uri": uri, "version": version}, "contentChanges": [{"text": text}]})


def test_a_client_session(client: LspClient, workspace: Path) -> None:
    root = workspace.as_uri()
    result = client.initialize(root, timeout=TIMEOUT)
    capabilities = result["capabilities"]
    assert capabilities["positionEncoding"] == "utf-16"
    assert capabilities["hoverProvider"] is True
    assert "quickfix" in capabilities["codeActionProvider"]["codeActionKinds"]
    assert result["serverInfo"]["name"] == "devicelint"

    uri = (workspace / "train.py").as_uri()  # never written: the buffer is linted from memory
    _open(client, uri, SOURCE)
    diagnostics = client.diagnostics(uri, 1, timeout=TIMEOUT)
    lines = SOURCE.split("\n")
    by_line = {d["range"]["start"]["line"]: d for d in diagnostics}
    assert sorted(by_line) == [7, 11, 13]
    assert [by_line[n]["code"] for n in (7, 11, 13)] == ["DL003", "DL007", "DL005"]

    dl003 = by_line[7]
    start = _char(lines[7], "y.permute")
    assert start == lines[7].index("y.permute") + 1  # one more than code points: "😀"
    assert dl003["range"] == {"start": {"line": 7, "character": start},
                              "end": {"line": 7, "character": start + len("y.permute(0, 2, 1, 3).view(B, T, -1)")}}
    assert dl003["source"] == "devicelint"
    assert dl003["severity"] == 2
    assert dl003["codeDescription"]["href"] == rule_url("DL003") \
        == "https://github.com/devicelint/devicelint/blob/main/docs/rules/DL003.md"
    dl005 = by_line[13]
    assert dl005["range"] == {"start": {"line": 13, "character": 8}, "end": {"line": 13, "character": 40}}

    # Code actions at the safe DL003: the fix (preferred) and a noqa comment.
    actions = client.request("textDocument/codeAction", {
        "textDocument": {"uri": uri}, "range": dl003["range"],
        "context": {"diagnostics": [dl003]}}, timeout=TIMEOUT)
    titles = [a["title"] for a in actions]
    fix = next(a for a in actions if a["title"].startswith("Fix DL003"))
    assert fix["kind"] == "quickfix" and fix["isPreferred"] is True and "unsafe" not in fix["title"]
    assert fix["edit"]["documentChanges"][0]["textDocument"] == {"uri": uri, "version": 1}
    [edit] = _edits_of(fix)
    view = _char(lines[7], "view(B")
    assert edit == {"range": {"start": {"line": 7, "character": view}, "end": {"line": 7, "character": view + 4}},
                    "newText": "reshape"}
    assert ".reshape(B, T, -1)" in _apply(SOURCE, [edit]).split("\n")[7]
    noqa = next(a for a in actions if "noqa" in a["title"])
    assert _apply(SOURCE, _edits_of(noqa)).split("\n")[7] == lines[7] + "  # noqa: DL003"
    assert len(titles) == 2, titles

    # The unsafe DL007 fix (a random factory) says so; DL005 has no fix, only the noqa action.
    unsafe = client.request("textDocument/codeAction", {
        "textDocument": {"uri": uri}, "range": by_line[11]["range"], "context": {"diagnostics": []}},
        timeout=TIMEOUT)
    unsafe_fix = next(a for a in unsafe if a["title"].startswith("Fix DL007"))
    assert "unsafe" in unsafe_fix["title"] and not unsafe_fix.get("isPreferred")
    assert "torch.randn(B, T, device=device)" in _apply(SOURCE, _edits_of(unsafe_fix)).split("\n")[11]
    only_noqa = client.request("textDocument/codeAction", {
        "textDocument": {"uri": uri}, "range": dl005["range"], "context": {"diagnostics": [dl005]}},
        timeout=TIMEOUT)
    assert [a["title"] for a in only_noqa] == ["Suppress DL005 on this line (# noqa: DL005)"]
    assert _apply(SOURCE, _edits_of(only_noqa[0])).split("\n")[13].endswith("  # noqa: DL005")
    # Nothing is offered away from the findings, nor for another kind of action.
    assert client.request("textDocument/codeAction", {
        "textDocument": {"uri": uri}, "range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 3}},
        "context": {"diagnostics": []}}, timeout=TIMEOUT) == []
    assert client.request("textDocument/codeAction", {
        "textDocument": {"uri": uri}, "range": dl005["range"],
        "context": {"diagnostics": [dl005], "only": ["refactor"]}}, timeout=TIMEOUT) == []

    # Hover over the DL005 range: the rule's docs as Markdown, with the link.
    hover = client.request("textDocument/hover", {
        "textDocument": {"uri": uri}, "position": {"line": 13, "character": 20}}, timeout=TIMEOUT)
    assert hover["contents"]["kind"] == "markdown"
    text = hover["contents"]["value"]
    assert text.startswith("### DL005 `data-parallel`")
    assert "#### Why is this bad?" in text and rule_url("DL005") in text
    assert hover["range"] == dl005["range"]
    assert client.request("textDocument/hover", {
        "textDocument": {"uri": uri}, "position": {"line": 0, "character": 2}}, timeout=TIMEOUT) is None

    # The fixed text: the diagnostics go away.
    _change(client, uri, FIXED, 2)
    assert client.diagnostics(uri, 2, timeout=TIMEOUT) == []

    # Half-typed code: DL900 where Python's parser points (the unclosed bracket), no crash.
    _change(client, uri, HALF_TYPED, 3)
    [error] = client.diagnostics(uri, 3, timeout=TIMEOUT)
    half_lines = HALF_TYPED.split("\n")
    line = len(half_lines) - 2
    bracket = half_lines[line].index("(torch")
    assert error["code"] == "DL900" and error["severity"] == 1
    assert "never closed" in error["message"]
    assert error["range"] == {"start": {"line": line, "character": bracket},
                              "end": {"line": line, "character": bracket + 1}}

    # A burst of changes: only the last text is linted and published (debounced; stale
    # lints cancelled or their results dropped).
    # (A lint of version 4 that ends before version 5 reaches the server is published: on
    # a loaded machine that happens; nothing may come after version 6.)
    for version in (4, 5, 6):
        _change(client, uri, SOURCE if version != 6 else FIXED, version)
    last, diagnostics = client.diagnostics_timed(uri, 6, timeout=TIMEOUT)
    assert diagnostics == []
    client.drain(0.5)
    assert [m["params"]["version"] for received, m in client.backlog if received > last
            and m.get("method") == "textDocument/publishDiagnostics" and m["params"]["uri"] == uri] == []

    # Configuration: per-file-ignores and extend-exclude from the workspace's pyproject.toml.
    legacy = (workspace / "legacy_train.py").as_uri()
    _open(client, legacy, SOURCE)
    assert sorted(d["code"] for d in client.diagnostics(legacy, 1, timeout=TIMEOUT)) == ["DL003", "DL007"]
    generated = (workspace / "generated" / "model.py").as_uri()
    _open(client, generated, SOURCE)
    assert client.diagnostics(generated, 1, timeout=TIMEOUT) == []

    # A broken [tool.devicelint]: one error message, and the defaults meanwhile.
    (workspace / "broken").mkdir()
    (workspace / "broken" / "pyproject.toml").write_text("[tool.devicelint]\nselect = 3\n", encoding="utf-8")
    broken = (workspace / "broken" / "train.py").as_uri()
    _open(client, broken, SOURCE)
    message = client.wait_for(lambda m: m.get("method") == "window/showMessage", TIMEOUT, "showMessage")
    assert message["params"]["type"] == 1 and "pyproject.toml" in message["params"]["message"]
    assert len(client.diagnostics(broken, 1, timeout=TIMEOUT)) == 3

    # Closing a document clears its diagnostics.
    client.notify("textDocument/didClose", {"textDocument": {"uri": legacy}})
    assert client.diagnostics(legacy, timeout=TIMEOUT) == []

    assert client.stop(timeout=TIMEOUT) == 0


def test_notebook_cells(client: LspClient, workspace: Path) -> None:
    result = client.initialize(workspace.as_uri(), timeout=TIMEOUT)
    sync = result["capabilities"]["notebookDocumentSync"]
    assert sync["notebookSelector"][0]["cells"] == [{"language": "python"}]
    notebook = (workspace / "train.ipynb").as_uri()
    cells = [
        ("markdown", "# Training\n"),
        ("python", "import torch\nfrom torch import nn\n%timeit torch.ones(3)\n"),
        ("python", "net = nn.Linear(4, 4)\nmodel = nn.DataParallel(net)\n"),
    ]
    cell_uris = [f"vscode-notebook-cell:{workspace / 'train.ipynb'}#cell{i}" for i in range(len(cells))]
    client.notify("notebookDocument/didOpen", {
        "notebookDocument": {
            "uri": notebook, "notebookType": "jupyter-notebook", "version": 1,
            "cells": [{"kind": 1 if language == "markdown" else 2, "document": uri}
                      for (language, _), uri in zip(cells, cell_uris)],
        },
        "cellTextDocuments": [{"uri": uri, "languageId": language, "version": 1, "text": text}
                              for (language, text), uri in zip(cells, cell_uris)],
    })
    [dl005] = client.diagnostics(cell_uris[2], 1, timeout=TIMEOUT)
    assert dl005["code"] == "DL005"
    assert dl005["range"]["start"] == {"line": 1, "character": 8}  # line 2 of the cell
    assert client.diagnostics(cell_uris[1], 1, timeout=TIMEOUT) == []  # the magic is not an error
    actions = client.request("textDocument/codeAction", {
        "textDocument": {"uri": cell_uris[2]}, "range": dl005["range"],
        "context": {"diagnostics": [dl005]}}, timeout=TIMEOUT)
    [noqa] = actions
    [change] = noqa["edit"]["documentChanges"]
    assert change["textDocument"]["uri"] == cell_uris[2]
    assert _apply(cells[2][1], change["edits"]).split("\n")[1] == "model = nn.DataParallel(net)  # noqa: DL005"

    # Editing the cell (the notebook's version moves on): the finding goes away.
    client.notify("notebookDocument/didChange", {
        "notebookDocument": {"uri": notebook, "version": 2},
        "change": {"cells": {"textContent": [{
            "document": {"uri": cell_uris[2], "version": 2},
            "changes": [{"range": {"start": {"line": 1, "character": 8}, "end": {"line": 1, "character": 28}},
                         "text": "net"}],
        }]}},
    })
    assert client.diagnostics(cell_uris[2], 2, timeout=TIMEOUT) == []
    assert client.stop(timeout=TIMEOUT) == 0


def test_exit_without_shutdown_is_exit_code_1(client: LspClient, workspace: Path) -> None:
    client.initialize(workspace.as_uri(), timeout=TIMEOUT)
    client.notify("exit")
    assert client.wait_exit(TIMEOUT) == 1


def test_utf8_position_encoding_when_the_client_asks(client: LspClient, workspace: Path) -> None:
    result = client.initialize(workspace.as_uri(), {"general": {"positionEncodings": ["utf-8", "utf-16"]}},
                               timeout=TIMEOUT)
    assert result["capabilities"]["positionEncoding"] == "utf-8"
    uri = (workspace / "train.py").as_uri()
    _open(client, uri, SOURCE)
    diagnostics = client.diagnostics(uri, 1, timeout=TIMEOUT)
    line = SOURCE.split("\n")[7]
    start = len(line[: line.index("y.permute")].encode("utf-8"))
    assert diagnostics[0]["range"]["start"] == {"line": 7, "character": start}
    assert client.stop(timeout=TIMEOUT) == 0


def test_help_does_not_import_pygls() -> None:
    probe = subprocess.run([sys.executable, "-c", (
        "import sys\n"
        "from devicelint.cli import main\n"
        "try:\n"
        "    main(['--help'])\n"
        "except SystemExit:\n"
        "    pass\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('pygls', 'lsprotocol')))\n"
    )], capture_output=True, text=True, timeout=120)
    assert "server" in probe.stdout
    assert probe.stdout.strip().splitlines()[-1] == "[]", probe.stdout + probe.stderr


# -- in-process checks of the parts a session does not reach easily -----------------------


def test_an_internal_error_is_logged_and_publishes_nothing(monkeypatch, caplog) -> None:
    import devicelint.engine
    from devicelint.integrations import server

    def broken(*args, **kwargs):
        raise RuntimeError("boom")

    monkeypatch.setattr(devicelint.engine, "lint_source", broken)
    lsp = server.DeviceLintServer()
    job = server.Job("file:///x/train.py", 1, None, os.getcwd(), "utf-16", text="import torch\n")
    with caplog.at_level("ERROR", logger="devicelint.server"):
        outcome = lsp.guarded_lint(job)
    assert isinstance(outcome, str) and "RuntimeError: boom" in outcome
    assert "internal error" in caplog.text


def test_an_edit_is_linted_with_the_documents_incremental_parse(tmp_path: Path) -> None:
    """The server keeps one IncrementalParser per document: an edit of one function re-parses
    that function only, and the diagnostics are those of a full lint of the new text."""
    from devicelint.integrations import server

    text = SOURCE + "\n\ndef helper(x):\n    return x.cuda()\n"
    lsp = server.DeviceLintServer()
    path = str(tmp_path / "train.py")

    def lint(text: str, version: int, parser) -> list:
        job = server.Job("file://" + path, version, path, str(tmp_path), "utf-16", text=text)
        [published] = server.lint_text_job(job, lsp.configs, parser).published
        return [(e.diagnostic.code, e.diagnostic.range, e.diagnostic.message) for e in published.entries]

    parser = lsp._parser("file://" + path)
    lint(text, 1, parser)
    lsp._prepare("file://" + path)
    edited = text.replace("return x.cuda()", "return x.cuda(non_blocking=True)")
    assert lint(edited, 2, parser) == lint(edited, 2, None)
    assert (parser.full, parser.reparsed) == (1, 1)


def test_a_change_after_a_quiet_period_is_linted_at_once_a_burst_is_debounced() -> None:
    from devicelint.integrations import server

    lsp = server.DeviceLintServer(debounce_ms=150)
    uri = "file:///x/train.py"
    assert lsp.change_delay(uri, 10.0) == 0.0  # the first change after opening
    assert lsp.change_delay(uri, 10.05) == 0.15  # typing: 50 ms after the last change
    assert lsp.change_delay(uri, 10.15) == 0.15
    assert lsp.change_delay(uri, 11.0) == 0.0  # after a pause
    lsp.pending[uri] = object()  # a lint of it pending or running: wait
    assert lsp.change_delay(uri, 12.0) == 0.15
    assert server.DeviceLintServer(debounce_ms=0).change_delay(uri, 1.0) == 0.0


@pytest.mark.parametrize("encoding, expected", [("utf-16", [0, 1, 2, 4, 5]), ("utf-8", [0, 1, 3, 7, 8]),
                                                ("utf-32", [0, 1, 2, 3, 4])])
def test_column_conversions(encoding: str, expected: list[int]) -> None:
    from devicelint.integrations.server import code_point_column, lsp_position

    line = "aé😀b"
    assert [lsp_position([line], 1, column, encoding).character for column in range(1, 6)] == expected
    assert [code_point_column(line, units, encoding) for units in expected] == [0, 1, 2, 3, 4]


def test_syntax_errors_use_pythons_position_on_the_libcst_path() -> None:
    """A file with rule tokens is parsed by libcst, which reports an unclosed bracket at the
    end of the file; the DL900 is placed where Python's own parser points."""
    from devicelint.engine import enabled_rules, lint_source

    text = "import torch.nn as nn\nm = nn.DataParallel(a)\nx = nn.DataParallel(3\n"
    [error] = lint_source("t.py", text, enabled_rules(["DL005", "DL900"])).findings
    assert (error.code, error.line, error.column) == ("DL900", 3, 20)
    assert "'(' was never closed" in error.message


def test_without_pygls_the_command_says_how_to_install_it() -> None:
    probe = subprocess.run([sys.executable, "-c", (
        "import sys\n"
        "sys.modules['pygls'] = None  # as if the `server` extra were not installed\n"
        "from devicelint.cli import main\n"
        "main(['server'])\n"
    )], capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert probe.returncode == 2, probe.stderr
    assert "pip install 'devicelint[server]'" in probe.stderr


# A two-file project (after fixtures/project_index/: train.py and metrics.py): the helper
# of metrics.py reads its argument on the host, so train.py's loop waits for the GPU.
METRICS = """\
def accuracy(scores, targets):
    correct = (scores.argmax(1) == targets).float().sum()
    return correct.item() / targets.shape[0]
"""
TRAIN = """\
import torch.nn as nn

from metrics import accuracy


def train(loader, device):
    model = nn.Linear(4, 3).to(device)
    for inputs, targets in loader:
        inputs, targets = inputs.to(device), targets.to(device)
        acc = accuracy(model(inputs), targets)
    return acc
"""


def _cli_findings(workspace: Path, name: str) -> list[tuple]:
    """The CLI run from the workspace (a message names another file from where it ran; the
    server names it from the workspace root)."""
    import os

    from devicelint.runner import lint_paths

    old = os.getcwd()
    os.chdir(workspace)
    try:
        run = lint_paths(["."], use_cache=False)
    finally:
        os.chdir(old)
    return [(f.code, f.line - 1, f.message) for f in run.findings
            if Path(f.path).name == name]


def _seen(diagnostics: list[dict]) -> list[tuple]:
    return [(d["code"], d["range"]["start"]["line"], d["message"]) for d in diagnostics]


def test_the_project_index_of_the_workspace_and_open_buffers(client: LspClient, workspace: Path) -> None:
    (workspace / "metrics.py").write_text(METRICS, encoding="utf-8")
    (workspace / "train.py").write_text(TRAIN, encoding="utf-8")
    expected = _cli_findings(workspace, "train.py")
    assert [code for code, _, _ in expected] == ["DL004"]  # the CLI's cross-file finding
    client.initialize(workspace.as_uri())
    train, metrics = (workspace / "train.py").as_uri(), (workspace / "metrics.py").as_uri()
    _open(client, train, TRAIN)
    assert _seen(client.diagnostics(train, 1, timeout=TIMEOUT)) == expected

    # The buffer of metrics.py overrides the disk: without `.item()` the finding goes away
    # in train.py, whose own text did not change.
    _open(client, metrics, METRICS)
    assert client.diagnostics(metrics, 1, timeout=TIMEOUT) == []
    _change(client, metrics, METRICS.replace("correct.item()", "correct"), 2)
    assert client.diagnostics(metrics, 2, timeout=TIMEOUT) == []
    assert client.diagnostics(train, 1, timeout=TIMEOUT) == []

    # Closed without saving: metrics.py is the file on disk again.
    client.notify("textDocument/didClose", {"textDocument": {"uri": metrics}})
    assert _seen(client.diagnostics(train, 1, timeout=TIMEOUT)) == expected
    assert client.stop() == 0


def test_a_module_changed_on_disk_outside_the_editor(client: LspClient, workspace: Path) -> None:
    (workspace / "metrics.py").write_text(METRICS, encoding="utf-8")
    (workspace / "train.py").write_text(TRAIN, encoding="utf-8")
    client.initialize(workspace.as_uri(), capabilities={"workspace": {
        "workspaceEdit": {"documentChanges": True},
        "didChangeWatchedFiles": {"dynamicRegistration": True}}})
    train, metrics = (workspace / "train.py").as_uri(), (workspace / "metrics.py").as_uri()
    _open(client, train, TRAIN)
    assert [d["code"] for d in client.diagnostics(train, 1, timeout=TIMEOUT)] == ["DL004"]
    # The server asked for the notifications (the client may register file watchers).
    [registration] = [r for m in client.server_requests if m["method"] == "client/registerCapability"
                      for r in m["params"]["registrations"]]
    assert registration["method"] == "workspace/didChangeWatchedFiles"
    assert {w["globPattern"] for w in registration["registerOptions"]["watchers"]} == {"**/*.py", "**/*.pyi"}
    (workspace / "metrics.py").write_text(METRICS.replace("correct.item()", "correct"), encoding="utf-8")
    client.notify("workspace/didChangeWatchedFiles", {"changes": [{"uri": metrics, "type": 2}]})
    assert client.diagnostics(train, 1, timeout=TIMEOUT) == []
    # A new module: the files of the run are discovered again.
    (workspace / "scores.py").write_text(METRICS, encoding="utf-8")
    (workspace / "metrics.py").write_text("from scores import accuracy\n", encoding="utf-8")
    client.notify("workspace/didChangeWatchedFiles", {"changes": [
        {"uri": metrics, "type": 2}, {"uri": (workspace / "scores.py").as_uri(), "type": 1}]})
    assert [d["code"] for d in client.diagnostics(train, 1, timeout=TIMEOUT)] == ["DL004"]
    assert client.stop() == 0


DATA = """\
import torch
from torch.utils.data import DataLoader, TensorDataset


def _dataset(n):
    return TensorDataset(torch.randn(n, 4), torch.randint(0, 3, (n,)))


def get_loader(n):
    return DataLoader(_dataset(n), batch_size=2)


def host_only(n):
    return DataLoader(_dataset(n), batch_size=2)
"""
FEED = """\
from data import {name}


def run(device):
    for inputs, targets in {name}(8):
        inputs, targets = inputs.to(device), targets.to(device)
"""


def test_the_files_of_the_run_are_those_the_cli_discovers(client: LspClient, workspace: Path) -> None:
    # DL008 reports a loader where it is built, when a file of the run moves its batches to
    # the GPU. `generated/` is excluded by the workspace's configuration: the loader fed
    # only there is not reported, by the CLI or the server.
    (workspace / "data.py").write_text(DATA, encoding="utf-8")
    (workspace / "train.py").write_text(FEED.format(name="get_loader"), encoding="utf-8")
    (workspace / "generated").mkdir()
    (workspace / "generated" / "feed.py").write_text(FEED.format(name="host_only"), encoding="utf-8")
    expected = _cli_findings(workspace, "data.py")
    assert [(code, line) for code, line, _ in expected] == [("DL008", 9)]
    client.initialize(workspace.as_uri())
    data = (workspace / "data.py").as_uri()
    _open(client, data, DATA)
    assert _seen(client.diagnostics(data, 1, timeout=TIMEOUT)) == expected
    assert client.stop() == 0

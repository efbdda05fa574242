"""Autofix (`--fix`, `--unsafe-fixes`, `--diff`): devicelint/fix.py.

The fix engine is tested with small synthetic rules defined here, so these tests do not depend
on the real rules' fixes; the real rules' before/after pairs (fixtures/<CODE>/fix_*.py and
.expected) are checked by `test_fixture_pair`, and a round-trip over real package sources by
`test_roundtrip_*`.
"""

from __future__ import annotations

import ast
import hashlib
import os
import shutil
import stat
from pathlib import Path

import libcst as cst
import pytest
from click.testing import CliRunner

import devicelint.rule
from devicelint.cli import main
from devicelint.engine import enabled_rules
from devicelint.fix import fix_text, fixable_document, unified_diff
from devicelint.rule import Rule, all_rules

from conftest import FIXTURES, ROOT


# -- synthetic rules -------------------------------------------------------------------------


def _method_call(node: cst.Call, name: str) -> bool:
    return isinstance(node.func, cst.Attribute) and node.func.attr.value == name


class ViewToReshape(Rule):
    """`x.view(...)` -> `x.reshape(...)`: safe."""

    code = "XF001"
    name = "test-view"
    default_enabled = False
    fixable = True

    def visit_Call(self, node: cst.Call) -> None:
        if _method_call(node, "view"):
            new = node.with_changes(func=node.func.with_changes(attr=cst.Name("reshape")))
            self.report(node, "use reshape", replacement=new)


class CudaToTo(Rule):
    """`x.cuda()` -> `x.to("cuda")`: unsafe (needs --unsafe-fixes)."""

    code = "XF002"
    name = "test-cuda"
    default_enabled = False
    fixable = True

    def visit_Call(self, node: cst.Call) -> None:
        if _method_call(node, "cuda") and not node.args:
            new = node.with_changes(
                func=node.func.with_changes(attr=cst.Name("to")),
                args=[cst.Arg(cst.SimpleString('"cuda"'))],
            )
            self.report(node, "use to", replacement=new, safe=False)


class BreaksSyntax(Rule):
    """`x.broken()` -> `1.broken()`, which does not parse."""

    code = "XF003"
    name = "test-broken"
    default_enabled = False
    fixable = True

    def visit_Call(self, node: cst.Call) -> None:
        if _method_call(node, "broken"):
            new = node.with_changes(func=node.func.with_changes(value=cst.Integer("1")))
            self.report(node, "broken fix", replacement=new)


class ViewToFlatten(Rule):
    """Competes with XF001 for the same span: `x.view(...)` -> `x.flatten()`."""

    code = "XF004"
    name = "test-flatten"
    default_enabled = False
    fixable = True

    def visit_Call(self, node: cst.Call) -> None:
        if _method_call(node, "view"):
            new = node.with_changes(func=node.func.with_changes(attr=cst.Name("flatten")), args=[])
            self.report(node, "use flatten", replacement=new)


class FlipFlop(Rule):
    """Never converges: renames `ping` to `pong` and `pong` to `ping`."""

    code = "XF005"
    name = "test-flipflop"
    default_enabled = False
    fixable = True

    def visit_Name(self, node: cst.Name) -> None:
        other = {"ping": "pong", "pong": "ping"}.get(node.value)
        if other:
            self.report(node, "flip", replacement=cst.Name(other))


class Multiline(Rule):
    """`x.spread()` -> a call over several lines (new line breaks in the fix)."""

    code = "XF006"
    name = "test-multiline"
    default_enabled = False
    fixable = True

    def visit_Call(self, node: cst.Call) -> None:
        if _method_call(node, "spread"):
            new = cst.parse_expression("spread(\n    1,\n    2,\n)")
            self.report(node, "spread", replacement=new)


SYNTHETIC = [ViewToReshape, CudaToTo, BreaksSyntax, ViewToFlatten, FlipFlop, Multiline]


def fix(text: str, rules, unsafe: bool = False, **kwargs):
    return fix_text("t.py", text, rules, lambda f: f.safe or unsafe, **kwargs)


# -- fixing a text ---------------------------------------------------------------------------


def test_before_after_and_idempotent() -> None:
    before = "import torch\n\ny = x.view(2, 3)  # keep this comment\nz  =  w.view( -1 )\n"
    after = "import torch\n\ny = x.reshape(2, 3)  # keep this comment\nz  =  w.reshape( -1 )\n"
    result = fix(before, [ViewToReshape])
    assert result.text == after
    assert [f.code for f in result.applied] == ["XF001", "XF001"]
    assert result.findings == [] and result.messages == []
    again = fix(after, [ViewToReshape])
    assert again.text == after and again.applied == []


def test_unsafe_fix_needs_unsafe() -> None:
    before = "a = b.cuda()\n"
    safe_only = fix(before, [CudaToTo])
    assert safe_only.text == before and safe_only.applied == []
    assert [f.code for f in safe_only.findings] == ["XF002"]
    assert fix(before, [CudaToTo], unsafe=True).text == 'a = b.to("cuda")\n'


def test_nested_fixes_overlap_and_settle_in_rounds() -> None:
    # The outer fix's span contains the inner one: round 1 applies the outer, the re-lint
    # finds the inner again at its new position, round 2 applies it.
    result = fix("y = a.view(b.view(1), c.view(2))\n", [ViewToReshape])
    assert result.text == "y = a.reshape(b.reshape(1), c.reshape(2))\n"
    assert len(result.applied) == 3


def test_competing_fixes_are_deterministic() -> None:
    # Same span, two rules: the smaller code wins whatever the rules' order; the loser's
    # finding is gone after the re-lint (nothing left to match `.view`).
    text = "y = x.view(3)\n"
    first = fix(text, [ViewToReshape, ViewToFlatten])
    second = fix(text, [ViewToFlatten, ViewToReshape])
    assert first.text == second.text == "y = x.reshape(3)\n"


def test_unparseable_fix_dropped_and_others_applied() -> None:
    text = "a = x.broken()\nb = y.view(2)\n"
    result = fix(text, [BreaksSyntax, ViewToReshape])
    assert result.text == "a = x.broken()\nb = y.reshape(2)\n"
    assert [f.code for f in result.applied] == ["XF001"]
    assert [f.code for f in result.findings] == ["XF003"]  # still reported
    assert len(result.messages) == 1
    assert "t.py:1:5: XF003: fix dropped: the result would not parse" in result.messages[0]


def test_not_converging_is_bounded_and_reported() -> None:
    result = fix("ping = 1\n", [FlipFlop])
    assert result.text in ("ping = 1\n", "pong = 1\n")
    assert any("undo each other" in m or "did not converge" in m for m in result.messages)
    bounded = fix("ping = 1\n", [FlipFlop], max_rounds=1)
    assert bounded.text == "pong = 1\n"
    assert any("did not converge after 1 rounds" in m for m in bounded.messages)


def test_crlf_text_keeps_crlf_in_new_lines() -> None:
    result = fix("a = 1\r\nb = x.spread()\r\n", [Multiline])
    assert result.text == "a = 1\r\nb = spread(\r\n    1,\r\n    2,\r\n)\r\n"


def test_columns_count_code_points() -> None:
    result = fix("s = 'é€😀'; y = x.view(1)\n", [ViewToReshape])
    assert result.text == "s = 'é€😀'; y = x.reshape(1)\n"


@pytest.mark.parametrize(
    "before",
    [
        "if a:\n\ty = x.view(1)\n",  # a tab is one column
        "s = '\u2028'; y = x.view(1)\n",  # not a line break for Python
        's = """a\u2028b\x0bc\x1c"""\ny = x.view(1)\n',  # str.splitlines() would split here
    ],
)
def test_only_python_line_breaks_count(before: str) -> None:
    assert fix(before, [ViewToReshape]).text == before.replace("view", "reshape")


def test_suppressed_finding_is_not_fixed() -> None:
    text = "y = x.view(1)  # noqa: XF001\n"
    assert fix(text, [ViewToReshape]).text == text


def test_unified_diff_format() -> None:
    diff = unified_diff("p.py", "a\nb = x.view(1)", "a\nb = x.reshape(1)")
    assert diff == (
        "--- p.py\n+++ p.py\n@@ -1,2 +1,2 @@\n a\n-b = x.view(1)\n"
        "\\ No newline at end of file\n+b = x.reshape(1)\n\\ No newline at end of file\n"
    )


# -- the command line ------------------------------------------------------------------------


@pytest.fixture
def cli(monkeypatch, tmp_path):
    """Run `devicelint ARGS` in tmp_path with the synthetic rules registered."""
    registry = dict(all_rules())
    registry.update({rule.code: rule for rule in SYNTHETIC})
    monkeypatch.setattr(devicelint.rule, "_registry", registry)
    monkeypatch.chdir(tmp_path)

    def run(*args: str):
        return CliRunner().invoke(main, ["check", "--no-cache", *args], catch_exceptions=False)

    return run


def test_cli_fix_writes_and_reports_the_rest(cli, tmp_path) -> None:
    path = tmp_path / "m.py"
    path.write_text("y = x.view(1)\nz = w.cuda()\n")
    result = cli("--select", "XF001,XF002", "--fix", "m.py")
    assert path.read_text() == "y = x.reshape(1)\nz = w.cuda()\n"
    assert result.exit_code == 1  # the unsafe one remains
    assert "XF001" not in result.stdout
    assert "m.py:2:5: XF002" in result.stdout
    assert "Fixed 1 finding." in result.stdout

    result = cli("--select", "XF001,XF002", "--fix", "--unsafe-fixes", "m.py")
    assert path.read_text() == 'y = x.reshape(1)\nz = w.to("cuda")\n'
    assert result.exit_code == 0
    assert "Fixed 1 finding." in result.stdout

    again = cli("--select", "XF001,XF002", "--fix", "--unsafe-fixes", "m.py")
    assert again.exit_code == 0 and "Fixed" not in again.stdout
    assert path.read_text() == 'y = x.reshape(1)\nz = w.to("cuda")\n'


def test_cli_diff_changes_nothing(cli, tmp_path) -> None:
    path = tmp_path / "m.py"
    path.write_text("y = x.view(1)\n")
    result = cli("--select", "XF001", "--diff", "m.py")
    assert result.exit_code == 1
    assert result.stdout == "--- m.py\n+++ m.py\n@@ -1 +1 @@\n-y = x.view(1)\n+y = x.reshape(1)\n"
    assert path.read_text() == "y = x.view(1)\n"
    # an unsafe fix is only in the diff with --unsafe-fixes
    path.write_text("z = w.cuda()\n")
    assert cli("--select", "XF002", "--diff", "m.py").exit_code == 0
    assert cli("--select", "XF002", "--diff", "m.py").stdout == ""
    assert cli("--select", "XF002", "--diff", "--unsafe-fixes", "m.py").exit_code == 1


def test_cli_diff_applies_with_patch(cli, tmp_path) -> None:
    patch = shutil.which("patch")
    if patch is None:
        pytest.skip("no `patch` program")
    import subprocess

    (tmp_path / "m.py").write_text("a = 1\ny = x.view(1)\n\n\nz = x.view(2)\n")
    diff = cli("--select", "XF001", "--diff", "m.py").stdout
    subprocess.run([patch, "-p0", "-s"], input=diff.encode(), cwd=tmp_path, check=True)
    assert (tmp_path / "m.py").read_text() == "a = 1\ny = x.reshape(1)\n\n\nz = x.reshape(2)\n"


def test_cli_unparseable_fix_is_dropped_with_a_message(cli, tmp_path) -> None:
    path = tmp_path / "m.py"
    path.write_text("a = x.broken()\n")
    result = cli("--select", "XF003", "--fix", "m.py")
    assert path.read_text() == "a = x.broken()\n"
    assert result.exit_code == 1
    assert "m.py:1:5: XF003" in result.stdout  # still reported
    assert "fix dropped: the result would not parse" in result.stderr
    diff = cli("--select", "XF003", "--diff", "m.py")
    assert diff.exit_code == 0 and diff.stdout == ""


def _bytes_with(text: str, encoding: str, bom: bool = False) -> bytes:
    return (b"\xef\xbb\xbf" if bom else b"") + text.encode(encoding)


@pytest.mark.parametrize(
    "before, after",
    [
        pytest.param(
            _bytes_with("# -*- coding: latin-1 -*-\ns = 'café'  # é\ny = x.view(1)\n", "latin-1"),
            _bytes_with("# -*- coding: latin-1 -*-\ns = 'café'  # é\ny = x.reshape(1)\n", "latin-1"),
            id="latin-1-cookie",
        ),
        pytest.param(
            _bytes_with("s = 'é'\ny = x.view(1)\n", "utf-8", bom=True),
            _bytes_with("s = 'é'\ny = x.reshape(1)\n", "utf-8", bom=True),
            id="utf-8-bom",
        ),
        pytest.param(
            b"a = 1  \r\n\r\ny = x.view(1)\r\nb = 2\r\n",
            b"a = 1  \r\n\r\ny = x.reshape(1)\r\nb = 2\r\n",
            id="crlf",
        ),
        pytest.param(
            b"a = 1\ry = x.spread()\r",
            b"a = 1\ry = spread(\r    1,\r    2,\r)\r",
            id="old-mac-cr",
        ),
        pytest.param(
            b"y = x.view(1)\n\x0cz = 1\t# tab\n",
            b"y = x.reshape(1)\n\x0cz = 1\t# tab\n",
            id="form-feed",
        ),
        pytest.param(b"y = x.view(1)", b"y = x.reshape(1)", id="no-final-newline"),
    ],
)
def test_cli_fix_keeps_encoding_and_line_endings(cli, tmp_path, before, after) -> None:
    path = tmp_path / "m.py"
    path.write_bytes(before)
    result = cli("--select", "XF001,XF006", "--fix", "m.py")
    assert result.exit_code == 0, result.stdout + result.stderr
    assert path.read_bytes() == after


def test_cli_fix_is_atomic_and_keeps_mode(cli, tmp_path) -> None:
    path = tmp_path / "m.py"
    path.write_text("y = x.view(1)\n")
    path.chmod(0o640)
    inode = path.stat().st_ino
    cli("--select", "XF001", "--fix", "m.py")
    assert path.read_text() == "y = x.reshape(1)\n"
    assert stat.S_IMODE(path.stat().st_mode) == 0o640
    assert path.stat().st_ino != inode  # replaced by rename, not rewritten in place
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.py"]  # no temporary file left


def test_cli_fix_writes_through_a_symlink(cli, tmp_path) -> None:
    (tmp_path / "real.py").write_text("y = x.view(1)\n")
    (tmp_path / "link.py").symlink_to("real.py")
    cli("--select", "XF001", "--fix", "link.py")
    assert (tmp_path / "link.py").is_symlink()
    assert (tmp_path / "real.py").read_text() == "y = x.reshape(1)\n"


def test_cli_fix_with_nothing_to_fix(cli, tmp_path) -> None:
    (tmp_path / "m.py").write_text("y = x.reshape(1)\n")
    result = cli("--select", "XF001", "--fix", "m.py")
    assert result.exit_code == 0 and "Fixed" not in result.stdout
    assert cli("--select", "XF001", "--diff", "m.py").exit_code == 0


def test_cli_fix_respects_per_file_ignores(cli, tmp_path) -> None:
    (tmp_path / "m.py").write_text("y = x.view(1)\n")
    cli("--select", "XF001", "--per-file-ignores", "m.py:XF001", "--fix", "m.py")
    assert (tmp_path / "m.py").read_text() == "y = x.view(1)\n"


def test_read_document_refuses_what_it_cannot_write_back(tmp_path) -> None:
    path = tmp_path / "m.py"
    path.write_bytes(b"\xef\xbb\xbf\xef\xbb\xbfx = 1\n")  # two BOMs: decoding drops both
    with pytest.raises(ValueError):
        fixable_document(str(path))


# -- the real rules' fix fixtures ------------------------------------------------------------

FIX_PAIRS = sorted(
    p for p in FIXTURES.glob("DL*/fix_*.py") if p.with_name(p.name + ".expected").exists()
)


def test_every_fix_fixture_has_its_expected_text() -> None:
    """A fix_*.py without its .expected would silently not be tested."""
    missing = [str(p) for p in FIXTURES.glob("DL*/fix_*.py")
               if not p.with_name(p.name + ".expected").exists()]
    assert not missing, missing


@pytest.mark.parametrize("path", FIX_PAIRS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_fixture_pair(path: Path) -> None:
    """fix_<name>.py fixed with its rule (safe and unsafe fixes) gives .expected, byte for
    byte; the result parses; fixing it again changes nothing."""
    code = path.parent.name
    document = fixable_document(str(path))
    rules = enabled_rules([code])
    result = fix_text(str(path), document.text, rules, lambda f: True)
    assert result.messages == []
    assert result.applied, f"{path.name}: no fix applied"
    expected = path.with_name(path.name + ".expected").read_bytes()
    assert document.encode(result.text) == expected
    ast.parse(result.text)
    again = fix_text(str(path), result.text, rules, lambda f: True)
    assert again.text == result.text and again.applied == []


# -- round-trip over real sources ------------------------------------------------------------

CORPUS = ROOT / "bench" / ".corpora" / "torchvision-0.24.1"

# A small stand-in for a package, used when the real corpora are not unpacked: spellings the
# real rules fix, next to comments, odd formatting and non-ASCII text.
SAMPLE = {
    "train.py": (
        "# -*- coding: utf-8 -*-\n"
        "import torch\n"
        "from torch.cuda.amp import GradScaler\n\n"
        "def step(model, batch, device):  # café\n"
        "    batch.to(device)\n"
        "    zeros = torch.zeros(2, 3).to(device)\n"
        "    with torch.cuda.amp.autocast(dtype=torch.float16):\n"
        "        out = model(batch).transpose(0, 1).view(-1)\n"
        "    scaler = torch.cuda.amp.GradScaler()\n"
        "    return out, zeros, scaler\n"
    ),
    "crlf.py": (
        "import torch\r\n"
        "x = torch.ones(4, 4).t()\r\n"
        "y = x.view(16)  # comment\r\n"
        "with torch.cuda.amp.autocast(True):\r\n"
        "    pass\r\n"
    ),
    "pkg/__init__.py": "",
    "pkg/broken.py": "def f(:\n    pass\n",
}


def _digests(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*.py"))
    }


def _roundtrip(root: Path) -> None:
    before = _digests(root)
    first = CliRunner().invoke(main, ["check", "--fix", "--unsafe-fixes", "--no-cache", str(root)])
    assert first.exit_code in (0, 1), first.stderr
    assert "would not parse" not in first.stderr
    after = _digests(root)
    for name, digest in after.items():
        if digest == before[name]:
            continue
        data = (root / name).read_bytes()
        ast.parse(data)
        cst.parse_module(fixable_document(str(root / name)).text)
    second = CliRunner().invoke(main, ["check", "--fix", "--unsafe-fixes", "--no-cache", str(root)])
    assert "Fixed" not in second.stdout
    assert _digests(root) == after


def test_roundtrip_sample(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    root = tmp_path / "sample"
    for name, text in SAMPLE.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(text.encode("utf-8"))
    _roundtrip(root)
    assert (root / "pkg/broken.py").read_text() == SAMPLE["pkg/broken.py"]


@pytest.mark.slow
@pytest.mark.skipif(not CORPUS.exists(), reason="run `python bench/corpus.py` to unpack it")
def test_roundtrip_torchvision(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    root = tmp_path / CORPUS.name
    shutil.copytree(CORPUS, root)
    _roundtrip(root)

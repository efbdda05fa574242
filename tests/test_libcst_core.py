"""libcst imported in part (devicelint/libcst_core.py, issue 17): what `check` imports of
libcst, the names served before libcst's own `__init__.py` runs, and the parse. Each test
runs in a fresh interpreter: libcst is imported already in this one."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from conftest import ROOT


def _python(code: str, cwd: Path = ROOT) -> str:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", code], cwd=cwd, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout


# The served names, before and after libcst's __init__.py ran, and whether the package is
# the plain one afterwards.
_SERVED = """
import json, sys
from devicelint import libcst_core
libcst_core.install()
import libcst, libcst.metadata
report = {}
for package in (libcst, libcst.metadata):
    loader = package.__loader__
    served = {name: loader.core_value(name) for name in sorted(loader.exported)}
    served = {name: value for name, value in served.items() if value is not libcst_core._MISSING}
    was_partial = libcst_core.partial(package.__name__)
    package.__all__  # not served: libcst's __init__.py runs
    report[package.__name__] = {
        "served": len(served), "was_partial": was_partial, "partial": libcst_core.partial(package.__name__),
        "different": [name for name, value in served.items() if vars(package).get(name) is not value],
        "loader": type(package.__loader__).__name__, "getattr": "__getattr__" in vars(package),
    }
print(json.dumps(report))
"""


def test_served_names_are_the_objects_libcsts_own_init_binds() -> None:
    report = json.loads(_python(_SERVED))
    assert report["libcst"]["served"] > 200  # the node classes
    assert report["libcst.metadata"]["served"] >= 2  # PositionProvider and its whitespace-inclusive twin
    for package in report.values():
        assert package["was_partial"] and not package["partial"]
        assert package["different"] == []
        assert package["loader"] == "SourceFileLoader" and not package["getattr"]


_PARSE = """
import json, sys
from devicelint import libcst_core
libcst_core.install()
import libcst as cst
trees = [libcst_core.parse_module(source) for source in SOURCES]
partial = libcst_core.partial()
imported = sorted(m for m in sys.modules if m.startswith("libcst"))
plain = [cst.parse_module(source) for source in SOURCES]  # libcst's own entry point: its __init__ runs
print(json.dumps({
    "partial": partial, "complete": not libcst_core.partial(),
    "equal": [a.deep_equals(b) and a.code == b.code and a.encoding == b.encoding
              for a, b, source in zip(trees, plain, SOURCES)],
    "imported": imported,
}))
"""

SOURCES = [
    "import torch\n\nx = torch.zeros(3).cuda()\n",
    "\ufeffdef f(a, /, *b, c=1, **d):\n    return [i async for i in a] if b else {**d}\n",
    "# -*- coding: latin-1 -*-\r\nclass A:\r\n    x: int = 1\r\n",
    "",
    "match x:\n    case [1, *rest] if rest:\n        pass\n",
]


def test_the_partial_parse_is_libcsts_parse_module() -> None:
    report = json.loads(_python(f"SOURCES = {SOURCES!r}\n" + _PARSE))
    assert report["partial"] and report["complete"]
    assert report["equal"] == [True] * len(SOURCES)
    # What a parse needs of libcst, and no more: no Python tokenizer, helpers or metadata.
    assert "libcst.native" in report["imported"] and "libcst._nodes.statement" in report["imported"]
    for unused in ("libcst._parser.detect_config", "libcst.helpers", "libcst.metadata.scope_provider",
                   "libcst._batched_visitor"):
        assert unused not in report["imported"], unused


_CHECK = """
import atexit, json, sys
def _report():
    print("MODULES " + json.dumps(sorted(m for m in sys.modules if m.startswith("libcst"))), file=sys.stderr)
atexit.register(_report)
sys.argv = ["devicelint", *sys.argv[1:]]
from devicelint.cli import main
main()
"""


def test_check_imports_libcst_in_part_with_the_same_findings(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(
        "import torch\nfrom torch.utils.data import DataLoader\n\n"
        "def train(model, data, device):\n"
        "    loader = DataLoader(data, batch_size=8)\n"
        "    for x, y in loader:\n"
        "        x = x.to(device)\n"
        "        loss = model(x).sum()\n"
        "        print(loss.item())\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT), "XDG_CACHE_HOME": str(tmp_path / "xdg")}
    args = ["--no-cache", "--select", "ALL", "--output-format", "json", "train.py"]
    done = subprocess.run([sys.executable, "-c", _CHECK, *args], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120)
    modules = json.loads([row for row in done.stderr.splitlines() if row.startswith("MODULES ")][-1][8:])
    # The same run with libcst imported whole first, as a library user's process has it.
    plain = subprocess.run([sys.executable, "-c", "import libcst\n" + _CHECK, *args], cwd=tmp_path, env=env,
                           capture_output=True, text=True, timeout=120)
    assert done.returncode == plain.returncode == 1
    assert done.stdout == plain.stdout and '"DL004"' in done.stdout
    assert "libcst._nodes.expression" in modules
    # Positions come from devicelint.context's own code generation (_Spans), not libcst.metadata.
    for unused in ("libcst._parser.detect_config", "libcst.helpers", "libcst.metadata.scope_provider",
                   "libcst.metadata.position_provider",
                   "libcst.metadata.type_inference_provider", "libcst.metadata.wrapper"):
        assert unused not in modules, unused


def test_a_name_outside_the_core_runs_libcsts_init(tmp_path: Path) -> None:
    out = _python(
        "from devicelint import libcst_core\nlibcst_core.install()\n"
        "import libcst\nassert libcst_core.partial()\n"
        "from libcst import MetadataWrapper, parse_module\n"
        "import libcst.matchers as m\n"
        "assert not libcst_core.partial() and m.matches(parse_module('x').body[0].body[0].value, m.Name('x'))\n"
        "print(type(MetadataWrapper).__name__, libcst.Name is libcst._nodes.expression.Name)\n"
    )
    assert out.split() == ["type", "True"]


def test_install_leaves_an_imported_libcst_alone() -> None:
    out = _python(
        "import sys, libcst\nfrom devicelint import libcst_core\nlibcst_core.install()\n"
        "print(libcst_core._Finder in sys.meta_path, libcst_core.partial())\n"
    )
    assert out.split() == ["False", "False"]


def test_fixes_with_libcst_in_part_are_the_plain_ones(tmp_path: Path) -> None:
    """Fixes build and print nodes (CSTTransformer, code generation): the diff is the one
    a process with libcst imported whole prints."""
    fixture = ROOT / "fixtures" / "DL006"
    for path in sorted(fixture.glob("bad_*.py"))[:3]:
        (tmp_path / path.name).write_text(path.read_text(encoding="utf-8"))
    env = {**os.environ, "PYTHONPATH": str(ROOT), "XDG_CACHE_HOME": str(tmp_path / "xdg")}
    args = ["--no-cache", "--diff", "--unsafe-fixes", "--select", "ALL", "-j", "1", "."]
    outputs = []
    for prelude in ("", "import libcst\n"):
        done = subprocess.run([sys.executable, "-c", prelude + _CHECK, *args], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=120)
        outputs.append((done.returncode, done.stdout))
    assert outputs[0] == outputs[1] and "+++" in outputs[0][1]

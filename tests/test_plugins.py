"""Third-party rule packs register through the `devicelint.rules` entry-point group."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

PLUGIN = '''
import libcst as cst
from devicelint.rule import Rule


class NoPrint(Rule):
    """## What it does
    Flags print calls (a plugin rule used in devicelint's tests)."""

    code = "XP001"
    name = "no-print"
    summary = "print() call"
    tokens = ("print",)

    def visit_Call(self, node: cst.Call) -> None:
        if isinstance(node.func, cst.Name) and node.func.value == "print":
            self.report(node)
'''


def test_entry_point_rules_are_loaded(tmp_path: Path) -> None:
    site = tmp_path / "site"
    (site / "xp_rules").mkdir(parents=True)
    (site / "xp_rules" / "__init__.py").write_text(PLUGIN)
    dist = site / "xp_rules-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: xp-rules\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[devicelint.rules]\nxp = xp_rules\n")
    (tmp_path / "code.py").write_text("print('hi')\n")
    script = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(site)!r})
        from devicelint.cli import main
        sys.argv = ["devicelint", "--no-cache", "--extend-select", "XP", "code.py"]
        main()
    """)
    result = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True)
    assert result.returncode == 1, result.stderr
    assert "code.py:1:1: XP001 print() call" in result.stdout
    listing = subprocess.run(
        [sys.executable, "-c", f"import sys; sys.path.insert(0, {str(site)!r}); "
         "from devicelint.cli import main; sys.argv = ['devicelint', '--list-rules']; main()"],
        cwd=tmp_path, capture_output=True, text=True,
    )
    assert "XP001" in listing.stdout and "no-print" in listing.stdout

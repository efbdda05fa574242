"""docs/rules/*.md and the README's rule table are generated from the rules themselves
(devicelint/rule_docs.py) and must be current; every link to a rule's page resolves."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import ROOT
from helpers import BAD_DP, run_cli, write

from devicelint import rule_docs
from devicelint.docs_url import PROJECT_URL, rule_url


# test_rule_pages_and_readme_table_are_current is in tests/test_reporters.py, which every
# helper runs before landing: a changed rule docstring shows up there.


def test_every_rule_has_a_page_with_its_docs() -> None:
    for code, rule in rule_docs.builtin_rules().items():
        text = (ROOT / "docs" / "rules" / f"{code}.md").read_text(encoding="utf-8")
        assert text.startswith(f"# {code} {rule.name}\n")
        if rule.handlers():
            assert "## Why is this bad?" in text and "## Use instead" in text


def test_a_changed_docstring_makes_the_page_stale(tmp_path: Path) -> None:
    (tmp_path / "docs" / "rules").mkdir(parents=True)
    (tmp_path / "README.md").write_text((ROOT / "README.md").read_text(encoding="utf-8"), encoding="utf-8")
    for path, text in rule_docs.expected(ROOT).items():
        if path.parent.name == "rules":
            (tmp_path / "docs" / "rules" / path.name).write_text(text, encoding="utf-8")
    assert rule_docs.stale(tmp_path) == []
    page = tmp_path / "docs" / "rules" / "DL005.md"
    page.write_text(page.read_text(encoding="utf-8").replace("DataParallel", "DP"), encoding="utf-8")
    (tmp_path / "docs" / "rules" / "DL099.md").write_text("# gone\n", encoding="utf-8")
    assert rule_docs.stale(tmp_path) == [page, tmp_path / "docs" / "rules" / "DL099.md"]


def test_sarif_links_each_rule_to_its_page(tmp_path: Path) -> None:
    write(tmp_path / "a.py", BAD_DP)
    document = json.loads(run_cli(["--output-format", "sarif", "a.py"], tmp_path).output)
    rules = document["runs"][0]["tool"]["driver"]["rules"]
    assert rules, "no rules in the SARIF driver"
    for rule in rules:
        assert rule["helpUri"] == rule_url(rule["id"])
        page = rule["helpUri"].removeprefix(f"{PROJECT_URL}/blob/main/")
        assert (ROOT / page).is_file(), page
        assert rule["help"]["markdown"].startswith("## What it does") or rule["id"].startswith("DL9")


def test_messages_are_short_like_ruffs() -> None:
    """A message says what and where in one clause (issue 15: ruff's are 39-47 characters
    at the median); why and cost are in the docs, the fix in `help:`. Measured on every
    fixture finding."""
    import statistics

    result = run_cli(["--select", "ALL", "--output-format", "json", "fixtures"], ROOT)
    lengths = sorted(len(f["message"]) for f in json.loads(result.output))
    assert len(lengths) > 100
    assert statistics.median(lengths) <= 100, statistics.median(lengths)
    assert lengths[-1] <= 160, lengths[-1]

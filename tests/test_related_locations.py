"""A finding reported at a call names the helper's line it comes from (issue 13): the host
read inside the helper is a related location, in JSON, in SARIF (`relatedLocations`) and
through the cache."""

from __future__ import annotations

import json

from devicelint.cache import pack, unpack
from devicelint.engine import enabled_rules, lint_source
from devicelint.finding import Finding
from devicelint.reporters import sarif
from devicelint.reporters import ReportContext

from conftest import FIXTURES

HELPERS = FIXTURES / "DL004" / "bad_helpers.py"


def _findings() -> list[Finding]:
    source = HELPERS.read_text(encoding="utf-8")
    return [f for f in lint_source(str(HELPERS), source, enabled_rules(["DL004"])).findings]


def test_call_site_finding_names_the_read_inside_the_helper() -> None:
    by_line = {f.line: f for f in _findings()}
    accuracy = by_line[40]
    assert [(r["line"], r["column"]) for r in accuracy.related] == [(27, 12)]
    assert "accuracy()" in accuracy.related[0]["message"]


def test_related_locations_survive_json_cache_and_reach_sarif() -> None:
    finding = next(f for f in _findings() if f.related)
    data = finding.to_dict()
    assert Finding.from_dict(json.loads(json.dumps(data))).related == finding.related
    row = pack({k: v for k, v in data.items() if k != "path"})
    assert row is not None and unpack(row)["related"] == finding.related
    document = json.loads(sarif.render([finding], ReportContext()))
    related = document["runs"][0]["results"][0]["relatedLocations"]
    assert related[0]["physicalLocation"]["region"]["startLine"] == finding.related[0]["line"]
    assert related[0]["physicalLocation"]["artifactLocation"]["uri"].endswith("bad_helpers.py")


def test_rows_without_related_locations_still_load() -> None:
    finding = next(f for f in _findings() if f.related)
    finding.related = []  # a read in the loop itself names nothing else
    row = pack({k: v for k, v in finding.to_dict().items() if k != "path"})
    assert len(row) == 11 and "related" not in unpack(row)

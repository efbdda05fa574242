"""Ranking of confirm findings (issue 14 item 2): crashes first, then by time, negligible ones
after, findings whose pitfall did not happen last; text and HTML keep that order."""

from __future__ import annotations

from devicelint.finding import Finding
from devicelint.reporters.html import render_html
from devicelint.runtime.rank import NEGLIGIBLE_MS, level, rank
from devicelint.runtime.report import format_text


def finding(line: int, code: str, **conf) -> Finding:
    f = Finding(code, "rule", "train.py", line, 1, line, 1, f"message {line}")
    f.confirmation = {"device": "sim", "summary": f"at {line}", **conf}
    return f


def test_levels() -> None:
    assert level({"status": "found", "error": "Expected all tensors..."}, 10.0) == "crash"
    assert level({"status": "confirmed", "measured_ms": 5.0}, 10.0) == "cost"
    # under 1 ms and under 1% of a 10 s run
    assert level({"status": "confirmed", "measured_ms": NEGLIGIBLE_MS / 2}, 10.0) == "negligible"
    # under 1 ms but 5% of a 10 ms run: not negligible
    assert level({"status": "confirmed", "measured_ms": 0.5}, 0.01) == "cost"
    assert level({"status": "confirmed"}, 10.0) == "unmeasured"
    assert level({"status": "found", "cost_ms": 3.0}, 10.0) == "cost"
    assert level({"status": "refuted", "measured_ms": 9.0}, 10.0) is None


def test_order_and_output() -> None:
    findings = [
        finding(1, "DL004", status="refuted"),
        finding(2, "DL004", status="confirmed", measured_ms=0.2),
        finding(3, "DL001", status="found", measured_ms=40.0),
        finding(4, "DL002", status="found", error="Expected all tensors to be on"),
        finding(5, "DL001", status="confirmed", measured_ms=120.0),
        finding(6, "DL003", status="confirmed"),
    ]
    ranked = rank(findings, lambda f: 30.0)
    assert [f.line for f in ranked] == [4, 5, 3, 6, 2, 1]
    assert ranked[0].confirmation["level"] == "crash"
    assert ranked[4].confirmation["level"] == "negligible"
    assert "level" not in ranked[5].confirmation
    text = format_text(ranked, [], fixture_mode=False)
    lines = [line for line in text.splitlines() if line.startswith("train.py:")]
    assert [int(line.split(":")[1]) for line in lines] == [4, 5, 3, 6, 2, 1]
    assert "DL002 [found]" in lines[0] and lines[0].endswith("[crash]") and lines[4].endswith("[negligible]")
    html = render_html(ranked, runs=[])
    positions = [html.index(f"at {n}") for n in (4, 5, 3, 6, 2, 1)]
    assert positions == sorted(positions)

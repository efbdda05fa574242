"""The HTML report of `devicelint confirm`: self-contained, sorted by measured cost, and
readable in a real browser (headless Chromium; skipped with a message when absent)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from devicelint.finding import Finding
from devicelint.reporters.html import render_html

from conftest import ROOT


def finding(path: str, line: int, code: str, message: str, **confirmation) -> Finding:
    return Finding(code=code, name=f"rule-{code.lower()}", path=path, line=line, column=5,
                   end_line=line, end_column=20, message=message,
                   confirmation=confirmation or None)


@pytest.fixture
def sample(tmp_path: Path) -> list[Finding]:
    script = tmp_path / "train.py"
    script.write_text(
        "import torch\n"
        "for row in rows:\n"
        "    batch.append(row.to('cuda'))\n"
        "loss_sum = 0.0\n"
        "for x in loader:\n"
        "    loss_sum += loss(x).item()\n"
        "model = nn.DataParallel(net)\n"
        "print('<b>not markup</b>')\n",
        encoding="utf-8",
    )
    path = str(script)
    return [
        finding(path, 6, "DL004", "`.item()` in a loop syncs the host every step",
                status="confirmed", summary="1,000 host syncs, host blocked 148.000 ms",
                device="NVIDIA H200", count=1000, measured_ms=148.0, counterfactual_ms=2.5),
        finding(path, 3, "DL001", "per-row host-to-device copy in a loop",
                status="confirmed", summary="10,000 copies of 512 B each",
                device="NVIDIA H200", count=10000, bytes=5120000, measured_ms=612.4,
                counterfactual_ms=0.08, counterfactual_pinned_ms=0.05, speedup=7655.0),
        finding(path, 7, "DL005", "`nn.DataParallel` <script>alert(1)</script>",
                status="inconclusive", summary="DataParallel vs DDP needs 2 GPUs; 1 visible"),
        finding(path, 8, "DL002", "model never moved", status="not-reached",
                summary="the line never ran"),
    ]


def test_page_is_self_contained_and_escaped(sample: list[Finding]) -> None:
    page = render_html(sample, title="confirm <train.py>")
    assert page.startswith("<!DOCTYPE html>")
    assert "<script" not in page  # no script at all, and user text is escaped
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "&lt;b&gt;not markup&lt;/b&gt;" in page
    assert "confirm &lt;train.py&gt;" in page
    # No network: no external URLs in attributes or CSS.
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", page)
    assert "url(" not in page and "@import" not in page


def test_sorted_by_measured_cost(sample: list[Finding]) -> None:
    page = render_html(sample)
    order = [page.index(f'id="finding-{n}"') for n in range(1, 5)]
    assert order == sorted(order)
    cards = re.findall(r'<article class="finding" id="finding-(\d)">\s*<h2>.*?<span class="code">(DL\d+)', page)
    assert [code for _, code in cards] == ["DL001", "DL004", "DL005", "DL002"]


def test_bars_compare_line_and_counterfactual(sample: list[Finding]) -> None:
    page = render_html(sample)
    widths = [float(w) for w in re.findall(r'<rect x="0" y="\d+" width="([\d.]+)" height="18" class="bar-', page)]
    # DL001 card first: 612.4 ms is the largest time on the page, its counterfactual tiny.
    assert widths[0] == pytest.approx(420.0)
    assert widths[1] == pytest.approx(2.0)
    assert "612.4 ms" in page and "0.080 ms" in page
    assert "Where the time goes" in page


def test_empty_report() -> None:
    assert "No findings." in render_html([])


def _chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome", "chrome"):
        found = shutil.which(name)
        if found:
            return found
    return None


def _headless(browser: str, profile: Path) -> list[str]:
    return [browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
            "--no-first-run", "--disable-background-networking", "--disable-component-update",
            "--disable-sync", f"--user-data-dir={profile}"]


def test_findings_visible_in_chromium(sample: list[Finding], tmp_path: Path) -> None:
    browser = _chromium()
    if browser is None:
        pytest.skip("Chromium is not installed (apt-get install chromium chromium-driver); "
                    "the browser check of the HTML report did not run")
    report = tmp_path / "report.html"
    report.write_text(render_html(sample, title="devicelint confirm: train.py"), encoding="utf-8")
    env = {**os.environ, "HOME": str(tmp_path)}
    dom = subprocess.run(
        [*_headless(browser, tmp_path / "profile"), "--dump-dom", report.as_uri()],
        capture_output=True, text=True, timeout=120, env=env,
    )
    assert dom.returncode == 0, dom.stderr[-2000:]
    for text in ("DL001", "DL004", "DL005", "DL002", "confirmed", "not-reached",
                 "10,000 copies of 512 B each", "batch.append(row.to('cuda'))"):
        assert text in dom.stdout, text
    shot = tmp_path / "shot.png"
    subprocess.run(
        [*_headless(browser, tmp_path / "profile2"), "--hide-scrollbars",
         "--window-size=1000,1400", f"--screenshot={shot}", report.as_uri()],
        capture_output=True, text=True, timeout=120, env=env,
    )
    assert shot.is_file() and shot.stat().st_size > 10_000  # a rendered page, not a blank one
    # Keep a fresh copy next to the committed screenshot when asked (docs/html-report.png).
    if os.environ.get("DEVICELINT_UPDATE_SCREENSHOT"):
        shutil.copy(shot, ROOT / "docs" / "html-report.png")


@pytest.mark.slow
def test_confirm_writes_the_html_report(tmp_path: Path) -> None:
    import torch  # noqa: F401 - confirm needs it; in the dev extra, so a broken install fails
    import sys

    script = tmp_path / "rows.py"
    script.write_text(
        "import torch\n"
        "x = torch.randn(256, 16)\n"
        "rows = [row.to('cuda') for row in x]\n",
        encoding="utf-8",
    )
    report = tmp_path / "report.html"
    result = subprocess.run(
        [sys.executable, "-m", "devicelint", "confirm", str(script), "--device", "sim",
         "--select", "DL001", "--html", str(report)],
        capture_output=True, text=True, timeout=300, cwd=tmp_path,
    )
    assert report.is_file(), result.stdout + result.stderr
    page = report.read_text(encoding="utf-8")
    assert "DL001" in page and "confirmed" in page and "bar-measured" in page
    assert "rows = [row.to(&#x27;cuda&#x27;) for row in x]" in page

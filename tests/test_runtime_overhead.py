"""bench/overhead.py and bench/event_cost.py: their fresh-process rounds (bench/child_runs.py)
and the figures overhead.py reports (issue 14 item 5: the median of rounds is the headline)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from conftest import ROOT

sys.path.insert(0, str(ROOT / "bench"))
from child_runs import paired_ratio, spread  # noqa: E402


def test_spread_headline_is_the_median_not_the_best() -> None:
    assert spread([1.3, 1.0, 1.6]) == {"median": 1.3, "best": 1.0, "worst": 1.6}


def test_paired_ratio_compares_each_round_with_its_own_baseline() -> None:
    # Round 2 ran in a slow phase for both modes: pairing cancels it.
    assert paired_ratio([1.1, 2.2, 1.1], [1.0, 2.0, 1.0]) == pytest.approx(1.1)


def test_overhead_reports_median_best_and_paired_ratios(tmp_path) -> None:
    out = tmp_path / "overhead.json"
    env = dict(os.environ, DEVICE="cpu", MODES="finder", STEPS="24", ROUNDS="2", WIDTH="8",
               BATCH="4", OMP_NUM_THREADS="1")
    proc = subprocess.run([sys.executable, "bench/overhead.py", "--json", str(out)], cwd=ROOT,
                          capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    data = json.loads(out.read_text())
    assert (data["width"], data["batch"], data["rounds"]) == (8, 4, 2)
    assert set(data["median_ms"]) == {"plain", "finder"}
    assert all(len(values) == 2 for values in data["median_ms"].values())
    finder, plain = data["summary"]["finder"], data["summary"]["plain"]
    assert finder["median"] == pytest.approx(sum(data["median_ms"]["finder"]) / 2)
    assert finder["ratio"] == pytest.approx(finder["median"] / plain["median"])
    assert finder["best_ratio"] == pytest.approx(finder["best"] / plain["best"])
    assert "paired_ratio" in finder
    assert "finder      median step" in proc.stdout and "best" in proc.stdout


def test_overhead_rejects_an_unknown_step_size() -> None:
    proc = subprocess.run([sys.executable, "bench/overhead.py"], cwd=ROOT, capture_output=True,
                          text=True, env=dict(os.environ, STEP="huge"), timeout=120)
    assert proc.returncode != 0 and "STEP=huge" in proc.stderr

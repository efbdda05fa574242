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
               BATCH="4", OMP_NUM_THREADS="1", WARMUP_S="0.5")
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
    # untimed steps first: 20 at least, and for WARMUP_S seconds (a tiny step takes ~1 ms)
    assert data["warmup_s"] == 0.5
    assert all(n > 20 for runs in data["warmup_steps"].values() for n in runs)
    assert "finder      median step" in proc.stdout and "best" in proc.stdout


def test_overhead_rejects_an_unknown_step_size() -> None:
    proc = subprocess.run([sys.executable, "bench/overhead.py"], cwd=ROOT, capture_output=True,
                          text=True, env=dict(os.environ, STEP="huge"), timeout=120)
    assert proc.returncode != 0 and "STEP=huge" in proc.stderr


def test_finder_modes_wrap_what_confirm_wraps() -> None:
    """The finder modes time what `devicelint confirm` installs for bench/overhead.py: the
    finder's rules' wrappers and those of DL004 (the flagged `.item()`), nothing more."""
    import overhead

    from devicelint.rule import all_rules
    from devicelint.runtime.plan import Plan

    plan = Plan()
    plan.find_under([str(ROOT / "bench" / "overhead.py")])
    plan.add_rule(all_rules()["DL004"])
    for mode in overhead.FINDER_MODES:
        assert {name.lower() for name in overhead.watches_for(mode)} == set(plan.watch)


def test_a_real_device_tracker_answers_is_cuda_from_the_tensor() -> None:
    """Every .item()/bool()/int() of the process asks is_cuda first (torch's own calls on CPU
    tensors too): on a real device it reads the tensor's flag, not str(tensor.device)."""
    import torch

    from devicelint.runtime.tracker import Tracker

    asked = []

    def device_of(tensor):
        asked.append(tensor)
        return str(tensor.device)

    tracker = Tracker({}, device_of)
    assert tracker.is_cuda(torch.ones(2)) is False
    assert tracker.is_cuda(torch.ones(2, device="meta")) is True  # not the host, as before
    assert tracker.is_cuda(3) is False
    assert asked == []

"""Fresh-process rounds for the runtime benchmarks (bench/overhead.py, bench/event_cost.py).

A round runs the benchmark script once per mode, each in a fresh process (`python SCRIPT
MODE`), the modes interleaved so that a drift of the machine (GPU clocks, other load) falls on
every mode alike. The child prints one JSON object as the last line of its output.
"""
from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys


def child_env() -> dict:
    """The environment of a child: the current directory (the repository root) importable."""
    path = os.pathsep.join(filter(None, [os.getcwd(), os.environ.get("PYTHONPATH")]))
    return dict(os.environ, PYTHONPATH=path)


def run_rounds(script: str, modes, rounds: int) -> dict:
    """mode -> [what the child printed (parsed JSON), one per round], rounds interleaved.
    A child that fails stops the benchmark with its error output."""
    results: dict = {mode: [] for mode in modes}
    env = child_env()
    for _ in range(rounds):
        for mode in modes:
            out = subprocess.run([sys.executable, script, mode], capture_output=True,
                                 text=True, env=env)
            if out.returncode:
                sys.exit(f"{os.path.basename(script)} {mode} failed:\n{out.stderr[-2000:]}")
            results[mode].append(json.loads(out.stdout.strip().splitlines()[-1]))
    return results


def spread(values) -> dict:
    """The median of the rounds (the headline: one slow or fast process does not decide it),
    the best (fastest) and the worst."""
    return {"median": statistics.median(values), "best": min(values), "worst": max(values)}


def paired_ratio(values, baseline) -> float:
    """The median over rounds of value / baseline of the same round (each pair ran minutes
    apart at most, so a slow phase of the machine cancels out)."""
    return statistics.median(v / b for v, b in zip(values, baseline))

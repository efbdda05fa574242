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


def device_functions(device: str):
    """(device_of, sim) for a child: the simulated device installed when `device` is "sim"."""
    if device == "sim":
        from devicelint.runtime.sim import Simulation

        simulation = Simulation()
        simulation.install()
        return simulation.device_of, simulation.sim
    return (lambda tensor: str(tensor.device)), None


def flagged_line(path: str) -> int:
    """The line of `path` marked `# the flagged line` (the one a static finding names)."""
    with open(path, encoding="utf-8") as handle:
        return next(i for i, text in enumerate(handle.read().splitlines(), 1) if text.rstrip().endswith("# the flagged line"))


def instrument(path: str, line: int, device: tuple, with_finder: bool, watches, adjust=None):
    """Install what `devicelint confirm` installs in its child: a tracker watching `line` of
    `path` (and, `with_finder`, the finder recording every event of the file), hooked on
    `watches`; LINE_EVENTS=0 leaves out the line/raise monitoring. `adjust(tracker)` runs
    before the hooks are installed."""
    from devicelint.runtime import hooks
    from devicelint.runtime.finder import Finder
    from devicelint.runtime.tracker import Tracker

    finder = None
    if with_finder:
        finder = Finder([path])
        finder.install_module_sites()
    device_of, sim = device
    tracker = Tracker({path: {line: line}}, device_of, sim, finder=finder)
    if adjust is not None:
        adjust(tracker)
    if os.environ.get("LINE_EVENTS") == "0":
        tracker.start = lambda: None
    hooks.install(tracker, set(watches))
    return tracker

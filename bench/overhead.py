"""Overhead of `devicelint confirm` instrumentation on a GPU training loop.

Runs the same loop in fresh processes: plain, under the tracker with the rules' wrappers
installed and one flagged line (the per-step .item()), the same with the tracker watching a
line that never runs (pure wrapper cost), and with the finder on (every copy and sync of this
file recorded, as `devicelint confirm` runs now), with and without the flagged line. Prints the median step time and
the ratio. Usage (on a GPU machine): python bench/overhead.py [--json OUT.json]

Without a GPU: `DEVICE=sim python bench/overhead.py` runs the same loop on the simulated
device (devicelint/runtime/sim.py, installed in every mode, "plain" included) and times each
step by the process's CPU time (`time.process_time`; wall time means nothing on a loaded
machine). The simulated device's own dispatch modes make every step far slower than a GPU
step, so its ratios are not a GPU's: read the difference in microseconds per step between
modes, which is the instrumentation's own host cost (the same Python code runs on a GPU).
ROUNDS (default 3) fresh processes per mode, interleaved; the best of them is reported.
LINE_EVENTS=0 leaves out the tracker's line and raise monitoring (Tracker.start): on Python
3.12+ (sys.monitoring) each line location costs one event and is then disabled, but Python
3.11 has only sys.settrace, which calls back on every function call of the process; there,
LINE_EVENTS=0 shows what the wrappers and the finder cost, as on 3.12 after warm-up.
"""
import json
import os
import statistics
import subprocess
import sys
import time

STEPS = int(os.environ.get("STEPS", "300"))
ROUNDS = int(os.environ.get("ROUNDS", "3"))
DEVICE = os.environ.get("DEVICE", "cuda")  # "sim": the simulated device; "cpu": a smoke test
# On the simulated device the host's CPU time is what the instrumentation costs, and a narrow
# model keeps the step's own CPU work small (a GPU step of the default width is host-bound).
step_clock = time.process_time if DEVICE == "sim" else time.perf_counter
WIDTH = int(os.environ.get("WIDTH", "32" if DEVICE == "sim" else "512"))
# Modes that install one group of wrappers each (none: line/raise monitoring only).
GROUPS = {"monitor-only": set(), "moves-only": {"MOVES"}, "syncs-only": {"SYNCS"},
          "view-only": {"VIEWS"}}
EVERY_COPY_AND_SYNC = {"MOVES", "FACTORIES", "SYNCS", "VIEWS"}
# The finder (devicelint/runtime/finder.py): "finder" with the .item() line flagged too,
# "finder-only" with no flagged line; both with the wrappers of the finder's rules.
FINDER_MODES = ("finder", "finder-only")
FINDER_WATCHES = {"MOVES", "FACTORIES", "SYNCS", "EMPTY_CACHE"}


def loop(flagged_line_holder):
    import torch
    import torch.nn as nn

    device = torch.device("cuda" if DEVICE == "sim" else DEVICE)
    if DEVICE == "sim":
        torch.set_num_threads(1)  # no spinning OpenMP threads in the CPU time
    model = nn.Sequential(nn.Linear(WIDTH, 2 * WIDTH), nn.ReLU(),
                          nn.Linear(2 * WIDTH, WIDTH)).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    data = torch.randn(64, WIDTH, device=device)
    times = []
    for step in range(STEPS):
        start = step_clock()
        x = data.view(64, WIDTH).to(device)
        loss = model(x).float().pow(2).mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        value = loss.item()  # the flagged line
        times.append(step_clock() - start)
    return statistics.median(times[20:]), value


def child(mode):
    import torch  # noqa: F401 - imported before the tracker, as in the real child

    path = os.path.realpath(__file__)
    device_of = lambda t: str(t.device)  # noqa: E731
    sim = None
    if DEVICE == "sim":
        from devicelint.runtime.sim import Simulation

        simulation = Simulation()
        simulation.install()
        device_of, sim = simulation.device_of, simulation.sim
    if mode != "plain":
        from devicelint.runtime import hooks
        from devicelint.runtime.finder import Finder
        from devicelint.runtime.tracker import Tracker
        from devicelint.runtime_spec import Watch

        source = open(path).read().splitlines()
        item_line = next(i for i, l in enumerate(source, 1) if "# the flagged line" in l)
        line = item_line if mode in ("flagged", "finder") else 10**6
        finder = None
        if mode in FINDER_MODES:
            # as `devicelint confirm` runs it: every event of this file recorded and judged
            finder = Finder([path])
            finder.install_module_sites()
        tracker = Tracker({path: {line: line}}, device_of, sim, finder=finder)
        watches = EVERY_COPY_AND_SYNC | FINDER_WATCHES if finder else GROUPS.get(
            mode, EVERY_COPY_AND_SYNC)
        if os.environ.get("LINE_EVENTS") == "0":
            tracker.start = lambda: None
        hooks.install(tracker, {Watch[name] for name in watches})
    median, _ = loop(None)
    print(json.dumps({"mode": mode, "median_ms": median * 1000}))


def main():
    results = {}
    modes = ["plain", "flagged", "unreached", *FINDER_MODES, *GROUPS]
    if os.environ.get("MODES"):  # e.g. MODES=plain,flagged,finder
        modes = ["plain", *(m for m in os.environ["MODES"].split(",") if m != "plain")]
    for mode in modes * ROUNDS:
        path = os.pathsep.join(filter(None, [os.getcwd(), os.environ.get("PYTHONPATH")]))
        out = subprocess.run([sys.executable, __file__, mode], capture_output=True, text=True,
                             env=dict(os.environ, PYTHONPATH=path))
        data = json.loads(out.stdout.strip().splitlines()[-1])
        results.setdefault(mode, []).append(data["median_ms"])
    plain = min(results["plain"])
    for mode, values in results.items():
        best = min(values)
        print(f"{mode:11s} median step {best:.4f} ms  ratio {best / plain:.3f}x  "
              f"+{(best - plain) * 1000:.1f} us")
    if len(sys.argv) > 2 and sys.argv[1] == "--json":
        with open(sys.argv[2], "w") as handle:
            json.dump({"steps": STEPS, "device": DEVICE, "median_ms": results}, handle,
                      indent=1)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] != "--json":
        child(sys.argv[1])
    else:
        main()

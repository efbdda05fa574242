"""Overhead of `devicelint confirm` instrumentation on a GPU training loop.

Runs the same loop in fresh processes: plain, under the tracker with the rules' wrappers
installed and one flagged line (the per-step .item()), the same with the tracker watching a
line that never runs (pure wrapper cost), and with the finder on (every copy and sync of this
file recorded, as `devicelint confirm` runs now), with and without the flagged line. Prints the median step time and
the ratio. Usage (on a GPU machine): python bench/overhead.py [--json OUT.json]
"""
import json
import os
import statistics
import subprocess
import sys
import time

STEPS = int(os.environ.get("STEPS", "300"))
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

    device = torch.device(os.environ.get("DEVICE", "cuda"))  # DEVICE=cpu: a smoke test
    model = nn.Sequential(nn.Linear(512, 1024), nn.ReLU(), nn.Linear(1024, 512)).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    data = torch.randn(64, 512, device=device)
    times = []
    for step in range(STEPS):
        start = time.perf_counter()
        x = data.view(64, 512).to(device)
        loss = model(x).float().pow(2).mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        value = loss.item()  # the flagged line
        times.append(time.perf_counter() - start)
    return statistics.median(times[20:]), value


def child(mode):
    import torch  # noqa: F401 - imported before the tracker, as in the real child

    path = os.path.realpath(__file__)
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
        tracker = Tracker({path: {line: line}}, lambda t: str(t.device), finder=finder)
        watches = EVERY_COPY_AND_SYNC | FINDER_WATCHES if finder else GROUPS.get(
            mode, EVERY_COPY_AND_SYNC)
        hooks.install(tracker, {Watch[name] for name in watches})
    median, _ = loop(None)
    print(json.dumps({"mode": mode, "median_ms": median * 1000}))


def main():
    results = {}
    modes = ["plain", "flagged", "unreached", *FINDER_MODES, *GROUPS]
    for mode in modes + modes:
        path = os.pathsep.join(filter(None, [os.getcwd(), os.environ.get("PYTHONPATH")]))
        out = subprocess.run([sys.executable, __file__, mode], capture_output=True, text=True,
                             env=dict(os.environ, PYTHONPATH=path))
        data = json.loads(out.stdout.strip().splitlines()[-1])
        results.setdefault(mode, []).append(data["median_ms"])
    plain = min(results["plain"])
    for mode, values in results.items():
        best = min(values)
        print(f"{mode:11s} median step {best:.4f} ms  ratio {best / plain:.3f}x")
    if len(sys.argv) > 2 and sys.argv[1] == "--json":
        with open(sys.argv[2], "w") as handle:
            json.dump({"steps": STEPS, "median_ms": results}, handle, indent=1)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] != "--json":
        child(sys.argv[1])
    else:
        main()

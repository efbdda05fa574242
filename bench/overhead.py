"""Overhead of `devicelint confirm` instrumentation on a GPU training loop.

Runs the same loop three ways in fresh processes: plain, under the tracker with the rules'
wrappers installed and one flagged line (the per-step .item()), and the same with the
tracker watching a line that never runs (pure wrapper cost). Prints the median step time and
the ratio. Usage (on a GPU machine): python bench/overhead.py
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


def loop(flagged_line_holder):
    import torch
    import torch.nn as nn

    device = torch.device("cuda")
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
        from devicelint.runtime.tracker import Tracker
        from devicelint.runtime_spec import Watch

        source = open(path).read().splitlines()
        item_line = next(i for i, l in enumerate(source, 1) if "# the flagged line" in l)
        line = item_line if mode == "flagged" else 10**6
        tracker = Tracker({path: {line: line}}, lambda t: str(t.device))
        hooks.install(tracker, {Watch[name] for name in GROUPS.get(mode, EVERY_COPY_AND_SYNC)})
    median, _ = loop(None)
    print(json.dumps({"mode": mode, "median_ms": median * 1000}))


def main():
    results = {}
    modes = ["plain", "flagged", "unreached", *GROUPS]
    for mode in modes + modes:
        out = subprocess.run([sys.executable, __file__, mode], capture_output=True, text=True,
                             env=dict(os.environ, PYTHONPATH=os.getcwd()))
        data = json.loads(out.stdout.strip().splitlines()[-1])
        results.setdefault(mode, []).append(data["median_ms"])
    plain = min(results["plain"])
    for mode, values in results.items():
        best = min(values)
        print(f"{mode:10s} median step {best:.4f} ms  ratio {best / plain:.3f}x")


if __name__ == "__main__":
    if len(sys.argv) > 1:
        child(sys.argv[1])
    else:
        main()

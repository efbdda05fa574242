"""Overhead of `devicelint confirm` instrumentation on a GPU training loop.

Runs the same loop in fresh processes: plain, under the tracker with the rules' wrappers
installed and one flagged line (the per-step .item()), the same with the tracker watching a
line that never runs (pure wrapper cost), and with the finder on (every copy and sync of this
file recorded, as `devicelint confirm` runs now), with and without the flagged line.

A step is one training step of a two-layer MLP (Linear WIDTH -> 2*WIDTH, ReLU, Linear back;
AdamW; BATCH rows already on the device; the loss read with `.item()` at the end, so the
step's time includes its GPU work). STEP picks its size:
- `STEP=small` (default): WIDTH=512, BATCH=64, about 1 ms on an H100: host-bound, every
  microsecond the instrumentation adds on the host shows; the worst case, not a training step;
- `STEP=train`: WIDTH=4096, BATCH=1024, 0.34 TFLOP of fp32 matmuls per step: GPU-bound,
  as a real training step is (its forward and backward passes keep the GPU busy for
  milliseconds while the host queues the next kernels).
WIDTH and BATCH override either. Each process first runs untimed steps (20, and for WARMUP_S
seconds, default 1 on a GPU), then times STEPS steps.

ROUNDS (default 5) fresh processes per mode, interleaved. Per mode it prints the median step
time of each process summarised over rounds: the median (the headline figure; the ratio is
median over plain's median), the best and the worst, and the paired ratio (the median over
rounds of mode / plain of the same round). Usage (on a GPU machine):
    python bench/overhead.py [--json OUT.json]          MODES=plain,finder limits the modes

Without a GPU: `DEVICE=sim python bench/overhead.py` runs the same loop on the simulated
device (devicelint/runtime/sim.py, installed in every mode, "plain" included) and times each
step by the process's CPU time (`time.process_time`; wall time means nothing on a loaded
machine). The simulated device's own dispatch modes make every step far slower than a GPU
step, so its ratios are not a GPU's: read the difference in microseconds per step between
modes, which is the instrumentation's own host cost (the same Python code runs on a GPU).
`DEVICE=cpu` is a smoke test of the script.
LINE_EVENTS=0 leaves out the tracker's line and raise monitoring (Tracker.start): on Python
3.12+ (sys.monitoring) each line location costs one event and is then disabled, but Python
3.11 has only sys.settrace, which calls back on every function call of the process; there,
LINE_EVENTS=0 shows what the wrappers and the finder cost, as on 3.12 after warm-up.
"""
import json
import os
import statistics
import sys
import time

from child_runs import device_functions, flagged_line, instrument, paired_ratio, run_rounds, spread

STEPS = int(os.environ.get("STEPS", "300"))
ROUNDS = int(os.environ.get("ROUNDS", "5"))
DEVICE = os.environ.get("DEVICE", "cuda")  # "sim": the simulated device; "cpu": a smoke test
STEP = os.environ.get("STEP", "small")
SIZES = {"small": (512, 64), "train": (4096, 1024)}  # (WIDTH, BATCH)
if STEP not in SIZES:
    sys.exit(f"STEP={STEP}: use one of {', '.join(SIZES)}")
# On the simulated device the host's CPU time is what the instrumentation costs, and a narrow
# model keeps the step's own CPU work small (a GPU step of the default width is host-bound).
step_clock = time.process_time if DEVICE == "sim" else time.perf_counter
WIDTH = int(os.environ.get("WIDTH", "32" if DEVICE == "sim" else SIZES[STEP][0]))
BATCH = int(os.environ.get("BATCH", SIZES[STEP][1]))
# Untimed steps first: at least this many, and for at least WARMUP_S seconds on a GPU, so that
# its clocks and the allocator's caches settle before the timing starts.
WARMUP_STEPS = 20
WARMUP_S = float(os.environ.get("WARMUP_S", "1" if DEVICE == "cuda" else "0"))
# Modes that install one group of wrappers each (none: line/raise monitoring only).
GROUPS = {"monitor-only": set(), "moves-only": {"MOVES"}, "syncs-only": {"SYNCS"},
          "view-only": {"VIEWS"}}
EVERY_COPY_AND_SYNC = {"MOVES", "FACTORIES", "SYNCS", "VIEWS"}
# The finder (devicelint/runtime/finder.py): "finder" with the .item() line flagged too,
# "finder-only" with no flagged line; both with the wrappers `devicelint confirm` installs for
# this file: the finder's rules' and, for the flagged line, DL004's (tests/test_runtime_overhead.py
# checks that against the runtime plan).
FINDER_MODES = ("finder", "finder-only")
FINDER_WATCHES = {"MOVES", "FACTORIES", "SYNCS", "EMPTY_CACHE"}


def watches_for(mode: str) -> set:
    """The names of the Watch groups a mode installs."""
    if mode in FINDER_MODES:
        return FINDER_WATCHES
    return GROUPS.get(mode, EVERY_COPY_AND_SYNC)


def loop(flagged_line_holder):
    import torch
    import torch.nn as nn

    device = torch.device("cuda" if DEVICE == "sim" else DEVICE)
    if DEVICE == "sim":
        torch.set_num_threads(1)  # no spinning OpenMP threads in the CPU time
    model = nn.Sequential(nn.Linear(WIDTH, 2 * WIDTH), nn.ReLU(),
                          nn.Linear(2 * WIDTH, WIDTH)).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    data = torch.randn(BATCH, WIDTH, device=device)
    times = []
    warmup_steps, began = 0, time.perf_counter()
    while len(times) < STEPS:
        start = step_clock()
        x = data.view(BATCH, WIDTH).to(device)
        loss = model(x).float().pow(2).mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        loss.item()  # the flagged line
        if warmup_steps >= WARMUP_STEPS and time.perf_counter() - began >= WARMUP_S:
            times.append(step_clock() - start)
        else:
            warmup_steps += 1
    return statistics.median(times), warmup_steps


def child(mode):
    import torch  # noqa: F401 - imported before the tracker, as in the real child

    path = os.path.realpath(__file__)
    device = device_functions(DEVICE)
    if mode != "plain":
        from devicelint.runtime_spec import Watch

        line = flagged_line(path) if mode in ("flagged", "finder") else 10**6
        # finder modes: as `devicelint confirm` runs it, every event of this file recorded and judged
        instrument(path, line, device, mode in FINDER_MODES, {Watch[name] for name in watches_for(mode)})
    median, warmup_steps = loop(None)
    print(json.dumps({"mode": mode, "median_ms": median * 1000, "warmup_steps": warmup_steps}))


def main():
    modes = ["plain", "flagged", "unreached", *FINDER_MODES, *GROUPS]
    if os.environ.get("MODES"):  # e.g. MODES=plain,flagged,finder
        modes = ["plain", *(m for m in os.environ["MODES"].split(",") if m != "plain")]
    runs = run_rounds(__file__, modes, ROUNDS)
    results = {mode: [run["median_ms"] for run in values] for mode, values in runs.items()}
    plain = spread(results["plain"])
    print(f"{STEPS} steps, WIDTH={WIDTH}, BATCH={BATCH}, device {DEVICE}; per mode the median "
          f"step of each of {ROUNDS} processes: median of them [best, worst], ratios to plain")
    summary = {}
    for mode, values in results.items():
        own = spread(values)
        summary[mode] = dict(own, ratio=own["median"] / plain["median"],
                             best_ratio=own["best"] / plain["best"],
                             paired_ratio=paired_ratio(values, results["plain"]))
        row = summary[mode]
        print(f"{mode:11s} median step {own['median']:.4f} ms  ratio {row['ratio']:.3f}x  "
              f"{(own['median'] - plain['median']) * 1000:+.1f} us  [best {own['best']:.4f} "
              f"ms {row['best_ratio']:.3f}x, worst {own['worst']:.4f} ms]  paired "
              f"{row['paired_ratio']:.3f}x")
    if len(sys.argv) > 2 and sys.argv[1] == "--json":
        with open(sys.argv[2], "w") as handle:
            json.dump({"steps": STEPS, "step": STEP, "width": WIDTH, "batch": BATCH,
                       "device": DEVICE, "rounds": ROUNDS, "warmup_s": WARMUP_S,
                       "warmup_steps": {mode: [run["warmup_steps"] for run in values]
                                        for mode, values in runs.items()},
                       "median_ms": results, "summary": summary}, handle, indent=1)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] != "--json":
        child(sys.argv[1])
    else:
        main()

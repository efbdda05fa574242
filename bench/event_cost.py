"""Host cost of one instrumented call under `devicelint confirm`, per kind of call.

bench/overhead.py times whole training steps, whose run-to-run noise (±15% of a ~1 ms step
on a GPU, more on a loaded CPU) hides a few microseconds per call. This times the wrapped
calls themselves, many thousands of times, in fresh processes:

- plain: no instrumentation;
- tracker: the wrappers of every copy and sync, one flagged line (the `.item()` below);
- finder: the same plus the finder (every call of this file recorded), as `confirm` runs.

Calls: `.to` of a tensor already on the device (a no-op move), `.item()` on the flagged line,
`.item()` in a helper called from an unflagged line, `torch.tensor(1.0, device="cpu")` (what
torch's optimizers build every step), and `.view`. Each figure is CPU time per call
(`time.process_time`) in ROUNDS (default 3) processes per mode, interleaved
(bench/child_runs.py): the median of them, and the best in brackets.

Usage: python bench/event_cost.py            (on a GPU)
       DEVICE=sim: the simulated device; its own dispatch costs more than the wrappers (and
       passes `.item()` through its wrapper twice), so its figures hide theirs;
       DEVICE=host: no device at all: host tensors counted as device tensors (the tracker's
       device_of says cuda:0), so every call takes the wrappers' path of a GPU run and the
       plain call costs what a CPU op costs: the wrappers' own host cost, without a GPU.
       LINE_EVENTS=0: leave out the line/raise monitoring (see bench/overhead.py).
"""
import json
import os
import sys
import time

from child_runs import device_functions, flagged_line, instrument, run_rounds, spread

CALLS = int(os.environ.get("CALLS", "20000"))
ROUNDS = int(os.environ.get("ROUNDS", "3"))
DEVICE = os.environ.get("DEVICE", "cuda")
MODES = ("plain", "tracker", "finder")


def helper_read(t):
    return t.item()


def measure(torch) -> dict:
    device = torch.device("cpu" if DEVICE == "host" else "cuda")
    t = torch.ones((), device=device)
    base = torch.ones(4, device=device)
    calls = {
        "to (no-op)": lambda: t.to(device),
        "item, flagged": lambda: t.item(),  # the flagged line
        "item in a helper": lambda: helper_read(t),
        "tensor(cpu)": lambda: torch.tensor(1.0, device="cpu"),
        "view": lambda: base.view(2, 2),
    }
    out = {}
    for name, call in calls.items():
        for _ in range(200):
            call()
        start = time.process_time()
        for _ in range(CALLS):
            call()
        out[name] = (time.process_time() - start) / CALLS * 1e6
    return out


def child(mode: str) -> None:
    import torch

    torch.set_num_threads(1)
    path = os.path.realpath(__file__)
    device = device_functions(DEVICE)
    if mode != "plain":
        from devicelint.runtime_spec import Watch

        def host_as_device(tracker) -> None:
            if DEVICE == "host":  # host tensors taken for device tensors: the GPU run's path
                tracker.device_of = lambda tensor: "cuda:0"
                tracker.is_cuda = lambda tensor: isinstance(tensor, torch.Tensor)

        instrument(path, flagged_line(path), device, mode == "finder",
                   {Watch.MOVES, Watch.FACTORIES, Watch.SYNCS, Watch.VIEWS, Watch.EMPTY_CACHE},
                   adjust=host_as_device)
    print(json.dumps(measure(torch)))


def main() -> None:
    runs = run_rounds(__file__, MODES, ROUNDS)
    names = list(runs["plain"][0])
    print(f"{'us per call, ' + str(ROUNDS) + ' rounds':26s}"
          + "".join(f"{mode + ' [best]':>18s}" for mode in MODES))
    for name in names:
        cells = [spread([run[name] for run in runs[mode]]) for mode in MODES]
        print(f"{name:26s}" + "".join(f"{c['median']:10.2f} [{c['best']:5.2f}]" for c in cells))


if __name__ == "__main__":
    if len(sys.argv) > 1:
        child(sys.argv[1])
    else:
        main()

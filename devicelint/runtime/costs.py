"""The cost table behind the simulated device's estimates, and the code that measures it.

`python -m devicelint.runtime.costs --write devicelint/runtime/costs.json` on a GPU machine
measures the table; the simulated device reads it and labels every figure "estimated".
A copy is modelled as latency + bytes / bandwidth, fitted from a small and a large copy.
"""

from __future__ import annotations

import json
import os
import sys
import time

TABLE_PATH = os.path.join(os.path.dirname(__file__), "costs.json")

# Used only if costs.json is missing; the figures are the design note's H200 measurements.
FALLBACK = {
    "device": "NVIDIA H200 (design note figures, not re-measured)",
    "torch": "2.11.0+cu130",
    "h2d_pageable": {"latency_us": 14.8, "gbps": 15.5},
    "h2d_pinned": {"latency_us": 10.4, "gbps": 50.0},
    "d2h": {"latency_us": 17.0, "gbps": 15.5},
    "item_us": 9.7,
    "synchronize_us": 6.1,
    "empty_cache_us": 50.0,
    "fill_gbps": 3000.0,
    "launch_us": 5.0,
}


def load_table() -> dict:
    try:
        with open(TABLE_PATH, encoding="utf-8") as handle:
            return json.load(handle)
    except (OSError, ValueError):
        return FALLBACK


def copy_seconds(table: dict, kind: str, count: int, nbytes: int) -> float:
    """Estimated time of `count` copies moving `nbytes` in total."""
    entry = table[kind]
    return count * entry["latency_us"] * 1e-6 + nbytes / (entry["gbps"] * 1e9)


# -- measuring on a GPU -----------------------------------------------------------------

def _timed(fn, repeat: int) -> float:
    """Mean seconds per call of fn (CUDA events after warm-up)."""
    import torch

    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(repeat):
        fn()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) / 1000.0 / repeat


def _host_timed(fn, repeat: int) -> float:
    """Mean wall seconds per call (for calls that block the host, e.g. .item())."""
    import torch

    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(repeat):
        fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - start) / repeat


def _fit(small_bytes, small_s, large_bytes, large_s) -> dict:
    gbps = (large_bytes - small_bytes) / max(large_s - small_s, 1e-12) / 1e9
    latency = max(small_s - small_bytes / (gbps * 1e9), 0.0)
    return {"latency_us": round(latency * 1e6, 2), "gbps": round(gbps, 2)}


def measure() -> dict:
    import torch

    dev = torch.device("cuda")
    small, large = 512, 64 * 2**20
    host_small = torch.randn(small // 4)
    host_large = torch.randn(large // 4)
    pin_small, pin_large = host_small.pin_memory(), host_large.pin_memory()
    dev_small, dev_large = host_small.to(dev), host_large.to(dev)
    table = {
        "device": torch.cuda.get_device_name(),
        "torch": torch.__version__,
        "measured": time.strftime("%Y-%m-%d"),
        "command": "python -m devicelint.runtime.costs --write devicelint/runtime/costs.json",
        "h2d_pageable": _fit(
            small, _host_timed(lambda: host_small.to(dev), 2000),
            large, _timed(lambda: host_large.to(dev), 10)),
        "h2d_pinned": _fit(
            small, _host_timed(lambda: pin_small.to(dev, non_blocking=True), 2000),
            large, _timed(lambda: pin_large.to(dev, non_blocking=True), 10)),
        "d2h": _fit(
            small, _host_timed(lambda: dev_small.cpu(), 2000),
            large, _host_timed(lambda: dev_large.cpu(), 10)),
    }
    scalar = torch.ones((), device=dev)
    table["item_us"] = round(_host_timed(lambda: scalar.item(), 5000) * 1e6, 2)
    table["synchronize_us"] = round(_host_timed(torch.cuda.synchronize, 5000) * 1e6, 2)
    table["launch_us"] = round(_host_timed(lambda: scalar.add_(1), 5000) * 1e6, 2)

    block = torch.empty(256 * 2**20, dtype=torch.uint8, device=dev)

    def churn():
        del_me = torch.empty(256 * 2**20, dtype=torch.uint8, device=dev)
        del del_me
        torch.cuda.empty_cache()

    del block
    table["empty_cache_us"] = round(_host_timed(churn, 50) * 1e6, 2)
    fill = torch.empty(large // 4, device=dev)
    table["fill_gbps"] = round(large / _timed(lambda: fill.zero_(), 50) / 1e9, 1)
    return table


def main(argv: list[str]) -> int:
    table = measure()
    text = json.dumps(table, indent=2) + "\n"
    if len(argv) >= 2 and argv[0] == "--write":
        with open(argv[1], "w", encoding="utf-8") as handle:
            handle.write(text)
    print(text, end="")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""Verdicts: turn what the tracker saw at a flagged line into a confirmation.

Each rule's probe lives in its own module (`runtime = RuntimeSpec(probe=...)`, see
devicelint/runtime_spec.py); this module gives probes their context (the device, the cost
table, GPU timers) and asks them. A verdict is `confirmed` (the pitfall happened, with
evidence), `refuted` (the line ran and the pitfall did not happen), `not-reached`, or
`inconclusive` (the line ran but this device cannot decide, e.g. DataParallel on one GPU, or
the rule has no runtime probe). On the real GPU, times are measured and counterfactuals timed
on the same device; on the simulated device they are estimated from the cost table.
"""

from __future__ import annotations

from typing import Any, Optional

import torch

from devicelint.runtime import costs
from devicelint.runtime_spec import CopyStats, LineRecord, ViewSample


class ProbeRun:
    """What a probe may use (devicelint.runtime_spec.ProbeRun): the device kind, the cost
    table, GPU timers, and the other records of the file being judged."""

    def __init__(self, device: str, tracker) -> None:
        self.device = device
        self.tracker = tracker
        self.path = ""  # the flagged line being judged
        self.site_line = 0
        self.table = costs.load_table()
        self.estimated = device == "sim"
        if device == "cuda":
            self.device_name = torch.cuda.get_device_name()
        else:
            self.device_name = (
                f"sim (costs estimated from {self.table['device']}, torch {self.table['torch']})"
            )

    def base(self, status: str, summary: str, **figures) -> dict:
        result = {"status": status, "device": self.device_name, "summary": summary}
        if self.estimated and any(k.endswith("_ms") for k in figures):
            result["estimated"] = True
        result.update({k: v for k, v in figures.items() if v is not None})
        return result

    def line(self) -> int:
        return self.site_line

    def errors_elsewhere(self) -> list[tuple[int, str]]:
        """(line, message) of the errors raised in this file on lines that are not flagged."""
        return self.tracker.file_errors.get(self.path, [])

    def records_in_file(self) -> list[tuple[int, LineRecord]]:
        return sorted((line, rec) for (path, line), rec in self.tracker.records.items()
                      if path == self.path)

    def copy_ms(self, copies: CopyStats, kind: str) -> float:
        """ms spent in the copies: measured on a GPU, estimated on the simulated device."""
        if self.estimated:
            if kind == "h2d":
                kind = "h2d_pinned" if copies.pinned == copies.count else "h2d_pageable"
            return costs.copy_seconds(self.table, kind, copies.count, copies.bytes) * 1000
        return copies.seconds * 1000

    def event_ms(self, rec: LineRecord) -> float:
        """ms the line's device events took: its copies, host syncs (those that are not a
        copy's), empty_cache calls and the GPU lag after its timestamps; measured on a GPU,
        estimated on the simulated device."""
        total = sum(self.copy_ms(copies, kind) for kind, copies in rec.copies.items())
        reads = sum(n for kind, n in rec.syncs.kinds.items() if kind not in ("cpu", "to"))
        if self.estimated:
            total += reads * self.table["item_us"] / 1000
            total += rec.empty_cache.count * self.table["empty_cache_us"] / 1000
        else:
            copy_syncs = rec.syncs.count - reads
            per_sync = rec.syncs.seconds / rec.syncs.count if rec.syncs.count else 0.0
            total += max(rec.syncs.seconds - copy_syncs * per_sync, 0.0) * 1000
            total += rec.empty_cache.seconds * 1000
        total += rec.stamps.lag_seconds * 1000
        return total

    def latent_view_failure(self, sample: ViewSample) -> Optional[dict]:
        return latent_view_failure(sample.size, sample.stride, sample.target)

    def gpu_count(self) -> int:
        return torch.cuda.device_count() if self.device == "cuda" else 0

    def data_parallel_batches(self) -> list[tuple[Any, Any]]:
        """(DataParallel module, first batch) of each one built at the line and called."""
        entries = self.tracker.captured_dp.get((self.path, self.site_line), [])
        return [(e.module, e.batch) for e in entries if e.batch is not None]

    def compare_data_parallel(self, module, batch, gpus: int) -> dict:
        """Samples/s of the wrapped module under DataParallel and under DDP (runtime/ddp.py)."""
        from devicelint.runtime import ddp

        return ddp.compare(module.module, batch, gpus)

    # -- GPU timers for counterfactuals ---------------------------------------------------
    def time_copy(self, nbytes: int, pinned: bool) -> float:
        """ms of one host->device copy of nbytes (median of 5 after warm-up)."""
        if self.estimated:
            kind = "h2d_pinned" if pinned else "h2d_pageable"
            return costs.copy_seconds(self.table, kind, 1, nbytes) * 1000
        host = torch.empty(max(nbytes, 1), dtype=torch.uint8)
        if pinned:
            host = host.pin_memory()
        return _median_ms(lambda: host.to("cuda", non_blocking=pinned))

    def time_fill(self, nbytes: int) -> float:
        if self.estimated:
            return (self.table["launch_us"] * 1e-6 + nbytes / (self.table["fill_gbps"] * 1e9)) * 1000
        return _median_ms(lambda: torch.zeros(max(nbytes, 1), dtype=torch.uint8, device="cuda"))


def _median_ms(fn, repeat: int = 5) -> float:
    for _ in range(2):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(repeat):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    times.sort()
    return times[len(times) // 2]


def latent_view_failure(size, stride, target):
    """Would the same view fail if the size-1 dims were larger? Rebuild the layout (the
    order of dims in memory, read from the strides) with those dims grown and try it on the
    meta device, which reproduces the stride check without data."""
    ones = [i for i, s in enumerate(size) if s == 1]
    if not ones:
        return None
    # Memory order: larger stride first; a size-1 dim sits inside a dim of equal stride.
    order = sorted(range(len(size)), key=lambda i: (-stride[i], size[i] == 1))
    grown = [2 if s == 1 else s for s in size]
    new_stride = [0] * len(size)
    step = 1
    for i in reversed(order):
        new_stride[i] = step
        step *= grown[i]
    for candidate in _grown_targets(target, len(ones)):
        base = torch.empty_strided(grown, new_stride, device="meta")
        try:
            base.view(candidate)
        except RuntimeError as error:
            last_error = str(error).splitlines()[0]
            continue
        return None  # some consistent view still works: no latent failure
    return {"size": grown, "stride": new_stride, "error": last_error}


def _grown_targets(target, grown_dims: int):
    ones = [i for i, s in enumerate(target) if s == 1]
    if -1 in target:
        return [list(target)]
    if len(ones) >= grown_dims:
        out = list(target)
        for i in ones[:grown_dims]:
            out[i] = 2
        return [out]
    factor = 2 ** (grown_dims - len(ones))
    base = [2 if s == 1 else s for s in target]
    return [base[:i] + [base[i] * factor] + base[i + 1:] for i in range(len(base))]



def verdict(run: ProbeRun, path: str, line: int, rule) -> dict:
    """The confirmation of `rule` (a Rule class) at a flagged line."""
    rec = run.tracker.records.get((path, line))
    run.path, run.site_line = path, line
    if rec is None or not rec.reached:
        return run.base("not-reached", "the line never ran")
    if rule is None or rule.runtime is None:
        code = rule.code if rule is not None else "this rule"
        return run.base("inconclusive", f"no runtime probe for {code}; the line ran")
    return rule.runtime.probe(run, rec)


def pitfall_lines(run: ProbeRun, path: str, rule) -> list[dict]:
    """For a good fixture (every line watched): lines where the rule's pitfall happened."""
    found = []
    if rule is None or rule.runtime is None:
        return found
    for (rec_path, line), rec in sorted(run.tracker.records.items()):
        if rec_path != path:
            continue
        run.path, run.site_line = path, line
        result = rule.runtime.probe(run, rec)
        if result["status"] == "confirmed":
            found.append({"line": line, **result})
    return found

"""Per-rule verdicts: turn what the tracker saw at a flagged line into a confirmation.

A verdict is `confirmed` (the pitfall happened, with evidence), `refuted` (the line ran and the
pitfall did not happen), `not-reached`, or `inconclusive` (the line ran but this device cannot
decide, e.g. DL005 on one GPU, or the rule has no runtime probe). On the real GPU, times are
measured and counterfactuals timed on the same device; on the simulated device they are
estimated from the cost table.
"""

from __future__ import annotations

import torch

from devicelint.runtime import costs

# A per-row loop is worth flagging when one batched copy would be this much faster.
BATCH_GAIN = 2.0


class Context:
    """What a probe may use: the device kind, the cost table, GPU timers."""

    def __init__(self, device: str, tracker, sim=None) -> None:
        self.device = device
        self.tracker = tracker
        self.sim = sim
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


def _ms(seconds: float) -> float:
    return round(seconds * 1000, 4)


def _round(value: float) -> float:
    return round(value, 4)


def _copies(ctx, entry: dict, kind: str) -> float:
    """ms spent in the copies: measured on a GPU, estimated on the simulated device."""
    if ctx.estimated:
        table_kind = "h2d_pinned" if kind == "h2d" and entry["pinned"] == entry["count"] else (
            "h2d_pageable" if kind == "h2d" else "d2h")
        return costs.copy_seconds(ctx.table, table_kind, entry["count"], entry["bytes"]) * 1000
    return entry["seconds"] * 1000


# -- the probes -------------------------------------------------------------------------

def dl001(ctx, rec) -> dict:
    entry = rec["copies"].get("h2d")
    if not entry:
        return ctx.base("refuted", "the line ran but made no host-to-device copy (a dtype "
                        "target, or data already on the device)", count=0)
    count, nbytes = entry["count"], entry["bytes"]
    measured = _copies(ctx, entry, "h2d")
    pageable = ctx.time_copy(nbytes, pinned=False)
    pinned = ctx.time_copy(nbytes, pinned=True)
    figures = dict(count=count, bytes=nbytes, measured_ms=_round(measured),
                   counterfactual_ms=_round(pageable), counterfactual_pinned_ms=_round(pinned))
    gain = measured / pageable if pageable > 0 else 0.0
    figures["speedup"] = _round(gain)
    if count < 2:
        return ctx.base("refuted", "one copy per run of the line: nothing to batch", **figures)
    if entry.get("distinct", count) < 2:
        return ctx.base("refuted", f"the same host data copied {count} times: hoist the copy "
                        "out of the loop (not a per-row copy, nothing to batch)", **figures)
    if gain < BATCH_GAIN:
        return ctx.base("refuted", f"{count} copies of {nbytes // count:,} B each; one batched "
                        f"copy would be only {gain:.1f}x faster", **figures)
    return ctx.base(
        "confirmed",
        f"{count:,} host-to-device copies, {nbytes:,} B, {measured:.3f} ms; one batched copy "
        f"{pageable:.3f} ms pageable, {pinned:.3f} ms pinned ({gain:.0f}x)",
        **figures)


def dl002(ctx, rec) -> dict:
    errors = [e for e in rec["errors"] if "same device" in e["message"]]
    if errors:
        error = errors[0]
        return ctx.base("confirmed", f"raised {error['type']}: {error['message']}",
                        count=sum(e["count"] for e in errors), error=error["message"])
    elsewhere = ctx.tracker.file_errors.get(ctx.current_path, [])
    if elsewhere:
        line, message = elsewhere[0]
        return ctx.base("inconclusive", f"a device mismatch was raised at line {line} of this "
                        f"file, not at this line: {message}", error=message, error_line=line)
    return ctx.base("refuted", "the line ran with every tensor on one device")


def dl003(ctx, rec) -> dict:
    views = rec["views"]
    failed = [s for s in views["samples"] if s.get("failed")]
    if failed:
        sample = failed[0]
        message = next((e["message"] for e in rec["errors"] if "view size" in e["message"]),
                       "view size is not compatible with input tensor's size and stride")
        return ctx.base("confirmed", f".view{tuple(sample['target'])} on size {sample['size']} "
                        f"stride {sample['stride']} raised: {message}", count=views["failed"],
                        error=message, shapes=failed[:5])
    if not views["count"]:
        return ctx.base("inconclusive", "the line ran but no Tensor.view call was seen on it")
    for sample in views["samples"]:
        latent = latent_view_failure(sample["size"], sample["stride"], sample["target"])
        if latent is not None:
            return ctx.base(
                "confirmed",
                f"latent: .view{tuple(sample['target'])} passed on size {sample['size']} only "
                f"because a dim has size 1; with size {latent['size']} it raises: "
                f"{latent['error']}",
                count=views["count"], latent=latent, shapes=views["samples"][:5])
    return ctx.base("refuted", f"the view succeeded for every shape seen ({views['count']} "
                    "calls) and no size-1 dim hides a failure", count=views["count"],
                    shapes=views["samples"][:5])


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


def dl004(ctx, rec) -> dict:
    syncs = rec["syncs"]
    count = syncs["count"]
    if not count:
        return ctx.base("refuted", "the line ran but read nothing back from the GPU (values on "
                        "the CPU)", count=0)
    if ctx.estimated:
        blocked = count * ctx.table["item_us"] / 1000
    else:
        blocked = syncs["seconds"] * 1000
    figures = dict(count=count, kinds=syncs["kinds"], measured_ms=_round(blocked))
    span = (rec["last"] - rec["first"]) * 1000 if rec["first"] is not None else 0.0
    if count >= 2 and span > 0 and not ctx.estimated:
        # Reads moved out: the host stops waiting at each step and pays one read at the end.
        per_read = blocked / count
        figures["loop_ms"] = _round(span)
        figures["counterfactual_ms"] = _round(max(span - blocked + per_read, 0.0))
        figures["counterfactual_is_estimate"] = True
    if count < 2:
        return ctx.base("refuted", "one host read per run of the line: not per step", **figures)
    what = ", ".join(f"{n}x {k}" for k, n in sorted(syncs["kinds"].items()))
    return ctx.base("confirmed", f"{count:,} host syncs ({what}), host blocked {blocked:.3f} ms",
                    **figures)


def dl005(ctx, rec) -> dict:
    entries = ctx.tracker.captured_dp.get(ctx.current_site, [])
    if ctx.device != "cuda":
        return ctx.base("inconclusive", "DataParallel vs DDP needs 2 real GPUs; the simulated "
                        "device cannot time it", needs="2 GPUs")
    gpus = torch.cuda.device_count()
    if gpus < 2:
        return ctx.base("inconclusive", f"DataParallel vs DDP needs 2 GPUs; {gpus} visible",
                        needs="2 GPUs", gpus=gpus)
    batched = [e for e in entries if e["batch"] is not None]
    if not batched:
        return ctx.base("inconclusive", "DataParallel was built here but never called, so no "
                        "batch was captured to time", gpus=gpus)
    from devicelint.runtime import ddp

    try:
        result = ddp.compare(batched[0]["module"].module, batched[0]["batch"], gpus)
    except Exception as error:  # noqa: BLE001 - a failed benchmark is a result
        return ctx.base("inconclusive", f"could not time DP vs DDP: {error}", gpus=gpus)
    ratio = result["ddp_per_s"] / result["dp_per_s"]
    status = "confirmed" if ratio > 1.05 else "refuted"
    return ctx.base(status, f"DataParallel {result['dp_per_s']:,.0f} samples/s vs DDP "
                    f"{result['ddp_per_s']:,.0f} samples/s on {gpus} GPUs ({ratio:.2f}x)",
                    gpus=gpus, speedup=_round(ratio), **result)


def dl006(ctx, rec) -> dict:
    moves = rec["moves"]
    made = moves["count"] - moves["noop"]
    if not moves["count"]:
        return ctx.base("inconclusive", "the line ran but no tensor .to/.cuda/.cpu was seen")
    if not made:
        return ctx.base("refuted", "the tensor was already there: the call returned it "
                        "unchanged, nothing was lost", count=moves["count"])
    copies = sum(e["count"] for e in rec["copies"].values())
    nbytes = sum(e["bytes"] for e in rec["copies"].values())
    return ctx.base("confirmed", f"{made} new tensor(s) made and discarded ({copies} copies, "
                    f"{nbytes:,} B); the original stayed where it was", count=made,
                    bytes=nbytes)


def dl007(ctx, rec) -> dict:
    entry = rec["copies"].get("h2d")
    if not entry:
        return ctx.base("refuted", "the line ran but made no host-to-device copy", count=0)
    count, nbytes = entry["count"], entry["bytes"]
    measured = _copies(ctx, entry, "h2d")
    fill = ctx.time_fill(nbytes // count) * count
    return ctx.base("confirmed", f"{count} CPU-built tensor(s) copied to the GPU, {nbytes:,} B, "
                    f"{measured:.3f} ms; built on the device: {fill:.3f} ms", count=count,
                    bytes=nbytes, measured_ms=_round(measured), counterfactual_ms=_round(fill))


def dl009(ctx, rec) -> dict:
    entry = rec["copies"].get("h2d")
    if not entry:
        return ctx.base("refuted", "the line ran but made no host-to-device copy", count=0)
    bad = entry["pageable_non_blocking"]
    if not bad:
        return ctx.base("refuted", "every non_blocking copy here came from pinned memory",
                        count=entry["count"])
    return ctx.base("confirmed", f"{bad} of {entry['count']} non_blocking copies came from "
                    "pageable memory, so they were not asynchronous", count=bad,
                    bytes=entry["bytes"])


def dl011(ctx, rec) -> dict:
    call = rec["calls"].get("empty_cache")
    count = call["count"] if call else 0
    if ctx.sim is not None:
        count = max(count, 0)
    if count < 2:
        return ctx.base("refuted", f"empty_cache ran {count} time(s): not per step", count=count)
    if ctx.estimated:
        measured = count * ctx.table["empty_cache_us"] / 1000
    else:
        measured = call["seconds"] * 1000
    return ctx.base("confirmed", f"empty_cache ran {count} times, {measured:.3f} ms; the "
                    "allocator then had to cudaMalloc its blocks again", count=count,
                    measured_ms=_round(measured), counterfactual_ms=0.0)


def dl012(ctx, rec) -> dict:
    stamps = rec["calls"].get("timestamp")
    if not stamps:
        return ctx.base("inconclusive", "the line ran but no time.time/perf_counter call was seen")
    if ctx.estimated:
        # The simulated device runs every op synchronously on the CPU: it knows which device
        # ops were issued since the last sync, not whether a GPU would still be running them.
        if stamps["pending"]:
            summary = (f"device work issued since the last sync was unsynchronised at "
                       f"{stamps['pending']} of {stamps['count']} timestamps; the simulated "
                       "device is synchronous, so whether a GPU would still be running it "
                       "needs a real GPU")
        else:
            summary = ("no device work was issued since the last sync at this timestamp; the "
                       "simulated device is synchronous and cannot time a GPU's queue")
        return ctx.base("inconclusive", summary, count=stamps["count"],
                        unsynced=stamps["pending"], needs="a GPU (asynchronous execution)")
    if not stamps["pending"]:
        return ctx.base("refuted", "no GPU work was pending when the timestamp was taken",
                        count=stamps["count"])
    lag = stamps["lag_seconds"] * 1000
    extra = "" if ctx.estimated else f"; the GPU ran {lag:.3f} ms more after it"
    return ctx.base("confirmed", f"GPU work was still pending at {stamps['pending']} of "
                    f"{stamps['count']} timestamps{extra}", count=stamps["pending"],
                    unmeasured_ms=None if ctx.estimated else _round(lag))


def dl013(ctx, rec) -> dict:
    if rec["line_events"].get("cuda_initialized"):
        return ctx.base("confirmed", "CUDA was already initialised when CUDA_VISIBLE_DEVICES "
                        "was set: the setting had no effect")
    if rec["line_events"].get("driver_queried"):
        # cudaGetDeviceCount (behind is_available/device_count) initialises the driver, which
        # reads CUDA_VISIBLE_DEVICES once; PYTORCH_NVML_BASED_CUDA_CHECK=1 would avoid that.
        return ctx.base("confirmed", "torch.cuda.is_available()/device_count() had already "
                        "initialised the CUDA driver when CUDA_VISIBLE_DEVICES was set: the "
                        "driver read the variable then, so the setting had no effect")
    # torch had no CUDA context yet, but torch.cuda.is_available()/device_count() call
    # cudaGetDeviceCount, which already reads the variable: this cannot be refuted here.
    return ctx.base("inconclusive", "torch had not created a CUDA context yet; an earlier "
                    "is_available()/device_count() may still have fixed the visible devices")


def dl016(ctx, rec) -> dict:
    """Repeated transfers: the same host data copied to the device again and again at the
    line, data copied back to the host at the line on every iteration (a round trip's way
    back), or new uploads at the line while the same file read device data back to the host
    (a round trip's way out; the runtime cannot see where the uploaded data came from)."""
    h2d = rec["copies"].get("h2d")
    d2h = rec["copies"].get("d2h")
    if h2d and h2d["count"] >= 2 and h2d.get("distinct", h2d["count"]) < h2d["count"]:
        count, distinct = h2d["count"], h2d.get("distinct", h2d["count"])
        measured = _copies(ctx, h2d, "h2d")
        return ctx.base(
            "confirmed",
            f"{count:,} host-to-device copies of {distinct} distinct host data ({h2d['bytes']:,} B, "
            f"{measured:.3f} ms): copied once, {count - distinct:,} of them would not be made",
            count=count, distinct=distinct, bytes=h2d["bytes"], measured_ms=_round(measured),
            counterfactual_ms=_round(measured * distinct / count))
    if d2h and d2h["count"] >= 2:
        measured = _copies(ctx, d2h, "d2h")
        return ctx.base("confirmed", f"{d2h['count']:,} device-to-host copies at this line "
                        f"({d2h['bytes']:,} B, {measured:.3f} ms), one per iteration",
                        count=d2h["count"], bytes=d2h["bytes"], measured_ms=_round(measured))
    if h2d and h2d["count"] >= 2:
        reads = [(line, other["syncs"]["count"]) for (path, line), other in ctx.tracker.records.items()
                 if path == ctx.current_path and other["syncs"]["count"] >= 2]
        measured = _copies(ctx, h2d, "h2d")
        figures = dict(count=h2d["count"], bytes=h2d["bytes"], measured_ms=_round(measured))
        if reads:
            here = ctx.current_site[1]
            line, count = min(reads, key=lambda read: (abs(read[0] - here), read[0]))
            return ctx.base("confirmed", f"{h2d['count']:,} host-to-device copies of new data at this "
                            f"line while line {line} read device data back {count:,} times",
                            **figures)
        return ctx.base("inconclusive", f"{h2d['count']:,} host-to-device copies of new data each "
                        "time; no read back from the device was watched in this file", **figures)
    return ctx.base("refuted", "the line ran but did not copy the same data again, nor back and "
                    "forth on every iteration", count=(h2d or d2h or {}).get("count", 0))


PROBES = {
    "DL001": dl001, "DL002": dl002, "DL003": dl003, "DL004": dl004, "DL005": dl005,
    "DL006": dl006, "DL007": dl007, "DL009": dl009, "DL011": dl011, "DL012": dl012,
    "DL013": dl013, "DL015": dl002, "DL016": dl016,
}


def verdict(ctx, path: str, line: int, code: str) -> dict:
    rec = ctx.tracker.records.get((path, line))
    ctx.current_path, ctx.current_site = path, (path, line)
    if rec is None or not rec["reached"]:
        return ctx.base("not-reached", "the line never ran")
    probe = PROBES.get(code)
    if probe is None:
        return ctx.base("inconclusive", f"no runtime probe for {code}; the line ran")
    return probe(ctx, rec)


def pitfall_lines(ctx, path: str, code: str) -> list[dict]:
    """For a good fixture (every line watched): lines where the rule's pitfall happened."""
    probe = PROBES.get(code)
    found = []
    if probe is None:
        return found
    for (rec_path, line), rec in sorted(ctx.tracker.records.items()):
        if rec_path != path:
            continue
        ctx.current_path, ctx.current_site = path, (path, line)
        result = probe(ctx, rec)
        if result["status"] == "confirmed":
            found.append({"line": line, **result})
    return found

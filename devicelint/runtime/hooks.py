"""The wrappers the tracker installs, one group per `Watch` (devicelint/runtime_spec.py).

Each wrapper costs one Python call plus a frame look-up when the caller is not on a flagged
line; only calls on flagged lines are timed and counted.
"""

from __future__ import annotations

import functools
import os
import re
import sys
import time

import torch

from devicelint.runtime.tracker import CapturedDataParallel, clock
from devicelint.runtime_spec import CopyStats, CudaState, LineRecord, ViewSample, Watch


def timed_call(tracker, original, *args, **kwargs):
    """Run a wrapped call with the tracker marked busy (calls it makes itself are not the
    user's), and return (its result, wall seconds)."""
    local = tracker._local  # (tracker.busy, inlined: this runs on every recorded call)
    local.busy = True
    try:
        start = clock()
        out = original(*args, **kwargs)
        return out, clock() - start
    finally:
        local.busy = False


def _nbytes(tensor) -> int:
    return tensor.numel() * tensor.element_size()


def _wrap(owner, name, make):
    original = getattr(owner, name)
    wrapper = make(original)
    functools.update_wrapper(wrapper, original, assigned=("__name__", "__qualname__", "__doc__"))
    setattr(owner, name, wrapper)


# Up to this many elements, host data is compared by value: `torch.tensor(float("-inf"))` or
# `torch.tensor([0.1, 0.2])` rebuilt on every iteration is the same data copied again.
_BY_VALUE = 256


def _source_key(data):
    """What was copied: the same key twice means the same host data copied again (a small
    tensor's or list's values; a larger tensor's memory and layout; a Python scalar's value);
    anything else counts as new."""
    if isinstance(data, torch.Tensor):
        try:
            if data.numel() <= _BY_VALUE and data.device.type == "cpu":
                return ("values", str(data.dtype), tuple(data.shape),
                        tuple(data.detach().reshape(-1).tolist()))
            return ("tensor", data.untyped_storage().data_ptr(), data.storage_offset(),
                    tuple(data.shape), tuple(data.stride()))
        except (RuntimeError, NotImplementedError, TypeError):
            return None
    if isinstance(data, (bool, int, float, complex)):
        return ("scalar", type(data).__name__, data)
    if isinstance(data, (list, tuple)):
        leaves = _scalars(data, _BY_VALUE)
        return ("list", repr(data)) if leaves is not None else None
    return None


def _scalars(data, limit: int):
    """The number of Python scalars in a nested list/tuple of scalars, or None (too many, or
    something else inside)."""
    count = 0
    stack = [data]
    while stack:
        item = stack.pop()
        if isinstance(item, (list, tuple)):
            stack.extend(item)
        elif isinstance(item, (bool, int, float, complex)):
            count += 1
            if count > limit:
                return None
        else:
            return None
    return count


_UNKEYED = object()


def _add_copy(rec: LineRecord, src, dst, nbytes, seconds, pinned, non_blocking,
              source=None, key=_UNKEYED) -> None:
    """Count one copy at the line. `key`: `_source_key(source)` when the caller already
    computed it (one copy recorded in two stores keys its source once)."""
    kind = "h2d" if src == "cpu" else ("d2h" if dst == "cpu" else "d2d")
    copies = rec.copies.setdefault(kind, CopyStats())
    if key is _UNKEYED:
        key = _source_key(source)
    if key is None or key not in copies.sources:
        copies.distinct += 1
        if key is not None and len(copies.sources) < 64:
            copies.sources.append(key)
    copies.count += 1
    copies.bytes += nbytes
    copies.seconds += seconds
    copies.pinned += bool(pinned)
    copies.pageable_non_blocking += bool(non_blocking and not pinned and kind == "h2d")


def _add_sync(rec: LineRecord, kind: str, seconds: float) -> None:
    syncs = rec.syncs
    syncs.count += 1
    syncs.seconds += seconds
    syncs.kinds[kind] = syncs.kinds.get(kind, 0) + 1


def _legacy_tensor_type(target) -> str | None:
    """"cpu" or "cuda" for a legacy tensor type (`torch.FloatTensor`, `torch.cuda.FloatTensor`,
    or their names as strings); None for a dtype, a missing argument or anything else."""
    if not isinstance(target, str):
        target = f"{getattr(target, '__module__', '')}.{getattr(target, '__name__', '')}"
    match = re.match(r"^torch\.(cuda\.)?[A-Z][A-Za-z0-9]*Tensor$", target)
    if match is None:
        return None
    return "cuda" if match.group(1) else "cpu"


def _note_source(tracker, sites, source) -> None:
    """Tell the finder what a host->device copy copied (per-row copies, runtime/finder.py)."""
    finder = tracker.finder
    if finder is not None:
        for store, site in sites:
            if store is finder.records:
                finder.note_source(site, source)


def install_moves(tracker) -> None:
    """Tensor.to / .cuda / .cpu: copies (h2d/d2h), no-op moves, and .cpu() as a sync."""

    def make(original, method):
        def wrapper(self, *args, **kwargs):
            sites = tracker.sites(sys._getframe(1))
            if not sites or not isinstance(self, torch.Tensor):
                return original(self, *args, **kwargs)
            if getattr(tracker._local, "module_move", 0):
                # nn.Module.to/.cuda moving its parameters: one move of a whole model, which
                # no rule flags as a per-row copy; counted apart.
                for rec in tracker.touch(sites):
                    rec.moves.module += 1
                return original(self, *args, **kwargs)
            out, seconds = timed_call(tracker, original, self, *args, **kwargs)
            recs = tracker.touch(sites)
            for rec in recs:
                rec.moves.count += 1
            if out is self or not isinstance(out, torch.Tensor):
                # (a move to where the tensor already is, the commonest: nothing else asked)
                for rec in recs:
                    rec.moves.noop += 1
                return out
            src, dst = tracker.device_of(self), tracker.device_of(out)
            if src != dst and out.numel() == 0:
                # an empty tensor changes device without a byte copied or a stream waited on
                for rec in recs:
                    rec.moves.noop += 1
            elif src != dst:
                pinned = src == "cpu" and self.is_pinned()
                non_blocking = bool(kwargs.get("non_blocking")) or any(
                    a is True for a in args if isinstance(a, bool))
                key = _source_key(self)
                nbytes = _nbytes(out)
                for rec in recs:
                    _add_copy(rec, src, dst, nbytes, seconds, pinned, non_blocking, key=key)
                    if dst == "cpu":
                        _add_sync(rec, method, seconds)
                if src == "cpu":
                    _note_source(tracker, sites, self)
            else:
                for rec in recs:
                    rec.moves.same_device += 1
            return out

        return wrapper

    for method in ("to", "cuda", "cpu"):
        _wrap(torch.Tensor, method, lambda original, m=method: make(original, m))

    def record_conversion(self, out, method, seconds, sites, non_blocking=False):
        # `.type(...)` / `.type_as(t)` change the device when the target type (or t) lives
        # elsewhere: the same copy `.to` makes, which a `.to(device)` after it then skips.
        src, dst = tracker.device_of(self), tracker.device_of(out)
        if src == dst or out.numel() == 0:
            return
        pinned = src == "cpu" and self.is_pinned()
        for rec in tracker.touch(sites):
            rec.moves.count += 1
            _add_copy(rec, src, dst, _nbytes(out), seconds, pinned, non_blocking,
                      key=_source_key(self))
            if dst == "cpu":
                _add_sync(rec, method, seconds)
        if src == "cpu":
            _note_source(tracker, sites, self)

    def make_type(original):
        # `.type(torch.cuda.FloatTensor)` of a host tensor copies it to the GPU, and
        # `.type(torch.FloatTensor)` of a CUDA tensor copies it to the host (a sync);
        # `.type()` asking the name and `.type(dtype)` record nothing.
        def wrapper(self, *args, **kwargs):
            sites = tracker.sites(sys._getframe(1))
            target = args[0] if args else kwargs.get("dtype")
            if not sites or not isinstance(self, torch.Tensor) or _legacy_tensor_type(target) is None:
                return original(self, *args, **kwargs)
            out, seconds = timed_call(tracker, original, self, *args, **kwargs)
            if isinstance(out, torch.Tensor):
                non_blocking = bool(kwargs.get("non_blocking")) or (len(args) > 1 and args[1] is True)
                record_conversion(self, out, "type", seconds, sites, non_blocking)
            return out

        return wrapper

    def make_type_as(original):
        def wrapper(self, *args, **kwargs):
            sites = tracker.sites(sys._getframe(1))
            if not sites or not isinstance(self, torch.Tensor):
                return original(self, *args, **kwargs)
            out, seconds = timed_call(tracker, original, self, *args, **kwargs)
            if isinstance(out, torch.Tensor):
                record_conversion(self, out, "type_as", seconds, sites)
            return out

        return wrapper

    _wrap(torch.Tensor, "type", make_type)
    _wrap(torch.Tensor, "type_as", make_type_as)

    def make_apply(original):
        def _apply(self, *args, **kwargs):
            local = tracker._local
            local.module_move = getattr(local, "module_move", 0) + 1
            try:
                return original(self, *args, **kwargs)
            finally:
                local.module_move -= 1

        return _apply

    _wrap(torch.nn.Module, "_apply", make_apply)


def install_factories(tracker) -> None:
    """torch.tensor / torch.as_tensor with a device: a host->device copy per call."""

    def make(original):
        def wrapper(*args, **kwargs):
            device = kwargs.get("device")
            if device is None or _names_cpu(device):
                # (torch's own optimizers build `torch.tensor(1.0, device="cpu")` every step)
                return original(*args, **kwargs)
            sites = tracker.sites(sys._getframe(1))
            if not sites:
                return original(*args, **kwargs)
            data = args[0] if args else kwargs.get("data")
            if isinstance(data, torch.Tensor) and tracker.is_cuda(data):
                return original(*args, **kwargs)
            out, seconds = timed_call(tracker, original, *args, **kwargs)
            # (an empty literal, `torch.tensor([], device=d)`, allocates nothing and copies nothing)
            if tracker.is_cuda(out) and out.numel():
                dst, nbytes, key = tracker.device_of(out), _nbytes(out), _source_key(data)
                for rec in tracker.touch(sites):
                    rec.moves.count += 1
                    _add_copy(rec, "cpu", dst, nbytes, seconds, False, False, key=key)
                _note_source(tracker, sites, data)
            return out

        return wrapper

    for name in ("tensor", "as_tensor"):
        _wrap(torch, name, make)


def _names_cpu(device) -> bool:
    """`device=` names the host: no copy to a device can follow."""
    if isinstance(device, str):
        return device == "cpu" or device.startswith("cpu:")
    return isinstance(device, torch.device) and device.type == "cpu"


def install_syncs(tracker) -> None:
    """Host reads of device values: .item(), .tolist(), bool/float/int(t), print(t), and
    torch.cuda.synchronize(). The wall time of the call is the time the host was blocked."""

    def make(original, kind):
        def wrapper(self, *args, **kwargs):
            if not tracker.is_cuda(self):
                return original(self, *args, **kwargs)
            sites = tracker.sites(sys._getframe(1))
            if not sites:
                return original(self, *args, **kwargs)
            out, seconds = timed_call(tracker, original, self, *args, **kwargs)
            for rec in tracker.touch(sites):
                _add_sync(rec, kind, seconds)
            return out

        return wrapper

    for name, kind in (
        ("item", "item"), ("tolist", "tolist"), ("__bool__", "bool"), ("__float__", "float"),
        ("__int__", "int"), ("__index__", "int"), ("__repr__", "print"), ("__format__", "print"),
    ):
        if hasattr(torch.Tensor, name):
            _wrap(torch.Tensor, name, lambda original, k=kind: make(original, k))
    # `torch.equal(a, b)`, `a.allclose(b)`: a Python bool of the tensors' data, one wait per
    # call (the static pass's `[answers]` group of semantic/torch_api.toml).
    for owner, name in ((torch, "equal"), (torch, "allclose"),
                        (torch.Tensor, "equal"), (torch.Tensor, "allclose")):
        _wrap(owner, name, lambda original, k=name: make(original, k))

    def make_sync(original):
        def wrapper(*args, **kwargs):
            sites = tracker.sites(sys._getframe(1))
            if not sites:
                return original(*args, **kwargs)
            start = clock()
            out = original(*args, **kwargs)
            seconds = clock() - start
            for rec in tracker.touch(sites):
                _add_sync(rec, "synchronize", seconds)
            return out

        return wrapper

    _wrap(torch.cuda, "synchronize", make_sync)

    def make_setitem(original):
        # `host[i] = device_value`: the assignment copies device data into host memory, a
        # blocking device->host copy that waits for the GPU, as `.cpu()` does. Counted once
        # it succeeded (an assignment PyTorch refuses read nothing).
        def wrapper(self, index, value):
            if not tracker.is_cuda(value) or tracker.is_cuda(self):
                return original(self, index, value)
            sites = tracker.sites(sys._getframe(1))
            if not sites:
                return original(self, index, value)
            out, seconds = timed_call(tracker, original, self, index, value)
            for rec in tracker.touch(sites):
                _add_sync(rec, "setitem", seconds)
            return out

        return wrapper

    _wrap(torch.Tensor, "__setitem__", make_setitem)


def install_view(tracker) -> None:
    """Tensor.view: shapes and strides seen at the flagged line, and whether it raised."""

    def make(original):
        def wrapper(self, *args, **kwargs):
            site = tracker.site(sys._getframe(1))
            if site is None:
                return original(self, *args, **kwargs)
            views = tracker.record(site).views
            views.count += 1
            sample = None
            if not (args and isinstance(args[0], torch.dtype)) and "dtype" not in kwargs:
                sample = ViewSample(list(self.shape), list(self.stride()),
                                    _view_target(args, kwargs))
            tracker.busy(True)
            try:
                out = original(self, *args, **kwargs)
            except RuntimeError:
                views.failed += 1
                if sample is not None:
                    sample.failed = True
                    _keep_sample(views, sample)
                raise
            finally:
                tracker.busy(False)
            if sample is not None:
                sample.result = list(out.shape)
                _keep_sample(views, sample)
            return out

        return wrapper

    _wrap(torch.Tensor, "view", make)


def _view_target(args, kwargs) -> list:
    shape = args[0] if len(args) == 1 and isinstance(args[0], (tuple, list, torch.Size)) else args
    if not shape and "size" in kwargs:
        shape = kwargs["size"]
    return [int(s) for s in shape]


def _keep_sample(views, sample: ViewSample) -> None:
    if sample not in views.samples and len(views.samples) < 20:
        views.samples.append(sample)


def install_empty_cache(tracker) -> None:
    def make(original):
        def wrapper(*args, **kwargs):
            sites = tracker.sites(sys._getframe(1))
            if not sites:
                return original(*args, **kwargs)
            start = clock()
            out = original(*args, **kwargs)
            seconds = clock() - start
            for rec in tracker.touch(sites):
                rec.empty_cache.count += 1
                rec.empty_cache.seconds += seconds
            return out

        return wrapper

    _wrap(torch.cuda, "empty_cache", make)
    # The same function under torch.cuda.memory (`torch.cuda.memory.empty_cache()`).
    torch.cuda.memory.empty_cache = torch.cuda.empty_cache


def install_clock(tracker) -> None:
    """time.time/perf_counter/monotonic at a flagged line: was GPU work still pending?"""

    def pending() -> tuple[bool, float]:
        if tracker.sim is not None:
            return tracker.sim.pending_ops > 0, 0.0
        if not torch.cuda.is_initialized():
            return False, 0.0
        if torch.cuda.current_stream().query():
            return False, 0.0
        # Measure how long the GPU kept running after the timestamp (this adds one sync).
        start = clock()
        torch.cuda.synchronize()
        return True, clock() - start

    def make(original):
        def wrapper():
            value = original()
            site = tracker.site(sys._getframe(1))
            if site is None:
                return value
            busy, lag = pending()
            stamps = tracker.record(site).stamps
            stamps.count += 1
            stamps.pending += busy
            stamps.lag_seconds += lag
            return value

        return wrapper

    for name in ("time", "perf_counter", "monotonic"):
        _wrap(time, name, make)
    # timeit bound time.perf_counter when it was imported, possibly before the patch.
    import timeit

    timeit.default_timer = time.perf_counter


def install_driver_queries(tracker) -> None:
    """torch.cuda.is_available()/device_count() (and torch.accelerator's) call
    cudaGetDeviceCount, which initialises the driver: CUDA_VISIBLE_DEVICES is read then."""

    def make(original):
        def wrapper(*args, **kwargs):
            if not (original.__name__ == "is_available"
                    and os.environ.get("PYTORCH_NVML_BASED_CUDA_CHECK") == "1"):
                tracker.driver_queried = True
            return original(*args, **kwargs)

        return wrapper

    _wrap(torch.cuda, "is_available", make)
    _wrap(torch.cuda, "device_count", make)
    accelerator = getattr(torch, "accelerator", None)
    if accelerator is not None and hasattr(accelerator, "is_available"):
        _wrap(accelerator, "is_available", make)


def install_data_parallel(tracker) -> None:
    """Remember each DataParallel built at a flagged line and the first batch it saw."""
    init = torch.nn.DataParallel.__init__

    def wrapped_init(self, *args, **kwargs):
        site = tracker.site(sys._getframe(1))
        init(self, *args, **kwargs)
        if site is None:
            return
        tracker.record(site)
        entry = CapturedDataParallel(self)
        tracker.captured_dp.setdefault(site, []).append(entry)
        forward = type(self).forward

        def capture(*a, **k):
            if entry.batch is None:
                tracker.busy(True)  # the capture's own copies are not the user's
                try:
                    entry.batch = (_to_cpu(a), _to_cpu(k))
                finally:
                    tracker.busy(False)
            return forward(self, *a, **k)

        self.forward = capture

    torch.nn.DataParallel.__init__ = wrapped_init


def _to_cpu(tree):
    from torch.utils._pytree import tree_map

    return tree_map(lambda x: x.detach().to("cpu") if isinstance(x, torch.Tensor) else x, tree)


def install_cuda_state(tracker) -> None:
    """When a watched line first runs: had CUDA been initialised, had the driver been asked
    for its devices (which reads CUDA_VISIBLE_DEVICES once)?"""
    sim = tracker.sim

    def on_line(tracker, rec: LineRecord) -> None:
        initialized = sim.initialized if sim is not None else torch.cuda.is_initialized()
        rec.cuda_state = CudaState(initialized, tracker.driver_queried)

    tracker.line_hooks.append(on_line)


INSTALLERS = {
    Watch.MOVES: install_moves,
    Watch.FACTORIES: install_factories,
    Watch.SYNCS: install_syncs,
    Watch.VIEWS: install_view,
    Watch.EMPTY_CACHE: install_empty_cache,
    Watch.CLOCK: install_clock,
    Watch.DRIVER_QUERIES: install_driver_queries,
    Watch.CUDA_STATE: install_cuda_state,
    Watch.DATA_PARALLEL: install_data_parallel,
}


def install(tracker, watches) -> None:
    """Install the wrappers of `watches` (in a fixed order), then start the tracker."""
    for watch in sorted(set(watches), key=lambda w: w.value):
        INSTALLERS[watch](tracker)
    tracker.start()

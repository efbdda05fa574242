"""The simulated device: real CPU tensors tagged as `cuda:N`.

Tensors keep real values on the CPU; a tag on their storage says which device they would be on.
A TorchFunctionMode answers `.device`/`.is_cuda`, handles `.to`/`.cuda`/`.cpu` and `device=`
arguments (which the CPU wheel refuses before dispatch); a TorchDispatchMode checks that every
op's tensors share one logical device and raises PyTorch's own message when they do not, and
tags op outputs. Tags live on the storage, so views, `param.data = ...` (what `Module.to` does)
and in-place ops see the same device without extra work. Copies and syncs are counted the way a
GPU run does them (a no-op `.to` on a tensor already there is not a copy).
"""

from __future__ import annotations

import time
import types
import warnings
import weakref

import torch
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

CPU = "cpu"

# Ops whose tensors may legally sit on different devices.
CROSS_DEVICE_OPS = {
    "_to_copy", "copy_", "_copy_from", "_copy_from_and_resize", "to", "lift_fresh",
    "lift_fresh_copy", "detach", "alias", "set_", "_local_scalar_dense", "is_pinned",
    "_pin_memory",
}
# Advanced indexing accepts CPU index tensors on a CUDA tensor.
INDEX_OPS = {"index", "index_put", "index_put_", "_index_put_impl_", "_unsafe_index"}


class SimDevice:
    """Storage tags plus the counters a GPU run would show."""

    def __init__(self, gpus: int = 2) -> None:
        self.gpus = gpus
        self._tags: dict[int, tuple[weakref.ref, str]] = {}
        self._pinned: dict[int, weakref.ref] = {}
        self.initialized = False
        # What a GPU run would count (the child reports them as `sim_counts`).
        self.copies = {"h2d": 0, "d2h": 0, "d2d": 0}
        self.syncs = 0
        # Ops on the device since the last sync: "is GPU work pending?" (Watch.CLOCK).
        self.pending_ops = 0

    # -- tags --------------------------------------------------------------------------
    def device_of(self, tensor: torch.Tensor) -> str:
        try:
            storage = tensor.untyped_storage()
        except (RuntimeError, NotImplementedError, TypeError):
            return CPU
        entry = self._tags.get(id(storage))
        if entry is None or entry[0]() is not storage:
            return CPU
        return entry[1]

    def tag(self, tensor: torch.Tensor, device: str) -> None:
        try:
            storage = tensor.untyped_storage()
        except (RuntimeError, NotImplementedError, TypeError):
            return
        key = id(storage)
        if device == CPU:
            self._tags.pop(key, None)
            return
        if device.startswith("cuda"):
            self.initialized = True
        tags = self._tags

        def forget(ref, key=key):
            entry = tags.get(key)
            if entry is not None and entry[0] is ref:
                del tags[key]

        self._tags[key] = (weakref.ref(storage, forget), device)

    def mark_pinned(self, tensor: torch.Tensor) -> None:
        storage = tensor.untyped_storage()
        self._pinned[id(storage)] = weakref.ref(storage)

    def is_pinned(self, tensor: torch.Tensor) -> bool:
        try:
            storage = tensor.untyped_storage()
        except (RuntimeError, NotImplementedError, TypeError):
            return False
        ref = self._pinned.get(id(storage))
        return ref is not None and ref() is storage

    def normalize(self, device) -> str:
        if device is None:
            return CPU
        if isinstance(device, int):
            device = torch.device("cuda", device)
        device = torch.device(device)
        if device.type == "cpu":
            return CPU
        if device.type != "cuda":
            return device.type  # meta and others: left alone
        index = device.index or 0
        if index >= self.gpus:
            raise RuntimeError(
                "CUDA error: invalid device ordinal (simulated device has "
                f"{self.gpus} GPU{'s' if self.gpus != 1 else ''})"
            )
        return f"cuda:{index}"

    def record_copy(self, src: str, dst: str) -> None:
        if src == dst and src == CPU:
            return
        kind = "h2d" if src == CPU else ("d2h" if dst == CPU else "d2d")
        self.copies[kind] += 1
        if kind == "d2h":
            self.sync()
        else:
            self.pending_ops += 1

    def sync(self) -> None:
        self.syncs += 1
        self.pending_ops = 0


def _tensors(tree) -> list[torch.Tensor]:
    return [x for x in tree_flatten(tree)[0] if isinstance(x, torch.Tensor)]


def mismatch_message(func, args, kwargs, culprit: int, common: str, other: str) -> str:
    """PyTorch's text for mixed devices. Pointwise (TensorIterator) ops word it one way,
    other kernels name the argument and the CUDA wrapper they were checking for."""
    name = func.overloadpacket.__name__
    if torch.Tag.pointwise in getattr(func, "tags", ()):
        return (
            "Expected all tensors to be on the same device, but found at least two devices, "
            f"{common} and {other}!"
        )
    schema_args = [a.name for a in func._schema.arguments]
    arg_name = schema_args[culprit] if culprit < len(schema_args) else "argument"
    overload = func._overloadname
    method = name if overload in ("default", "") else f"{name}_{overload}"
    return (
        f"Expected all tensors to be on the same device, but got {arg_name} is on {other}, "
        f"different from other tensors on {common} (when checking argument in method "
        f"wrapper_CUDA_{method})"
    )


class SimDispatchMode(TorchDispatchMode):
    def __init__(self, sim: SimDevice) -> None:
        super().__init__()
        self.sim = sim

    def __torch_dispatch__(self, func, types_, args=(), kwargs=None):
        sim = self.sim
        kwargs = dict(kwargs or {})
        name = func.overloadpacket.__name__
        target = None
        if kwargs.get("device") is not None:
            target = sim.normalize(kwargs["device"])
            if target.startswith("cuda"):
                kwargs["device"] = torch.device("cpu")
            elif target != CPU:
                target = None  # meta and others: not simulated
        pinned = bool(kwargs.get("pin_memory"))
        if pinned:
            kwargs["pin_memory"] = False
        common = self._check(func, name, args, kwargs)
        if name == "_local_scalar_dense" and common != CPU:
            sim.sync()
            return func(*args, **kwargs)  # the read waited for the device: nothing pending
        out = func(*args, **kwargs)
        if pinned:
            # torch.empty(..., pin_memory=True): the CPU wheel cannot pin, remember it instead
            for tensor in _tensors(out):
                sim.mark_pinned(tensor)
        if name in ("copy_", "_copy_from"):
            dst, src = (args[0], args[1]) if name == "copy_" else (args[1], args[0])
            sim.record_copy(sim.device_of(src), sim.device_of(dst))
            return out
        if name == "_to_copy" and target is not None:
            # Explicit device moves from C++ paths; Python-level .to/.cuda/.cpu count in
            # SimFunctionMode._move, which calls _to_copy without a device.
            result = target
            sim.record_copy(sim.device_of(args[0]), result)
        elif name == "_to_copy":
            result = sim.device_of(args[0])
        else:
            result = target if target is not None else common
        if result != CPU:
            sim.pending_ops += 1
        for tensor in _tensors(out):
            sim.tag(tensor, result)
        return out

    def _check(self, func, name, args, kwargs) -> str:
        """The op's logical device; raise PyTorch's mismatch error if its tensors disagree."""
        sim = self.sim
        flat = tree_flatten((args, kwargs))[0]
        common = None
        first_cuda = None
        for position, value in enumerate(flat):
            if not isinstance(value, torch.Tensor):
                continue
            device = sim.device_of(value)
            if device != CPU and first_cuda is None:
                first_cuda = device
            if name in CROSS_DEVICE_OPS:
                continue
            if name in INDEX_OPS and position > 0 and value is not args[0]:
                base = sim.device_of(args[0]) if isinstance(args[0], torch.Tensor) else CPU
                if base == CPU and device != CPU:
                    # A CUDA index into a CPU tensor: PyTorch refuses it (CPU indices into a
                    # CUDA tensor are fine)
                    raise RuntimeError("indices should be either on cpu or on the same device "
                                       "as the indexed tensor (cpu)")
                continue
            # A 0-dim CPU tensor mixes with CUDA tensors legally (a "CPU scalar").
            if device == CPU and value.dim() == 0:
                continue
            if common is None:
                common = device
            elif device != common:
                index = _arg_index(args, value)
                raise RuntimeError(mismatch_message(func, args, kwargs, index, common, device))
        if common is None:
            return first_cuda or CPU
        return common


def _arg_index(args, value) -> int:
    for index, arg in enumerate(args):
        if arg is value:
            return index
        if isinstance(arg, (list, tuple)) and any(a is value for a in arg):
            return index
    return len(args)


class SimFunctionMode(TorchFunctionMode):
    """Python-level calls the CPU wheel would refuse or answer with the real device."""

    def __init__(self, sim: SimDevice) -> None:
        super().__init__()
        self.sim = sim
        T = torch.Tensor
        self.handlers = {
            T.device.__get__: self._device,
            T.is_cuda.__get__: lambda f, a, k: self.sim.device_of(a[0]) != CPU,
            T.get_device: lambda f, a, k: _index(self.sim.device_of(a[0])),
            T.to: self._to,
            T.cuda: self._cuda,
            T.cpu: lambda f, a, k: self._move(a[0], CPU, None, False, k.get("memory_format")),
            T.numpy: self._numpy,
            T.is_pinned: lambda f, a, k: self.sim.is_pinned(a[0]),
            T.pin_memory: self._pin,
            T.type: self._type,
            T.type_as: self._type_as,
        }
        # The tracker may wrap these methods later; torch then hands the mode the wrapper,
        # which keeps the original's qualified name.
        self.by_name = {
            f"TensorBase.{name}": self.handlers[getattr(T, name)]
            for name in ("get_device", "to", "cuda", "cpu", "numpy", "is_pinned", "pin_memory",
                         "type", "type_as")
        }
        self._raw_to = T.to

    def __torch_function__(self, func, types_, args=(), kwargs=None):
        kwargs = kwargs or {}
        handler = self.handlers.get(func) or self.by_name.get(getattr(func, "__qualname__", None))
        if handler is not None:
            return handler(func, args, kwargs)
        device = kwargs.get("device")
        if func is torch._C._nn._parse_to:
            # Module.to(device=..., dtype=...) parses its arguments first: no tensor is built
            return func(*args, **kwargs)
        if device is not None and not isinstance(device, torch.Tensor):
            target = self.sim.normalize(device)
            if target.startswith("cuda"):
                # Factories like torch.tensor(..., device="cuda") fail on the CPU wheel before
                # dispatch: build on the CPU and tag the result.
                kwargs = dict(kwargs, device="cpu")
                kwargs.pop("pin_memory", None)
                out = func(*args, **kwargs)
                for tensor in _tensors(out):
                    if func in (torch.tensor, torch.as_tensor) or getattr(func, "__name__", "") in (
                        "tensor", "as_tensor", "new_tensor",
                    ):
                        self.sim.record_copy(CPU, target)
                    self.sim.tag(tensor, target)
                return out
        return func(*args, **kwargs)

    def _device(self, func, args, kwargs):
        device = self.sim.device_of(args[0])
        if device == CPU:
            return func(*args, **kwargs)
        return torch.device(device)

    def _numpy(self, func, args, kwargs):
        device = self.sim.device_of(args[0])
        if device != CPU:
            raise TypeError(
                f"can't convert {device} device type tensor to numpy. Use Tensor.cpu() to copy "
                "the tensor to host memory first."
            )
        return func(*args, **kwargs)

    def _pin(self, func, args, kwargs):
        tensor = args[0]
        if self.sim.device_of(tensor) != CPU:
            raise RuntimeError(f"cannot pin '{tensor.type()}' only dense CPU tensors can be pinned")
        out = tensor.clone()
        self.sim.mark_pinned(out)
        return out

    def _cuda(self, func, args, kwargs):
        tensor = args[0]
        device = args[1] if len(args) > 1 else kwargs.get("device")
        target = self.sim.normalize("cuda" if device is None else device)
        non_blocking = kwargs.get("non_blocking", False)
        return self._move(tensor, target, None, non_blocking, kwargs.get("memory_format"))

    def _to(self, func, args, kwargs):
        tensor, rest = args[0], list(args[1:])
        kwargs = dict(kwargs)
        copy = kwargs.pop("copy", False)
        if rest and isinstance(rest[0], torch.Tensor):
            other = rest.pop(0)
            device, dtype = self.sim.device_of(other), other.dtype
            non_blocking = rest[0] if rest else kwargs.get("non_blocking", False)
            memory_format = kwargs.get("memory_format")
        else:
            if len(rest) >= 3 and not isinstance(rest[2], bool):
                copy = rest.pop(2)  # to(device, dtype, non_blocking, copy)
            device, dtype, non_blocking, memory_format = torch._C._nn._parse_to(*rest, **kwargs)
        src = self.sim.device_of(tensor)
        target = src if device is None else self.sim.normalize(device)
        return self._move(tensor, target, dtype, non_blocking, memory_format, copy)

    def _type(self, func, args, kwargs):
        # `.type(torch.cuda.FloatTensor)` (which the CPU wheel cannot build) moves a host tensor
        # to the current GPU, `.type(torch.FloatTensor)` a device tensor to the host; `.type()`
        # names the type as the real device would.
        tensor, rest = args[0], list(args[1:])
        target = rest[0] if rest else kwargs.get("dtype")
        device = self.sim.device_of(tensor)
        if target is None:
            name = func(*args, **kwargs)
            if device != CPU and isinstance(name, str) and name.startswith("torch."):
                return "torch.cuda." + name[len("torch."):]
            return name
        legacy = _legacy_type(target)
        if legacy is None:
            return func(*args, **kwargs)
        kind, dtype = legacy
        if kind == "cuda":
            destination = device if device != CPU else self.sim.normalize("cuda")
        else:
            destination = CPU
        non_blocking = rest[1] if len(rest) > 1 else kwargs.get("non_blocking", False)
        return self._move(tensor, destination, dtype, non_blocking, None)

    def _type_as(self, func, args, kwargs):
        tensor, other = args[0], args[1] if len(args) > 1 else kwargs["other"]
        return self._move(tensor, self.sim.device_of(other), other.dtype, False, None)

    def _move(self, tensor, target, dtype, non_blocking, memory_format, copy=False):
        src = self.sim.device_of(tensor)
        same_dtype = dtype is None or dtype == tensor.dtype
        if target == src and same_dtype and not copy and memory_format is None:
            return tensor  # what real PyTorch does: no copy, the same tensor back
        options = {"dtype": dtype or tensor.dtype, "copy": True}
        if memory_format is not None:
            options["memory_format"] = memory_format
        out = self._raw_to(tensor, **options)
        if target != src:
            self.sim.record_copy(src, target)
        self.sim.tag(out, target)
        return out


def _legacy_type(target):
    """("cuda" | "cpu", dtype) for a legacy tensor type (`torch.cuda.FloatTensor`,
    `torch.LongTensor` or their names as strings); None for a dtype or anything else."""
    name = target if isinstance(target, str) else \
        f"{getattr(target, '__module__', '')}.{getattr(target, '__name__', '')}"
    parts = name.split(".")
    if len(parts) == 3 and parts[:2] == ["torch", "cuda"]:
        kind, owner = "cuda", torch.cuda
    elif len(parts) == 2 and parts[0] == "torch":
        kind, owner = "cpu", torch
    else:
        return None
    legacy = getattr(owner, parts[-1], None)
    dtype = getattr(legacy, "dtype", None)
    if not parts[-1].endswith("Tensor") or not isinstance(dtype, torch.dtype):
        return None
    return kind, dtype


def _index(device: str) -> int:
    return -1 if device == CPU else int(device.split(":")[1])


class _Event:
    """torch.cuda.Event on the simulated device: host timestamps."""

    def __init__(self, enable_timing=False, blocking=False, interprocess=False):
        self.stamp = None

    def record(self, stream=None):
        self.stamp = time.perf_counter()

    def synchronize(self):
        pass

    def query(self):
        return True

    def wait(self, stream=None):
        pass

    def elapsed_time(self, end):
        return (end.stamp - self.stamp) * 1000.0


class _Stream:
    def __init__(self, device=None, priority=0, **kwargs):
        self.device = torch.device("cuda", 0)

    def synchronize(self):
        pass

    def query(self):
        return True

    def wait_stream(self, other):
        pass

    def wait_event(self, event):
        pass

    def record_event(self, event=None):
        event = event or _Event()
        event.record()
        return event

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


class Simulation:
    """Installs the simulated device for the rest of the process (the child runs one target)."""

    def __init__(self, gpus: int = 2) -> None:
        self.sim = SimDevice(gpus)
        self.function_mode = SimFunctionMode(self.sim)
        self.dispatch_mode = SimDispatchMode(self.sim)

    def install(self) -> None:
        sim = self.sim
        cuda = torch.cuda
        props = types.SimpleNamespace(
            name="simulated GPU (CPU tensors)", total_memory=80 * 2**30,
            multi_processor_count=132, major=9, minor=0,
        )

        def synchronize(device=None):
            sim.sync()

        def empty_cache():
            pass  # no caching allocator to release

        def driver_query(answer):
            # Whether the user's code asked is recorded by the tracker (Watch.DRIVER_QUERIES).
            return lambda *args, **kwargs: answer

        def exchange_device(device):
            # `with torch.cuda.device(i):` checks the ordinal and returns the previous one
            if device >= 0:
                sim.normalize(device)
                sim.initialized = True
            return 0

        stream = _Stream()
        patches = {
            "_exchange_device": exchange_device,
            "_maybe_exchange_device": exchange_device,
            "_lazy_init": lambda: None,
            "is_available": driver_query(True),
            "is_initialized": lambda: sim.initialized,
            "device_count": driver_query(sim.gpus),
            "current_device": lambda: 0,
            "set_device": lambda device: None,
            "get_device_name": lambda device=None: props.name,
            "get_device_properties": lambda device=None: props,
            "get_device_capability": lambda device=None: (9, 0),
            "synchronize": synchronize,
            "empty_cache": empty_cache,
            "manual_seed": lambda seed: None,
            "manual_seed_all": lambda seed: None,
            "memory_allocated": lambda device=None: 0,
            "max_memory_allocated": lambda device=None: 0,
            "memory_reserved": lambda device=None: 0,
            "reset_peak_memory_stats": lambda device=None: None,
            "Event": _Event,
            "Stream": _Stream,
            "current_stream": lambda device=None: stream,
            "default_stream": lambda device=None: stream,
            "stream": lambda s=None: s or stream,
        }
        for name, value in patches.items():
            setattr(cuda, name, value)
        # `torch.cuda.memory.empty_cache` is the same function under another module.
        torch.cuda.memory.empty_cache = empty_cache
        # DataLoader(pin_memory=True) pins only when torch.accelerator sees a device, which
        # the CPU wheel does not (and patching torch.accelerator misleads the optimizers):
        # turn the loader's pinning back on; it runs in this thread, under the modes.
        from torch.utils.data import dataloader

        single = dataloader._SingleProcessDataLoaderIter
        single_init = single.__init__

        def init(self, loader):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)  # "no accelerator is found"
                single_init(self, loader)
            if loader.pin_memory:
                self._pin_memory, self._pin_memory_device = True, "cuda"

        single.__init__ = init
        # DataParallel scatters through CUDA streams the CPU wheel lacks; on the simulated
        # device it runs the module where its parameters are, which is what one GPU does.
        torch.nn.DataParallel.forward = lambda self, *a, **k: self.module(*a, **k)

        def data_parallel(module, inputs, device_ids=None, output_device=None, dim=0,
                          module_kwargs=None):
            inputs = inputs if isinstance(inputs, tuple) else (inputs,)
            return module(*inputs, **(module_kwargs or {}))

        torch.nn.parallel.data_parallel = data_parallel
        self.function_mode.__enter__()
        self.dispatch_mode.__enter__()

    def device_of(self, tensor) -> str:
        return self.sim.device_of(tensor)


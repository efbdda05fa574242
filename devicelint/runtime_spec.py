"""What a rule declares for `devicelint confirm`, and the records its probe reads.

A rule that the runtime checker can judge carries its whole runtime part as data in its own
module:

    class CreateThenMove(Rule):
        ...
        @staticmethod
        def probe(run: ProbeRun, rec: LineRecord) -> dict:
            copies = rec.copies.get("h2d")
            if copies is None:
                return run.base("refuted", "the line ran but made no host-to-device copy")
            return run.base("confirmed", f"{copies.count} CPU-built tensor(s) copied")

        runtime = RuntimeSpec(probe=probe, watch=(Watch.MOVES, Watch.FACTORIES))

The runtime (devicelint/runtime) installs the wrappers of every `Watch` the plan's rules
name, attributes what they see to the flagged lines (one `LineRecord` per line), and asks
each rule's probe for a verdict. It names no rule by its code.

This module is torch-free and imports nothing of devicelint: rules import it (the lint
layer), the runtime builds on it.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Protocol


class Watch(enum.Enum):
    """A group of calls the runtime wraps (devicelint/runtime/hooks.py installs each)."""

    MOVES = "moves"  # Tensor.to/.cuda/.cpu: copies, no-op moves; .cpu() as a sync
    FACTORIES = "factories"  # torch.tensor/as_tensor with a device: a host->device copy
    SYNCS = "syncs"  # .item/.tolist/bool/float/int/print of a device tensor; cuda.synchronize
    VIEWS = "views"  # Tensor.view: sizes, strides, and whether it raised
    EMPTY_CACHE = "empty_cache"  # torch.cuda.empty_cache calls
    CLOCK = "clock"  # time.time/perf_counter/monotonic: was device work pending?
    DRIVER_QUERIES = "driver_queries"  # torch.cuda.is_available/device_count (driver init)
    CUDA_STATE = "cuda_state"  # when a flagged line runs: CUDA initialised? driver queried?
    DATA_PARALLEL = "data_parallel"  # nn.DataParallel built at the line, and its first batch


class Family(enum.Enum):
    """A family of device events the finder (devicelint/runtime/finder.py) judges on every
    line of the user's code, flagged or not."""

    CRASH = "crash"  # device-mismatch errors
    HOST_READ = "host-read"  # host syncs per step; device->host copies in loops
    UPLOAD = "upload"  # host->device copies: rows one by one, the same data again
    NON_BLOCKING = "non-blocking"  # non_blocking=True copies from pageable memory
    EMPTY_CACHE = "empty-cache"  # empty_cache() per step


class Find(enum.Enum):
    """What the finder reports on a line the static pass did not flag, each of one family. A
    rule's spec names those its code stands for (`RuntimeSpec.finds`); the finder picks the
    case from what it saw and asks that rule's probe."""

    CPU_MODULE = (Family.CRASH, "the CPU operand is a parameter or buffer of a module")
    CPU_OPERAND = (Family.CRASH, "any other CPU operand")
    HOST_READS = (Family.HOST_READ, "host syncs (.item(), print...) every step")
    READ_BACKS = (Family.HOST_READ, "device->host copies every step")
    ROWS = (Family.UPLOAD, "pieces of one collection copied one by one")
    REPEATS = (Family.UPLOAD, "the same host data copied again")
    PAGEABLE = (Family.NON_BLOCKING, "a non_blocking copy from pageable memory")
    EMPTY_CACHE = (Family.EMPTY_CACHE, "empty_cache() every step")

    @property
    def family(self) -> Family:
        return self.value[0]


# A confirmation's `status`, in report order: the pitfall happened (`found`: on a line the
# static pass did not flag), it did not, the run cannot tell, the line never ran.
STATUSES = ("confirmed", "found", "refuted", "inconclusive", "not-reached")
HAPPENED = ("confirmed", "found")


@dataclass(frozen=True)
class RuntimeSpec:
    """A rule's runtime part.

    probe: (run, rec) -> confirmation dict, built with `run.base(status, summary, **figures)`
        where status is "confirmed", "refuted" or "inconclusive".
    watch: the call groups the probe needs recorded.
    whole_file: on a good fixture (`fixtures/DLnnn/good_*.py`) every line of the file is
        watched and the probe must not confirm the pitfall on any of them. Only for rules whose
        pitfall the runtime alone recognises wherever it happens.
    sim_cannot_judge: why the simulated device answers "inconclusive" for this rule (needs two
        GPUs, asynchronous execution...); empty when the simulated device decides.
    finds: what the finder reports under this rule's code (its probe judges the record).
    covers: the families a static finding of this rule stands for at its line, besides those
        of `finds`: the finder reports none of them there (nor at the call site of a helper).
    """

    probe: Callable[["ProbeRun", "LineRecord"], dict]
    watch: tuple[Watch, ...] = ()
    whole_file: bool = False
    sim_cannot_judge: str = ""
    finds: tuple[Find, ...] = ()
    covers: tuple[Family, ...] = ()

    def covered(self) -> set[Family]:
        """The families a static finding of this rule covers at its line."""
        return {find.family for find in self.finds} | set(self.covers)


# -- what the runtime recorded at one flagged line ------------------------------------------


@dataclass
class CopyStats:
    """Copies of one direction ("h2d", "d2h", "d2d") made at the line."""

    count: int = 0
    bytes: int = 0
    seconds: float = 0.0
    pinned: int = 0  # copies from pinned host memory
    pageable_non_blocking: int = 0  # non_blocking=True copies from pageable memory
    distinct: int = 0  # different host data among the copies
    sources: list = field(default_factory=list)  # keys of the data seen (at most 64)


@dataclass
class SyncStats:
    """Host reads of device values at the line."""

    count: int = 0
    seconds: float = 0.0  # wall time the host was blocked
    kinds: dict[str, int] = field(default_factory=dict)  # "item", "tolist", "print"...


@dataclass
class MoveStats:
    """Tensor.to/.cuda/.cpu calls at the line."""

    count: int = 0
    noop: int = 0  # returned the tensor itself: it was already there
    module: int = 0  # parameters moved by nn.Module.to/.cuda (not the user's own move)
    same_device: int = 0  # a new tensor on the same device (a dtype change)


@dataclass
class ViewSample:
    size: list[int]
    stride: list[int]
    target: list[int]
    failed: bool = False
    result: Optional[list[int]] = None


@dataclass
class ViewStats:
    count: int = 0
    failed: int = 0
    samples: list[ViewSample] = field(default_factory=list)  # distinct shapes, at most 20


@dataclass
class RaisedError:
    type: str
    message: str
    count: int = 1


@dataclass
class CallStats:
    """Calls of one function at the line (torch.cuda.empty_cache)."""

    count: int = 0
    seconds: float = 0.0


@dataclass
class StampStats:
    """Timestamps taken at the line and whether device work was pending at each."""

    count: int = 0
    pending: int = 0
    lag_seconds: float = 0.0  # how long the GPU kept running after them (real GPU only)


@dataclass
class CudaState:
    """The CUDA state when the line first ran."""

    initialized: bool
    driver_queried: bool


@dataclass
class LineRecord:
    reached: bool = False
    first: Optional[float] = None  # clock() of the first and last event at the line
    last: Optional[float] = None
    copies: dict[str, CopyStats] = field(default_factory=dict)
    syncs: SyncStats = field(default_factory=SyncStats)
    moves: MoveStats = field(default_factory=MoveStats)
    views: ViewStats = field(default_factory=ViewStats)
    errors: list[RaisedError] = field(default_factory=list)
    empty_cache: CallStats = field(default_factory=CallStats)
    stamps: StampStats = field(default_factory=StampStats)
    cuda_state: Optional[CudaState] = None


class ProbeRun(Protocol):
    """The run being judged, as a probe sees it: the device, the cost table, GPU timers, the
    other records of the file (devicelint/runtime/probes.py implements it)."""

    device: str  # "cuda" or "sim"
    estimated: bool  # times come from the cost table (the simulated device)
    table: dict[str, Any]  # the cost table (devicelint/runtime/costs.json)

    def base(self, status: str, summary: str, **figures) -> dict: ...
    def copy_ms(self, copies: CopyStats, kind: str) -> float: ...
    def time_copy(self, nbytes: int, pinned: bool) -> float: ...
    def time_fill(self, nbytes: int) -> float: ...
    def errors_elsewhere(self) -> list[tuple[int, str]]: ...
    def records_in_file(self) -> list[tuple[int, LineRecord]]: ...
    def line(self) -> int: ...
    def latent_view_failure(self, sample: ViewSample) -> Optional[dict]: ...
    def gpu_count(self) -> int: ...
    def data_parallel_batches(self) -> list[tuple[Any, Any]]: ...
    def compare_data_parallel(self, module: Any, batch: Any, gpus: int) -> dict: ...


_WEIGHT_TYPES = re.compile(r"Input type \((\S+)\) and (?:weight|bias) type \((\S+)\)")


def is_device_mismatch(message: str) -> bool:
    """PyTorch's errors for tensors on different devices: the generic "Expected all tensors
    to be on the same device", the RNN kernels' ("Input and parameter tensors are not at the
    same device", cuDNN's "to have the same device as tensor for argument"), and the
    convolutions' "Input type (torch.cuda.FloatTensor) and weight type (torch.FloatTensor)
    should be the same" (when the two types differ by device, not only by dtype)."""
    if "same device" in message:
        return True
    types = _WEIGHT_TYPES.search(message)
    return types is not None and (".cuda." in types.group(1)) != (".cuda." in types.group(2))


def device_mismatch(run: ProbeRun, rec: LineRecord) -> dict:
    """Confirmed when the line raised PyTorch's "same device" error; inconclusive when the
    file raised it elsewhere (the rule flagged where the tensors meet, the error came from
    the module's forward, say)."""
    errors = [e for e in rec.errors if is_device_mismatch(e.message)]
    if errors:
        first = errors[0]
        return run.base("confirmed", f"raised {first.type}: {first.message}",
                        count=sum(e.count for e in errors), error=first.message)
    elsewhere = run.errors_elsewhere()
    if elsewhere:
        line, message = elsewhere[0]
        return run.base("inconclusive", f"a device mismatch was raised at line {line} of this "
                        f"file, not at this line: {message}", error=message, error_line=line)
    return run.base("refuted", "the line ran with every tensor on one device")

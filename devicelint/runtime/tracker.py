"""Attribute copies, syncs, views and errors to the flagged source lines.

Cheap by design: only the handful of tensor methods the plan's rules need are wrapped, and a
wrapped call does real work only when the first frame in the user's files sits on a flagged
line. "Was the line reached" comes from sys.monitoring LINE events (Python >= 3.12), each
disabled after its first firing, or from a trace function limited to the user's files on older
Pythons. Errors come from RAISE events (or the trace function's exception events), so an error
that the user's code catches is still seen.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Optional

import torch

from devicelint.runtime.finder import CHAIN as _CHAIN
from devicelint.runtime.plan import ALL_LINES
from devicelint.runtime_spec import LineRecord, RaisedError

clock = time.perf_counter  # bound before any patching of the time module (DL012)

ERROR_MARKERS = (
    "Expected all tensors to be on the same device",
    "view size is not compatible",
    "device type tensor to numpy",
    "Expected all tensors to be on",
    "invalid device ordinal",
    "on the same device as the indexed tensor",
    # Other kernels' device checks on a real GPU: cuDNN RNNs ("Expected tensor for argument
    # #1 'input' to have the same device as tensor for argument #2 'weight'"), the RNN
    # front end ("Input and parameter tensors are not at the same device")
    "same device",
    # A CPU convolution's weight on a CUDA input ("Input type (torch.cuda.FloatTensor) and
    # weight type (torch.FloatTensor) should be the same"); runtime_spec.is_device_mismatch
    # tells it from a dtype mismatch
    "should be the same",
)


def _off_host(tensor) -> bool:
    return isinstance(tensor, torch.Tensor) and not tensor.is_cpu


@dataclass
class CapturedDataParallel:
    """A DataParallel built at a flagged line, and the first batch it was called with."""

    module: Any
    batch: Any = None


class Tracker:
    def __init__(self, lines: dict[str, object], device_of: Callable, sim=None,
                 finder=None) -> None:
        """`device_of(tensor)`: its device as a string ("cpu", "cuda:0"): the simulated
        device's tag with `sim`, else the tensor's own (`str(tensor.device)`)."""
        # path -> {line: head line of its flagged call}, or ALL_LINES to watch every line
        self.lines = lines
        self.device_of = device_of
        self.sim = sim
        self.records: dict[tuple[str, int], LineRecord] = {}
        self._paths: dict[str, Optional[str]] = {}
        self._both: dict[str, tuple] = {}  # file name -> (watched file, finder's user file)
        # The frame that runs the user's code (the child's): no frame from there outwards is
        # the user's, so a walk stops there instead of at the bottom of the stack.
        self.bottom = None
        self._local = threading.local()
        self._seen_errors: dict[int, BaseException] = {}
        # Called with (tracker, record) when a watched line first runs (Watch.CUDA_STATE).
        self.line_hooks: list[Callable] = []
        self.captured_dp: dict[tuple[str, int], list[CapturedDataParallel]] = {}
        # Errors raised in a watched file but on a line that is not flagged: path -> [(line, msg)]
        self.file_errors: dict[str, list] = {}
        # torch.cuda.is_available()/device_count() called by the user's code (DL013)
        self.driver_queried = False
        # Records every event of the user's code, flagged or not (runtime/finder.py)
        self.finder = finder
        if sim is None:
            # A real device: `device_of` reads the tensor's own device, and so can is_cuda,
            # from its flag (a fifth of the cost of str(t.device), paid by every .item(),
            # bool(), int() of the process, torch's own on CPU tensors included).
            self.is_cuda = _off_host

    # -- attribution -------------------------------------------------------------------
    def _user_path(self, filename: str) -> Optional[str]:
        try:
            return self._paths[filename]
        except KeyError:
            path = os.path.realpath(filename) if not filename.startswith("<") else filename
            found = path if path in self.lines else None
            self._paths[filename] = found
            return found

    def user_frame(self, frame):
        """The first frame, walking outwards, that runs in one of the watched files."""
        depth = 0
        while frame is not None and depth < 64:
            path = self._user_path(frame.f_code.co_filename)
            if path is not None:
                return path, frame.f_lineno
            frame = frame.f_back
            depth += 1
        return None

    def flagged_caller(self, frame) -> Optional[tuple[str, int]]:
        """The innermost frame, walking outwards, that sits on a flagged line: an error raised
        in a module's forward (in the same file) belongs to the flagged call of that module."""
        depth = 0
        while frame is not None and depth < 64:
            path = self._user_path(frame.f_code.co_filename)
            if path is not None:
                wanted = self.lines[path]
                if wanted is not ALL_LINES and frame.f_lineno in wanted:
                    return path, wanted[frame.f_lineno]
            frame = frame.f_back
            depth += 1
        return None

    def container_site(self, frame, tb=None) -> Optional[tuple[str, int]]:
        """A module called on the stack that its caller keeps in a plain list/tuple/dict
        attribute (which `Module.to` skips): the flagged line that assigns that attribute
        (`self.blocks = [...]`), read from the source of the watched files. The frames the
        error has already left (the traceback a trace function is given) count too."""
        frames = []
        while tb is not None and len(frames) < 128:
            frames.append(tb.tb_frame)
            tb = tb.tb_next
        depth = 0
        while frame is not None and depth < 128:
            frames.append(frame)
            frame = frame.f_back
            depth += 1
        called = []
        for frame in frames:
            module = frame.f_locals.get("self") if frame.f_code.co_name in (
                "_call_impl", "forward") else None
            if isinstance(module, torch.nn.Module) and all(module is not m for m in called):
                called.append(module)
        for inner in called:
            for outer in called:
                if outer is inner:
                    continue
                for name, value in vars(outer).items():
                    if isinstance(value, dict):
                        items = list(value.values())
                    elif isinstance(value, (list, tuple)):
                        items = value
                    else:
                        continue
                    if any(item is inner for item in items):
                        site = self._assignment_site(name)
                        if site is not None:
                            return site
        return None

    def _assignment_site(self, attribute: str) -> Optional[tuple[str, int]]:
        import linecache
        import re

        pattern = re.compile(rf"\bself\.{re.escape(attribute)}\s*(:[^=]*)?=[^=]")
        for path, wanted in self.lines.items():
            if wanted is ALL_LINES:
                continue
            for line, head in wanted.items():
                if line == head and pattern.search(linecache.getline(path, line)):
                    return path, head
        return None

    def site(self, frame) -> Optional[tuple[str, int]]:
        """(path, line) if this call should be recorded, else None."""
        if getattr(self._local, "busy", False):
            return None  # inside another recorded call: count the outer one only
        return self._flagged_site(frame)

    def sites(self, frame) -> list:
        """Where a call is recorded: its flagged site (`site`) and, with the finder on, the
        innermost user line. Empty when neither: the wrapper then only calls through."""
        if getattr(self._local, "busy", False):
            return []
        finder = self.finder
        site, spot = self._walk(frame, finder)
        out = []
        if site is not None:
            out.append((self.records, site))
        if spot is not None:
            finder.note(spot)
            out.append((finder.records, spot[0]))
        return out

    def touch(self, sites) -> list[LineRecord]:
        """The records of `sites` (see `sites`), marked as reached now."""
        now = clock()
        recs = []
        for store, key in sites:
            rec = store.get(key)
            if rec is None:  # (a record, once made, is reached and has its first event)
                rec = self._record_in(store, key, now)
            rec.last = now
            recs.append(rec)
        return recs

    def _flagged_site(self, frame) -> Optional[tuple[str, int]]:
        return self._walk(frame, None)[0]

    def _frame_paths(self, filename: str) -> tuple:
        """(the watched file, the finder's user file) that `filename` is, each or None."""
        try:
            return self._both[filename]
        except KeyError:
            finder = self.finder
            paths = (self._user_path(filename),
                     finder.user_path(filename) if finder is not None else None)
            self._both[filename] = paths
            return paths

    def _walk(self, frame, finder) -> tuple:
        """One walk out from `frame`, shared by the two stores (a wrapped call pays one):

        - the flagged site: the innermost frame in a watched file (within 64 frames); its
          line's head if that line is flagged, else (a helper of the same file called from
          a flagged line: DL004 reports a sync in `accuracy()` at its call in the step loop)
          the innermost frame sitting on a flagged line (whole-file watches skipped);
        - with the finder: its spot, ((path, line) of the innermost user frame, (up to three
          user callers...)), or None when no user frame is within 64 frames.
        """
        lines = self.lines
        both = self._both
        bottom = self.bottom
        flagged = None
        looking = True  # the flagged site is still sought
        first = True  # the next watched frame is the innermost one
        seeking = finder is not None  # the finder's chain is still open
        chain: list = []
        depth = 0
        while frame is not None and depth < 96 and (looking or seeking):
            if frame is bottom:
                break
            filename = frame.f_code.co_filename
            watched, user = both.get(filename) or self._frame_paths(filename)
            if depth >= 64:
                looking = False
                if user is None and not chain:
                    seeking = False
            # (most frames are libraries': neither branch; f_lineno is read once, if at all)
            if (looking and watched is not None) or (seeking and user is not None):
                line = frame.f_lineno
                if looking and watched is not None:
                    wanted = lines[watched]
                    if wanted is ALL_LINES:
                        if first:
                            flagged, looking = (watched, line), False
                    else:
                        head = wanted.get(line)
                        if head is not None:
                            flagged, looking = (watched, head), False
                    first = False
                if seeking and user is not None:
                    where = (user, line)
                    # (a comprehension's frame and its function's share the line: one entry)
                    if not chain or chain[-1] != where:
                        chain.append(where)
                        seeking = len(chain) < _CHAIN
            frame = frame.f_back
            depth += 1
        return flagged, ((chain[0], tuple(chain[1:])) if chain else None)

    def record(self, site) -> LineRecord:
        return self._record_in(self.records, site)

    @staticmethod
    def _record_in(store: dict, site, now=None) -> LineRecord:
        rec = store.get(site)
        if rec is None:
            rec = store[site] = LineRecord()
        rec.reached = True
        if now is None:
            now = clock()
        if rec.first is None:
            rec.first = now
        rec.last = now
        return rec

    def busy(self, flag: bool) -> None:
        self._local.busy = flag

    def is_cuda(self, tensor) -> bool:
        """On a device, not the host (the simulated device's tag; see __init__ otherwise)."""
        return isinstance(tensor, torch.Tensor) and self.device_of(tensor) != "cpu"

    # -- installation ------------------------------------------------------------------
    def start(self) -> None:
        """Start watching lines and errors (the wrappers are installed by hooks.install)."""
        monitoring = getattr(sys, "monitoring", None)
        if monitoring is not None:
            self._install_sys_monitoring(monitoring)
        else:
            self._install_settrace()

    def _install_sys_monitoring(self, monitoring) -> None:
        tool = None
        for candidate in (4, 3, 5, 1, 2):
            try:
                monitoring.use_tool_id(candidate, "devicelint")
                tool = candidate
                break
            except ValueError:
                continue
        if tool is None:
            self._install_settrace()
            return
        disable = monitoring.DISABLE
        lines = self.lines

        def on_line(code, line):
            path = self._user_path(code.co_filename)
            if path is not None:
                wanted = lines[path]
                if wanted is ALL_LINES:
                    self.line_reached(path, line)
                elif line in wanted:
                    self.line_reached(path, wanted[line])
            return disable

        def on_raise(code, offset, exc):
            self.error_raised(exc, sys._getframe(1))

        events = monitoring.events
        monitoring.register_callback(tool, events.LINE, on_line)
        monitoring.register_callback(tool, events.RAISE, on_raise)
        monitoring.set_events(tool, events.LINE | events.RAISE)

    def _install_settrace(self) -> None:
        lines = self.lines
        finder = self.finder

        def local(frame, event, arg):
            if event == "line":
                path = self._user_path(frame.f_code.co_filename)
                wanted = lines.get(path) if path is not None else None
                if wanted is ALL_LINES:
                    self.line_reached(path, frame.f_lineno)
                elif wanted is not None and frame.f_lineno in wanted:
                    self.line_reached(path, wanted[frame.f_lineno])
            elif event == "exception":
                self.error_raised(arg[1], frame, arg[2])
            return local

        def global_trace(frame, event, arg):
            filename = frame.f_code.co_filename
            if self._user_path(filename) is not None:
                return local
            if finder is not None and finder.user_path(filename) is not None:
                frame.f_trace_lines = False  # only its errors are wanted: no line events
                return local
            return None

        sys.settrace(global_trace)
        threading.settrace(global_trace)

    def uninstall(self) -> None:
        monitoring = getattr(sys, "monitoring", None)
        if monitoring is not None:
            for tool in range(6):
                if monitoring.get_tool(tool) == "devicelint":
                    monitoring.set_events(tool, 0)
                    monitoring.free_tool_id(tool)
        sys.settrace(None)
        threading.settrace(None)

    # -- events ------------------------------------------------------------------------
    def line_reached(self, path: str, line: int) -> None:
        rec = self.records.get((path, line))
        if rec is None or not rec.reached:
            rec = self.record((path, line))
            for hook in self.line_hooks:
                hook(self, rec)

    def error_raised(self, exc, frame, tb=None) -> None:
        if not isinstance(exc, (RuntimeError, TypeError, ValueError)):
            return
        if id(exc) in self._seen_errors:
            return
        message = str(exc)
        if not any(marker in message for marker in ERROR_MARKERS):
            return
        if len(self._seen_errors) > 10000:
            self._seen_errors.clear()
        self._seen_errors[id(exc)] = exc  # keep it alive so the id is not reused
        if self.finder is not None:
            spot = self.finder.note_error(self, frame, tb, message)
            if spot is not None:
                self._add_error(self._record_in(self.finder.records, spot), exc, message)
        found = self.user_frame(frame)
        if found is None:
            return
        path, line = found
        wanted = self.lines[path]
        if wanted is not ALL_LINES:
            flagged = self.flagged_caller(frame) or self.container_site(frame, tb)
            if flagged is None:
                self.file_errors.setdefault(path, []).append((line, message))
                return
            found = flagged
        self._add_error(self.record(found), exc, message)

    @staticmethod
    def _add_error(rec: LineRecord, exc, message: str) -> None:
        for error in rec.errors:
            if error.message == message:
                error.count += 1
                return
        rec.errors.append(RaisedError(type(exc).__name__, message))

"""Start the instrumented child with a time limit, and make sure it never outlives devicelint.
Torch-free.

The child runs in its own session (so that one signal ends the user's subprocesses too, and
the terminal's Ctrl-C reaches it only through us). Three things tie its life to ours:
- the child asks the kernel for a parent-death signal (child.py, Linux), which also covers
  SIGKILL of devicelint; on it the child kills its own process group;
- `guard_signals()` (installed by `devicelint confirm`) turns SIGTERM and SIGHUP into "kill
  every child's group, then exit 128+signal", and Ctrl-C into "stop the children, report what
  they saw, exit 130" (a second Ctrl-C kills at once);
- whatever way a run ends, its whole process group is killed before `run_child` returns.

The child's stderr is read through a pipe into a bounded buffer: only the last
`STDERR_KEEP` bytes are kept, however much the user's code writes.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Iterator, Optional

from devicelint.runtime.plan import Plan

# After SIGTERM (time limit) or SIGINT (Ctrl-C) the child still judges the lines it saw and
# writes its result; after this many seconds its group is killed.
GRACE_SECONDS = 20
STDERR_TAIL = 2000  # characters of stderr kept in a run's report
STDERR_KEEP = 64 * 1024  # bytes of stderr held in memory while the child runs
PARENT_PID_ENV = "DEVICELINT_PARENT_PID"  # read (and removed) by the child's bootstrap
STOP_SIGNALS = ("SIGTERM", "SIGHUP", "SIGINT")


@dataclass
class ChildRun:
    result: Optional[dict]
    exit_code: Optional[int]
    timed_out: bool
    interrupted: bool
    stderr_tail: str
    seconds: float
    stderr_bytes: int = 0  # everything the child wrote to stderr
    stderr_truncated: bool = False  # stderr_tail is only the end of it
    skipped: bool = False  # never started: devicelint was stopping


class _Children:
    """The children now running, so that a signal to devicelint can end them all. Written
    by the threads that run children, read by the signal handler (main thread): plain dict
    and attribute updates, atomic under the GIL; no lock, which a handler could deadlock on."""

    def __init__(self) -> None:
        self.live: dict[int, subprocess.Popen] = {}
        self.stopping: Optional[int] = None  # the signal that is ending devicelint
        self.interrupted_at: Optional[float] = None  # first Ctrl-C: children asked to stop

    def kill_all(self) -> None:
        for proc in list(self.live.values()):
            _killpg(proc.pid)


CHILDREN = _Children()


def _project_root() -> str:
    return os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class _Tail:
    """Reads a pipe to its end on a thread, keeping only the last `keep` bytes."""

    def __init__(self, fd: int, keep: int) -> None:
        self.fd, self.keep = fd, keep
        self.data = bytearray()
        self.total = 0
        self.thread = threading.Thread(target=self._read, name="devicelint-stderr", daemon=True)
        self.thread.start()

    def _read(self) -> None:
        try:
            while True:
                chunk = os.read(self.fd, 65536)
                if not chunk:
                    break
                self.total += len(chunk)
                self.data += chunk
                if len(self.data) > 2 * self.keep:
                    del self.data[:-self.keep]
        except OSError:
            pass
        finally:
            os.close(self.fd)

    def finish(self, wait: float = 5.0) -> tuple[str, int]:
        """(the last bytes as text, bytes written in all). A process outside the child's
        group may still hold the pipe: do not wait for it forever."""
        self.thread.join(wait)
        return bytes(self.data[-self.keep:]).decode("utf-8", "replace"), self.total


def run_child(plan: Plan, timeout: float, quiet_output: bool = False) -> ChildRun:
    if CHILDREN.stopping is not None or CHILDREN.interrupted_at is not None:
        return ChildRun(None, None, False, True, "", 0.0, skipped=True)
    with tempfile.TemporaryDirectory(prefix="devicelint-confirm-") as folder:
        plan_path = os.path.join(folder, "plan.json")
        result_path = os.path.join(folder, "result.json")
        with open(plan_path, "w", encoding="utf-8") as handle:
            handle.write(plan.to_json())
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [_project_root(), env.get("PYTHONPATH")]))
        env.setdefault("PYTHONUNBUFFERED", "1")
        env[PARENT_PID_ENV] = str(os.getpid())
        started = time.perf_counter()
        timed_out = interrupted = False
        # The user's prints go to our stderr, so that stdout carries only the report.
        stdout = subprocess.DEVNULL if quiet_output else _stderr_or_devnull()
        read_end, write_end = os.pipe()
        proc = None
        tail = None
        try:
            # The kernel's parent-death signal follows the *thread* that starts the child:
            # run_child's threads (confirm's pool) live until every run has ended.
            try:
                proc = subprocess.Popen(
                    [sys.executable, "-m", "devicelint.runtime.child", plan_path, result_path],
                    env=env, stdout=stdout, stderr=write_end, start_new_session=True,
                )
            finally:
                os.close(write_end)
            CHILDREN.live[proc.pid] = proc
            tail = _Tail(read_end, STDERR_KEEP)
            read_end = -1
            if CHILDREN.stopping is not None:  # a signal came while it started
                _killpg(proc.pid)
            timed_out, interrupted = _wait(proc, timeout)
        except KeyboardInterrupt:  # no guard_signals() installed (library use, tests)
            interrupted = True
            if proc is not None:
                _stop(proc, signal.SIGINT)
        finally:
            if read_end >= 0:
                os.close(read_end)
            if proc is not None:
                # The user's script may have started processes (daemons, loader workers)
                # that outlive it: end the whole group, whatever way the child ended.
                _kill_group(proc)
                CHILDREN.live.pop(proc.pid, None)
        text, total = tail.finish() if tail is not None else ("", 0)
        text = text[-STDERR_TAIL:]
        truncated = total > len(text.encode("utf-8", "replace"))
        if proc.returncode is not None and proc.returncode < 0 and not (timed_out or interrupted):
            # A crash in native code leaves no Python traceback: name the signal.
            text += f"\n[devicelint] the child was killed: exit code {describe_exit(proc.returncode)}\n"
        result = None
        if os.path.exists(result_path):
            try:
                with open(result_path, encoding="utf-8") as handle:
                    result = json.load(handle)
            except (OSError, ValueError):
                result = None
        return ChildRun(result, proc.returncode, timed_out, interrupted, text,
                        round(time.perf_counter() - started, 3), total, truncated)


def _wait(proc: subprocess.Popen, timeout: float) -> tuple[bool, bool]:
    """Wait for the child; (timed out, interrupted). Polls in short slices so that a Ctrl-C
    caught by guard_signals() (which only asks the child to stop) is followed by a kill
    after the grace period."""
    deadline = time.monotonic() + timeout
    stop_sent = None  # monotonic time of the SIGTERM sent at the time limit
    while True:
        try:
            proc.wait(timeout=0.2)
            break
        except subprocess.TimeoutExpired:
            pass
        now = time.monotonic()
        if CHILDREN.interrupted_at is not None:
            if now - CHILDREN.interrupted_at > GRACE_SECONDS:
                _killpg(proc.pid)
                proc.wait()
                break
        elif stop_sent is None and now >= deadline:
            stop_sent = now
            _signal(proc.pid, signal.SIGTERM)
        elif stop_sent is not None and now - stop_sent > GRACE_SECONDS:
            _killpg(proc.pid)
            proc.wait()
            break
    return stop_sent is not None, CHILDREN.interrupted_at is not None


@contextmanager
def guard_signals() -> Iterator[None]:
    """While devicelint runs children: SIGTERM/SIGHUP kill every child's process group and
    exit 128+signal; the first Ctrl-C asks the children to stop (they write what they saw,
    the report is printed, exit 130), a second one kills them and exits 130 at once. Only
    the main thread can install handlers; elsewhere this does nothing."""
    CHILDREN.stopping = CHILDREN.interrupted_at = None
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    names = [name for name in STOP_SIGNALS if hasattr(signal, name)]
    previous = {name: signal.getsignal(getattr(signal, name)) for name in names}
    for name in names:
        signal.signal(getattr(signal, name), _on_signal)
    try:
        yield
    finally:
        for name, handler in previous.items():
            signal.signal(getattr(signal, name), handler)


def _on_signal(signum: int, frame) -> None:
    if signum == signal.SIGINT and CHILDREN.interrupted_at is None and CHILDREN.live:
        CHILDREN.interrupted_at = time.monotonic()
        for proc in list(CHILDREN.live.values()):
            _signal(proc.pid, signal.SIGINT)
        return
    CHILDREN.stopping = signum
    CHILDREN.kill_all()
    raise SystemExit(130 if signum == signal.SIGINT else 128 + signum)


def interrupted() -> bool:
    """Whether a Ctrl-C asked the runs to stop (the report says so; exit 130)."""
    return CHILDREN.interrupted_at is not None


def _stderr_or_devnull():
    try:
        sys.stderr.fileno()
    except (AttributeError, OSError, ValueError):
        return subprocess.DEVNULL  # e.g. under click's CliRunner
    return sys.stderr


def _signal(pid: int, signum: int) -> None:
    try:
        os.kill(pid, signum)
    except (ProcessLookupError, PermissionError):
        pass


def _killpg(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _kill_group(proc: subprocess.Popen) -> None:
    _killpg(proc.pid)
    if proc.returncode is None:
        proc.wait()


def describe_exit(code: Optional[int]) -> str:
    """`-11 (killed by SIGSEGV)` for a child that a signal ended, else the number."""
    if code is not None and code < 0:
        try:
            return f"{code} (killed by {signal.Signals(-code).name})"
        except ValueError:
            pass
    return str(code)


def _stop(proc: subprocess.Popen, first: int) -> None:
    """Ask the child to stop (it writes what it saw), then kill its group if it lingers."""
    _signal(proc.pid, first)
    try:
        proc.wait(timeout=GRACE_SECONDS)
    except (subprocess.TimeoutExpired, KeyboardInterrupt):
        pass
    _kill_group(proc)

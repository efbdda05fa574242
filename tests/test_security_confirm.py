"""Issue 19, the `devicelint confirm` items: confirm runs only what it should (6), the child
never outlives devicelint (7), the child's stderr is not read whole into memory (9), exit 2
when nothing ran and usage checked before the run (12), and every report says what really
happened: the device, lines never reached, notebook cells (14). docs/security.md describes
what these guarantee.

All on the simulated device. A test that starts a child pays torch's import in it (about
7 s on the 2-core CI box); the others fail before any child starts.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from devicelint.runtime.command import confirm

POSIX = pytest.mark.skipif(os.name != "posix", reason="process groups and signals: POSIX")

# A flagged line (DL007: a CPU-built tensor copied to the GPU) and a trace of the run.
FLAGGED = """\
import os
import torch
open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "{marker}"), "w").close()
x = torch.ones(2).cuda()
"""


def _flagged(path: Path, marker: str = "ran") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(FLAGGED.format(marker=path.stem + "." + marker))
    return path


def _ran(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.rglob("*.ran"))


def _devicelint(args: list[str], cwd: Path, timeout: float = 120, **kwargs):
    env = {**os.environ, "NO_COLOR": "1", "CUDA_VISIBLE_DEVICES": ""}
    return subprocess.run([sys.executable, "-m", "devicelint", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=timeout, **kwargs)


# --- item 6: confirm runs only what the user names or discovery selects -------------------

def test_confirm_with_neither_paths_nor_command_runs_nothing(tmp_path: Path, monkeypatch) -> None:
    _flagged(tmp_path / "train.py")
    monkeypatch.chdir(tmp_path)
    started = time.perf_counter()
    result = CliRunner().invoke(confirm, ["--device", "sim"])
    assert result.exit_code == 2, result.output
    assert "devicelint confirm src/ -- python train.py" in result.output  # how to use it
    assert _ran(tmp_path) == []
    assert time.perf_counter() - started < 5  # no child was started


@pytest.mark.slow
def test_confirm_paths_run_only_what_discovery_selects_and_list_it_first(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.devicelint]\nextend-exclude = ["scratch"]\n')
    (tmp_path / ".gitignore").write_text("ignored/\n")
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=False)
    _flagged(tmp_path / "scripts" / "train.py")
    # ruff's default excludes (venv, node_modules, dist; not build since ruff 0.17).
    for skipped in ("venv/lib/bad.py", "dist/bad.py", "node_modules/x/bad.py",
                    "ignored/bad.py", "scratch/bad.py"):
        _flagged(tmp_path / skipped)
    proc = _devicelint(["confirm", ".", "--device", "sim"], tmp_path)
    assert _ran(tmp_path) == ["train.ran"], proc.stderr[-2000:]
    # What runs is listed (on stderr) before it runs, and nothing else is.
    listing = proc.stderr.split("running 1 file as scripts", 1)
    assert len(listing) == 2, proc.stderr[-2000:]
    assert os.path.join("scripts", "train.py") in listing[1].splitlines()[1]
    assert "bad.py" not in proc.stderr + proc.stdout
    assert "DL007 [confirmed]" in proc.stdout


@POSIX
@pytest.mark.slow
def test_listed_and_reported_paths_carry_no_control_characters(tmp_path: Path) -> None:
    # A file name is the attacker's: a newline and `::error::` would be a GitHub Actions
    # workflow command in the list of what runs (stderr) or in the report (stdout).
    script = tmp_path / "x\n::error file=ci.yml::pwned.py"
    script.write_text("import torch\nx = torch.ones(2).cuda()\n")
    proc = _devicelint(["confirm", ".", "--device", "sim"], tmp_path)
    assert "DL007 [confirmed]" in proc.stdout, proc.stderr[-2000:]
    lines = (proc.stdout + proc.stderr).splitlines()
    assert not [line for line in lines if line.startswith("::")], lines
    assert "x\\n::error file=ci.yml::pwned.py" in proc.stderr


# --- item 7: the child never outlives devicelint --------------------------------------------

SPAWNS = """\
import os, subprocess, sys, time
import torch
sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
with open(os.environ["PIDFILE"] + ".tmp", "w") as handle:
    handle.write(f"{os.getpid()} {sleeper.pid}")
os.replace(os.environ["PIDFILE"] + ".tmp", os.environ["PIDFILE"])
for step in range(6000):
    torch.ones(2).cuda()
    time.sleep(0.1)
"""


def _alive(pid: int) -> bool:
    """Running, and not a zombie waiting for a parent (PID 1 may never reap it here)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except OSError:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        return True


@POSIX
@pytest.mark.parametrize("signame", ["SIGTERM", "SIGHUP", "SIGKILL", "SIGINT"])
@pytest.mark.slow
def test_the_child_and_its_children_die_with_devicelint(tmp_path: Path, signame: str) -> None:
    script = tmp_path / "train.py"
    script.write_text(SPAWNS)
    pidfile = tmp_path / "pids"
    env = {**os.environ, "PIDFILE": str(pidfile), "NO_COLOR": "1", "CUDA_VISIBLE_DEVICES": ""}
    parent = subprocess.Popen(
        [sys.executable, "-m", "devicelint", "confirm", str(script), "--device", "sim",
         "--", sys.executable, str(script)],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        deadline = time.monotonic() + 120
        while not pidfile.exists() and time.monotonic() < deadline:
            assert parent.poll() is None, parent.communicate()
            time.sleep(0.1)
        pids = [int(p) for p in pidfile.read_text().split()]
        assert all(_alive(pid) for pid in pids)
        parent.send_signal(getattr(signal, signame))
        out, err = parent.communicate(timeout=60)
    finally:
        if parent.poll() is None:
            parent.kill()
    deadline = time.monotonic() + 5
    while any(_alive(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert [pid for pid in pids if _alive(pid)] == [], "the run outlived devicelint"
    expected = {"SIGKILL": -9, "SIGINT": 130}.get(signame, 128 + getattr(signal, signame))
    assert parent.returncode == expected, err[-2000:]
    assert "Traceback" not in err, err[-2000:]
    if signame == "SIGINT":  # Ctrl-C: what the run saw is still reported
        assert "interrupted" in out, out


# --- item 9: the child's stderr is kept with a cap --------------------------------------------

MEASURE = """\
import json, resource, sys
from devicelint.finding import Finding
from devicelint.runtime.launch import run_child
from devicelint.runtime.plan import plan_for

script = sys.argv[1]
finding = Finding("DL007", "x", script, 4, 1, 4, 1, "m")
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
child = run_child(plan_for([finding], [script], "sim"), 120, quiet_output=True)
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"grew_kb": after - before, "bytes": child.stderr_bytes,
                  "truncated": child.stderr_truncated, "tail": child.stderr_tail,
                  "result": child.result is not None}))
"""
STDERR_MB = 64


@POSIX
@pytest.mark.slow
def test_child_stderr_is_capped_and_the_parent_does_not_grow(tmp_path: Path) -> None:
    script = tmp_path / "noisy.py"
    script.write_text(textwrap.dedent(f"""\
        import sys
        import torch
        line = b"x" * 1023 + b"\\n"
        x = torch.ones(2).cuda()
        for _ in range({STDERR_MB} * 1024):
            sys.stderr.buffer.write(line)
        sys.stderr.write("the last line\\n")
    """))
    measure = tmp_path / "measure.py"
    measure.write_text(MEASURE)
    proc = subprocess.run([sys.executable, str(measure), str(script)], capture_output=True,
                          text=True, timeout=180, env={**os.environ, "CUDA_VISIBLE_DEVICES": ""})
    assert proc.returncode == 0, proc.stderr[-2000:]
    data = json.loads(proc.stdout)
    assert data["result"]
    assert data["bytes"] == STDERR_MB * 2**20 + len("the last line\n")
    assert data["truncated"] and data["tail"].endswith("the last line\n")
    # Reading it whole (the old way) grew the parent by the whole volume.
    assert data["grew_kb"] < 32 * 1024, f"parent grew {data['grew_kb']} kB"


# --- item 12: exit 2 when nothing ran; usage checked before the run -------------------------

@pytest.mark.parametrize("command", [
    ["bash", "run.sh"], [sys.executable, "-c", "import torch"], [sys.executable, "missing.py"],
    ["python", "-"],
])
def test_unsupported_command_is_a_usage_error(tmp_path: Path, monkeypatch, command) -> None:
    _flagged(tmp_path / "train.py")
    (tmp_path / "run.sh").write_text("python train.py\n")
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(confirm, ["train.py", "--device", "sim", "--", *command])
    assert result.exit_code == 2, result.output
    assert "cannot run" in result.output
    assert _ran(tmp_path) == []


@pytest.mark.parametrize("value", ["nan", "0", "-1", "inf"])
def test_timeout_must_be_positive_and_finite(tmp_path: Path, value: str) -> None:
    script = _flagged(tmp_path / "train.py")
    result = CliRunner().invoke(confirm, [str(script), "--timeout", value, "--device", "sim",
                                          "--", sys.executable, str(script)])
    assert result.exit_code == 2, result.output
    assert "--timeout" in result.output
    assert _ran(tmp_path) == []


@pytest.mark.parametrize("option", ["-o", "--html"])
def test_output_targets_are_checked_before_the_run(tmp_path: Path, option: str) -> None:
    script = _flagged(tmp_path / "train.py")
    target = tmp_path / "missing" / "report.out"
    result = CliRunner().invoke(confirm, [str(script), option, str(target), "--device", "sim",
                                          "--", sys.executable, str(script)])
    assert result.exit_code == 2, result.output
    assert "no such directory" in result.output
    assert _ran(tmp_path) == []  # failed at once, not after the run


def _fake_torch(folder: Path, body: str) -> None:
    (folder / "torch").mkdir(parents=True)
    (folder / "torch" / "__init__.py").write_text(body)


@pytest.mark.parametrize("torch_body, message", [
    ("raise ModuleNotFoundError(\"No module named 'torch'\", name='torch')\n",
     "torch cannot be imported"),
    ("import os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n", "wrote no result"),
])
def test_no_run_exits_2(tmp_path: Path, monkeypatch, torch_body: str, message: str) -> None:
    # A `torch` first on the path that is missing, or kills the child before any result.
    _fake_torch(tmp_path / "fake", torch_body)
    monkeypatch.setenv("PYTHONPATH", str(tmp_path / "fake"))
    script = _flagged(tmp_path / "train.py")
    result = CliRunner().invoke(confirm, [str(script), "--device", "sim", "--",
                                          sys.executable, str(script)])
    assert result.exit_code == 2, result.output
    assert message in result.output
    assert _ran(tmp_path) == []


# --- item 14: reports say what really happened ----------------------------------------------

@pytest.mark.slow
def test_device_cuda_without_a_gpu_is_an_error(tmp_path: Path) -> None:
    script = _flagged(tmp_path / "train.py")
    proc = _devicelint(["confirm", str(script), "--device", "cuda", "--format", "json",
                        "--", sys.executable, str(script)], tmp_path)
    assert proc.returncode == 2, proc.stdout + proc.stderr[-2000:]
    assert "--device cuda: torch sees no CUDA device" in proc.stderr
    assert '"device": "cuda"' not in proc.stdout  # no report of a run that did not happen
    assert _ran(tmp_path) == []


CRASHES = """\
import torch

rows = torch.randn(3, 2)
if rows.numel(): raise ValueError("a very particular crash text")
for row in rows:
    row.to("cuda")
for other in rows:
    other.to("cuda")
"""
NOTEBOOK = {
    "cells": [
        {"cell_type": "markdown", "metadata": {}, "source": ["# explore\n"]},
        {"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [],
         "source": ["import torch\n", "rows = torch.randn(3, 2)\n"]},
        {"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [],
         "source": ["for row in rows:\n", "    row.to('cuda')\n"]},
    ],
    "metadata": {}, "nbformat": 4, "nbformat_minor": 5,
}


@pytest.mark.slow
def test_text_report_states_the_crash_once_names_cells_and_the_device(tmp_path: Path) -> None:
    (tmp_path / "crash.py").write_text(CRASHES)
    (tmp_path / "explore.ipynb").write_text(json.dumps(NOTEBOOK))
    proc = _devicelint(["confirm", ".", "--device", "sim", "--", sys.executable, "crash.py"],
                       tmp_path)
    out = proc.stdout
    assert proc.returncode == 0, out + proc.stderr[-2000:]
    assert out.count("a very particular crash text") == 1, out  # in the run's line only
    unreached = [line for line in out.splitlines() if "DL001 [not-reached]" in line]
    assert len(unreached) == 3, out
    for line in unreached[:2]:
        assert line.startswith("crash.py:") and "stopped early at crash.py:4" in line, line
    # The notebook finding reads as the linter prints it (cell 3, line 2), and says why.
    assert unreached[2].startswith("explore.ipynb:cell 3:2:5: DL001 [not-reached] notebook "
                                   "cells are not run"), unreached[2]
    assert "Device: sim (costs estimated from " in out


@pytest.mark.slow
def test_every_format_names_the_device_that_ran(tmp_path: Path) -> None:
    (tmp_path / "crash.py").write_text(CRASHES)
    proc = _devicelint(["confirm", "crash.py", "--format", "sarif", "--",
                        sys.executable, "crash.py"], tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    messages = [r["message"]["text"] for run in json.loads(proc.stdout)["runs"]
                for r in run["results"]]
    assert messages and all("(on sim (costs estimated from " in m for m in messages), messages


@pytest.mark.parametrize("output_format", ["json", "text", "json-lines", "github", "sarif",
                                           "gitlab"])
def test_every_report_format_names_the_device_that_ran(output_format: str) -> None:
    from devicelint.finding import Finding
    from devicelint.reporters import ReportContext, renderer
    from devicelint.runtime.report import format_json, format_text, ran_on

    name = "sim (costs estimated from NVIDIA H100, torch 2.11)"
    runs = [{"target": "x.py", "device": "sim", "device_name": name, "exit_code": 0,
             "premise": {}}]
    finding = Finding("DL001", "n", "x.py", 1, 1, 1, 2, "m",
                      confirmation={"status": "confirmed", "summary": "s", "device": name})
    if output_format == "json":
        data = json.loads(format_json([finding], runs, *ran_on(runs)))
        assert (data["device"], data["device_name"]) == ("sim", name)
    elif output_format == "text":
        assert f"Device: {name}" in format_text([finding], runs, False)
    else:
        assert name in renderer(output_format)([finding], ReportContext(files=1))

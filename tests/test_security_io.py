"""Issue 19, the input/output half: each test is one attack from the security review, and
each failed on the code before the fix (docs/security.md points here, claim by claim).

Writes of user files (--fix, --add-noqa, notebooks), line numbering, non-regular and
unbounded inputs, the lint process pool, exit codes and escaping of file names in output.
"""

from __future__ import annotations

import ast
import errno
import json
import os
import re
import signal
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from devicelint.cli import main

ON_LINUX = sys.platform.startswith("linux")
IS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0

DATA_PARALLEL = "import torch.nn as nn\nmodel = nn.DataParallel(nn.Linear(4, 4))\n"
FIXABLE = "import torch\nx = torch.zeros(3).cuda()\n"  # DL007, a safe fix
FIXED = 'import torch\nx = torch.zeros(3, device="cuda")\n'


def devicelint(*args: str, cwd: Path, timeout: float = 120, **kwargs) -> subprocess.CompletedProcess:
    env = {**os.environ, "NO_COLOR": "1", "PYTHONDONTWRITEBYTECODE": "1"}
    return subprocess.run(
        [sys.executable, "-m", "devicelint", "--no-cache", *args],
        cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env, **kwargs,
    )


def notebook(cells: list[list[str]]) -> str:
    return json.dumps({
        "cells": [{"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
                   "source": source} for source in cells],
        "metadata": {}, "nbformat": 4, "nbformat_minor": 5,
    }, indent=1) + "\n"


# -- 5. line numbers as Python's tokenizer counts them -------------------------------------

# str.splitlines() splits at each of these; Python's tokenizer does not.
NOT_LINE_BREAKS = ["\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029"]

SHIFTED = 'import torch.nn as nn\ns = "a{sep}b"\nt = """doc\n"""; model = nn.DataParallel(nn.Linear(4, 4))\n'


@pytest.mark.parametrize("sep", NOT_LINE_BREAKS, ids=[f"U+{ord(c):04X}" for c in NOT_LINE_BREAKS])
def test_add_noqa_lands_on_the_tokenizer_line_not_inside_a_string(tmp_path: Path, sep: str) -> None:
    # The finding is on line 4. Counting lines with splitlines() put the comment at the end
    # of line 3, `t = """doc`: inside the string, changing the program.
    path = tmp_path / "train.py"
    source = SHIFTED.format(sep=sep)
    path.write_bytes(source.encode("utf-8"))
    result = devicelint("--add-noqa", "train.py", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    new = path.read_bytes().decode("utf-8")
    assert new == source.replace("(4, 4))\n", "(4, 4))  # noqa: DL005\n")
    assert ast.dump(ast.parse(new)) == ast.dump(ast.parse(source))  # same program
    assert devicelint("train.py", cwd=tmp_path).returncode == 0


def test_text_snippet_shows_the_flagged_line(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(SHIFTED.format(sep="\x0c"), encoding="utf-8")
    result = devicelint("train.py", cwd=tmp_path)
    assert '   4 | """; model = nn.DataParallel(nn.Linear(4, 4))' in result.stdout, result.stdout


def test_noqa_in_a_cr_only_file_is_honoured(tmp_path: Path) -> None:
    # io.StringIO(text).readline splits at \n only: a `# noqa` in a file with old Mac line
    # endings was read as being on line 1.
    source = "import torch.nn as nn\rx = 1\rmodel = nn.DataParallel(nn.Linear(4, 4))  # noqa: DL005\r"
    (tmp_path / "cr.py").write_bytes(source.encode())
    result = devicelint("cr.py", cwd=tmp_path)
    assert result.returncode == 0, result.stdout


@pytest.mark.skipif(os.name != "posix", reason="RLIMIT_FSIZE is POSIX")
def test_add_noqa_on_a_full_disk_leaves_the_file_whole(tmp_path: Path) -> None:
    # RLIMIT_FSIZE makes every write past N bytes fail (EFBIG), as a full disk does (ENOSPC).
    # --add-noqa used to open the file for writing in place: truncated, then the write failed.
    import resource
    path = tmp_path / "train.py"
    source = "# padding\n" * 200 + DATA_PARALLEL
    path.write_text(source, encoding="utf-8")
    limit = len(source) // 2

    def small_disk() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    result = devicelint("--add-noqa", "train.py", cwd=tmp_path, preexec_fn=small_disk)
    assert path.read_text(encoding="utf-8") == source
    assert result.returncode == 1
    assert "not written" in result.stderr and "Traceback" not in result.stderr, result.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["train.py"]  # no temporary file left


def test_notebook_cells_and_lines_are_counted_like_the_tokenizer(tmp_path: Path) -> None:
    # nbformat stores each str.splitlines() piece as one list element: "s = 'a\f" and "b'\n"
    # are one Python line. Cell 2 starts at virtual line 3, not 4.
    path = tmp_path / "nb.ipynb"
    first = "import torch.nn as nn\ns = 'a\x0cb'\n"
    second = "y = 1\nmodel = nn.DataParallel(nn.Linear(4, 4))\n"
    path.write_text(notebook([first.splitlines(True), second.splitlines(True)]), encoding="utf-8")
    result = devicelint("--format", "json", "nb.ipynb", cwd=tmp_path)
    [finding] = json.loads(result.stdout)
    assert (finding["cell"], finding["cell_line"]) == (2, 2)
    text = devicelint("nb.ipynb", cwd=tmp_path).stdout
    assert "nb.ipynb:cell 2:2:9: DL005" in text and "   2 | model = nn.DataParallel" in text, text
    assert devicelint("--add-noqa", "nb.ipynb", cwd=tmp_path).returncode == 0
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    assert "".join(cells[0]["source"]) == first
    assert "".join(cells[1]["source"]) == second.replace("(4, 4))\n", "(4, 4))  # noqa: DL005\n")


# -- 13. writes keep the file's owner, mode and links; read-only files are left alone ------

def _fix_target(tmp_path: Path, kind: str) -> tuple[Path, list[str], str]:
    """A file with a finding, the arguments that rewrite it, and its expected new text."""
    if kind == "fix-notebook":
        path = tmp_path / "nb.ipynb"
        path.write_text(notebook([FIXABLE.splitlines(True)]), encoding="utf-8")
        return path, ["--fix", path.name], notebook([FIXED.splitlines(True)])
    if kind == "fix":
        path = tmp_path / "train.py"
        path.write_text(FIXABLE, encoding="utf-8")
        return path, ["--fix", path.name], FIXED
    path = tmp_path / "train.py"
    path.write_text(DATA_PARALLEL, encoding="utf-8")
    return path, ["--add-noqa", path.name], DATA_PARALLEL.replace("4))\n", "4))  # noqa: DL005\n")


@pytest.mark.parametrize("kind", ["fix", "add-noqa", "fix-notebook"])
def test_read_only_file_is_reported_not_rewritten(tmp_path: Path, kind: str) -> None:
    path, args, _ = _fix_target(tmp_path, kind)
    before = path.read_bytes()
    path.chmod(0o444)
    result = devicelint(*args, cwd=tmp_path)
    assert path.read_bytes() == before
    assert stat.S_IMODE(path.stat().st_mode) == 0o444
    assert "read-only" in result.stderr and "Traceback" not in result.stderr, result.stderr
    assert result.returncode == 1


@pytest.mark.skipif(not IS_ROOT, reason="only root can give a file to another user")
@pytest.mark.parametrize("kind", ["fix", "fix-notebook"])
def test_fix_as_root_keeps_the_owner_and_mode(tmp_path: Path, kind: str) -> None:
    path, args, expected = _fix_target(tmp_path, kind)
    os.chown(path, 4242, 4343)
    path.chmod(0o640)
    result = devicelint(*args, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert path.read_text(encoding="utf-8") == expected
    info = path.stat()
    assert (info.st_uid, info.st_gid, stat.S_IMODE(info.st_mode)) == (4242, 4343, 0o640)


@pytest.mark.skipif(not IS_ROOT, reason="needs a file of another user")
def test_file_of_another_user_is_not_taken_over(tmp_path: Path, monkeypatch) -> None:
    # A non-root user who may write another user's file (group-writable) cannot keep its
    # owner in a replacement: fchown fails (simulated here, as the tests run as root).
    from devicelint.source import WriteRefused, replace_file

    path = tmp_path / "shared.py"
    path.write_text("x = 1\n")
    os.chown(path, 4242, 4343)

    def not_permitted(*args):
        raise PermissionError(errno.EPERM, "Operation not permitted")

    monkeypatch.setattr(os, "fchown", not_permitted)
    with pytest.raises(WriteRefused, match="would change its owner"):
        replace_file(str(path), b"x = 2\n")
    assert path.read_text() == "x = 1\n" and path.stat().st_uid == 4242
    assert sorted(p.name for p in tmp_path.iterdir()) == ["shared.py"]


@pytest.mark.parametrize("kind", ["fix", "add-noqa"])
def test_hard_linked_file_is_reported_not_split(tmp_path: Path, kind: str) -> None:
    # Replacing the file would leave the other name with the old text; writing in place
    # would change every linked copy (a uv/pnpm package cache, a `cp -al` backup). Neither.
    path, args, _ = _fix_target(tmp_path, kind)
    other = tmp_path / "elsewhere.py"
    os.link(path, other)
    before = path.read_bytes()
    result = devicelint(*args, cwd=tmp_path)
    assert "hard links" in result.stderr, result.stderr
    assert path.read_bytes() == before == other.read_bytes()
    assert os.path.samefile(path, other) and path.stat().st_nlink == 2
    assert result.returncode == 1


# -- 9. inputs that are not regular files, or larger than they say ------------------------

@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_fifo_on_the_command_line_is_reported_not_opened(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe.py")  # opening it for reading blocks until a writer comes
    result = devicelint("pipe.py", cwd=tmp_path, timeout=60)
    assert "pipe.py:1:1: DL902 Not a regular file (a FIFO); not read" in result.stdout, result.stdout
    assert result.returncode == 1


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_fifo_found_while_walking_is_reported(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe.py")
    (tmp_path / "ok.py").write_text("x = 1\n", encoding="utf-8")
    result = devicelint(".", cwd=tmp_path, timeout=60)
    assert "pipe.py:1:1: DL902 Not a regular file (a FIFO)" in result.stdout, result.stdout
    assert "2 files checked" in result.stdout


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_fifo_as_config_file_is_an_error_not_a_hang(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "lint.toml")
    (tmp_path / "a.py").write_text("x = 1\n")
    result = devicelint("--config", "lint.toml", "a.py", cwd=tmp_path, timeout=60)
    assert result.returncode == 2
    assert "lint.toml: cannot read: Not a regular file (a FIFO)" in result.stderr, result.stderr


@pytest.mark.skipif(os.name != "posix", reason="/dev/zero and RLIMIT_AS are POSIX")
def test_symlink_to_dev_zero_is_not_read(tmp_path: Path) -> None:
    import resource
    os.symlink("/dev/zero", tmp_path / "a.py")

    def bounded_memory() -> None:  # the old code read until MemoryError: keep that small
        resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))

    for args in (["a.py"], ["."]):
        result = devicelint(*args, cwd=tmp_path, timeout=60, preexec_fn=bounded_memory)
        assert "a.py:1:1: DL902 Not a regular file (a character device)" in result.stdout, result
        assert result.returncode == 1


def test_reads_are_bounded_by_max_file_size_not_by_the_reported_size(tmp_path: Path, monkeypatch) -> None:
    # A size from stat can be wrong (a file that grows, /proc, network file systems): at
    # most max-file-size + 1 bytes are read, whatever stat says.
    from devicelint.runner import lint_paths

    (tmp_path / "pyproject.toml").write_text("[tool.devicelint]\nmax-file-size = 1000\n")
    big = tmp_path / "big.py"
    big.write_text("x = 1\n" * 10_000, encoding="utf-8")
    real_stat, real_open, real_read = os.stat, os.open, os.read
    big_fds: set[int] = set()
    read = []

    def lying_stat(path, *args, **kwargs):
        info = real_stat(path, *args, **kwargs)
        if str(path).endswith("big.py"):
            return os.stat_result((*info[:6], 10, *info[7:10]))
        return info

    def recording_open(path, *args, **kwargs):
        fd = real_open(path, *args, **kwargs)
        if str(path).endswith("big.py"):
            big_fds.add(fd)
        return fd

    def counting_read(fd, size):
        data = real_read(fd, size)
        if fd in big_fds:
            read.append(len(data))
        return data

    monkeypatch.setattr(os, "stat", lying_stat)
    monkeypatch.setattr(os, "open", recording_open)
    monkeypatch.setattr(os, "read", counting_read)
    findings = lint_paths([str(big)], use_cache=False, jobs=1).findings
    assert [(f.code, "over max-file-size" in f.message) for f in findings] == [("DL902", True)]
    assert 0 < sum(read) <= 1001


def test_notebook_line_of_200k_spaces_is_parsed_in_linear_time() -> None:
    # `^\s*[\w.\[\], ]+=` tried every split of the spaces between its two parts: 55 s.
    from devicelint.notebook import load, raw_lines

    text = notebook([[" " * 200_000 + "x = 1\n"], ["files = !ls\n"]])
    start = time.perf_counter()
    loaded = load(text.encode())
    raw_lines(text)
    assert time.perf_counter() - start < 1.0
    assert [cell.blanked for cell in loaded.cells] == [set(), {0}]  # magics still recognised


# -- 8. workers die with the main process -------------------------------------------------

BIG_BODY = "".join(
    f"def f{i}(model, x):\n    for b in x:\n        y = b.cuda()\n"
    f"        model = nn.DataParallel(model)\n        print(y.item())\n"
    for i in range(60)
)


def _descendants(pid: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
            except (OSError, IndexError):
                continue
            if int(fields[1]) == pid:
                found.append(int(entry))
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")  # a zombie has exited (and closed its files)


def _parallel_lint(tmp_path: Path, **kwargs) -> tuple[subprocess.Popen, list[int]]:
    """A `-j 2` lint of 60 files, once its two workers run."""
    for n in range(60):
        (tmp_path / f"m{n:03}.py").write_text("import torch\nfrom torch import nn\n" + BIG_BODY)
    proc = subprocess.Popen(
        [sys.executable, "-m", "devicelint", "--no-cache", "-j", "2", "."], cwd=tmp_path,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env={**os.environ, "NO_COLOR": "1"}, **kwargs,
    )
    workers: list[int] = []
    deadline = time.monotonic() + 90
    while len(workers) < 2 and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
        workers = _descendants(proc.pid)
    if len(workers) < 2 or proc.poll() is not None:
        proc.kill()
        pytest.fail("the parallel lint did not start two workers in time")
    time.sleep(0.3)  # let them start linting
    assert proc.poll() is None, "the lint finished before the test could interrupt it"
    return proc, workers


def _read_all(stream, timeout: float):
    box: list = []
    reader = threading.Thread(target=lambda: box.append(stream.read()), daemon=True)
    reader.start()
    reader.join(timeout)
    return box[0] if box else None


def _cleanup(proc: subprocess.Popen, workers: list[int]) -> None:
    proc.kill()
    proc.wait()
    for pid in workers:  # only the workers this test started
        if _alive(pid):
            os.kill(pid, signal.SIGKILL)


@pytest.mark.skipif(not ON_LINUX, reason="finds the workers through /proc")
def test_terminating_a_parallel_lint_ends_its_workers(tmp_path: Path) -> None:
    proc, workers = _parallel_lint(tmp_path)
    try:
        proc.terminate()  # what an editor does to cancel a run
        assert _read_all(proc.stdout, 15) is not None, "stdout never reached EOF: a worker holds it"
        deadline = time.monotonic() + 5
        while any(_alive(pid) for pid in workers) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not [pid for pid in workers if _alive(pid)]
    finally:
        _cleanup(proc, workers)


# -- 12. exit codes, output files, escaping -----------------------------------------------

@pytest.mark.skipif(not ON_LINUX, reason="finds the workers through /proc")
def test_ctrl_c_exits_130_without_tracebacks(tmp_path: Path) -> None:
    # Ctrl-C in a terminal signals the whole process group: main process and workers.
    # A terminal's foreground job takes SIGINT at its default disposition. A suite started in
    # the background (`pytest &` in a script) hands its children SIGINT ignored, as POSIX
    # shells do for background jobs, and devicelint, like any program, keeps that: the lint
    # then runs to the end and blocks on the unread stdout pipe. Restored here so that the
    # test means the same however the suite is started.
    proc, workers = _parallel_lint(tmp_path, start_new_session=True,
                                   preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        os.killpg(proc.pid, signal.SIGINT)
        assert proc.wait(timeout=30) == 130
        stderr = proc.stderr.read().decode()
        assert "Traceback" not in stderr and "interrupted" in stderr, stderr
    finally:
        _cleanup(proc, workers)


def _cli(args: list[str], cwd: Path):
    old = os.getcwd()
    os.chdir(cwd)
    try:
        return CliRunner().invoke(main, args, env={"NO_COLOR": "1"})  # exceptions caught as a user sees them
    finally:
        os.chdir(old)


@pytest.mark.parametrize("extra", [[], ["--exit-zero"]])
def test_internal_error_exits_2_with_one_line(tmp_path: Path, monkeypatch, extra: list[str]) -> None:
    import devicelint.runner

    def broken(*args, **kwargs):
        raise TypeError("unsupported operand type(s)\nsecond line")

    monkeypatch.setattr(devicelint.runner, "lint_paths", broken)
    (tmp_path / "a.py").write_text("x = 1\n")
    result = _cli(["a.py", *extra], tmp_path)
    assert result.exit_code == 2
    assert result.stderr == ("devicelint: error: internal error: TypeError: unsupported operand "
                             "type(s) (run with --verbose for the traceback)\n")
    verbose = _cli(["a.py", "--verbose", *extra], tmp_path)
    assert verbose.exit_code == 2
    assert "Traceback (most recent call last)" in verbose.stderr and "second line" in verbose.stderr
    # Every command takes --verbose (the error handler is common to all of them).
    assert _cli(["confirm", "--verbose", "--help"], tmp_path).exit_code == 0


@pytest.mark.parametrize("target", ["missing/report.txt", "a.py/report.txt", "."])
def test_output_file_problems_fail_before_the_run(tmp_path: Path, monkeypatch, target: str) -> None:
    import devicelint.runner

    def must_not_run(*args, **kwargs):
        raise AssertionError("linted although the report cannot be written")

    monkeypatch.setattr(devicelint.runner, "lint_paths", must_not_run)
    (tmp_path / "a.py").write_text("x = 1\n")
    result = _cli(["-o", target, "a.py"], tmp_path)
    assert result.exit_code == 2, result.output
    assert "linted although" not in result.output


def test_output_file_is_kept_when_the_run_fails(tmp_path: Path, monkeypatch) -> None:
    import devicelint.runner

    monkeypatch.setattr(devicelint.runner, "lint_paths", lambda *a, **k: 1 / 0)
    (tmp_path / "a.py").write_text("x = 1\n")
    (tmp_path / "report.txt").write_text("last good report\n")
    result = _cli(["-o", "report.txt", "a.py"], tmp_path)
    assert result.exit_code == 2
    assert (tmp_path / "report.txt").read_text() == "last good report\n"


INJECTED = "x\n::error file=ci.yml::pwned\x1b[2J.py"


@pytest.mark.skipif(os.name != "posix", reason="newlines in file names need POSIX")
@pytest.mark.parametrize("output_format", ["text", "github"])
def test_control_characters_in_paths_are_escaped(tmp_path: Path, output_format: str) -> None:
    (tmp_path / INJECTED).write_text(DATA_PARALLEL, encoding="utf-8")
    result = devicelint("--format", output_format, ".", cwd=tmp_path)
    assert result.returncode == 1
    assert "\x1b" not in result.stdout
    for line in result.stdout.splitlines():
        assert not line.startswith("::error"), line  # no workflow command but devicelint's own
        if output_format == "github":
            assert line.startswith("::warning file=x%0A%3A%3Aerror"), line
    if output_format == "text":
        assert "x\\n::error file=ci.yml::pwned\\x1b[2J.py:2:9: DL005" in result.stdout


@pytest.mark.skipif(os.name != "posix", reason="newlines in file names need POSIX")
def test_control_characters_in_paths_are_escaped_in_warnings(tmp_path: Path) -> None:
    # GitHub Actions reads workflow commands from stderr too.
    path = tmp_path / INJECTED
    path.write_text(DATA_PARALLEL, encoding="utf-8")
    path.chmod(0o444)
    result = devicelint("--add-noqa", ".", cwd=tmp_path)
    assert "read-only" in result.stderr
    assert "\x1b" not in result.stderr
    assert all(line.startswith("devicelint: ") for line in result.stderr.splitlines()), result.stderr


@pytest.mark.skipif(os.name != "posix", reason="newlines in file names need POSIX")
@pytest.mark.parametrize("output_format", ["json", "gitlab", "sarif"])
def test_json_formats_keep_control_characters_as_json_escapes(tmp_path: Path, output_format: str) -> None:
    (tmp_path / INJECTED).write_text(DATA_PARALLEL, encoding="utf-8")
    result = devicelint("--format", output_format, ".", cwd=tmp_path)
    assert "\x1b" not in result.stdout and "\n::error" not in result.stdout
    document = json.loads(result.stdout)
    if output_format == "json":
        assert document[0]["path"] == INJECTED
    elif output_format == "gitlab":
        assert document[0]["location"]["path"] == INJECTED


def test_sarif_uris_are_percent_encoded(tmp_path: Path) -> None:
    from urllib.parse import unquote

    for name in ("h#x.py", "a b%.py", "ü?.py"):
        (tmp_path / name).write_text(DATA_PARALLEL, encoding="utf-8")
    result = devicelint("--format", "sarif", ".", cwd=tmp_path)
    uris = sorted(r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
                  for r in json.loads(result.stdout)["runs"][0]["results"])
    assert uris == sorted(["a%20b%25.py", "h%23x.py", "%C3%BC%3F.py"])
    assert all(re.fullmatch(r"[A-Za-z0-9%._~/-]+", uri) for uri in uris)
    assert sorted(unquote(uri) for uri in uris) == sorted(["h#x.py", "a b%.py", "ü?.py"])


# -- docs/security.md ---------------------------------------------------------------------

def test_security_doc_points_to_tests_that_exist() -> None:
    doc = (Path(__file__).resolve().parent.parent / "docs" / "security.md").read_text(encoding="utf-8")
    names = set(re.findall(r"tests/test_security_io\.py::(\w+)", doc))
    assert names, "docs/security.md names no test of this file"
    defined = set(re.findall(r"^def (test_\w+)", Path(__file__).read_text(encoding="utf-8"), re.M))
    assert names <= defined, sorted(names - defined)
    assert defined - names - {"test_security_doc_points_to_tests_that_exist"} == set(), \
        sorted(defined - names)

"""Issue 19, items 1-4 and 11: the result cache and the rule catalogue hold data only, are
written only inside the project through no symbolic link, survive any corruption without
serving wrong findings, are keyed by everything a result depends on; path matching uses
paths relative to the project root, however the project is reached."""

from __future__ import annotations

import json
import os
import pickle
import random
import re
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import BAD_DP, run_cli, write

import devicelint
from devicelint import rule as rule_module
from devicelint.runner import Overrides, lint_paths

DL010_CODE = "import torch\n\n\ndef f(t):\n    return t.to('cuda:1')\n"


def lint(paths, cwd: Path, monkeypatch, **overrides):
    monkeypatch.chdir(cwd)
    return lint_paths(paths, Overrides(**overrides) if overrides else None)


def codes(run) -> list[tuple[str, str]]:
    return [(Path(f.path).as_posix(), f.code) for f in run.findings]


def cache_file(project: Path) -> Path:
    (found,) = (project / ".devicelint_cache").glob("results-*")
    return found


# -- item 1: nothing is written through a link or outside the project ----------------------

def test_symlinked_cachedir_tag_is_not_followed(tmp_path: Path, monkeypatch) -> None:
    project, outside = tmp_path / "project", tmp_path / "victim"
    write(project / "a.py", BAD_DP)
    write(outside / "notes.txt", "my notes\n")
    (project / ".devicelint_cache").mkdir()
    (project / ".devicelint_cache" / "CACHEDIR.TAG").symlink_to(outside / "notes.txt")
    run = lint(["."], project, monkeypatch)
    assert codes(run) == [("a.py", "DL005")]
    assert (outside / "notes.txt").read_text() == "my notes\n"
    assert (project / ".devicelint_cache" / "CACHEDIR.TAG").is_symlink()
    assert lint(["."], project, monkeypatch).cached == 1  # the cache itself still works


def test_dangling_gitignore_link_creates_nothing(tmp_path: Path, monkeypatch) -> None:
    project, outside = tmp_path / "project", tmp_path / "elsewhere"
    write(project / "a.py", BAD_DP)
    outside.mkdir()
    (project / ".devicelint_cache").mkdir()
    (project / ".devicelint_cache" / ".gitignore").symlink_to(outside / "created.txt")
    (project / ".devicelint_cache" / "CACHEDIR.TAG").symlink_to(outside / "tag.txt")
    lint(["."], project, monkeypatch)
    assert list(outside.iterdir()) == []


def test_cache_dir_linked_to_parent_is_refused(tmp_path: Path, monkeypatch, capsys) -> None:
    project = tmp_path / "project"
    write(project / "a.py", BAD_DP)
    (project / ".devicelint_cache").symlink_to("..")
    run = lint(["."], project, monkeypatch)
    assert codes(run) == [("a.py", "DL005")]
    assert not (tmp_path / "CACHEDIR.TAG").exists() and not (tmp_path / ".gitignore").exists()
    assert not list(tmp_path.glob("results-*")) and not list(project.glob("results-*"))
    assert "not caching" in capsys.readouterr().err


@pytest.mark.parametrize("cache_dir", ["../x", "ABSOLUTE", ".", "sub/../../x"])
def test_cache_dir_outside_project_is_refused(tmp_path: Path, monkeypatch, capsys, cache_dir) -> None:
    project = tmp_path / "project"
    cache_dir = cache_dir.replace("ABSOLUTE", str(tmp_path / "x"))
    write(project / "pyproject.toml", f'[tool.devicelint]\ncache-dir = "{cache_dir}"\n')
    write(project / "a.py", BAD_DP)
    run = lint(["."], project, monkeypatch)
    assert codes(run) == [("a.py", "DL005")]
    assert not (tmp_path / "x").exists() and not (project / "CACHEDIR.TAG").exists()
    assert "not caching" in capsys.readouterr().err


def test_cache_dir_through_a_link_is_refused(tmp_path: Path, monkeypatch) -> None:
    project, outside = tmp_path / "project", tmp_path / "outside"
    outside.mkdir()
    write(project / "pyproject.toml", '[tool.devicelint]\ncache-dir = "build/cache"\n')
    write(project / "a.py", BAD_DP)
    (project / "build").symlink_to(outside)
    lint(["a.py"], project, monkeypatch)
    assert list(outside.iterdir()) == []


def test_configured_cache_dir_inside_project_is_used(tmp_path: Path, monkeypatch) -> None:
    project = tmp_path / "project"
    write(project / "pyproject.toml", '[tool.devicelint]\ncache-dir = "var/lint-cache"\n')
    write(project / "a.py", BAD_DP)
    lint(["."], project, monkeypatch)
    assert (project / "var" / "lint-cache" / "CACHEDIR.TAG").is_file()
    assert lint(["."], project, monkeypatch).cached == 1


def test_symlinked_results_file_is_neither_read_nor_written_through(tmp_path: Path, monkeypatch) -> None:
    project, outside = tmp_path / "project", tmp_path / "outside"
    write(project / "a.py", BAD_DP)
    lint(["."], project, monkeypatch)
    results = cache_file(project)
    outside.mkdir()
    target = outside / "target.json"
    target.write_bytes(results.read_bytes())  # a valid cache, but behind a link
    results.unlink()
    results.symlink_to(target)
    before = target.read_bytes()
    write(project / "b.py", "x = 1\n")
    run = lint(["."], project, monkeypatch)
    assert run.cached == 0  # not read through the link
    assert target.read_bytes() == before  # not written through it
    assert not results.is_symlink() and results.is_file()  # the link itself was replaced


def test_fifo_planted_as_cache_file_does_not_hang(tmp_path: Path) -> None:
    project = tmp_path / "project"
    write(project / "a.py", BAD_DP)
    command = [sys.executable, "-m", "devicelint", "a.py"]
    subprocess.run(command, cwd=project, capture_output=True, timeout=60)
    results = cache_file(project)
    results.unlink()
    os.mkfifo(results)
    done = subprocess.run(command, cwd=project, capture_output=True, text=True, timeout=60)
    assert done.returncode == 1 and "DL005" in done.stdout


# -- item 2: the cache is data, never code --------------------------------------------------

class _Boom:
    def __init__(self, marker: str) -> None:
        self.marker = marker

    def __reduce__(self):
        return (open, (self.marker, "w"))


def test_planted_pickle_and_json_payloads_are_not_executed(tmp_path: Path, monkeypatch) -> None:
    project = tmp_path / "project"
    write(project / "a.py", BAD_DP)
    lint(["."], project, monkeypatch)
    fingerprint = cache_file(project).name[len("results-"):].split(".")[0]
    marker = tmp_path / "pwned"
    payload = pickle.dumps({"x": _Boom(str(marker))})
    for name in (f"results-{fingerprint}.pickle", f"results-{fingerprint}.json"):
        (project / ".devicelint_cache" / name).write_bytes(payload)
    run = lint(["."], project, monkeypatch)
    assert not marker.exists()
    assert codes(run) == [("a.py", "DL005")] and run.cached == 0
    # A JSON "payload" is only data; a planted object-hook style document does nothing either.
    cache_file(project).write_text(json.dumps({"__reduce__": ["os.system", ["touch " + str(marker)]]}))
    assert codes(lint(["."], project, monkeypatch)) == [("a.py", "DL005")]
    assert not marker.exists()
    # The old pickle cache is deleted, never loaded.
    assert not (project / ".devicelint_cache" / f"results-{fingerprint}.pickle").exists()


def test_no_pickle_on_the_lint_path() -> None:
    """Plain linting never unpickles. (`confirm`'s DDP probe, under runtime/, hands a module
    to its own child through a private temporary directory: it runs user code by design.)"""
    package = Path(devicelint.__file__).parent
    loader = re.compile(r"^\s*(import|from)\s+(c?pickle|cloudpickle|dill|shelve|marshal)\b|\bpickle\.loads?\(", re.M)
    # dataclass_code.py unmarshals code devicelint compiled itself (the methods of libcst's
    # and its own dataclasses) from its package's __pycache__, beside devicelint's .pyc files
    # (tests/test_startup.py): nothing from a checkout or a result cache.
    own_bytecode = {"dataclass_code.py"}
    offenders = [
        str(path.relative_to(package)) for path in sorted(package.rglob("*.py"))
        if "runtime" not in path.relative_to(package).parts and path.name not in own_bytecode
        and loader.search(path.read_text(encoding="utf-8"))
    ]
    assert offenders == []


# -- item 3: corruption is dropped, never fatal, never served ----------------------------------

def _mutate(data: bytes, rng: random.Random) -> bytes:
    data = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        where = rng.randrange(len(data))
        kind = rng.random()
        if kind < 0.6:
            data[where] = rng.randrange(256)
        elif kind < 0.8:
            del data[where]
        else:
            data.insert(where, rng.randrange(256))
    return bytes(data)


def test_random_mutations_of_the_cache_never_crash_or_lie(tmp_path: Path, monkeypatch) -> None:
    project = tmp_path / "project"
    write(project / "a.py", BAD_DP)
    write(project / "c.py", "import torch\n\nx = torch.zeros(2).cuda()\n")  # DL007, with a fix
    truth = [f.to_dict() for f in lint(["."], project, monkeypatch).findings]
    assert [f["code"] for f in truth] == ["DL005", "DL007"] and "fix" in truth[1]
    assert lint(["."], project, monkeypatch).cached == 2
    results = cache_file(project)
    original = results.read_bytes()
    rng = random.Random(19)
    served = 0
    for _ in range(300):
        mutated = _mutate(original, rng)
        if mutated == original:  # a byte replaced by itself, or a deletion undone by an insertion
            continue
        results.write_bytes(mutated)
        run = lint(["."], project, monkeypatch)
        assert [f.to_dict() for f in run.findings] == truth
        served += run.cached
    assert served == 0  # every mutation was caught by the checksum (none was served)


def test_random_mutations_of_the_rule_catalogue(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    registry = rule_module.all_rules()
    truth = rule_module._metadata(registry)
    monkeypatch.setattr(rule_module, "_registry", None)
    monkeypatch.setattr(rule_module, "_catalog", None)
    assert rule_module.rule_catalog() == truth  # rebuilt and written
    (stored,) = (tmp_path / "xdg" / "devicelint").glob("rules-*.json")
    original = stored.read_bytes()
    rng = random.Random(3)
    # all_rules() re-imports nothing (modules are loaded); only the file is re-read each time.
    monkeypatch.setattr(rule_module, "all_rules", lambda: registry)
    for _ in range(300):
        stored.write_bytes(_mutate(original, rng))
        rule_module._catalog = None
        rule_module._registry = None
        assert rule_module.rule_catalog() == truth


def test_rule_catalogue_written_through_no_link(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setattr(rule_module, "_registry", None)
    monkeypatch.setattr(rule_module, "_catalog", None)
    victim = tmp_path / "victim.txt"
    victim.write_text("keep\n")
    folder = tmp_path / "xdg" / "devicelint"
    folder.mkdir(parents=True)
    name = f"rules-{rule_module.signature()}.json"
    (folder / name).symlink_to(victim)
    rule_module.rule_catalog()
    assert victim.read_text() == "keep\n"
    # A catalogue directory that is a link is neither read nor written.
    linked = tmp_path / "xdg2"
    linked.mkdir()
    (linked / "devicelint").symlink_to(tmp_path / "other")
    (tmp_path / "other").mkdir()
    monkeypatch.setenv("XDG_CACHE_HOME", str(linked))
    rule_module._registry = None
    rule_module._catalog = None
    rule_module.rule_catalog()
    assert list((tmp_path / "other").iterdir()) == []


def test_wrongly_typed_entries_are_dropped(tmp_path: Path, monkeypatch) -> None:
    """A file with a valid checksum (written by anyone) is still checked entry by entry."""
    from devicelint.datafile import decode, encode
    from devicelint import cache as cache_module

    project = tmp_path / "project"
    write(project / "a.py", BAD_DP)
    truth = codes(lint(["."], project, monkeypatch))
    results = cache_file(project)
    payload = decode(cache_module.FORMAT, results.read_bytes())
    (key,) = payload["entries"]
    day, (row,) = payload["entries"][key]
    assert len(row) == 11
    changes = [(2, True), (2, "3"), (0, 5), (0, "dl005"), (7, None), (8, [1]), (8, {"line": 1}),
               (10, 1), (3, -1), (3, 1 << 40), (6, ["x"]), (1, None)]
    for index, value in changes:
        forged_row = list(row)
        forged_row[index] = value
        forged = {"fingerprint": payload["fingerprint"], "entries": {key: [day, [forged_row]]}}
        results.write_bytes(encode(cache_module.FORMAT, forged))
        run = lint(["."], project, monkeypatch)
        assert codes(run) == truth and run.cached == 0, (index, value)
    fingerprint = payload["fingerprint"]
    for entry in ([day, [row[:10]]], [day, [row + [None]]], [day, row], [True, [row]], [day + 5, [row]], {"x": 1}):
        results.write_bytes(encode(cache_module.FORMAT, {"fingerprint": fingerprint, "entries": {key: entry}}))
        run = lint(["."], project, monkeypatch)
        assert codes(run) == truth and run.cached == 0, entry
    # The untouched row is served (the forgeries above were refused for their content).
    results.write_bytes(encode(cache_module.FORMAT, {"fingerprint": fingerprint, "entries": {key: [day, [row]]}}))
    assert lint(["."], project, monkeypatch).cached == 1


# -- item 4: the key holds the path --------------------------------------------------------------

def test_same_bytes_in_src_and_tests_do_not_share_a_result(tmp_path: Path, monkeypatch) -> None:
    project = tmp_path / "project"
    write(project / "pyproject.toml", '[tool.devicelint]\nextend-select = ["DL010"]\n')
    write(project / "src" / "x.py", DL010_CODE)
    write(project / "tests" / "x.py", DL010_CODE)
    first = lint(["."], project, monkeypatch)
    second = lint(["."], project, monkeypatch)
    assert codes(first) == codes(second) == [("src/x.py", "DL010")]
    assert second.cached == 2


def test_linting_one_file_keeps_the_others_cached(tmp_path: Path, monkeypatch) -> None:
    project = tmp_path / "project"
    write(project / "a.py", BAD_DP)
    write(project / "b.py", "x = 1\n")
    lint(["."], project, monkeypatch)
    lint(["a.py"], project, monkeypatch)
    assert lint(["."], project, monkeypatch).cached == 2


def test_entries_unused_for_a_month_are_pruned(tmp_path: Path, monkeypatch) -> None:
    from devicelint import cache as cache_module

    project = tmp_path / "project"
    write(project / "a.py", BAD_DP)
    write(project / "b.py", "x = 1\n")
    lint(["."], project, monkeypatch)
    today = cache_module._today()
    monkeypatch.setattr(cache_module, "_today", lambda: today + cache_module.MAX_AGE_DAYS + 1)
    assert lint(["a.py"], project, monkeypatch).cached == 1  # a.py used again; b.py aged out
    assert lint(["."], project, monkeypatch).cached == 1


def test_cache_file_is_kept_under_its_size_limit(tmp_path: Path, monkeypatch) -> None:
    from devicelint import cache as cache_module

    project = tmp_path / "project"
    for i in range(20):
        write(project / f"m{i:02d}.py", BAD_DP + f"# {i}\n")
    # 20 entries take about 3,400 bytes (the project index's facts no longer add to them:
    # they are read only when a question reaches a module)
    monkeypatch.setattr(cache_module, "MAX_BYTES", 2000)
    lint(["."], project, monkeypatch)
    assert 0 < cache_file(project).stat().st_size <= 2000
    assert 0 < lint(["."], project, monkeypatch).cached < 20


def test_per_file_ignores_changed_between_runs(tmp_path: Path, monkeypatch) -> None:
    """per-file-ignores filter after the cache, so changing them needs no new cache key."""
    project = tmp_path / "project"
    write(project / "legacy" / "a.py", BAD_DP)
    assert codes(lint(["."], project, monkeypatch)) == [("legacy/a.py", "DL005")]
    write(project / "pyproject.toml", '[tool.devicelint]\nper-file-ignores = { "legacy/*" = ["DL005"] }\n')
    assert codes(lint(["."], project, monkeypatch)) == []


# -- item 11: paths relative to the project root, through links, from any directory -------------

def _linked_project(tmp_path: Path) -> tuple[Path, Path]:
    real = tmp_path / "real"
    write(real / "pyproject.toml", (
        '[tool.devicelint]\nextend-exclude = ["gen/*.py"]\n'
        'per-file-ignores = { "legacy/*" = ["DL005"] }\n'
    ))
    write(real / ".gitignore", "ignored.py\n")
    for name in ("main.py", "gen/made.py", "legacy/old.py", "ignored.py"):
        write(real / name, BAD_DP)
    alias = tmp_path / "alias"
    alias.symlink_to(real, target_is_directory=True)
    (tmp_path / "elsewhere").mkdir()
    return real, alias


@pytest.mark.parametrize("use_cache", [False, True])
def test_excludes_and_ignores_apply_through_a_symlinked_project_path(tmp_path: Path, monkeypatch, use_cache) -> None:
    real, alias = _linked_project(tmp_path)
    monkeypatch.chdir(tmp_path / "elsewhere")
    for target in (str(alias), str(real), "../alias", "../alias/main.py"):
        run = lint_paths([target], use_cache=use_cache)
        assert [(Path(f.path).name, f.code) for f in run.findings] == [("main.py", "DL005")], target
    run = lint_paths([str(alias / "legacy" / "old.py")], use_cache=use_cache)
    assert run.findings == []  # per-file-ignores through the link


def test_force_exclude_through_a_symlinked_project_path(tmp_path: Path, monkeypatch) -> None:
    real, alias = _linked_project(tmp_path)
    run = lint([str(alias / "gen" / "made.py"), str(alias / "ignored.py")], tmp_path / "elsewhere", monkeypatch,
               force_exclude=True)
    assert run.files == 0


def test_dl010_test_exemption_does_not_depend_on_the_working_directory(tmp_path: Path, monkeypatch) -> None:
    project = tmp_path / "tests" / "project"  # the project itself lives under a "tests" folder
    write(project / "pyproject.toml", '[tool.devicelint]\nextend-select = ["DL010"]\n')
    write(project / "src" / "x.py", DL010_CODE)
    write(project / "tests" / "y.py", DL010_CODE)
    cases = [
        (tmp_path, "tests/project", ["x.py"]),
        (project, ".", ["x.py"]),
        (project / "tests", "y.py", []),
        (project / "tests", "../src/x.py", ["x.py"]),
        (project / "src", "x.py", ["x.py"]),
    ]
    for cwd, target, expected in cases:
        for _ in range(2):  # cold, then from the cache
            run = lint([target], cwd, monkeypatch)
            assert [Path(f.path).name for f in run.findings if f.code == "DL010"] == expected, (cwd, target)


def test_cli_warns_and_lints_when_the_cache_dir_is_a_link(tmp_path: Path) -> None:
    project, target = tmp_path / "project", tmp_path / "target"
    write(project / "a.py", BAD_DP)
    target.mkdir()
    (project / ".devicelint_cache").symlink_to(target)
    result = run_cli(["a.py"], project)
    assert result.exit_code == 1 and "DL005" in result.stdout
    assert "not caching results" in result.stderr and str(project / ".devicelint_cache") in result.stderr
    assert list(target.iterdir()) == []


def test_fix_judges_dl010_by_the_project_path_too(tmp_path: Path) -> None:
    """`--fix` re-lints the fixed text: with the same path the run used, not the one as typed."""
    project = tmp_path / "tests" / "project"  # a project that itself lives under "tests"
    write(project / "pyproject.toml", '[tool.devicelint]\nextend-select = ["DL010"]\n')
    code = "import torch\n\n\ndef f(t):\n    x = torch.zeros(2).cuda()\n    return t.to('cuda:1')\n"
    write(project / "tests" / "y.py", code)
    write(project / "src" / "x.py", code)
    in_tests = run_cli(["--no-cache", "--fix", "y.py"], project / "tests")
    assert in_tests.exit_code == 0 and "DL010" not in in_tests.output, in_tests.output
    in_src = run_cli(["--no-cache", "--fix", "tests/project/src/x.py"], tmp_path)
    assert in_src.exit_code == 1 and "DL010" in in_src.output, in_src.output
    assert "device=" in (project / "tests" / "y.py").read_text()
    assert "device=" in (project / "src" / "x.py").read_text()


def test_path_based_fallback_refuses_links_too(tmp_path: Path, monkeypatch) -> None:
    """Where the platform has no dir_fd support (Windows), the path-based fallback still
    refuses a linked cache directory and never writes through a planted link."""
    from devicelint import datafile

    monkeypatch.setattr(datafile, "_HAVE_DIR_FD", False)
    project, outside = tmp_path / "project", tmp_path / "victim"
    write(project / "a.py", BAD_DP)
    write(outside / "notes.txt", "my notes\n")
    (project / ".devicelint_cache").mkdir()
    (project / ".devicelint_cache" / "CACHEDIR.TAG").symlink_to(outside / "notes.txt")
    lint(["."], project, monkeypatch)
    assert (outside / "notes.txt").read_text() == "my notes\n"
    assert lint(["."], project, monkeypatch).cached == 1
    other = tmp_path / "other"
    write(other / "a.py", BAD_DP)
    (other / ".devicelint_cache").symlink_to(outside)
    lint(["."], other, monkeypatch)
    assert sorted(p.name for p in outside.iterdir()) == ["notes.txt"]


def test_installing_a_plugin_changes_the_rules_signature(tmp_path, monkeypatch) -> None:
    """The rules' signature (cache fingerprint, catalogue file name) sees a distribution that
    declares devicelint rules, without importing importlib.metadata."""
    before = rule_module._signature()
    info = tmp_path / "myplugin-1.0.dist-info"
    info.mkdir()
    (info / "entry_points.txt").write_text("[devicelint.rules]\nmine = myplugin.rules\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    installed = rule_module._signature()
    (info / "entry_points.txt").write_text("[devicelint.rules]\nmine = myplugin.rules2\n")
    upgraded = rule_module._signature()
    (info / "entry_points.txt").write_text("[console_scripts]\nmine = myplugin:main\n")
    assert len({before, installed, upgraded}) == 3 and rule_module._signature() == before


@pytest.mark.parametrize("name", ["semantic/loops.py", "semantic/torch_api.toml"])
def test_changing_the_semantic_model_changes_the_signature(name: str) -> None:
    """Findings depend on the semantic model's code and its API table: cached results made
    by an older model must not be served (a git install keeps its version number)."""
    import devicelint

    path = Path(devicelint.__file__).parent / name
    before = rule_module._signature()
    stat = path.stat()
    try:
        os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
        assert rule_module._signature() != before
    finally:
        os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert rule_module._signature() == before

"""What a run imports (issue 17: one small file, start-up included, in 0.3 s): only the
rules whose tokens occur in the files it lints, and nothing for plugins when none is
installed. Each check runs devicelint in a fresh interpreter and reads its sys.modules."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Optional

from conftest import ROOT

# Prints, after a run of the command line, the rule modules and the other modules of
# interest that the process imported.
_PROBE = """
import atexit, json, sys
def _report():
    names = sorted(m for m in sys.modules if m.startswith(("devicelint.rules.", "importlib.metadata", "libcst")))
    table = sys.modules["devicelint.dataclass_code"]._table
    for owner in sorted(table.codes if table is not None else ()):
        names.append(f"(the dataclass code table of {owner})")
    served = {owner: len(texts) for owner, texts in table.served.items()} if table is not None else {}
    print("SERVED " + json.dumps(served), file=sys.stderr)
    print("MODULES " + json.dumps(names), file=sys.stderr)
atexit.register(_report)
sys.argv = ["devicelint", *sys.argv[1:]]
from devicelint.cli import main
main()
"""


def _run(args: list[str], cwd: Path, cache: Path, served: Optional[dict] = None,
         bytecode: Optional[Path] = None) -> tuple[str, list[str]]:
    """`served`: filled with how many texts each owner's dataclass table served; `bytecode`:
    a private PYTHONPYCACHEPREFIX where Python writes bytecode (and the tables)."""
    env = {**os.environ, "XDG_CACHE_HOME": str(cache), "PYTHONPATH": str(ROOT)}
    if bytecode is not None:
        env["PYTHONPYCACHEPREFIX"] = str(bytecode)
        env.pop("PYTHONDONTWRITEBYTECODE", None)
    done = subprocess.run([sys.executable, "-c", _PROBE, *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)
    rows = done.stderr.splitlines()
    if served is not None:
        served.update(json.loads([row for row in rows if row.startswith("SERVED ")][-1][len("SERVED "):]))
    line = [row for row in rows if row.startswith("MODULES ")][-1]
    return done.stdout, json.loads(line[len("MODULES "):])


def test_a_run_imports_only_the_rules_whose_tokens_occur(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text("import torch.nn as nn\n\nmodel = nn.DataParallel(nn.Linear(4, 4))\n")
    args = ["--no-cache", "-q", "--select", "ALL", "train.py"]
    first, _ = _run(args, tmp_path, tmp_path / "xdg")  # builds the rule catalogue: imports every rule
    output, modules = _run(args, tmp_path, tmp_path / "xdg")
    assert output == first and "DL005" in output
    assert "(the dataclass code table of libcst)" in modules  # read once libcst is imported
    rules = [m for m in modules if m.startswith("devicelint.rules.")]
    assert rules == ["devicelint.rules.dl005_data_parallel"], rules
    # Plugins are found through entry points only when some distribution declares them.
    assert not [m for m in modules if m.startswith("importlib.metadata")], modules


def test_a_file_no_rule_matches_imports_no_rule_and_no_libcst(tmp_path: Path) -> None:
    (tmp_path / "one.py").write_text("import os\nprint(os.sep)\n")
    _run(["--no-cache", "one.py"], tmp_path, tmp_path / "xdg")
    output, modules = _run(["--no-cache", "one.py"], tmp_path, tmp_path / "xdg")
    assert "All checks passed" in output
    # Nor is libcst's dataclass table read (devicelint's own classes are served from theirs).
    assert modules == ["(the dataclass code table of devicelint)"], modules


def test_devicelint_classes_are_served_from_the_start_libcsts_only_when_parsing(tmp_path: Path) -> None:
    """The command line, the runner and the cache define dataclasses before any file is
    read: their methods come from devicelint's own table, libcst's table is left unread."""
    (tmp_path / "one.py").write_text("import os\nprint(os.sep)\n")
    (tmp_path / "train.py").write_text("import torch.nn as nn\n\nmodel = nn.DataParallel(nn.Linear(4, 4))\n")
    prefix, xdg = tmp_path / "bytecode", tmp_path / "xdg"
    for name in ("train.py", "one.py"):  # compiles, writes the tables at exit
        _run(["--no-cache", name], tmp_path, xdg, bytecode=prefix)
    served: dict = {}
    _, modules = _run(["--no-cache", "one.py"], tmp_path, xdg, served, prefix)
    assert "(the dataclass code table of libcst)" not in modules
    assert served.get("devicelint", 0) >= 10 and "libcst" not in served, served
    served.clear()
    _run(["--no-cache", "train.py"], tmp_path, xdg, served, prefix)
    assert served.get("devicelint", 0) >= 10 and served.get("libcst", 0) > 300, served


def test_a_catalogue_entry_imports_only_a_builtin_rule_module(monkeypatch) -> None:
    """The catalogue is a file in the user's cache: a module name in it is imported only if
    it names a built-in rule module; anything else is loaded as a plugin is, by all_rules."""
    from devicelint import rule as rule_module
    from devicelint.rule import RuleMeta, all_rules, rule_class

    registry = all_rules()
    imported: list[str] = []
    real_import = rule_module.importlib.import_module
    monkeypatch.setattr(rule_module.importlib, "import_module",
                        lambda name: imported.append(name) or real_import(name))
    monkeypatch.setattr(rule_module, "_registry", None)
    dl005 = rule_module._metadata(registry)["DL005"]
    assert dl005.module == "devicelint.rules.dl005_data_parallel"
    assert rule_class(dl005) is registry["DL005"]
    assert imported == ["devicelint.rules.dl005_data_parallel"]

    imported.clear()
    forged = RuleMeta(**{**dl005.__dict__, "module": "antigravity"})
    monkeypatch.setattr(rule_module, "_registry", None)
    assert rule_class(forged) is registry["DL005"]
    assert "antigravity" not in imported and "antigravity" not in sys.modules


# Every method that dataclasses compiled for a class of libcst or devicelint (the modules a
# lint of every rule imports), as a digest of the code object whole (bytecode, constants,
# names, file name, line and exception tables, flags, sizes) and the annotations. (Not
# marshal.dumps: its bytes depend on which strings happen to be shared.)
_METHODS = """
import hashlib, json, sys, types
def constant(value):  # a frozenset's order follows the process's string hashing
    if isinstance(value, types.CodeType):
        return canonical(value)
    if isinstance(value, frozenset):
        return ("frozenset", tuple(sorted(repr(constant(v)) for v in value)))
    if isinstance(value, tuple):
        return tuple(constant(v) for v in value)
    return repr(value)
def canonical(code):
    return tuple(
        tuple(constant(c) for c in code.co_consts) if field == "co_consts" else getattr(code, field)
        for field in ("co_code", "co_consts", "co_names", "co_varnames", "co_freevars", "co_cellvars",
                      "co_filename", "co_name", "co_qualname", "co_firstlineno", "co_linetable",
                      "co_exceptiontable", "co_flags", "co_argcount", "co_posonlyargcount",
                      "co_kwonlyargcount", "co_nlocals", "co_stacksize"))
if sys.argv[1] == "install":
    from devicelint import dataclass_code
    dataclass_code.install()
import libcst
from devicelint.rule import all_rules
from devicelint import engine
all_rules()
found = {}
for name, module in sorted(sys.modules.items()):
    if not name.startswith(("libcst", "devicelint")):
        continue
    for cls in list(vars(module).values()):
        if not isinstance(cls, type) or cls.__module__ != name:
            continue
        for attr, value in vars(cls).items():
            if isinstance(value, types.FunctionType) and value.__code__.co_filename == "<string>":
                notes = repr(sorted((k, getattr(v, "__name__", repr(v))) for k, v in value.__annotations__.items()))
                found[f"{name}.{cls.__qualname__}.{attr}"] = hashlib.sha256(
                    repr(canonical(value.__code__)).encode() + notes.encode()).hexdigest()
from devicelint import dataclass_code
table = dataclass_code._table
print(json.dumps({"methods": found, "new": sum(map(len, table.new.values())) if table else None}))
"""


def _methods(mode: str, prefix: Path) -> dict:
    # The table goes where Python's bytecode goes: a private prefix here, written (the
    # development machine sets PYTHONDONTWRITEBYTECODE).
    env = {**os.environ, "PYTHONPYCACHEPREFIX": str(prefix), "PYTHONPATH": str(ROOT)}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    done = subprocess.run([sys.executable, "-c", _METHODS, mode], env=env, capture_output=True,
                          text=True, timeout=120, check=True)
    return json.loads(done.stdout)


def test_served_methods_are_the_ones_python_compiles(tmp_path: Path) -> None:
    from devicelint import dataclass_code

    plain = _methods("plain", tmp_path)
    # libcst's nodes and devicelint's own dataclasses: one text per method up to Python
    # 3.12, one per class from 3.13 (dataclasses compiles a class's methods together).
    assert len(plain["methods"]) > 600
    cold = _methods("install", tmp_path)  # compiles every text, writes the table at exit
    package = Path(dataclass_code.__file__).resolve().parent
    tables = [tmp_path.joinpath(*package.parts[1:], dataclass_code.file_name(owner)) for owner in ("libcst", "devicelint")]
    assert cold["new"] > (150 if sys.version_info >= (3, 13) else 600) and all(t.is_file() for t in tables)
    warm = _methods("install", tmp_path)  # served from the table
    assert warm["new"] == 0
    assert cold["methods"] == plain["methods"]
    assert warm["methods"] == plain["methods"]


def test_only_libcst_and_devicelint_classes_are_served() -> None:
    import libcst  # noqa: F401 - the table serves once libcst is being imported

    from devicelint.dataclass_code import Table

    text = "def __create_fn__():\n def f(self, x: int = 0):\n  return 1\n return f"
    table = Table(lambda owner: {})
    namespace: dict = {}
    table.exec(text, {"__name__": "user_module", "int": int}, namespace)
    made = namespace["__create_fn__"]()
    assert made(None) == 1 and table.new == {} and not table.codes
    assert made.__annotations__ == {"x": int}  # not "int": no __future__ flag of ours leaks in
    table.exec(text, {"__name__": "libcst._nodes.expression"}, namespace)
    assert list(table.codes) == ["libcst"] and list(table.new["libcst"]) == [text]
    forged = compile("def __create_fn__():\n return lambda self: 2", "<string>", "exec")
    table = Table(lambda owner: {text: forged} if owner == "devicelint" else {})
    table.exec(text, {"__name__": "user_module"}, namespace)
    assert namespace["__create_fn__"]()(None) == 1  # never served to another package's class
    table.exec(text, {"__name__": "libcst._nodes.op"}, namespace)
    assert namespace["__create_fn__"]()(None) == 1  # nor from another owner's table
    table.exec(text, {"__name__": "devicelint.finding"}, namespace)
    assert namespace["__create_fn__"]()(None) == 2
    assert table.served == {"devicelint": {text}} and list(table.new) == ["libcst"]


def _private_prefix(tmp_path: Path, monkeypatch) -> Path:
    """Where the table goes with sys.pycache_prefix at tmp_path (not the package's folder)."""
    from devicelint import dataclass_code

    monkeypatch.setattr(sys, "pycache_prefix", str(tmp_path))
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    package = Path(dataclass_code.__file__).resolve().parent
    return tmp_path.joinpath(*package.parts[1:])


def test_a_table_is_read_only_when_whole_and_not_world_writable(tmp_path: Path, monkeypatch) -> None:
    import marshal

    from devicelint import dataclass_code

    folder = _private_prefix(tmp_path, monkeypatch)
    code = compile("x = 1", "<string>", "exec")
    data = dataclass_code.HEADER + marshal.dumps({"x = 1": code})
    assert dataclass_code.parse(data) == {"x = 1": code}
    for broken in (data[:-3], data[1:], dataclass_code.HEADER + marshal.dumps({"x = 1": "text"}),
                   dataclass_code.HEADER + marshal.dumps([code]), b"", dataclass_code.HEADER + b"\xff"):
        assert dataclass_code.parse(broken) == {}
    folder.mkdir(parents=True)
    path = folder / dataclass_code.file_name("devicelint")
    path.write_bytes(data)
    path.chmod(0o644)
    assert dataclass_code._load("devicelint") == {"x = 1": code}
    assert dataclass_code._load("libcst") == {}  # each owner's own file
    (folder / dataclass_code.file_name("user")).write_bytes(data)
    assert dataclass_code._load("user") == {}  # no table but the owners'
    path.chmod(0o646)  # anyone may write it: it is code, so it is not read
    assert dataclass_code._load("devicelint") == {}
    path.unlink()
    path.symlink_to(tmp_path / "elsewhere")
    (tmp_path / "elsewhere").write_bytes(data)
    assert dataclass_code._load("devicelint") == {}


def test_a_full_table_keeps_what_the_last_run_used(tmp_path: Path, monkeypatch) -> None:
    from devicelint import dataclass_code

    _private_prefix(tmp_path, monkeypatch)
    code = {text: compile(text, "<string>", "exec") for text in ("a = 1", "b = 2", "c = 3")}
    table = dataclass_code.Table(lambda owner: {"a = 1": code["a = 1"], "b = 2": code["b = 2"]})
    monkeypatch.setattr(dataclass_code, "_table", table)
    owner = {"__name__": "devicelint.x"}
    table.exec("b = 2", owner, {})  # served
    table.exec("c = 3", owner, {})  # compiled anew
    monkeypatch.setattr(dataclass_code, "MAX_ENTRIES", 2)
    monkeypatch.setattr(sys, "dont_write_bytecode", True)  # as PYTHONDONTWRITEBYTECODE: no write
    dataclass_code.save()
    assert dataclass_code._load("devicelint") == {}
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    dataclass_code.save()
    assert sorted(dataclass_code._load("devicelint")) == ["b = 2", "c = 3"]
    assert dataclass_code._load("libcst") == {}  # nothing of libcst's was compiled
    assert table.new == {}
    table.exec("d = 4", owner, {})
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    dataclass_code.save(force=True)  # `python -m devicelint.dataclass_code` writes anyway
    assert sorted(dataclass_code._load("devicelint")) == ["b = 2", "d = 4"]


# -- the program ends without tearing the interpreter down (devicelint.cli._exit) ---------

_ENDING = """
import atexit, sys, threading, time
class Teardown:
    def __del__(self):
        sys.stderr.write("TEARDOWN\\n")
keep = Teardown()  # freed only when Python tears its modules down
atexit.register(lambda: sys.stderr.write("ATEXIT\\n"))
mode = sys.argv.pop(1)
if mode == "thread":  # a thread Python waits for: the exit is Python's own
    threading.Thread(target=lambda: (time.sleep(0.3), print("THREAD DONE", flush=True))).start()
    from devicelint.cli import _exit
    _exit(0)
if mode == "closed":
    sys.stdout.close()
    from devicelint.cli import _exit
    _exit(None)
if mode.startswith("status="):
    from devicelint.cli import _exit
    value = mode[len("status="):]
    _exit(None if value == "None" else int(value) if value.isdigit() else value)
sys.argv = ["devicelint", *sys.argv[1:]]
from devicelint.cli import run
run()
"""


def _end(mode: str, args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-c", _ENDING, mode, *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)


def test_the_program_ends_without_teardown_after_atexit_and_flushing(tmp_path: Path) -> None:
    lines = "".join(f"model{i} = nn.DataParallel(net)\n" for i in range(400))
    (tmp_path / "train.py").write_text("import torch.nn as nn\nnet = nn.Linear(2, 2)\n" + lines)
    done = _end("run", ["--no-cache", "-q", "train.py"], tmp_path)
    assert done.returncode == 1
    assert done.stdout.count(" DL005 ") == 400  # block-buffered output to a pipe, all of it
    assert "ATEXIT" in done.stderr  # atexit handlers run (devicelint.dataclass_code's too)
    assert "TEARDOWN" not in done.stderr  # no teardown: objects are not freed one by one
    clean = _end("run", ["--no-cache", "-q", "--select", "DL013", "train.py"], tmp_path)
    assert clean.returncode == 0 and "ATEXIT" in clean.stderr


def test_the_exit_status_is_read_as_python_reads_it(tmp_path: Path) -> None:
    assert _end("status=None", [], tmp_path).returncode == 0
    assert _end("status=3", [], tmp_path).returncode == 3
    message = _end("status=no luck", [], tmp_path)
    assert message.returncode == 1 and "no luck" in message.stderr
    waited = _end("thread", [], tmp_path)
    assert waited.returncode == 0 and "THREAD DONE" in waited.stdout and "ATEXIT" in waited.stderr
    # A closed standard output is skipped, as Python's exit skips it (status 0, not 120).
    assert _end("closed", [], tmp_path).returncode == 0


# -- devicelint's own data files parsed once per edit (datafile.parsed_once) ----------------

def test_a_data_file_is_parsed_once_per_edit(tmp_path: Path, monkeypatch) -> None:
    from devicelint.datafile import parsed_once

    monkeypatch.setattr(sys, "pycache_prefix", None)
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    source = tmp_path / "table.toml"
    source.write_text("a = 1\n")
    calls: list[bytes] = []

    def parse(data: bytes) -> dict:
        calls.append(data)
        return {"value": data.decode(), "list": [1, 2.5, True]}

    first = parsed_once(str(source), parse, "test-kind")
    assert first == {"value": "a = 1\n", "list": [1, 2.5, True]} and len(calls) == 1
    assert (tmp_path / "__pycache__" / "table.toml.json").is_file()
    assert parsed_once(str(source), parse, "test-kind") == first and len(calls) == 1  # the copy
    source.write_text("a = 2\n")  # edited: parsed again
    assert parsed_once(str(source), parse, "test-kind")["value"] == "a = 2\n" and len(calls) == 2
    (tmp_path / "__pycache__" / "table.toml.json").write_bytes(b"garbage")
    assert parsed_once(str(source), parse, "test-kind")["value"] == "a = 2\n" and len(calls) == 3
    assert parsed_once(str(source), parse, "other-kind")["value"] == "a = 2\n" and len(calls) == 4
    other = tmp_path / "other"
    other.mkdir()
    (other / "t.toml").write_text("x\n")
    monkeypatch.setattr(sys, "dont_write_bytecode", True)  # as PYTHONDONTWRITEBYTECODE
    parsed_once(str(other / "t.toml"), parse, "test-kind")
    assert not (other / "__pycache__").exists()


def test_the_api_table_from_its_parsed_copy_is_the_files(tmp_path: Path, monkeypatch) -> None:
    import tomllib

    from devicelint.semantic import api

    monkeypatch.setattr(sys, "pycache_prefix", str(tmp_path))  # the copy goes here
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    path = Path(api.__file__).with_name("torch_api.toml")
    truth = api.ApiTable(tomllib.loads(path.read_text(encoding="utf-8")))
    for _ in range(2):  # parsed and written, then read back from the copy
        monkeypatch.setattr(api, "_table", None)
        table = api.torch_api()
        assert vars(table) == vars(truth)
        monkeypatch.setattr(api, "_parse_toml", lambda source: 1 / 0)  # not parsed again
    assert list(tmp_path.rglob("torch_api.toml.json"))


# -- the collector is off while the program imports (devicelint.collector.start_up) ----------

_COLLECTIONS = """
import atexit, gc, json, sys
def _collections():
    return sum(s["collections"] for s in gc.get_stats())
def _report():
    print("GC " + json.dumps({"enabled": gc.isenabled(), "frozen": gc.get_freeze_count(),
                              "collections": _collections() - before}), file=sys.stderr)
atexit.register(_report)
sys.argv = ["devicelint", *sys.argv[1:]]
before = _collections()  # from here: click, the runner, libcst, the engine, the rules, the lint
from devicelint.__main__ import main  # the console script's entry point, as python -m's
main()
"""


def _collections(args: list[str], cwd: Path) -> dict:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "XDG_CACHE_HOME": str(cwd / "xdg")}
    done = subprocess.run([sys.executable, "-c", _COLLECTIONS, *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)
    line = [row for row in done.stderr.splitlines() if row.startswith("GC ")][-1]
    return json.loads(line[len("GC "):])


def test_the_program_imports_with_the_collector_off_then_freezes_the_imports(tmp_path: Path) -> None:
    """Importing click, libcst and the rules triggered ~80 collections that re-examined
    objects alive until the end (~17 ms of a ~170 ms run); now none run until the first
    file is linted, what is alive then is frozen, and the collector is on again."""
    import tomllib

    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["scripts"]
    assert scripts["devicelint"] == "devicelint.__main__:main"  # before click is imported
    (tmp_path / "train.py").write_text("import torch.nn as nn\n\nmodel = nn.DataParallel(nn.Linear(4, 4))\n")
    _collections(["--no-cache", "-q", "train.py"], tmp_path)  # the rule catalogue, once
    found = _collections(["--no-cache", "-q", "train.py"], tmp_path)
    assert found["enabled"] and found["frozen"] > 20_000, found
    assert found["collections"] < 10, found
    # Several files in one process: on again after the first, collections as usual.
    for i in range(3):
        (tmp_path / f"t{i}.py").write_text(f"import torch\nx{i} = torch.zeros(3).cuda().cpu()\n")
    many = _collections(["--no-cache", "-q", "t0.py", "t1.py", "t2.py"], tmp_path)
    assert many["enabled"] and many["frozen"] > 20_000, many


def test_every_command_but_check_switches_the_collector_on(monkeypatch) -> None:
    """`devicelint confirm` runs the user's program, `devicelint server` runs for hours:
    neither keeps the program's start-up collector off."""
    import gc

    import click

    from devicelint import collector
    from devicelint.cli import main

    assert gc.isenabled()
    monkeypatch.setattr(collector, "_starting", False)
    try:
        collector.start_up()
        assert not gc.isenabled()
        main.get_command(click.Context(main), "check")
        assert not gc.isenabled()
        main.get_command(click.Context(main), "rule")
        assert gc.isenabled()
        collector.started()  # a second time: nothing
        assert gc.isenabled()
    finally:
        gc.enable()
        gc.unfreeze()


def test_the_dataclasses_every_run_defines_have_docstrings() -> None:
    """dataclasses gives a class without a docstring one built from inspect.signature,
    at every start (~0.3M instructions a class): those that a run defines before any file
    is parsed (the runner's, discovery's, findings', documents', notebooks', the index's)
    have their own."""
    import dataclasses
    import inspect

    from devicelint import config, discovery, document, finding, notebook, project_index, runner

    for module in (config, discovery, document, finding, notebook, project_index, runner):
        for value in vars(module).values():
            if isinstance(value, type) and dataclasses.is_dataclass(value) and value.__module__ == module.__name__:
                generated = value.__name__ + str(inspect.signature(value)).replace(" -> None", "")
                assert value.__doc__ and value.__doc__ != generated, value


def test_hashing_small_texts_leaves_openssl_unloaded(tmp_path: Path, monkeypatch) -> None:
    """`import hashlib` sets OpenSSL up (~11M instructions); a run that hashes only a few
    short texts (the rules' signature, the settings, one small file's content key) uses
    Python's own SHA-256 and BLAKE2b, with the same digests, and hashlib's past
    SHA256_BUILTIN_BYTES (a warm run hashing every file)."""
    import hashlib

    from devicelint import datafile

    monkeypatch.setattr(datafile, "_sha256_bytes", 0)
    for data in (b"", b"abc", bytes(range(256)) * 100):
        assert datafile.sha256(data).hexdigest() == hashlib.sha256(data).hexdigest()
        assert type(datafile.sha256(data)).__module__ != "_hashlib"
    assert datafile.blake2b(b"x", digest_size=16).hexdigest() == hashlib.blake2b(b"x", digest_size=16).hexdigest()
    big = bytes(datafile.SHA256_BUILTIN_BYTES)
    assert datafile.sha256(big).hexdigest() == hashlib.sha256(big).hexdigest()
    assert type(datafile.sha256(b"abc")).__name__ == "HASH"  # OpenSSL's, from now on

    (tmp_path / "one.py").write_text("import os\nprint(os.sep)\n")
    probe = ("import atexit, sys\n"
             "atexit.register(lambda: print('OPENSSL', '_hashlib' in sys.modules, 'hmac' in sys.modules, file=sys.stderr))\n"
             "sys.argv = ['devicelint', *sys.argv[1:]]\n"
             "from devicelint.__main__ import main\n"
             "main()\n")
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "xdg"), "PYTHONPATH": str(ROOT)}
    for args in (["--no-cache", "one.py"], ["one.py"], ["one.py"]):  # the catalogue; cached; served
        done = subprocess.run([sys.executable, "-c", probe, *args], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "OPENSSL False False" in done.stderr, done.stderr


def test_old_rule_catalogues_are_removed_past_the_most_recently_used(tmp_path: Path, monkeypatch) -> None:
    """Each upgrade (in a checkout, each edit) writes a catalogue under its own signature;
    the user's cache kept every one. Writing one now removes the others past the
    KEPT_CATALOGS most recently written or read, and nothing that is not a catalogue file."""
    from devicelint import rule
    from devicelint.datafile import SafeDir

    monkeypatch.setattr(rule, "KEPT_CATALOGS", 16)
    folder_path = tmp_path / "devicelint"
    folder_path.mkdir()
    names = [f"rules-{i:020x}.json" for i in range(30)]
    for age, name in enumerate(names):
        (folder_path / name).write_text("{}")
        os.utime(folder_path / name, ns=(10**18 + age * 10**9,) * 2)  # the last written is newest
    (folder_path / "rules-notes.json").write_text("mine")
    (folder_path / "results-0123.json").write_text("{}")
    (folder_path / f"rules-{'f' * 20}.json").mkdir()  # not a regular file
    with SafeDir.inside(str(tmp_path), ("devicelint",), create=False) as folder:
        rule._prune_catalogs(folder, names[0])  # the current one: the oldest of all here
    left = sorted(p.name for p in folder_path.iterdir())
    kept = names[-(rule.KEPT_CATALOGS - 1):]
    assert left == sorted([names[0], *kept, "rules-notes.json", "results-0123.json", f"rules-{'f' * 20}.json"])



def test_reading_a_rule_catalogue_marks_it_used(tmp_path: Path, monkeypatch) -> None:
    """An install in use keeps its catalogue among the most recent (pruning keeps those):
    a read sets its mtime when the mark is over an hour old."""
    import time

    from devicelint import rule

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setattr(rule, "_registry", None)
    monkeypatch.setattr(rule, "_catalog", None)
    rule.rule_catalog()  # no file yet: the rules are imported, the catalogue written
    path = tmp_path / "devicelint" / f"rules-{rule.signature()}.json"
    assert path.is_file()
    old = time.time() - 2 * rule.MARK_AFTER_S
    os.utime(path, (old, old))
    monkeypatch.setattr(rule, "_registry", None)
    monkeypatch.setattr(rule, "_catalog", None)
    rule.rule_catalog()  # read from the file
    assert rule._registry is None  # (not rebuilt from the rules)
    assert path.stat().st_mtime > time.time() - 60


def test_a_run_that_reads_the_rule_catalogue_does_not_import_pkgutil(tmp_path: Path) -> None:
    """pkgutil lists the built-in rules only when the catalogue is built (`all_rules`)."""
    (tmp_path / "one.py").write_text("import torch\nx = torch.zeros(3)\n")
    probe = ("import atexit, sys\natexit.register(lambda: print('PKGUTIL', 'pkgutil' in sys.modules, file=sys.stderr))\n"
             + _PROBE)
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "xdg"), "PYTHONPATH": str(ROOT)}
    rows = []
    for _ in range(2):  # the first run builds the catalogue, the second reads it
        done = subprocess.run([sys.executable, "-c", probe, "--no-cache", "-q", "one.py"], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=120)
        rows.append([row for row in done.stderr.splitlines() if row.startswith("PKGUTIL ")][-1])
    assert rows == ["PKGUTIL True", "PKGUTIL False"]

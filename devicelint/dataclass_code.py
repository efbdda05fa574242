"""Dataclass methods compiled once per Python version, not at every start (issue 17).

Python writes each dataclass's methods (`__init__`, `__repr__`, `__eq__`, `__hash__`, a
frozen class's `__setattr__`...) as source text and compiles it, with dataclasses' `exec`,
when the class is defined. libcst's node classes are about 200 dataclasses: compiling their
~1,000 methods costs about 100 ms of CPU, a third of linting one small file (start-up
included), more than the lint itself. `install()` puts a stand-in for `exec` into the
dataclasses module: for a class of libcst or of devicelint, the code compiled from the very
same text is looked up in a table kept from earlier runs, and the text is compiled (and kept)
only when it is not there. The functions made are those Python makes: same text, same file
name ("<string>"), same compiler flags; only the compiling is skipped. Each package has its
own table, read when its first class is defined: devicelint's from the start of every run
(the command line, the runner and the cache define about 20 dataclasses), libcst's (~0.9 MB,
~5 ms to read) only by a run that parses a file.

The table holds code, so it lives where Python keeps devicelint's own compiled code: the
package's `__pycache__` folder (under `sys.pycache_prefix` when one is set), opened without
following links. Whoever can write there can change devicelint itself; it is never in a
project's folder or its result cache, which may come with a checkout, nor in the user's cache.
As for `.pyc` files, nothing is written when Python is told not to write bytecode
(`PYTHONDONTWRITEBYTECODE`, `-B`): `python -m devicelint.dataclass_code` then writes the table
once (and the parsed API table, datafile.parsed_once), as `python -m compileall` writes
`.pyc` files. A table of another Python (version, implementation, optimisation level: the
file's name) is never read; one that does not unmarshal into texts and code objects is
ignored. Other classes (the user's, where
`devicelint confirm` runs code) are compiled as usual, never served, never stored.
"""

from __future__ import annotations

import atexit
import builtins
import dataclasses
import marshal
import os
import sys
import types
from typing import Optional

HEADER = b"devicelint-dataclass-code 2\n"
OWNERS = ("libcst", "devicelint")  # the packages whose classes are served from the table
MAX_ENTRIES = 4_000  # past this, a file keeps only what the last run used (libcst's: ~800)
MAX_BYTES = 64 << 20


class Table:
    """Code objects by owner (a package of OWNERS) and the text they were compiled from,
    each owner's read when its first class is defined (`load(owner)`: returns them); the
    texts this run compiled anew and those it served, by owner."""

    def __init__(self, load) -> None:
        self.load = load
        self.codes: dict[str, dict[str, types.CodeType]] = {}
        self.new: dict[str, dict[str, types.CodeType]] = {}
        self.served: dict[str, set[str]] = {}

    def exec(self, source, globals=None, locals=None, /, *args, **kwargs):
        """`exec` as dataclasses calls it, serving an owner's text from its table."""
        if type(source) is not str or args or kwargs:
            return builtins.exec(source, globals, locals, *args, **kwargs)
        owner = _owner(globals)
        codes = None
        if owner is not None:
            codes = self.codes.get(owner)
            if codes is None:
                codes = self.codes[owner] = self.load(owner)
        code = codes.get(source) if codes is not None else None
        if code is not None:
            self.served.setdefault(owner, set()).add(source)
        else:
            # Compiled as dataclasses' own `exec(text)` compiles it: that module has no
            # __future__ imports, and a text exec'd from here would inherit this module's.
            code = compile(source, "<string>", "exec", dont_inherit=True)
            if codes is not None:
                self.new.setdefault(owner, {})[source] = codes[source] = code
        return builtins.exec(code, globals, locals)


def _owner(globals) -> Optional[str]:
    """The package of OWNERS whose module defines the class, or None."""
    name = globals.get("__name__") if type(globals) is dict else None
    if type(name) is not str:
        return None
    package = name.partition(".")[0]
    return package if package in OWNERS else None


_table: Optional[Table] = None


def file_name(owner: str) -> str:
    """This Python's table of `owner`'s classes: bytecode differs between versions
    (pre-releases included, hence the whole hexversion), implementations and optimisation
    levels."""
    return (f"dataclass-code-{owner}-{sys.implementation.cache_tag}-{sys.hexversion:x}"
            f"-O{sys.flags.optimize}.marshal")


def _folder(create: bool):
    """The package's bytecode folder (datafile.bytecode_dir), or None."""
    from devicelint.datafile import bytecode_dir

    return bytecode_dir(os.path.dirname(os.path.abspath(__file__)), create)


def parse(data: Optional[bytes]) -> dict[str, types.CodeType]:
    """The table in `data`, or {} when it is anything else."""
    if not data or not data.startswith(HEADER):
        return {}
    try:
        table = marshal.loads(data[len(HEADER):])
    except (ValueError, EOFError, TypeError, MemoryError, RecursionError):
        return {}
    if type(table) is not dict:
        return {}
    for text, code in table.items():
        if type(text) is not str or type(code) is not types.CodeType:
            return {}
    return table


def _load(owner: str) -> dict[str, types.CodeType]:
    if owner not in OWNERS:
        return {}
    folder = _folder(create=False)
    if folder is None:
        return {}
    with folder:
        name = file_name(owner)
        info = folder.stat(name)
        if info is None or info.st_mode & 0o002:  # a file anyone may write is not code to run
            return {}
        return parse(folder.read(name, MAX_BYTES))


def install() -> None:
    """Serve dataclass methods from the table from now on, in this process; what is compiled
    meanwhile is added to the table at exit. Does nothing a second time, or where something
    else already replaced dataclasses' exec."""
    global _table
    if _table is not None or "exec" in vars(dataclasses):
        return
    _table = Table(_load)
    dataclasses.exec = _table.exec  # a module global shadows the builtin for that module
    atexit.register(save)


def save(force: bool = False) -> None:
    """Write each owner's table to which this run added anything, unless Python writes no
    bytecode (`force`: write anyway). A pool's forked workers exit without running this:
    only the process that installed the table writes it."""
    if _table is None or not _table.new or (sys.dont_write_bytecode and not force):
        return
    tables = {}
    for owner, new in _table.new.items():
        codes = _table.codes[owner]
        if len(codes) > MAX_ENTRIES:
            codes = {text: codes[text] for text in (*_table.served.get(owner, ()), *new)}
        try:
            tables[owner] = HEADER + marshal.dumps(codes)
        except ValueError:
            continue
    folder = _folder(create=True)
    if folder is None:
        return
    try:
        with folder:
            for owner, data in tables.items():
                folder.replace(file_name(owner), data)
                del _table.new[owner]
    except OSError:
        return  # a read-only installation: the next run compiles again


def main() -> None:
    """Write the tables for what linting imports (the runner, libcst, the engine, every
    rule, the reporters), and the parsed API table (devicelint.semantic.api), even where
    Python writes no bytecode."""
    sys.dont_write_bytecode = False
    install()
    from devicelint import document, reporters, runner  # noqa: F401

    import libcst  # noqa: F401

    from devicelint import engine  # noqa: F401
    from devicelint.rule import all_rules
    from devicelint.semantic.api import torch_api

    all_rules()
    torch_api()
    save(force=True)
    folder = _folder(create=False)
    for owner in OWNERS:
        where = os.path.join(folder.path, file_name(owner)) if folder is not None else "nowhere (no writable folder)"
        print(f"{len(_table.codes.get(owner, ()))} dataclass methods of {owner} written to {where}")


if __name__ == "__main__":
    main()

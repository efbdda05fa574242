"""Dataclass methods compiled once per Python version, not at every start (issue 17).

Python writes each dataclass's methods (`__init__`, `__repr__`, `__eq__`, `__hash__`, a
frozen class's `__setattr__`...) as source text and compiles it, with dataclasses' `exec`,
when the class is defined. libcst's node classes are about 200 dataclasses: compiling their
~1,000 methods costs about 100 ms of CPU, a third of linting one small file (start-up
included), more than the lint itself. `install()` puts a stand-in for `exec` into the
dataclasses module: for a class of libcst or of devicelint, the code compiled from the very
same text is looked up in a table kept from earlier runs, and the text is compiled (and kept)
only when it is not there. The functions made are those Python makes: same text, same file
name ("<string>"), same compiler flags; only the compiling is skipped.

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

HEADER = b"devicelint-dataclass-code 1\n"
OWNERS = ("libcst", "devicelint")  # the packages whose classes are served from the table
MAX_ENTRIES = 4_000  # past this, the file keeps only what the last run used (libcst's: ~1,000)
MAX_BYTES = 64 << 20


class Table:
    """Code objects by the text they were compiled from, read when first needed (`load`:
    returns them); the texts this run compiled anew and those it served."""

    def __init__(self, load) -> None:
        self.load = load
        self.codes: Optional[dict[str, types.CodeType]] = None
        self.new: dict[str, types.CodeType] = {}
        self.served: set[str] = set()

    def exec(self, source, globals=None, locals=None, /, *args, **kwargs):
        """`exec` as dataclasses calls it, serving an owner's text from the table."""
        if type(source) is not str or args or kwargs:
            return builtins.exec(source, globals, locals, *args, **kwargs)
        # Not before libcst is imported: a run that parses nothing does not read the table
        # (devicelint's few classes imported before then are compiled, as without it).
        owned = type(globals) is dict and "libcst" in sys.modules and _owned(globals)
        if owned and self.codes is None:
            self.codes = self.load()
        code = self.codes.get(source) if owned else None
        if code is not None:
            self.served.add(source)
        else:
            # Compiled as dataclasses' own `exec(text)` compiles it: that module has no
            # __future__ imports, and a text exec'd from here would inherit this module's.
            code = compile(source, "<string>", "exec", dont_inherit=True)
            if owned:
                self.new[source] = self.codes[source] = code
        return builtins.exec(code, globals, locals)


def _owned(globals: dict) -> bool:
    name = globals.get("__name__")
    return type(name) is str and name.partition(".")[0] in OWNERS


_table: Optional[Table] = None


def file_name() -> str:
    """This Python's table: bytecode differs between versions (pre-releases included, hence
    the whole hexversion), implementations and optimisation levels."""
    return (f"dataclass-code-{sys.implementation.cache_tag}-{sys.hexversion:x}"
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


def _load() -> dict[str, types.CodeType]:
    folder = _folder(create=False)
    if folder is None:
        return {}
    with folder:
        name = file_name()
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
    """Write the table if this run compiled anything new, unless Python writes no bytecode
    (`force`: write anyway). A pool's forked workers exit without running this: only the
    process that installed the table writes it."""
    if _table is None or not _table.new or (sys.dont_write_bytecode and not force):
        return
    codes = _table.codes or {}
    if len(codes) > MAX_ENTRIES:
        codes = {text: codes[text] for text in (*_table.served, *_table.new)}
    try:
        data = HEADER + marshal.dumps(codes)
    except ValueError:
        return
    folder = _folder(create=True)
    if folder is None:
        return
    try:
        with folder:
            folder.replace(file_name(), data)
    except OSError:
        return  # a read-only installation: the next run compiles again
    _table.new = {}


def main() -> None:
    """Write the table for what linting imports (libcst, the engine, every rule), and the
    parsed API table (devicelint.semantic.api), even where Python writes no bytecode."""
    sys.dont_write_bytecode = False
    install()
    import libcst  # noqa: F401

    from devicelint import engine  # noqa: F401
    from devicelint.rule import all_rules
    from devicelint.semantic.api import torch_api

    all_rules()
    torch_api()
    save(force=True)
    folder = _folder(create=False)
    where = os.path.join(folder.path, file_name()) if folder is not None else "nowhere (no writable folder)"
    print(f"{len(_table.codes or {})} dataclass methods written to {where}")


if __name__ == "__main__":
    main()

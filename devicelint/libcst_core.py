"""libcst's node classes and native parser without the rest of libcst, until asked for.

`import libcst` runs libcst/__init__.py, which imports every part of libcst: the node
classes and the native parser that linting needs, and also the pure-Python tokenizer (a few
dozen regular expressions compiled at import), the batched visitors, the helpers and the
whole metadata package (scope and type inference providers, subprocess). A one-file run
spends about 65M of its ~700M instructions on the parts it never uses (issue 17).

`install()` (the `check` command only, before anything imports libcst) puts a finder first
in `sys.meta_path` that, when `libcst` or `libcst.metadata` is first imported, makes the
package module as Python would but leaves its `__init__.py` unrun. A name asked of such a
package (`cst.Call`, `from libcst import CSTLogicError`, the native parser looking up the
classes it builds) that the package exports (`__all__`) is served from the few submodules
that define the core (CORE), imported on first use; any other name runs the package's
`__init__.py` in that same module, after which the package is the one a plain import
makes (the names served before are the same objects). `parse_module` parses with libcst's
native parser as `libcst.parse_module` does for a text. Nothing of the user's is involved:
only libcst's own files, found where Python finds them.
"""

from __future__ import annotations

import importlib
import re
import sys
import threading
from typing import Optional

# The submodules that serve a package's names, in the order they are searched.
CORE = {
    "libcst": (
        "libcst._exceptions", "libcst._nodes.base", "libcst._nodes.whitespace", "libcst._nodes.op",
        "libcst._nodes.expression", "libcst._nodes.statement", "libcst._nodes.module",
        "libcst._visitors", "libcst._maybe_sentinel", "libcst._removal_sentinel",
        "libcst._flatten_sentinel",
    ),
    "libcst.metadata": ("libcst.metadata.position_provider",),
}

# Compiled only when libcst is imported (a run whose files hold no rule's tokens never is).
_EXPORTS = r"^__all__ = \[\n(.*?)^\]"
_NAME = r"""^\s*["']([A-Za-z_][A-Za-z0-9_]*)["'],?\s*(?:#.*)?$"""
_lock = threading.RLock()
_MISSING = object()


class _Finder:
    """Finds a package of CORE as the other finders do and makes its loader a _Loader."""

    @staticmethod
    def find_spec(fullname: str, path=None, target=None):
        if fullname not in CORE:
            return None
        for finder in sys.meta_path:
            if finder is _Finder or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                break
        else:
            return None
        if fullname == "libcst.metadata":  # both handled: imports no longer ask this finder
            _uninstall()
        exported = _exported(spec)
        if exported is None:
            return spec  # not a layout this module knows: imported as usual
        spec.loader = _Loader(spec.loader, fullname, exported)
        return spec


def _exported(spec) -> Optional[frozenset]:
    """The names of the package's `__all__` (read from its `__init__.py`), or None."""
    loader = spec.loader
    if spec.submodule_search_locations is None or not hasattr(loader, "get_source") or not hasattr(loader, "exec_module"):
        return None
    try:
        source = loader.get_source(spec.name)
    except (ImportError, OSError, UnicodeDecodeError):
        return None
    found = re.search(_EXPORTS, source or "", re.M | re.S)
    names = frozenset(re.findall(_NAME, found.group(1), re.M)) if found else frozenset()
    return names or None


class _Loader:
    """Makes the package module without running its `__init__.py` (exec_module); everything
    else is the real loader's."""

    def __init__(self, real, name: str, exported: frozenset) -> None:
        self.real = real
        self.name = name
        self.exported = exported
        self.loading = False  # the package's own __init__.py is running

    def __getattr__(self, name: str):
        return getattr(self.real, name)

    def create_module(self, spec):
        return self.real.create_module(spec)

    def exec_module(self, module) -> None:
        def __getattr__(name: str):
            return self.serve(module, name)

        module.__getattr__ = __getattr__

    def core_value(self, name: str):
        """The exported `name` as a core submodule defines it, or _MISSING."""
        if name in self.exported:
            for core in CORE[self.name]:
                value = vars(importlib.import_module(core)).get(name, _MISSING)
                # libcst's own (a core module also holds what it imports: typing.Tuple)
                if getattr(value, "__module__", "").partition(".")[0] == "libcst":
                    return value
        return _MISSING

    def serve(self, module, name: str):
        with _lock:
            if name in module.__dict__:  # served meanwhile, by another thread
                return module.__dict__[name]
            value = self.core_value(name)
            if value is not _MISSING:
                setattr(module, name, value)
                return value
            if not self.loading:
                self.complete(module)
                if name in module.__dict__:
                    return module.__dict__[name]
        raise AttributeError(f"module {self.name!r} has no attribute {name!r}")

    def complete(self, module) -> None:
        """Run the package's `__init__.py` in `module`: from now on it is the package a
        plain import makes."""
        self.loading = True
        try:
            self.real.exec_module(module)
        finally:
            self.loading = False
        module.__dict__.pop("__getattr__", None)
        module.__loader__ = self.real
        if module.__spec__ is not None:
            module.__spec__.loader = self.real


def install() -> None:
    """From now on, in this process, libcst and libcst.metadata are imported in part (see
    the module's docstring). Nothing where libcst is imported already."""
    if "libcst" in sys.modules or _Finder in sys.meta_path:
        return
    sys.meta_path.insert(0, _Finder)


def _uninstall() -> None:
    try:
        sys.meta_path.remove(_Finder)
    except ValueError:
        pass


def partial(name: str = "libcst") -> bool:
    """True while the package `name` is imported in part (its `__init__.py` not run)."""
    module = sys.modules.get(name)
    return module is not None and isinstance(getattr(module, "__loader__", None), _Loader)


def parse_module(source: str):
    """`libcst.parse_module(source)` for a text: libcst's native parser with the encoding
    libcst gives a text (UTF-8), without importing libcst's Python tokenizer (which its
    entry point imports to detect a bytes source's encoding)."""
    import libcst

    if partial("libcst") and type(source) is str:
        try:
            native = importlib.import_module("libcst.native")
            parse = native.parse_module
            module_class = vars(importlib.import_module("libcst._nodes.module"))["Module"]
        except (ImportError, AttributeError, KeyError):
            return libcst.parse_module(source)
        result = parse(source, encoding="utf-8")
        if not isinstance(result, module_class):  # as libcst's entry point checks
            raise AssertionError
        return result
    return libcst.parse_module(source)

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
import operator
import re
import sys
import threading
import types
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
        result = _native_parse(parse, source)
        if not isinstance(result, module_class):  # as libcst's entry point checks
            raise AssertionError
        return result
    return libcst.parse_module(source)


def _call_native(source: str):
    # Run with _QUICK_GLOBALS as its globals (_native_parse): `_parse` is the native parser.
    return _parse(source, encoding="utf-8")  # noqa: F821 - a name of _QUICK_GLOBALS


# The native parser makes each node by `libcst.<Class>(**fields)`, fetching the module first
# with PyImport_Import("libcst") (pyo3's PyModule::import), once per node. That calls the
# `__import__` of the calling Python frame's builtins and then reads the module from
# sys.modules, discarding what `__import__` returned; builtins.__import__ itself (argument
# parsing, the module's spec checked for an import in progress) was 15% of the parse's
# instructions (callgrind, torchvision files). Called from a function whose globals' builtins
# hold a C callable that accepts those five arguments and does nothing of note, each node
# skips it; the module is in sys.modules (imported above), so what PyImport_Import returns
# is the same object. Nothing but the parser's own imports runs in that frame: the node
# classes' methods run with their own modules' globals.
_QUICK_GLOBALS: dict = {"__builtins__": {"__import__": operator.itemgetter}}
_quick = types.FunctionType(_call_native.__code__, _QUICK_GLOBALS, "_call_native")


def _native_parse(parse, source: str):
    """`parse(source, encoding="utf-8")` with the cheap `__import__` above; as a plain call
    where that fails (a libcst that imports a module not yet imported: PyImport_Import
    then finds nothing in sys.modules and raises KeyError or ImportError)."""
    if _QUICK_GLOBALS.get("_parse") is not parse:
        _QUICK_GLOBALS["_parse"] = parse
    try:
        return _quick(source)
    except (KeyError, ImportError):
        return parse(source, encoding="utf-8")


# -- node construction during a parse --------------------------------------------------------

class QuickInits:
    """Faster `__init__`s for libcst's node classes, swapped in while the native parser
    builds a tree (safe_parse._parse) and swapped back after.

    Each node class is a frozen dataclass with slots: its generated `__init__` stores every
    field with `object.__setattr__(self, name, value)` (a slot wrapper call that makes a
    bound wrapper and an argument tuple, then looks the name up in the class's MRO) and then
    calls `self.__post_init__()` (validation, which a parse skips anyway: safe_parse._parse).
    The quick `__init__` has the same parameters and the same defaults (the original
    function's own `__defaults__`), and stores each value through the slot's descriptor
    (`member_descriptor.__set__`, bound once): the same slots get the same values, without
    the validation. A field whose default is a factory gets what the original `__init__`
    gives it (the factory called when the argument is left out). A class whose `__init__`
    does anything else (a field with `init=False`, its own `__post_init__`, a field not in a
    slot) keeps its own. Node construction was about 27% of the parse's instructions
    (callgrind, torchvision's model files); the quick one is about 40% cheaper per node."""

    def __init__(self) -> None:
        import dataclasses
        import types as _types

        import libcst as cst

        for core in CORE["libcst"]:  # every node class defined (imported in part, some may not be yet)
            if core.startswith("libcst._nodes."):
                importlib.import_module(core)
        base = cst.CSTNode
        post_init = base.__dict__.get("__post_init__")
        hdf = getattr(dataclasses, "_HAS_DEFAULT_FACTORY", None)
        self.swaps: list[tuple[type, object, object]] = []  # (class, quick, original)
        if post_init is None or hdf is None:
            return
        classes, seen, stack = [], set(), [base]
        while stack:
            for sub in stack.pop().__subclasses__():
                if sub not in seen:
                    seen.add(sub)
                    stack.append(sub)
                    classes.append(sub)
        lines: list[str] = []
        names: dict = {"_HDF": hdf, "__name__": __name__}
        plans = []
        for number, cls in enumerate(classes):
            original = cls.__dict__.get("__init__")
            if (original is None or "__slots__" not in cls.__dict__ or not dataclasses.is_dataclass(cls)
                    or getattr(cls, "__post_init__", None) is not post_init
                    or type(original) is not _types.FunctionType):
                continue
            fields = dataclasses.fields(cls)
            code = original.__code__
            params = code.co_varnames[1:code.co_argcount + code.co_kwonlyargcount]
            if (any(not f.init for f in fields) or tuple(f.name for f in fields) != params
                    or code.co_posonlyargcount or code.co_flags & 0x0C):  # *args / **kwargs
                continue
            stores = []
            for index, field in enumerate(fields):
                slot = next((vars(k)[field.name] for k in cls.__mro__ if field.name in vars(k)), None)
                if type(slot) is not _types.MemberDescriptorType:
                    break
                setter = f"_s{number}_{index}"
                names[setter] = slot.__set__
                value = field.name
                if field.default_factory is not dataclasses.MISSING:
                    factory = f"_f{number}_{index}"
                    names[factory] = field.default_factory
                    value = f"{factory}() if {field.name} is _HDF else {field.name}"
                stores.append(f" {setter}(self, {value})\n")
            else:
                kwonly = params[code.co_argcount - 1:]
                head = ", ".join(("self", *params[:code.co_argcount - 1], *(("*", *kwonly) if kwonly else ())))
                lines.append(f"def _i{number}({head}):\n" + ("".join(stores) or " pass\n"))
                plans.append((number, cls, original))
        if not plans:
            return
        text = "".join(lines)
        # Where the program serves dataclasses' methods from compiled code kept between runs
        # (devicelint.dataclass_code puts its `exec` into the dataclasses module), these are
        # served and kept the same way; else compiled here.
        serve = vars(dataclasses).get("exec")
        if serve is not None:
            serve(text, names)
        else:
            exec(compile(text, "<devicelint-quick-inits>", "exec", dont_inherit=True), names)
        for number, cls, original in plans:
            quick = names[f"_i{number}"]
            quick.__defaults__ = original.__defaults__
            quick.__kwdefaults__ = original.__kwdefaults__
            quick.__qualname__ = original.__qualname__
            self.swaps.append((cls, quick, original))

    def install(self) -> None:
        for cls, quick, _original in self.swaps:
            cls.__init__ = quick

    def remove(self) -> None:
        for cls, _quick, original in self.swaps:
            cls.__init__ = original


_quick_inits: Optional[QuickInits] = None


def quick_inits(make: bool = True) -> Optional[QuickInits]:
    """The process's QuickInits: made on first use, or None when not made yet and not `make`
    (a process inherits them from the parent that forked it: runner._run_jobs)."""
    global _quick_inits
    if _quick_inits is None and make:
        _quick_inits = QuickInits()
    return _quick_inits

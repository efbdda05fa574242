"""The rule base class and the registry of rules (built-in and from plugins).

A rule is a small class in its own module under `rules/` (shipped as `devicelint.rules`):

    class DataParallel(Rule):
        code = "DL005"
        name = "data-parallel"
        summary = "`nn.DataParallel` is slower than `DistributedDataParallel`"
        tokens = ("DataParallel",)     # the file must contain one of these to be parsed for it

        def visit_Call(self, node): ...
            self.report(node, "message")

Handlers are named `visit_<NodeType>` / `leave_<NodeType>` after libcst node classes. All
enabled rules share one traversal of one parse. The file is indexed before the first handler
runs, so `ctx.parent()`, `ctx.scope()`, `ctx.bindings()` and `ctx.qualname()` already know the
whole file (names bound or imported further down included) in any handler. The class docstring is the rule's docs, with
the sections "Why is this bad?", "Example" and "Use instead".
"""

from __future__ import annotations

import importlib
import inspect
import os
import re
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable, ClassVar, Optional

from devicelint.datafile import sha256

if TYPE_CHECKING:  # libcst is imported only when a file is actually parsed
    import libcst as cst

    from devicelint.runtime_spec import RuntimeSpec

    from devicelint.context import FileContext

CODE_RE = re.compile(r"^[A-Z]+[0-9]+$")


class Rule:
    code: ClassVar[str] = ""
    name: ClassVar[str] = ""
    summary: ClassVar[str] = ""
    message: ClassVar[str] = ""
    # What to do about a finding, in one clause (`--output-format full` prints it as
    # `help:` under findings without a fix). The message says what and where, short as
    # ruff's; why it matters and what it costs live in the docstring.
    hint: ClassVar[str] = ""
    severity: ClassVar[str] = "warning"
    default_enabled: ClassVar[bool] = True
    # Prefilter: a file none of whose text contains one of these is not parsed for the rule.
    # An empty tuple means the rule needs every file.
    tokens: ClassVar[tuple[str, ...]] = ()
    # The file gate (devicelint/gate.py): `gate(facts) -> bool`, a staticmethod saying from
    # the file's `ast` facts whether the rule may report anything there (a necessary
    # condition of every finding; True when unsure). None: the rule runs on every file its
    # tokens match.
    gate: ClassVar[Optional[Callable]] = None
    fixable: ClassVar[bool] = False
    # How often the rule's findings are right, as code scanning ranks results (SARIF
    # `properties.precision`): "high" once at least 20 judged cases (docs/audit.md) are at
    # least 95% right, "medium" while fewer are judged.
    precision: ClassVar[str] = "medium"
    # What `devicelint confirm` watches and how it judges a flagged line; None: no probe
    # (the runtime reports the rule's findings as inconclusive). See devicelint/runtime_spec.py.
    runtime: ClassVar[Optional[RuntimeSpec]] = None

    def __init__(self, ctx: FileContext) -> None:
        self.ctx = ctx

    def report(
        self,
        node: cst.CSTNode,
        message: Optional[str] = None,
        *,
        replacement: Optional[cst.CSTNode] = None,
        replace: Optional[cst.CSTNode] = None,
        safe: bool = True,
        fix_description: str = "",
        related: tuple = (),
    ) -> None:
        """Report a finding at `node`. A fix replaces `replace` (default: `node`) with
        `replacement`; `safe=False` marks it as needing `--unsafe-fixes`. `related`:
        (node, message) pairs the finding also points at (a host read inside a helper)."""
        from devicelint.context import Report

        self.ctx.report(
            Report(
                rule=self,
                node=node,
                message=message or self.message or self.summary,
                fix=replacement,
                fix_node=replace if replace is not None else node,
                fix_safe=safe,
                fix_description=fix_description,
                related=tuple(related),
            )
        )

    @classmethod
    def docs(cls) -> str:
        return inspect.cleandoc(cls.__doc__ or cls.summary)

    @classmethod
    def handlers(cls) -> list[str]:
        found = cls.__dict__.get("_handler_names")
        if found is None:  # once per class, not once per file
            found = [n for n in dir(cls) if n.startswith(("visit_", "leave_"))]
            cls._handler_names = found
        return found


_registry: Optional[dict[str, type[Rule]]] = None


def _rules_in_module(module) -> list[type[Rule]]:
    found = []
    for value in vars(module).values():
        if (
            isinstance(value, type)
            and issubclass(value, Rule)
            and value is not Rule
            and value.code
            and value.__module__ == module.__name__
        ):
            found.append(value)
    return found


def _check(rule: type[Rule], origin: str) -> None:
    if not CODE_RE.match(rule.code) or not rule.name:
        raise RuntimeError(f"rule {rule!r} from {origin} needs a code like DL001 and a name")


def all_rules() -> dict[str, type[Rule]]:
    """Every known rule by code: built-ins, then the `devicelint.rules` entry points."""
    global _registry
    if _registry is not None:
        return _registry
    import pkgutil  # here: a run that reads the rule catalogue never lists the rules

    import devicelint.rules as builtin
    registry: dict[str, type[Rule]] = {rule.code: rule for rule in DIAGNOSTICS}

    for info in sorted(pkgutil.iter_modules(builtin.__path__), key=lambda i: i.name):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"devicelint.rules.{info.name}")
        for rule in _rules_in_module(module):
            _check(rule, module.__name__)
            registry[rule.code] = rule
    for rule in _plugin_rules():
        registry.setdefault(rule.code, rule)
    _registry = dict(sorted(registry.items()))
    return _registry


def _plugin_rules() -> list[type[Rule]]:
    from importlib.metadata import entry_points

    found = []
    for ep in entry_points(group="devicelint.rules"):
        loaded = ep.load()
        candidates = [loaded] if isinstance(loaded, type) else _rules_in_module(loaded)
        for rule in candidates:
            _check(rule, f"entry point {ep.name}")
            found.append(rule)
    return found


@dataclass(frozen=True)
class RuleMeta:
    """What the engine needs to know about a rule without importing it (or libcst)."""

    code: str
    name: str
    summary: str
    severity: str
    default_enabled: bool
    tokens: tuple[str, ...]
    fixable: bool
    has_handlers: bool
    hint: str = ""
    why: str = ""  # the first sentence of the docstring's "Why is this bad?"
    module: str = ""  # where the class is defined: a run imports only the rules it needs


# A built-in rule's module: the only kind `rule_class` imports by the name a catalogue names
# (a plugin's rules are loaded through its entry point, by `all_rules`).
BUILTIN_RULE_MODULE = re.compile(r"^devicelint\.rules\.[a-z][a-z0-9_]*$")


def rule_class(rule: type[Rule] | RuleMeta) -> type[Rule]:
    """The class of `rule`; a catalogue entry (RuleMeta) stands for a rule not imported yet,
    and only its own module is imported (issue 17: linting a small file imports the rules
    whose tokens occur in it, and the parts of the semantic model those use, not all)."""
    if not isinstance(rule, RuleMeta):
        return rule
    if _registry is not None:  # the rules are imported already (or a test swapped them)
        return _registry[rule.code]
    if BUILTIN_RULE_MODULE.match(rule.module):
        for found in _rules_in_module(importlib.import_module(rule.module)):
            if found.code == rule.code:
                return found
    return all_rules()[rule.code]


def rule_codes() -> set[str]:
    """Every known rule's code, without importing the rules when they are not imported yet."""
    return set(_registry if _registry is not None else rule_catalog())


def why_sentence(docs: str) -> str:
    """The first sentence of a rule docstring's `## Why is this bad?` section, one line."""
    match = re.search(r"^## Why is this bad\?\s*\n(.*?)(?=^## |\Z)", docs, re.S | re.M)
    text = " ".join(match.group(1).split()) if match else ""
    return re.split(r"(?<=[.!?])\s+(?=[A-Z`])", text, maxsplit=1)[0] if text else ""


_catalog: Optional[dict[str, RuleMeta]] = None


def _signature() -> str:
    """Changes whenever devicelint's code, its semantic model (code and API table), its
    built-in rules or the installed plugins do: stat() of each source file, no reads."""
    import devicelint

    parts = [devicelint.__version__]
    package = Path(devicelint.__file__).parent
    import devicelint.rules as builtin

    for folder in (package, package / "semantic", *map(Path, builtin.__path__)):
        try:
            for entry in sorted(os.scandir(folder), key=lambda e: e.name):
                if entry.name.endswith((".py", ".toml")):
                    info = entry.stat()
                    parts.append(f"{entry.path}:{info.st_mtime_ns}:{info.st_size}")
        except OSError:
            parts.append(f"{folder}:unreadable")
    parts.extend(_plugin_declarations())
    return sha256("\n".join(parts).encode()).hexdigest()[:20]


def _plugin_declarations() -> list[str]:
    """Every installed distribution's entry_points.txt that declares devicelint rules, with
    its content: installing, upgrading or removing a plugin changes the list. Read from the
    sys.path directories directly: importing importlib.metadata costs about a quarter of a
    one-file run's start-up (35 of 140 ms CPU), and this runs on every run."""
    found = []
    for directory in sys.path:
        try:
            entries = sorted(e.name for e in os.scandir(directory or "."))
        except OSError:
            continue
        for name in entries:
            if not name.endswith((".dist-info", ".egg-info")):
                continue
            try:
                with open(os.path.join(directory or ".", name, "entry_points.txt"), "rb") as handle:
                    text = handle.read(1 << 20)
            except OSError:
                continue
            if b"devicelint.rules" in text:
                found.append(f"plugin:{directory}/{name}:{sha256(text).hexdigest()}")
    return found


CATALOG_FORMAT = "devicelint-rules-3"


def _catalog_dir() -> tuple[str, str]:
    """($XDG_CACHE_HOME or ~/.cache, "devicelint"): the base is the user's, links and all;
    devicelint's own folder below it is never a link (see `datafile.SafeDir`)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.abspath(base), "devicelint"


def _catalog_from(payload: object) -> Optional[dict[str, RuleMeta]]:
    """The catalogue in `payload`, or None unless every field of every rule has its type
    (a foreign or garbled file is rebuilt from the rules, never trusted)."""
    if not isinstance(payload, dict) or not payload:
        return None
    catalog = {}
    for code, meta in payload.items():
        if not isinstance(meta, dict) or set(meta) != _META_TYPES.keys():
            return None
        if any(type(meta[name]) is not kind for name, kind in _META_TYPES.items()):
            return None
        if meta["code"] != code or not CODE_RE.match(code) or not all(type(t) is str for t in meta["tokens"]):
            return None
        catalog[code] = RuleMeta(**{**meta, "tokens": tuple(meta["tokens"])})
    if not {rule.code for rule in DIAGNOSTICS} <= catalog.keys():  # the engine's own diagnostics
        return None
    return catalog


_META_TYPES = {
    "code": str, "name": str, "summary": str, "severity": str, "default_enabled": bool,
    "tokens": list, "fixable": bool, "has_handlers": bool, "hint": str, "why": str, "module": str,
}


def signature() -> str:
    """Fingerprint of the code that produces findings (for the results cache)."""
    global _signature_value
    if _signature_value is None:
        _signature_value = _signature()
    return _signature_value


_signature_value: Optional[str] = None


_metadata_memo: dict[int, tuple[dict, dict[str, RuleMeta]]] = {}


def _metadata(registry: dict[str, type[Rule]]) -> dict[str, RuleMeta]:
    memo = _metadata_memo.get(id(registry))
    if memo is not None and memo[0] is registry:
        return memo[1]
    catalog = {
        code: RuleMeta(
            code=code, name=rule.name, summary=rule.summary, severity=rule.severity,
            default_enabled=rule.default_enabled, tokens=tuple(rule.tokens),
            fixable=bool(getattr(rule, "fixable", False)), has_handlers=bool(rule.handlers()),
            hint=rule.hint, why=why_sentence(rule.docs()), module=rule.__module__,
        )
        for code, rule in registry.items()
    }
    _metadata_memo.clear()
    _metadata_memo[id(registry)] = (registry, catalog)
    return catalog


def rule_catalog() -> dict[str, RuleMeta]:
    """Metadata of every rule, from a small cache file when nothing changed, so that a run
    whose files are all cached (or hold no PyTorch code) never imports the rules or libcst."""
    global _catalog
    if _registry is not None:
        # The rules are imported already (or a test swapped the registry): use them.
        return _metadata(_registry)
    if _catalog is not None:
        return _catalog
    from devicelint.datafile import SafeDir, UnsafePath, decode, encode

    base, folder_name = _catalog_dir()
    name = f"rules-{signature()}.json"
    try:
        folder = SafeDir.inside(base, (folder_name,), create=False)
    except (UnsafePath, OSError):
        folder = None
    if folder is not None:
        with folder:
            found = _catalog_from(decode(CATALOG_FORMAT, folder.read(name, 10_000_000)))
            if found is not None:
                _mark_used(folder, name)
        if found is not None:
            _catalog = found
            return _catalog
    _catalog = _metadata(all_rules())
    try:
        os.makedirs(base, exist_ok=True)
        folder = SafeDir.inside(base, (folder_name,), create=True)
        if folder is not None:
            with folder:
                folder.replace(name, encode(CATALOG_FORMAT, {c: asdict(m) for c, m in _catalog.items()}))
                _prune_catalogs(folder, name)
    except (UnsafePath, OSError):
        pass  # no writable cache directory: the next run imports the rules again
    return _catalog


KEPT_CATALOGS = 32  # one per devicelint install, version and edit: the most recently used are kept
MARK_AFTER_S = 3600  # a catalogue read is marked used (its mtime) when its mark is older than this
_CATALOG_NAME = r"^rules-[0-9a-f]{20}\.json$"  # compiled when a catalogue is written (re.match)


def _mark_used(folder, name: str) -> None:
    """Set the catalogue's mtime to now when it is older than MARK_AFTER_S: the catalogues
    that installs in use read stay among the newest, which pruning keeps."""
    import time

    info = folder.stat(name)
    if info is None or info.st_mtime > time.time() - MARK_AFTER_S or os.utime not in os.supports_follow_symlinks:
        return
    try:
        if folder.fd is not None and os.utime in os.supports_dir_fd:
            os.utime(name, dir_fd=folder.fd, follow_symlinks=False)
        else:
            os.utime(os.path.join(folder.path, name), follow_symlinks=False)
    except OSError:
        pass


def _prune_catalogs(folder, current: str) -> None:
    """Remove the catalogues of other signatures past the KEPT_CATALOGS most recently used
    (written, or read: `_mark_used`): each upgrade (and, in a checkout, each edit) writes
    one, and none was ever removed (a developer's cache held 1,007). Regular files with a
    catalogue's name only."""
    import stat

    found = []
    for name in folder.names():
        if name == current or not re.match(_CATALOG_NAME, name):
            continue
        info = folder.stat(name)
        if info is not None and stat.S_ISREG(info.st_mode):
            found.append((info.st_mtime_ns, name))
    for _written, name in sorted(found, reverse=True)[KEPT_CATALOGS - 1:]:
        folder.unlink(name)


# -- the engine's own diagnostics: findings about files it cannot lint. They are listed and
# selectable like rules, but no rule module detects them (devicelint/diagnostics.py builds them).


class SyntaxErrorDiagnostic(Rule):
    """## What it does
    Reports a file that does not parse as Python, at the parser's line and column.

    ## Why is this bad?
    devicelint cannot check a file it cannot parse; neither can Python run it. Other files
    are still linted.
    """

    code = "DL900"
    name = "syntax-error"
    summary = "File does not parse"
    severity = "error"
    precision = "very-high"  # a fact: a parse failure, an unreadable file, a comment


class UnusedSuppression(Rule):
    """## What it does
    Reports a `# noqa: DLxxx` or `# devicelint: ignore[DLxxx]` comment naming a code that
    suppresses nothing on its line, a DL code that no rule has (`# noqa: DL099`), an entry
    that is no code (`ignore[DL 5]`), and `# noqa DL005` without its colon (which flake8,
    ruff and devicelint read as a bare `# noqa`: every code on the line is suppressed).
    Only codes of enabled rules are judged unused (a disabled rule never had the chance to
    report); a bare `# noqa` and other tools' codes (`E501`) are never reported.

    ## Why is this bad?
    A stale suppression hides the next real finding on that line. After a fix, or after
    `--add-noqa` adopted devicelint in a large repository, the comments that no longer
    suppress anything should go.

    ## Example
    ```python
    model = DistributedDataParallel(net)  # noqa: DL005
    ```

    ## Use instead
    ```python
    model = DistributedDataParallel(net)
    ```
    To keep such a comment on purpose, add DL901 to it: `# noqa: DL005, DL901`.

    ## Fix safety
    The fix removes the codes it reports from the comment, and the whole directive when no
    code is left (other text in the comment stays). It is safe: those codes suppress
    nothing. Adding the missing colon to `# noqa DL005` is unsafe: the line's other codes
    are reported again.
    """

    code = "DL901"
    name = "unused-suppression"
    summary = "Suppression comment for a code that reports nothing here"
    severity = "warning"
    precision = "very-high"  # a fact: a parse failure, an unreadable file, a comment
    fixable = True


class UnreadableFileDiagnostic(Rule):
    """## What it does
    Reports a path that cannot be linted: it does not exist, cannot be read, is not valid
    text in its declared encoding (UTF-8 unless a PEP 263 coding cookie says otherwise),
    holds NUL bytes, or is larger than `max-file-size`.

    ## Why is this bad?
    A file the linter silently skips is a file nobody checked.
    """

    code = "DL902"
    name = "unreadable-file"
    summary = "File cannot be read"
    severity = "error"
    precision = "very-high"  # a fact: a parse failure, an unreadable file, a comment


DIAGNOSTICS = (SyntaxErrorDiagnostic, UnusedSuppression, UnreadableFileDiagnostic)

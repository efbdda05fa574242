"""Settings: `[tool.devicelint]` in the nearest pyproject.toml, overridden by the CLI."""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from devicelint.datafile import sha256
from devicelint.diagnostics import SYNTAX_ERROR, UNREADABLE

# ruff's default excludes (ruff 0.17: `ruff check --show-settings`), plus devicelint's own
# cache. Not `env`/`.env` (an RL project's `env/` is source) nor `build` (ruff dropped it).
DEFAULT_EXCLUDE = (
    ".bzr", ".direnv", ".eggs", ".git", ".git-rewrite", ".hg", ".ipynb_checkpoints",
    ".mypy_cache", ".nox", ".pants.d", ".pyenv", ".pytest_cache", ".pytype", ".ruff_cache",
    ".svn", ".tox", ".venv", ".vscode", "__pypackages__", "_build", "buck-out", "dist",
    "node_modules", "site-packages", "venv", ".devicelint_cache",
)
DEFAULT_MAX_FILE_SIZE = 5_000_000  # bytes; larger files get DL902 instead of a slow parse

KNOWN_KEYS = {
    "select", "ignore", "extend-select", "exclude", "extend-exclude", "per-file-ignores",
    "respect-gitignore", "max-file-size", "force-exclude", "cache-dir", "confirm",
}


# A file that cannot be parsed or read is always said, whatever is selected.
ALWAYS_REPORTED = frozenset({SYNTAX_ERROR, UNREADABLE})


class ConfigError(Exception):
    """A malformed or invalid configuration: reported with exit code 2."""


@dataclass
class Settings:
    """The settings of a run: the `[tool.devicelint]` table over the defaults."""

    select: Optional[list[str]] = None
    ignore: list[str] = field(default_factory=list)
    extend_select: list[str] = field(default_factory=list)
    exclude: list[str] = field(default_factory=lambda: list(DEFAULT_EXCLUDE))
    extend_exclude: list[str] = field(default_factory=list)
    per_file_ignores: dict[str, list[str]] = field(default_factory=dict)
    respect_gitignore: bool = True
    force_exclude: bool = False
    max_file_size: int = DEFAULT_MAX_FILE_SIZE
    root: str = "."  # directory of the config file, or the working directory
    config_path: Optional[str] = None
    cache_dir: Optional[str] = None
    # [tool.devicelint.confirm.sizes]: NAME = N or [N, M, ...] for `confirm --snippets`
    confirm_sizes: dict[str, Any] = field(default_factory=dict)

    def fingerprint(self, enabled: list[str], version: str) -> str:
        """What a cached result depends on besides the file's content."""
        data = {"version": version, "enabled": sorted(enabled), "max": self.max_file_size}
        return sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()[:16]


def find_pyproject(start: Path) -> Optional[Path]:
    """The nearest pyproject.toml with a `tool.devicelint` table (however the TOML spells it:
    `[tool.devicelint]`, `[tool]` + `devicelint.x = ...`, an inline table), walking up from
    `start`. A pyproject.toml that does not parse is skipped unless it mentions devicelint
    (then it is returned, and loading it reports the error)."""
    start = start.resolve()
    directory = start if start.is_dir() else start.parent
    for candidate in (directory, *directory.parents):
        path = candidate / "pyproject.toml"
        if not path.is_file():
            continue
        try:
            raw = _read_bytes(path)
        except ConfigError:
            continue
        try:
            tool = _parse(raw, path).get("tool")
        except ConfigError:
            if b"devicelint" in raw:
                return path
            continue
        if isinstance(tool, dict) and "devicelint" in tool:
            return path
        if not isinstance(tool, (dict, type(None))) and b"devicelint" in raw:
            return path  # `tool = 5` next to a devicelint setting: say what is wrong
    return None


MAX_CONFIG_BYTES = 10_000_000


def _read_bytes(path: Path) -> bytes:
    from devicelint.source import SkippedFile, read_regular

    try:  # a regular file only: a FIFO would block, a device never ends
        return read_regular(str(path), MAX_CONFIG_BYTES)
    except SkippedFile as error:
        if str(error).startswith("File is"):
            raise ConfigError(f"{path}: cannot read: larger than {MAX_CONFIG_BYTES:,} bytes") from None
        raise ConfigError(f"{path}: cannot read: {error}") from None
    except OSError as error:
        raise ConfigError(f"{path}: cannot read: {error.strerror or error}") from None


def _parse(raw: bytes, path: Path) -> dict[str, Any]:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        line = raw.count(b"\n", 0, error.start) + 1
        raise ConfigError(f"{path}: invalid TOML: not UTF-8 (byte 0x{raw[error.start]:02x} at line {line})") from None
    # Imported here: a run with no pyproject.toml to read does not pay for it (issue 17).
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python 3.10
        import tomli as tomllib
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"{path}: invalid TOML: {error}") from None
    except RecursionError:
        raise ConfigError(f"{path}: invalid TOML: nested too deeply") from None


def _table(document: dict[str, Any], path: Path) -> dict[str, Any]:
    """The devicelint table of a pyproject.toml (`tool.devicelint`), or of another file
    given with --config (its top level, or its `tool.devicelint` if it has one)."""
    if path.name != "pyproject.toml" and "tool" not in document:
        return document
    tool = document.get("tool", {})
    if not isinstance(tool, dict):
        raise ConfigError(f"{path}: `tool` must be a table, not {_kind(tool)}")
    table = tool.get("devicelint", {})
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: `tool.devicelint` must be a table, not {_kind(table)}")
    if path.name != "pyproject.toml":
        others = set(document) - {"tool"}
        if others:
            raise ConfigError(f"{path}: `{sorted(others)[0]}`: put settings either at the top level "
                              "or under [tool.devicelint], not both")
    return table


def _kind(value: Any) -> str:
    names = {bool: "a boolean", int: "an integer", float: "a number", str: "a string",
             list: "an array", dict: "a table"}
    return names.get(type(value), type(value).__name__)


def _string_list(value: Any, key: str, path: Path, what: str = "strings") -> list[str]:
    """A list of non-empty strings (a single string is accepted as a list of one)."""
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list):
        raise ConfigError(f"{path}: `{key}` must be a list of {what}, not {_kind(value)}")
    for item in items:
        if not isinstance(item, str):
            raise ConfigError(f"{path}: `{key}` must be a list of {what}; found {_kind(item)}")
        if not item.strip():
            raise ConfigError(f"{path}: `{key}` must be a list of {what}; found an empty string")
    return list(items)


def load_settings(config: Optional[Path], start: Path) -> Settings:
    """Settings from `config` (or the nearest pyproject.toml above `start`)."""
    path = config or find_pyproject(start)
    if path is None:
        return Settings(root=os.path.realpath(os.getcwd()))
    table = _table(_parse(_read_bytes(path), path), path)
    unknown = set(table) - KNOWN_KEYS
    if unknown:
        raise ConfigError(f"{path}: unknown key(s) in [tool.devicelint]: {', '.join(sorted(unknown))}")
    root = os.path.realpath(path.parent)
    settings = Settings(root=root, config_path=str(path))
    if "select" in table:
        settings.select = _string_list(table["select"], "select", path, "rule codes")
    for key in ("ignore", "extend-select"):
        if key in table:
            setattr(settings, key.replace("-", "_"), _string_list(table[key], key, path, "rule codes"))
    for key in ("exclude", "extend-exclude"):
        if key in table:
            setattr(settings, key.replace("-", "_"), _string_list(table[key], key, path, "patterns"))
    if "per-file-ignores" in table:
        raw = table["per-file-ignores"]
        if not isinstance(raw, dict):
            raise ConfigError(f"{path}: `per-file-ignores` must be a table of pattern = [codes], not {_kind(raw)}")
        ignores = {}
        for pattern, codes in raw.items():
            if not pattern.strip():
                raise ConfigError(f"{path}: `per-file-ignores` has an empty pattern")
            ignores[pattern] = _string_list(codes, f"per-file-ignores.{pattern}", path, "rule codes")
        settings.per_file_ignores = ignores
    for key in ("respect-gitignore", "force-exclude"):
        if key in table:
            if type(table[key]) is not bool:
                raise ConfigError(f"{path}: `{key}` must be true or false, not {_kind(table[key])}")
            setattr(settings, key.replace("-", "_"), table[key])
    if "max-file-size" in table:
        value = table["max-file-size"]
        if type(value) is not int or value <= 0:  # bool is an int subclass: `true` is not a size
            raise ConfigError(f"{path}: `max-file-size` must be a positive integer (bytes), not {value!r}"
                              if type(value) is int else
                              f"{path}: `max-file-size` must be a positive integer (bytes), not {_kind(value)}")
        settings.max_file_size = value
    if "confirm" in table:
        settings.confirm_sizes = _confirm_sizes(table["confirm"], path)
    if "cache-dir" in table:
        value = table["cache-dir"]
        if not isinstance(value, str) or not value.strip() or "\0" in value:
            raise ConfigError(f"{path}: `cache-dir` must be a non-empty string (a directory), not "
                              f"{_kind(value) if not isinstance(value, str) else repr(value)}")
        # Kept as written (normalised, not resolved): the cache refuses a directory that is a
        # symbolic link or lies outside the project root.
        settings.cache_dir = os.path.normpath(os.path.join(root, os.path.expanduser(value)))
    return settings


def _confirm_sizes(table: Any, path: Path) -> dict[str, Any]:
    """`[tool.devicelint.confirm]` holds only `sizes`: NAME = a positive int or a list of
    them (the sizes `confirm --snippets` gives synthesized values; `--size` overrides)."""
    if not isinstance(table, dict) or set(table) - {"sizes"}:
        raise ConfigError(f"{path}: [tool.devicelint.confirm] takes only a `sizes` table")
    sizes = table.get("sizes", {})
    if not isinstance(sizes, dict):
        raise ConfigError(f"{path}: `confirm.sizes` must be a table of NAME = N, not {_kind(sizes)}")
    for name, size in sizes.items():
        shape = size if isinstance(size, list) else [size]
        if not name.isidentifier() or not shape or any(
                type(n) is not int or n < 1 for n in shape):
            raise ConfigError(f"{path}: `confirm.sizes.{name}` must be a positive integer or a "
                              f"list of them, not {size!r}")
    return dict(sizes)


def expand_codes(patterns: list[str], known: list[str], origin: str) -> set[str]:
    """Codes matched by `patterns` (exact codes, prefixes like `DL0`, or `ALL`)."""
    selected: set[str] = set()
    for pattern in patterns:
        pattern = pattern.strip().upper()
        if not pattern:  # "" would be a prefix of every code: select everything
            raise ConfigError(f"{origin}: empty rule code")
        if pattern == "ALL":
            selected.update(known)
            continue
        matched = [code for code in known if code.startswith(pattern)]
        if not matched:
            raise ConfigError(f"{origin}: unknown rule code or prefix `{pattern}`")
        selected.update(matched)
    return selected


def enabled_codes(settings: Settings, rules: dict[str, Any]) -> list[str]:
    known = list(rules)
    origin = settings.config_path or "command line"
    if settings.select is not None:
        enabled = expand_codes(settings.select, known, origin)
    else:
        enabled = {code for code, rule in rules.items() if rule.default_enabled}
    enabled |= expand_codes(settings.extend_select, known, origin)
    # A file that cannot be read or parsed was not checked: say so even under a narrow
    # `--select DL005` (else a missing or broken file passes silently); `ignore` still wins.
    enabled |= ALWAYS_REPORTED & set(known)
    enabled -= expand_codes(settings.ignore, known, origin)
    for codes in settings.per_file_ignores.values():
        expand_codes(codes, known, origin)  # validate only
    return sorted(enabled)

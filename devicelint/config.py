"""Settings: `[tool.devicelint]` in the nearest pyproject.toml, overridden by the CLI."""

from __future__ import annotations

import hashlib
import json
import os
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Optional

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

DEFAULT_EXCLUDE = (
    ".git", ".hg", ".svn", ".bzr", ".venv", "venv", ".env", "env", ".tox", ".nox",
    ".mypy_cache", ".pytest_cache", ".ruff_cache", ".devicelint_cache", "__pycache__",
    "__pypackages__", "build", "dist", "site-packages", "node_modules", ".eggs",
    "*.egg-info", ".ipynb_checkpoints",
)
DEFAULT_MAX_FILE_SIZE = 5_000_000  # bytes; larger files get DL902 instead of a slow parse

KNOWN_KEYS = {
    "select", "ignore", "extend-select", "exclude", "extend-exclude", "per-file-ignores",
    "respect-gitignore", "max-file-size", "force-exclude", "cache-dir",
}


ALWAYS_REPORTED = frozenset({"DL900", "DL902"})  # syntax-error, unreadable-file


class ConfigError(Exception):
    """A malformed or invalid configuration: reported with exit code 2."""


@dataclass
class Settings:
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

    def fingerprint(self, enabled: list[str], version: str) -> str:
        """What a cached result depends on besides the file's content."""
        data = {"version": version, "enabled": sorted(enabled), "max": self.max_file_size}
        return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()[:16]


def find_pyproject(start: Path) -> Optional[Path]:
    """The nearest pyproject.toml with a [tool.devicelint] table, walking up from `start`."""
    start = start.resolve()
    directory = start if start.is_dir() else start.parent
    for candidate in (directory, *directory.parents):
        path = candidate / "pyproject.toml"
        if path.is_file():
            try:
                text = path.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                continue
            if "[tool.devicelint" in text:
                return path
    return None


def _string_list(value: Any, key: str, path: Path) -> list[str]:
    if isinstance(value, str):
        return [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{path}: `{key}` must be a list of strings")
    return list(value)


def load_settings(config: Optional[Path], start: Path) -> Settings:
    """Settings from `config` (or the nearest pyproject.toml above `start`)."""
    path = config or find_pyproject(start)
    if path is None:
        return Settings(root=os.getcwd())
    try:
        with open(path, "rb") as handle:
            document = tomllib.load(handle)
    except OSError as error:
        raise ConfigError(f"{path}: cannot read: {error.strerror or error}") from None
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"{path}: invalid TOML: {error}") from None
    table = document.get("tool", {}).get("devicelint", {}) if path.name == "pyproject.toml" else document
    if "tool" in table and path.name != "pyproject.toml":  # a devicelint.toml may nest it too
        table = table.get("tool", {}).get("devicelint", table)
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: [tool.devicelint] must be a table")
    unknown = set(table) - KNOWN_KEYS
    if unknown:
        raise ConfigError(f"{path}: unknown key(s) in [tool.devicelint]: {', '.join(sorted(unknown))}")
    settings = Settings(root=str(path.parent.resolve()), config_path=str(path))
    if "select" in table:
        settings.select = _string_list(table["select"], "select", path)
    for key in ("ignore", "extend-select", "exclude", "extend-exclude"):
        if key in table:
            setattr(settings, key.replace("-", "_"), _string_list(table[key], key, path))
    if "per-file-ignores" in table:
        raw = table["per-file-ignores"]
        if not isinstance(raw, dict):
            raise ConfigError(f"{path}: `per-file-ignores` must be a table of pattern = [codes]")
        settings.per_file_ignores = {k: _string_list(v, k, path) for k, v in raw.items()}
    for key, kind in (("respect-gitignore", bool), ("force-exclude", bool), ("max-file-size", int)):
        if key in table:
            if not isinstance(table[key], kind):
                raise ConfigError(f"{path}: `{key}` must be a {kind.__name__}")
            setattr(settings, key.replace("-", "_"), table[key])
    if "cache-dir" in table:
        settings.cache_dir = str((path.parent / str(table["cache-dir"])).resolve())
    return settings


def expand_codes(patterns: list[str], known: list[str], origin: str) -> set[str]:
    """Codes matched by `patterns` (exact codes, prefixes like `DL0`, or `ALL`)."""
    selected: set[str] = set()
    for pattern in patterns:
        pattern = pattern.strip().upper()
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


def settings_dict(settings: Settings) -> dict[str, Any]:
    return asdict(settings)

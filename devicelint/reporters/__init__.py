"""Output formats. A reporter only formats findings: `render(findings, context) -> str`."""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Callable

FORMATS = ("text", "json", "json-lines", "github", "sarif", "gitlab")


@dataclass
class ReportContext:
    files: int = 0
    cached: int = 0
    color: bool = False
    statistics: bool = False
    show_source: bool = True
    fixed: int = 0
    extra: dict = field(default_factory=dict)


def renderer(name: str) -> Callable:
    module = {"json-lines": "jsonlines"}.get(name, name)
    return importlib.import_module(f"devicelint.reporters.{module}").render

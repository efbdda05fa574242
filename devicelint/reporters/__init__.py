"""Output formats. A reporter only formats findings: `render(findings, context) -> str`."""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Callable

FORMATS = ("text", "json", "json-lines", "github", "sarif", "gitlab", "rdjson", "rdjsonl")


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
    module, function = {"json-lines": ("jsonlines", "render"),
                        "rdjsonl": ("rdjson", "render_lines")}.get(name, (name, "render"))
    return getattr(importlib.import_module(f"devicelint.reporters.{module}"), function)

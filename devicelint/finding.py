"""The data a rule produces: findings, their fixes and runtime confirmations."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Optional


@dataclass
class Fix:
    """A replacement of the source span [start, end) (1-based line/col, col in characters)."""

    line: int
    column: int
    end_line: int
    end_column: int
    content: str
    safe: bool = True
    description: str = ""


@dataclass
class Finding:
    """One finding of a rule (or of the engine) in one file, as reporters and the cache see it."""

    code: str
    name: str
    path: str
    line: int
    column: int
    end_line: int
    end_column: int
    message: str
    severity: str = "warning"
    fix: Optional[Fix] = None
    confirmation: Optional[dict[str, Any]] = None
    # Notebooks only: the 1-based cell (counting every cell) and line within it; `line`
    # stays the line of the notebook's virtual source (see devicelint/notebook.py).
    cell: Optional[int] = None
    cell_line: Optional[int] = None
    # Other places the finding names (SARIF relatedLocations): a host read inside the helper
    # a reported call runs. Each {"line", "column", "message"} and, in another file, "path".
    related: list[dict[str, Any]] = field(default_factory=list)

    def sort_key(self) -> tuple:
        return (self.path, self.line, self.column, self.code, self.message)

    def to_dict(self) -> dict[str, Any]:
        data = {
            "code": self.code,
            "name": self.name,
            "path": self.path,
            "line": self.line,
            "column": self.column,
            "end_line": self.end_line,
            "end_column": self.end_column,
            "message": self.message,
            "severity": self.severity,
        }
        if self.fix is not None:
            data["fix"] = asdict(self.fix)
        if self.confirmation is not None:
            data["confirmation"] = self.confirmation
        if self.cell is not None:
            data["cell"] = self.cell
            data["cell_line"] = self.cell_line
        if self.related:
            data["related"] = [dict(r) for r in self.related]
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Finding":
        data = dict(data)
        fix = data.pop("fix", None)
        related = [dict(r) for r in data.pop("related", None) or []]
        return cls(fix=Fix(**fix) if fix else None, related=related, **data)

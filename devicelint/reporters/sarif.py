"""SARIF 2.1.0, as GitHub code scanning accepts it."""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections import Counter
from pathlib import Path, PurePath
from typing import Optional
from urllib.parse import quote

from devicelint import __version__
from devicelint.docs_url import rule_url
from devicelint.finding import Finding
from devicelint.notebook import related_region, viewer_region
from devicelint.reporters import ReportContext
from devicelint.reporters.text import describe
from devicelint.rule import all_rules

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
INFO_URI = "https://github.com/devicelint/devicelint"
LEVEL = {"error": "error", "warning": "warning", "info": "note"}
PROBLEM_SEVERITY = {"error": "error", "warning": "warning", "info": "recommendation"}
SRCROOT = "%SRCROOT%"
FINGERPRINT = "devicelint/v1"



def section(docs: str, title: str) -> str:
    match = re.search(rf"^## {re.escape(title)}\s*\n(.*?)(?=^## |\Z)", docs, re.S | re.M)
    return match.group(1).strip() if match else ""


def _rule_entry(code: str) -> dict:
    rule = all_rules()[code]
    docs = rule.docs()
    full = section(docs, "What it does") or rule.summary
    if len(full) > 1024:
        full = full[:1020].rsplit(" ", 1)[0] + " ..."
    return {
        "id": code,
        "name": rule.name,
        "shortDescription": {"text": rule.summary},
        "fullDescription": {"text": full},
        "help": {"text": docs, "markdown": docs},
        "helpUri": rule_url(code),
        "defaultConfiguration": {"level": LEVEL.get(rule.severity, "warning")},
        "properties": {
            "precision": rule.precision,  # each rule declares it (devicelint/rule.py)
            "problem.severity": PROBLEM_SEVERITY.get(rule.severity, "warning"),
            "tags": ["pytorch", "performance" if code < "DL900" else "devicelint"],
        },
    }


def _uri(path: str, base: Optional[str]) -> tuple[str, bool]:
    """(URI, relative to %SRCROOT%?) for a reported path: relative to the repository root
    (`base`) when the file is inside it, whatever the working directory was; percent-encoded
    (`#`, `?`, `%`, spaces, control and non-ASCII characters: `h#x.py` is `h%23x.py`, not
    `h` plus a fragment). A file outside it is named by an absolute file: URI."""
    if base is not None:
        absolute = os.path.abspath(path)
        try:
            relative = os.path.relpath(absolute, base)
        except ValueError:  # another drive on Windows
            relative = None
        if relative is not None and not relative.startswith(".."):
            return quote(PurePath(relative).as_posix(), safe="/"), True
        return Path(absolute).as_uri(), False
    posix = PurePath(path).as_posix()
    posix = posix[2:] if posix.startswith("./") else posix
    return quote(posix, safe="/"), True


def _related_location(finding: Finding, number: int, related: dict, base: Optional[str]) -> dict:
    """A relatedLocations entry; in a notebook its region is in the .ipynb JSON text and its
    properties say where in the cell, as for the result's own location."""
    line, column = related_region(finding, related)
    location = {
        "id": number,
        "message": {"text": related["message"]},
        "physicalLocation": {
            "artifactLocation": _artifact(related.get("path", finding.path), base),
            "region": {"startLine": line, "startColumn": column},
        },
    }
    if related.get("cell") is not None:
        location["properties"] = {"cell": related["cell"], "cell_line": related["cell_line"],
                                  "column": related["column"]}
    return location


def _artifact(path: str, base: Optional[str]) -> dict:
    uri, relative = _uri(path, base)
    return {"uri": uri, "uriBaseId": SRCROOT} if relative else {"uri": uri}


def source_root(root: Optional[str]) -> Optional[str]:
    """The repository root that URIs are relative to: the git work tree holding the project
    root, else the project root itself (code scanning resolves URIs against the checkout)."""
    if root is None:
        return None
    from devicelint.discovery import work_tree

    top = work_tree(Path(root))
    return str(top if top is not None else Path(root))


def fingerprint(code: str, uri: str, line_text: str, occurrence: int) -> str:
    """Stable when lines are added above or below: the rule, the file, the flagged line's
    text (whitespace-normalised) and how many identical ones came before it in the file."""
    key = "\0".join([code, uri, " ".join(line_text.split()), str(occurrence)])
    return hashlib.sha256(key.encode("utf-8")).hexdigest()[:32]


def _line_text(finding: Finding, limit: Optional[int]) -> str:
    from devicelint.reporters.text import _lines

    lines = _lines(finding.path, limit)
    return lines[finding.line - 1] if 1 <= finding.line <= len(lines) else ""


def render(findings: list[Finding], ctx: ReportContext) -> str:
    codes = sorted(set(ctx.extra.get("enabled", [])) | {f.code for f in findings})
    index = {code: i for i, code in enumerate(codes)}
    base = source_root(ctx.extra.get("root"))
    limit = ctx.extra.get("max_file_size")
    occurrences: Counter = Counter()
    results = []
    for f in findings:
        line, column, end_line, end_column = viewer_region(f)
        artifact = _artifact(f.path, base)
        uri = artifact["uri"]
        line_text = _line_text(f, limit)
        occurrences[(f.code, uri, line_text.strip())] += 1
        text = f"{f.code} {f.message}"
        if f.confirmation:
            text += f" (runtime: {describe(f.confirmation)})"
        result = {
            "ruleId": f.code,
            "ruleIndex": index[f.code],
            "level": LEVEL.get(f.severity, "warning"),
            "message": {"text": text},
            "locations": [
                {
                    "physicalLocation": {
                        "artifactLocation": artifact,
                        "region": {
                            "startLine": line,
                            "startColumn": column,
                            "endLine": end_line,
                            "endColumn": end_column,
                        },
                    }
                }
            ],
            "partialFingerprints": {
                FINGERPRINT: fingerprint(f.code, uri, line_text, occurrences[(f.code, uri, line_text.strip())]),
            },
        }
        if f.related:
            result["relatedLocations"] = [_related_location(f, number, r, base)
                                          for number, r in enumerate(f.related, 1)]
        if f.cell is not None:
            # Notebooks: the region is in the .ipynb JSON text; these say where in the cell.
            result["properties"] = {"cell": f.cell, "cell_line": f.cell_line, "column": f.column}
        results.append(result)
    document = {
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "devicelint",
                        "version": __version__,
                        "semanticVersion": __version__,
                        "informationUri": INFO_URI,
                        "rules": [_rule_entry(code) for code in codes],
                    }
                },
                "columnKind": "unicodeCodePoints",
                **({"originalUriBaseIds": {SRCROOT: {"uri": Path(base).as_uri().rstrip("/") + "/"}}}
                   if base is not None else {}),
                "results": results,
            }
        ],
    }
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"

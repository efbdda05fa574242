"""SARIF 2.1.0, as GitHub code scanning accepts it."""

from __future__ import annotations

import json
import re
from pathlib import PurePath
from urllib.parse import quote

from devicelint import __version__
from devicelint.docs_url import rule_url
from devicelint.finding import Finding
from devicelint.notebook import viewer_region
from devicelint.reporters import ReportContext
from devicelint.reporters.text import describe
from devicelint.rule import all_rules

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
INFO_URI = "https://github.com/devicelint/devicelint"
LEVEL = {"error": "error", "warning": "warning", "info": "note"}


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
    }


def _uri(path: str) -> str:
    """A relative URI reference (RFC 3986) for a path: `#`, `?`, `%`, spaces, control and
    non-ASCII characters percent-encoded (`h#x.py` is `h%23x.py`, not `h` plus a fragment)."""
    posix = PurePath(path).as_posix()
    posix = posix[2:] if posix.startswith("./") else posix
    return quote(posix, safe="/")


def render(findings: list[Finding], ctx: ReportContext) -> str:
    codes = sorted(set(ctx.extra.get("enabled", [])) | {f.code for f in findings})
    index = {code: i for i, code in enumerate(codes)}
    results = []
    for f in findings:
        line, column, end_line, end_column = viewer_region(f)
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
                        "artifactLocation": {"uri": _uri(f.path), "uriBaseId": "%SRCROOT%"},
                        "region": {
                            "startLine": line,
                            "startColumn": column,
                            "endLine": end_line,
                            "endColumn": end_column,
                        },
                    }
                }
            ],
        }
        if f.related:
            result["relatedLocations"] = [
                {
                    "id": number,
                    "message": {"text": r["message"]},
                    "physicalLocation": {
                        "artifactLocation": {"uri": _uri(r.get("path", f.path)), "uriBaseId": "%SRCROOT%"},
                        "region": {"startLine": r["line"], "startColumn": r["column"]},
                    },
                }
                for number, r in enumerate(f.related, 1)
            ]
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
                "results": results,
            }
        ],
    }
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"

"""Where a rule's documentation page lives on the web: one function, used by every output
that links to a rule (the language server, rdjson; SARIF's helpUri can share it)."""

from __future__ import annotations

PROJECT_URL = "https://github.com/devicelint/devicelint"
RULES_URL = f"{PROJECT_URL}/blob/main/docs/rules"


def rule_url(code: str) -> str:
    """`DL005` -> https://github.com/devicelint/devicelint/blob/main/docs/rules/DL005.md"""
    return f"{RULES_URL}/{code.strip().upper()}.md"

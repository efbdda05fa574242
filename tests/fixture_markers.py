"""The fixture convention: `# expect: DL001` at the end of a line where a finding must be
reported, several codes separated by commas (`# expect: DL006, DL009`). Other comments may follow
(`# expect: DL009  # runtime-gap: DL001 reason`). Every fixture, linted with all default rules,
must produce exactly its expected findings of every rule (tests/test_fixtures.py); a bad_*.py has
at least one of its own rule.

A comment that starts like a marker but does not parse (`# expect DL001`, `# expect: DL001 DL004`)
raises MarkerError instead of being ignored: a typo must not drop an expectation."""

from __future__ import annotations

import re
from pathlib import Path

EXPECT_RE = re.compile(
    r"#\s*expect:\s*(?P<codes>[A-Z]+[0-9]+(?:\s*,\s*[A-Z]+[0-9]+)*)(?=\s*(?:#|$))"
)
MARKER_RE = re.compile(r"#\s*expect\b", re.IGNORECASE)


class MarkerError(ValueError):
    """A malformed `# expect:` marker."""


def markers_in(text: str, where: str = "<text>") -> set[tuple[int, str]]:
    expected = set()
    for number, line in enumerate(text.splitlines(), 1):
        match = EXPECT_RE.search(line)
        if match:
            for code in re.split(r"\s*,\s*", match.group("codes")):
                expected.add((number, code))
        elif MARKER_RE.search(line):
            raise MarkerError(f"{where}:{number}: malformed `# expect:` marker: {line.strip()}")
    return expected


def expected_findings(path: Path) -> set[tuple[int, str]]:
    return markers_in(path.read_text(encoding="utf-8"), str(path))

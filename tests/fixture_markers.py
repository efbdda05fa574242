"""The fixture convention: `# expect: DL001` (or `# expect: DL001, DL004`) at the end of the
line where a finding must be reported. A fixture file in fixtures/<CODE>/ must produce
exactly its expected findings of <CODE>: bad_*.py at least one, good_*.py none."""

from __future__ import annotations

import re
from pathlib import Path

EXPECT_RE = re.compile(r"#\s*expect:\s*(?P<codes>[A-Z]+[0-9]+(?:\s*,\s*[A-Z]+[0-9]+)*)")


def expected_findings(path: Path) -> set[tuple[int, str]]:
    expected = set()
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        match = EXPECT_RE.search(line)
        if match:
            for code in re.split(r"\s*,\s*", match.group("codes")):
                expected.add((number, code))
    return expected

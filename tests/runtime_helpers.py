"""Shared by the runtime tests: findings from `# probe: TAG` markers, and one child run."""
import re
from pathlib import Path

from devicelint.finding import Finding
from devicelint.runtime.launch import run_child
from devicelint.runtime.plan import plan_for

DATA = Path(__file__).resolve().parent / "data" / "runtime"


def probe_findings(name: str, codes: dict[str, str]) -> tuple[list[Finding], dict[str, int]]:
    path = DATA / name
    findings, lines = [], {}
    for number, text in enumerate(path.read_text().splitlines(), 1):
        match = re.search(r"# probe: (\S+)", text)
        if match and match.group(1) in codes:
            tag = match.group(1)
            lines[tag] = number
            findings.append(Finding(codes[tag], "probe", str(path), number, 1, number, 1, tag))
    return findings, lines


def run_probe(name: str, codes: dict[str, str], device: str, timeout: float = 120.0):
    """Run a probe script under the checker; returns ({tag: confirmation}, ChildRun)."""
    findings, lines = probe_findings(name, codes)
    plan = plan_for(findings, [str(DATA / name)], device)
    child = run_child(plan, timeout, quiet_output=True)
    by_line = {}
    for verdict in (child.result or {}).get("verdicts", []):
        by_line[verdict["line"]] = verdict["confirmation"]
    return {tag: by_line.get(line) for tag, line in lines.items()}, child

"""Ranking of `devicelint confirm` findings by what they cost. Torch-free.

Every finding whose pitfall happened (`confirmed` or `found`) gets a `level` and `cost_ms`:
- `crash`: the line raised (a device mismatch, a view error): it stops the run, first;
- `cost`: the time the pitfall took (measured on a GPU, estimated from the cost table on
  the simulated device), largest first;
- `negligible`: below NEGLIGIBLE_MS in total *and* below NEGLIGIBLE_SHARE of the run. One
  millisecond is about one small training step on an H100 (bench/overhead.py: 1.0-1.5 ms,
  with ±15% run-to-run noise), and a pitfall under 1% of the run is far inside that noise:
  fixing it cannot be told apart from not fixing it by timing the run.
- `unmeasured`: the pitfall happened but no time was attributed (a `.view` that only passed
  because a dim had size 1, a DataParallel comparison...): after the timed ones.
Findings whose pitfall did not happen (refuted, inconclusive, not reached) follow, in file
order.
"""

from __future__ import annotations

from typing import Optional

from devicelint.runtime_spec import HAPPENED

NEGLIGIBLE_MS = 1.0
NEGLIGIBLE_SHARE = 0.01
LEVELS = ("crash", "cost", "unmeasured", "negligible")


def cost_ms(confirmation: dict) -> Optional[float]:
    """The time a finding's pitfall took, from its figures."""
    for key in ("cost_ms", "measured_ms", "lag_ms"):
        value = confirmation.get(key)
        if isinstance(value, (int, float)):
            return float(value)
    return None


def level(confirmation: dict, run_seconds: Optional[float]) -> Optional[str]:
    if confirmation.get("status") not in HAPPENED:
        return None
    if confirmation.get("error"):
        return "crash"
    cost = cost_ms(confirmation)
    if cost is None:
        return "unmeasured"
    share = cost / (run_seconds * 1000) if run_seconds else 0.0
    if cost < NEGLIGIBLE_MS and share < NEGLIGIBLE_SHARE:
        return "negligible"
    return "cost"


def rank(findings, run_seconds_of) -> list:
    """Set each finding's `level` (and `share` of its run: `run_seconds_of(finding)`, the
    wall time of the run that saw it) and return the findings in report order."""
    for finding in findings:
        conf = finding.confirmation
        if not conf:
            continue
        run_seconds = run_seconds_of(finding)
        found = level(conf, run_seconds)
        if found is None:
            conf.pop("level", None)
            continue
        conf["level"] = found
        cost = cost_ms(conf)
        if cost is not None and run_seconds:
            conf["share"] = round(cost / (run_seconds * 1000), 6)
    return sorted(findings, key=sort_key)


def sort_key(finding) -> tuple:
    conf = finding.confirmation or {}
    found = conf.get("level")
    if found is None:
        return (len(LEVELS), 0.0, finding.sort_key())
    return (LEVELS.index(found), -(cost_ms(conf) or 0.0), finding.sort_key())

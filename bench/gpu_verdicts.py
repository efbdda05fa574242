"""Turn `devicelint confirm fixtures --device cuda --format json` output into
tests/data/gpu-verdicts.json: what a real GPU decided for every fixture finding, which
tests/test_confirm_fixtures.py compares with the simulated device.

Usage: python bench/gpu_verdicts.py RAW.json OUT.json  (bench/gpu_verdicts.sh runs it)

Each finding is keyed by its file, code and the text of its line (with the occurrence of
that text among the file's findings of that code), not by the line number alone, so that
lines added above it elsewhere in a fixture do not make the record stale.
"""

from __future__ import annotations

import datetime
import json
import os
import sys


def line_text(path: str, line: int) -> str:
    try:
        with open(path, encoding="utf-8") as handle:
            lines = handle.read().splitlines()
    except OSError:
        return ""
    return lines[line - 1].strip() if 0 < line <= len(lines) else ""


def entry(finding: dict) -> dict:
    conf = finding.get("confirmation") or {}
    return {"path": finding["path"], "line": finding["line"], "code": finding["code"],
            "text": line_text(finding["path"], finding["line"]), "status": conf.get("status"),
            "summary": conf.get("summary", "")[:300]}


def main(raw_path: str, out_path: str) -> None:
    with open(raw_path, encoding="utf-8") as handle:
        raw = json.load(handle)
    findings = [entry(f) for f in raw["findings"]]
    torch_versions = sorted({run.get("torch") for run in raw["runs"] if run.get("torch")})
    record = {
        "device": raw.get("device"),
        "device_name": raw.get("device_name"),
        "torch": ", ".join(torch_versions),
        "commit": os.environ.get("COMMIT", ""),
        "recorded": datetime.date.today().isoformat(),
        "command": os.environ.get("CONFIRM_COMMAND", ""),
        "findings": sorted((f for f in findings if f["status"] != "found"),
                           key=lambda f: (f["path"], f["line"], f["code"])),
        # what the finder saw on lines the static pass did not flag (not compared)
        "found": sorted((f for f in findings if f["status"] == "found"),
                        key=lambda f: (f["path"], f["line"], f["code"])),
        "good_fixture_hits": [
            {"target": run["target"], "code": code, "line": hit["line"],
             "summary": hit.get("summary", "")[:300]}
            for run in raw["runs"] for codes in (run.get("premise") or {}).values()
            for code, hits in codes.items() for hit in hits],
        "runs_with_errors": [
            {"target": run["target"], "exit_code": run.get("exit_code"),
             "crash": run.get("crash"), "error": run.get("error")}
            for run in raw["runs"] if run.get("exit_code") or run.get("error")],
    }
    counts: dict[str, int] = {}
    for finding in record["findings"]:
        counts[finding["status"]] = counts.get(finding["status"], 0) + 1
    record["counts"] = counts
    with open(out_path, "w", encoding="utf-8") as handle:
        json.dump(record, handle, indent=1)
        handle.write("\n")
    print(f"{out_path}: {record['device_name']}, torch {record['torch']}: {counts}, "
          f"{len(record['found'])} found")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])

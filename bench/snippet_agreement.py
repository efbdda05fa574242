"""Does snippet mode agree with the whole-file run? (issue 20)

    python bench/snippet_agreement.py                      # fixtures/, simulated device
    python bench/snippet_agreement.py --device cuda        # on a GPU
    python bench/snippet_agreement.py --whole whole.json   # reuse a saved whole-file run
    python bench/snippet_agreement.py --record tests/data/snippet-whole-sim.json

Runs `devicelint confirm PATHS` (each flagged file as a script) and `devicelint confirm
--snippets PATHS` (each finding from its reproduction) on the same device, then compares
every finding the whole-file run decided (confirmed or refuted): the agreement is the share
of those where snippet mode gives the same status. Every disagreement is listed with both
summaries (the snippet's says why: what it could not synthesize, where its reproduction
stopped, what it saw). `--record FILE` writes the whole-file verdicts (keyed by file, code
and the text of the line) for tests/test_runtime_snippets.py.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

DECIDED = ("confirmed", "refuted")


def confirm_json(paths, device, jobs, snippets, out) -> dict:
    command = [sys.executable, "-m", "devicelint", "confirm", *paths, "--device", device,
               "--format", "json", "-o", out]
    if jobs:
        command += ["-j", str(jobs)]
    if snippets:
        command.append("--snippets")
    done = subprocess.run(command, stderr=subprocess.PIPE, text=True)
    if done.returncode not in (0, 1):
        sys.exit(f"{' '.join(command)} failed ({done.returncode}):\n{done.stderr[-2000:]}")
    with open(out, encoding="utf-8") as handle:
        return json.load(handle)


def line_text(path: str, line: int) -> str:
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read().splitlines()[line - 1].strip()
    except (OSError, IndexError):
        return ""


def key(finding: dict) -> tuple:
    """A finding by file, code and the text of its line (stable when lines move)."""
    return (finding["path"], finding["code"], line_text(finding["path"], finding["line"]))


def verdicts(report: dict) -> dict:
    return {key(f): f for f in report["findings"]
            if (f.get("confirmation") or {}).get("status") != "found"}


def compare(whole: dict, snippets: dict) -> tuple[int, list[dict], list[dict]]:
    """(decided, agreeing, disagreeing): each item {key, whole, snippet, line}."""
    agree, disagree = [], []
    decided = 0
    for k, finding in sorted(whole.items()):
        status = (finding.get("confirmation") or {}).get("status")
        if status not in DECIDED:
            continue
        decided += 1
        other = snippets.get(k)
        item = {"key": k, "line": finding["line"], "whole": finding["confirmation"],
                "snippet": (other or {}).get("confirmation") or {"status": "missing",
                                                                  "summary": "no such finding"}}
        (agree if item["snippet"].get("status") == status else disagree).append(item)
    return decided, agree, disagree


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="*", default=["fixtures"])
    parser.add_argument("--device", default="sim", choices=["sim", "cuda", "auto"])
    parser.add_argument("-j", "--jobs", type=int, default=None)
    parser.add_argument("--whole", help="a saved `confirm PATHS --format json` report")
    parser.add_argument("--snippets", help="a saved `confirm --snippets PATHS --format json`")
    parser.add_argument("--record", help="write the whole-file verdicts here")
    parser.add_argument("--keep", help="a folder to keep both runs' JSON reports in")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as scratch:
        folder = args.keep or scratch
        if args.whole:
            with open(args.whole, encoding="utf-8") as handle:
                whole_report = json.load(handle)
        else:
            whole_report = confirm_json(args.paths, args.device, args.jobs, False,
                                        os.path.join(folder, "whole.json"))
        if args.snippets:
            with open(args.snippets, encoding="utf-8") as handle:
                snippet_report = json.load(handle)
        else:
            snippet_report = confirm_json(args.paths, args.device, args.jobs, True,
                                          os.path.join(folder, "snippets.json"))
    whole, snippets = verdicts(whole_report), verdicts(snippet_report)
    decided, agree, disagree = compare(whole, snippets)
    if args.record:
        record = {"device": whole_report.get("device"),
                  "device_name": whole_report.get("device_name"),
                  "verdicts": [{"path": k[0], "code": k[1], "text": k[2],
                                "status": f["confirmation"]["status"]}
                               for k, f in sorted(whole.items())
                               if f["confirmation"]["status"] in DECIDED]}
        with open(args.record, "w", encoding="utf-8") as handle:
            json.dump(record, handle, indent=1)
            handle.write("\n")
    print(f"whole-file run: {whole_report.get('device_name')}")
    print(f"snippet run:    {snippet_report.get('device_name')}")
    share = len(agree) / decided if decided else 0.0
    print(f"agreement: {len(agree)}/{decided} = {share:.3f} of the findings the whole-file run "
          f"decided (confirmed or refuted)")
    for item in disagree:
        path, code, _ = item["key"]
        print(f"  {path}:{item['line']} {code}: whole-file {item['whole']['status']}, snippet "
              f"{item['snippet']['status']}: {item['snippet'].get('summary', '')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

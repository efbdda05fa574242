"""One self-contained HTML page for `devicelint confirm --html report.html`.

Each finding with its source excerpt, its runtime confirmation and, where the runtime checker
measured them, its costs as bars: time spent at the flagged line against the counterfactual
(the same work done the recommended way). Findings are sorted by measured cost, so the fix
that buys the most comes first. Inline CSS and SVG only: no script, no network, no fonts to
fetch; the page opens from a file, an artifact store or an e-mail attachment alike.

Reads the `confirmation` dict the runtime checker attaches (devicelint/runtime/probes.py):
`status`, `summary`, `device`, `estimated`, `measured_ms`, `counterfactual_ms`,
`counterfactual_pinned_ms`, `loop_ms`, `count`, `bytes`, `speedup`, `error`, ...
"""

from __future__ import annotations

import html
import os
from typing import Iterable, Optional

from devicelint.finding import Finding
from devicelint.runtime_spec import STATUSES

STATUS_COLOURS = {
    "confirmed": ("#b3261e", "#fdecea"),
    "found": ("#8a1c7c", "#f9e8f6"),  # seen at runtime on a line the static pass missed
    "refuted": ("#1e6b35", "#e6f4ea"),
    "inconclusive": ("#7a5b00", "#fff6d6"),
    "not-reached": ("#4a4a4a", "#eeeeee"),
}
# Figures shown in a finding's table, in this order, with their labels.
FIGURES = (
    ("level", "rank (crash, cost, unmeasured, negligible)"),
    ("count", "events at the line"),
    ("bytes", "bytes"),
    ("measured_ms", "time at the line (ms)"),
    ("cost_ms", "time of the line's device events (ms)"),
    ("counterfactual_ms", "counterfactual (ms)"),
    ("counterfactual_pinned_ms", "counterfactual, pinned (ms)"),
    ("loop_ms", "whole loop (ms)"),
    ("unmeasured_ms", "unmeasured GPU time (ms)"),
    ("speedup", "speed-up"),
    ("dp_per_s", "DataParallel samples/s"),
    ("ddp_per_s", "DDP samples/s"),
    ("gpus", "GPUs"),
    ("exit_code", "exit code of the run"),
)
CONTEXT_LINES = 2
BAR_WIDTH = 420  # px for the largest time on the page


def esc(value) -> str:
    return html.escape(str(value), quote=True)


def measured_cost(finding: Finding) -> Optional[float]:
    """ms spent at the flagged line, if the runtime checker measured (or estimated) it."""
    conf = finding.confirmation or {}
    for key in ("measured_ms", "cost_ms", "unmeasured_ms"):
        value = conf.get(key)
        if isinstance(value, (int, float)):
            return float(value)
    return None


def counterfactual_cost(finding: Finding) -> Optional[float]:
    conf = finding.confirmation or {}
    value = conf.get("counterfactual_ms")
    return float(value) if isinstance(value, (int, float)) else None


def _sort_key(finding: Finding) -> tuple:
    cost = measured_cost(finding)
    status = (finding.confirmation or {}).get("status", "")
    rank = STATUSES.index(status) if status in STATUSES else len(STATUSES)
    return (cost is None, -(cost or 0.0), rank, finding.sort_key())


def render_html(findings: Iterable[Finding], title: str = "devicelint confirm report",
                runs: Optional[list[dict]] = None) -> str:
    findings = list(findings)
    # `devicelint confirm` ranks its findings (runtime/rank.py: crashes, then by cost, then
    # the negligible ones) and sets each one's `level`: keep its order.
    ranked = any("level" in (f.confirmation or {}) for f in findings)
    ordered = findings if ranked else sorted(findings, key=_sort_key)
    scale = max([c for f in ordered for c in (measured_cost(f), counterfactual_cost(f)) if c] or [1.0])
    parts = [_HEAD.format(title=esc(title), css=_CSS), f"<h1>{esc(title)}</h1>"]
    parts.append(_summary(ordered, runs or []))
    if any(measured_cost(f) is not None for f in ordered):
        parts.append(_overview(ordered, scale))
    if not ordered:
        parts.append('<p class="empty">No findings.</p>')
    for number, finding in enumerate(ordered, 1):
        parts.append(_card(number, finding, scale))
    parts.append("</main></body></html>\n")
    return "\n".join(parts)


def _summary(findings: list[Finding], runs: list[dict]) -> str:
    counts: dict[str, int] = {}
    for finding in findings:
        status = (finding.confirmation or {}).get("status", "unconfirmed")
        counts[status] = counts.get(status, 0) + 1
    badges = " ".join(f"{_badge(status)} {count}" for status, count in sorted(
        counts.items(), key=lambda item: STATUSES.index(item[0]) if item[0] in STATUSES else 9))
    spent = sum(measured_cost(f) or 0.0 for f in findings)
    saved = sum(max((measured_cost(f) or 0.0) - counterfactual_cost(f), 0.0)
                for f in findings if counterfactual_cost(f) is not None and measured_cost(f) is not None)
    devices = sorted({(f.confirmation or {}).get("device") for f in findings} - {None})
    estimated = any((f.confirmation or {}).get("estimated") for f in findings)
    lines = [f'<section class="summary"><p>{len(findings)} finding{"s" if len(findings) != 1 else ""}: {badges}</p>']
    if spent:
        lines.append(f"<p>Time measured at flagged lines: <b>{_ms(spent)}</b>; "
                     f"the counterfactuals would save about <b>{_ms(saved)}</b>"
                     f"{' (estimated)' if estimated else ''}.</p>")
    if devices:
        lines.append(f"<p>Device: {esc(', '.join(devices))}</p>")
    for run in runs[:10]:
        target = run.get("target")
        if target:
            state = "timed out" if run.get("timed_out") else f"exit code {run.get('exit_code')}"
            lines.append(f"<p>Run: <code>{esc(target)}</code> ({esc(state)})</p>")
        for miss in run.get("unobserved") or []:  # DataLoader workers (runtime/finder.py)
            lines.append(f'<p class="unobserved">Not observed, line {esc(miss.get("line"))}: '
                         f'{esc(miss.get("why"))}</p>')
    if len(runs) > 10:
        lines.append(f"<p>... and {len(runs) - 10} more runs.</p>")
    lines.append("</section>")
    return "\n".join(lines)


def _overview(findings: list[Finding], scale: float) -> str:
    """One chart for the page: a row per measured finding, biggest cost first."""
    rows = [f for f in findings if measured_cost(f) is not None]
    row_height, label_width = 34, 300
    height = row_height * len(rows) + 30
    width = label_width + BAR_WIDTH + 120
    out = [f'<section><h2>Where the time goes</h2><svg class="chart" role="img" width="{width}" '
           f'height="{height}" viewBox="0 0 {width} {height}">'
           '<title>Time at each flagged line (dark) vs the counterfactual (light)</title>']
    for index, finding in enumerate(rows):
        y = 10 + index * row_height
        where = _where(finding).replace(os.sep, "/").rsplit("/", 1)[-1]
        label = f"#{findings.index(finding) + 1} {finding.code} {where}"
        if len(label) > 38:  # the label column holds about 40 characters
            label = label[:37] + "…"
        out.append(f'<text x="0" y="{y + 12}" class="label">{esc(label)}</text>')
        out.extend(_bars(label_width, y, finding, scale, thin=True))
    out.append(_legend(10, height - 12))
    out.append("</svg></section>")
    return "\n".join(out)


def _bars(x: int, y: int, finding: Finding, scale: float, thin: bool = False) -> list[str]:
    measured, counterfactual = measured_cost(finding), counterfactual_cost(finding)
    height = 11 if thin else 18
    out = []
    for offset, value, css, label in (
        (0, measured, "bar-measured", "at the line"),
        (height + 2, counterfactual, "bar-counter", "counterfactual"),
    ):
        if value is None:
            continue
        length = max(2.0, BAR_WIDTH * value / scale) if value > 0 else 1.0
        out.append(f'<rect x="{x}" y="{y + offset}" width="{length:.1f}" height="{height}" '
                   f'class="{css}"><title>{esc(label)}: {esc(_ms(value))}</title></rect>')
        out.append(f'<text x="{x + length + 6:.1f}" y="{y + offset + height - 2}" '
                   f'class="value">{esc(_ms(value))}{"" if thin else " " + label}</text>')
    return out


def _legend(x: int, y: int) -> str:
    return (f'<rect x="{x}" y="{y - 9}" width="12" height="10" class="bar-measured"/>'
            f'<text x="{x + 16}" y="{y}" class="legend">time at the flagged line</text>'
            f'<rect x="{x + 230}" y="{y - 9}" width="12" height="10" class="bar-counter"/>'
            f'<text x="{x + 246}" y="{y}" class="legend">counterfactual (the recommended way)</text>')


def _card(number: int, finding: Finding, scale: float) -> str:
    conf = finding.confirmation or {}
    status = conf.get("status", "unconfirmed")
    out = [f'<article class="finding" id="finding-{number}">',
           f'<h2><span class="num">#{number}</span> <span class="code">{esc(finding.code)}</span> '
           f'{esc(finding.name)} {_badge(status)}</h2>',
           f'<p class="where"><code>{esc(_where(finding))}</code></p>',
           f'<p class="message">{esc(finding.message)}</p>']
    if conf.get("summary"):
        estimated = ' <span class="estimated">estimated</span>' if conf.get("estimated") else ""
        out.append(f'<p class="evidence"><b>Runtime:</b> {esc(conf["summary"])}{estimated}</p>')
    if conf.get("error"):
        out.append(f'<pre class="error">{esc(conf["error"])}</pre>')
    out.append(_excerpt(finding))
    if measured_cost(finding) is not None or counterfactual_cost(finding) is not None:
        height = 50
        width = BAR_WIDTH + 200
        out.append(f'<svg class="chart" role="img" width="{width}" height="{height}" '
                   f'viewBox="0 0 {width} {height}"><title>{esc(finding.code)}: time at the '
                   'flagged line vs the counterfactual</title>')
        out.extend(_bars(0, 4, finding, scale))
        out.append("</svg>")
    table = [(label, conf[key]) for key, label in FIGURES if key in conf]
    if conf.get("device"):
        table.append(("device", conf["device"]))
    if table:
        out.append('<table class="figures">' + "".join(
            f"<tr><th>{esc(label)}</th><td>{esc(_number(value))}</td></tr>" for label, value in table)
            + "</table>")
    out.append("</article>")
    return "\n".join(out)


def _where(finding: Finding) -> str:
    if finding.cell is not None:
        return f"{finding.path}:cell {finding.cell}:{finding.cell_line}:{finding.column}"
    return f"{finding.path}:{finding.line}:{finding.column}"


def _source_lines(path: str) -> list[str]:
    if path.endswith(".ipynb"):
        from devicelint.notebook import virtual_lines

        return list(virtual_lines(path))
    from devicelint.config import DEFAULT_MAX_FILE_SIZE
    from devicelint.source import decode_source, read_regular, split_lines

    try:  # regular files only: a FIFO would block, a device never ends
        return split_lines(decode_source(read_regular(path, DEFAULT_MAX_FILE_SIZE)))
    except (OSError, ValueError):
        return []


def _excerpt(finding: Finding) -> str:
    lines = _source_lines(finding.path) if os.path.isfile(finding.path) else []
    if not (1 <= finding.line <= len(lines)):
        return '<p class="nosource">(source not available)</p>'
    first = max(1, finding.line - CONTEXT_LINES)
    last = min(len(lines), max(finding.end_line, finding.line) + CONTEXT_LINES)
    shift = (finding.cell_line - finding.line) if finding.cell is not None else 0
    rows = []
    for number in range(first, last + 1):
        flagged = finding.line <= number <= finding.end_line
        css = ' class="flagged"' if flagged else ""
        rows.append(f'<tr{css}><td class="ln">{number + shift}</td>'
                    f'<td class="src">{esc(lines[number - 1]) or " "}</td></tr>')
    return f'<table class="source">{"".join(rows)}</table>'


def _badge(status: str) -> str:
    fg, bg = STATUS_COLOURS.get(status, ("#333333", "#f0f0f0"))
    return f'<span class="badge" style="color:{fg};background:{bg};border-color:{fg}">{esc(status)}</span>'


def _ms(value: float) -> str:
    if value >= 1000:
        return f"{value / 1000:,.2f} s"
    if value >= 1:
        return f"{value:,.1f} ms"
    return f"{value:.3f} ms"


def _number(value) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:,.3f}".rstrip("0").rstrip(".")
    if isinstance(value, (list, tuple)):
        return ", ".join(map(str, value))
    if isinstance(value, dict):
        return ", ".join(f"{k}: {v}" for k, v in value.items())
    return str(value)


_HEAD = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; img-src data:">
<title>{title}</title><style>{css}</style></head><body><main>"""

_CSS = """
body{font:15px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#1b1b1b;background:#fafafa;margin:0}
main{max-width:980px;margin:0 auto;padding:24px}
h1{font-size:24px;margin:0 0 12px}
h2{font-size:17px;margin:0 0 6px}
code,pre,.source{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:13px}
.summary{background:#fff;border:1px solid #ddd;border-radius:6px;padding:8px 16px;margin-bottom:16px}
.summary p{margin:6px 0}
.badge{display:inline-block;border:1px solid;border-radius:10px;padding:0 8px;font-size:12px;font-weight:600;vertical-align:middle}
.finding{background:#fff;border:1px solid #ddd;border-radius:6px;padding:14px 16px;margin:14px 0}
.num{color:#777}.code{color:#b3261e}
.where{margin:2px 0}.message{margin:6px 0}.evidence{margin:6px 0}
.estimated{font-size:12px;color:#7a5b00;border:1px dashed #7a5b00;border-radius:8px;padding:0 6px}
.source{border-collapse:collapse;width:100%;background:#f6f8fa;margin:8px 0;white-space:pre}
.source td{padding:1px 8px}.source .ln{color:#888;text-align:right;width:3em;user-select:none}
.source .flagged{background:#fff1c2}.source .flagged .ln{color:#b3261e;font-weight:700}
.figures{border-collapse:collapse;margin-top:6px;font-size:13px}
.figures th{text-align:left;font-weight:500;color:#555;padding:1px 14px 1px 0}
.figures td{font-variant-numeric:tabular-nums}
.chart{display:block;margin:6px 0;max-width:100%;height:auto}
.chart .label,.chart .value,.chart .legend{font:12px ui-monospace,Menlo,Consolas,monospace;fill:#333}
.bar-measured{fill:#c0392b}.bar-counter{fill:#7fb3d5}
.error{background:#fdecea;padding:6px;white-space:pre-wrap}
.empty,.nosource{color:#777}
"""

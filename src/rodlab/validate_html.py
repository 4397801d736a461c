"""``rodlab validate --html``: one self-contained page with every validation case's rows
(reference, measured, error, tolerance, pass) and, under them, the case's figures.

The figures are embedded as base64 PNG data (the page opens offline, on its own, and can be
attached to a bug report). A figure belongs to the case whose name its file name starts with
(``cantilever.png``, ``helical-buckling_refinement.png``); figures of no case go at the end.
"""
from __future__ import annotations

import base64
import html
from pathlib import Path

STATUS_CLASS = {"pass": "pass", "FAIL": "fail", "error": "error", "not available": "na"}

_STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em; color: #222; }
table { border-collapse: collapse; margin: 0.5em 0 1em; font-size: 0.9em; }
th, td { border: 1px solid #ccc; padding: 3px 8px; text-align: left; vertical-align: top; }
th { background: #f2f2f2; }
td.num { font-family: ui-monospace, monospace; text-align: right; }
tr.pass td.status { background: #d8f5d8; } tr.fail td.status { background: #f8c8c8; font-weight: bold; }
tr.error td.status { background: #f8e0b0; } tr.na td.status { color: #888; }
td.note { color: #555; font-size: 0.9em; }
img { max-width: 100%; border: 1px solid #ddd; margin: 0.3em 0; }
.summary { font-size: 1.1em; margin-bottom: 1em; }
"""


def _figures_by_case(cases: list[str], plots: list[Path]) -> tuple[dict[str, list[Path]], list[Path]]:
    """Plots grouped under the longest case name their file name starts with; the rest apart."""
    by_case: dict[str, list[Path]] = {c: [] for c in cases}
    rest = []
    for p in plots:
        owners = [c for c in cases if p.stem == c or p.stem.startswith(c + "_") or p.stem.startswith(c + "-")]
        if owners:
            by_case[max(owners, key=len)].append(p)
        else:
            rest.append(p)
    return by_case, rest


def _img(path: Path) -> str:
    data = base64.b64encode(Path(path).read_bytes()).decode("ascii")
    return f'<figure><img alt="{html.escape(path.stem)}" src="data:image/png;base64,{data}"><figcaption>{html.escape(path.name)}</figcaption></figure>'


def format_html(rows, summary: dict, plots: list[Path], *, columns, fmt) -> str:
    """The page (module docstring). ``rows``: :class:`rodlab.validate.Row` list; ``columns``
    and ``fmt``: the table's columns and cell formatter of :mod:`rodlab.validate`."""
    cases = list(dict.fromkeys(r.case.split("/", 1)[0] for r in rows))
    by_case, rest = _figures_by_case(cases, plots)
    head = "".join(f"<th>{html.escape(c)}</th>" for c in (*columns, "note"))
    out = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8"><title>rodlab validation</title>',
           f"<style>{_STYLE}</style></head><body>", "<h1>rodlab validation</h1>",
           f'<p class="summary">{summary["passed"]} passed, {summary["failed"]} failed, {summary["errors"]} errors, '
           f'{summary["not_available"]} not available; {summary["wall_s"]:.1f} s{" (quick)" if summary["quick"] else ""}.</p>']
    for case in cases:
        out.append(f'<h2 id="{html.escape(case)}">{html.escape(case)}</h2>')
        out.append(f"<table><thead><tr>{head}</tr></thead><tbody>")
        for r in rows:
            if r.case.split("/", 1)[0] != case:
                continue
            cells = []
            for c in columns:
                cls = "status" if c == "status" else ("num" if c in ("reference", "measured", "error", "tolerance") else "")
                cells.append(f'<td class="{cls}">{html.escape(fmt(getattr(r, c)))}</td>')
            cells.append(f'<td class="note">{html.escape(r.note or "")}</td>')
            out.append(f'<tr class="{STATUS_CLASS.get(r.status, "na")}">{"".join(cells)}</tr>')
        out.append("</tbody></table>")
        out.extend(_img(p) for p in by_case[case])
    if rest:
        out.append("<h2>Other figures</h2>")
        out.extend(_img(p) for p in rest)
    out.append("</body></html>")
    return "\n".join(out) + "\n"

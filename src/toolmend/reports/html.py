"""``report.html``: one self-contained page (inline CSS, plots as ``data:`` PNGs, no scripts, no
links out); every piece of run data is HTML-escaped, raw model outputs included."""

from __future__ import annotations

from html import escape

from toolmend.reports.plots import bar_chart
from toolmend.reports.tables import Report
from toolmend.reports.tables import format_number as _num

__all__ = ["render_html"]

_CSS = """
body{font-family:-apple-system,"Segoe UI",Helvetica,Arial,sans-serif;margin:2rem auto;max-width:1100px;
color:#222;padding:0 1rem;line-height:1.45}
h1{font-size:1.6rem;margin-bottom:.2rem}h2{font-size:1.25rem;margin-top:2rem;border-bottom:1px solid #ddd}
h3{font-size:1rem;margin-bottom:.3rem}
table{border-collapse:collapse;margin:.6rem 0;font-size:.9rem}
th,td{border:1px solid #ddd;padding:.25rem .6rem;text-align:left}td.num{text-align:right;
font-variant-numeric:tabular-nums}th{background:#f3f5f8}
img{max-width:100%;height:auto;display:block;margin:.6rem 0}
pre{background:#f6f8fa;border:1px solid #e1e4e8;padding:.6rem;white-space:pre-wrap;word-break:break-word;
font-size:.82rem;max-height:22rem;overflow:auto}
.facts{color:#555;font-size:.9rem}.warn{background:#fff4e5;border-left:4px solid #e07b39;padding:.5rem .8rem}
"""


def _table(head: list[str], rows: list[list[str]], numeric_from: int = 1) -> str:
    th = "".join(f"<th>{escape(h)}</th>" for h in head)
    body = []
    for row in rows:
        cells = "".join(
            f'<td class="num">{escape(c)}</td>' if i >= numeric_from else f"<td>{escape(c)}</td>"
            for i, c in enumerate(row)
        )
        body.append(f"<tr>{cells}</tr>")
    return f"<table><thead><tr>{th}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def _img(uri: str, alt: str) -> str:
    return f'<img src="{uri}" alt="{escape(alt)}">'


def render_html(report: Report, *, plots: bool = True) -> str:
    """The whole report as one HTML document."""
    views = report.views
    title = views[0].benchmark if len({v.benchmark for v in views}) == 1 else "runs"
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>toolmend report: {escape(title)}</title><style>{_CSS}</style></head><body>",
        f"<h1>toolmend report: {escape(title)}</h1>",
        _table(*report.runs_table(), numeric_from=4),
        "<h2>Metrics</h2>",
    ]
    if report.metrics:
        parts.append(_table(*report.metrics_table()))
    else:
        parts.append("<p>No metrics yet (the run has not finished).</p>")
    if plots:
        for names, scale, xmax in (
            (report.fraction_metrics, "fraction", 1.0),
            (report.percent_metrics, "percent", 100.0),
        ):
            if names:
                series = {
                    label: [report.value(v, m) for m in names]
                    for label, v in zip(report.labels, views, strict=True)
                }
                parts.append(_img(bar_chart(names, series, title=f"metrics ({scale})", xmax=xmax), "metrics"))
    for b in report.breakdowns:
        parts.append(f"<h2>By {escape(b.key.replace('_', ' '))}</h2>")
        parts.append(_table(*report.breakdown_table(b)))
        if plots:
            # Error types are counted (how often each failure happens); other keys show the mean score.
            if b.key == "error_type":
                series = {
                    label: [float(b.n[g][i]) for g in b.groups] for i, label in enumerate(report.labels)
                }
                chart = bar_chart(b.groups, series, title="samples per error type", xlabel="samples")
            else:
                series = {label: [b.mean[g][i] for g in b.groups] for i, label in enumerate(report.labels)}
                chart = bar_chart(b.groups, series, title=f"mean {b.score} by {b.key}", xmax=1.0)
            parts.append(_img(chart, f"by {b.key}"))
    failed = report.failed
    if failed:
        parts.append("<h2>Infrastructure errors</h2>")
        parts.append(
            f'<p class="warn">{len(failed)} samples failed with infrastructure errors and are not in the '
            "metrics; rerun with <code>toolmend bench … --resume RUN_DIR --retry-errors</code>.</p>"
        )
        parts.append(
            _table(
                *report.failed_table(),
                numeric_from=99,
            )
        )
    if report.worst:
        parts.append("<h2>Worst-scored samples</h2>")
        for w in report.worst:
            parts.append(f"<h3>{escape(w.id)} — {escape(w.score_key)} {_num(w.score)} ({escape(w.run)})</h3>")
            if w.facts:
                facts = "; ".join(f"{k}: {v}" for k, v in w.facts.items())
                parts.append(f'<p class="facts">{escape(facts)}</p>')
            for out in w.outputs:
                parts.append(f"<pre>{escape(out)}</pre>")
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"

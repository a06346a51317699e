"""``report.html``: one self-contained page (inline CSS, inline SVG figures, the sample browser's
data and script inline, no links out). Run data reaches the page only HTML-escaped or inside the
browser's JSON block (with ``<`` escaped), and the script inserts it as text, never as markup."""

from __future__ import annotations

import base64
import gzip
from html import escape
from importlib import resources
from typing import Any

from toolmend._jsontext import dumps, escape_surrogates
from toolmend.reports._plots import available, bar_chart, line_chart
from toolmend.reports._samples import browser_data
from toolmend.reports._tables import Report, charts, flips_shown, provenance
from toolmend.reports._tables import format_number as _num
from toolmend.strategies._report import strategy_tables

__all__ = ["render_html"]

_CSS = """
body{font-family:-apple-system,"Segoe UI",Helvetica,Arial,sans-serif;margin:2rem auto;max-width:1200px;
color:#222;padding:0 1rem;line-height:1.45}
h1{font-size:1.6rem;margin-bottom:.2rem}h2{font-size:1.25rem;margin-top:2rem;border-bottom:1px solid #ddd}
h3{font-size:1rem;margin-bottom:.3rem}h4{font-size:.85rem;margin:.6rem 0 .2rem;color:#444}
table{border-collapse:collapse;margin:.6rem 0;font-size:.9rem}
th,td{border:1px solid #ddd;padding:.25rem .6rem;text-align:left;vertical-align:top}
td.num,th.num{text-align:right;font-variant-numeric:tabular-nums}th{background:#f3f5f8}
svg{max-width:100%;height:auto;display:block;margin:.6rem 0}
pre{background:#f6f8fa;border:1px solid #e1e4e8;padding:.5rem;white-space:pre-wrap;word-break:break-word;
font-size:.8rem;max-height:22rem;overflow:auto;margin:.2rem 0}
.facts{color:#555;font-size:.85rem}.warn{background:#fff4e5;border-left:4px solid #e07b39;padding:.5rem .8rem}
details.prov td:first-child{color:#555;white-space:nowrap}details.prov td{font-size:.8rem;word-break:break-all}
.flips a{margin-right:.5rem;font-family:monospace;font-size:.85rem}
#tm-controls{display:flex;flex-wrap:wrap;gap:.4rem .9rem;align-items:center;margin:.5rem 0;font-size:.85rem}
#tm-search{width:16rem;padding:.2rem .4rem}.tm-filter select{max-width:14rem}
#tm-list tr.tm-row{cursor:pointer}#tm-list tr.tm-row:hover{background:#eef4fb}
#tm-table{width:100%}#tm-table td{font-size:.82rem;padding:.15rem .5rem}
.tm-cols{display:grid;grid-template-columns:repeat(auto-fit,minmax(320px,1fr));gap:1rem}
.tm-run{border:1px solid #ddd;border-radius:4px;padding:.5rem .7rem;min-width:0}
.tm-msg{border-left:3px solid #bbb;padding-left:.5rem;margin:.4rem 0}.tm-role{font-size:.75rem;color:#666;
text-transform:uppercase;letter-spacing:.04em}.tm-system{border-color:#8c7a3f}.tm-user{border-color:#3b6ea5}
.tm-assistant{border-color:#4f9d69}.tm-tool{border-color:#b65f9a}pre.tm-calls{background:#eef7f0}
pre.tm-gold{background:#fdf8e6}.tm-headline{font-weight:600}#tm-detail{margin-top:1rem}
.tm-answer{font-size:1.15rem;background:#eef4fb;border-left:4px solid #3b6ea5;padding:.5rem .8rem;margin:.6rem 0}
.tm-answer b{font-size:1.5rem}.tm-answer .facts{display:block;margin-top:.2rem}
nav.tm-nav{font-size:.9rem;margin:.4rem 0 .8rem}nav.tm-nav a{margin-right:1rem}
tr.tm-answer-row td{background:#eef4fb;font-weight:600}.tm-badge{font-size:.7rem;background:#3b6ea5;color:#fff;
border-radius:3px;padding:0 .3rem;margin-left:.4rem;vertical-align:middle;font-weight:400}
td.tm-def{color:#555;font-size:.82rem}abbr.tm-metric{text-decoration:underline dotted;cursor:help}
.tm-pair{display:grid;grid-template-columns:1fr 1fr;gap:.6rem}.tm-pair h4{margin:.2rem 0}
dl.tm-glossary dt{font-weight:600;font-family:monospace}dl.tm-glossary dd{margin:0 0 .4rem 1rem;color:#444}
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


def _answer(report: Report) -> list[str]:
    """The headline metric of every run, large, with its definition: the first thing read."""
    line = report.answer_line()
    if line is None or report.answer is None:
        return []
    name, _, values = line.partition(": ")
    definition = report.definition(report.answer)
    note = f'<span class="facts">{escape(definition)}</span>' if definition else ""
    return [f'<p class="tm-answer">Headline — {escape(name)}: <b>{escape(values)}</b>{note}</p>']


def _nav(report: Report, samples: bool) -> str:
    links = [("metrics", "metrics")]
    if report.worst:
        links.append(("worst", "worst samples"))
    if samples:
        links.append(("samples", "sample browser"))
    if report.definitions:
        links.append(("glossary", "glossary"))
    return '<nav class="tm-nav">' + "".join(f'<a href="#{a}">{escape(t)}</a>' for a, t in links) + "</nav>"


def _metrics_table(report: Report) -> str:
    """The metrics table: the answer's row first and marked, each name with its definition on
    hover, and the definition in a last column."""
    head, rows = report.metrics_table()
    defined = bool(report.definitions)
    th = "".join(
        f'<th class="num">{escape(h)}</th>' if 0 < i < len(report.views) + 1 else f"<th>{escape(h)}</th>"
        for i, h in enumerate(head)
    )
    body = []
    for row in rows:
        name = row[0]
        text = report.definition(name)
        label = (
            f'<abbr class="tm-metric" title="{escape(text)}">{escape(name)}</abbr>' if text else escape(name)
        )
        marked = name == report.answer
        if marked:
            label += '<span class="tm-badge">headline</span>'
        values = row[1 : len(report.views) + 1]
        cells = f"<td>{label}</td>" + "".join(f'<td class="num">{escape(c)}</td>' for c in values)
        if defined:
            cells += f'<td class="tm-def">{escape(text)}</td>'
        body.append(f'<tr class="tm-answer-row">{cells}</tr>' if marked else f"<tr>{cells}</tr>")
    return f"<table><thead><tr>{th}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def _figure(svg: str, alt: str) -> str:
    return f'<figure role="img" aria-label="{escape(alt)}">{svg}</figure>'


COMPRESS_OVER = 1_000_000
"""Sample data larger than this (bytes of JSON) is embedded gzipped and base64-encoded; the page
inflates it with the browser's own ``DecompressionStream`` (about 5x smaller for big runs)."""


def _json_block(data: Any, compress_over: int = COMPRESS_OVER) -> str:
    text = dumps(data)
    raw = text.encode("utf-8")
    if len(raw) > compress_over:
        packed = base64.b64encode(gzip.compress(raw, compresslevel=6, mtime=0)).decode("ascii")
        return f'<script type="application/gzip-base64" id="tm-data">{packed}</script>'
    # "<" escaped as \\u003c: no "</script>" or "<!--" inside the data can end the block.
    safe = text.replace("<", "\\u003c")
    return f'<script type="application/json" id="tm-data">{safe}</script>'


def _sample_link(sid: str) -> str:
    return f'<a href="#sample={escape(sid)}">{escape(sid)}</a>'


_BROWSER = """<h2 id="samples">Samples</h2>
<div id="tm-notes"></div>
<div id="tm-controls"><input id="tm-search" type="search" placeholder="search ids and outputs">
<label>sort <select id="tm-sort"></select></label><label>score of <select id="tm-run"></select></label>
<span id="tm-filters" style="display:contents"></span>
<button id="tm-prev" type="button">‹ prev</button><button id="tm-next" type="button">next ›</button>
<span id="tm-count" class="facts"></span></div>
<table id="tm-table"><thead><tr id="tm-head"><th>id</th><th id="tm-h-category">category</th>
<th id="tm-h-etype">error type</th><th id="tm-h-flags">flags</th></tr>
</thead><tbody id="tm-list"></tbody></table>
<div id="tm-detail"></div>"""


def render_html(
    report: Report, *, plots: bool = True, samples: bool = True, compress_over: int = COMPRESS_OVER
) -> str:
    """The whole report as one HTML document; ``samples=False`` leaves the sample browser out.

    A lone surrogate in a model's text is shown as its ``\\uXXXX`` escape (the page is UTF-8);
    in the sample data it is that JSON escape, which the browser reads back losslessly."""
    views = report.views
    title = views[0].benchmark if len({v.benchmark for v in views}) == 1 else "runs"
    # The light install has no matplotlib: the page is complete without figures and says so.
    no_figures = plots and not available()
    plots = plots and not no_figures
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>toolmend report: {escape(title)}</title><style>{_CSS}</style></head><body>",
        f"<h1>toolmend report: {escape(title)}</h1>",
        *_answer(report),
        _nav(report, samples),
        '<p class="facts">Rates are percentages (0–100, one decimal place); counts are counts.</p>',
        _table(*report.runs_table(), numeric_from=4),
    ]
    if no_figures:
        parts.append(
            '<p class="facts">Figures are left out: they need matplotlib '
            "(<code>pip install 'toolmend[viz]'</code>).</p>"
        )
    parts += [f'<p class="warn">{escape(n)}</p>' for n in report.status_notes()]
    for v in views:
        rows = "".join(f"<tr><td>{escape(k)}</td><td>{escape(val)}</td></tr>" for k, val in provenance(v))
        parts.append(
            f'<details class="prov"><summary>provenance: {escape(v.label)}</summary><table>{rows}</table></details>'
        )
    parts.append('<h2 id="metrics">Metrics</h2>')
    if report.metrics:
        parts.append(_metrics_table(report))
        if plots and report.plotted:
            series = {
                label: [report.value(v, m) for m in report.plotted]
                for label, v in zip(report.labels, views, strict=True)
            }
            parts.append(
                _figure(bar_chart(report.plotted, series, title="metrics (%)", xmax=100.0), "metrics")
            )
    else:
        parts.append("<p>No metrics: no sample has been scored.</p>")
    for c in report.comparisons:
        kind = "paired over shared sample ids" if c.paired else "unpaired (no shared ids)"
        parts.append(f"<h2>{escape(c.b.label)} vs {escape(c.a.label)}</h2>")
        parts.append(
            f'<p class="facts">Per-sample metrics, Δ = {escape(c.b.label)} − {escape(c.a.label)} in '
            f"percentage points; 95 % bootstrap interval ({kind}, 2,000 resamples, seed 0).</p>"
        )
        parts.append(_table(*c.table()))
        for name, ids in (("right → wrong", c.right_to_wrong), ("wrong → right", c.wrong_to_right)):
            shown = flips_shown(ids)
            more = f" (first {len(shown)})" if len(shown) < len(ids) else ""
            links = " ".join(_sample_link(i) for i in shown)
            parts.append(f'<p class="flips"><b>{escape(name)}: {len(ids)}</b>{more} {links}</p>')
    tables = strategy_tables(views)
    if tables:
        parts.append("<h2>Recovery strategies</h2>")
        for t in tables:
            if t.caption:
                parts.append(f"<p>{escape(t.caption)}</p>")
            parts.append(_table(t.head, t.rows))
    if plots:
        for chart in charts(report):
            if chart.kind == "line":
                svg = line_chart(chart.labels, chart.series, title=chart.title, xlabel=chart.xlabel)
            else:
                svg = bar_chart(
                    chart.labels, chart.series, title=chart.title, xlabel=chart.xlabel, xmax=100.0
                )
            parts.append(f"<h2>{escape(chart.title)}</h2>" + _figure(svg, chart.title))
    for b in report.breakdowns:
        parts.append(f"<h2>By {escape(b.key.replace('_', ' '))}</h2>")
        parts.append(_table(*report.breakdown_table(b)))
        if plots:
            series = {label: [b.mean[g][i] for g in b.groups] for i, label in enumerate(report.labels)}
            chart_svg = bar_chart(b.groups, series, title=f"{b.score} (%) by {b.key}", xmax=100.0)
            parts.append(_figure(chart_svg, f"by {b.key}"))
    failed = report.failed
    if failed:
        parts.append("<h2>Infrastructure errors</h2>")
        retry = "; ".join(f"<code>{escape(v.retry_command)}</code>" for v in views if v.failed)
        parts.append(
            f'<p class="warn">{len(failed)} samples failed with infrastructure errors and are not in the '
            f"metrics; retry them with {retry}.</p>"
        )
        parts.append(_table(*report.failed_table(), numeric_from=99))
    if report.worst:
        parts.append('<h2 id="worst">Worst-scored samples</h2>')
        for w in report.worst:
            parts.append(
                f"<h3>{_sample_link(w.id)} — {escape(w.score_key)} {_num(w.score)} ({escape(w.run)})</h3>"
            )
            if w.facts:
                facts = "; ".join(f"{k}: {v}" for k, v in w.facts.items())
                parts.append(f'<p class="facts">{escape(facts)}</p>')
            # The reply beside what was expected: the difference is the point.
            replies = "".join(f"<pre>{escape(out)}</pre>" for out in w.outputs)
            gold = "".join(f'<pre class="tm-gold">{escape(g)}</pre>' for g in w.gold) or (
                '<p class="facts">not available (the run\'s data could not be read)</p>'
            )
            parts.append(
                f'<div class="tm-pair"><div><h4>reply</h4>{replies}</div><div><h4>gold</h4>{gold}</div></div>'
            )
    if report.definitions:
        parts.append('<h2 id="glossary">Glossary</h2><dl class="tm-glossary">')
        parts += [f"<dt>{escape(m)}</dt><dd>{escape(t)}</dd>" for m, t in report.definitions.items()]
        parts.append("</dl>")
    if samples:
        script = resources.files("toolmend.reports").joinpath("browser.js").read_text(encoding="utf-8")
        parts += [_BROWSER, _json_block(browser_data(views), compress_over), f"<script>{script}</script>"]
    parts.append("</body></html>")
    return escape_surrogates("\n".join(parts) + "\n")

"""``report.md``: the report as GitHub-flavoured markdown (tables, raw outputs in fences)."""

from __future__ import annotations

import re

from toolmend._jsontext import escape_surrogates
from toolmend.reports._tables import Report, flips_shown, provenance
from toolmend.reports._tables import format_number as _num
from toolmend.strategies._report import strategy_lines

__all__ = ["render_markdown"]


def _cell(text: object) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _table(head: list[str], rows: list[list[str]]) -> list[str]:
    out = ["| " + " | ".join(_cell(h) for h in head) + " |", "|" + "---|" * len(head)]
    out += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]
    return out + [""]


def _fence(text: str) -> list[str]:
    # A fence longer than any backtick run inside, so raw outputs cannot close it.
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return [fence, text, fence]


def render_markdown(report: Report) -> str:
    """The whole report as markdown text (a lone surrogate in a model's text shown as its
    ``\\uXXXX`` escape, as the terminal shows it: the file is UTF-8)."""
    views = report.views
    title = views[0].benchmark if len({v.benchmark for v in views}) == 1 else "runs"
    lines = [f"# toolmend report: {title}", ""]
    answer = report.answer_line()
    if answer is not None:
        # The answer first: the one number, then what it means.
        lines += [f"**Headline — {answer}**", ""]
        if report.definition(report.answer or ""):
            lines += [f"{report.answer}: {report.definition(report.answer or '')}", ""]
    lines += ["Rates are percentages (0–100, one decimal place).", ""]
    lines += _table(*report.runs_table())
    lines += [n + "\n" for n in report.status_notes()]
    for v in views:
        lines += [f"<details><summary>provenance: {v.label}</summary>", ""]
        lines += _table(["", ""], [[k, val] for k, val in provenance(v)])
        lines += ["</details>", ""]
    lines += ["## Metrics", ""]
    if report.metrics:
        lines += _table(*report.metrics_table())
    else:
        lines += ["No metrics: no sample has been scored.", ""]
    for c in report.comparisons:
        kind = "paired over shared sample ids" if c.paired else "unpaired (no shared ids)"
        lines += [f"## {c.b.label} vs {c.a.label}", ""]
        lines += [
            f"Per-sample metrics, Δ in percentage points; 95 % bootstrap interval ({kind}, "
            "2,000 resamples, seed 0).",
            "",
        ]
        lines += _table(*c.table())
        for name, ids in (("right → wrong", c.right_to_wrong), ("wrong → right", c.wrong_to_right)):
            shown = flips_shown(ids)
            lines += [f"**{name}: {len(ids)}** " + ", ".join(f"`{i}`" for i in shown), ""]
    lines += strategy_lines(views)
    for b in report.breakdowns:
        lines += [f"## By {b.key.replace('_', ' ')}", ""]
        lines += _table(*report.breakdown_table(b))
    failed = report.failed
    if failed:
        lines += ["## Infrastructure errors", ""]
        lines += [
            f"{len(failed)} samples failed with infrastructure errors and are not in the metrics; "
            "retry them with " + "; ".join(f"`{v.retry_command}`" for v in views if v.failed) + ".",
            "",
        ]
        lines += _table(*report.failed_table())
    if report.worst:
        lines += ["## Worst-scored samples", ""]
        for w in report.worst:
            facts = "; ".join(f"{k}: {v}" for k, v in w.facts.items())
            lines += [f"### {w.id} — {w.score_key} {_num(w.score)} ({w.run})", ""]
            if facts:
                lines += [_cell(facts), ""]
            for i, out in enumerate(w.outputs):
                lines += [f"reply {i + 1}:" if len(w.outputs) > 1 else "reply:", ""]
                lines += _fence(out) + [""]
            if w.gold:
                lines += ["gold:", ""]
                for g in w.gold:
                    lines += _fence(g) + [""]
    if report.definitions:
        lines += ["## Glossary", ""]
        lines += [f"- **{m}**: {text}" for m, text in report.definitions.items()] + [""]
    return escape_surrogates("\n".join(lines).rstrip() + "\n")

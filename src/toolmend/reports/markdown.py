"""``report.md``: the report as GitHub-flavoured markdown (tables, raw outputs in fences)."""

from __future__ import annotations

import re

from toolmend.reports.tables import Report

__all__ = ["render_markdown"]


def _cell(text: object) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _num(value: float | None) -> str:
    return "–" if value is None else f"{value:.4g}"


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
    """The whole report as markdown text."""
    views = report.views
    title = views[0].benchmark if len({v.benchmark for v in views}) == 1 else "runs"
    lines = [f"# toolmend report: {title}", ""]
    lines += _table(
        ["run", "benchmark", "model", "mode", "samples", "scored", "infra errors", "status"],
        [
            [
                v.name,
                v.benchmark,
                v.model,
                v.mode,
                str(len(v.records)),
                str(len(v.scored)),
                str(len(v.failed)),
                "complete" if v.completed else "unfinished",
            ]
            for v in views
        ],
    )
    lines += ["## Metrics", ""]
    if report.metrics:
        lines += _table(
            ["metric", *report.labels],
            [[m, *(_num(report.value(v, m)) for v in views)] for m in report.metrics],
        )
    else:
        lines += ["No metrics yet (the run has not finished).", ""]
    for b in report.breakdowns:
        lines += [f"## By {b.key.replace('_', ' ')}", ""]
        head = ["group"]
        for label in report.labels:
            head += [f"n ({label})", f"{b.score} ({label})"] if len(views) > 1 else ["n", f"mean {b.score}"]
        rows = []
        for g in b.groups:
            row = [g]
            for i in range(len(views)):
                row += [str(b.n[g][i]), _num(b.mean[g][i])]
            rows.append(row)
        lines += _table(head, rows)
    failed = [(v, r) for v in views for r in v.failed]
    if failed:
        lines += ["## Infrastructure errors", ""]
        lines += [
            f"{len(failed)} samples failed with infrastructure errors and are not in the metrics; "
            f"rerun with `toolmend bench … --resume RUN_DIR --retry-errors`.",
            "",
        ]
        lines += _table(
            ["run", "id", "error"],
            [[v.label, r.id, r.error.message[:200] if r.error else ""] for v, r in failed[:50]],
        )
    if report.worst:
        lines += ["## Worst-scored samples", ""]
        for w in report.worst:
            facts = "; ".join(f"{k}: {v}" for k, v in w.facts.items())
            lines += [f"### {w.id} — {w.score_key} {_num(w.score)} ({w.run})", ""]
            if facts:
                lines += [_cell(facts), ""]
            for i, out in enumerate(w.outputs):
                if len(w.outputs) > 1:
                    lines += [f"output {i + 1}:", ""]
                lines += _fence(out) + [""]
    return "\n".join(lines).rstrip() + "\n"

"""The "Recovery strategies" part of ``toolmend report``: what each run's strategies did and cost,
recovery per finding code, and — with several runs of one benchmark — the extra requests and
tokens of each run against the first (its regressions, right → wrong, are in the report's paired
comparison).

>>> from types import SimpleNamespace as NS
>>> rec = lambda i, s, req, ev: NS(id=i, requests=req, usage=NS(total_tokens=10 * req), events=ev, error=None)
>>> a = NS(label="none", benchmark="bfcl", path=NS(name="a"), scored=[rec("1", 1.0, 1, []), rec("2", 0.0, 1, [])],
...        score_of=lambda r: {"1": 1.0, "2": 0.0}[r.id])
>>> guard = [{"kind": "guard", "action": "reask", "fixed": [], "unfixed": ["missing_required"]},
...          {"kind": "guard", "action": "accept", "fixed": [], "unfixed": []}]
>>> b = NS(label="guard", benchmark="bfcl", path=NS(name="b"), scored=[rec("1", 1.0, 1, []), rec("2", 1.0, 2, guard)],
...        score_of=lambda r: 1.0)
>>> print("\\n".join(strategy_lines([a, b])))  # doctest: +NORMALIZE_WHITESPACE
## Recovery strategies
<BLANKLINE>
| run | samples | requests/sample | tokens/sample | strategy events |
|---|---|---|---|---|
| none | 2 | 1.00 | 10 | 0 |
| guard | 2 | 1.50 | 15 | 2 |
<BLANKLINE>
Recovery per finding code (guard decisions: fixed by repair / recovered after a re-ask / given up):
<BLANKLINE>
| run | code | found | repair | re-ask | gave up |
|---|---|---|---|---|---|
| guard | missing_required | 1 | 0 | 1 | 0 |
<BLANKLINE>
Extra cost against the first run (samples both scored):
<BLANKLINE>
| run | vs | samples | +requests/sample | +tokens/sample |
|---|---|---|---|---|
| guard | none | 2 | 0.50 | 5 |
<BLANKLINE>
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

from toolmend.strategies._metrics import recovery_by_code

__all__ = ["StrategyTable", "strategy_lines", "strategy_tables"]

_WHY = ("no_call", "findings", "clean")
"""Why hitec-icl kept its first answer (its event's ``why``), in the report's column order."""


class StrategyTable(NamedTuple):
    """One table of the strategies section: a caption (may be empty), its header and rows."""

    caption: str
    head: list[str]
    rows: list[list[str]]


def strategy_tables(views: Sequence[Any]) -> list[StrategyTable]:
    """The tables of the "Recovery strategies" section (``[]`` when no run recorded strategy
    events); ``report.md`` and ``report.html`` render the same list."""
    with_events = [v for v in views if any(r.events for r in v.scored)]
    if not with_events:
        return []
    rows = []
    for v in views:
        n = max(1, len(v.scored))
        rows.append([
            v.label, str(len(v.scored)), f"{sum(r.requests for r in v.scored) / n:.2f}",
            f"{sum(r.usage.total_tokens for r in v.scored) / n:.0f}", str(sum(len(r.events) for r in v.scored)),
        ])  # fmt: skip
    tables = [
        StrategyTable("", ["run", "samples", "requests/sample", "tokens/sample", "strategy events"], rows)
    ]
    code_rows = []
    for v in with_events:
        table = recovery_by_code(e for r in v.scored for e in r.events)
        for code, c in sorted(table.items()):
            code_rows.append([v.label, code, *(str(c[k]) for k in ("found", "repair", "reask", "gave_up"))])
    if code_rows:
        tables.append(
            StrategyTable(
                "Recovery per finding code (guard decisions: fixed by repair / recovered after a re-ask / given up):",
                ["run", "code", "found", "repair", "re-ask", "gave up"],
                code_rows,
            )
        )
    kept_rows = []
    for v in with_events:
        reviews = [e for r in v.scored for e in r.events if e.get("kind") == "hitec-icl" and "kept" in e]
        if reviews:
            counts = [sum(e["kept"] == "second" for e in reviews)]
            counts += [sum(e["kept"] == "first" and e.get("why") == why for e in reviews) for why in _WHY]
            kept_rows.append([v.label, str(len(reviews)), *(str(n) for n in counts)])
    if kept_rows:
        tables.append(
            StrategyTable(
                "hitec-icl's review round: the answer kept (the first, where the checker found the second worse"
                " or, with keep=findings, nothing in the first):",
                [
                    "run",
                    "answers",
                    "second kept",
                    "first kept: no call",
                    "first kept: more findings",
                    "first kept: clean, not reviewed",
                ],
                kept_rows,
            )
        )
    first = views[0]
    pairs = [v for v in views[1:] if v.benchmark == first.benchmark]
    if pairs:
        base = {r.id: r for r in first.scored}
        cost_rows = []
        for v in pairs:
            both = [r for r in v.scored if r.id in base]
            n = max(1, len(both))
            extra_req = sum(r.requests - base[r.id].requests for r in both) / n
            extra_tok = sum(r.usage.total_tokens - base[r.id].usage.total_tokens for r in both) / n
            cost_rows.append([v.label, first.label, str(len(both)), f"{extra_req:.2f}", f"{extra_tok:.0f}"])
        # Regressions (right → wrong) are in the paired comparison; this is what they cost.
        tables.append(
            StrategyTable(
                "Extra cost against the first run (samples both scored):",
                ["run", "vs", "samples", "+requests/sample", "+tokens/sample"],
                cost_rows,
            )
        )
    return tables


def strategy_lines(views: Sequence[Any]) -> list[str]:
    """Markdown lines for :func:`strategy_tables` under a "Recovery strategies" heading."""
    tables = strategy_tables(views)
    if not tables:
        return []
    lines = ["## Recovery strategies", ""]
    for t in tables:
        if t.caption:
            lines += [t.caption, ""]
        lines += [
            "| " + " | ".join(t.head) + " |",
            "|" + "---|" * len(t.head),
            *("| " + " | ".join(r) + " |" for r in t.rows),
            "",
        ]
    return lines

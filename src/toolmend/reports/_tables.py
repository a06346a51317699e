"""The report's content as plain tables, shared by the markdown and HTML writers.

A :class:`Report` is built once from run views; each writer only formats it, so ``report.md``
and ``report.html`` always say the same thing. Every rate is on the 0–100 scale with one decimal
place (:mod:`toolmend.runs._scale`); counts stay counts.
"""

from __future__ import annotations

import fnmatch
import math
import re
from dataclasses import dataclass, field
from typing import Any

from toolmend.benchmarks import benchmark_class
from toolmend.reports._data import RunView
from toolmend.reports._samples import is_correct
from toolmend.reports._stats import DeltaCI, PairedTest, bootstrap_ci, paired_test
from toolmend.runs import SampleRecord
from toolmend.runs._scale import format_metric, format_pct, is_count, to_pct

__all__ = [
    "Breakdown",
    "Comparison",
    "MetricDelta",
    "Report",
    "WorstSample",
    "build_report",
    "format_number",
    "provenance",
]

Table = tuple[list[str], list[list[str]]]
"""A table as (header, rows) of cell texts."""

_OUTPUT_CHARS = 2000
_SECRET = re.compile(r"(key|token|secret|password|authorization)", re.I)
_FLIPS_SHOWN = 200


@dataclass
class Breakdown:
    """A detail key split into groups: rows of ``(group, n per run, mean score per run (0–100))``."""

    key: str
    score: str
    groups: list[str]
    n: dict[str, list[int]] = field(default_factory=dict)
    mean: dict[str, list[float | None]] = field(default_factory=dict)


@dataclass
class WorstSample:
    """A low-scored sample with what explains it."""

    run: str
    id: str
    score: float | None
    """Headline score, 0–100."""
    score_key: str
    facts: dict[str, str]
    outputs: list[str]
    gold: list[str] = field(default_factory=list)
    """What a perfect model would have replied (empty where the run's data cannot be read)."""


@dataclass(frozen=True)
class MetricDelta:
    """One per-sample metric compared between a baseline run and another (0–100 scale)."""

    metric: str
    a: float
    b: float
    ci: DeltaCI
    test: PairedTest | None = None
    """The paired test, for the headline metric only."""


@dataclass
class Comparison:
    """Run ``b`` against the baseline run ``a``: Δ per metric and the samples that flipped."""

    a: RunView
    b: RunView
    paired: bool
    rows: list[MetricDelta]
    right_to_wrong: list[str]
    wrong_to_right: list[str]

    def table(self) -> Table:
        head = ["metric", "n", self.a.label, self.b.label, "Δ", "95 % CI", "paired test"]
        rows = []
        for d in self.rows:
            test = ""
            if d.test is not None:
                test = f"{d.test.name}: p = {d.test.p_value:.3g}"
                if d.test.name.startswith("McNemar"):
                    test += f" ({d.test.a_only} right→wrong, {d.test.b_only} wrong→right)"
            rows.append(
                [
                    d.metric,
                    str(d.ci.n),
                    format_pct(d.a),
                    format_pct(d.b),
                    _signed(d.ci.delta),
                    f"[{_signed(d.ci.low)}, {_signed(d.ci.high)}]",
                    test,
                ]
            )
        return head, rows


def _signed(value: float) -> str:
    text = format_pct(value)
    return "+" + text if value > 0 and text != "0.0" else text.replace("-0.0", "0.0")


@dataclass
class Report:
    """Everything a report shows (see :func:`build_report`)."""

    views: list[RunView]
    metrics: list[str]
    """Metric names in first-seen order over the runs."""
    plotted: list[str]
    """Rates (not counts) that every run reports on the 0–100 scale and a chart shows."""
    breakdowns: list[Breakdown]
    worst: list[WorstSample]
    comparisons: list[Comparison] = field(default_factory=list)
    per_error_type: dict[str, dict[str, dict[str, float]]] = field(default_factory=dict)
    """Run label → error type → metric → value (0–100): CriticTool's ``<error_type>/<metric>``."""
    answer: str | None = None
    """The metric the report leads with (the benchmark's summary metric, else its headline),
    first in :attr:`metrics`; ``None`` where no run has it."""
    definitions: dict[str, str] = field(default_factory=dict)
    """Metric → one-line definition, for the metrics the benchmarks define."""

    def definition(self, metric: str) -> str:
        return self.definitions.get(metric, "")

    @property
    def labels(self) -> list[str]:
        return [v.label for v in self.views]

    def value(self, view: RunView, metric: str) -> float | None:
        """``metric`` of ``view`` on the report's scale (0–100; counts as they are)."""
        v = view.metrics.get(metric)
        if v is None or math.isnan(v):
            return None
        return v if is_count(metric, view.benchmark) else to_pct(v, percent=metric in view.percent)

    def runs_table(self) -> Table:
        """One row per run: what it ran and how far it got."""
        head = ["run", "benchmark", "model", "mode", "samples", "scored", "infra errors", "status"]
        rows = [
            [
                v.name,
                v.benchmark,
                v.model,
                v.mode,
                str(len(v.records)),
                str(len(v.scored)),
                str(len(v.failed)),
                v.status,
            ]
            for v in self.views
        ]
        return head, rows

    def metrics_table(self) -> Table:
        """One row per metric, one column per run (rates 0–100, one decimal), the answer first;
        a last column with each metric's definition where the benchmark gives them."""
        rows = [
            [
                m,
                *(
                    format_metric(m, v.metrics.get(m), percent=m in v.percent, benchmark=v.benchmark)
                    for v in self.views
                ),
            ]
            for m in self.metrics
        ]
        if not self.definitions:
            return ["metric", *self.labels], rows
        for row in rows:
            text = self.definition(row[0])
            row.append(f"headline: {text}" if row[0] == self.answer else text)
        return ["metric", *self.labels, "what it measures"], rows

    def answer_line(self) -> str | None:
        """``overall: 71.6 (checklist)`` — the answer metric of every run, or ``None``."""
        if self.answer is None:
            return None
        values = [
            f"{format_metric(self.answer, v.metrics.get(self.answer), percent=self.answer in v.percent, benchmark=v.benchmark)}"
            + (f" ({v.label})" if len(self.views) > 1 else "")
            for v in self.views
        ]
        return f"{self.answer}: {', '.join(values)}"

    def breakdown_table(self, b: Breakdown) -> Table:
        """One row per group: its sample count and mean score (0–100) in each run."""
        head = ["group"]
        for label in self.labels:
            head += (
                [f"n ({label})", f"{b.score} ({label})"] if len(self.views) > 1 else ["n", f"mean {b.score}"]
            )
        rows = []
        for g in b.groups:
            row = [g]
            for i in range(len(self.views)):
                row += [str(b.n[g][i]), format_pct(b.mean[g][i])]
            rows.append(row)
        return head, rows

    @property
    def failed(self) -> list[tuple[RunView, SampleRecord]]:
        """Samples that failed with an infrastructure error, with their run."""
        return [(v, r) for v in self.views for r in v.failed]

    def failed_table(self, limit: int = 50) -> Table:
        """The first ``limit`` infrastructure errors (run, sample id, message clipped to 200 chars)."""
        rows = [[v.label, r.id, r.error.message[:200] if r.error else ""] for v, r in self.failed[:limit]]
        return ["run", "id", "error"], rows

    def status_notes(self) -> list[str]:
        """One sentence per run that is not simply complete: partial metrics, all samples failed."""
        notes = []
        for v in self.views:
            if not v.scored and v.records:
                notes.append(
                    f"{v.label}: every sample failed with an infrastructure error, so there are no "
                    f"metrics; retry them with `{v.retry_command}`."
                )
            elif v.partial_metrics:
                notes.append(f"{v.label}: {v.status}; its metrics are over the samples done so far.")
        return notes


def provenance(view: RunView) -> list[tuple[str, str]]:
    """What produced ``view``: version, git revision, dataset hash, settings, command line. Keys,
    tokens and passwords are never shown, whatever the manifest holds."""
    m = view.manifest
    if m is None:
        return [("manifest", "none (not written by toolmend bench)")]
    rows = [
        ("created", m.created),
        ("toolmend", m.toolmend_version),
        ("git revision", m.git_revision or "unknown (not a git checkout)"),
        ("python", m.python),
    ]
    if m.dataset is not None:
        rows += [("dataset", m.dataset.path), ("dataset sha256", m.dataset.sha256)]
    if m.n_planned is not None:
        rows.append(("samples planned", str(m.n_planned)))
    # Whatever else the manifest holds (the runner's settings under config["bench"], and any
    # field a later version adds), flattened one level; the bench settings need no prefix.
    known = {"benchmark", "model", "created", "command", "config", "toolmend_version", "python",
             "git_revision", "dataset", "n_planned"}  # fmt: skip
    extra = {k: v for k, v in m.model_dump().items() if k not in known}
    for group, values in [*m.config.items(), *extra.items()]:
        if _SECRET.search(group):
            continue
        items = values.items() if isinstance(values, dict) else [("", values)]
        for key, value in items:
            if value in (None, "", [], {}) or _SECRET.search(str(key)):
                continue
            name = str(key) if group == "bench" else f"{group}.{key}" if key else group
            rows.append((name.replace("_", " "), _setting(value)))
    if m.command:
        rows.append(("command", " ".join(_redact_argv(m.command))))
    return rows


def _setting(value: Any) -> str:
    if isinstance(value, dict):
        return ", ".join(f"{k}={_setting(v)}" for k, v in value.items() if not _SECRET.search(str(k)))
    if isinstance(value, list):
        return ", ".join(_setting(v) for v in value)
    return str(value)


def _redact_argv(argv: list[str]) -> list[str]:
    out: list[str] = []
    hide = False
    for arg in argv:
        if hide:
            out.append("***")
            hide = False
            continue
        name, eq, _ = arg.partition("=")
        if name.startswith("-") and _SECRET.search(name) and "env" not in name:
            if eq:
                out.append(f"{name}=***")
            else:
                out.append(arg)
                hide = True
            continue
        out.append(re.sub(r"\bsk-[A-Za-z0-9_-]{8,}", "***", arg))
    return out


def format_number(value: float | None) -> str:
    """A value already on the report's scale: one decimal place, an en dash when missing.

    >>> format_number(86.714), format_number(None)
    ('86.7', '–')
    """
    return format_pct(value)


def _clip(text: str) -> str:
    return text if len(text) <= _OUTPUT_CHARS else text[:_OUTPUT_CHARS] + f"… [{len(text)} chars]"


def _compare(a: RunView, b: RunView, seed: int = 0) -> Comparison | None:
    a_rec = {r.id: r for r in a.scored}
    b_rec = {r.id: r for r in b.scored}
    shared = [i for i in a_rec if i in b_rec]
    paired = bool(shared)
    keys = [k for k in a_rec[next(iter(a_rec))].scores] if a_rec else []
    for r in list(a_rec.values()) + list(b_rec.values()):
        keys.extend(k for k in r.scores if k not in keys)
    headline = a.primary if a.primary == b.primary else None
    rows = []
    for key in keys:
        if paired:
            pairs = [
                (x, y)
                for i in shared
                if (x := a_rec[i].scores.get(key)) is not None
                and (y := b_rec[i].scores.get(key)) is not None
                and not (math.isnan(x) or math.isnan(y))
            ]
            if not pairs:
                continue
            xs, ys = [100.0 * p[0] for p in pairs], [100.0 * p[1] for p in pairs]
        else:
            xs = [
                100.0 * v
                for r in a_rec.values()
                if (v := r.scores.get(key)) is not None and not math.isnan(v)
            ]
            ys = [
                100.0 * v
                for r in b_rec.values()
                if (v := r.scores.get(key)) is not None and not math.isnan(v)
            ]
            if not xs or not ys:
                continue
        ci = bootstrap_ci(xs, ys, paired=paired, seed=seed)
        test = (
            paired_test([x / 100 for x in xs], [y / 100 for y in ys], seed=seed)
            if paired and key == headline
            else None
        )
        rows.append(MetricDelta(key, sum(xs) / len(xs), sum(ys) / len(ys), ci, test))
    if not rows:
        return None
    rows.sort(key=lambda d: d.metric != headline)
    r2w = [i for i in shared if is_correct(a.score_of(a_rec[i])) and not is_correct(b.score_of(b_rec[i]))]
    w2r = [i for i in shared if not is_correct(a.score_of(a_rec[i])) and is_correct(b.score_of(b_rec[i]))]
    return Comparison(a=a, b=b, paired=paired, rows=rows, right_to_wrong=r2w, wrong_to_right=w2r)


def _per_error_type(views: list[RunView]) -> dict[str, dict[str, dict[str, float]]]:
    out: dict[str, dict[str, dict[str, float]]] = {}
    for v in views:
        table: dict[str, dict[str, float]] = {}
        for name, value in v.metrics.items():
            etype, sep, metric = name.rpartition("/")
            if (
                sep
                and etype.endswith("_error")
                and (pct := to_pct(value, percent=name in v.percent)) is not None
            ):
                table.setdefault(etype, {})[metric] = pct
        if table:
            out[v.label] = table
    return out


def _worst(views: list[RunView], k: int) -> list[WorstSample]:
    """The ``k`` samples with the lowest headline score averaged over the runs that scored them;
    ties go to the sample with the lower mean over all its per-sample metrics (wrong on more
    counts), then to the run's order."""
    stats: dict[str, list[float]] = {}
    order: dict[str, int] = {}
    for v in views:
        for r in v.scored:
            s = v.score_of(r)
            if s is None:
                continue
            known = [x for x in r.scores.values() if x is not None and not math.isnan(x)]
            entry = stats.setdefault(r.id, [0.0, 0.0, 0.0])
            entry[0] += s
            entry[1] += sum(known) / len(known) if known else s
            entry[2] += 1
            order.setdefault(r.id, len(order))
    ranked = sorted(
        (i for i, (s, _, n) in stats.items() if s / n < 1.0),
        key=lambda i: (stats[i][0] / stats[i][2], stats[i][1] / stats[i][2], order[i]),
    )[:k]
    rows: list[WorstSample] = []
    wanted = set(ranked)
    found = [{x.id: x for x in v.scored if x.id in wanted} for v in views]
    for sid in ranked:
        for v, records in zip(views, found, strict=True):
            rec = records.get(sid)
            if rec is None:
                continue
            facts: dict[str, str] = {
                key: str(rec.details[key])
                for key in ("category", "error_type", "depth", "part", "external_mode", "outcome")
                if key in rec.details and rec.details[key] not in ("", None)
            }
            if rec.details.get("error"):  # BFCL's checker message
                facts["checker"] = str(rec.details["error"])[:300]
            if rec.findings:
                facts["findings"] = ", ".join(sorted({f.code for f in rec.findings}))
            rows.append(
                WorstSample(
                    run=v.label,
                    id=rec.id,
                    score=to_pct(v.score_of(rec)),
                    score_key=v.primary or "score",
                    facts=facts,
                    outputs=[_clip(o) for o in rec.outputs],
                    gold=_gold_of(v, rec.id),
                )
            )
    return rows


def _gold_of(view: RunView, sid: str) -> list[str]:
    from toolmend.reports._samples import dataset_samples

    gold = dataset_samples(view)[0].get(sid, {}).get("gold")
    if gold is None:
        return []
    return [_clip(g if isinstance(g, str) else str(g)) for g in ([gold] if isinstance(gold, str) else gold)]


def _definitions(views: list[RunView], metrics: list[str]) -> tuple[str | None, dict[str, str]]:
    """The answer metric and the definitions of ``metrics``, from the runs' benchmark classes."""
    classes = [c for v in views if (c := benchmark_class(v.benchmark)) is not None]
    answer = next((c.summary_metric for c in classes if c.summary_metric in metrics), None)
    answer = answer or next((c.headline for c in classes if c.headline in metrics), None)

    def find(metric: str) -> str:
        for c in classes:
            found = c.metric_help.get(metric) or next(
                (text for pattern, text in c.metric_help.items() if fnmatch.fnmatchcase(metric, pattern)), ""
            )
            if found:
                return found
        return ""

    out: dict[str, str] = {}
    for m in metrics:
        text = find(m)
        group, sep, base = m.rpartition("/")
        if not text and sep and (text := find(base)):
            # `<group>/<metric>` (CriticTool's per-error-type scores): the metric over one group.
            text = f"{text.rstrip('.')}; {group} samples only."
        if text:
            out[m] = text
    return answer, out


def build_report(views: list[RunView], *, worst: int = 10) -> Report:
    """Collect metrics, per-group breakdowns (runs side by side), paired comparisons of every run
    with the first, and the ``worst`` samples over all runs."""
    metrics: list[str] = []
    for v in views:
        metrics.extend(m for m in v.metrics if m not in metrics)
    plotted = [
        m
        for m in metrics
        if not any(is_count(m, v.benchmark) for v in views)
        and "error" not in m
        and any(m in v.metrics and not math.isnan(v.metrics[m]) for v in views)
    ]
    breakdowns: dict[str, Breakdown] = {}
    for i, v in enumerate(views):
        # One group in one run is still worth a column when another run splits further.
        for key, rows in v.breakdowns(min_groups=1).items():
            b = breakdowns.setdefault(key, Breakdown(key=key, score=v.primary or "score", groups=[]))
            for row in rows:
                if row.group not in b.groups:
                    b.groups.append(row.group)
                    b.n[row.group] = [0] * len(views)
                    b.mean[row.group] = [None] * len(views)
                b.n[row.group][i] = row.n
                b.mean[row.group][i] = to_pct(row.mean)
    kept = [b for b in breakdowns.values() if len(b.groups) >= 2]
    comparisons = [c for v in views[1:] if (c := _compare(views[0], v)) is not None]
    answer, definitions = _definitions(views, metrics)
    if answer is not None:
        metrics = [answer, *(m for m in metrics if m != answer)]
    return Report(
        answer=answer,
        definitions=definitions,
        views=views,
        metrics=metrics,
        plotted=plotted,
        breakdowns=kept,
        worst=_worst(views, worst),
        comparisons=comparisons,
        per_error_type=_per_error_type(views),
    )


def flips_shown(ids: list[str]) -> list[str]:
    """The flipped ids a report lists (the rest are counted, and found in the sample browser)."""
    return ids[:_FLIPS_SHOWN]


@dataclass
class Chart:
    """A data-driven figure: groups on one axis, one series per run (values 0–100)."""

    title: str
    labels: list[str]
    series: dict[str, list[float | None]]
    kind: str = "bar"
    """``bar``, or ``line`` for curves over k (pass^k)."""
    xlabel: str = ""


def _events(r: SampleRecord) -> list[dict[str, Any]]:
    raw = r.events or r.details.get("events") or []
    return [e for e in raw if isinstance(e, dict)]


def _recovered(view: RunView, r: SampleRecord, events: list[dict[str, Any]]) -> bool:
    flags = [bool(e["recovered"]) for e in events if "recovered" in e]
    if "recovered" in r.details:
        return bool(r.details["recovered"])
    return any(flags) if flags else is_correct(view.score_of(r))


def _fault_kinds(r: SampleRecord, events: list[dict[str, Any]]) -> set[str]:
    kinds: set[str] = set()
    for raw in (r.details.get("fault_kind"), r.details.get("faults"), *(e.get("fault") for e in events)):
        for item in raw if isinstance(raw, list) else [raw]:
            if isinstance(item, dict):
                item = item.get("kind") or item.get("type")
            if isinstance(item, str) and item:
                kinds.add(item)
    return kinds


def _rate_chart(views: list[RunView], title: str, groups_of: Any) -> Chart | None:
    """Share of samples recovered per group (a sample is in every group ``groups_of`` gives it)."""
    counts: list[dict[str, list[int]]] = []
    for v in views:
        per: dict[str, list[int]] = {}
        for r in v.scored:
            events = _events(r)
            ok = _recovered(v, r, events)
            for g in groups_of(r, events):
                cell = per.setdefault(g, [0, 0])
                cell[0] += int(ok)
                cell[1] += 1
        counts.append(per)
    labels = sorted({g for per in counts for g in per})
    if not labels:
        return None
    series = {
        v.label: [100.0 * per[g][0] / per[g][1] if g in per else None for g in labels]
        for v, per in zip(views, counts, strict=True)
    }
    return Chart(title, labels, series, xlabel="% recovered")


def _pass_k(view: RunView) -> dict[int, float]:
    """pass^k (0–100): from ``pass^k`` metrics, else from per-sample ``trials`` (the chance that k
    trials drawn without replacement all pass, averaged over samples)."""
    out: dict[int, float] = {}
    for name, value in view.metrics.items():
        m = re.fullmatch(r"pass\^(\d+)", name)
        if m and (pct := to_pct(value, percent=name in view.percent)) is not None:
            out[int(m.group(1))] = pct
    if out:
        return out
    trials = [t for r in view.scored if isinstance(t := r.details.get("trials"), list) and t]
    if not trials:
        return {}
    n = min(len(t) for t in trials)
    for k in range(1, n + 1):
        vals = [math.comb(sum(bool(x) for x in t), k) / math.comb(len(t), k) for t in trials]
        out[k] = 100.0 * sum(vals) / len(vals)
    return out


def charts(report: Report) -> list[Chart]:
    """The figures beyond the metric bars: per error type (performance), recovery per finding code
    and per fault kind, pass^k curves; each only where the runs hold the data."""
    views = report.views
    out: list[Chart] = []
    for label, table in report.per_error_type.items():
        metrics = [
            m
            for m in ("detect", "category", "tool", "args", "thought")
            if any(m in t for t in table.values())
        ]
        types = sorted(table)
        out.append(
            Chart(
                f"{label}: performance per error type",
                types,
                {m: [table[t].get(m) for t in types] for m in metrics},
                xlabel="%",
            )
        )
    by_code = _rate_chart(
        views, "recovery per finding code", lambda r, ev: {str(e["code"]) for e in ev if e.get("code")}
    )
    by_fault = _rate_chart(views, "recovery per fault kind", _fault_kinds)
    out += [c for c in (by_code, by_fault) if c is not None]
    curves = {v.label: _pass_k(v) for v in views}
    ks = sorted({k for c in curves.values() for k in c})
    if ks:
        out.append(
            Chart(
                "pass^k",
                [str(k) for k in ks],
                {label: [c.get(k) for k in ks] for label, c in curves.items() if c},
                kind="line",
                xlabel="k",
            )
        )
    return out

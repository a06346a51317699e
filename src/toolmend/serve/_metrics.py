"""The proxy's counters and latency histograms, exposed in Prometheus' text format (version 0.0.4).

Kept in-process and lock-free (one event loop owns them), so counting costs a dict update per
request.

>>> m = Metrics()
>>> m.inc("toolmend_requests_total", stream="false", outcome="accepted")
>>> m.observe("toolmend_request_seconds", 0.003, stream="false")
>>> text = m.render()
>>> 'toolmend_requests_total{outcome="accepted",stream="false"} 1' in text
True
>>> 'toolmend_request_seconds_bucket{stream="false",le="0.005"} 1' in text
True
"""

from __future__ import annotations

import bisect
from collections import defaultdict
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from toolmend.serve._verdict import Verdict

__all__ = ["HELP", "Metrics"]

HELP: dict[str, tuple[str, str]] = {
    "toolmend_requests_total": ("counter", "Chat-completion requests answered, by stream and outcome."),
    "toolmend_findings_total": ("counter", "Findings on upstream answers, by finding code."),
    "toolmend_repairs_total": ("counter", "Safe repairs applied to tool calls."),
    "toolmend_reasks_total": ("counter", "Hidden re-ask requests sent upstream."),
    "toolmend_recoveries_total": ("counter", "Answers made valid by re-asking."),
    "toolmend_give_ups_total": ("counter", "Answers the guard gave up on (an error was returned)."),
    "toolmend_upstream_errors_total": ("counter", "Upstream failures passed on to the client, by status."),
    "toolmend_upstream_retries_total": (
        "counter",
        "Upstream requests retried after 429/5xx or a transport error.",
    ),
    "toolmend_bad_requests_total": ("counter", "Requests refused with a 4xx before reaching the upstream."),
    "toolmend_client_disconnects_total": ("counter", "Requests whose client went away (upstream cancelled)."),
    "toolmend_request_seconds": ("histogram", "Time from request to the last byte sent, by stream."),
    "toolmend_upstream_seconds": ("histogram", "Time the first upstream answer took, by stream."),
    "toolmend_guard_seconds": ("histogram", "Time spent deciding and recovering (re-asks included)."),
}

BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)

Labels = tuple[tuple[str, str], ...]
_INF = 'le="+Inf"'


def _labels(labels: Labels, extra: str = "") -> str:
    parts = [f'{k}="{_escape(v)}"' for k, v in labels]
    if extra:
        parts.append(extra)
    return "{" + ",".join(parts) + "}" if parts else ""


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


class Metrics:
    """Counters and histograms by name and label set (see :data:`HELP` for the names)."""

    def __init__(self) -> None:
        self.counters: dict[str, dict[Labels, float]] = defaultdict(lambda: defaultdict(float))
        self.histograms: dict[str, dict[Labels, list[float]]] = defaultdict(dict)

    def inc(self, name: str, value: float = 1.0, **labels: str) -> None:
        """Add ``value`` to the counter ``name`` with ``labels``."""
        self.counters[name][tuple(sorted(labels.items()))] += value

    def observe(self, name: str, seconds: float, **labels: str) -> None:
        """Record one observation in the histogram ``name``: bucket counts, then sum and count."""
        key = tuple(sorted(labels.items()))
        row = self.histograms[name].get(key)
        if row is None:
            row = self.histograms[name][key] = [0.0] * (len(BUCKETS) + 2)
        row[bisect.bisect_left(BUCKETS, seconds)] += 1
        row[-2] += seconds
        row[-1] += 1

    def count_request(self, *, stream: bool, outcome: str, seconds: float, verdict: Verdict | None) -> None:
        """One finished request of any route: its count and time, and what its verdict did."""
        label = "true" if stream else "false"
        self.inc("toolmend_requests_total", stream=label, outcome=outcome)
        self.observe("toolmend_request_seconds", seconds, stream=label)
        if verdict is None:
            return
        for code in verdict.findings:
            self.inc("toolmend_findings_total", code=code)
        if verdict.repairs:
            self.inc("toolmend_repairs_total", verdict.repairs)
        if verdict.outcome == "recovered":
            self.inc("toolmend_recoveries_total")
        if verdict.outcome in ("aborted", "rejected", "failed_to_model") and verdict.error is not None:
            self.inc("toolmend_give_ups_total")

    def value(self, name: str, **labels: str) -> float:
        """A counter's value (0 when never counted); with no labels, the sum over all label sets."""
        series = self.counters.get(name, {})
        if not labels:
            return sum(series.values())
        return series.get(tuple(sorted(labels.items())), 0.0)

    def render(self) -> str:
        """Every metric in Prometheus' text exposition format."""
        lines: list[str] = []
        for name, (kind, help_text) in HELP.items():
            lines.append(f"# HELP {name} {help_text}")
            lines.append(f"# TYPE {name} {kind}")
            if kind == "counter":
                series = self.counters.get(name) or {(): 0.0}
                for labels, value in sorted(series.items()):
                    lines.append(f"{name}{_labels(labels)} {_num(value)}")
                continue
            for labels, row in sorted(self.histograms.get(name, {}).items()):
                running = 0.0
                for bound, count in zip(BUCKETS, row, strict=False):
                    running += count
                    le = 'le="' + str(bound) + '"'
                    lines.append(f"{name}_bucket{_labels(labels, le)} {_num(running)}")
                lines.append(f"{name}_bucket{_labels(labels, _INF)} {_num(row[-1])}")
                lines.append(f"{name}_sum{_labels(labels)} {row[-2]!r}")
                lines.append(f"{name}_count{_labels(labels)} {_num(row[-1])}")
        return "\n".join(lines) + "\n"


def _num(value: float) -> str:
    return str(int(value)) if value == int(value) else repr(value)

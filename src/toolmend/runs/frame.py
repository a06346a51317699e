"""Runs as pandas DataFrames, one row per sample (pandas comes with the ``viz`` extra).

>>> import tempfile
>>> run = RunDir.create(tempfile.mkdtemp(), Manifest(benchmark="demo", model="scripted"))
>>> with run.writer() as w:
...     w.append(SampleRecord(id="a", scores={"acc": 1.0}))
>>> load_run(run.path).to_dataframe()[["id", "ok", "score_acc"]].to_dict("records")
[{'id': 'a', 'ok': True, 'score_acc': 1.0}]

Columns (one row per sample; a run without a given detail has ``None`` there):

========================  =====================================================================
``run``, ``benchmark``,   the run directory's name and what it ran
``model``
``id``                    the sample id
``ok``                    scored (``True``) or an infrastructure error (``False``)
``error``,                the infrastructure error's message and HTTP status
``error_status``
``n_outputs``,            generations, calls parsed from the final output, findings
``n_calls``,
``n_findings``
``finding_codes``         the findings' codes, sorted and unique (a list of str)
``calls``                 the parsed calls' names, in order (a list of str)
``input_tokens``, …       ``output_tokens``, ``requests``, ``retries``, ``cache_hits``,
                          ``latency_s``
``score_<metric>``        one column per per-sample metric, in [0, 1] (``None``: not applicable)
``<detail>``              one column per ``SampleScore.details`` key (``category``,
                          ``error_type``, ``depth``, ``part`` …): scalars as they are, lists and
                          dicts as JSON-able Python objects; a key that clashes with a column
                          above is prefixed ``detail_``
``decisions``             the strategy's decisions (``SampleRecord.events``: a list of dicts
                          with keys such as ``code``, ``action``, ``attempt``), empty if none
``actions``               the ``action`` of each decision, in order (a list of str)
========================  =====================================================================
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from toolmend.errors import MissingExtraError
from toolmend.runs.manifest import Manifest
from toolmend.runs.record import SampleRecord
from toolmend.runs.store import RunDir

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["LoadedRun", "load_run", "runs_dataframe"]

_RESERVED = frozenset({"decisions", "actions"})


def _pandas() -> Any:
    try:
        import pandas
    except ImportError as exc:
        raise MissingExtraError("pandas", "viz", "run DataFrames") from exc
    return pandas


@dataclass
class LoadedRun:
    """A run read back from disk."""

    path: Path
    manifest: Manifest | None
    """``None`` for a directory written by :func:`run_samples` without a manifest."""
    records: list[SampleRecord]
    results: dict[str, Any] | None
    """``results.json``, ``None`` for a run that did not finish."""

    def rows(self) -> list[dict[str, Any]]:
        """The DataFrame's rows as plain dicts."""
        rows = []
        for r in self.records:
            row: dict[str, Any] = {
                "run": self.path.name,
                "benchmark": self.manifest.benchmark if self.manifest else None,
                "model": self.manifest.model if self.manifest else None,
                "id": r.id,
                "ok": r.ok,
                "error": r.error.message if r.error else None,
                "error_status": r.error.status if r.error else None,
                "n_outputs": len(r.outputs),
                "n_calls": len(r.calls),
                "n_findings": len(r.findings),
                "input_tokens": r.usage.input_tokens,
                "output_tokens": r.usage.output_tokens,
                "requests": r.requests,
                "retries": r.retries,
                "cache_hits": r.cache_hits,
                "latency_s": r.latency_s,
            }
            row["finding_codes"] = sorted({f.code for f in r.findings})
            row["calls"] = [c.name for c in r.calls]
            row.update({f"score_{k}": v for k, v in r.scores.items()})
            for key, value in r.details.items():
                row[f"detail_{key}" if key in row or key in _RESERVED else key] = value
            events = [e for e in r.events if isinstance(e, dict)]
            row["decisions"] = events
            row["actions"] = [str(e["action"]) for e in events if "action" in e]
            rows.append(row)
        return rows

    def to_dataframe(self) -> pd.DataFrame:
        """One row per sample (see the module docstring for the columns)."""
        return _pandas().DataFrame(self.rows())


def load_run(path: str | Path) -> LoadedRun:
    """Read a run directory (finished or not)."""
    run = RunDir.open(path)
    manifest = run.manifest() if (run.path / "manifest.json").exists() else None
    return LoadedRun(path=run.path, manifest=manifest, records=run.read_records(), results=run.results())


def runs_dataframe(paths: Iterable[str | Path]) -> pd.DataFrame:
    """Several runs in one DataFrame (e.g. to compare models on a benchmark)."""
    rows = [row for p in paths for row in load_run(p).rows()]
    return _pandas().DataFrame(rows)

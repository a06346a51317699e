"""Runs as pandas DataFrames, one row per sample (pandas comes with the ``viz`` extra).

>>> import tempfile
>>> run = RunDir.create(tempfile.mkdtemp(), Manifest(benchmark="demo", model="scripted"))
>>> with run.writer() as w:
...     w.append(SampleRecord(id="a", scores={"acc": 1.0}))
>>> load_run(run.path).to_dataframe()[["id", "ok", "score_acc"]].to_dict("records")
[{'id': 'a', 'ok': True, 'score_acc': 1.0}]

Columns: ``run``, ``benchmark``, ``model``, ``id``, ``ok``, ``error``, ``error_status``,
``n_outputs``, ``n_calls``, ``n_findings``, ``input_tokens``, ``output_tokens``, ``requests``,
``retries``, ``cache_hits``, ``latency_s`` and one ``score_<metric>`` column per metric.
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
            row.update({f"score_{k}": v for k, v in r.scores.items()})
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

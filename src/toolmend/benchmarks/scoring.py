"""Score saved predictions against a benchmark: the engine behind ``toolmend score``.

>>> from toolmend.benchmarks import BENCHMARKS, score_predictions
>>> bench = BENCHMARKS.get("bfcl")()
>>> samples = bench.load()  # the shared data folder
>>> report = score_predictions(bench, samples, {"simple_python_0": "[calculate_triangle_area(base=10, height=5)]"})
>>> report.scored, report.total
(1, 1498)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pydantic import BaseModel, Field

from toolmend.benchmarks.base import Benchmark, Mode, Prediction, SampleScore
from toolmend.benchmarks.predictions import Predictions
from toolmend.schema import Sample

__all__ = ["ScoreReport", "score_predictions"]


class ScoreReport(BaseModel):
    """Metrics over the samples that had a prediction, and exactly what was left out."""

    benchmark: str
    mode: Mode
    metrics: dict[str, float]
    scored: int
    """How many samples the metrics cover."""
    total: int
    """How many samples the data holds."""
    missing: list[str] = Field(default_factory=list)
    """Ids in the data without a prediction (not scored unless ``missing_as_empty``)."""
    unknown: dict[str, int] = Field(default_factory=dict)
    """Prediction ids that are not in the data, with the line they were read from."""
    problems: list[str] = Field(default_factory=list)
    """Unreadable prediction lines, with their line numbers."""
    scores: list[SampleScore] = Field(default_factory=list)


def score_predictions(
    benchmark: Benchmark,
    samples: Sequence[Sample],
    predictions: Predictions | Mapping[str, Prediction],
    mode: Mode = "compat",
    *,
    missing_as_empty: bool = False,
) -> ScoreReport:
    """Score every sample that has a prediction and aggregate with the benchmark's own rules.

    With ``missing_as_empty`` a sample without a prediction is scored as an empty output (a
    failure on every metric) instead of being left out of the denominators.
    """
    if isinstance(predictions, Predictions):
        outputs: Mapping[str, Prediction] = predictions.outputs
        lines = predictions.lines
        problems = [str(p) for p in predictions.problems]
    else:
        outputs, lines, problems = predictions, {}, []
    known = {s.id for s in samples}
    todo: list[tuple[Sample, Prediction]] = []
    missing: list[str] = []
    for sample in samples:
        pred = outputs.get(sample.id)
        if pred is None:
            missing.append(sample.id)
            if not missing_as_empty:
                continue
            pred = ""
        todo.append((sample, pred))
    if todo:
        # Every prediction is known: let the benchmark batch its work (e.g. embeddings) first.
        benchmark.prepare([s for s, _ in todo], [p for _, p in todo])
    scores = [benchmark.score(sample, pred, mode) for sample, pred in todo]
    unknown = {sid: lines.get(sid, 0) for sid in outputs if sid not in known}
    return ScoreReport(
        benchmark=benchmark.name,
        mode=mode,
        metrics=benchmark.aggregate(scores, mode) if scores else {},
        scored=len(scores),
        total=len(samples),
        missing=missing,
        unknown=unknown,
        problems=problems,
        scores=scores,
    )

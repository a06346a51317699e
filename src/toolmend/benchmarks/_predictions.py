"""Saved model outputs, as :func:`toolmend.benchmarks.score_predictions` reads them: the one
reader is :mod:`toolmend.models._predictions` (the ``replay/`` backend reads the same files)."""

from __future__ import annotations

from toolmend.models._predictions import LineProblem, Predictions, read_predictions

__all__ = ["LineProblem", "Predictions", "read_predictions"]

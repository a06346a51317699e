"""Critique suites in CriticTool's format, built from gold trajectories (world, NesTools, BFCL).

>>> from toolmend.benchmarks.critic import build_suite
>>> info = build_suite("world", seed=0, out=tmp_path, limit=8)
>>> sorted(info.internal)
['error_free', ...]

The files load with :func:`toolmend.benchmarks.critictool.load_critictool` and score with the
CriticTool scorer unchanged. ``toolmend bench critic`` (:data:`~toolmend.benchmarks.SUITES`)
builds the world suite, runs a model on it and scores it in one go.
``build_suite(..., variant="evolved")`` applies CriticTool's SRM evolution (:mod:`.evolve`);
every sample passes the label checks of :mod:`.verify`; :func:`._quality.suite_quality` reports counts,
drops, duplicates and contamination (:mod:`._quality`).
"""

from toolmend.benchmarks.critic._build import SuiteInfo, build_suite

__all__ = [
    "SuiteInfo",
    "build_suite",
]

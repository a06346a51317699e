"""Benchmarks, one module each, registered by name in :data:`BENCHMARKS`."""

from toolmend.benchmarks.base import BENCHMARKS, Benchmark, Mode, Prediction, SampleScore

__all__ = ["BENCHMARKS", "Benchmark", "Mode", "Prediction", "SampleScore"]

"""What every benchmark module provides, so that ``toolmend score`` and ``toolmend bench`` can drive
any of them by name.

A benchmark turns its data files into :class:`~toolmend.Sample` objects, builds the prompt a model
sees, scores one raw model output against one sample (a pure function), and aggregates the
per-sample scores into the benchmark's published metrics (kept apart, because official scorers
differ in their denominators).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from toolmend.errors import ConfigError
from toolmend.registry import Registry
from toolmend.schema import Message, Sample

__all__ = ["BENCHMARKS", "Benchmark", "Mode", "Prediction", "SampleScore", "as_mode"]

Mode = Literal["compat", "improved"]
"""``compat`` reproduces the official scorer's numbers exactly, quirks included; ``improved``
fixes the documented flaws (each benchmark's docstring says what it changes)."""


def as_mode(value: str) -> Mode:
    """``value`` as a :data:`Mode`; a :class:`~toolmend.ConfigError` for anything else."""
    if value == "compat":
        return "compat"
    if value == "improved":
        return "improved"
    raise ConfigError(f"--mode must be compat or improved, got {value!r}")


Prediction = str | list[str]
"""A model's raw output for a sample; a list for multi-generation samples (CriticTool external
errors, Repair@N)."""


class SampleScore(BaseModel):
    """The scores of one sample.

    ``values`` maps a metric name to its value in [0, 1], or to ``None`` where the metric does not
    apply to this sample (it then stays out of that metric's denominator). ``details`` keeps what
    explains the score (parsed calls, findings, the error type) for reports.
    """

    model_config = ConfigDict(extra="forbid")

    id: str
    values: dict[str, float | None] = Field(default_factory=dict)
    details: dict[str, Any] = Field(default_factory=dict)


class Benchmark(ABC):
    """Base class of the benchmarks registered in :data:`BENCHMARKS`."""

    name: str = ""
    load_options: tuple[str, ...] | None = None
    """The option keys :meth:`load` takes; ``None``: not declared, so not checked."""
    default_data: str = ""
    """Path of the default data relative to the shared folder (``data/nestools``)."""

    @abstractmethod
    def load(self, path: str | Path | None = None, **options: Any) -> list[Sample]:
        """Read the benchmark's data files; a :class:`~toolmend.DatasetError` names what is wrong."""

    def check_load_options(self, options: Mapping[str, Any]) -> None:
        """Raise :class:`~toolmend.ConfigError` for option keys :attr:`load_options` does not list."""
        known = self.load_options
        unknown = sorted(set(options) - set(known)) if known is not None else []
        if unknown:
            raise ConfigError(
                f"unknown --option key(s) for {self.name}: {', '.join(unknown)}; it takes: {', '.join(known or ()) or 'none'}"
            )

    @abstractmethod
    def prompt(self, sample: Sample) -> list[Message]:
        """The messages a model is sent for ``sample``."""

    @abstractmethod
    def score(self, sample: Sample, prediction: Prediction, mode: Mode = "compat") -> SampleScore:
        """Score one raw model output; never raises on malformed output."""

    def prepare(self, samples: Sequence[Sample], predictions: Sequence[Prediction] | None = None) -> None:
        """Optional: get ready to score ``samples`` (with these ``predictions``, when known) in bulk.

        Called before a batch of :meth:`score` calls, e.g. to embed every text they will compare
        in one model call; it must not change any score. The default does nothing.
        """
        return None

    @abstractmethod
    def aggregate(self, scores: Sequence[SampleScore], mode: Mode = "compat") -> dict[str, float]:
        """The benchmark's headline metrics over ``scores``, as the official scorer aggregates them."""


BENCHMARKS: Registry[type[Benchmark]] = Registry("benchmark")

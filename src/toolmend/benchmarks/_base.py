"""What every benchmark module provides, so that ``toolmend score`` and ``toolmend bench`` can drive
any of them by name.

A benchmark turns its data files into :class:`~toolmend.Sample` objects, builds the prompt a model
sees, *solves* a sample with a :class:`Generate` function (one request by default; an interactive
loop for CriticTool's external errors, N samples for Repair@N), scores one raw model output against
one sample (a pure function), and aggregates the per-sample scores into the benchmark's published
metrics (kept apart, because official scorers differ in their denominators). It also declares what
the runner needs to drive it without knowing its name: the format native tool calls are written
back in (:attr:`Benchmark.reply_format`), the per-sample headline score, the detail keys reports
break results down by, and the gold reply (:meth:`Benchmark.gold`).

The shape follows inspect_ai's ``Task``/``Solver`` split: the runner builds one ``generate`` per
sample, a :class:`~toolmend._strategy.Strategy` may wrap it (re-ask, repair, reflect…), and the
benchmark's :meth:`~Benchmark.solve` calls it. The protocol and :data:`STRATEGIES` live in
:mod:`toolmend._strategy` (re-exported here).
"""

from __future__ import annotations

import inspect
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field

from toolmend._errors import ConfigError
from toolmend._registry import Registry
from toolmend._schema import Message, Sample
from toolmend._strategy import STRATEGIES, Generate, SolveState, Strategy
from toolmend.benchmarks._replies import reply_text
from toolmend.formats._calls import write_calls
from toolmend.formats._result import CallFormat
from toolmend.models._base import Completion
from toolmend.models._predictions import Prediction

__all__ = [
    "BENCHMARKS",
    "STRATEGIES",
    "SUITES",
    "Benchmark",
    "Generate",
    "Mode",
    "Prediction",
    "SampleScore",
    "SolveState",
    "Strategy",
    "Suite",
    "as_mode",
    "make_benchmark",
]

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
    """Base class of the benchmarks registered in :data:`BENCHMARKS`.

    Constructor keywords are the benchmark's options; every benchmark whose prompt can be replaced
    takes it as ``prompt_template`` (see :mod:`toolmend.benchmarks._templates`).
    """

    name: str = ""
    load_options: tuple[str, ...] | None = None
    """The option keys :meth:`load` takes; ``None``: not declared, so not checked."""
    default_data: str = ""
    """Path of the default data relative to the shared folder (``data/nestools``)."""
    reply_format: ClassVar[CallFormat] = "json"
    """The call format replies are scored in; native tool calls are written back in it."""
    headline: ClassVar[str | None] = None
    """The per-sample score the progress bar shows and reports rank samples by."""
    summary_metric: ClassVar[str | None] = None
    """The aggregate metric that answers "how good is it" (CriticTool: ``overall``), which a
    report puts first and marks; ``None``: the :attr:`headline` score's mean."""
    metric_help: ClassVar[Mapping[str, str]] = {}
    """One-line definitions of the aggregate metrics, by name or shell-style pattern
    (``*/detect``); a report shows them beside each metric and in its glossary."""
    detail_keys: ClassVar[tuple[str, ...]] = ()
    count_keys: ClassVar[tuple[str, ...]] = ()
    """Names of aggregate metrics that count things rather than rate them, as shell-style
    patterns (``fault/*/injected``); displays show them as whole numbers. Names every runner knows
    as counts (``n_*``, ``*tokens*``, ``samples`` …) need no declaration."""
    percent_scale: ClassVar[bool] = False
    gold_ceiling: ClassVar[str | None] = None
    """Why the official scorer in compat mode gives the gold replies less than 100% (shown when
    the ``scripted`` oracle runs); ``None`` where gold scores full marks."""
    """Whether :meth:`aggregate` already returns percentages (0–100), as CriticTool's official
    scorer does; displays then show them as they are instead of scaling fractions."""
    """Keys of :attr:`SampleScore.details` that reports break results down by."""

    @abstractmethod
    def load(self, path: str | Path | None = None, **options: Any) -> list[Sample]:
        """Read the benchmark's data files; a :class:`~toolmend.DatasetError` names what is wrong."""

    def check_load_options(self, options: Mapping[str, Any]) -> None:
        """Raise :class:`~toolmend.ConfigError` for option keys :attr:`load_options` does not list."""
        known = self.load_options
        unknown = sorted(set(options) - set(known)) if known is not None else []
        if unknown:
            takes = ", ".join(known or ()) or "none"
            raise ConfigError(
                f"unknown --option key(s) for {self.name}: {', '.join(unknown)}; it takes: {takes}"
            )

    def load_run(
        self, path: Path, options: dict[str, Any], *, limit: int | None = None, seed: int = 0
    ) -> list[Sample]:
        """The samples a run uses: :meth:`load` with ``options``, cut to the first ``limit``.

        A benchmark whose samples depend on the run's seed or on the loaded set as a whole
        (NesTools' distractor pool) overrides this."""
        samples = self.load(path, **options)
        return samples[:limit] if limit is not None else samples

    def for_native_tools(self, samples: list[Sample]) -> list[Sample]:
        """``samples`` as native function calling sees them: ``sample.tools`` is what goes out as
        the API's tool list (default: unchanged; NesTools adds its distractors)."""
        return samples

    @abstractmethod
    def prompt(self, sample: Sample) -> list[Message]:
        """The messages a model is sent for ``sample``."""

    async def solve(self, sample: Sample, generate: Generate) -> Prediction:
        """The benchmark's protocol for one sample; by default one request for :meth:`prompt`."""
        return await generate(self.prompt(sample))

    def gold(self, sample: Sample) -> Prediction:
        """The reply a perfect model gives ``sample`` (a list for multi-reply samples)."""
        if sample.target:
            return write_calls(sample.target, self.reply_format)
        raise ConfigError(f"no gold reply is known for benchmark {self.name!r}; use replay/<file> instead")

    def gold_index(self, sample: Sample, messages: list[Message]) -> int | None:
        """Which item of a multi-reply :meth:`gold` answers ``messages`` (the gold oracle asks);
        ``None``: count the replies the environment answered, the runner's default."""
        return None

    def turn_feedback(self, sample: Sample) -> Message | None:
        """The message the benchmark's own loop sends back between the replies of a multi-turn
        sample (reports show it between the turns); ``None`` when it sends none."""
        return None

    def reply_text(self, sample: Sample, completion: Completion) -> str:
        """``completion`` as reply text: native tool calls written in :attr:`reply_format`."""
        return reply_text(completion, self.reply_format)

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


def make_benchmark(name: str, **options: Any) -> Benchmark:
    """An instance of the benchmark registered as ``name``, with constructor ``options``; an
    option the benchmark does not take is a :class:`~toolmend.ConfigError` that names it."""
    cls = BENCHMARKS.get(name)
    check_constructor(name, cls, options)
    return cls(**options)


def check_constructor(name: str, cls: type[Benchmark], options: dict[str, Any]) -> None:
    """A :class:`~toolmend.ConfigError` when ``cls`` does not take one of ``options``."""
    params = inspect.signature(cls).parameters
    takes_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
    unknown = [k for k in options if k not in params and not takes_any]
    if unknown:
        what = {"prompt_template": "a prompt template (its prompts come from its data)",
                "samples": "several generations per sample (--samples)"}  # fmt: skip
        raise ConfigError(f"{name} does not take {what.get(unknown[0], repr(unknown[0]))}")


BENCHMARKS: Registry[type[Benchmark]] = Registry("benchmark", group="toolmend.benchmarks")
"""Benchmark classes by name; built-ins are registered lazily in :mod:`toolmend.benchmarks`."""


@dataclass(frozen=True)
class Suite:
    """A benchmark name backed by generated data (``toolmend bench critic``)."""

    benchmark: str
    """The registered benchmark that loads and scores the built data."""
    build: Callable[[int, Path], Path]
    """``(seed, out_dir) -> data path``; called once per seed (its output folder is reused)."""
    default_model: str | None = None
    load_options: dict[str, Any] = field(default_factory=dict)


SUITES: Registry[Suite] = Registry("benchmark suite", group="toolmend.suites")
"""Suites by the name ``toolmend bench`` accepts; checked before :data:`BENCHMARKS`."""

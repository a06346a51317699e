"""Run a model on a benchmark end to end: the Python API behind ``toolmend bench``.

Load → solve (generate, through any strategies) → score → write the run directory (see
:mod:`toolmend.runs`)::

    from toolmend._bench import run_bench

    result = run_bench("bfcl", "openai/Qwen/Qwen3-8B", base_url="http://localhost:8000/v1",
                       categories=["simple_python"], limit=50, max_connections=32)
    result.summary.metrics["overall_sample_weighted"], result.run_dir

Any registered benchmark or suite works (``toolmend --help`` lists them). The runner knows no
benchmark by name: each :class:`~toolmend.benchmarks.Benchmark` declares its reply format, its
headline score, its detail keys and its gold reply, and solves a sample with the ``generate``
the runner gives it (CriticTool's interactive retry loop and Repair@N are their benchmarks' own
:meth:`~toolmend.benchmarks.Benchmark.solve`). ``strategy="a+b"`` wraps that ``generate`` with
the strategies registered as ``a`` and ``b`` (:data:`~toolmend.benchmarks.STRATEGIES`).

The model ``"scripted"`` is an oracle that answers every sample with the benchmark's gold reply,
to check a pipeline end to end (100%, except where the official compat scorer cannot give the
gold replies full marks: a benchmark says so in :attr:`~toolmend.benchmarks.Benchmark.gold_ceiling`); ``"replay/<file>"`` replays saved outputs.

Everything that decides a run's results is one typed :class:`BenchSettings`, stored in the run's
manifest; ``resume=<run dir>`` reads it back (a setting given again with another value is refused).
Infrastructure failures (the backend gave up after its retries) are recorded per sample and kept
out of the metrics; rerun with ``resume=<run dir>, retry_errors=True`` to answer them. The run's
report is written by :func:`toolmend.reports.write_report` (the CLI does it after every run).
"""

from __future__ import annotations

import asyncio
import bisect
import contextvars
import json
import logging
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from toolmend._errors import ConfigError, DatasetError, ModelError, first_error
from toolmend._http import ModelFailure
from toolmend._schema import Message, Sample
from toolmend._shared import shared_dir
from toolmend.benchmarks import (
    SUITES,
    Benchmark,
    Generate,
    Mode,
    Prediction,
    SampleScore,
    SolveState,
    Strategy,
    Suite,
    as_mode,
)
from toolmend.benchmarks._replies import epoch_seed
from toolmend.benchmarks._templates import with_prompt_template
from toolmend.formats._calls import parse_calls
from toolmend.models import GenerateConfig, Model, ScriptedModel, get_model
from toolmend.models._cache import default_cache_dir
from toolmend.runs import DatasetInfo, Manifest, RunDir, RunSummary, SampleRecord, run_samples
from toolmend.runs._progress import Progress
from toolmend.strategies._noisy import sample_tools

__all__ = [
    "SUITES",
    "BenchResult",
    "BenchSettings",
    "BenchToolMode",
    "Suite",
    "arun_bench",
    "resolve_strategies",
    "run_bench",
]

log = logging.getLogger(__name__)

BenchToolMode = Literal["prompt", "native"]
"""``prompt``: the benchmark's own prompt describes the tools and replies are text (the
benchmarks' published protocol); ``native``: tools also go out as the API's function-calling
schema and native calls are written back into the benchmark's reply format before scoring."""

SETTINGS_VERSION = 1

DATA_SEED = 0
"""The seed of data building and sample shuffles when the run sets none (``--seed`` unset): a
run without a seed still reads the same, reproducible data; only the model gets no seed."""


class BenchSettings(BaseModel):
    """Everything that decides a run's results; stored in ``manifest.json`` (``config.bench``)
    and read back on resume. Operational options (connections, cache, URLs, retries) are not here:
    they may change between a run and its resumption."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    schema_version: int = SETTINGS_VERSION
    model: str = ""
    """The model string (or a given :class:`~toolmend.models.Model`'s name)."""
    data: str | None = None
    """The data path as given (``None``: the shared data, or the suite's build for the seed)."""
    limit: int | None = Field(default=None, ge=1)
    seed: int | None = None
    """The run seed: sent with every generation (each epoch its own, derived from it) and used to
    build and shuffle the data. ``None``: no seed is sent, and data use :data:`DATA_SEED`."""
    mode: Mode = "compat"
    tool_mode: BenchToolMode = "prompt"
    samples: int = Field(default=1, ge=1)
    """Generations per sample, for benchmarks that score several (Repair@N)."""
    categories: list[str] | None = None
    temperature: float | None = None
    load_options: dict[str, Any] = Field(default_factory=dict)
    prompt_template: str | None = None
    """The template file's path (its content is in the benchmark's prompts, hence in the cache key)."""
    strategy: str = "none"
    """Strategy names joined by ``+`` (``none``: the benchmark's own protocol only)."""
    strategy_options: dict[str, Any] = Field(default_factory=dict)
    """Options of the strategies (``max_refine``, ``n``, guard policy fields), each taken by the
    strategies that know it."""

    @property
    def data_seed(self) -> int:
        """The seed of data building and sample shuffles: the run seed, or :data:`DATA_SEED`."""
        return DATA_SEED if self.seed is None else self.seed

    @classmethod
    def from_manifest(cls, run: RunDir) -> BenchSettings:
        """The settings a run was started with; a :class:`~toolmend.ConfigError` when the run was
        not written by ``toolmend bench`` or by a toolmend whose settings this one cannot read."""
        raw = run.manifest().config.get("bench")
        if not isinstance(raw, dict) or not raw:
            raise ConfigError(f"{run.path} was not written by toolmend bench; cannot resume it")
        try:
            settings = cls.model_validate(raw)
        except ValidationError as exc:
            where, msg = first_error(exc)
            raise ConfigError(f"{run.path}: cannot read its settings ({where}: {msg})") from exc
        if settings.schema_version != SETTINGS_VERSION:
            raise ConfigError(
                f"{run.path} has settings version {settings.schema_version}; this toolmend reads "
                f"version {SETTINGS_VERSION}: start a new run"
            )
        return settings


@dataclass
class BenchResult:
    """What :func:`run_bench` returns."""

    run_dir: Path
    benchmark: str
    model: str
    mode: Mode
    summary: RunSummary
    settings: BenchSettings | None = None

    @property
    def failed(self) -> int:
        """Samples that ended with an infrastructure error."""
        return self.summary.n_errors

    def retry_hint(self) -> str | None:
        """The line to print when samples failed on infrastructure, else ``None``."""
        if not self.failed:
            return None
        return (
            f"{self.failed} samples failed with infrastructure errors; "
            f"rerun with --resume {self.run_dir} --retry-errors"
        )


def resolve_strategies(
    strategy: str | Strategy | Sequence[Strategy] | None, options: Mapping[str, Any] | None = None
) -> tuple[str, list[Strategy]]:
    """``(name, strategies)``: ``"a+b"`` is resolved through
    :data:`~toolmend.benchmarks.STRATEGIES` (``a`` wraps the base generate, ``b`` wraps ``a``),
    each factory taking the ``options`` it knows (an option none takes is a
    :class:`~toolmend.ConfigError`); ``None`` and ``"none"`` are no strategy.

    >>> resolve_strategies("none")
    ('none', [])
    >>> resolve_strategies("self-refine", {"max_refine": 2})[0]
    'self-refine'
    """
    from toolmend.strategies import _base as base

    items = base.build_strategies(strategy, options)
    return base.strategy_name(items), items


def _strategy_label(settings: BenchSettings) -> str:
    """The strategy as the run's identity shows it: ``self-refine[max_refine=5]``."""
    if not settings.strategy_options:
        return settings.strategy
    opts = ",".join(f"{k}={v}" for k, v in sorted(settings.strategy_options.items()))
    return f"{settings.strategy}[{opts}]"


# The sample being solved, so that the gold oracle (a script of the messages only) can answer it.
_CURRENT: contextvars.ContextVar[tuple[Sample, list[int]]] = contextvars.ContextVar("toolmend_bench_sample")


def episode_turn(prompt: Sequence[Message], messages: Sequence[Message]) -> int:
    """Which turn of an episode ``messages`` asks for: the replies after ``prompt`` that the
    environment answered (a ``tool`` message, or the prompt's last message repeated, as CriticTool's
    retry loop does). A strategy's own exchanges (a re-ask, a review) are not turns; a turn a
    strategy answered itself (a retry) is one."""
    last = prompt[-1].content if prompt else None
    return sum(
        1
        for i in range(len(prompt), len(messages) - 1)
        if messages[i].role == "assistant"
        and (messages[i + 1].role == "tool" or messages[i + 1].content == last)
    )


def _oracle(bench: Benchmark, delay: float, max_connections: int) -> ScriptedModel:
    def answer(messages: list[Message]) -> str:
        sample, _ = _CURRENT.get()
        gold = bench.gold(sample)
        if isinstance(gold, str):
            return gold
        index = bench.gold_index(sample, messages)
        if index is None:
            index = episode_turn(bench.prompt(sample), messages)
        return gold[min(index, len(gold) - 1)]

    return ScriptedModel(answer, delay=delay, name="scripted", max_connections=max_connections)


def _jsonable(value: Any) -> Any:
    # Details and events go to samples.jsonl; anything JSON cannot hold becomes its repr.
    return json.loads(json.dumps(value, ensure_ascii=False, default=repr))


@dataclass
class _Plan:
    """What a run resolved: the benchmark object, its samples and data path, the settings."""

    bench: Benchmark
    name: str
    suite: Suite | None
    path: Path
    settings: BenchSettings


def _resolve(benchmark: str | Benchmark, settings: BenchSettings, cache_root: Path) -> _Plan:
    if isinstance(benchmark, Benchmark):
        if settings.prompt_template is not None or settings.samples > 1:
            raise ConfigError(
                "prompt_template and samples are constructor options: pass them to the benchmark"
            )
        name, suite, bench = benchmark.name, None, benchmark
    else:
        name = benchmark
        suite = SUITES.get(name) if name in SUITES else None
        options: dict[str, Any] = {"samples": settings.samples} if settings.samples > 1 else {}
        bench = with_prompt_template(suite.benchmark if suite else name, settings.prompt_template, **options)
    if settings.data is not None:
        path = Path(settings.data)
    elif suite is not None:
        seed = settings.data_seed
        path = suite.build(seed, cache_root / "suites" / name / f"seed-{seed}")
    else:
        path = shared_dir() / bench.default_data
    if not path.exists():
        raise ConfigError(f"benchmark data not found: {path} (pass --data)")
    return _Plan(bench=bench, name=name, suite=suite, path=path, settings=settings)


def _load_samples(plan: _Plan) -> list[Sample]:
    s = plan.settings
    options = {**(plan.suite.load_options if plan.suite else {}), **s.load_options}
    if s.categories:
        options["categories"] = list(s.categories)
    plan.bench.check_load_options(options)
    samples = plan.bench.load_run(plan.path, options, limit=s.limit, seed=s.data_seed)
    if not samples:
        raise DatasetError(f"no {plan.bench.name} samples found", path=plan.path)
    return plan.bench.for_native_tools(samples) if s.tool_mode == "native" else samples


def samples_of_run(benchmark: str, settings: BenchSettings, path: Path) -> tuple[Benchmark, list[Sample]]:
    """The benchmark object and the samples a run with ``settings`` reads from ``path`` (reports
    use it to show each sample's prompt, tools and gold reply)."""
    plan = _resolve(benchmark, settings.model_copy(update={"data": str(path)}), path)
    return plan.bench, _load_samples(plan)


def _check_resume(stored: BenchSettings, asked: dict[str, Any]) -> None:
    """Refuse settings given again on resume with a value other than the run's own."""
    defaults = BenchSettings()
    changed = [
        f"{key}={value!r} (the run has {getattr(stored, key)!r})"
        for key, value in asked.items()
        if value != getattr(defaults, key) and value != getattr(stored, key)
    ]
    if changed:
        raise ConfigError(
            "--resume reuses the run's own settings; these differ: "
            + "; ".join(changed)
            + ". Drop them, or start a new run"
        )


def _check_request_defaults(run: RunDir, llm: Model) -> None:
    """Refuse to resume a run with request defaults (``max_tokens``, ``temperature``, ...) other
    than those its answers were made with: the run would mix two settings."""
    recorded = run.manifest().config.get("request_defaults")
    now = llm.request_defaults()
    if recorded is None or recorded == now:
        return
    changed = [f"{k}={now.get(k)!r} (the run has {recorded.get(k)!r})"
               for k in sorted(set(recorded) | set(now)) if recorded.get(k) != now.get(k)]  # fmt: skip
    raise ConfigError(
        "--resume: the model's request defaults differ from the run's: " + "; ".join(changed)
        + ". Give the run's values with -M, or start a new run"
    )


async def arun_bench(
    benchmark: str | Benchmark,
    model: str | Model | None = None,
    *,
    data: str | Path | None = None,
    limit: int | None = None,
    max_connections: int | None = None,
    seed: int | None = None,
    mode: Mode = "compat",
    base_url: str | None = None,
    api_key_env: str | None = None,
    tool_mode: BenchToolMode = "prompt",
    cache: bool = True,
    cache_dir: str | Path | None = None,
    resume: str | Path | None = None,
    retry_errors: bool = False,
    runs_dir: str | Path = "runs",
    samples: int = 1,
    categories: Sequence[str] | None = None,
    temperature: float | None = None,
    max_retries: int | None = None,
    load_options: dict[str, Any] | None = None,
    model_options: dict[str, Any] | None = None,
    progress: bool | Progress | None = None,
    prompt_template: str | Path | None = None,
    strategy: str | Strategy | Sequence[Strategy] | None = None,
    strategy_options: dict[str, Any] | None = None,
) -> BenchResult:
    """The async form of :func:`run_bench` (same arguments)."""
    if retry_errors and resume is None:
        raise ConfigError("--retry-errors needs --resume RUN_DIR")
    if tool_mode not in ("prompt", "native"):
        raise ConfigError(f"--tool-mode must be prompt or native, got {tool_mode!r}")
    if max_connections is not None and max_connections < 1:
        raise ConfigError(f"--max-connections must be at least 1, got {max_connections}")
    if samples < 1:
        raise ConfigError(f"--samples must be at least 1, got {samples}")
    if limit is not None and limit < 1:
        raise ConfigError(f"--limit must be at least 1, got {limit}")
    if max_retries is not None and max_retries < 0:
        raise ConfigError(f"--max-retries must be at least 0, got {max_retries}")
    strategy_name, strategies = resolve_strategies(strategy, strategy_options)
    cache_root = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    asked: dict[str, Any] = {
        "data": str(data) if data is not None else None,
        "limit": limit,
        "seed": seed,
        "mode": as_mode(mode),
        "tool_mode": tool_mode,
        "samples": samples,
        "categories": list(categories) if categories else None,
        "temperature": temperature if temperature is not None or samples == 1 else 0.7,
        "load_options": dict(load_options or {}),
        "prompt_template": str(prompt_template) if prompt_template is not None else None,
        "strategy": strategy_name,
        "strategy_options": dict(strategy_options or {}),
    }
    run: RunDir | None = None
    name = benchmark.name if isinstance(benchmark, Benchmark) else benchmark
    if resume is not None:
        run = RunDir.open(resume)
        manifest = run.manifest()
        if manifest.benchmark != name:
            raise ConfigError(f"{run.path} is a {manifest.benchmark} run, not {name}")
        settings = BenchSettings.from_manifest(run)
        if isinstance(model, str):
            asked["model"] = model
        asked["temperature"] = temperature  # the 0.7 default applies to new runs only
        _check_resume(settings, asked)
        if strategy is not None and not isinstance(strategy, str):
            strategies = resolve_strategies(strategy)[1]  # objects given again: the run's own names
        else:
            strategies = resolve_strategies(settings.strategy, settings.strategy_options)[1]
        model = model if isinstance(model, Model) else settings.model
    else:
        suite = SUITES.get(name) if name in SUITES and not isinstance(benchmark, Benchmark) else None
        if model is None:
            if suite is None or suite.default_model is None:
                raise ConfigError(f"--model is required for {name}")
            model = suite.default_model
        settings = BenchSettings(model=model if isinstance(model, str) else model.name, **asked)
    plan = _resolve(benchmark, settings, cache_root)
    bench = plan.bench
    samples_list = _load_samples(plan)
    native = settings.tool_mode == "native"
    llm = _make_model(bench, model, native, cache, cache_root, max_connections, base_url, api_key_env,
                      max_retries, model_options)  # fmt: skip
    if max_connections is None:
        # The model's own default where it has a smaller one (an openai/ server on this machine).
        max_connections = min(DEFAULT_CONNECTIONS, llm.max_connections)
    if run is None:
        # Connection settings of the session that created the run (a resume may use others);
        # never the key itself, only the name of the variable it came from.
        connection = {"base_url": base_url, "api_key_env": api_key_env,
                      "max_connections": max_connections, "max_retries": max_retries}  # fmt: skip
        manifest = Manifest(
            benchmark=name,
            model=llm.name,
            config={"bench": settings.model_dump(mode="json"), "connection": connection,
                    "request_defaults": llm.request_defaults()},  # fmt: skip
            dataset=DatasetInfo.of(plan.path),
            strategy=None if settings.strategy == "none" else _strategy_label(settings),
            headline=bench.headline,
            detail_keys=list(bench.detail_keys),
            n_planned=len(samples_list),
        )
        run = RunDir.create(runs_dir, manifest)
    else:
        run = RunDir.open(run.path, dataset=plan.path)
        _check_request_defaults(run, llm)
    gen_config = GenerateConfig(temperature=settings.temperature, seed=settings.seed)
    mode_ = settings.mode
    solve = _make_solve(bench, llm, mode_, gen_config, native, strategies, _strategy_label(settings))

    def aggregate(records: list[SampleRecord]) -> dict[str, float]:
        scores = [SampleScore(id=r.id, values=r.scores, details=r.details) for r in records]
        return bench.aggregate(scores, mode_) if scores else {}

    try:
        async with llm:
            summary = await run_samples(
                samples_list,
                solve,
                run,
                max_samples=_samples_in_flight(llm, max_connections),
                retry_errors=retry_errors,
                progress=progress,
                score_key=bench.headline,
                aggregate=aggregate,
            )
    except (KeyboardInterrupt, asyncio.CancelledError):
        # Ctrl-C: every finished sample is on disk; say how to go on from there.
        print(
            f"\ninterrupted; continue with: toolmend bench --resume {run.path}", file=sys.stderr, flush=True
        )
        raise
    return BenchResult(
        run_dir=run.path, benchmark=name, model=llm.name, mode=mode_, summary=summary, settings=settings
    )


_IN_PROCESS_SAMPLES = 256
DEFAULT_CONNECTIONS = 16
"""Samples in flight when ``max_connections`` is not given (fewer when the model's own default is)."""
_INLINE_PARSE = 4096
"""Replies longer than this are scored and parsed in a worker thread, not on the event loop
(short ones stay inline: a thread hop would cost more than the work)."""


def _long(prediction: Prediction) -> bool:
    texts = [prediction] if isinstance(prediction, str) else prediction
    return sum(len(t) for t in texts if isinstance(t, str)) > _INLINE_PARSE


def _samples_in_flight(model: Model, max_connections: int) -> int:
    """Samples kept in progress: ``max_connections``, or more for a model marked ``in_process``
    (it answers without I/O, e.g. the rule-based critic), where concurrency costs nothing and a
    larger pool makes larger scoring batches (see :class:`_ScoreBatcher`)."""
    if getattr(model, "in_process", False):
        return max(1, max_connections, _IN_PROCESS_SAMPLES)
    return max(1, max_connections)


def _make_model(
    bench: Benchmark,
    model: str | Model,
    native: bool,
    cache: bool,
    cache_root: Path,
    max_connections: int | None,
    base_url: str | None,
    api_key_env: str | None,
    max_retries: int | None,
    model_options: dict[str, Any] | None,
) -> Model:
    if isinstance(model, Model):
        return model
    options = dict(model_options or {})
    if model == "scripted":
        delay = float(options.pop("delay", 0.0))
        if options:
            raise ConfigError(
                f"unknown --model-option key(s) for scripted: {', '.join(sorted(options))}; it takes: delay"
            )
        return _oracle(bench, delay, max_connections or DEFAULT_CONNECTIONS)
    if model.startswith("noisy/"):
        from toolmend.strategies._noisy import NOISY_OPTIONS, NoisyModel

        noisy = {k: options.pop(k) for k in NOISY_OPTIONS if k in options}
        inner = _make_model(bench, model.removeprefix("noisy/"), native, cache, cache_root, max_connections,
                            base_url, api_key_env, max_retries, options)  # fmt: skip
        return NoisyModel(inner, **noisy)
    if model.startswith("openai/"):
        if max_connections is not None:
            options.setdefault("max_connections", max_connections)
        options.setdefault("tool_mode", "native" if native else "prompt")
        if base_url is not None:
            options.setdefault("base_url", base_url)
        if api_key_env is not None:
            options.setdefault("api_key_env", api_key_env)
    return get_model(model, cache=cache_root if cache else False, max_retries=max_retries, **options)


class _ScoreBatcher:
    """Scores samples in groups, so that a benchmark's :meth:`~Benchmark.prepare` can batch work.

    A finished sample waits until every sample in progress has its prediction (a fast local
    model: the whole pool at once) or ``max_wait`` seconds have passed since the first one queued
    (a slow remote model: scoring never holds workers back for long). Scores are the same as
    scoring one by one; only e.g. the number of embedding-model calls changes.
    """

    def __init__(self, bench: Benchmark, mode: Mode, max_wait: float = 0.05) -> None:
        self.bench = bench
        self.mode = mode
        self.max_wait = max_wait
        self.active = 0
        self._pending: list[tuple[Sample, Prediction, asyncio.Future[SampleScore]]] = []
        self._check_scheduled = False
        self._timer: asyncio.TimerHandle | None = None

    def enter(self) -> None:
        self.active += 1

    def leave(self) -> None:
        self.active -= 1
        self._schedule_check()

    async def score(self, sample: Sample, prediction: Prediction) -> SampleScore:
        future: asyncio.Future[SampleScore] = asyncio.get_running_loop().create_future()
        self._pending.append((sample, prediction, future))
        self._schedule_check()
        return await future

    def _schedule_check(self) -> None:
        # Checked on the next loop turn: a worker that just finished a sample starts its next one
        # in the same turn, so the count of samples in progress is settled by then.
        if self._pending and not self._check_scheduled:
            self._check_scheduled = True
            asyncio.get_running_loop().call_soon(self._check)

    def _check(self) -> None:
        self._check_scheduled = False
        if not self._pending:
            return
        if len(self._pending) >= self.active:
            self._flush()
        elif self._timer is None:
            self._timer = asyncio.get_running_loop().call_later(self.max_wait, self._flush)

    def _flush(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        batch, self._pending = self._pending, []
        if not batch:
            return
        try:
            self.bench.prepare([s for s, _, _ in batch], [p for _, p, _ in batch])
        except Exception as exc:  # a failing prepare fails every sample of the batch alike
            for _, _, future in batch:
                if not future.done():
                    future.set_exception(exc)
            return
        for sample, prediction, future in batch:
            if future.done():  # the worker was cancelled
                continue
            try:
                future.set_result(self.bench.score(sample, prediction, self.mode))
            except Exception as exc:
                future.set_exception(exc)


def _batches_scoring(bench: Benchmark) -> bool:
    """Whether ``bench`` overrides :meth:`Benchmark.prepare` (else samples are scored at once)."""
    return getattr(type(bench), "prepare", None) is not Benchmark.prepare


def _make_solve(
    bench: Benchmark,
    model: Model,
    mode: Mode,
    config: GenerateConfig,
    native: bool,
    strategies: Sequence[Strategy],
    strategy_name: str,
) -> Callable[[Sample], Any]:
    batcher = _ScoreBatcher(bench, mode) if _batches_scoring(bench) else None
    # The strategy is part of the answer's identity: a strategy may ask the same messages again.
    scope = None if strategy_name == "none" else f"strategy={strategy_name}"

    async def solve(sample: Sample) -> SampleRecord:
        if batcher is None:
            return await _solve(sample)
        batcher.enter()
        try:
            return await _solve(sample)
        finally:
            batcher.leave()

    async def _solve(sample: Sample) -> SampleRecord:
        record = SampleRecord(id=sample.id)
        _CURRENT.set((sample, [0]))
        sample_tools.set(list(sample.tools))  # what noisy/ corrupts against in prompt mode
        tools = sample.tools if native else None
        turn = 0

        failures: list[ModelFailure] = []
        # Generations are recorded in the order they were asked for (epoch 0 first), whatever
        # order their answers come back in: each takes its place among those already recorded.
        asked = [0]
        recorded: list[int] = []

        def place(order: int) -> int:
            at = bisect.bisect(recorded, order)
            recorded.insert(at, order)
            return at

        async def generate(messages: list[Message], *, epoch: int | None = None) -> str:
            nonlocal turn
            order, asked[0] = asked[0], asked[0] + 1
            # Each of several generations of one prompt (an explicit epoch, e.g. Repair@N) gets its
            # own seed, so they are independent samples; turns of one episode keep the run seed.
            seed = config.seed if epoch is None else epoch_seed(config.seed, epoch)
            if epoch is None:
                # Turns of one episode: the replay backend reads its k-th saved output.
                epoch, turn = turn, turn + 1
            conf = config if seed == config.seed else config.model_copy(update={"seed": seed})
            try:
                out = await model.generate(
                    messages, tools=tools, config=conf, epoch=epoch, sample_id=sample.id, cache_scope=scope
                )
            except ModelFailure as exc:
                # The server failed this request identically on every attempt: the model's answer
                # caused it, so the generation counts as a failed one instead of being excluded.
                failures.append(exc)
                record.add_failure(exc, seed=seed, at=place(order))
                return ""
            # Native calls (malformed ones included) are kept as the benchmark read them, so a
            # report never shows an empty reply and shows the calls that were scored.
            reply = bench.reply_text(sample, out)
            record.add_completion(out, output=reply, seed=seed, at=place(order))
            return reply

        state = SolveState(sample=sample, benchmark=bench)
        wrapped: Generate = generate
        for strategy in strategies:
            wrapped = strategy.wrap(wrapped, state)
        try:
            prediction = await bench.solve(sample, wrapped)
        except ModelError as exc:
            return record.fail(exc)
        if batcher is not None:
            score = await batcher.score(sample, prediction)
        elif _long(prediction):
            # Off the event loop: scoring a long degenerate reply must not stall the requests.
            score = await asyncio.to_thread(bench.score, sample, prediction, mode)
        else:
            score = bench.score(sample, prediction, mode)
        record.scores = dict(score.values)
        record.details = _jsonable(score.details)
        if failures:
            record.details["model_failures"] = [str(f) for f in failures]
            if len(failures) == len(record.outputs):
                # Nothing the model said was usable: an empty reply must not score as an abstention.
                record.scores = {k: (None if v is None else 0.0) for k, v in record.scores.items()}
                record.details["outcome"] = "model_failure"
        record.events = _jsonable(state.events)
        final = prediction if isinstance(prediction, str) else (prediction[-1] if prediction else "")
        parsed = await asyncio.to_thread(parse_calls, final) if _long(final) else parse_calls(final)
        record.calls, record.findings = list(parsed.calls), list(parsed.findings)
        return record

    return solve


def run_bench(
    benchmark: str | Benchmark,
    model: str | Model | None = None,
    *,
    data: str | Path | None = None,
    limit: int | None = None,
    max_connections: int | None = None,
    seed: int | None = None,
    mode: Mode = "compat",
    base_url: str | None = None,
    api_key_env: str | None = None,
    tool_mode: BenchToolMode = "prompt",
    cache: bool = True,
    cache_dir: str | Path | None = None,
    resume: str | Path | None = None,
    retry_errors: bool = False,
    runs_dir: str | Path = "runs",
    samples: int = 1,
    categories: Sequence[str] | None = None,
    temperature: float | None = None,
    max_retries: int | None = None,
    load_options: dict[str, Any] | None = None,
    model_options: dict[str, Any] | None = None,
    progress: bool | Progress | None = None,
    prompt_template: str | Path | None = None,
    strategy: str | Strategy | Sequence[Strategy] | None = None,
    strategy_options: dict[str, Any] | None = None,
) -> BenchResult:
    """Run ``model`` on ``benchmark`` into a new run directory under ``runs_dir`` (or resume one).

    ``benchmark`` is a registered benchmark or suite (or a :class:`~toolmend.benchmarks.Benchmark`
    object, e.g. with a custom similarity); ``model`` a model string, a
    :class:`~toolmend.models.Model`, or ``None`` for a suite's default model. ``data`` (default:
    the shared data or the suite's build for ``seed``), ``limit`` (the first N samples),
    ``max_connections`` (``None``: 16, or the model's smaller default, 4 for an ``openai/`` server
    on this machine), ``seed`` (sent with every generation, each epoch its own derived seed;
    ``None``, the default: no seed is sent and the data use ``DATA_SEED``), ``mode``
    (``compat``/``improved``), ``base_url``,
    ``api_key_env``, ``tool_mode`` (``prompt``/``native``), ``cache``, ``cache_dir``, ``resume`` (a
    run directory: its :class:`BenchSettings` are reused), ``retry_errors`` (with ``resume``),
    ``runs_dir``, ``samples`` (generations per sample, for benchmarks that take several; the
    temperature is then 0.7 unless given), ``categories`` (a load option: BFCL's),
    ``temperature``, ``max_retries``, ``load_options``, ``model_options`` (backend keywords, e.g.
    ``{"delay": 0.1}`` for ``scripted``), ``progress``, ``prompt_template`` (a file; see
    :mod:`toolmend.benchmarks._templates`), ``strategy`` (``"a+b"``, strategy objects, or ``None``),
    ``strategy_options`` (e.g. ``{"max_refine": 5}``; part of the run's identity).

    >>> import tempfile
    >>> result = run_bench("bfcl", "scripted", categories=["simple_python"], limit=3,
    ...                    runs_dir=tempfile.mkdtemp(), progress=False)
    >>> result.summary.metrics["overall_sample_weighted"]
    1.0
    """
    return asyncio.run(
        arun_bench(
            benchmark,
            model,
            data=data,
            limit=limit,
            max_connections=max_connections,
            seed=seed,
            mode=mode,
            base_url=base_url,
            api_key_env=api_key_env,
            tool_mode=tool_mode,
            cache=cache,
            cache_dir=cache_dir,
            resume=resume,
            retry_errors=retry_errors,
            runs_dir=runs_dir,
            samples=samples,
            categories=categories,
            temperature=temperature,
            max_retries=max_retries,
            load_options=load_options,
            model_options=model_options,
            progress=progress,
            prompt_template=prompt_template,
            strategy=strategy,
            strategy_options=strategy_options,
        )  # fmt: skip
    )

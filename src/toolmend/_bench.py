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
import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from toolmend._errors import (
    ConfigError,
    DatasetError,
    ModelError,
    OptionError,
    ToolmendError,
    first_error,
)
from toolmend._http import ModelFailure
from toolmend._jsontext import dumps, read_json
from toolmend._registry import unknown_name
from toolmend._schema import Message, Sample
from toolmend._shared import shared_dir, source_fingerprint
from toolmend.benchmarks import (
    BENCHMARKS,
    STRATEGIES,
    SUITES,
    Benchmark,
    Generate,
    Mode,
    Prediction,
    SampleScore,
    SolveState,
    Strategy,
    Suite,
)
from toolmend.benchmarks._replies import epoch_seed
from toolmend.benchmarks._templates import with_prompt_template
from toolmend.formats._calls import parse_calls
from toolmend.models import GenerateConfig, Model, ScriptedModel, get_model
from toolmend.models._cache import default_cache_dir
from toolmend.runs import DatasetInfo, Manifest, RunDir, RunSummary, SampleRecord, run_samples
from toolmend.runs._progress import STATUS_LOGGER
from toolmend.runs._redact import REDACTED
from toolmend.strategies._noisy import sample_tools

__all__ = [
    "SUITES",
    "BenchInterrupted",
    "BenchResult",
    "BenchSettings",
    "BenchToolMode",
    "RunOptions",
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
    model_options: dict[str, Any] = Field(default_factory=dict)
    """Backend options (``-M``: ``noise`` for ``noisy/``, ``delay`` for ``scripted``, request
    options); the manifest keeps them with secrets redacted, and a resume is given the secrets again."""

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


class RunOptions(BaseModel):
    """How a run is carried out, not what it measures: these may change between a run and its
    resumption (a resume that gives none reuses the connection of the session that started it)."""

    model_config = ConfigDict(extra="forbid", frozen=True, arbitrary_types_allowed=True)

    max_connections: int | None = None
    """Requests (and samples) in flight (``None``: 16, or the model's smaller default, 4 for an
    ``openai/`` server on this machine)."""
    base_url: str | list[str] | None = None
    """The server's URL, or the URLs of several replicas of the model (kept sorted: their order
    is not part of the run)."""
    api_key_env: str | None = None
    """The environment variable holding the API key (never the key)."""
    max_retries: int | None = None
    """Transport retries per request (``None``: the backend's default)."""
    cache: bool = True
    cache_dir: Path | None = None
    resume: Path | None = None
    """A run directory to continue: its :class:`BenchSettings` are reused."""
    retry_errors: bool = False
    """With ``resume``: answer again the samples that failed on infrastructure."""
    runs_dir: Path = Path("runs")
    progress: Any = None
    """``bool | Progress | None``. ``True``: a progress display on stderr; a :class:`~toolmend.runs.Progress`: that one;
    ``None``/``False``: nothing (the library prints nothing of its own)."""


CONNECTION = ("base_url", "api_key_env", "max_connections", "max_retries")
"""The run options stored in the manifest (``config.connection``) and reused by a resume that
gives none of its own."""


@dataclass
class BenchResult:
    """What :func:`run_bench` returns."""

    run_dir: Path
    benchmark: str
    model: str
    mode: Mode
    summary: RunSummary
    settings: BenchSettings | None = None
    in_process: bool = False
    """The model answered in this process (the checklist critic, the fakes, a local engine; see
    :attr:`~toolmend.models.Model.http`): no HTTP request."""

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


def _resolve(
    benchmark: str | Benchmark,
    settings: BenchSettings,
    cache_root: Path,
    before_data: Callable[[Benchmark], None] | None = None,
) -> _Plan:
    """The benchmark object, its suite and its data; ``before_data`` sees the benchmark before a
    suite is built (the longest step on an empty cache), so cheap checks fail first."""
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
    if before_data is not None:
        before_data(bench)
    if settings.data is not None:
        path = Path(settings.data)
    elif suite is not None:
        path = _suite_data(
            suite, name, settings.data_seed, cache_root / "suites" / name / f"seed-{settings.data_seed}"
        )
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


_SUITE_STAMP = ".built.json"
"""Suffix of the stamp beside a suite's folder (``seed-0.built.json``): outside the data, so
that the data's fingerprint, which a resume checks, stays that of the data alone."""


def _suite_data(suite: Suite, name: str, seed: int, folder: Path) -> Path:
    """The data of ``suite`` for ``seed`` in ``folder``: built once, then reused for as long as
    the code that built it is unchanged. A stamp written after a complete build names the suite,
    the seed, the data's place and :func:`~toolmend._shared.source_fingerprint` of toolmend's
    source; any difference (or no stamp) rebuilds. A suite built by code outside toolmend (an
    entry point) is rebuilt every time, since its code is not fingerprinted."""
    stamp = folder.with_name(folder.name + _SUITE_STAMP)
    ours = getattr(suite.build, "__module__", "").startswith("toolmend.")
    want = {"suite": name, "seed": seed, "code": source_fingerprint()} if ours else None
    if want is not None and stamp.is_file():
        try:
            have = read_json(stamp)
            path = folder / str(have.pop("path"))
            if have == want and path.exists():
                return path
        except (ToolmendError, AttributeError, KeyError, TypeError):
            pass  # an unreadable stamp: rebuild
    stamp.unlink(missing_ok=True)  # a build stopped halfway must not pass for the old one
    # The first step of a run on a suite, and the longest on an empty cache: say so at once.
    logging.getLogger(STATUS_LOGGER).info("preparing: the %s suite (seed %d) in %s", name, seed, folder)
    path = suite.build(seed, folder)
    if want is not None and path.resolve().is_relative_to(folder.resolve()):
        relative = path.resolve().relative_to(folder.resolve()).as_posix()
        stamp.parent.mkdir(parents=True, exist_ok=True)
        stamp.write_text(dumps({**want, "path": relative}, indent=1), encoding="utf-8")
    return path


def samples_of_run(benchmark: str, settings: BenchSettings, path: Path) -> tuple[Benchmark, list[Sample]]:
    """The benchmark object and the samples a run with ``settings`` reads from ``path`` (reports
    use it to show each sample's prompt, tools and gold reply)."""
    plan = _resolve(benchmark, settings.model_copy(update={"data": str(path)}), path)
    return plan.bench, _load_samples(plan)


class BenchInterrupted(KeyboardInterrupt):
    """Ctrl-C stopped :func:`run_bench`; every finished sample is on disk.

    It is a :class:`KeyboardInterrupt`, so code that stops on one still does; :attr:`run_dir`
    is the run and :meth:`command` the command that resumes it with its own settings."""

    def __init__(self, run_dir: Path, benchmark: str) -> None:
        super().__init__(f"interrupted; continue with: {self.command(run_dir)}")
        self.run_dir = run_dir
        self.benchmark = benchmark

    @staticmethod
    def command(run_dir: Path) -> str:
        """``toolmend bench --resume RUN_DIR``: the benchmark and settings come from its manifest."""
        return f"toolmend bench --resume {run_dir}"


def _not_below(values: Mapping[str, Any], name: str, least: int) -> None:
    value = values.get(name)
    if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < least):
        raise OptionError(f"{{}} must be at least {least}", name, detail=f"got {value!r}")


def _checked(values: dict[str, Any]) -> dict[str, Any]:
    """``values`` (settings fields) in their stored form, each bad one an :class:`OptionError`."""
    out = dict(values)
    for name in ("data", "prompt_template"):
        if out.get(name) is not None:
            out[name] = str(out[name])
    if out.get("mode") is not None and out["mode"] not in ("compat", "improved"):
        raise OptionError("{} must be compat or improved", "mode", detail=f"got {out['mode']!r}")
    if out.get("tool_mode") is not None and out["tool_mode"] not in ("prompt", "native"):
        raise OptionError("{} must be prompt or native", "tool_mode", detail=f"got {out['tool_mode']!r}")
    for name in ("limit", "samples"):
        _not_below(out, name, 1)
    if "categories" in out:
        categories = out["categories"]
        out["categories"] = [str(c) for c in categories] if categories else None
    for name in ("load_options", "strategy_options", "model_options"):
        if name in out:
            if out[name] is not None and not isinstance(out[name], Mapping):
                raise OptionError(
                    "{} must be a mapping of names to values", name, detail=f"got {out[name]!r}"
                )
            out[name] = dict(out[name] or {})
    if "strategy" in out and out["strategy"] is None:
        out["strategy"] = "none"
    return out


def _unknown_option(key: str) -> ConfigError:
    known = sorted({*BenchSettings.model_fields, *RunOptions.model_fields} - {"schema_version"})
    return unknown_name("run_bench option", key, known)


@dataclass
class _Request:
    """What a call asked for: the settings it gave (by name), how to run, strategy objects."""

    given: dict[str, Any]
    run: RunOptions
    strategy_objects: list[Strategy] | None


def _request(model: str | Model | None, settings: BenchSettings | None, options: dict[str, Any]) -> _Request:
    given: dict[str, Any] = {}
    if settings is not None:
        if not isinstance(settings, BenchSettings):
            raise OptionError(
                "{} must be a BenchSettings", "settings", detail=f"got {type(settings).__name__}"
            )
        given.update({k: getattr(settings, k) for k in settings.model_fields_set if k != "schema_version"})
    run: dict[str, Any] = {}
    objects: list[Strategy] | None = None
    for key, value in options.items():
        if key == "strategy" and value is not None and not isinstance(value, str):
            objects = [value] if not isinstance(value, Sequence) else list(value)
            given["strategy"] = resolve_strategies(objects)[0]
        elif key in BenchSettings.model_fields and key != "schema_version":
            given[key] = value
        elif key in RunOptions.model_fields:
            run[key] = value
        else:
            raise _unknown_option(key)
    if isinstance(model, str):
        given["model"] = model
    if run.get("max_connections") is not None:
        _not_below(run, "max_connections", 1)
    _not_below(run, "max_retries", 0)
    if run.get("retry_errors") and run.get("resume") is None:
        raise OptionError("{} needs {}", "retry_errors", "resume")
    try:
        opts = RunOptions.model_validate(run)
    except ValidationError as exc:
        where, msg = first_error(exc)
        raise OptionError(
            "{} " + msg[:1].lower() + msg[1:], where or "options", detail=f"got {run.get(where)!r}"
        ) from exc
    return _Request(given=_checked(given), run=opts, strategy_objects=objects)


def _check_resume(
    stored: BenchSettings, asked: dict[str, Any], implied: Mapping[str, Any] | None = None
) -> None:
    """Refuse settings given again on resume with a value other than the run's own (a redacted
    model option is a secret given again: it is the caller's to give). ``implied``: the model
    options the run's backend used without being given them (its recorded request defaults)."""
    defaults = BenchSettings()
    implied = implied or {}
    changed: list[tuple[str, str]] = []
    for key, value in asked.items():
        have = getattr(stored, key)
        if key == "model_options":
            for opt, v in value.items():
                known = have if opt in have else implied
                if opt not in known:
                    changed.append((key, f"{opt}={_text(v)} (the run has none)"))
                elif known[opt] != REDACTED and known[opt] != v:
                    changed.append((key, f"{opt}={_text(v)} (the run has {_text(known[opt])})"))
        elif value != getattr(defaults, key) and value != have:
            changed.append((key, f"{value!r} (the run has {have!r})"))
    # The texts quote values; braces in them are not placeholders.
    changed = [(key, text.replace("{", "{{").replace("}", "}}")) for key, text in changed]
    if changed:
        raise OptionError(
            "{} reuses the run's own settings; these differ: "
            + "; ".join(f"{{}}{'=' if key != 'model_options' else ' '}{text}" for key, text in changed)
            + ". Drop them, or start a new run",
            "resume",
            *(key for key, _ in changed),
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
        "--resume: the model's request defaults differ from the run's: "
        + "; ".join(changed)
        + ". Give the run's values with -M, or start a new run"
    )


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _resumed_model_options(stored: dict[str, Any], given: dict[str, Any]) -> dict[str, Any]:
    """The run's model options, with the secrets given again (a redacted one not given is dropped:
    the backend then reads it from where it would by default, e.g. its environment variable)."""
    out = {k: v for k, v in stored.items() if v != REDACTED}
    out.update({k: v for k, v in given.items() if stored.get(k) == REDACTED})
    return out


def _known_benchmark(name: str) -> None:
    """Fail on a name that is no benchmark or suite, suggesting the closest of all of them."""
    if name in SUITES or name in BENCHMARKS:
        return
    names = sorted({*BENCHMARKS.names(), *SUITES.names()})
    raise unknown_name("benchmark", name, names)


async def arun_bench(
    benchmark: str | Benchmark | None,
    model: str | Model | None = None,
    settings: BenchSettings | None = None,
    **options: Any,
) -> BenchResult:
    """The async form of :func:`run_bench` (same arguments); cancelling it stops the run as
    Ctrl-C does (the task ends with :class:`asyncio.CancelledError`)."""
    return await _arun(benchmark, model, settings, options, None)


async def _arun(
    benchmark: str | Benchmark | None,
    model: str | Model | None,
    settings: BenchSettings | None,
    options: dict[str, Any],
    on_start: Callable[[Path, str], None] | None,
) -> BenchResult:
    request = _request(model, settings, options)
    given, opts = request.given, request.run
    cache_root = Path(opts.cache_dir) if opts.cache_dir is not None else default_cache_dir()
    run: RunDir | None = None
    if opts.resume is not None:
        run = RunDir.open(opts.resume)
        manifest = run.manifest()
        if benchmark is None:
            benchmark = manifest.benchmark
        name = benchmark.name if isinstance(benchmark, Benchmark) else benchmark
        if manifest.benchmark != name:
            raise ConfigError(f"{run.path} is a {manifest.benchmark} run, not {name}")
        stored = BenchSettings.from_manifest(run)
        implied = manifest.config.get("request_defaults")
        _check_resume(
            stored,
            {k: v for k, v in given.items() if k != "temperature" or v is not None},
            implied if isinstance(implied, dict) else None,
        )
        resolved = stored.model_copy(
            update={
                "model_options": _resumed_model_options(stored.model_options, given.get("model_options", {}))
            }
        )
        connection = manifest.config.get("connection") or {}
        reused = {
            k: connection[k]
            for k in CONNECTION
            if k not in options and connection.get(k) is not None and REDACTED not in str(connection[k])
        }
        if reused:
            opts = opts.model_copy(update=reused)
        if request.strategy_objects is not None:
            strategies = request.strategy_objects  # objects given again: the run's own names
        else:
            strategies = resolve_strategies(resolved.strategy, resolved.strategy_options)[1]
        model = model if isinstance(model, Model) else resolved.model
    else:
        if benchmark is None:
            raise OptionError("{} is required (or {} a run)", "benchmark", "resume")
        name = benchmark.name if isinstance(benchmark, Benchmark) else benchmark
        suite = None
        if not isinstance(benchmark, Benchmark):
            _known_benchmark(name)
            suite = SUITES.get(name) if name in SUITES else None
        if model is None:
            model = given.get("model")
        if model is None:
            if suite is None or suite.default_model is None:
                raise OptionError(f"{{}} is required for {name}", "model")
            model = suite.default_model
        values = {**given, "model": model if isinstance(model, str) else model.name}
        if values.get("temperature") is None and values.get("samples", 1) > 1:
            values["temperature"] = 0.7  # several generations of one prompt must differ
        if request.strategy_objects is not None:
            strategies = request.strategy_objects
        else:
            values["strategy"], strategies = _strategies(
                values.get("strategy"), values.get("strategy_options")
            )
        resolved = BenchSettings.model_validate(values)
    return await _execute(benchmark, model, resolved, opts, strategies, cache_root, run, on_start)


def _strategies(spec: str | None, options: dict[str, Any] | None) -> tuple[str, list[Strategy]]:
    if isinstance(spec, str) and options:
        # Each option checked against the type its strategy's factory declares, so that
        # `-S max_refine=abc` names the option and the type instead of failing inside.
        from toolmend.strategies._base import _factory

        options = dict(options)
        for name in (n.strip() for n in spec.split("+")):
            if name in STRATEGIES:
                options.update(_typed(_factory(name), options, name, "strategy_options"))
    try:
        return resolve_strategies(spec, options)
    except ToolmendError:
        raise
    except (TypeError, ValueError) as exc:
        # A value of the wrong type reached a strategy's constructor.
        raise OptionError("{} do not fit " + str(spec), "strategy_options", detail=str(exc)) from exc


async def _execute(
    benchmark: str | Benchmark,
    model: str | Model,
    settings: BenchSettings,
    opts: RunOptions,
    strategies: list[Strategy],
    cache_root: Path,
    run: RunDir | None,
    on_start: Callable[[Path, str], None] | None,
) -> BenchResult:
    name = benchmark.name if isinstance(benchmark, Benchmark) else benchmark
    native = settings.tool_mode == "native"
    made: list[Model] = []

    def make_model(bench: Benchmark) -> None:
        # Before the suite and the samples: a model option of the wrong type is the whole output.
        bench.check_load_options(settings.load_options)
        made.append(_make_model(bench, model, native, opts, cache_root, settings.model_options))

    plan = _resolve(benchmark, settings, cache_root, make_model)
    bench = plan.bench
    llm = made[0]
    samples_list = _load_samples(plan)
    if run is None:
        # Connection settings of the session that created the run (a resume reuses those it is
        # not given); never the key itself, only the name of the variable it came from.
        connection = {k: getattr(opts, k) for k in CONNECTION}
        if isinstance(connection["base_url"], list):
            connection["base_url"] = sorted(connection["base_url"])
        manifest = Manifest(
            benchmark=name,
            model=llm.name,
            config={
                "bench": settings.model_dump(mode="json"),
                "connection": connection,
                "request_defaults": llm.request_defaults(),
            },  # fmt: skip
            dataset=DatasetInfo.of(plan.path),
            strategy=None if settings.strategy == "none" else _strategy_label(settings),
            headline=bench.headline,
            detail_keys=list(bench.detail_keys),
            n_planned=len(samples_list),
        )
        run = RunDir.create(opts.runs_dir, manifest)
    else:
        run = RunDir.open(run.path, dataset=plan.path)
        _check_request_defaults(run, llm)
    if on_start is not None:
        on_start(run.path, name)
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
                # The model's own default where it has a smaller one (an openai/ server on this machine).
                max_samples=_samples_in_flight(llm, _connections(llm, opts.max_connections)),
                retry_errors=opts.retry_errors,
                progress=opts.progress if opts.progress is not None else False,
                score_key=bench.headline,
                aggregate=aggregate,
            )
    except (KeyboardInterrupt, asyncio.CancelledError):
        # Every finished sample is on disk. The one line the library writes: the run's last
        # words, which a caller stopped by Ctrl-C may never get to print.
        print(
            f"\ninterrupted; continue with: {BenchInterrupted.command(run.path)}", file=sys.stderr, flush=True
        )
        raise
    return BenchResult(
        run_dir=run.path,
        benchmark=name,
        model=llm.name,
        mode=mode_,
        summary=summary,
        settings=settings,
        in_process=bool(getattr(llm, "in_process", False)) or not llm.http,
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


def _connections(model: Model, given: int | None) -> int:
    """Requests in flight over the whole run: ``given`` (``--max-connections``) per server, or the
    model's own bound where it is smaller than :data:`DEFAULT_CONNECTIONS` per server."""
    servers = getattr(model, "replica_count", 1)
    if given is not None:
        return given * servers
    return min(DEFAULT_CONNECTIONS * servers, model.max_connections)


def _samples_in_flight(model: Model, max_connections: int) -> int:
    """Samples kept in progress: ``max_connections``, or more for a model marked ``in_process``
    (it answers without I/O, e.g. the rule-based critic), where concurrency costs nothing and a
    larger pool makes larger scoring batches (see :class:`_ScoreBatcher`)."""
    if getattr(model, "in_process", False):
        return max(1, max_connections, _IN_PROCESS_SAMPLES)
    return max(1, max_connections)


def _make_model(
    bench: Benchmark, model: str | Model, native: bool, opts: RunOptions, cache_root: Path,
    model_options: dict[str, Any],
) -> Model:  # fmt: skip
    if isinstance(model, Model):
        return model
    try:
        return _build_model(bench, model, native, opts, cache_root, dict(model_options))
    except ToolmendError:
        raise
    except (TypeError, ValueError) as exc:
        # A value of the wrong type reached a backend's constructor: the options' fault.
        raise OptionError("{} do not fit " + model, "model_options", detail=str(exc)) from exc


def _typed(
    fn: Callable[..., Any], options: dict[str, Any], owner: str, field: str = "model_options"
) -> dict[str, Any]:
    """``options`` checked against the types of ``fn``'s parameters (``"0.3"`` → ``0.3``), so
    that ``noise=high`` is an error naming it, not a failure deep inside."""
    try:
        hints = typing.get_type_hints(fn)
    except Exception:  # annotations that cannot be resolved here: the constructor checks them
        return options
    out = dict(options)
    for key, value in options.items():
        if key not in hints:
            continue
        try:
            out[key] = TypeAdapter(
                hints[key], config=ConfigDict(arbitrary_types_allowed=True)
            ).validate_python(value)
        except ValidationError as exc:
            where, msg = first_error(exc)
            at = f"{key}.{where}" if where else key
            raise OptionError(
                f"{{}} {at} of {owner}: {msg[:1].lower()}{msg[1:]}", field, detail=f"got {value!r}"
            ) from exc
        except Exception:  # a type pydantic cannot check: left to the constructor
            continue
    return out


def _build_model(
    bench: Benchmark, model: str, native: bool, opts: RunOptions, cache_root: Path, options: dict[str, Any]
) -> Model:
    if model == "scripted":
        delay = _typed(ScriptedModel.__init__, {"delay": options.pop("delay", 0.0)}, "scripted")["delay"]
        if options:
            raise OptionError(
                f"unknown {{}} key(s) for scripted: {', '.join(sorted(options))}; it takes: delay",
                "model_options",
            )
        return _oracle(bench, delay, opts.max_connections or DEFAULT_CONNECTIONS)
    if model.startswith("noisy/"):
        from toolmend.strategies._noisy import NOISY_OPTIONS, NoisyModel

        noisy = _typed(
            NoisyModel.__init__, {k: options.pop(k) for k in NOISY_OPTIONS if k in options}, "noisy"
        )
        inner = _build_model(bench, model.removeprefix("noisy/"), native, opts, cache_root, options)
        return NoisyModel(inner, **noisy)
    if model.startswith("openai/"):
        if opts.max_connections is not None:
            options.setdefault("max_connections", opts.max_connections)
        options.setdefault("tool_mode", "native" if native else "prompt")
        if opts.base_url is not None:
            options.setdefault("base_url", opts.base_url)
        if opts.api_key_env is not None:
            options.setdefault("api_key_env", opts.api_key_env)
    return get_model(
        model, cache=cache_root if opts.cache else False, max_retries=opts.max_retries, **options
    )


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
    # What a strategy needs to read a reply: in native mode prose is an answer without a call,
    # unless the model's requests are decoded under a tool_choice that requires one.
    choice = model.request_defaults().get("tool_choice") if native else None
    tool_choice = choice if isinstance(choice, str) and choice != "auto" else None
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
        state = SolveState(
            sample=sample,
            benchmark=bench,
            tool_mode="native" if native else "prompt",
            tool_choice=tool_choice,
        )

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
            if native and not (out.tool_calls or out.raw_tool_calls):
                state.content_only.add(reply)
            return reply

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
    benchmark: str | Benchmark | None,
    model: str | Model | None = None,
    settings: BenchSettings | None = None,
    *,
    on_start: Callable[[BenchInterrupted], None] | None = None,
    **options: Any,
) -> BenchResult:
    """Run ``model`` on ``benchmark`` into a new run directory (or resume one) and return the result.

    ``benchmark`` is a registered benchmark or suite (or a :class:`~toolmend.benchmarks.Benchmark`
    object, e.g. with a custom similarity; ``None`` with ``resume``: the run's own); ``model`` a
    model string, a :class:`~toolmend.models.Model`, or ``None`` for a suite's default model.

    What decides the results is a :class:`BenchSettings` — give it as ``settings``, or its fields
    as keywords (``limit=50``; keywords win over ``settings``) — and how the run is carried out
    is a :class:`RunOptions`, given as keywords (``max_connections=32``, ``resume=run_dir``). Both
    are typed and checked: an unknown keyword or a bad value is a :class:`~toolmend.ConfigError`
    that names the parameter (the CLI names its flag instead). ``strategy`` also takes strategy
    objects. Nothing is printed: pass ``progress=True`` (or a
    :class:`~toolmend.runs.Progress`) for a display. Ctrl-C raises :class:`BenchInterrupted`,
    which knows the command that resumes the run; ``on_start`` receives the same object as soon
    as the run directory exists, for a caller that must know the run even when Ctrl-C lands as
    this function returns, after its own handler.

    >>> import tempfile
    >>> result = run_bench("bfcl", "scripted", categories=["simple_python"], limit=3,
    ...                    runs_dir=tempfile.mkdtemp())
    >>> result.summary.metrics["overall_sample_weighted"]
    1.0
    >>> same = run_bench("bfcl", "scripted", BenchSettings(categories=["simple_python"], limit=3),
    ...                  runs_dir=tempfile.mkdtemp())
    >>> same.settings == result.settings
    True
    """
    started: list[BenchInterrupted] = []

    def started_run(run_dir: Path, name: str) -> None:
        started.append(BenchInterrupted(run_dir, name))
        if on_start is not None:
            on_start(started[0])

    try:
        return asyncio.run(_arun(benchmark, model, settings, options, started_run))
    except KeyboardInterrupt as exc:
        # Also after the last sample, while the event loop shuts down: the caller decides
        # whether the run is finished (results.json) or to be resumed.
        if started:
            raise started[0] from exc
        raise

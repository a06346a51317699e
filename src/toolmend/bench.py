"""Run a model on a benchmark end to end: the Python API behind ``toolmend bench``.

Generate → parse → score → write the run directory (see :mod:`toolmend.runs`) → report::

    from toolmend.bench import run_bench

    result = run_bench("bfcl", "openai/Qwen/Qwen3-8B", base_url="http://localhost:8000/v1",
                       categories=["simple_python"], limit=50, max_connections=32)
    result.summary.metrics["overall_sample_weighted"], result.run_dir

Any registered benchmark works (``nestools``, ``critictool``, ``bfcl``, ``reflection-bench`` …).
CriticTool's external samples go through the benchmark's interactive retry loop; ``samples=N``
asks for N generations per sample (Repair@N on ``reflection-bench``; a temperature of 0.7 is used
when none is given, and each generation's index is part of the cache key).

The model ``"scripted"`` is an oracle that answers every sample with the benchmark's gold reply,
to check a pipeline end to end (its score must be 100%); ``"replay/<file>"`` replays saved outputs.

A benchmark name can also be a *suite* (:data:`SUITES`): a function that builds the data for a
seed into a folder, the benchmark that reads it, and a default model::

    SUITES.add("critic", Suite(benchmark="critictool", default_model="checklist",
                               build=lambda seed, out: build_suite(source="world", seed=seed, out=out).path))

Infrastructure failures (the backend gave up after its retries) are recorded per sample and kept
out of the metrics; rerun with ``resume=<run dir>, retry_errors=True`` to answer them.
"""

from __future__ import annotations

import asyncio
import contextvars
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from toolmend._shared import shared_dir
from toolmend.benchmarks import (
    BENCHMARKS,
    Benchmark,
    Mode,
    Prediction,
    SampleScore,
    as_mode,
    load_builtin_benchmarks,
)
from toolmend.benchmarks.templates import template_options
from toolmend.errors import ConfigError, ModelError
from toolmend.formats.calls import parse_calls, write_calls
from toolmend.models import Completion, GenerateConfig, Model, ScriptedModel, get_model
from toolmend.models.cache import default_cache_dir
from toolmend.models.retry import ModelFailure
from toolmend.registry import Registry
from toolmend.runs import DatasetInfo, Manifest, RunDir, RunSummary, SampleRecord, run_samples
from toolmend.runs.progress import Progress
from toolmend.runs.replies import epoch_seed, reply_text
from toolmend.schema import Message, Sample, ToolCall

__all__ = ["SUITES", "BenchResult", "Suite", "arun_bench", "gold_output", "run_bench"]

BenchToolMode = Literal["prompt", "native"]
"""``prompt``: the benchmark's own prompt describes the tools and replies are text (the
benchmarks' published protocol); ``native``: tools also go out as the API's function-calling
schema and native calls are written back into the benchmark's reply format before scoring."""


@dataclass(frozen=True)
class Suite:
    """A benchmark name backed by generated data (see the module docstring)."""

    benchmark: str
    """The registered benchmark that loads and scores the built data."""
    build: Callable[[int, Path], Path]
    """``(seed, out_dir) -> data path``; called once per seed (its output folder is reused)."""
    default_model: str | None = None
    load_options: dict[str, Any] = field(default_factory=dict)


SUITES: Registry[Suite] = Registry("benchmark suite")
"""Suites by the name ``toolmend bench`` accepts; checked before :data:`~toolmend.benchmarks.BENCHMARKS`."""

# How native calls are written back for each benchmark's scorer.
_NATIVE_FORMAT: dict[str, str] = {
    "bfcl": "python",
    "nestools": "nestools",
    "critictool": "json",
    "reflection-bench": "tags",
}
# The per-sample score the progress bar shows.
_SCORE_KEY: dict[str, str] = {
    "bfcl": "accuracy",
    "reflection-bench": "correct",
    "nestools": "tree_pass",
    "critictool": "tool",
}


@dataclass
class BenchResult:
    """What :func:`run_bench` returns."""

    run_dir: Path
    benchmark: str
    model: str
    mode: Mode
    summary: RunSummary
    report: Path | None = None
    """``report.md`` in the run directory (``report.html`` lies next to it)."""

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


def gold_output(bench: Benchmark, sample: Sample) -> Prediction:
    """The reply a perfect model gives ``sample`` on ``bench`` (a list for multi-turn samples)."""
    gold = getattr(bench, "gold", None)
    if callable(gold):
        out: Prediction = gold(sample)
        return out
    if bench.name == "bfcl":
        from toolmend.benchmarks.bfcl.decode import render_python

        return render_python(sample.target)
    if bench.name == "nestools":
        from toolmend.benchmarks.nestools.data import to_official_output

        return to_official_output(sample)
    truth = sample.metadata.get("ground_truth")
    if isinstance(truth, str):
        return truth
    if sample.target:
        return write_calls(sample.target, "json")
    raise ConfigError(f"no gold reply is known for benchmark {bench.name!r}; use replay/<file> instead")


# The sample being solved, so that the gold oracle (a script of the messages only) can answer it.
_CURRENT: contextvars.ContextVar[tuple[Sample, list[int]]] = contextvars.ContextVar("toolmend_bench_sample")


def _oracle(bench: Benchmark, delay: float, max_connections: int) -> ScriptedModel:
    def answer(messages: list[Message]) -> str:
        sample, turn = _CURRENT.get()
        gold = gold_output(bench, sample)
        if isinstance(gold, str):
            return gold
        i = min(turn[0], len(gold) - 1)
        turn[0] += 1
        return gold[i]

    return ScriptedModel(answer, delay=delay, name="scripted", max_connections=max_connections)


def _jsonable(value: Any) -> Any:
    # Details go to samples.jsonl; anything JSON cannot hold becomes its repr.
    return json.loads(json.dumps(value, ensure_ascii=False, default=repr))


def _reply_text(completion: Completion, reply_format: str, sample: Sample) -> str:
    write = None
    if reply_format == "nestools":
        # NesTools answers carry api ids and named responses that only the sample knows.
        from toolmend.benchmarks.nestools.data import to_official_output

        def write(calls: list[ToolCall]) -> str:
            return to_official_output(sample, calls)

    return reply_text(completion, reply_format, write=write)


def _load_samples(bench: Benchmark, data: Path, settings: dict[str, Any]) -> list[Sample]:
    options = dict(settings.get("load_options") or {})
    categories = settings.get("categories")
    if categories:
        if bench.name != "bfcl":
            raise ConfigError(f"--categories applies to bfcl, not {bench.name}")
        options["categories"] = categories
    limit = settings.get("limit")
    if bench.name == "nestools":
        options.setdefault("seed", settings["seed"])
        if limit is not None:
            options.setdefault("limit", limit)
    samples = bench.load(data, **options)
    return samples[:limit] if limit is not None else samples


def _resolve(
    benchmark: str,
    model: str | Model | None,
    data: str | Path | None,
    seed: int,
    cache_root: Path,
    prompt_template: str | None = None,
) -> tuple[Benchmark, str, str | Model, Path, dict[str, Any]]:
    """(benchmark object, benchmark name as asked, model, data path, suite load options)."""
    suite = SUITES.get(benchmark) if benchmark in SUITES else None
    load_builtin_benchmarks(suite.benchmark if suite else benchmark)
    bench_name = suite.benchmark if suite else benchmark
    options = template_options(bench_name, prompt_template) if prompt_template else {}
    bench = BENCHMARKS.get(bench_name)(**options)
    if model is None:
        if suite is None or suite.default_model is None:
            raise ConfigError(f"--model is required for {benchmark}")
        model = suite.default_model
    if data is not None:
        path = Path(data)
    elif suite is not None:
        path = suite.build(seed, cache_root / "suites" / benchmark / f"seed-{seed}")
    else:
        path = shared_dir() / bench.default_data
    if not path.exists():
        raise ConfigError(f"benchmark data not found: {path} (pass --data)")
    return bench, benchmark, model, path, dict(suite.load_options) if suite else {}


def _settings_from_manifest(run: RunDir, benchmark: str) -> dict[str, Any]:
    manifest = run.manifest()
    if manifest.benchmark != benchmark:
        raise ConfigError(f"{run.path} is a {manifest.benchmark} run, not {benchmark}")
    settings = dict(manifest.config.get("bench") or {})
    if not settings:
        raise ConfigError(f"{run.path} was not written by toolmend bench; cannot resume it")
    return settings


async def arun_bench(
    benchmark: str,
    model: str | Model | None = None,
    *,
    data: str | Path | None = None,
    limit: int | None = None,
    max_connections: int = 16,
    seed: int = 0,
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
    categories: list[str] | None = None,
    temperature: float | None = None,
    max_retries: int | None = None,
    load_options: dict[str, Any] | None = None,
    model_options: dict[str, Any] | None = None,
    progress: bool | Progress | None = None,
    report: bool = True,
    prompt_template: str | Path | None = None,
) -> BenchResult:
    """The async form of :func:`run_bench` (same arguments)."""
    cache_root = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    run: RunDir | None = None
    if resume is not None:
        run = RunDir.open(resume)
        settings = _settings_from_manifest(run, benchmark)
        asked = model if isinstance(model, str) else None
        if asked is not None and asked != settings["model"]:
            raise ConfigError(f"{run.path} ran model {settings['model']!r}, not {asked!r}")
        model = model if isinstance(model, Model) else settings["model"]
    else:
        if samples < 1:
            raise ConfigError(f"--samples must be at least 1, got {samples}")
        mode = as_mode(mode)
        if tool_mode not in ("prompt", "native"):
            raise ConfigError(f"tool mode must be prompt or native, got {tool_mode!r}")
        if temperature is None and samples > 1:
            temperature = 0.7
        settings = {
            "data": str(data) if data is not None else None,
            "limit": limit,
            "seed": seed,
            "mode": mode,
            "tool_mode": tool_mode,
            "samples": samples,
            "categories": list(categories) if categories else None,
            "temperature": temperature,
            "load_options": dict(load_options or {}),
            "prompt_template": str(prompt_template) if prompt_template is not None else None,
        }
    bench, name, model, path, suite_options = _resolve(
        benchmark, model, settings["data"], int(settings["seed"]), cache_root, settings.get("prompt_template")
    )
    settings["load_options"] = {**suite_options, **(settings.get("load_options") or {})}
    samples_list = _load_samples(bench, path, settings)
    mode_ = as_mode(settings["mode"])
    native = settings["tool_mode"] == "native"
    if native and bench.name == "nestools":
        # Native function calling sends sample.tools; NesTools offers gold tools plus distractors.
        from toolmend.benchmarks.nestools import NesTools

        if isinstance(bench, NesTools):
            samples_list = bench.with_candidates(samples_list)
    llm = _make_model(bench, model, native, cache, cache_root, max_connections, base_url, api_key_env,
                      max_retries, model_options)  # fmt: skip
    if run is None:
        settings["model"] = llm.name if not isinstance(model, str) else model
        manifest = Manifest(
            benchmark=name, model=llm.name, config={"bench": settings}, dataset=DatasetInfo.of(path)
        )
        run = RunDir.create(runs_dir, manifest)
    else:
        run = RunDir.open(run.path, dataset=path)
    gen_config = GenerateConfig(temperature=settings["temperature"], seed=settings["seed"])
    solve = _make_solve(bench, llm, mode_, gen_config, int(settings["samples"]), native)

    def aggregate(records: list[SampleRecord]) -> dict[str, float]:
        scores = [SampleScore(id=r.id, values=r.scores, details=r.details) for r in records]
        return bench.aggregate(scores, mode_) if scores else {}

    async with llm:
        summary = await run_samples(
            samples_list,
            solve,
            run,
            max_samples=_samples_in_flight(llm, max_connections),
            retry_errors=retry_errors,
            progress=progress,
            score_key=_SCORE_KEY.get(bench.name),
            aggregate=aggregate,
        )
    result = BenchResult(run_dir=run.path, benchmark=name, model=llm.name, mode=mode_, summary=summary)
    if report:
        from toolmend.reports import write_report

        result.report = write_report([run.path], out=run.path).markdown
    return result


_IN_PROCESS_SAMPLES = 256
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
    max_connections: int,
    base_url: str | None,
    api_key_env: str | None,
    max_retries: int | None,
    model_options: dict[str, Any] | None,
) -> Model:
    if isinstance(model, Model):
        return model
    options = dict(model_options or {})
    if model == "scripted":
        return _oracle(bench, float(options.pop("delay", 0.0)), max_connections)
    if model.startswith("openai/"):
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
    bench: Benchmark, model: Model, mode: Mode, config: GenerateConfig, n: int, native: bool
) -> Callable[[Sample], Any]:
    # Calls the server parsed are written back in the benchmark's format in either tool mode.
    reply_format = _NATIVE_FORMAT.get(bench.name, "json")
    interactive = callable(getattr(bench, "run", None))
    batcher = _ScoreBatcher(bench, mode) if _batches_scoring(bench) else None

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
        tools = sample.tools if native else None
        turn = 0

        failures: list[ModelFailure] = []

        async def generate(messages: list[Message], epoch: int | None = None) -> str:
            nonlocal turn
            if epoch is None:
                # Turns of one episode: the replay backend reads its k-th saved output.
                epoch, turn = turn, turn + 1
            # Each of several generations gets its own seed (Repair@N needs independent samples).
            seed = epoch_seed(config.seed, epoch) if n > 1 else config.seed
            conf = config if seed == config.seed else config.model_copy(update={"seed": seed})
            try:
                out = await model.generate(
                    messages, tools=tools, config=conf, epoch=epoch, sample_id=sample.id
                )
            except ModelFailure as exc:
                # The server failed this request identically on every attempt: the model's answer
                # caused it, so the generation counts as a failed one instead of being excluded.
                failures.append(exc)
                record.add_failure(exc, seed=seed)
                return ""
            reply = _reply_text(out, reply_format, sample)
            record.add_completion(out, output=reply, seed=seed)
            return reply

        prediction: Prediction
        try:
            if interactive and n == 1:
                prediction = await bench.run(sample, generate)  # type: ignore[attr-defined]
            elif n == 1:
                prediction = await generate(bench.prompt(sample), 0)
            else:
                messages = bench.prompt(sample)
                prediction = list(await asyncio.gather(*(generate(messages, i) for i in range(n))))
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
        final = prediction if isinstance(prediction, str) else (prediction[-1] if prediction else "")
        parsed = await asyncio.to_thread(parse_calls, final) if _long(final) else parse_calls(final)
        record.calls, record.findings = list(parsed.calls), list(parsed.findings)
        return record

    return solve


def run_bench(benchmark: str, model: str | Model | None = None, **options: Any) -> BenchResult:
    """Run ``model`` on ``benchmark`` into a new run directory under ``runs_dir`` (or resume one).

    Options (all keyword): ``data`` (default: the shared data or the suite's build), ``limit``
    (the first N samples), ``max_connections``, ``seed``, ``mode`` (``compat``/``improved``),
    ``base_url``, ``api_key_env``, ``tool_mode`` (``prompt``/``native``), ``cache``,
    ``cache_dir``, ``resume`` (a run directory: its manifest's settings are reused),
    ``retry_errors``, ``runs_dir``, ``samples`` (generations per sample), ``categories`` (BFCL),
    ``temperature``, ``max_retries``, ``load_options``, ``model_options`` (backend keywords, e.g.
    ``{"delay": 0.1}`` for ``scripted``), ``progress``, ``report``, ``prompt_template`` (a file; see
    :mod:`toolmend.benchmarks.templates`).

    >>> result = run_bench("bfcl", "scripted", categories=["simple_python"], limit=3,
    ...                    runs_dir=tempfile.mkdtemp(), progress=False)  # doctest: +SKIP
    >>> result.summary.metrics["overall_sample_weighted"]                  # doctest: +SKIP
    1.0
    """
    return asyncio.run(arun_bench(benchmark, model, **options))


def _build_critic_suite(seed: int, out: Path) -> Path:
    # Imported on use: building the world suite pulls in the world, the environment and the
    # injection operators, which plain `toolmend bench bfcl` does not need.
    import toolmend.models.checklist  # noqa: F401  (registers the "checklist" model)
    from toolmend.benchmarks.critic import build_suite

    return build_suite(source="world", seed=seed, out=out).root


SUITES.add("critic", Suite(benchmark="critictool", build=_build_critic_suite, default_model="checklist"))

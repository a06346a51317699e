"""``toolmend bench world``: a model acts in the executable world, meets scheduled faults, and is
graded on what it did to the state.

Each sample is one task of :func:`toolmend.world.generate_tasks` (one per trial with
``trials > 1``). :meth:`WorldBenchmark.solve` runs the agent loop of
:class:`~toolmend.world._episode.Episode`: the model's calls run in a fresh world behind the task's
fault schedule and every result goes back as a tool message, until the model answers without a
call or the turn budget (3 × gold length + 4) is spent. The prediction is the list of replies;
:meth:`WorldBenchmark.score` replays them (an episode is deterministic), so saved predictions can be
re-scored with ``toolmend score``.

Per-sample values: ``success``, ``state``, ``facts``, ``progress`` (write tasks), ``harm`` (1 if
anything the task did not ask for changed), ``all_or_nothing`` (BFCL's verdict), ``recovery``
(share of the injected faults recovered; samples without a fault leave it out).

Per-sample details (for reports): ``task``, ``trial``, ``template``, ``fault_schedule``,
``faults`` (one :class:`~toolmend.world._episode.FaultOutcome` dict per fault that fired),
``invalid_calls`` (one :class:`~toolmend.world._episode.InvalidOutcome` dict per invalid call),
``recovered`` (only when a fault fired: every fired fault was recovered),
``turns``, ``ended`` (``answer`` or ``budget``), ``answer``, ``facts_found``/``facts_total``,
``missed_changes``, ``harmful_changes``, ``trace`` (per executed call: turn, tool, error or
``None``, fault kind or ``None``).

Aggregates (see :mod:`toolmend.benchmarks.world._metrics`): the means of the values above;
``tasks``, ``trials``, ``pass^k``/``pass@k`` for k = 1..trials with ``_ci_low``/``_ci_high``;
``faults_injected`` and ``fault/<kind>/{injected,detected,retried,recovered,<outcome>}``;
``invalid/<code>/{calls,fixed}``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from toolmend.benchmarks._base import BENCHMARKS, Benchmark, Generate, Mode, Prediction, SampleScore, Suite
from toolmend.benchmarks.world._metrics import aggregate_world

if TYPE_CHECKING:
    from toolmend.benchmarks.world._audit import AuditReport
from toolmend._errors import ConfigError, DatasetError, first_error
from toolmend._jsontext import lines, load_model, read_text
from toolmend._schema import Message, Sample, Tool
from toolmend.world import WORLD_TOOLS, generate_tasks
from toolmend.world._episode import Episode, gold_replies
from toolmend.world._grading import GoldRun, gold_run
from toolmend.world._rl import system_prompt
from toolmend.world._schedule import FaultSchedule, ScheduledFault
from toolmend.world._tasks import Task, tool_offer

__all__ = ["TURN_STRIDE", "WORLD_SUITE", "WorldBenchmark", "build_tasks_file", "read_tasks"]

TURN_STRIDE = 1000
"""Trial ``t``'s turn ``i`` is generated with epoch ``t * TURN_STRIDE + i``: trials never share a
cache entry, and trial 0 keeps the runner's turn-indexed epochs (replay reads its k-th output)."""


def build_tasks_file(seed: int, out: Path) -> Path:
    """Write the tasks of ``seed`` to ``out/tasks.jsonl`` (the data a world run is pinned to)."""
    out.mkdir(parents=True, exist_ok=True)
    path = out / "tasks.jsonl"
    text = "".join(t.model_dump_json() + "\n" for t in generate_tasks(seed))
    if not path.exists() or path.read_text(encoding="utf-8") != text:
        path.write_text(text, encoding="utf-8")
    return path


def read_tasks(path: str | Path) -> list[Task]:
    """Tasks from a ``tasks.jsonl`` file (or a folder holding one); errors name the line."""
    path = Path(path)
    if path.is_dir():
        path = path / "tasks.jsonl"
    try:
        text = read_text(path)
    except (OSError, UnicodeDecodeError) as exc:
        raise DatasetError(
            f"{path}: cannot read world tasks ({getattr(exc, 'strerror', None) or exc}); pass the tasks.jsonl a run used "
            "(`toolmend bench world` builds it under <cache>/suites/world/seed-<N>/)"
        ) from None
    tasks: list[Task] = []
    for number, line in lines(text):
        try:
            tasks.append(load_model(Task, line))
        except ValidationError as exc:
            where, msg = first_error(exc)
            raise DatasetError(f"{path}:{number}: {where or 'line'}: {msg} (expected a world task)") from None
    if not tasks:
        raise DatasetError(f"{path}: no world tasks")
    return tasks


@lru_cache(maxsize=1024)
def _gold(task_json: str) -> GoldRun:
    return gold_run(Task.model_validate_json(task_json))


@lru_cache(maxsize=4096)
def _task(task_json: str) -> Task:
    return Task.model_validate_json(task_json)


@BENCHMARKS.register("world")
class WorldBenchmark(Benchmark):
    """The agentic benchmark over the built-in world (see the module docstring).

    Load options: ``faults`` (``none``, ``light``, ``heavy`` or a JSON schedule file), ``trials``
    (runs per task, for pass^k), ``fault_seed`` (default: the tasks' world seed), ``max_turns``
    (default: 3 × gold length + 4), ``tools`` (``all`` world tools, the default, or ``domain``:
    the tools of the task's domains plus ``distractors`` others, default 3; see
    :meth:`~toolmend.world.Task.offered_tools`), ``per_template`` (the first N episodes of each
    task template, in the tasks' order; default: all of them; the tasks come grouped by template,
    so ``--limit`` alone keeps the first templates only).
    """

    name = "world"
    default_data = ""
    reply_format = "tags"
    headline = "success"
    detail_keys = ("template", "fault_schedule", "ended")
    count_keys = ("tasks", "trials", "faults_injected", "fault/*/injected", "invalid/*/calls")

    def check_load_options(self, options: Mapping[str, Any]) -> None:
        """Option keys, and the numbers among them, checked before a suite is built."""
        super().check_load_options(options)
        for name, check in (("trials", _positive), ("max_turns", _positive), ("fault_seed", _whole),
                            ("distractors", _whole), ("per_template", _positive)):  # fmt: skip
            if options.get(name) is not None:
                check(options[name], name)

    def load(
        self,
        path: str | Path | None = None,
        *,
        faults: str = "none",
        trials: int | str = 1,
        fault_seed: int | str | None = None,
        max_turns: int | str | None = None,
        tools: str = "all",
        distractors: int | str = 3,
        per_template: int | str | None = None,
        **options: Any,
    ) -> list[Sample]:
        """One sample per task and trial, each carrying its task, faults and trial number."""
        if options:
            raise ConfigError(
                f"unknown world option(s): {', '.join(sorted(options))}; "
                "expected faults, trials, fault_seed, max_turns, tools, distractors, per_template"
            )
        tasks = read_tasks(path) if path is not None else generate_tasks(0)
        return self.load_tasks(
            tasks, faults=faults, trials=trials, fault_seed=fault_seed, max_turns=max_turns,
            tools=tools, distractors=distractors, per_template=per_template,
        )  # fmt: skip

    def load_tasks(
        self,
        tasks: Sequence[Task],
        *,
        faults: str = "none",
        trials: int | str = 1,
        fault_seed: int | str | None = None,
        max_turns: int | str | None = None,
        tools: str = "all",
        distractors: int | str = 3,
        per_template: int | str | None = None,
    ) -> list[Sample]:
        """Samples for ``tasks`` (what :meth:`load` does after reading the file)."""
        offer = tool_offer(tools, _whole(distractors, "distractors"))
        if per_template is not None:
            tasks = _per_template(tasks, _positive(per_template, "per_template"))
        n_trials = _positive(trials, "trials")
        turns = _positive(max_turns, "max_turns") if max_turns is not None else None
        seed = _whole(fault_seed, "fault_seed") if fault_seed is not None else (tasks[0].seed if tasks else 0)
        schedule = FaultSchedule.named(str(faults), seed=seed)
        samples: list[Sample] = []
        for task in tasks:
            scheduled = [f.model_dump() for f in schedule.for_task(task)]
            offered = offer(task)
            for trial in range(n_trials):
                samples.append(
                    Sample(
                        id=task.id if n_trials == 1 else f"{task.id}@{trial}",
                        messages=self._messages(task, offered),
                        tools=offered,
                        target=_gold(json.dumps(task.model_dump(mode="json"))).calls,
                        metadata={
                            "task": task.model_dump(mode="json"),
                            "template": task.template,
                            "faults": scheduled,
                            "fault_schedule": schedule.identity,
                            "trial": trial,
                            "max_turns": turns if turns is not None else 3 * len(task.calls) + 4,
                        },
                    )
                )
        return samples

    @staticmethod
    def _messages(task: Task, offered: Sequence[Tool]) -> list[Message]:
        names = None if len(offered) == len(WORLD_TOOLS.tools) else tuple(t.name for t in offered)
        return [
            Message(role="system", content=system_prompt(task.seed, offered=names)),
            Message(role="user", content=task.query),
        ]

    def for_native_tools(self, samples: list[Sample]) -> list[Sample]:
        """Native function calling sends the tools through the API: the system prompt then leaves
        out the tool list and the text call format."""
        out = []
        for sample in samples:
            task = self._sample_task(sample)
            messages = [
                Message(role="system", content=system_prompt(task.seed, tools=False)),
                *sample.messages[1:],
            ]
            out.append(
                sample.model_copy(
                    update={"messages": messages, "metadata": {**sample.metadata, "tool_mode": "native"}}
                )
            )
        return out

    def audit(self, path: str | Path | None = None, seed: int = 0) -> AuditReport:
        """``toolmend bench world --audit``: the tasks of ``path`` (default: those of ``seed``)
        checked by :func:`~toolmend.benchmarks.world._audit.audit_tasks`."""
        from toolmend.benchmarks.world._audit import audit_tasks

        return audit_tasks(read_tasks(path) if path is not None else generate_tasks(seed))

    def prompt(self, sample: Sample) -> list[Message]:
        """The first request of the episode: the system prompt with the tools, and the task."""
        return list(sample.messages)

    def episode(self, sample: Sample) -> Episode:
        """A fresh episode for ``sample`` (its world, faults and turn budget)."""
        task = self._sample_task(sample)
        faults = [ScheduledFault.model_validate(f) for f in sample.metadata.get("faults") or []]
        return Episode(
            task, faults, messages=self.prompt(sample), max_turns=int(sample.metadata["max_turns"])
        )

    async def solve(self, sample: Sample, generate: Generate) -> Prediction:
        """Run the agent loop: generate, execute the calls, answer with tool messages, repeat."""
        episode = self.episode(sample)
        trial = int(sample.metadata.get("trial", 0))
        replies: list[str] = []
        while not episode.done:
            reply = await generate(list(episode.messages), epoch=trial * TURN_STRIDE + episode.turns)
            replies.append(reply)
            episode.observe(reply)
        return replies

    def gold(self, sample: Sample) -> Prediction:
        """The replies of a perfect agent: the gold calls, then an answer stating every fact."""
        return gold_replies(_gold(json.dumps(sample.metadata["task"])))

    def score(self, sample: Sample, prediction: Prediction, mode: Mode = "compat") -> SampleScore:
        """Replay the replies in a fresh episode and grade it; never raises on model output."""
        replies = [prediction] if isinstance(prediction, str) else list(prediction)
        episode = self.episode(sample)
        for reply in replies:
            if episode.observe(reply if isinstance(reply, str) else ""):
                break
        gold = _gold(json.dumps(sample.metadata["task"]))
        result = episode.grade(gold)
        faults = episode.fault_outcomes()
        values: dict[str, float | None] = {
            "success": float(result.success),
            "state": float(result.state_ok),
            "facts": float(result.facts_ok) if gold.facts else None,
            "progress": result.progress,
            "harm": float(result.harm > 0),
            "all_or_nothing": float(result.all_or_nothing),
            "recovery": sum(f.recovered for f in faults) / len(faults) if faults else None,
        }
        details: dict[str, Any] = {
            "task": self._sample_task(sample).id,
            "trial": int(sample.metadata.get("trial", 0)),
            "template": sample.metadata.get("template"),
            "fault_schedule": sample.metadata.get("fault_schedule"),
            "faults": [f.model_dump() for f in faults],
            "invalid_calls": [i.model_dump() for i in episode.invalid_outcomes()],
            "turns": episode.turns,
            "ended": "answer" if episode.answer is not None else "budget",
            "answer": (episode.answer or "")[:500],
            "facts_found": result.facts_found,
            "facts_total": result.facts_total,
            "harm_count": result.harm,
            "missed_changes": result.missed_changes,
            "harmful_changes": result.harmful_changes,
            "trace": [
                [s.turn, s.call.name, s.error, episode.faults[s.fault].kind if s.fault is not None else None]
                for s in episode.steps
            ],
        }
        if faults:
            # The reports' per-fault-kind recovery chart reads this flag for the sample.
            details["recovered"] = all(f.recovered for f in faults)
        return SampleScore(id=sample.id, values=values, details=details)

    def aggregate(self, scores: Sequence[SampleScore], mode: Mode = "compat") -> dict[str, float]:
        """Means, pass^k / pass@k with 95 % intervals, per-fault and per-code outcomes."""
        return aggregate_world(scores)

    @staticmethod
    def _sample_task(sample: Sample) -> Task:
        task = sample.metadata.get("task")
        if not isinstance(task, dict):
            raise DatasetError(f"sample {sample.id}: no world task in its metadata")
        return _task(json.dumps(task))


def _per_template(tasks: Sequence[Task], n: int) -> list[Task]:
    """The first ``n`` tasks of each template, in the tasks' order."""
    seen: dict[str, int] = {}
    out = []
    for task in tasks:
        seen[task.template] = seen.get(task.template, 0) + 1
        if seen[task.template] <= n:
            out.append(task)
    return out


def _whole(value: int | str, name: str) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        raise ConfigError(f"{name} must be a whole number, got {value!r}") from None


def _positive(value: int | str, name: str) -> int:
    number = _whole(value, name)
    if number < 1:
        raise ConfigError(f"{name} must be at least 1, got {number}")
    return number


WORLD_SUITE = Suite(benchmark="world", build=build_tasks_file)
"""``toolmend bench world``: the tasks of the seed, written to a file the run is pinned to."""

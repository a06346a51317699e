"""The world as a training environment: :class:`WorldEnv` for RL loops, and a TRL
``environment_factory`` form (:func:`trl_environment_factory`).

:class:`WorldEnv` runs the benchmark's own episode (:class:`~toolmend.world._episode.Episode`):
``reset`` to a task, ``step`` with a model reply (or calls), and the reward is the benchmark's
grade — so what is trained on is what ``toolmend bench world`` measures.

>>> env = WorldEnv(faults="none")
>>> obs = env.reset("world-0-todo_add-1")
>>> [m.role for m in obs]
['system', 'user']
>>> gold = env.gold_replies()
>>> for reply in gold:
...     result = env.step(reply)
>>> result.done, result.reward
(True, 1.0)

The TRL form follows ``GRPOTrainer(environment_factory=...)`` (TRL ≥ 1.x with transformers ≥ 5.2):
the factory makes one instance per rollout; TRL calls ``reset(**row)`` with the dataset row, exposes
every other public method as a tool (schema from its signature and Google-style docstring, called
as ``method(**arguments)``) and calls ``get_reward()`` once per rollout. Each world tool is such a
method. Unlike a plain Python signature — where a wrong keyword is a ``TypeError`` string — the
arguments go through the checklist first, so a malformed call comes back as the coded error body a
real API sends (``{"error": {"code": 400, "type": "invalid_request", "details": [{"code":
"missing_required", ...}]}}``): a learnable signal::

    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer
    from toolmend.world import trl_environment_factory, world_dataset

    trainer = GRPOTrainer(model="Qwen/Qwen3-0.6B", args=GRPOConfig(...),
                          train_dataset=Dataset.from_list(world_dataset(seed=0)),
                          environment_factory=trl_environment_factory(faults="light"))
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from toolmend._errors import ConfigError
from toolmend._schema import Message, Tool, ToolCall
from toolmend.world._episode import Episode, gold_replies
from toolmend.world._grading import GoldRun, Grade, gold_run
from toolmend.world._schedule import FaultSchedule
from toolmend.world._tasks import Task, generate_tasks
from toolmend.world._world import World
from toolmend.world.domains import WORLD_TOOLS

__all__ = ["StepResult", "WorldEnv", "trl_environment_factory", "world_dataset"]

RewardMode = Literal["success", "partial"]


class StepResult(BaseModel):
    """What :meth:`WorldEnv.step` returns."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    observation: list[Message]
    """The messages added since the model's reply (tool results, or a format complaint)."""
    reward: float
    """0 until the episode ends; then the grade (see ``reward`` of :class:`WorldEnv`)."""
    done: bool
    info: dict[str, Any] = Field(default_factory=dict)


def _reward(grade: Grade, gold: GoldRun, mode: RewardMode) -> float:
    if mode == "success":
        return float(grade.success)
    parts = len(gold.changes) + grade.facts_total
    if parts == 0:
        return float(grade.success)
    made = len(gold.changes) - len(grade.missed_changes) if gold.changes else 0
    return (made + grade.facts_found) / parts


class WorldEnv:
    """An RL environment over the world's tasks (see the module docstring).

    ``tasks`` defaults to ``generate_tasks(seed)``; ``faults`` is a schedule name or file as for
    ``toolmend bench world --faults``; ``reward`` is ``success`` (1 or 0) or ``partial`` (the
    share of gold state changes made plus facts stated).
    """

    def __init__(
        self,
        tasks: Sequence[Task] | None = None,
        *,
        seed: int = 0,
        faults: str | FaultSchedule = "none",
        max_turns: int | None = None,
        reward: RewardMode = "success",
    ) -> None:
        self.tasks = list(tasks) if tasks is not None else generate_tasks(seed)
        if not self.tasks:
            raise ConfigError("WorldEnv needs at least one task")
        self._by_id = {t.id: t for t in self.tasks}
        self.schedule = (
            faults if isinstance(faults, FaultSchedule) else FaultSchedule.named(faults, seed=seed)
        )
        self.max_turns = max_turns
        self.reward_mode: RewardMode = reward
        self._next = 0
        self.episode: Episode | None = None
        self.gold: GoldRun | None = None

    def reset(self, task: str | int | Task | None = None) -> list[Message]:
        """Start an episode on ``task`` (an id, an index, a task; default: the next one in turn)
        and return the messages the model is sent first."""
        chosen = self._pick(task)
        self.gold = gold_run(chosen)
        self.episode = Episode(
            chosen,
            self.schedule.for_task(chosen),
            messages=[
                Message(role="system", content=system_prompt(chosen.seed)),
                Message(role="user", content=chosen.query),
            ],
            max_turns=self.max_turns,
        )
        return list(self.episode.messages)

    def _pick(self, task: str | int | Task | None) -> Task:
        if isinstance(task, Task):
            return task
        if isinstance(task, str):
            if task not in self._by_id:
                raise ConfigError(f"no world task {task!r}")
            return self._by_id[task]
        index = self._next if task is None else task
        self._next = (index + 1) % len(self.tasks)
        return self.tasks[index % len(self.tasks)]

    @property
    def tools(self) -> list[Tool]:
        """The tools on offer (every world tool)."""
        return WORLD_TOOLS.tools

    @property
    def messages(self) -> list[Message]:
        """The whole conversation so far."""
        return list(self._episode().messages)

    def _episode(self) -> Episode:
        if self.episode is None:
            raise ConfigError("call reset() before step()")
        return self.episode

    def step(self, action: str | ToolCall | Sequence[ToolCall]) -> StepResult:
        """Take a model reply (text in the benchmark's format) or calls; execute; grade at the end."""
        episode = self._episode()
        before = len(episode.messages)
        if isinstance(action, str):
            episode.observe(action)
        else:
            episode.act([action] if isinstance(action, ToolCall) else list(action))
        added = episode.messages[before:]
        observation = [m for m in added if m.role != "assistant"]
        done = episode.done
        info: dict[str, Any] = {"turn": episode.turns}
        reward = 0.0
        if done:
            grade = self.grade()
            reward = _reward(grade, self._gold(), self.reward_mode)
            info.update(
                grade=grade.model_dump(),
                faults=[f.model_dump() for f in episode.fault_outcomes()],
                invalid_calls=[i.model_dump() for i in episode.invalid_outcomes()],
            )
        return StepResult(observation=observation, reward=reward, done=done, info=info)

    def _gold(self) -> GoldRun:
        if self.gold is None:
            raise ConfigError("call reset() first")
        return self.gold

    def grade(self, answer: str | None = None) -> Grade:
        """The grade of the episode so far (with ``answer`` as its final answer, if given)."""
        episode = self._episode()
        if answer is not None:
            episode.answer = answer
        return episode.grade(self._gold())

    def reward(self, answer: str | None = None) -> float:
        """The reward of the episode so far (see the class docstring)."""
        return _reward(self.grade(answer), self._gold(), self.reward_mode)

    def gold_replies(self) -> list[str]:
        """The replies of a perfect agent for the current task (for tests and warm-up data)."""
        return gold_replies(self._gold())


# -- prompts ---------------------------------------------------------------------------------------

SYSTEM_PROMPT = """\
You are an assistant acting for {owner} ({email}). Today is {today}.
Use the tools to do what the user asks. Tools can fail like real services do; read each result \
before you go on. When the task is done, or cannot be done, reply in plain text without a tool \
call: say what you did and give every value the user asked for."""

TOOLS_PROMPT = """

To call tools, reply with one line per call, exactly in this form:
<tool_call>{{"name": "<tool name>", "arguments": {{"<parameter>": <value>}}}}</tool_call>
Calls in one reply run in order; each result comes back in the next message.

Tools:
{tools}"""


@lru_cache(maxsize=32)
def system_prompt(seed: int, *, tools: bool = True, offered: tuple[str, ...] | None = None) -> str:
    """The system prompt of the world's tasks; with ``tools``, the tool list (every world tool, or
    the ``offered`` names) and call format too."""
    from toolmend.formats._tools import to_openai_tool

    state = World.create(seed).state
    text = SYSTEM_PROMPT.format(owner=state.owner_name, email=state.owner_email, today=state.today)
    if tools:
        listing = "\n".join(
            json.dumps(to_openai_tool(t)["function"], ensure_ascii=False)
            for t in WORLD_TOOLS.tools
            if offered is None or t.name in offered
        )
        text += TOOLS_PROMPT.format(tools=listing)
    return text


def world_dataset(seed: int = 0, tasks: Sequence[Task] | None = None) -> list[dict[str, Any]]:
    """Rows for a TRL dataset: ``prompt`` (system without the tool list — TRL renders the tools
    through the chat template — and the user's task) and ``task_id`` (what ``reset`` reads)."""
    chosen = list(tasks) if tasks is not None else generate_tasks(seed)
    return [
        {
            "prompt": [
                {"role": "system", "content": system_prompt(t.seed, tools=False)},
                {"role": "user", "content": t.query},
            ],
            "task_id": t.id,
        }
        for t in chosen
    ]


# -- the TRL environment_factory form --------------------------------------------------------------

_JSON_TYPES: dict[str, Any] = {
    "string": str,
    "integer": int,
    "number": float,
    "boolean": bool,
    "object": dict,
}


def _annotation(schema: dict[str, Any]) -> Any:
    enum = schema.get("enum")
    if isinstance(enum, list) and enum and all(isinstance(v, str | int) for v in enum):
        return Literal[tuple(enum)]
    kind = schema.get("type")
    if kind == "array":
        items = schema.get("items")
        return list[_annotation(items)] if isinstance(items, dict) and items.get("type") else list  # type: ignore[misc]
    return _JSON_TYPES.get(str(kind), str)


def _tool_method(spec: Tool) -> Callable[..., str]:
    """A method named like ``spec`` whose signature and docstring describe it to TRL, and whose
    body accepts any keywords so the checklist, not Python, judges them."""

    def method(self: WorldToolEnv, **arguments: Any) -> str:
        return self._call(spec.name, arguments)

    params = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    annotations: dict[str, Any] = {}
    lines = [spec.description or spec.name, "", "Args:"]
    required = set(spec.required)
    for name, prop in spec.properties.items():
        hint = _annotation(prop if isinstance(prop, dict) else {})
        optional = name not in required
        annotations[name] = hint | None if optional else hint
        params.append(
            inspect.Parameter(
                name,
                inspect.Parameter.POSITIONAL_OR_KEYWORD,
                default=None if optional else inspect.Parameter.empty,
                annotation=annotations[name],
            )
        )
        description = (prop.get("description") if isinstance(prop, dict) else None) or f"The {name}."
        lines.append(f"    {name}: {' '.join(str(description).split())}")
    if len(lines) == 3:
        lines = lines[:1]
    annotations["return"] = str
    lines += ["", "Returns:", "    The service's JSON answer, or its JSON error body."]
    # Required parameters first: a Python signature cannot put them after defaulted ones.
    params = params[:1] + sorted(params[1:], key=lambda p: p.default is not inspect.Parameter.empty)
    method.__name__ = method.__qualname__ = spec.name
    method.__doc__ = "\n".join(lines)
    method.__annotations__ = annotations
    method.__signature__ = inspect.Signature(params, return_annotation=str)  # type: ignore[attr-defined]
    return method


class WorldToolEnv:
    """One rollout's environment for TRL (build instances with :func:`trl_environment_factory`).

    Public methods are exactly ``reset``, ``get_reward`` and one per offered world tool, as TRL
    expects (the factory's class adds the tool methods).
    """

    _schedule: FaultSchedule
    _tasks: list[Task]

    def __init__(self) -> None:
        self._env = WorldEnv(self._tasks, faults=self._schedule)
        self._calls = 0

    def reset(self, task_id: str | None = None, **row: Any) -> str | None:
        """Start the task named by the dataset row's ``task_id`` (the next task when absent).

        Returns ``None``: the row's prompt already states the task."""
        self._env.reset(task_id)
        self._calls = 0
        return None

    def get_reward(self) -> float:
        """The episode's reward from the world's state. TRL does not show the environment the final
        answer, so a read-only task counts its facts as stated when a successful tool result of the
        rollout holds them (the model has them in front of it)."""
        episode = self._env._episode()
        seen = "\n".join(s.content for s in episode.steps if s.ok)
        return self._env.reward(answer=seen)

    def _call(self, name: str, arguments: dict[str, Any]) -> str:
        episode = self._env._episode()
        self._calls += 1
        # None is how TRL passes an optional argument the model left out.
        args = {k: v for k, v in arguments.items() if v is not None}
        message = episode.execute(ToolCall(name=name, arguments=args), turn=self._calls - 1)
        return message.content


@lru_cache(maxsize=1)
def _tool_methods() -> dict[str, Callable[..., str]]:
    return {spec.name: _tool_method(spec) for spec in WORLD_TOOLS.tools}


def trl_environment_factory(
    *,
    seed: int = 0,
    faults: str = "none",
    tasks: Sequence[Task] | None = None,
    tools: Sequence[str] | None = None,
) -> Callable[[], WorldToolEnv]:
    """A zero-argument factory for ``GRPOTrainer(environment_factory=...)`` (see the module docstring).

    ``tools`` names the world tools offered as methods (default: all 50). TRL renders every offered
    tool's schema into every prompt, so offering only the tools of the tasks trained on keeps
    prompts short (all 50 are about 25,000 characters).

    >>> make = trl_environment_factory(faults="none", tools=["todo_create", "todo_list"])
    >>> env = make()
    >>> env.reset(task_id="world-0-todo_add-1", prompt=[]) is None
    True
    >>> json.loads(env.todo_create(title=""))["error"]["details"][0]["code"]
    'empty_value'
    >>> hasattr(env, "weather_current")
    False
    """
    chosen = list(tasks) if tasks is not None else generate_tasks(seed)
    schedule = FaultSchedule.named(faults, seed=seed)
    methods = _tool_methods()
    names = list(methods) if tools is None else list(dict.fromkeys(tools))
    unknown = [n for n in names if n not in methods]
    if unknown:
        raise ConfigError(f"no world tool named {', '.join(map(repr, unknown))}; known: {', '.join(methods)}")
    if not names:
        raise ConfigError("trl_environment_factory needs at least one tool")
    namespace: dict[str, Any] = {"_schedule": schedule, "_tasks": chosen}
    namespace.update({n: methods[n] for n in names})
    return type("WorldToolEnv", (WorldToolEnv,), namespace)

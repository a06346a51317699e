"""A world-state reward: run a completion's calls in a fresh world for the row's task and score
what they did to the state, as ``toolmend bench world`` grades an episode.

The reward is ``success × success_weight + partial × progress_weight − harm × harm_penalty``,
floored at ``min_reward``, where

- ``success`` is the world's grade (every field the task touches holds its gold value, and every
  fact it asks for was obtained);
- ``partial`` is :class:`~toolmend.world.WorldEnv`'s ``partial`` reward: the share of the gold
  state changes made plus facts obtained;
- ``harm`` counts fields the calls changed that the task leaves alone.

A single completion cannot state facts it has not read yet, so (as the TRL environment form
does) a fact counts as stated when a successful result of the completion's own calls holds it.
A completion with no readable call scores ``min_reward``.

The builders write one row per turn: a later turn's prompt holds the earlier turns (the
assistant's calls, each followed by its tool results) and its completion the next calls with
concrete values. So the calls of every assistant turn of the prompt that tool results follow
(TRL passes the ``prompts``) run first, and the completion is scored where they left the world.
A completion that still names earlier results NesTools-style (``{"$ref": "API_call_0"}``) has
its calls declare the outputs of the gold call at the same position when they call the same
tool; a reference to anything else stays unresolved, and the world answers it with an error.

>>> from toolmend.formats import write_calls
>>> from toolmend.world import generate_tasks
>>> task = next(t for t in generate_tasks(0) if t.template == "todo_add")
>>> reward = world_reward()
>>> reward([write_calls(task.calls, "tags"), "I cannot do that."], trace_id=[task.id] * 2, seed=[0, 0])
[2.0, -1.0]
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from toolmend._errors import ConfigError
from toolmend._schema import ToolCall
from toolmend.formats import parse_calls
from toolmend.train._rewards import RewardFn, completion_text
from toolmend.world import Task, WorldEnv, generate_tasks

__all__ = ["WorldRewardConfig", "world_reward", "world_score"]

_SEED = re.compile(r"^world-(\d+)-")


class WorldRewardConfig(BaseModel):
    """Weights of the world-state reward (see the module docstring); the maximum, reached by the
    gold calls, is ``success_weight + progress_weight``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    success_weight: float = Field(1.0, ge=0)
    progress_weight: float = Field(1.0, ge=0)
    harm_penalty: float = Field(0.5, ge=0)
    """Subtracted per field changed that the task leaves alone."""
    min_reward: float = -1.0
    faults: str = "none"
    """A fault schedule name, as for ``toolmend bench world --faults``."""

    @property
    def max_reward(self) -> float:
        """What the gold calls score."""
        return self.success_weight + self.progress_weight


@lru_cache(maxsize=8)
def _tasks(seed: int) -> dict[str, Task]:
    return {t.id: t for t in generate_tasks(seed)}


def _task(task_id: Any, seed: Any) -> Task:
    if not isinstance(task_id, str):
        raise ConfigError(f"a world task id is a string, not {type(task_id).__name__}")
    if seed is None:
        m = _SEED.match(task_id)
        if m is None:
            raise ConfigError(
                f"{task_id!r} is not a world task id (world-<seed>-…) and no seed column was given"
            )
        seed = int(m.group(1))
    task = _tasks(int(seed)).get(task_id)
    if task is None:
        raise ConfigError(f"no world task {task_id!r} in the world of seed {seed}")
    return task


def _played(prompt: Any) -> list[list[ToolCall]]:
    """The calls of each assistant turn of a conversational prompt that tool results follow (a
    turn that ran; a refine row's first attempt, followed by feedback, did not)."""
    if not isinstance(prompt, list):
        return []
    turns: list[list[ToolCall]] = []
    for m, after in zip(prompt, prompt[1:], strict=False):
        ran = isinstance(after, dict) and after.get("role") == "tool"
        if ran and isinstance(m, dict) and m.get("role") == "assistant":
            turns.append(parse_calls(str(m.get("content") or "")).calls)
    return turns


def world_score(
    text: str,
    task: Task,
    config: WorldRewardConfig | None = None,
    history: Sequence[Sequence[ToolCall]] = (),
) -> float:
    """The world-state reward of one reply ``text`` for ``task`` (a fresh world every time), after
    the calls of the earlier turns in ``history`` ran, one turn each."""
    cfg = config or WorldRewardConfig()
    calls = parse_calls(text).calls
    if not calls:
        return cfg.min_reward
    done = sum(len(turn) for turn in history)
    calls = [
        c.model_copy(update={"outputs": g.outputs, "output_fields": g.output_fields})
        if g is not None and g.name == c.name and not c.outputs
        else c
        for c, g in zip(calls, [*task.calls[done:], *[None] * len(calls)], strict=False)
    ]
    env = WorldEnv([task], seed=task.seed, faults=cfg.faults, reward="partial")
    env.reset(task)
    for turn in history:
        env.step(list(turn))
    env.step(calls)
    assert env.episode is not None
    evidence = "\n".join(s.content for s in env.episode.steps if s.ok)
    grade = env.grade(answer=evidence)
    partial = env.reward(answer=evidence)
    value = cfg.success_weight * grade.success + cfg.progress_weight * partial - cfg.harm_penalty * grade.harm
    return max(cfg.min_reward, value)


def world_reward(
    config: WorldRewardConfig | None = None, *, task_column: str = "trace_id", seed_column: str = "seed"
) -> RewardFn:
    """A TRL reward function scoring each completion with :func:`world_score` in the world task
    named by its row's ``task_column`` (the builders' ``trace_id``; ``world_dataset`` rows call it
    ``task_id``, which is read when ``task_column`` is absent). The world's seed comes from
    ``seed_column`` when present, else from the id."""

    def world_state(completions: list[Any], **columns: Any) -> list[float | None]:
        n = len(completions)
        name = task_column if task_column in columns or "task_id" not in columns else "task_id"
        if name not in columns:
            raise ConfigError(
                f"the world reward needs the dataset column {task_column!r}; got {sorted(columns)}"
            )
        ids = list(columns[name])
        seeds = list(columns[seed_column]) if seed_column in columns else [None] * n
        if len(ids) != n or len(seeds) != n:
            raise ConfigError(f"{n} completions but {len(ids)} task ids and {len(seeds)} seeds")
        prompts = columns.get("prompts")
        histories = [_played(p) for p in prompts] if prompts is not None and len(prompts) == n else [[]] * n
        return [
            world_score(completion_text(c), _task(t, s), config, h)
            for c, t, s, h in zip(completions, ids, seeds, histories, strict=True)
        ]

    return world_state

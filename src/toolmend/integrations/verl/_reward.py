"""``compute_score`` for verl's reward loop: the world's state grade plus the checklist.

verl calls ``compute_score(data_source=, solution_str=, ground_truth=, extra_info=)`` once per
rollout, ``extra_info`` being the row's plus what the tools left in the trajectory
(:class:`WorldTool` logs every call it ran under ``toolmend_calls``). The calls — the logged ones,
or those parsed from ``solution_str`` when no tool ran (a single-turn rollout) — run in a fresh
world for the row's task after the turns already in the prompt (``history``), and

``score = success + partial − 0.5 × harm`` (floored at −1: :class:`~toolmend.train.WorldRewardConfig`'s
defaults, so the same reward as ``toolmend train grpo --reward world``) ``+ valid share``

where ``valid share`` is the share of the rollout's calls the checklist passed (0 without calls).
The parts come back too (verl logs every key of the dict):

>>> from toolmend.formats import write_calls
>>> from toolmend.world import generate_tasks
>>> task = next(t for t in generate_tasks(0) if t.template == "todo_add")
>>> info = {"task_id": task.id, "seed": 0, "faults": "none", "history": "[]"}
>>> good = compute_score("toolmend/world", write_calls(task.calls, "tags"), "[]", info)
>>> good["score"], good["world_success"], good["valid_share"]
(3.0, 1.0, 1.0)
>>> compute_score("toolmend/world", "I cannot do that.", "[]", info)["score"]
-1.0
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from toolmend._errors import ConfigError
from toolmend._schema import ToolCall
from toolmend.formats import parse_calls
from toolmend.train._world_reward import WorldRewardConfig, _task
from toolmend.world import Task, WorldEnv
from toolmend.world._episode import Episode

__all__ = ["calls_from_json", "compute_score", "replay"]


def calls_from_json(value: Any) -> list[ToolCall]:
    """Calls from JSON text or a list of ``{"name", "arguments"}`` objects (flattening turns)."""
    items = json.loads(value) if isinstance(value, str) else value
    out: list[ToolCall] = []
    for item in items or []:
        if isinstance(item, list):
            out += calls_from_json(item)
        elif isinstance(item, Mapping):
            out.append(ToolCall(name=str(item.get("name", "")), arguments=dict(item.get("arguments") or {})))
    return out


def replay(task: Task, faults: str, calls: Sequence[ToolCall]) -> tuple[WorldEnv, Episode]:
    """A fresh world for ``task`` with ``calls`` executed in order (what a trajectory did so far)."""
    env = WorldEnv([task], seed=task.seed, faults=faults or "none", reward="partial")
    env.reset(task)
    episode = env.episode
    assert episode is not None
    for turn, call in enumerate(calls):
        episode.execute(call, turn=turn)
    return env, episode


def compute_score(
    data_source: str,
    solution_str: str,
    ground_truth: Any,
    extra_info: Mapping[str, Any] | None = None,
    **_: Any,
) -> dict[str, float]:
    """The reward of one verl rollout (see the module docstring)."""
    info = dict(extra_info or {})
    if not isinstance(info.get("task_id"), str):
        raise ConfigError(
            f"compute_score scores rows of toolmend's verl export (extra_info.task_id); "
            f"the row of {data_source!r} has none"
        )
    task = _task(info["task_id"], info.get("seed"))
    history = calls_from_json(info.get("history") or "[]")
    logged = info.get("toolmend_calls")
    calls = calls_from_json(logged) if logged is not None else parse_calls(solution_str or "").calls
    cfg = WorldRewardConfig(faults=str(info.get("faults") or "none"))
    env, episode = replay(task, cfg.faults, [*history, *calls])
    answer = solution_str or ""
    grade = env.grade(answer=answer)
    partial = env.reward(answer=answer)
    own = episode.steps[len(history) :]
    invalid = sum(1 for s in own if s.source == "invalid")
    valid_share = (len(own) - invalid) / len(own) if own else 0.0
    if not own and not grade.success:
        world = cfg.min_reward
    else:
        world = (
            cfg.success_weight * grade.success + cfg.progress_weight * partial - cfg.harm_penalty * grade.harm
        )
        world = max(cfg.min_reward, world)
    return {
        "score": float(world + (valid_share if own else 0.0)),
        "world": float(world),
        "world_success": float(grade.success),
        "world_partial": float(partial),
        "valid_share": float(valid_share),
        "calls": float(len(own)),
        "invalid_calls": float(invalid),
    }

"""Rewards from the checklist, as TRL ``reward_funcs``: ``f(completions, **columns) -> list[float | None]``.

Each factory returns a function that reads the dataset columns the builders write (``tools``,
``gold_calls``, ``ground_truth``) and scores one completion per entry. A malformed completion
is data and scores low; a missing column, a completion of an unexpected type or any exception
inside the reward is a bug and is raised, never turned into 0.0.

>>> gold = '<tool_call>{"name": "f", "arguments": {"a": 1}}</tool_call>'
>>> tools = '[{"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}}}]'
>>> schema_reward()([gold, "no call"], tools=[tools, tools])
[1.0, -1.0]
>>> call_match_reward()([gold], gold_calls=['[{"name": "f", "arguments": {"a": 1}}]'])
[3.0]
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field
from scipy.optimize import linear_sum_assignment

from toolmend._errors import ConfigError
from toolmend._schema import REFS, ErrorCode, ToolCall
from toolmend.benchmarks.reflection_bench._reward import RewardConfig, Similarity, reward_breakdown
from toolmend.check import Checker
from toolmend.formats import load_tools, parse_calls

__all__ = [
    "CallMatchConfig",
    "RewardFn",
    "SchemaRewardConfig",
    "call_match_reward",
    "call_match_score",
    "completion_text",
    "reflection_config",
    "structured_reflection_reward",
    "schema_reward",
    "schema_score",
]

RewardFn = Callable[..., list[float | None]]


def completion_text(completion: Any) -> str:
    """The text of one TRL completion: a string, or a conversational list of messages."""
    if isinstance(completion, str):
        return completion
    if isinstance(completion, list) and all(isinstance(m, dict) for m in completion):
        return "".join(
            str(m.get("content") or "") for m in completion if m.get("role", "assistant") == "assistant"
        )
    raise ConfigError(f"a completion is a string or a list of messages, not {type(completion).__name__}")


def _column(columns: dict[str, Any], name: str, n: int) -> list[Any]:
    if name not in columns:
        raise ConfigError(f"the reward needs the dataset column {name!r}; got {sorted(columns)}")
    values = list(columns[name])
    if len(values) != n:
        raise ConfigError(f"{n} completions but {len(values)} values in column {name!r}")
    return values


def _json(value: Any) -> Any:
    return json.loads(value) if isinstance(value, str) else value


class SchemaRewardConfig(BaseModel):
    """Format- and schema-validity: ``max_reward`` minus a penalty per finding, floored at ``min_reward``.

    Unlisted codes cost ``default_penalty``. A reply with no call at all where calls are
    expected scores ``min_reward``.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    max_reward: float = 1.0
    min_reward: float = -1.0
    default_penalty: float = 0.5
    penalties: dict[ErrorCode, float] = Field(
        default_factory=lambda: {  # type: ignore[arg-type]
            "invalid_format": 1.0,
            "wrong_tool_name": 1.0,
            "missing_required": 0.5,
            "invalid_type": 0.5,
            "invalid_value": 0.5,
            "empty_value": 0.5,
            "positional_argument": 0.5,
            "redundant_parameter": 0.25,
            "redundant_information": 0.25,
            "duplicate_call": 0.25,
            "wrong_tool_count": 0.25,
        }
    )


def schema_score(
    text: str, tools: Any, config: SchemaRewardConfig | None = None, expected_count: int | None = None
) -> float:
    """The schema reward of one reply text against the offered ``tools`` (any spec dialect or
    JSON text of a list of them); ``expected_count`` (the gold's number of calls, when known)
    adds ``wrong_tool_count`` and lets intended repeats pass."""
    cfg = config or SchemaRewardConfig()
    parsed = parse_calls(text)
    if not parsed.calls:
        return cfg.min_reward
    findings = [*parsed.findings, *Checker(load_tools(_json(tools))).check(parsed.calls, expected_count)]
    penalty = sum(cfg.penalties.get(f.code, cfg.default_penalty) for f in findings)
    return max(cfg.min_reward, cfg.max_reward - penalty)


def schema_reward(
    config: SchemaRewardConfig | None = None, *, tools_column: str = "tools", gold_column: str = "gold_calls"
) -> RewardFn:
    """A reward function scoring each completion with :func:`schema_score` against its row's
    tools (and the gold's call count, when the ``gold_calls`` column is there)."""

    def schema_valid(completions: list[Any], **columns: Any) -> list[float | None]:
        n = len(completions)
        tools = _column(columns, tools_column, n)
        counts = (
            [len(_as_calls(g)) for g in _column(columns, gold_column, n)]
            if gold_column in columns
            else [None] * n
        )
        return [
            schema_score(completion_text(c), t, config, k)
            for c, t, k in zip(completions, tools, counts, strict=True)
        ]

    return schema_valid


class CallMatchConfig(BaseModel):
    """ToolRL's graded call match (Qian et al. 2025, §3.3): name Jaccard + per matched call the
    key Jaccard + the count of gold keys whose value is equal, over its maximum
    ``1 + |gold calls| + Σ |gold keys|``, mapped linearly onto ``[low, high]`` (ToolRL: [-3, 3]).
    The weights scale the three parts (ToolRL: 1 each)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    low: float = -3.0
    high: float = 3.0
    name_weight: float = Field(1.0, ge=0)
    keys_weight: float = Field(1.0, ge=0)
    values_weight: float = Field(1.0, ge=0)


def _as_calls(value: Any) -> list[ToolCall]:
    data = _json(value)
    if not isinstance(data, list):
        raise ConfigError(f"gold calls must be a JSON list of calls, got {type(data).__name__}")
    return [ToolCall.model_validate(c, context=REFS) for c in data]


def _jaccard(a: set[Any], b: set[Any]) -> float:
    return len(a & b) / len(a | b) if a | b else 1.0


def _pair_score(g: ToolCall, p: ToolCall, cfg: CallMatchConfig) -> float:
    if g.name != p.name:
        return 0.0
    keys = cfg.keys_weight * _jaccard(set(g.arguments), set(p.arguments))
    values = cfg.values_weight * sum(
        1 for k, v in g.arguments.items() if k in p.arguments and p.arguments[k] == v
    )
    return keys + values


def call_match_score(
    pred: Sequence[ToolCall], gold: Sequence[ToolCall], config: CallMatchConfig | None = None
) -> float:
    """The graded match of ``pred`` against ``gold`` (calls paired by the best total score)."""
    cfg = config or CallMatchConfig()
    best = cfg.name_weight + sum(cfg.keys_weight + cfg.values_weight * len(g.arguments) for g in gold)
    score = cfg.name_weight * _jaccard({c.name for c in gold}, {c.name for c in pred})
    if gold and pred:
        matrix = np.array([[_pair_score(g, p, cfg) for p in pred] for g in gold])
        rows, cols = linear_sum_assignment(matrix, maximize=True)
        score += float(matrix[rows, cols].sum())
    ratio = score / best if best else 1.0
    return cfg.low + (cfg.high - cfg.low) * ratio


def call_match_reward(config: CallMatchConfig | None = None, *, gold_column: str = "gold_calls") -> RewardFn:
    """A reward function scoring each completion's parsed calls with :func:`call_match_score`."""

    def call_match(completions: list[Any], **columns: Any) -> list[float | None]:
        golds = _column(columns, gold_column, len(completions))
        return [
            call_match_score(parse_calls(completion_text(c)).calls, _as_calls(g), config)
            for c, g in zip(completions, golds, strict=True)
        ]

    return call_match


def reflection_config(preset: Literal["paper", "released"] | RewardConfig = "paper") -> RewardConfig:
    """Tool-Reflection-Bench's reward settings: ``paper`` (eq. 11-25 with the released weights)
    or ``released`` (the authors' code, call gate included)."""
    if isinstance(preset, RewardConfig):
        return preset
    if preset == "paper":
        return RewardConfig()
    if preset == "released":
        return RewardConfig.released()
    raise ConfigError(f"unknown reflection reward preset {preset!r}; expected paper or released")


def structured_reflection_reward(
    preset: Literal["paper", "released"] | RewardConfig = "paper",
    *,
    gold_column: str = "ground_truth",
    sim: Similarity | None = None,
) -> RewardFn:
    """Tool-Reflection-Bench's structured-reflection reward in [0, 1] against ``ground_truth``.

    Unlike :func:`toolmend.benchmarks.reflection_bench.reflection_reward`, which logs and
    scores 0 so that an evaluation goes on (and scores a failing ``sim`` term 0), this raises:
    in training a silent 0 is a bug that looks like a lesson.
    """
    cfg = reflection_config(preset)
    errors: list[BaseException] = []

    def watched(a: str, b: str) -> float:
        assert sim is not None
        try:
            return sim(a, b)
        except Exception as exc:
            errors.append(exc)
            raise

    def reflection(completions: list[Any], **columns: Any) -> list[float | None]:
        golds = _column(columns, gold_column, len(completions))
        out: list[float | None] = []
        for c, g in zip(completions, golds, strict=True):
            value = float(
                reward_breakdown(completion_text(c), g, cfg, watched if sim is not None else None).reward
            )
            if errors:
                raise errors.pop()
            out.append(value)
        return out

    return reflection

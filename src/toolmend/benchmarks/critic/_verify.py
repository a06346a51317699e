"""Label checks for critique samples: is an injected error really an error of its label?

Every sample a suite writes is checked in the environment it will be shown in (after an
evolution, in the evolved one), APIGen-style — a format check (the checklist), an execution
check (the environment) and a semantic check (the call's effect on the world):

- **internal error**: the corrupted call fails the checklist or the environment with the
  intended category. A tool-selection error is the reverse: the wrong tool is offered, valid and
  executes, but it does not reach the gold step's effect (state change and result). A value
  taken from elsewhere in the context passes the schema, so it too must change the effect.
- **every sample**: the gold correction passes the checklist and executes after the history;
  for an external fault, the failed call itself is valid, the fault is really raised, and the
  next subtask (when the gold names one) executes without the failed call's output.
- **evolved samples** also keep the task: every argument value of the gold calls that the
  original request states is still stated by the evolved request (verbatim or in one of the
  meaning-preserving renderings of :func:`renderings`).

:func:`check_sample` returns the name of the first check that fails, or ``None``; the builder
drops such samples and counts them per check (:data:`CHECKS`).

>>> sorted(renderings("2025-07-26"))[:2]
['07/26/2025', '2025-07-26']
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from toolmend._errors import ConfigError
from toolmend._schema import ERROR_CODES, Tool, ToolCall
from toolmend.check import Checker, critictool_category
from toolmend.env import Environment, ToolResponse

__all__ = [
    "CHECKS",
    "Planned",
    "check_sample",
    "effect",
    "gold_values",
    "observed_categories",
    "renderings",
    "same_effect",
]

CHECKS: tuple[str, ...] = (
    "not_an_error",
    "label_mismatch",
    "selection_not_silent",
    "selection_same_effect",
    "gold_fails",
    "fault_not_raised",
    "failed_call_invalid",
    "next_step_fails",
    "query_drops_gold",
)
"""The checks, in the order they are reported."""

EnvFactory = Callable[[], Environment]


@dataclass
class Planned:
    """One sample before it is written: what kind, at which step, what the history ends with.

    ``kind``: ``error`` (internal, ``wrong`` is the corrupted call and ``label`` its category),
    ``ok`` (error-free, the gold is step ``k + 1`` or FinishAction) or ``env`` (``label`` is the
    fault kind at step ``k``; ``next_step`` the independent subtask the gold names, if any).
    """

    kind: str
    k: int
    label: str
    wrong: ToolCall | None = None
    next_step: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)


def _category(code: Any) -> str | None:
    return critictool_category(code) if code in ERROR_CODES else None


def observed_categories(
    wrong: ToolCall,
    gold: ToolCall,
    tools: Sequence[Tool],
    response: ToolResponse,
    *,
    checker: Checker | None = None,
) -> set[str]:
    """The CriticTool categories the checklist and the environment's answer give ``wrong``
    (``checker``: the one compiled for ``tools``, when the caller has it)."""
    checker = checker if checker is not None else Checker.cached(tools)
    found = {_category(f.code) for f in checker.check_call(wrong)}
    found |= {_category(f.get("code")) for f in response.findings}
    if response.source == "invalid" and response.status == 404:
        found.add("tool_hallucination_error")
    same_slots = wrong.name == gold.name and set(wrong.arguments) == set(gold.arguments)
    if response.source == "execution" and not response.ok and same_slots:
        found.add("parameters_value_error")  # the world refused a value the schema allows
    found.discard(None)
    return {str(c) for c in found}


def effect(env: Environment, response: ToolResponse) -> str:
    """What a call did: the world's state afterwards (if the environment has one) and its result."""
    state = env.context.get("state")
    snapshot = state.model_dump(mode="json") if isinstance(state, BaseModel) else None
    result = response.data if response.ok else {"error": response.error}
    return json.dumps([snapshot, result], sort_keys=True, default=str)


def same_effect(
    env: Environment, response: ToolResponse, other: Environment, other_response: ToolResponse
) -> bool:
    """Whether two calls did the same (``effect(env, response) == effect(other, other_response)``),
    without serialising two whole worlds: the states are compared as models, field by field."""
    state, other_state = env.context.get("state"), other.context.get("state")
    models = isinstance(state, BaseModel) or isinstance(other_state, BaseModel)
    if models and (type(state) is not type(other_state) or state != other_state):
        return False
    result = response.data if response.ok else {"error": response.error}
    other_result = other_response.data if other_response.ok else {"error": other_response.error}
    return json.dumps(result, sort_keys=True, default=str) == json.dumps(
        other_result, sort_keys=True, default=str
    )


def _after(make: EnvFactory, prefix: Sequence[ToolCall], call: ToolCall) -> tuple[Environment, ToolResponse]:
    env = make()
    for earlier in prefix:
        env.execute(earlier)
    return env, env.execute(call)


def _valid(call: ToolCall, checker: Checker) -> bool:
    return not checker.check_call(call)


def _gold_runs(make: EnvFactory, prefix: Sequence[ToolCall], gold: ToolCall, checker: Checker) -> bool:
    return _valid(gold, checker) and _after(make, prefix, gold)[1].ok


def _check_internal(
    plan: Planned, calls: Sequence[ToolCall], tools: Sequence[Tool], make: EnvFactory, checker: Checker
) -> str | None:
    assert plan.wrong is not None
    gold, wrong, prefix = calls[plan.k], plan.wrong, calls[: plan.k]
    if wrong.name == gold.name and wrong.arguments == gold.arguments:
        return "not_an_error"
    env, response = _after(make, prefix, wrong)
    seen = observed_categories(wrong, gold, tools, response, checker=checker)
    gold_env, gold_response = _after(make, prefix, gold)
    changes_effect = not same_effect(env, response, gold_env, gold_response)
    if plan.label == "tool_select_error":
        # Valid for the checklist; the world may still refuse it (an id of another kind), which
        # is one way of not reaching the gold step's effect.
        offered = {t.name for t in tools}
        if wrong.name == gold.name or wrong.name not in offered or not _valid(wrong, checker):
            return "selection_not_silent"
        if not changes_effect:
            return "selection_same_effect"
    elif plan.label not in seen:
        # A value taken from elsewhere in the context is valid: it must then change what happens.
        same_slots = wrong.name == gold.name and set(wrong.arguments) == set(gold.arguments)
        quiet = not seen and response.ok and changes_effect
        if not (plan.label == "parameters_value_error" and same_slots and quiet):
            return "label_mismatch"
    return None if _valid(gold, checker) and gold_response.ok else "gold_fails"


def _check_external(
    plan: Planned, calls: Sequence[ToolCall], checker: Checker, make: EnvFactory, faulty: EnvFactory
) -> str | None:
    failed, prefix = calls[plan.k], calls[: plan.k]
    if not _valid(failed, checker):
        return "failed_call_invalid"
    if _after(faulty, prefix, failed)[1].source != "fault":
        return "fault_not_raised"
    if plan.next_step is not None:
        # The next subtask runs without the failed call's output, as a critic that skips would.
        between = [c for j, c in enumerate(calls[: plan.next_step]) if j != plan.k]
        if not _gold_runs(make, between, calls[plan.next_step], checker):
            return "next_step_fails"
    return None


def check_sample(
    plan: Planned,
    calls: Sequence[ToolCall],
    tools: Sequence[Tool],
    make: EnvFactory,
    *,
    faulty: EnvFactory | None = None,
    checker: Checker | None = None,
) -> str | None:
    """The first check ``plan`` fails on the trajectory ``calls`` (concrete gold calls), or ``None``.

    ``make`` returns a fresh environment of the trajectory; ``faulty`` one that raises the
    external sample's fault (required for ``env`` samples); ``checker``: the one compiled for
    ``tools``, when the caller already has it (finding it serialises every tool).
    """
    checker = checker if checker is not None else Checker.cached(tools)
    if plan.kind == "error":
        return _check_internal(plan, calls, tools, make, checker)
    if plan.kind == "ok":
        nxt = plan.k + 1
        ok = nxt >= len(calls) or _gold_runs(make, calls[:nxt], calls[nxt], checker)
        return None if ok else "gold_fails"
    if faulty is None:
        raise ConfigError("an external sample needs the faulty environment")
    return _check_external(plan, calls, checker, make, faulty)


# -- the task's values in the request ---------------------------------------------------------

_MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September",
           "October", "November", "December")  # fmt: skip


def renderings(value: Any) -> set[str]:
    """Ways of writing ``value`` in a request that keep its meaning (the value itself first)."""
    text = value if isinstance(value, str) else json.dumps(value)
    out = {text}
    if isinstance(value, str) and re.fullmatch(r"\d{4}-\d{2}-\d{2}", value):
        try:
            day = dt.date.fromisoformat(value)
        except ValueError:
            return out
        month = _MONTHS[day.month - 1]
        out |= {f"{month} {day.day}, {day.year}", f"{day.day} {month} {day.year}",
                f"{day.month:02d}/{day.day:02d}/{day.year}"}  # fmt: skip
    if isinstance(value, str) and re.fullmatch(r"\d{2}:\d{2}", value):
        hour, minute = int(value[:2]), int(value[3:])
        out.add(f"{(hour - 1) % 12 + 1}:{minute:02d} {'am' if hour < 12 else 'pm'}")
    return out


def _literals(value: Any) -> list[Any]:
    if isinstance(value, dict):
        return [x for v in value.values() for x in _literals(v)]
    if isinstance(value, list):
        return [x for v in value for x in _literals(v)]
    if isinstance(value, bool) or value is None:
        return []
    return [value] if isinstance(value, str | int | float) else []


def _says(query: str, value: Any) -> bool:
    low = query.lower()
    return any(r.lower() in low for r in renderings(value))


def gold_values(query: str, calls: Sequence[ToolCall]) -> list[Any]:
    """The literal argument values of ``calls`` that ``query`` states (3 characters or more)."""
    seen: list[Any] = []
    for call in calls:
        for value in _literals(call.arguments):
            if len(str(value)) >= 3 and value not in seen and _says(query, value):
                seen.append(value)
    return seen


def query_keeps_gold(original: str, evolved: str, calls: Sequence[ToolCall]) -> bool:
    """Whether ``evolved`` still states every gold value that ``original`` states."""
    return all(_says(evolved, v) for v in gold_values(original, calls))

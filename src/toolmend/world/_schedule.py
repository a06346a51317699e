"""Fault schedules: which gold step of which task fails, and how.

A fault attaches to a gold step, so that what the model did about it can be attributed. Gold
step ``i`` calls tool ``X`` for the ``n``-th time in the gold trajectory; the fault fires on the
episode's ``n``-th call of ``X`` (calls are counted per tool, invalid ones included). Transient
faults fail that one call; ``permission_denied`` and ``removed_tool`` persist for every later
call of the tool; ``wrong_shape`` answers that one call with the right data in the wrong shape.

Schedules are drawn from ``random.Random(f"{seed}:{profile}:{task id}")``: the same seed, profile
and task give the same faults on every machine.

>>> from toolmend.world import generate_tasks
>>> tasks = generate_tasks(0)
>>> schedule = FaultSchedule.named("heavy", seed=0)
>>> all(schedule.for_task(t) for t in tasks)
True
>>> FaultSchedule.named("none").for_task(tasks[0])
[]
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from toolmend._errors import ConfigError, first_error
from toolmend._jsontext import loads, read_text
from toolmend.env._faults import FAULT_KINDS, fault_response
from toolmend.env._response import ToolResponse, error_body
from toolmend.world._tasks import Task

__all__ = [
    "PERSISTENT_KINDS",
    "SCHEDULED_KINDS",
    "TRANSIENT_KINDS",
    "FaultSchedule",
    "ScheduledFault",
    "ScheduledKind",
    "scheduled_fault_response",
]

ScheduledKind = Literal[
    "timeout",
    "rate_limit",
    "permission_denied",
    "service_unavailable",
    "connection_reset",
    "wrong_shape",
    "removed_tool",
]
SCHEDULED_KINDS: tuple[ScheduledKind, ...] = get_args(ScheduledKind)
TRANSIENT_KINDS: frozenset[str] = frozenset(
    {"timeout", "rate_limit", "service_unavailable", "connection_reset"}
)
"""Faults that a retry of the same call gets past."""
PERSISTENT_KINDS: frozenset[str] = frozenset({"permission_denied", "removed_tool"})
assert set(FAULT_KINDS) <= set(SCHEDULED_KINDS)


class ScheduledFault(BaseModel):
    """One fault of one task: the gold ``step`` it attaches to, and what the episode sees."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    step: int = Field(ge=0)
    kind: ScheduledKind
    tool: str = ""
    """Filled from the task: the gold step's tool."""
    call: int = Field(default=0, ge=0)
    """Filled from the task: which call of ``tool`` (1-based) fires it."""

    @property
    def persistent(self) -> bool:
        return self.kind in PERSISTENT_KINDS

    def fires(self, tool: str, call_number: int) -> bool:
        """Whether call #``call_number`` of ``tool`` meets this fault."""
        if tool != self.tool:
            return False
        return call_number >= self.call if self.persistent else call_number == self.call


def scheduled_fault_response(kind: ScheduledKind, tool: str) -> ToolResponse:
    """What a call of ``tool`` meets under a scheduled fault of ``kind`` (every kind but
    ``wrong_shape``, which wraps the tool's real answer and so belongs to the episode).

    >>> scheduled_fault_response("removed_tool", "cd").status
    404
    """
    if kind == "removed_tool":
        body = error_body(
            404, "tool_removed", f"{tool} has been removed from this service and no longer exists."
        )
        return ToolResponse(
            content=json.dumps(body, ensure_ascii=False),
            data=body,
            error="tool_removed",
            source="fault",
            status=404,
            tool=tool,
        )
    if kind == "wrong_shape":
        raise ConfigError("a wrong_shape fault wraps the real answer; the episode builds it")
    return fault_response(kind, tool)


class _Profile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    rate: float = Field(ge=0.0, le=1.0)
    """Probability that a task gets faults at all."""
    kinds: list[ScheduledKind]
    max_per_task: int = Field(default=1, ge=1)


_PROFILES: dict[str, _Profile] = {
    "none": _Profile(rate=0.0, kinds=["timeout"]),
    "light": _Profile(rate=0.3, kinds=["connection_reset", "rate_limit", "service_unavailable", "timeout"]),
    "heavy": _Profile(rate=1.0, kinds=list(SCHEDULED_KINDS), max_per_task=2),
}


class FaultSchedule(BaseModel):
    """A named, seeded way of attaching faults to tasks (``none``, ``light``, ``heavy``, or a file).

    A file is JSON: either a profile (``{"rate": 0.5, "kinds": ["timeout"], "max_per_task": 1}``),
    explicit faults per task id (``{"tasks": {"world-0-todo_add-1": [{"step": 0, "kind":
    "timeout"}]}}``), or both (explicit entries win for their tasks).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = "none"
    seed: int = 0
    profile: _Profile = Field(default_factory=lambda: _PROFILES["none"])
    tasks: dict[str, list[ScheduledFault]] = Field(default_factory=dict)

    @classmethod
    def named(cls, spec: str, seed: int = 0) -> FaultSchedule:
        """``none``, ``light``, ``heavy``, or the path of a JSON schedule file."""
        if spec in _PROFILES:
            return cls(name=spec, seed=seed, profile=_PROFILES[spec])
        path = Path(spec)
        if not path.is_file():
            raise ConfigError(
                f"--faults must be none, light, heavy or a JSON file; {spec!r} is none of these"
            )
        try:
            raw = loads(read_text(path))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise ConfigError(f"{path}: not a JSON fault schedule ({exc})") from None
        if not isinstance(raw, dict):
            raise ConfigError(f"{path}: a fault schedule is a JSON object, got {type(raw).__name__}")
        try:
            tasks = {
                k: [ScheduledFault.model_validate(f) for f in v] for k, v in (raw.get("tasks") or {}).items()
            }
            profile = _Profile.model_validate(
                {"rate": 0.0, "kinds": ["timeout"]}
                | {k: raw[k] for k in ("rate", "kinds", "max_per_task") if k in raw}
            )
        except (ValidationError, AttributeError, TypeError) as exc:
            raise ConfigError(f"{path}: invalid fault schedule: {_first_error(exc)}") from None
        unknown = set(raw) - {"rate", "kinds", "max_per_task", "tasks"}
        if unknown:
            raise ConfigError(
                f"{path}: unknown field(s) {', '.join(sorted(unknown))}; expected rate, kinds, max_per_task, tasks"
            )
        digest = hashlib.sha256(path.read_bytes()).hexdigest()[:12]
        return cls(name=f"{path.name}@{digest}", seed=seed, profile=profile, tasks=tasks)

    @property
    def identity(self) -> str:
        """What makes two runs' faults the same: profile name (file digest) and seed."""
        return f"{self.name}:seed={self.seed}"

    def for_task(self, task: Task) -> list[ScheduledFault]:
        """The faults of ``task``, each bound to its gold step's tool and call number."""
        from toolmend.world._grading import WRITE_TOOLS

        # A wrong-shape answer to a write would invite a duplicate write, so wrong shapes go to
        # reads only.
        return self.for_steps(
            task.id, [c.name for c in task.calls], wrong_shape=lambda t: t not in WRITE_TOOLS
        )

    def for_steps(
        self, task_id: str, tools: Sequence[str], *, wrong_shape: Callable[[str], bool] = lambda _: False
    ) -> list[ScheduledFault]:
        """The faults of the task ``task_id`` whose gold steps call ``tools`` in order, each bound
        to its step's tool and call number; ``wrong_shape`` says which tools may get that kind
        (a drawn schedule skips it elsewhere, a file that asks for it elsewhere is refused).

        >>> schedule = FaultSchedule.named("heavy", seed=1)
        >>> [(f.tool, f.call, f.kind) for f in schedule.for_steps("t", ["cd", "ls", "cd"])]
        [('cd', 2, 'permission_denied')]
        """
        explicit = task_id in self.tasks
        chosen = list(self.tasks[task_id]) if explicit else self._draw(task_id, tools, wrong_shape)
        out: list[ScheduledFault] = []
        for fault in chosen:
            if fault.step >= len(tools):
                raise ConfigError(f"fault schedule {self.name}: {task_id} has no gold step {fault.step}")
            tool = tools[fault.step]
            if fault.kind == "wrong_shape" and not wrong_shape(tool):
                raise ConfigError(
                    f"fault schedule {self.name}: {task_id} step {fault.step}: {tool} cannot get a wrong_shape fault"
                )
            call = sum(t == tool for t in tools[: fault.step + 1])
            out.append(fault.model_copy(update={"tool": tool, "call": call}))
        return out

    def _draw(
        self, task_id: str, tools: Sequence[str], wrong_shape: Callable[[str], bool]
    ) -> list[ScheduledFault]:
        profile = self.profile
        if profile.rate <= 0 or not tools:
            return []
        rng = random.Random(f"{self.seed}:{self.name}:{task_id}")
        if rng.random() >= profile.rate:
            return []
        n = min(rng.randint(1, profile.max_per_task), len(tools))
        steps = sorted(rng.sample(range(len(tools)), n))
        faults: list[ScheduledFault] = []
        tools_hit: set[str] = set()
        for step in steps:
            tool = tools[step]
            # One fault per tool and task, so that each one's outcome is its own (a permission
            # denied behind a timeout would make the timeout unrecoverable).
            kinds = [k for k in profile.kinds if k != "wrong_shape" or wrong_shape(tool)]
            if not kinds or tool in tools_hit:
                continue
            tools_hit.add(tool)
            kind = rng.choice(kinds)
            faults.append(ScheduledFault(step=step, kind=kind))
        return faults


def _first_error(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        where, msg = first_error(exc)
        return f"{where}: {msg}" if where else msg
    return str(exc)


def schedule_data(faults: list[ScheduledFault]) -> list[dict[str, Any]]:
    """Faults as JSON-able dicts (for sample metadata)."""
    return [f.model_dump() for f in faults]

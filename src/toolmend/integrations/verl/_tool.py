"""``WorldTool``: one world tool as a verl ``BaseTool`` (needs verl installed).

verl's ``tool_agent`` loop (0.9) creates, executes and releases an instance for every single
call, passing the trajectory's ``AgentData``; so the world's state cannot live in an instance.
It lives in the trajectory: each executed call is logged in ``agent_data.extra_fields
["toolmend_calls"]``, and every call replays the log in a fresh world for the task (worlds are
small and seeded: about 10 ms a call on a 2-core CPU, most of it grading setup, whatever the
length of the log) before it runs. The log
reaches :func:`~toolmend.integrations.verl.compute_score` through ``extra_info`` (verl adds the
trajectory's extra fields to it), which grades the same calls. Without ``agent_data`` (a loop
that keeps one instance per trajectory), the instance keeps the log.

An invalid call runs through the world's checker like any other and gets the coded error body a
real API sends (``{"error": {"code": 400, "type": "invalid_request", "details": [{"code":
"missing_required", ...}]}}``), with step reward ``-invalid_penalty`` (``config``, default 0.1).
``calc_reward`` is the world's ``partial`` reward of the trajectory so far.

The schema verl validates from the YAML keeps only ``type``, ``description`` and ``enum`` of each
parameter; the model is shown toolmend's full schema (patterns, bounds, nested objects), the one
the checker enforces.
"""

from __future__ import annotations

from typing import Any, cast
from uuid import uuid4

from pydantic import BaseModel, ConfigDict
from verl.tools.base_tool import BaseTool
from verl.tools.schemas import OpenAIFunctionToolSchema, ToolResponse

from toolmend._errors import ConfigError
from toolmend._schema import ToolCall
from toolmend.formats import to_openai_tool
from toolmend.integrations.verl._reward import calls_from_json, replay
from toolmend.train._world_reward import _task
from toolmend.world import WORLD_TOOLS

__all__ = ["WorldTool"]

LOG = "toolmend_calls"


class _Function(BaseModel):
    model_config = ConfigDict(extra="allow")

    name: str


class _FullSchema(BaseModel):
    """An OpenAI tool schema that dumps every field it was given (verl reads ``.function.name``
    and ``model_dump(exclude_unset=True, exclude_none=True)``)."""

    model_config = ConfigDict(extra="allow")

    type: str
    function: _Function


class WorldTool(BaseTool):
    """One of toolmend's world tools in verl's tool lifecycle (see the module docstring)."""

    def __init__(self, config: dict[str, Any], tool_schema: OpenAIFunctionToolSchema | None) -> None:
        if tool_schema is None:
            raise ConfigError("WorldTool needs the tool_schema of a world tool in the tools YAML")
        name = tool_schema.function.name
        spec = next((t for t in WORLD_TOOLS.tools if t.name == name), None)
        if spec is None:
            raise ConfigError(f"{name!r} is not a world tool; the tools YAML names one per entry")
        self.config = dict(config or {})
        self.tool_schema = cast(OpenAIFunctionToolSchema, _FullSchema.model_validate(to_openai_tool(spec)))
        self.name = name
        self.invalid_penalty = float(self.config.get("invalid_penalty", 0.1))
        self._instances: dict[str, dict[str, Any]] = {}

    def get_openai_tool_schema(self) -> Any:
        return self.tool_schema

    async def create(
        self, instance_id: str | None = None, create_kwargs: dict[str, Any] | None = None, **kwargs: Any
    ) -> tuple[str, ToolResponse]:
        spec = dict(create_kwargs or kwargs)
        if not isinstance(spec.get("task_id"), str):
            raise ConfigError(
                f"{self.name}: create_kwargs need the row's task_id (extra_info.tools_kwargs of toolmend's export)"
            )
        instance_id = instance_id or str(uuid4())
        self._instances[instance_id] = {
            "task": _task(spec["task_id"], spec.get("seed")),
            "faults": str(spec.get("faults") or self.config.get("faults") or "none"),
            "history": calls_from_json(spec.get("history") or "[]"),
            "log": [],
        }
        return instance_id, ToolResponse()

    def _log(self, instance_id: str, agent_data: Any) -> list[dict[str, Any]]:
        if agent_data is not None and isinstance(getattr(agent_data, "extra_fields", None), dict):
            log: list[dict[str, Any]] = agent_data.extra_fields.setdefault(LOG, [])
            return log
        return list(self._instances[instance_id]["log"])

    async def execute(
        self, instance_id: str, parameters: dict[str, Any], **kwargs: Any
    ) -> tuple[ToolResponse, float, dict[str, Any]]:
        session = self._instances.get(instance_id)
        if session is None:
            raise ConfigError(f"{self.name}: no instance {instance_id!r}; call create() first")
        agent_data = kwargs.get("agent_data")
        log = self._log(instance_id, agent_data)
        arguments = parameters if isinstance(parameters, dict) else {}
        _, episode = replay(session["task"], session["faults"], [*session["history"], *calls_from_json(log)])
        message = episode.execute(ToolCall(name=self.name, arguments=arguments), turn=len(episode.steps))
        step = episode.steps[-1]
        log.append({"name": self.name, "arguments": arguments, "ok": step.ok, "codes": list(step.codes)})
        if agent_data is None or not isinstance(getattr(agent_data, "extra_fields", None), dict):
            session["log"] = log
        invalid = step.source == "invalid"
        reward = -self.invalid_penalty if invalid else 0.0
        return (
            ToolResponse(text=message.content),
            reward,
            {"ok": step.ok, "invalid": invalid, "codes": step.codes},
        )

    async def calc_reward(self, instance_id: str, **kwargs: Any) -> float:
        session = self._instances[instance_id]
        log = self._log(instance_id, kwargs.get("agent_data"))
        env, episode = replay(
            session["task"], session["faults"], [*session["history"], *calls_from_json(log)]
        )
        evidence = "\n".join(s.content for s in episode.steps if s.ok)
        return float(env.reward(answer=evidence))

    async def release(self, instance_id: str, **kwargs: Any) -> None:
        self._instances.pop(instance_id, None)

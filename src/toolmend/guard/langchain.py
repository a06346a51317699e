"""A LangChain v1 agent middleware that puts the guard between the model and the tools
(extra ``langchain``).

::

    from langchain.agents import create_agent
    from toolmend.guard.langchain import GuardMiddleware

    agent = create_agent(model, tools=[get_weather], middleware=[GuardMiddleware()])

In ``wrap_model_call`` the model's tool calls — ``tool_calls`` and the ``invalid_tool_calls``
whose arguments did not parse, which LangChain agents otherwise end on — are checked against
the request's tools: safe repairs are applied, the rest is re-asked (a real second model call
with a targeted message and a ``ToolMessage`` for every call id), so only valid calls reach the
tools. When the budget is spent the agent gets an ``AIMessage`` without calls that says so
(``response_metadata["toolmend_guard"]["status"] == "aborted"``), never a silent success.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from toolmend._errors import MissingExtraError
from toolmend._schema import Message
from toolmend.guard._allowed import AllowedCalls
from toolmend.guard._driver import GuardOutcome, Reply, drive, drive_sync
from toolmend.guard._engine import Guard
from toolmend.guard._policy import GuardPolicy
from toolmend.guard._turn import Turn

try:
    from langchain.agents.middleware import AgentMiddleware, ModelRequest, ModelResponse
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
    from langchain_core.utils.function_calling import convert_to_openai_tool
except ImportError as exc:  # pragma: no cover - exercised without the extra
    raise MissingExtraError("langchain", "langchain", "toolmend.guard.langchain") from exc

__all__ = ["GuardMiddleware", "to_langchain_messages"]


def to_langchain_messages(messages: Sequence[Message]) -> list[AIMessage | HumanMessage | ToolMessage]:
    """toolmend messages as LangChain messages."""
    out: list[AIMessage | HumanMessage | ToolMessage] = []
    for m in messages:
        if m.role == "assistant":
            calls = [{"name": c.name, "args": c.model_dump(mode="json")["arguments"], "id": c.id, "type": "tool_call"}
                     for c in m.tool_calls]  # fmt: skip
            out.append(AIMessage(content=m.content, tool_calls=calls))
        elif m.role == "tool":
            out.append(ToolMessage(content=m.content, tool_call_id=m.tool_call_id or "", status="error"))
        else:
            out.append(HumanMessage(content=m.content))
    return out


def _ai(response: ModelResponse) -> AIMessage | None:
    return next((m for m in response.result if isinstance(m, AIMessage)), None)


def _turn(ai: AIMessage | None) -> Turn:
    if ai is None:
        return Turn()
    calls: list[dict[str, Any]] = [
        {"id": c.get("id"), "name": c["name"], "arguments": c.get("args") or {}} for c in ai.tool_calls
    ]
    calls += [
        {"id": c.get("id"), "name": c.get("name") or "", "arguments": c.get("args") or ""}
        for c in ai.invalid_tool_calls
    ]
    text = ai.content if isinstance(ai.content, str) else ""
    return Turn.from_native(text, calls)


def _allowed(request: ModelRequest) -> AllowedCalls:
    """The request's ``tool_choice`` in LangChain's words (``any`` for required, a bare tool
    name for that tool) and ``parallel_tool_calls`` from its model settings."""
    tc = request.tool_choice
    if tc == "any":
        tc = "required"
    elif isinstance(tc, str) and tc not in ("auto", "none", "required"):
        tc = {"type": "function", "function": {"name": tc}}
    parallel = (request.model_settings or {}).get("parallel_tool_calls")
    return AllowedCalls.from_openai({"tool_choice": tc, "parallel_tool_calls": parallel})


def _tool_spec(tool: Any) -> dict[str, Any]:
    return tool if isinstance(tool, dict) else convert_to_openai_tool(tool)


class GuardMiddleware(AgentMiddleware):
    """See the module docstring. ``events`` collects the telemetry of every guarded model call."""

    def __init__(self, policy: GuardPolicy | None = None) -> None:
        super().__init__()
        self.policy = policy or GuardPolicy()
        self.events: list[dict[str, Any]] = []

    def _guard(self, request: ModelRequest) -> Guard | None:
        specs = [_tool_spec(t) for t in request.tools]
        return Guard(specs, self.policy) if specs else None

    def _reply(self, response: ModelResponse) -> Reply:
        ai = _ai(response)
        usage = getattr(ai, "usage_metadata", None) or {}
        return Reply(
            turn=_turn(ai),
            input_tokens=usage.get("input_tokens", 0),
            output_tokens=usage.get("output_tokens", 0),
        )

    def _result(self, outcome: GuardOutcome, last: ModelResponse) -> ModelResponse:
        self.events.extend(outcome.events)
        ai = _ai(last) or AIMessage(content="")
        meta = {
            **ai.response_metadata,
            "toolmend_guard": {"status": outcome.status, "codes": outcome.final.codes},
        }
        if outcome.status == "aborted":
            text = f"The tool call could not be made valid: {outcome.final.reason}."
            new = AIMessage(content=text, response_metadata=meta, id=ai.id)
        else:
            calls = [{"name": c.name, "args": c.model_dump(mode="json")["arguments"], "id": c.id, "type": "tool_call"}
                     for c in outcome.calls]  # fmt: skip
            # Calls printed as text and taken as calls leave only the prose around them.
            content = outcome.final.text if outcome.final.text is not None else ai.content
            new = AIMessage(content=content, tool_calls=calls, response_metadata=meta, id=ai.id,
                            usage_metadata=ai.usage_metadata)  # fmt: skip
        rest = [m for m in last.result if m is not _ai(last)]
        return ModelResponse(result=[new, *rest], structured_response=last.structured_response)

    def wrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], ModelResponse]
    ) -> ModelResponse:
        """Guard one model call (sync agents)."""
        first = handler(request)
        guard = self._guard(request)
        if guard is None:
            return first
        last = [first]

        def respond(history: list[Message]) -> Reply:
            last.append(
                handler(request.override(messages=[*request.messages, *to_langchain_messages(history)]))
            )
            return self._reply(last[-1])

        outcome = drive_sync(
            guard,
            respond,
            [],
            first=self._reply(first),
            allowed=_allowed(request),
            context=list(request.messages),
        )
        return self._result(outcome, last[-1])

    async def awrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], Awaitable[ModelResponse]]
    ) -> ModelResponse:
        """Guard one model call (async agents)."""
        first = await handler(request)
        guard = self._guard(request)
        if guard is None:
            return first
        last = [first]

        async def respond(history: list[Message]) -> Reply:
            last.append(
                await handler(request.override(messages=[*request.messages, *to_langchain_messages(history)]))
            )
            return self._reply(last[-1])

        outcome = await drive(
            guard,
            respond,
            [],
            first=self._reply(first),
            allowed=_allowed(request),
            context=list(request.messages),
        )
        return self._result(outcome, last[-1])

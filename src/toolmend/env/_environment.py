"""The environment that answers tool calls the way CriticTool's benchmark builder does.

For each call, in order:

1. **Refs** in the arguments (``Ref("API_call_0")``) are replaced by what earlier calls returned.
2. **Unknown tools** get a 404 error body.
3. **Faults** from the :class:`~toolmend.env.FaultPlan` (timeout, rate limit, …) fire.
4. **Invalid arguments** — found by the checklist and a JSON-Schema gate — get a 400 error body
   naming the problem, as real APIs answer.
5. The **cache** answers if it has seen the call.
6. A **registered** Python tool executes; domain failures (:class:`~toolmend.env.ToolFailure`)
   become error bodies.
7. Otherwise the **simulator** answers: a model when one is given, else a value shaped by
   ``Tool.returns``.

Every answer is a :class:`~toolmend.env.ToolResponse`; the environment never raises for
anything a model could have done wrong.

>>> from toolmend.world import World
>>> world = World.create(seed=0)
>>> env = world.environment()
>>> env.execute(ToolCall(name="weather_current", arguments={"city": "Lisbon"})).source
'execution'

**How outputs bind to placeholders.** A call's ``outputs`` are placeholder names
(``["API_call_0", "API_call_1"]``) and its ``output_fields`` the matching paths into the JSON
result: dotted, with integer segments indexing lists (``"flights.0.flight_id"``). Without
``output_fields``, one placeholder binds the whole result and several bind the result's
fields in the order of ``Tool.returns``. A ``Ref`` target may also carry a path itself
(``Ref("API_call_0.flights.0.price")``).
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections import Counter
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from pydantic import ValidationError
from pydantic_core import to_jsonable_python

from toolmend._errors import ConfigError
from toolmend._schema import Finding, Tool, ToolCall, UnresolvedRef, extract_path, resolve
from toolmend.env._cache import ToolCache, call_key
from toolmend.env._faults import FaultPlan, fault_response
from toolmend.env._registry import ToolRegistry
from toolmend.env._response import ToolFailed, ToolFailure, ToolResponse
from toolmend.env._simulator import synthesize
from toolmend.env._validate import BLOCKING_CODES, CheckFn, findings_body, schema_findings

log = logging.getLogger(__name__)

__all__ = ["Environment", "Simulator", "extract_path"]

Simulator = Callable[[Tool, ToolCall], Awaitable[str]]
"""An LLM that plays the API server: given the spec and the call, the response text."""


class Environment:
    """Executes tool calls: cache → registered tool → simulator, with faults and validation.

    ``registry`` holds the executable tools; ``tools`` adds specs with no implementation (the
    simulator answers them). ``context`` supplies the registry's injected parameters (a world's
    state). ``cache_scope`` returns a string mixed into cache keys (a world's state version).
    ``checker`` finds what is wrong with a call before it runs (pass :func:`toolmend.check.check`,
    as :meth:`toolmend.world.World.environment` does); without one the schema gate alone decides.
    A checker that raises is logged and the schema gate answers instead.
    """

    def __init__(
        self,
        registry: ToolRegistry | None = None,
        *,
        tools: Iterable[Tool] = (),
        cache: ToolCache | None = None,
        simulator: Simulator | None = None,
        faults: FaultPlan | None = None,
        checker: CheckFn | None = None,
        context: dict[str, Any] | None = None,
        cache_scope: Callable[[], str] | None = None,
    ) -> None:
        self.registry = registry if registry is not None else ToolRegistry()
        self.specs: dict[str, Tool] = {t.name: t for t in self.registry.tools}
        for tool in tools:
            self.specs.setdefault(tool.name, tool)
        self.cache = cache
        self.simulator = simulator
        self.faults = faults
        self.checker = checker
        self.context = dict(context or {})
        self.cache_scope = cache_scope
        self.bindings: dict[str, Any] = {}
        self.calls_per_tool: Counter[str] = Counter()
        self.history: list[tuple[ToolCall, ToolResponse]] = []

    @property
    def tools(self) -> list[Tool]:
        """Every tool the environment answers for."""
        return list(self.specs.values())

    def reset(self) -> None:
        """Forget bindings, call counts and history (the cache and any state stay)."""
        self.bindings.clear()
        self.calls_per_tool.clear()
        self.history.clear()

    # -- public API -------------------------------------------------------------------------

    def execute(self, call: ToolCall) -> ToolResponse:
        """Answer one call. With a simulator, use :meth:`aexecute` inside a running event loop."""
        step = self._before(call)
        if isinstance(step, ToolResponse):
            return self._after(call, step)
        tool, args = step
        scope = self._scope()
        if self.simulator is not None and tool.name not in self.registry:
            try:
                asyncio.get_running_loop()
            except RuntimeError:
                response = self._simulated(tool, args, asyncio.run(self._ask(tool, args)))
            else:
                raise ConfigError("an event loop is running: use `await env.aexecute(call)` with a simulator")
        else:
            response = self._answer(tool, args)
        return self._after(call, self._store(tool, args, scope, response))

    async def aexecute(self, call: ToolCall) -> ToolResponse:
        """Answer one call, awaiting the simulator when it is needed."""
        step = self._before(call)
        if isinstance(step, ToolResponse):
            return self._after(call, step)
        tool, args = step
        scope = self._scope()
        if self.simulator is not None and tool.name not in self.registry:
            response = self._simulated(tool, args, await self._ask(tool, args))
        else:
            response = self._answer(tool, args)
        return self._after(call, self._store(tool, args, scope, response))

    def resolved(self, call: ToolCall) -> ToolCall | None:
        """``call`` with every :class:`~toolmend.Ref` in its arguments replaced by what earlier
        calls bound to it (the call a model that read their results would send), the call itself
        when it holds none, or ``None`` when one refers to nothing bound yet.

        >>> from toolmend import Ref
        >>> env = Environment(tools=[Tool(name="f")])
        >>> env.bindings["API_call_0"] = {"id": 7}
        >>> env.resolved(ToolCall(name="f", arguments={"x": Ref(target="API_call_0.id")})).arguments
        {'x': 7}
        >>> env.resolved(ToolCall(name="f", arguments={"x": Ref(target="API_call_1")})) is None
        True
        """
        try:
            args = resolve(call.arguments, self.bindings)
        except UnresolvedRef:
            return None
        return call if args == call.arguments else call.model_copy(update={"arguments": args})

    def run(self, calls: Iterable[ToolCall]) -> list[ToolResponse]:
        """Answer calls in order, so later ones can use earlier outputs."""
        return [self.execute(c) for c in calls]

    async def arun(self, calls: Iterable[ToolCall]) -> list[ToolResponse]:
        """Async :meth:`run`."""
        return [await self.aexecute(c) for c in calls]

    # -- pipeline ---------------------------------------------------------------------------

    def _before(self, call: ToolCall) -> ToolResponse | tuple[Tool, dict[str, Any]]:
        """Everything up to the answer: refs, unknown tool, faults, validation, cache."""
        try:
            args = resolve(call.arguments, self.bindings)
        except UnresolvedRef as exc:
            return ToolResponse.from_error(
                400,
                "invalid_request",
                f"argument refers to {exc.target!r}, which no earlier successful call produced"
                + (f" (field path {exc.path!r})" if exc.path else ""),
                source="invalid",
                tool=call.name,
            ).model_copy(update={"error": "unresolved_ref"})
        tool = self.specs.get(call.name)
        if tool is None:
            return self._invalid(call, args, status=404, kind="not_found")
        self.calls_per_tool[call.name] += 1
        if self.faults is not None:
            fault = self.faults.decide(call.name, self.calls_per_tool[call.name])
            if fault is not None:
                return fault_response(fault, call.name)
        findings = self._findings(call, args, tool)
        if findings:
            return self._invalid(call, args, status=400, kind="invalid_request", findings=findings)
        if self.cache is not None and tool.metadata.get("cacheable", True):
            found, entry = self.cache.lookup(tool.name, args, self._scope())
            if found and isinstance(entry, dict) and "content" in entry:
                return ToolResponse(
                    content=str(entry["content"]), data=entry.get("data"), source="cache", tool=tool.name
                )
        return tool, args

    def _store(self, tool: Tool, args: dict[str, Any], scope: str, response: ToolResponse) -> ToolResponse:
        # Keyed under the scope of *before* the call: a write bumps a world's state version.
        if response.ok and self.cache is not None and tool.metadata.get("cacheable", True):
            self.cache.put(tool.name, args, {"content": response.content, "data": response.data}, scope)
        return response

    def _after(self, call: ToolCall, response: ToolResponse) -> ToolResponse:
        if response.ok:
            self._bind(call, response.data)
        self.history.append((call, response))
        return response

    def _answer(self, tool: Tool, args: dict[str, Any]) -> ToolResponse:
        registered = self.registry.get(tool.name)
        if registered is None:
            return ToolResponse.from_data(
                synthesize(tool.returns, seed=call_key(tool.name, args)), source="simulated", tool=tool.name
            )
        try:
            result = registered.invoke(args, self.context)
        except ToolFailed as exc:
            result = exc.failure
        except ValidationError as exc:
            findings = [
                Finding(
                    code="invalid_value", message=f"parameter {'.'.join(map(str, e['loc']))!r}: {e['msg']}"
                )
                for e in exc.errors()
            ]
            return self._invalid(
                ToolCall(name=tool.name, arguments=args), args, 400, "invalid_request", findings
            )
        except ConfigError:
            raise
        except Exception as exc:  # a bug in the tool: answer like a server's 500, keep running
            return ToolResponse.from_error(
                500,
                "internal_error",
                f"{tool.name} failed: {type(exc).__name__}: {exc}",
                source="execution",
                tool=tool.name,
            )
        if isinstance(result, ToolFailure):
            body = result.body()
            return ToolResponse(
                content=json.dumps(body, ensure_ascii=False),
                data=body,
                error=result.kind,
                source="execution",
                status=result.status,
                tool=tool.name,
            )
        return ToolResponse.from_data(to_jsonable_python(result), source="execution", tool=tool.name)

    async def _ask(self, tool: Tool, args: dict[str, Any]) -> str:
        assert self.simulator is not None
        return await self.simulator(tool, ToolCall(name=tool.name, arguments=args))

    def _simulated(self, tool: Tool, args: dict[str, Any], text: str) -> ToolResponse:
        try:
            data: Any = json.loads(text)
        except (json.JSONDecodeError, TypeError):
            data = None
        if isinstance(data, dict) and isinstance(data.get("error"), dict | str) and data["error"]:
            err = data["error"]
            kind = str(err.get("type", "error")) if isinstance(err, dict) else "error"
            status = err.get("code") if isinstance(err, dict) and isinstance(err.get("code"), int) else None
            return ToolResponse(
                content=text, data=data, error=kind, source="simulated", status=status, tool=tool.name
            )
        return ToolResponse(content=text, data=data, source="simulated", tool=tool.name)

    # -- helpers ----------------------------------------------------------------------------

    def _scope(self) -> str:
        # Without a cache no key is made: a world's scope is the hash of its whole state.
        if self.cache is None or self.cache_scope is None:
            return ""
        return self.cache_scope()

    def _findings(self, call: ToolCall, args: dict[str, Any], tool: Tool) -> list[Finding]:
        # Without refs the resolved arguments equal the call's: skip the copy (~10 µs a call).
        resolved = call if args == call.arguments else call.model_copy(update={"arguments": args})
        findings = [f for f in self._check(resolved) if f.code in BLOCKING_CODES]
        return findings or schema_findings(resolved, tool)

    def _check(self, call: ToolCall) -> list[Finding]:
        if self.checker is None:
            return []
        try:
            return self.checker([call], self.tools)
        except Exception:  # a checker bug must not take the environment down; say so, loudly
            log.exception(
                "the environment's checker failed on a call to %r; the schema gate answers", call.name
            )
            return []

    def _invalid(
        self,
        call: ToolCall,
        args: dict[str, Any],
        status: int,
        kind: str,
        findings: list[Finding] | None = None,
    ) -> ToolResponse:
        if findings is None:
            resolved = call.model_copy(update={"arguments": args})
            findings = [f for f in self._check(resolved) if f.code == "wrong_tool_name"]
            if not findings:
                known = ", ".join(sorted(self.specs)) or "none"
                findings = [
                    Finding(
                        code="wrong_tool_name",
                        message=f"no tool named {call.name!r}; available: {known}",
                        call=0,
                    )
                ]
        label, message, details = findings_body(findings)
        response = ToolResponse.from_error(
            status, kind, message, source="invalid", tool=call.name, details=details
        )
        return response.model_copy(update={"error": label, "findings": [f.model_dump() for f in findings]})

    def _bind(self, call: ToolCall, data: Any) -> None:
        if not call.outputs:
            return
        fields = list(call.output_fields)
        if not fields and len(call.outputs) > 1:
            returns = (self.specs[call.name].returns or {}).get("properties") or {}
            fields = list(returns) or (list(data) if isinstance(data, dict) else [])
        for i, placeholder in enumerate(call.outputs):
            if not fields:
                self.bindings[placeholder] = data
                continue
            if i >= len(fields):
                break
            try:
                self.bindings[placeholder] = extract_path(data, fields[i])
            except (KeyError, IndexError, TypeError, ValueError):
                continue  # left unbound: a later Ref to it answers "unresolved"

"""The environment: cache → execute → simulate, invalid calls, refs, faults, sync and async."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Literal

import pytest
from jsonschema import Draft202012Validator
from pydantic import BaseModel

from toolmend.env import Environment, FaultPlan, FaultRule, ToolCache, ToolFailure, ToolRegistry
from toolmend.schema import Finding, Ref, Tool, ToolCall
from toolmend.world import World


class Reading(BaseModel):
    city: str
    temp_c: float


def _counting_registry() -> tuple[ToolRegistry, list[str]]:
    seen: list[str] = []
    tools = ToolRegistry()

    @tools.tool
    def thermometer(city: str, unit: Literal["c", "f"] = "c") -> Reading:
        """Read the thermometer of a city.

        Args:
            city: City name.
            unit: Unit.
        """
        seen.append(city)
        if city == "Atlantis":
            return ToolFailure(kind="not_found", message="no such city", status=404)  # type: ignore[return-value]
        return Reading(city=city, temp_c=len(city) * 1.5)

    return tools, seen


def test_cache_hit_returns_same_without_reexecuting(tmp_path: Path) -> None:
    tools, seen = _counting_registry()
    cache = ToolCache(tmp_path / "cache.json")
    env = Environment(tools, cache=cache)
    first = env.execute(ToolCall(name="thermometer", arguments={"city": "Oslo", "unit": "c"}))
    again = env.execute(ToolCall(name="thermometer", arguments={"unit": "c", "city": "Oslo"}))
    assert first.source == "execution" and again.source == "cache"
    assert again.content == first.content and again.data == first.data
    assert seen == ["Oslo"]
    # The file survives a restart.
    reloaded = Environment(tools, cache=ToolCache(tmp_path / "cache.json"))
    assert (
        reloaded.execute(ToolCall(name="thermometer", arguments={"city": "Oslo", "unit": "c"})).source
        == "cache"
    )
    assert seen == ["Oslo"]


def test_failures_are_not_cached() -> None:
    tools, seen = _counting_registry()
    env = Environment(tools, cache=ToolCache())
    for _ in range(2):
        r = env.execute(ToolCall(name="thermometer", arguments={"city": "Atlantis"}))
        assert r.error == "not_found" and r.status == 404
    assert seen == ["Atlantis", "Atlantis"]


def test_world_cache_never_serves_stale_reads() -> None:
    world = World.create(0)
    env = world.environment(cache=ToolCache())
    listing = ToolCall(name="todo_list")
    before = env.execute(listing)
    assert env.execute(listing).source == "cache"
    env.execute(ToolCall(name="todo_create", arguments={"title": "New"}))
    after = env.execute(listing)
    assert after.source == "execution" and after.data["count"] == before.data["count"] + 1


def test_simulator_fallback_is_shaped_by_returns() -> None:
    spec = Tool(
        name="stock_news",
        description="Latest headlines for a ticker.",
        parameters={"type": "object", "properties": {"symbol": {"type": "string"}}, "required": ["symbol"]},
        returns={
            "type": "object",
            "properties": {
                "headlines": {"type": "array", "items": {"type": "string"}, "minItems": 1},
                "published": {"type": "string", "pattern": r"^\d{4}-\d{2}-\d{2}$"},
                "sentiment": {"type": "string", "enum": ["positive", "neutral", "negative"]},
                "score": {"type": "number", "minimum": -1, "maximum": 1},
            },
            "required": ["headlines", "published", "sentiment", "score"],
        },
    )
    env = Environment(tools=[spec])
    call = ToolCall(name="stock_news", arguments={"symbol": "ACME"})
    first, second = env.execute(call), env.execute(call)
    assert first.source == "simulated" and first.ok
    Draft202012Validator(spec.returns or {}).validate(first.data)
    assert first.data == second.data  # deterministic for the same call


async def test_model_simulator_is_awaited_and_parsed() -> None:
    spec = Tool(name="lookup", parameters={"type": "object", "properties": {"q": {"type": "string"}}})
    asked: list[tuple[str, dict[str, object]]] = []

    async def fake_model(tool: Tool, call: ToolCall) -> str:
        asked.append((tool.name, call.arguments))
        return json.dumps({"answer": call.arguments["q"].upper()})  # type: ignore[union-attr]

    env = Environment(tools=[spec], simulator=fake_model, cache=ToolCache())
    r = await env.aexecute(ToolCall(name="lookup", arguments={"q": "hi"}))
    assert r.source == "simulated" and r.data == {"answer": "HI"}
    assert (await env.aexecute(ToolCall(name="lookup", arguments={"q": "hi"}))).source == "cache"
    assert asked == [("lookup", {"q": "hi"})]
    with pytest.raises(Exception, match="aexecute"):
        env.execute(ToolCall(name="lookup", arguments={"q": "other"}))


def test_sync_execute_runs_async_simulator_outside_a_loop() -> None:
    spec = Tool(name="lookup", parameters={"type": "object", "properties": {}})

    async def fake_model(tool: Tool, call: ToolCall) -> str:
        return "plain text answer"

    r = Environment(tools=[spec], simulator=fake_model).execute(ToolCall(name="lookup"))
    assert r.content == "plain text answer" and r.data is None and r.ok


@pytest.mark.parametrize(
    ("call", "label", "status", "needle"),
    [
        (
            ToolCall(name="weather_curent", arguments={"city": "Paris"}),
            "wrong_tool_name",
            404,
            "weather_curent",
        ),
        (ToolCall(name="weather_current", arguments={}), "missing_required", 400, "city"),
        (
            ToolCall(name="weather_current", arguments={"city": "Paris", "town": "x"}),
            "redundant_parameter",
            400,
            "town",
        ),
        (
            ToolCall(name="weather_current", arguments={"city": "Paris", "unit": "kelvin"}),
            "invalid_value",
            400,
            "unit",
        ),
        (
            ToolCall(
                name="travel_book_flight",
                arguments={
                    "flight_id": "FL0001",
                    "passenger_name": "A",
                    "payment_account_id": "A0001",
                    "seats": "two",
                },
            ),
            "invalid_type",
            400,
            "seats",
        ),
    ],
)
def test_invalid_calls_get_error_bodies_naming_the_problem(
    call: ToolCall, label: str, status: int, needle: str
) -> None:
    env = World.create(0).environment()
    r = env.execute(call)
    assert r.source == "invalid" and r.error == label and r.status == status
    body = json.loads(r.content)["error"]
    assert body["code"] == status and needle in body["message"]
    assert r.findings and r.findings[0]["code"] == label


def test_schema_gate_alone_still_rejects_bad_calls() -> None:
    env = World.create(0).environment(checker=None)
    r = env.execute(ToolCall(name="calendar_list_events", arguments={"date": "March 3rd"}))
    assert r.source == "invalid" and r.error == "invalid_format" and "date" in r.content
    unknown = env.execute(ToolCall(name="nope"))
    assert unknown.error == "wrong_tool_name" and unknown.status == 404


def test_refs_resolve_and_unbound_refs_are_reported() -> None:
    env = World.create(0).environment()
    search = ToolCall(
        name="contacts_search",
        arguments={"name": "a"},
        outputs=["API_call_0"],
        output_fields=["contacts.0.city"],
    )
    weather = ToolCall(name="weather_current", arguments={"city": Ref(target="API_call_0")})
    r1, r2 = env.run([search, weather])
    assert r2.ok and r2.data["city"] == r1.data["contacts"][0]["city"]
    dotted = env.execute(ToolCall(name="maps_geocode", arguments={"city": Ref(target="API_call_0")}))
    assert dotted.ok
    dangling = env.execute(ToolCall(name="weather_current", arguments={"city": Ref(target="API_call_7")}))
    assert dangling.error == "unresolved_ref" and "API_call_7" in dangling.content


def test_outputs_without_fields_bind_in_returns_order() -> None:
    env = World.create(0).environment()
    env.execute(
        ToolCall(name="maps_geocode", arguments={"city": "Rome"}, outputs=["API_call_0", "API_call_1"])
    )
    assert env.bindings == {"API_call_0": "Rome", "API_call_1": "Italy"}


def _fault_trace(seed: int) -> list[str | None]:
    plan = FaultPlan(seed=seed, rules=[FaultRule(kind="rate_limit", probability=0.3)])
    env = World.create(0).environment(faults=plan)
    call = ToolCall(name="weather_current", arguments={"city": "Paris"})
    return [env.execute(call).error for _ in range(40)]


def test_fault_schedule_fires_on_the_kth_call_of_a_tool() -> None:
    plan = FaultPlan(rules=[FaultRule(kind="timeout", tool="weather_current", calls=[2])])
    env = World.create(0).environment(faults=plan)
    call = ToolCall(name="weather_current", arguments={"city": "Paris"})
    other = ToolCall(name="maps_geocode", arguments={"city": "Paris"})
    r = [env.execute(call), env.execute(other), env.execute(call), env.execute(call)]
    assert [x.error for x in r] == [None, None, "timeout", None]
    assert r[2].source == "fault" and r[2].status == 504
    assert json.loads(r[2].content)["error"]["type"] == "timeout"


def test_probabilistic_faults_replay_for_a_seed() -> None:
    a, b, c = _fault_trace(3), _fault_trace(3), _fault_trace(4)
    assert a == b
    assert a != c
    assert 0 < a.count("rate_limit") < 40


def test_every_fault_kind_has_a_realistic_body() -> None:
    kinds = ["timeout", "rate_limit", "permission_denied", "service_unavailable", "connection_reset"]
    rules = [FaultRule(kind=k, calls=[i + 1]) for i, k in enumerate(kinds)]  # type: ignore[arg-type]
    env = World.create(0).environment(faults=FaultPlan(rules=rules))
    seen = [env.execute(ToolCall(name="todo_list")) for _ in kinds]
    assert [r.error for r in seen] == kinds
    assert [r.status for r in seen] == [504, 429, 403, 503, None]
    assert "Retry after" in seen[1].content and "ECONNRESET" in seen[4].content


def test_fault_rule_needs_exactly_one_trigger() -> None:
    with pytest.raises(ValueError, match="exactly one"):
        FaultRule(kind="timeout")
    with pytest.raises(ValueError, match="start at 1"):
        FaultRule(kind="timeout", calls=[0])


def test_a_crashing_tool_answers_500_instead_of_raising() -> None:
    tools = ToolRegistry()

    @tools.tool
    def divide(a: int, b: int) -> float:
        """Divide a by b."""
        return a / b

    r = Environment(tools).execute(ToolCall(name="divide", arguments={"a": 1, "b": 0}))
    assert r.status == 500 and r.error == "internal_error" and "ZeroDivisionError" in r.content


def test_the_checker_is_explicit_and_a_failing_one_is_logged(caplog: pytest.LogCaptureFixture) -> None:
    spec = Tool(name="f", parameters={"type": "object", "properties": {"n": {"type": "integer"}}})
    seen: list[str] = []

    def noting(calls: list[ToolCall], tools: list[Tool]) -> list[Finding]:
        seen.append(calls[0].name)
        return []

    Environment(tools=[spec], checker=noting).execute(ToolCall(name="f", arguments={"n": 1}))
    assert seen == ["f"]
    assert Environment(tools=[spec]).checker is None  # nothing is looked up behind the caller's back

    def broken(calls: list[ToolCall], tools: list[Tool]) -> list[Finding]:
        raise KeyError("a bug")

    env = Environment(tools=[spec], checker=broken)
    with caplog.at_level("ERROR", logger="toolmend.env.environment"):
        r = env.execute(ToolCall(name="f", arguments={"n": "x"}))
    assert r.source == "invalid" and r.error == "invalid_type"  # the schema gate answered
    (record,) = caplog.records
    assert "checker failed" in record.getMessage() and record.exc_info is not None
